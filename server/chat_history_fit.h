// Ollama's /api/chat history truncation: when a conversation no longer
// fits the context, its oldest messages are dropped (system messages kept,
// the last message always kept, a tool result never parted from the
// assistant turn that called the tool) until the prompt leaves room for the
// reply, as Ollama's chatPrompt does with `truncate` (its default).
#pragma once

#include <cstddef>

#include <nlohmann/json.hpp>

#include "server/prompt_builder.h"

namespace tc::server {

// Where a history kept from message i on must start: at the assistant turn
// whose tool_calls message i (a tool result, or one of several in a row)
// answers, so that no result is kept without its call; else i.
size_t tool_block_start(const nlohmann::json& messages, size_t i);

// The system messages before `start`, then every message from `start` on.
nlohmann::json kept_messages(const nlohmann::json& messages, size_t start);
// The images (request.images) of the messages kept_messages keeps, in
// order: each message's content holds one kImageMarker per image.
std::vector<std::string> kept_images(const ChatRequest& request, size_t start);

// plan_chat of `request`; if its prompt does not fit (a
// context_length_exceeded error) and it has more than one message, of the
// request with the fewest oldest messages dropped whose prompt leaves
// max_tokens (when given) or a quarter of the context for the reply (with
// context_shift, at most a quarter: the reply goes on past the context). When
// even the last message alone does not fit, the untruncated request's 400.
// `dropped` gets the number of messages removed.
Plan plan_chat_fitting_history(const ChatRequest& request, const ServingModel& serving,
                               const config::ServeOptions& options, size_t& dropped);

// What a chat route plans: plan_chat_fitting_history where request.truncate
// asks for it (logging how many messages were dropped), else plan_chat.
Plan plan_chat_request(const ChatRequest& request, const ServingModel& serving, const config::ServeOptions& options);

}  // namespace tc::server
