// A float64 llama forward pass written plainly from the definitions (no
// shared code with the engine beyond dequantization and f16 rounding), the
// yardstick for LlamaModel. K and V are rounded to f16 as the engine's
// cache stores them; everything else is double.
#pragma once

#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"

namespace tc::test {

// Logits for every position of `tokens` (one sequence from position 0):
// [tokens.size()][n_vocab].
std::vector<std::vector<double>> reference_logits(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                                  const std::vector<text::TokenId>& tokens);

// max_i |a_i - b_i| / max_i |b_i| over one row of logits.
double relative_error(const float* a, const std::vector<double>& b);

}  // namespace tc::test
