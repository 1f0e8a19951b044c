// Fixtures of the placement tests: tiny generated models (make-model), a
// copy of a model with one layer's FFN in another dtype, and activation
// statistics with chosen counts fingerprinted to a model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "kernels/dtype.h"
#include "profiler/make_model.h"

namespace tc::test::placement {

// A 2-layer ReGLU sparse model (n_vocab 512, n_embd 64, n_ff 256, 4 heads,
// 2 KV heads, predictor rank 32, f16, GGUF layout with fc1/fc2) to be
// written at `path`; make_model_file writes it and returns options.output.
profiler::MakeModelOptions tiny_sparse_options(const std::filesystem::path& path);
std::filesystem::path make_model_file(const profiler::MakeModelOptions& options);

// `in` copied to `out` with layer `layer`'s ffn_gate, ffn_up and ffn_down
// (or ffn_down_t) re-quantized to `dtype` (through f32).
void rewrite_layer_ffn(const std::filesystem::path& in, const std::filesystem::path& out, int64_t layer,
                       kernels::DType dtype);

// A stats file for `model` (its fingerprint, rule gate>0, n_tokens = the
// largest count or 1) holding `counts` [n_layer][n_ff].
void write_stats(const std::filesystem::path& model, const std::vector<std::vector<int32_t>>& counts,
                 const std::filesystem::path& out);

}  // namespace tc::test::placement
