// The checks Engine::submit runs on a request before it is queued: the
// prompt's token ids, the sampling parameters, max_tokens, stop strings,
// a forced call's grammar and the context (embedding requests: the prompt
// alone must fit; context-shift requests: the prompt alone must be shorter).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/runtime/engine.h"

namespace tc::runtime {

struct Refusal {
  SubmitStatus status = SubmitStatus::InvalidRequest;  // InvalidRequest or ContextExceeded
  std::string message;
};

// Why `request` cannot run on a model of n_vocab tokens with a context of
// n_ctx tokens per sequence, or nullopt when it can.
std::optional<Refusal> check_request(const GenerationRequest& request, int32_t n_vocab, int64_t n_ctx,
                                     int64_t n_embd);

}  // namespace tc::runtime
