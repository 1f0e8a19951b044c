// The global variables a chat template renders a chat request with. No
// HTTP and no model here, so the request fuzzer (fuzz/) renders exactly
// what the server does.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/openai_schema.h"

namespace tc::server {

// {messages, add_generation_prompt, bos_token, eos_token} and `tools` when
// the request has them; bos/eos are the model's token texts ("" if none).
nlohmann::json chat_prompt_variables(const ChatRequest& request, const std::string& bos_token,
                                     const std::string& eos_token);

}  // namespace tc::server
