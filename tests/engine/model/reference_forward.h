// A float64 llama forward pass written plainly from the definitions (no
// shared code with the engine beyond dequantization and f16 rounding), the
// yardstick for LlamaModel. K and V are rounded to f16 (or to q8_0 blocks
// by the reference quantizer) as the engine's cache stores them;
// everything else is double. Reads both layouts: ffn_down
// and PowerInfer's neuron-major ffn_down_t; a mixture of experts; the
// ungated relu and relu(up)^2 FFNs (Arcee's graph: llama's with one ffn_up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"
#include "kernels/cpu/ops.h"

namespace tc::test {

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

// A tensor dequantized to double: [rows][ne[0]].
Matrix load_matrix(const gguf::GgufFile& file, const std::string& name);
// w · x for w [rows][cols], x [cols].
std::vector<double> matvec(const Matrix& w, const std::vector<double>& x);

// What an FFN block of the reference pass saw, for one position.
struct FfnObservation {
  int64_t layer;
  size_t position;
  const std::vector<double>& input;  // [n_embd] residual stream entering the block, before ffn_norm
  const std::vector<double>& gate;   // [n_ff] gate pre-activations (ffn_gate . ffn_norm(input); ffn_up's if ungated)
};
// Called once per layer and position, in layer order; may be empty.
using FfnObserver = std::function<void(const FfnObservation&)>;

// Which neurons of a block to compute (the others count as 0): keep[i] != 0
// keeps neuron i. An empty result, or no function, keeps them all.
using NeuronMask = std::function<std::vector<char>(const FfnObservation&)>;

// Logits for every position of `tokens` (one sequence from position 0):
// [tokens.size()][n_vocab]. A mixture of experts (llama's graph) routes in
// float64; `router_gaps`, when given, gets per position the smallest gap
// over the layers between the last chosen expert's probability and the
// next one's (a near-tie there could route float32 differently).
std::vector<std::vector<double>> reference_logits(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                                  const std::vector<text::TokenId>& tokens,
                                                  const FfnObserver& observe_ffn = {},
                                                  const NeuronMask& mask = {},
                                                  std::vector<double>* router_gaps = nullptr,
                                                  kernels::KvCacheTypes kv_types = {});

// max_i |a_i - b_i| / max_i |b_i| over one row of logits.
double relative_error(const float* a, const std::vector<double>& b);

}  // namespace tc::test
