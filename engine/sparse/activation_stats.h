// ActivationStats: how many tokens each FFN neuron of each layer fired on,
// as recorded by `thermocline profile` and read by the placement solver.
// Stored as a GGUF container (architecture "thermocline.activation_stats",
// one i32 [n_ff] tensor per layer) tied to the model it was recorded on by a
// fingerprint; see docs/profiling.md for the keys. Plain data.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"

namespace tc::gguf {
class GgufWriter;
}

namespace tc::sparse {

inline constexpr std::string_view kStatsArchitecture = "thermocline.activation_stats";
inline constexpr uint32_t kStatsVersion = 1;

// When a neuron counts as firing on a token.
enum class FiringRule {
  GatePositive,        // ReGLU: relu(gate) > 0, i.e. the gate pre-activation > 0
  GateAndUpPositive,   // dReLU: relu(gate) * relu(up) > 0
  AbsAboveThreshold,   // SwiGLU: |silu(gate) * up| > the layer's calibrated threshold
};
std::string_view firing_rule_name(FiringRule rule);  // "gate>0", "gate>0&&up>0", "|act|>threshold"
bool parse_firing_rule(std::string_view name, FiringRule& out);
FiringRule firing_rule_for(model::FfnForm form);

// silu(gate) * up as the CPU kernel computes it (kernels/cpu/ops.cpp).
inline float swiglu(float gate, float up) { return gate / (1.0f + std::exp(-gate)) * up; }

// Whether a neuron fires on a token under `rule`, from its gate and up
// pre-activations; `threshold` is the layer's (AbsAboveThreshold only,
// ignored by the ReLU rules). What `profile` counts and predictors learn.
inline bool fires(FiringRule rule, float gate, float up, float threshold) {
  switch (rule) {
    case FiringRule::GatePositive: return gate > 0.0f;
    case FiringRule::GateAndUpPositive: return gate > 0.0f && up > 0.0f;
    case FiringRule::AbsAboveThreshold: return std::fabs(swiglu(gate, up)) > threshold;
  }
  return false;
}

// Identifies the model a stats file belongs to.
struct ModelFingerprint {
  std::string name;          // general.name (informative)
  std::string ffn_form;      // "reglu", "drelu", "swiglu"
  int64_t n_layer = 0;
  int64_t n_embd = 0;
  int64_t n_ff = 0;
  uint64_t file_size = 0;    // bytes of the model file (informative: a re-saved file may differ)
  // FNV-1a 64 over the FFN form, the tensor directory (names, dtypes,
  // shapes) and 16 evenly spaced 256-byte samples of every tensor's data
  // (all of it for tensors up to 4 KiB). Cheap on multi-GB files; any
  // retrained, re-quantized or different model changes it.
  uint64_t tensor_hash = 0;
};
ModelFingerprint fingerprint_model(const gguf::GgufFile& file, const model::ModelSpec& spec);

struct ActivationStats {
  ModelFingerprint model;
  FiringRule rule = FiringRule::GatePositive;
  uint64_t n_tokens = 0;            // tokens profiled (every layer saw each once); <= INT32_MAX
  int64_t n_ctx = 0;                // chunk length used (informative)
  std::string corpus;               // corpus file name (informative)
  float fire_fraction = 0;          // AbsAboveThreshold: the calibration target; 0 otherwise
  std::vector<float> thresholds;    // [n_layer]: AbsAboveThreshold thresholds, 0 for the ReLU rules
  std::vector<std::vector<int32_t>> fire_counts;  // [n_layer][n_ff], each in [0, n_tokens]

  int64_t n_layer() const { return static_cast<int64_t>(fire_counts.size()); }
  int64_t n_ff() const { return fire_counts.empty() ? 0 : static_cast<int64_t>(fire_counts[0].size()); }
};

// Metadata keys: kStatsArchitecture + "." + suffix.
std::string stats_key(std::string_view suffix);                // "thermocline.activation_stats.n_tokens"
std::string fire_count_tensor_name(int64_t layer);            // "blk.3.ffn_fire_count"

// Tensors of the TEAL section start with this (engine/sparse/teal.h).
inline constexpr std::string_view kTealTensorPrefix = "teal.";

// Adds further sections (keys and tensors) to a stats file being written:
// trained predictors (blk.N.fc1/fc2), TEAL thresholds. Their names must not
// collide with the stats' own (thermocline.activation_stats.*, blk.N.ffn_fire_count).
using StatsSections = std::function<void(gguf::GgufWriter& writer)>;

// Writes atomically. Throws std::invalid_argument for inconsistent stats
// (ragged counts, a count above n_tokens, thresholds not [n_layer]) and
// std::runtime_error naming the path on I/O failure.
void write_activation_stats(const ActivationStats& stats, const std::filesystem::path& path,
                            const StatsSections& add_sections = {});

// Reads and validates every key and tensor. Throws gguf::ModelLoadError
// naming the file and the key or tensor at fault.
ActivationStats read_activation_stats(const std::filesystem::path& path);
ActivationStats read_activation_stats(const gguf::GgufFile& file);

// Throws gguf::ModelLoadError naming `stats_path` and the key that does not
// match the model (n_layer, n_ff, ffn_form, n_embd, fingerprint), with both values.
void check_stats_match_model(const ActivationStats& stats, const std::string& stats_path,
                             const gguf::GgufFile& model_file, const model::ModelSpec& spec);

}  // namespace tc::sparse
