// The sparse make-model options the profiler tests start from: a small
// llama ReLU model (n_embd 256, 3 layers, n_ff 1024, 4 heads over 2 KV
// heads, f16, rank-64 predictors, 10% active, alpha 1).
#pragma once

#include <filesystem>

#include "profiler/make_model.h"

namespace tc::test {

inline profiler::MakeModelOptions sparse_options(const std::filesystem::path& out) {
  profiler::MakeModelOptions o;
  o.output = out;
  o.n_vocab = 1024;
  o.n_embd = 256;
  o.n_layer = 3;
  o.n_ff = 1024;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 256;
  o.weight_type = "f16";
  o.ffn_form = model::FfnForm::ReGLU;
  o.seed = 5;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.active = 0.10;
  o.sparse.alpha = 1.0;
  o.sparse.predictor_rank = 64;
  return o;
}

}  // namespace tc::test
