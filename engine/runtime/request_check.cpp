// check_request: see request_check.h.
#include "engine/runtime/request_check.h"

#include <utility>

namespace tc::runtime {

std::optional<Refusal> check_request(const GenerationRequest& request, int32_t n_vocab, int64_t n_ctx,
                                     int64_t n_embd) {
  auto refuse = [](SubmitStatus status, std::string message) {
    return std::optional<Refusal>(Refusal{status, std::move(message)});
  };
  if (request.prompt.empty()) return refuse(SubmitStatus::InvalidRequest, "the prompt is empty");
  for (size_t i = 0; i < request.images.size(); ++i) {
    const model::PromptImage& image = request.images[i];
    if (image.n_tokens < 1 || image.n_tokens > model::kImageBlockTokens || !model::is_image_token(image.first_id) ||
        !image.rows || static_cast<int64_t>(image.rows->size()) != image.n_tokens * n_embd) {
      return refuse(SubmitStatus::InvalidRequest, "image " + std::to_string(i) + " does not fit this model (" +
                                                      std::to_string(n_embd) + " values per embedding)");
    }
  }
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    const text::TokenId id = request.prompt[i];
    if ((id < 0 || id >= n_vocab) && model::find_prompt_image(request.images, id) == nullptr) {
      return refuse(SubmitStatus::InvalidRequest, "prompt token " + std::to_string(i) + " has id " +
                                                      std::to_string(id) + ", out of range [0, " +
                                                      std::to_string(n_vocab) + ")");
    }
  }
  const auto n_prompt = static_cast<int64_t>(request.prompt.size());
  if (request.embedding) {
    if (n_prompt > n_ctx) {
      return refuse(SubmitStatus::ContextExceeded, "this model's context is " + std::to_string(n_ctx) +
                                                       " tokens; the input has " + std::to_string(n_prompt));
    }
    return std::nullopt;
  }
  if (std::string problem = validate(request.sampling, n_vocab); !problem.empty()) {
    return refuse(SubmitStatus::InvalidRequest, std::move(problem));
  }
  if (request.max_tokens < 1) {
    return refuse(SubmitStatus::InvalidRequest, "max_tokens must be >= 1, got " + std::to_string(request.max_tokens));
  }
  for (size_t i = 0; i < request.stop.size(); ++i) {
    if (request.stop[i].empty()) {
      return refuse(SubmitStatus::InvalidRequest, "stop string " + std::to_string(i) + " is empty");
    }
  }
  if (request.tool_call) {
    if (std::string problem = request.tool_call->problem(); !problem.empty()) {
      return refuse(SubmitStatus::InvalidRequest, std::move(problem));
    }
  }
  const bool mistral_call = request.tool_call_trigger_token >= 0 || request.tool_call_args_token >= 0;
  if ((!request.tool_call_trigger.empty() || request.tool_call_at_start || mistral_call) &&
      (!request.tool_call || request.json_object || request.json_schema || request.grammar)) {
    return refuse(SubmitStatus::InvalidRequest, "a lazy tool call needs tool_call and no other output form");
  }
  if (request.tool_call_gemma4 && (request.tool_call_trigger.empty() || mistral_call)) {
    return refuse(SubmitStatus::InvalidRequest, "a lazy Gemma 4 tool call needs its trigger text");
  }
  if (request.tool_call_qwen3_coder &&
      (request.tool_call_trigger.empty() || mistral_call || request.tool_call_gemma4)) {
    return refuse(SubmitStatus::InvalidRequest, "a lazy Qwen3-Coder tool call needs its trigger text, alone");
  }
  if (mistral_call && (request.tool_call_trigger_token < 0 || request.tool_call_trigger_token >= n_vocab ||
                       request.tool_call_args_token < 0 || request.tool_call_args_token >= n_vocab)) {
    return refuse(SubmitStatus::InvalidRequest, "a lazy Mistral tool call needs both marker tokens in the vocabulary");
  }
  if (request.grammar) {
    if (request.tool_call) {
      return refuse(SubmitStatus::InvalidRequest, "a grammar cannot be combined with a forced tool call");
    }
    for (uint32_t id : request.grammar->token_ids()) {
      if (id >= static_cast<uint32_t>(n_vocab)) {
        return refuse(SubmitStatus::InvalidRequest, "the grammar names token <[" + std::to_string(id) +
                                                        "]>, out of range [0, " + std::to_string(n_vocab) + ")");
      }
    }
  }
  if (request.draft_max < -1) {
    return refuse(SubmitStatus::InvalidRequest,
                  "draft_max must be >= 0 (or -1: the server's default), got " + std::to_string(request.draft_max));
  }
  if (request.n_keep < 0) {
    return refuse(SubmitStatus::InvalidRequest, "n_keep must be >= 0, got " + std::to_string(request.n_keep));
  }
  if (request.context_shift) {
    // The context shifts as it fills: only the prompt must leave room for one generated token.
    if (n_prompt >= n_ctx) {
      return refuse(SubmitStatus::ContextExceeded, "this model's context is " + std::to_string(n_ctx) +
                                                       " tokens; the prompt has " + std::to_string(n_prompt) +
                                                       ", leaving no room to generate");
    }
    return std::nullopt;
  }
  if (n_prompt + request.max_tokens > n_ctx) {
    return refuse(SubmitStatus::ContextExceeded,
                  "this model's context is " + std::to_string(n_ctx) + " tokens; the prompt has " +
                      std::to_string(n_prompt) + " tokens and max_tokens is " + std::to_string(request.max_tokens) +
                      ", " + std::to_string(n_prompt + request.max_tokens) + " in all");
  }
  return std::nullopt;
}

}  // namespace tc::runtime
