// A float64 llama forward pass that keeps each layer's FFN gate and up
// pre-activations, the yardstick for activation profiling. Written from the
// model's equations with no engine code beyond dequantization and f16
// rounding (K and V are rounded to f16 as the engine's cache stores them).
#pragma once

#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"

namespace tc::test {

struct FfnPreActivations {
  // [n_layer][tokens.size()][n_embd]: the residual entering the FFN block (before ffn_norm)
  std::vector<std::vector<std::vector<double>>> ffn_in;
  // [n_layer][tokens.size()][n_ff]
  std::vector<std::vector<std::vector<double>>> gate;
  std::vector<std::vector<std::vector<double>>> up;
};

// One sequence from position 0.
FfnPreActivations reference_ffn_pre_activations(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                                const std::vector<text::TokenId>& tokens);

}  // namespace tc::test
