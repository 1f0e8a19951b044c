// The request side of llama.cpp's own routes: a /completion or /infill body
// translated into the body /v1/completions reads (openai_schema.h), so that
// one parser validates both. llama.cpp's names map onto ours (n_predict ->
// max_tokens, n_probs -> logprobs, json_schema -> response_format (a
// GBNF `grammar` wins over it, as in llama-server), logit_bias as
// [[id, bias], ...] pairs -> an object), its server's sampling defaults
// fill what the body leaves out, and what cannot be honoured is a 400
// naming the field (more than one prompt). Fields of
// its caches and slots (cache_prompt, id_slot, t_max_*_ms, ...)
// are ignored. No HTTP here, so it is unit-tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/fill_in_middle.h"
#include "server/openai_errors.h"
#include "server/openai_schema.h"

namespace tc::server {

struct LlamaCppRequest {
  nlohmann::json openai;  // a /v1/completions body
  std::string model;      // as sent; empty when absent
  bool stream = false;
  int64_t n_predict = -1;                 // -1: up to the context
  std::optional<int32_t> repeat_last_n;   // llama.cpp's field, which /v1/completions lacks
  FimInput fim;                           // /infill: the code around the cursor (repo_level set)
  // /completion's {"prompt_string", "multimodal_data"} prompt: the images'
  // bytes, in the order of the prompt's kImageMarker (image_input.h).
  std::vector<std::string> images;
  std::optional<ApiError> error;          // a 400 naming the field
};

// /completion: `prompt` (a string, a one-string array, token ids, or
// llama-server's {"prompt_string": "...", "multimodal_data": ["base64",
// ...]} with one "<__media__>" per image) required.
LlamaCppRequest translate_llamacpp_completion(const nlohmann::json& body);
// /infill: input_prefix and input_suffix required, input_extra and prompt
// optional (fill_in_middle.h); the prompt of `openai` is left empty.
LlamaCppRequest translate_llamacpp_infill(const nlohmann::json& body);

}  // namespace tc::server
