// TEAL: the calibration's stats-file section (writer and validating reader),
// thresholds for a target sparsity, and the sparsifier.
#include "engine/sparse/teal.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"
#include "kernels/check.h"

namespace tc::sparse {
namespace {

using gguf::ModelLoadError;
using model::kLinearInputCount;
using model::LinearInput;

// Bounds on what a hostile file can make the reader allocate.
constexpr int64_t kMaxLevels = 1024;
constexpr int64_t kMaxLayers = 1 << 12;

std::string site_name(int64_t site) {
  return std::string(model::linear_input_name(static_cast<LinearInput>(site)));
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The first problem of the levels as a sentence, or "" when they are valid.
std::string find_level_problem(const std::vector<float>& levels) {
  const auto n_levels = static_cast<int64_t>(levels.size());
  if (n_levels < 1 || n_levels > kMaxLevels) {
    return "has " + std::to_string(n_levels) + " levels, expected 1 to " + std::to_string(kMaxLevels);
  }
  for (int64_t j = 0; j < n_levels; ++j) {
    const float a = levels[static_cast<size_t>(j)];
    if (!(a > 0.0f && a < 1.0f)) return "level " + std::to_string(j) + " is " + fmt(a) + ", outside (0, 1)";
    if (j > 0 && !(a > levels[static_cast<size_t>(j - 1)])) {
      return "level " + std::to_string(j) + " (" + fmt(a) + ") is not above the previous one";
    }
  }
  return {};
}

// The first problem of the thresholds (for valid levels) as a sentence, or "".
std::string find_threshold_problem(const std::vector<float>& levels, const std::vector<float>& thresholds,
                                   int64_t n_layer) {
  const auto n_levels = static_cast<int64_t>(levels.size());
  if (n_layer < 1 || n_layer > kMaxLayers) {
    return "has n_layer " + std::to_string(n_layer) + ", expected 1 to " + std::to_string(kMaxLayers);
  }
  if (static_cast<int64_t>(thresholds.size()) != n_layer * kLinearInputCount * n_levels) {
    return "has " + std::to_string(thresholds.size()) + " thresholds, expected n_layer x " +
           std::to_string(kLinearInputCount) + " x n_levels = " +
           std::to_string(n_layer * kLinearInputCount * n_levels);
  }
  for (int64_t l = 0; l < n_layer; ++l) {
    for (int64_t s = 0; s < kLinearInputCount; ++s) {
      const float* t = thresholds.data() + (l * kLinearInputCount + s) * n_levels;
      for (int64_t j = 0; j < n_levels; ++j) {
        const std::string where = "layer " + std::to_string(l) + " " + site_name(s) + " level " + std::to_string(j);
        if (!std::isfinite(t[j]) || t[j] < 0.0f) return where + " threshold is " + fmt(t[j]) + ", expected finite >= 0";
        if (j > 0 && t[j] < t[j - 1]) {
          return where + " threshold " + fmt(t[j]) + " is below the previous level's " + fmt(t[j - 1]) +
                 " (thresholds must not decrease with sparsity)";
        }
      }
    }
  }
  return {};
}

std::vector<float> read_f32(const gguf::GgufFile& f, const gguf::TensorInfo& info) {
  std::vector<float> out(static_cast<size_t>(info.n_elements()));
  std::memcpy(out.data(), f.tensor_data(info).data(), out.size() * sizeof(float));
  return out;
}

const gguf::TensorInfo& require_f32(const gguf::GgufFile& f, std::string_view name, size_t n_dims,
                                    const std::string& expected) {
  const auto* info = f.find_tensor(name);
  if (info == nullptr) throw ModelLoadError::for_tensor(f.path(), std::string(name), "is missing");
  if (info->dtype != kernels::DType::F32 || info->ne.size() != n_dims) {
    throw ModelLoadError::for_tensor(f.path(), std::string(name),
                                     "is " + std::string(kernels::dtype_name(info->dtype)) + " " +
                                         info->shape_string() + ", expected f32 " + expected);
  }
  return *info;
}

// "[19, 4, 6] (levels, linear-input sites, layers)"; n_layer 0: unknown.
std::string shape_of_thresholds(int64_t n_levels, int64_t n_layer) {
  std::string s = "[";
  s += std::to_string(n_levels);
  s += ", ";
  s += std::to_string(kLinearInputCount);
  s += ", ";
  s += n_layer > 0 ? std::to_string(n_layer) : std::string("n_layer");
  s += "] (levels, linear-input sites, layers)";
  return s;
}

}  // namespace

std::string teal_key(std::string_view suffix) { return std::string(kTealKeyPrefix) + std::string(suffix); }

std::vector<float> teal_default_levels() {
  std::vector<float> levels;
  // i / 20 rounds to the same float as the decimal a user types ("0.4").
  for (int i = 1; i <= 19; ++i) levels.push_back(static_cast<float>(i) / 20.0f);
  return levels;
}

void validate_teal_calibration(const TealCalibration& c) {
  std::string problem = find_level_problem(c.levels);
  if (problem.empty()) problem = find_threshold_problem(c.levels, c.thresholds, c.n_layer);
  if (!problem.empty()) throw std::invalid_argument("TEAL calibration: " + problem);
  if (c.n_tokens < 1) throw std::invalid_argument("TEAL calibration: no calibration tokens");
}

StatsSections teal_section(const TealCalibration& calibration) {
  validate_teal_calibration(calibration);
  return [c = calibration](gguf::GgufWriter& w) {
    w.set(teal_key("version"), gguf::Value(kTealVersion));
    w.set(teal_key("n_tokens"), gguf::Value(c.n_tokens));
    auto bytes = [](const std::vector<float>& v) {
      std::vector<std::byte> b(v.size() * sizeof(float));
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    w.add_tensor(std::string(kTealLevelsTensor), kernels::DType::F32, {c.n_levels()}, bytes(c.levels));
    w.add_tensor(std::string(kTealThresholdsTensor), kernels::DType::F32,
                 {c.n_levels(), kLinearInputCount, c.n_layer}, bytes(c.thresholds));
  };
}

bool has_teal_calibration(const gguf::GgufFile& file) { return file.find_tensor(kTealThresholdsTensor) != nullptr; }

TealCalibration read_teal_calibration(const gguf::GgufFile& f) {
  const std::string& file = f.path();
  const uint64_t version = f.get_u64(teal_key("version"));
  if (version != kTealVersion) {
    throw ModelLoadError::for_key(file, teal_key("version"),
                                  "is " + std::to_string(version) + ", this build reads version " +
                                      std::to_string(kTealVersion));
  }
  TealCalibration c;
  c.n_tokens = f.get_u64(teal_key("n_tokens"));
  if (c.n_tokens < 1) throw ModelLoadError::for_key(file, teal_key("n_tokens"), "is 0, expected >= 1");

  const auto& levels = require_f32(f, kTealLevelsTensor, 1, "[n_levels]");
  const int64_t n_levels = levels.ne[0];
  if (n_levels < 1 || n_levels > kMaxLevels) {
    throw ModelLoadError::for_tensor(file, std::string(kTealLevelsTensor),
                                     "has " + std::to_string(n_levels) + " levels, expected 1 to " +
                                         std::to_string(kMaxLevels));
  }
  const int64_t stats_layers = f.get_i64(stats_key("model.n_layer"), 0);
  const std::string expected = shape_of_thresholds(n_levels, stats_layers);
  const auto& thr = require_f32(f, kTealThresholdsTensor, 3, expected);
  c.n_layer = thr.ne[2];
  if (thr.ne[0] != n_levels || thr.ne[1] != kLinearInputCount || c.n_layer < 1 || c.n_layer > kMaxLayers ||
      (stats_layers > 0 && c.n_layer != stats_layers)) {
    throw ModelLoadError::for_tensor(file, std::string(kTealThresholdsTensor),
                                     "is " + thr.shape_string() + ", expected " + expected);
  }
  c.levels = read_f32(f, levels);
  c.thresholds = read_f32(f, thr);
  const std::string level_problem = find_level_problem(c.levels);
  if (!level_problem.empty()) throw ModelLoadError::for_tensor(file, std::string(kTealLevelsTensor), level_problem);
  const std::string problem = find_threshold_problem(c.levels, c.thresholds, c.n_layer);
  if (!problem.empty()) throw ModelLoadError::for_tensor(file, std::string(kTealThresholdsTensor), problem);
  for (const auto& t : f.tensors()) {
    if (t.name.starts_with(kTealTensorPrefix) && t.name != kTealLevelsTensor && t.name != kTealThresholdsTensor) {
      throw ModelLoadError::for_tensor(file, t.name, "is not a TEAL tensor (teal.levels, teal.thresholds)");
    }
  }
  return c;
}

TealThresholds thresholds_for(const TealCalibration& c, float target) {
  if (!(target >= 0.0f && target <= config::kTealMaxSparsity)) {
    throw std::invalid_argument("TEAL: target sparsity " + fmt(target) + " is outside [0, " +
                                fmt(config::kTealMaxSparsity) + "]");
  }
  if (c.levels.empty() || target > c.levels.back()) {
    throw std::invalid_argument("TEAL: target sparsity " + fmt(target) + " is above the calibration's highest level " +
                                (c.levels.empty() ? std::string("(none)") : fmt(c.levels.back())));
  }
  TC_CHECK(static_cast<int64_t>(c.thresholds.size()) == c.n_layer * kLinearInputCount * c.n_levels(),
           "TEAL calibration thresholds are not [n_layer][kLinearInputCount][n_levels]");
  TealThresholds out;
  out.n_layer = c.n_layer;
  out.values.assign(static_cast<size_t>(c.n_layer * kLinearInputCount), 0.0f);
  if (target == 0.0f) return out;
  int64_t j = 0;
  while (c.levels[static_cast<size_t>(j)] < target) ++j;
  // Sparsity (x) against threshold (y): from (lo_x, lo_y) to (levels[j], t_j), with (0, 0) below the first level.
  const double hi_x = c.levels[static_cast<size_t>(j)];
  const double lo_x = j == 0 ? 0.0 : c.levels[static_cast<size_t>(j - 1)];
  const double w = (static_cast<double>(target) - lo_x) / (hi_x - lo_x);
  for (int64_t l = 0; l < c.n_layer; ++l) {
    for (int64_t s = 0; s < kLinearInputCount; ++s) {
      const auto site = static_cast<LinearInput>(s);
      const double hi_y = c.threshold(l, site, j);
      const double lo_y = j == 0 ? 0.0 : c.threshold(l, site, j - 1);
      out.values[static_cast<size_t>(l * kLinearInputCount + s)] =
          static_cast<float>(target == c.levels[static_cast<size_t>(j)] ? hi_y : lo_y + w * (hi_y - lo_y));
    }
  }
  return out;
}

TealSparsifier::TealSparsifier(TealThresholds thresholds)
    : thresholds_(std::move(thresholds)), counts_(static_cast<size_t>(thresholds_.n_layer * kLinearInputCount)) {
  TC_CHECK(static_cast<int64_t>(thresholds_.values.size()) == thresholds_.n_layer * kLinearInputCount,
           "TEAL thresholds are not [n_layer][kLinearInputCount]");
}

void TealSparsifier::sparsify(int64_t layer, LinearInput site, int64_t n_tokens, int64_t n, float* x) {
  TC_CHECK(layer >= 0 && layer < thresholds_.n_layer, "TEAL sparsifier: layer out of range");
  const float t = thresholds_.at(layer, site);
  const int64_t count = n_tokens * n;
  // Branch-free so that it vectorises; counting zeros afterwards includes the inputs' own zeros (ReLU outputs).
  int64_t zeros = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float v = std::fabs(x[i]) < t ? 0.0f : x[i];
    x[i] = v;
    zeros += v == 0.0f;
  }
  auto& c = counts_[static_cast<size_t>(layer * kLinearInputCount + static_cast<int64_t>(site))];
  c.zeros += static_cast<uint64_t>(zeros);
  c.total += static_cast<uint64_t>(count);
}

const TealSparsifier::Counts& TealSparsifier::counts(int64_t layer, LinearInput site) const {
  TC_CHECK(layer >= 0 && layer < thresholds_.n_layer, "TEAL sparsifier: layer out of range");
  return counts_[static_cast<size_t>(layer * kLinearInputCount + static_cast<int64_t>(site))];
}

TealSparsifier::Counts TealSparsifier::site_counts(LinearInput site) const {
  Counts sum;
  for (int64_t l = 0; l < thresholds_.n_layer; ++l) {
    sum.zeros += counts(l, site).zeros;
    sum.total += counts(l, site).total;
  }
  return sum;
}

TealSparsifier::Counts TealSparsifier::all_counts() const {
  Counts sum;
  for (const auto& c : counts_) {
    sum.zeros += c.zeros;
    sum.total += c.total;
  }
  return sum;
}

void TealSparsifier::reset_counts() { counts_.assign(counts_.size(), Counts{}); }

}  // namespace tc::sparse
