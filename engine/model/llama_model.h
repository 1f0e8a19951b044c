// LlamaModel: the forward pass of architecture `llama` (and its ReLU
// variants) on a Backend. One step runs several sequences at once: their
// tokens are concatenated for the matmuls, and each attends over its own KV
// cache slot. Prefill chunks and single-token decodes mix freely.
// Owns its workspace (grown to the largest step seen, so the steady-state
// decode loop does not allocate). Not thread-safe: the engine thread's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/llama_weights.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace tc::model {

// One sequence's part of a step: `tokens` go to positions kv.n_used(slot)...
struct StepSequence {
  int slot = 0;
  std::span<const text::TokenId> tokens;
  bool all_logits = false;   // logits for every token, not only the last
};

// Sees each layer's FFN inputs during forward(): what activation profiling
// and predictor training record. Called on the engine thread, synchronously,
// once per layer per step, after the gate and up matmuls and before the
// activation; the pointers are valid only during the call (host memory on
// the CPU backend; a device backend will have to copy them out first).
// Rows are the step's tokens in order (sequences concatenated).
// Firing definitions built on it: ReGLU fires iff gate > 0 (relu(gate) > 0),
// dReLU iff gate > 0 and up > 0; SwiGLU has no exact zeros, so a threshold
// on |silu(gate) * up| is the observer's business.
class FfnObserver {
 public:
  virtual ~FfnObserver() = default;
  // ffn_in: f32 [n_tokens, n_embd], the residual entering the FFN block
  //         (after the attention add, before ffn_norm);
  // gate:   f32 [n_tokens, n_ff], ffn_gate · ffn_norm(ffn_in), before the activation;
  // up:     f32 [n_tokens, n_ff], ffn_up · ffn_norm(ffn_in).
  virtual void on_ffn(int64_t layer, int64_t n_tokens, const float* ffn_in, const float* gate,
                      const float* up) = 0;
};

enum class StepStatus {
  Ok,
  ContextFull,    // a sequence would run past the KV cache's n_ctx; nothing was changed
  InvalidToken,   // a token id outside [0, n_vocab); nothing was changed
};

class LlamaModel {
 public:
  // `model` and `backend` must outlive this object.
  LlamaModel(const LoadedModel& model, kernels::Backend& backend);

  const ModelSpec& spec() const { return spec_; }
  kernels::Backend& backend() { return backend_; }

  // Runs one step. On Ok, `logits` holds f32 [n_rows, n_vocab]: for each
  // sequence in order, its last token's logits (or every token's when
  // all_logits), and each slot's KV length has grown by its token count.
  StepStatus forward(std::span<const StepSequence> sequences, runtime::KvCache& kv, std::vector<float>& logits);

  // Installs an observer for the FFN blocks of later steps (nullptr: none,
  // the default, which costs nothing). Not owned; must outlive its use.
  void set_ffn_observer(FfnObserver* observer) { ffn_observer_ = observer; }

 private:
  void reserve(int64_t n_tokens, int64_t n_logit_rows);
  void run_layer(const LayerWeights& w, int64_t layer, std::span<const StepSequence> sequences,
                 runtime::KvCache& kv, int64_t n_tokens);

  const ModelSpec& spec_;
  LlamaWeights weights_;
  kernels::Backend& backend_;
  kernels::Activation activation_;
  kernels::RopeParams rope_;
  FfnObserver* ffn_observer_ = nullptr;

  // Workspace, f32 unless noted; rows = tokens of the step.
  int64_t capacity_tokens_ = 0;
  int64_t capacity_logit_rows_ = 0;
  kernels::Buffer x_;          // [T, n_embd] residual stream
  kernels::Buffer cur_;        // [T, n_embd] normed input / attention output
  kernels::Buffer q_;          // [T, n_embd]
  kernels::Buffer k_;          // [T, n_embd_kv]
  kernels::Buffer v_;          // [T, n_embd_kv]
  kernels::Buffer ffn_gate_;   // [T, n_ff]
  kernels::Buffer ffn_up_;     // [T, n_ff]
  kernels::Buffer tmp_;        // [T, n_embd] projection outputs before the residual add
  kernels::Buffer ids_;        // i32 [T]
  kernels::Buffer positions_;  // i32 [T]
  kernels::Buffer head_in_;    // [R, n_embd] rows that get logits
};

}  // namespace tc::model
