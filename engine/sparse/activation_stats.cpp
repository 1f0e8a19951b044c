// The activation statistics file: model fingerprint, writer, validating
// reader, and the check against the model a caller is about to use.
#include "engine/sparse/activation_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"

namespace tc::sparse {
namespace {

using gguf::ModelLoadError;

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
constexpr uint64_t kSamples = 16;
constexpr uint64_t kSampleBytes = 256;
// Layer and neuron counts above these are not a model we could run; they
// bound what a hostile file can make the reader allocate.
constexpr int64_t kMaxLayers = 1 << 12;
constexpr int64_t kMaxFf = 1 << 22;

void fnv(uint64_t& h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
}

template <typename T>
void fnv_value(uint64_t& h, T v) {
  fnv(h, &v, sizeof v);
}

std::string hex(uint64_t v) {
  char buf[19];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Reads a non-negative integer key no larger than `max`.
int64_t read_count(const gguf::GgufFile& f, const std::string& key, int64_t min, int64_t max) {
  const int64_t v = f.get_i64(key);
  if (v < min || v > max) {
    throw ModelLoadError::for_key(f.path(), key,
                                  "value " + std::to_string(v) + " is outside [" + std::to_string(min) + ", " +
                                      std::to_string(max) + "]");
  }
  return v;
}

}  // namespace

std::string_view firing_rule_name(FiringRule rule) {
  switch (rule) {
    case FiringRule::GatePositive: return "gate>0";
    case FiringRule::GateAndUpPositive: return "gate>0&&up>0";
    case FiringRule::AbsAboveThreshold: return "|act|>threshold";
  }
  return "?";
}

bool parse_firing_rule(std::string_view name, FiringRule& out) {
  for (auto r : {FiringRule::GatePositive, FiringRule::GateAndUpPositive, FiringRule::AbsAboveThreshold}) {
    if (firing_rule_name(r) == name) {
      out = r;
      return true;
    }
  }
  return false;
}

FiringRule firing_rule_for(model::FfnForm form) {
  switch (form) {
    case model::FfnForm::ReGLU: return FiringRule::GatePositive;
    case model::FfnForm::Relu:  // relu(up) of an ungated FFN: its one matrix is the gate
    case model::FfnForm::ReluSquared: return FiringRule::GatePositive;
    case model::FfnForm::DReLU: return FiringRule::GateAndUpPositive;
    case model::FfnForm::SwiGLU:
    case model::FfnForm::SwiGluOai:
    case model::FfnForm::GeGLU:
    case model::FfnForm::Gelu: return FiringRule::AbsAboveThreshold;
  }
  return FiringRule::AbsAboveThreshold;
}

std::string stats_key(std::string_view suffix) {
  return std::string(kStatsArchitecture) + "." + std::string(suffix);
}

std::string fire_count_tensor_name(int64_t layer) { return "blk." + std::to_string(layer) + ".ffn_fire_count"; }

ModelFingerprint fingerprint_model(const gguf::GgufFile& file, const model::ModelSpec& spec) {
  ModelFingerprint fp;
  fp.name = spec.name;
  fp.ffn_form = std::string(model::ffn_form_name(spec.ffn_form));
  fp.n_layer = spec.n_layer;
  fp.n_embd = spec.n_embd;
  fp.n_ff = spec.n_ff;
  fp.file_size = file.file_size();
  uint64_t h = kFnvOffset;
  fnv(h, fp.ffn_form.data(), fp.ffn_form.size());  // the same weights under another activation fire differently
  for (const auto& t : file.tensors()) {
    fnv(h, t.name.data(), t.name.size());
    fnv_value(h, static_cast<uint32_t>(t.dtype));
    for (const int64_t d : t.ne) fnv_value(h, d);
    const auto data = file.tensor_data(t);
    if (data.size() <= kSamples * kSampleBytes) {
      fnv(h, data.data(), data.size());
      continue;
    }
    const uint64_t stride = (data.size() - kSampleBytes) / (kSamples - 1);
    for (uint64_t s = 0; s < kSamples; ++s) fnv(h, data.data() + s * stride, kSampleBytes);
  }
  fp.tensor_hash = h;
  return fp;
}

void write_activation_stats(const ActivationStats& stats, const std::filesystem::path& path,
                            const StatsSections& add_sections) {
  const int64_t n_layer = stats.n_layer();
  const int64_t n_ff = stats.n_ff();
  if (n_layer < 1 || n_ff < 1) throw std::invalid_argument("activation stats: no layers or no neurons");
  if (n_layer != stats.model.n_layer || n_ff != stats.model.n_ff) {
    throw std::invalid_argument("activation stats: counts are [" + std::to_string(n_layer) + "][" +
                                std::to_string(n_ff) + "], the model has n_layer " +
                                std::to_string(stats.model.n_layer) + ", n_ff " + std::to_string(stats.model.n_ff));
  }
  if (stats.n_tokens < 1 || stats.n_tokens > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument("activation stats: n_tokens " + std::to_string(stats.n_tokens) +
                                " is outside [1, 2^31 - 1]");
  }
  if (static_cast<int64_t>(stats.thresholds.size()) != n_layer) {
    throw std::invalid_argument("activation stats: " + std::to_string(stats.thresholds.size()) +
                                " thresholds for " + std::to_string(n_layer) + " layers");
  }
  for (int64_t l = 0; l < n_layer; ++l) {
    const auto& c = stats.fire_counts[static_cast<size_t>(l)];
    if (static_cast<int64_t>(c.size()) != n_ff) {
      throw std::invalid_argument("activation stats: layer " + std::to_string(l) + " has " +
                                  std::to_string(c.size()) + " counts, expected " + std::to_string(n_ff));
    }
    for (const int32_t v : c) {
      if (v < 0 || static_cast<uint64_t>(v) > stats.n_tokens) {
        throw std::invalid_argument("activation stats: layer " + std::to_string(l) + " has a count " +
                                    std::to_string(v) + " outside [0, n_tokens]");
      }
    }
  }

  gguf::GgufWriter w;
  w.set("general.architecture", gguf::Value(std::string(kStatsArchitecture)));
  w.set(stats_key("version"), gguf::Value(kStatsVersion));
  w.set(stats_key("model.name"), gguf::Value(stats.model.name));
  w.set(stats_key("model.ffn_form"), gguf::Value(stats.model.ffn_form));
  w.set(stats_key("model.n_layer"), gguf::Value(static_cast<uint32_t>(n_layer)));
  w.set(stats_key("model.n_embd"), gguf::Value(static_cast<uint32_t>(stats.model.n_embd)));
  w.set(stats_key("model.n_ff"), gguf::Value(static_cast<uint32_t>(n_ff)));
  w.set(stats_key("model.file_size"), gguf::Value(stats.model.file_size));
  w.set(stats_key("model.tensor_hash"), gguf::Value(stats.model.tensor_hash));
  w.set(stats_key("firing"), gguf::Value(std::string(firing_rule_name(stats.rule))));
  w.set(stats_key("fire_fraction"), gguf::Value(stats.fire_fraction));
  w.set(stats_key("thresholds"), gguf::Value::f32_array(stats.thresholds));
  w.set(stats_key("n_tokens"), gguf::Value(stats.n_tokens));
  w.set(stats_key("n_ctx"), gguf::Value(static_cast<uint64_t>(stats.n_ctx)));
  w.set(stats_key("corpus"), gguf::Value(stats.corpus));
  for (int64_t l = 0; l < n_layer; ++l) {
    const auto& c = stats.fire_counts[static_cast<size_t>(l)];
    std::vector<std::byte> bytes(c.size() * sizeof(int32_t));
    std::memcpy(bytes.data(), c.data(), bytes.size());
    w.add_tensor(fire_count_tensor_name(l), kernels::DType::I32, {n_ff}, std::move(bytes));  // i32 [n_ff]
  }
  if (add_sections) add_sections(w);
  w.write(path);
}

ActivationStats read_activation_stats(const std::filesystem::path& path) {
  return read_activation_stats(gguf::GgufFile::open(path));
}

ActivationStats read_activation_stats(const gguf::GgufFile& f) {
  const std::string& file = f.path();
  const std::string arch = f.get_string("general.architecture");
  if (arch != kStatsArchitecture) {
    throw ModelLoadError::for_key(file, "general.architecture",
                                  "is '" + gguf::printable(arch) + "', expected '" + std::string(kStatsArchitecture) +
                                      "' (not an activation statistics file; `thermocline profile` writes them)");
  }
  const uint64_t version = f.get_u64(stats_key("version"));
  if (version != kStatsVersion) {
    throw ModelLoadError::for_key(file, stats_key("version"),
                                  "is " + std::to_string(version) + ", this build reads version " +
                                      std::to_string(kStatsVersion));
  }
  ActivationStats s;
  s.model.name = f.get_string(stats_key("model.name"));
  s.model.ffn_form = f.get_string(stats_key("model.ffn_form"));
  s.model.n_layer = read_count(f, stats_key("model.n_layer"), 1, kMaxLayers);
  s.model.n_embd = read_count(f, stats_key("model.n_embd"), 1, std::numeric_limits<int32_t>::max());
  s.model.n_ff = read_count(f, stats_key("model.n_ff"), 1, kMaxFf);
  s.model.file_size = f.get_u64(stats_key("model.file_size"));
  s.model.tensor_hash = f.get_u64(stats_key("model.tensor_hash"));
  const std::string rule = f.get_string(stats_key("firing"));
  if (!parse_firing_rule(rule, s.rule)) {
    throw ModelLoadError::for_key(file, stats_key("firing"),
                                  "'" + gguf::printable(rule) +
                                      "' is not one of gate>0, gate>0&&up>0, |act|>threshold");
  }
  s.fire_fraction = static_cast<float>(f.get_f64(stats_key("fire_fraction")));
  if (!(s.fire_fraction >= 0.0f && s.fire_fraction <= 1.0f)) {
    throw ModelLoadError::for_key(file, stats_key("fire_fraction"), "is outside [0, 1]");
  }
  s.n_tokens = static_cast<uint64_t>(
      read_count(f, stats_key("n_tokens"), 1, std::numeric_limits<int32_t>::max()));
  s.n_ctx = read_count(f, stats_key("n_ctx"), 0, std::numeric_limits<int32_t>::max());
  s.corpus = f.get_string(stats_key("corpus"));
  s.thresholds = f.get_f32_array(stats_key("thresholds"));
  if (static_cast<int64_t>(s.thresholds.size()) != s.model.n_layer) {
    throw ModelLoadError::for_key(file, stats_key("thresholds"),
                                  "has " + std::to_string(s.thresholds.size()) + " values, expected n_layer = " +
                                      std::to_string(s.model.n_layer));
  }
  for (const float t : s.thresholds) {
    if (!std::isfinite(t) || t < 0) {
      throw ModelLoadError::for_key(file, stats_key("thresholds"), "holds a negative or non-finite value");
    }
  }

  const int64_t n_ff = s.model.n_ff;
  for (int64_t l = 0; l < s.model.n_layer; ++l) {
    const std::string name = fire_count_tensor_name(l);
    const auto* info = f.find_tensor(name);
    if (info == nullptr) {
      throw ModelLoadError::for_tensor(file, name, "is missing (n_layer = " + std::to_string(s.model.n_layer) + ")");
    }
    if (info->dtype != kernels::DType::I32 || info->ne.size() != 1 || info->ne[0] != n_ff) {
      throw ModelLoadError::for_tensor(file, name,
                                       "is " + std::string(kernels::dtype_name(info->dtype)) + " " +
                                           info->shape_string() + ", expected i32 [" + std::to_string(n_ff) +
                                           "] (n_ff)");
    }
    std::vector<int32_t> counts(static_cast<size_t>(n_ff));
    const auto data = f.tensor_data(*info);
    std::memcpy(counts.data(), data.data(), counts.size() * sizeof(int32_t));
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] < 0 || static_cast<uint64_t>(counts[i]) > s.n_tokens) {
        throw ModelLoadError::for_tensor(file, name,
                                         "neuron " + std::to_string(i) + " has count " + std::to_string(counts[i]) +
                                             ", outside [0, n_tokens = " + std::to_string(s.n_tokens) + "]");
      }
    }
    s.fire_counts.push_back(std::move(counts));
  }
  if (static_cast<int64_t>(f.tensors().size()) != s.model.n_layer) {
    for (const auto& t : f.tensors()) {
      bool known = false;
      for (int64_t l = 0; l < s.model.n_layer && !known; ++l) {
        known = t.name == fire_count_tensor_name(l) || t.name == model::layer_tensor_name(l, "fc1") ||
                t.name == model::layer_tensor_name(l, "fc2");
      }
      known = known || t.name.starts_with(kTealTensorPrefix);
      if (!known) {
        throw ModelLoadError::for_tensor(file, t.name,
                                         "is not expected in a stats file with n_layer = " +
                                             std::to_string(s.model.n_layer));
      }
    }
  }
  return s;
}

void check_stats_match_model(const ActivationStats& stats, const std::string& stats_path,
                             const gguf::GgufFile& model_file, const model::ModelSpec& spec) {
  const std::string model_path = model_file.path();
  auto mismatch = [&](const std::string& key, const std::string& ours, const std::string& theirs) {
    return ModelLoadError::for_key(stats_path, stats_key(key),
                                   "is " + ours + " but the model " + model_path + " has " + theirs +
                                       ": these statistics were recorded on another model; run "
                                       "`thermocline profile` on this one");
  };
  if (stats.model.n_layer != spec.n_layer) {
    throw mismatch("model.n_layer", std::to_string(stats.model.n_layer), std::to_string(spec.n_layer));
  }
  if (stats.model.n_ff != spec.n_ff) {
    throw mismatch("model.n_ff", std::to_string(stats.model.n_ff), std::to_string(spec.n_ff));
  }
  const std::string form(model::ffn_form_name(spec.ffn_form));
  if (stats.model.ffn_form != form) {
    throw mismatch("model.ffn_form", "'" + gguf::printable(stats.model.ffn_form) + "'", "'" + form + "'");
  }
  if (stats.model.n_embd != spec.n_embd) {
    throw mismatch("model.n_embd", std::to_string(stats.model.n_embd), std::to_string(spec.n_embd));
  }
  const ModelFingerprint fp = fingerprint_model(model_file, spec);
  if (stats.model.tensor_hash != fp.tensor_hash) {
    throw mismatch("model.tensor_hash",
                   hex(stats.model.tensor_hash) + " (model '" + gguf::printable(stats.model.name) + "', " +
                       std::to_string(stats.model.file_size) + " bytes)",
                   hex(fp.tensor_hash) + " ('" + gguf::printable(fp.name) + "', " + std::to_string(fp.file_size) +
                       " bytes)");
  }
}

}  // namespace tc::sparse
