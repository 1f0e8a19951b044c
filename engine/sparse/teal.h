// TEAL (arXiv 2408.14690): training-free activation sparsity. The entries of
// each linear layer's input whose magnitude is below a per-tensor threshold
// are set to 0; thresholds come from magnitude quantiles recorded on
// calibration text (profiler/teal_calibration.h) and stored in a stats file.
// Works on any FFN form (SwiGLU included). Off unless `--sparsity teal:X`
// (config/sparsity_setting.h parses it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/sparsity_setting.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "engine/sparse/activation_stats.h"

namespace tc::sparse {

// Metadata keys of the TEAL section: "thermocline.teal.version" (u32),
// "thermocline.teal.n_tokens" (u64, calibration tokens).
inline constexpr std::string_view kTealKeyPrefix = "thermocline.teal.";
inline constexpr uint32_t kTealVersion = 1;
// Tensors of the section (kTealTensorPrefix + ...).
inline constexpr std::string_view kTealLevelsTensor = "teal.levels";          // f32 [n_levels]
inline constexpr std::string_view kTealThresholdsTensor = "teal.thresholds";  // f32 {n_levels, 4, n_layer}

std::string teal_key(std::string_view suffix);  // "thermocline.teal.n_tokens"

// The default ladder of sparsity levels: 0.05, 0.10, ..., 0.95 (19 levels).
std::vector<float> teal_default_levels();

// Per layer and linear-input site, the magnitude quantile of the dense input
// at each level of a ladder: about `levels[j]` of the calibration entries
// have |x| < threshold(layer, site, j). Plain data.
struct TealCalibration {
  std::vector<float> levels;      // f32 [n_levels], strictly increasing, in (0, 1)
  // f32 [n_layer][kLinearInputCount][n_levels], flattened (the GGUF tensor's
  // ne = {n_levels, kLinearInputCount, n_layer}, level innermost), site in
  // model::LinearInput order; non-decreasing along the level axis, >= 0.
  std::vector<float> thresholds;
  int64_t n_layer = 0;
  uint64_t n_tokens = 0;          // calibration tokens (informative), >= 1

  int64_t n_levels() const { return static_cast<int64_t>(levels.size()); }
  float threshold(int64_t layer, model::LinearInput site, int64_t level_idx) const {
    return thresholds[static_cast<size_t>((layer * model::kLinearInputCount + static_cast<int64_t>(site)) *
                                              n_levels() + level_idx)];
  }
};

// Throws std::invalid_argument naming the first problem (sizes, NaN,
// negative or non-monotone thresholds, bad levels).
void validate_teal_calibration(const TealCalibration& calibration);

// A stats-file section (write_activation_stats' add_sections) holding a copy
// of `calibration`. Validates now: throws std::invalid_argument.
StatsSections teal_section(const TealCalibration& calibration);

// True when `file` holds the TEAL section.
bool has_teal_calibration(const gguf::GgufFile& file);
// Reads and validates the section. When the file is a stats file, n_layer
// must match its thermocline.activation_stats.model.n_layer. Throws
// gguf::ModelLoadError naming the file and the key or tensor at fault.
TealCalibration read_teal_calibration(const gguf::GgufFile& file);

// Thresholds for one target sparsity: f32 [n_layer][kLinearInputCount].
struct TealThresholds {
  int64_t n_layer = 0;
  std::vector<float> values;  // f32 [n_layer][kLinearInputCount], >= 0
  float at(int64_t layer, model::LinearInput site) const {
    return values[static_cast<size_t>(layer * model::kLinearInputCount + static_cast<int64_t>(site))];
  }
};

// Per layer and site, the threshold for `target` sparsity in
// [0, config::kTealMaxSparsity]: linear between ladder levels (and between
// 0 at sparsity 0 and the first level); target 0 gives threshold 0, which
// zeroes nothing. Throws
// std::invalid_argument for a target outside that range or above the
// calibration's highest level.
TealThresholds thresholds_for(const TealCalibration& calibration, float target);

// Sets |x| < threshold(layer, site) to exactly 0, in place, and counts per
// layer and site the zero entries afterwards (those it zeroed and those that
// were 0 already) against all entries seen: the achieved sparsity. Not
// thread-safe (the engine thread's, like LlamaModel).
class TealSparsifier final : public model::InputSparsifier {
 public:
  struct Counts {
    uint64_t zeros = 0;  // entries that were 0 after sparsify()
    uint64_t total = 0;  // entries seen
    double fraction() const { return total == 0 ? 0.0 : static_cast<double>(zeros) / static_cast<double>(total); }
  };

  explicit TealSparsifier(TealThresholds thresholds);

  // x: f32 [n_tokens, n] in host memory. layer must be < n_layer.
  void sparsify(int64_t layer, model::LinearInput site, int64_t n_tokens, int64_t n, float* x) override;

  const TealThresholds& thresholds() const { return thresholds_; }
  const Counts& counts(int64_t layer, model::LinearInput site) const;
  Counts site_counts(model::LinearInput site) const;  // summed over layers
  Counts all_counts() const;                          // summed over layers and sites
  void reset_counts();

 private:
  TealThresholds thresholds_;
  std::vector<Counts> counts_;  // [n_layer][kLinearInputCount]
};

}  // namespace tc::sparse
