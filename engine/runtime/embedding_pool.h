// EmbeddingPool: one embedding request's pooled hidden states over its
// prefill chunks (the engine's embedding requests, engine.h). Rows are the
// output-normed hidden states, f32 [n_embd] each, in prompt order; the
// pool keeps f64: the sum of every row (mean), the first row (cls) or the
// last row seen (last).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/model/model_spec.h"

namespace tc::runtime {

class EmbeddingPool {
 public:
  EmbeddingPool(model::Pooling pooling, int64_t n_embd);

  // Whether a chunk starting at prompt position `start` must return every
  // row (mean; cls on the first chunk), or only its last.
  bool wants_all_rows(int64_t start) const;
  // The rows of a chunk starting at `start`: f32 [n_rows, n_embd], every
  // row or only the last, as wants_all_rows(start) said.
  void add(const float* rows, int64_t n_rows, int64_t start);
  // The embedding of a prompt of n_tokens tokens, f32 [n_embd].
  std::vector<float> result(int64_t n_tokens) const;

 private:
  model::Pooling pooling_;
  int64_t n_embd_;
  std::vector<double> pooled_;  // f64 [n_embd]
};

}  // namespace tc::runtime
