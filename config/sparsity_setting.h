// The sparsity setting shared by `serve` (key `sparsity`) and the running
// subcommands (--sparsity): dense | auto | relu | teal:X. Parsed here, in the
// leaf config library, so every front end validates it the same way;
// engine/sparse/sparsity_plan.h decides what it means for a loaded model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tc::config {

// In sparse mode generated tokens always run the predicted sparse FFN (it
// stays ahead of dense up to 128 sequences per step, docs/benchmarks-history.md);
// prompt chunks of up to this many tokens run it too. 0: prompts run dense,
// so whether a token runs sparse never depends on the other requests.
inline constexpr int64_t kDefaultSparseMaxTokens = 0;

// The highest TEAL target sparsity accepted.
inline constexpr float kTealMaxSparsity = 0.95f;

enum class SparsityMode {
  Dense,  // "dense": every neuron
  Auto,   // "auto": the predicted sparse FFN when the model supports it, else dense
  Relu,   // "relu": the predicted sparse FFN (ReLU-family models with predictors), required
  Teal,   // "teal:X": TEAL magnitude thresholds at target sparsity X
};

struct SparsitySetting {
  SparsityMode mode = SparsityMode::Auto;
  float teal_target = 0.0f;  // Teal only: in [0, kTealMaxSparsity]
};

// Parses "dense", "auto", "relu" or "teal:X" (X a decimal fraction in
// [0, 0.95], e.g. teal:0.4). Throws std::invalid_argument quoting the value
// and saying what is accepted.
SparsitySetting parse_sparsity_setting(std::string_view text);
// Back to the flag's spelling ("teal:0.4").
std::string sparsity_setting_string(const SparsitySetting& setting);

}  // namespace tc::config
