// convert --to-pwri: checks the model and the stats, lays out the PWRI file
// (metadata, tensors in the input's order with ffn_down transposed and the
// stats' predictors after each layer) and fills it from the mappings, the
// transposition in column tiles so no whole matrix is copied to f32.
#include "profiler/convert_pwri.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/model/transposed_down.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/predictors.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::profiler {
namespace {

using gguf::GgufFile;
using gguf::ModelLoadError;
using gguf::TensorInfo;
using kernels::DType;
using kernels::ThreadPool;

std::shared_ptr<const GgufFile> open_input(const std::filesystem::path& path, const std::string& role) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ModelLoadError(path.string(), "", "no such file (" + role + ")");
  }
  return std::make_shared<const GgufFile>(GgufFile::open(path));
}

// N of a tensor named "blk.N.*", else -1.
int64_t layer_of(const std::string& name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  int64_t layer = -1;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size();
  const auto [ptr, err] = std::from_chars(begin, end, layer);
  if (err != std::errc() || ptr == begin || ptr == end || *ptr != '.') return -1;
  return layer;
}

// fc1/fc2's dtype in the output: the option, or nullopt for "as stored".
std::optional<DType> parse_predictor_type(const std::string& name) {
  if (name.empty()) return std::nullopt;
  const auto t = kernels::dtype_from_name(name);
  if (!t || (*t != DType::F16 && *t != DType::Q8_0 && *t != DType::Q4_0 && *t != DType::Q5_0)) {
    throw std::invalid_argument("predictor type '" + name + "': expected f16, q8_0, q4_0 or q5_0");
  }
  return t;
}

// The checks on the model to convert; returns its spec.
model::ModelSpec check_input(const GgufFile& in) {
  std::string down_t;
  for (const auto& t : in.tensors()) {
    if (down_t.empty() && t.name.find(".ffn_down_t.") != std::string::npos) down_t = t.name;
  }
  if (in.magic() == gguf::Magic::PWRI || !down_t.empty()) {
    const std::string problem = "the file is already in PowerInfer's layout (magic " +
                                std::string(gguf::magic_name(in.magic())) +
                                (down_t.empty() ? "" : ", ffn_down_t") + "): --to-pwri converts a llama.cpp GGUF";
    throw down_t.empty() ? ModelLoadError(in.path(), "", problem) : ModelLoadError::for_tensor(in.path(), down_t, problem);
  }
  const auto spec = model::read_model_spec(in);
  if (!model::is_relu_family(spec.ffn_form)) {
    const std::string form(model::ffn_form_name(spec.ffn_form));
    throw ModelLoadError::for_key(
        in.path(), std::string(model::kFfnFormKey),
        (in.has(model::kFfnFormKey) ? "is '" + form + "'" : "is absent (so: " + form + ")") +
            "; PowerInfer files need a ReLU model (reglu, drelu or relu): its predictors and sparse FFN rely on "
            "activations that are exactly zero");
  }
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    const auto& down = in.tensor(model::layer_tensor_name(l, "ffn_down"), {spec.n_ff, spec.n_embd});
    const auto& traits = kernels::dtype_traits(down.dtype);
    const bool is_float = down.dtype == DType::F32 || down.dtype == DType::F16 || down.dtype == DType::BF16;
    if (!is_float && !traits.is_quantized) {
      throw ModelLoadError::for_tensor(in.path(), down.name,
                                       "has dtype " + std::string(traits.name) + ", expected a float or quantized weight type");
    }
    if (spec.n_embd % traits.block_size != 0) {
      throw ModelLoadError::for_tensor(in.path(), down.name,
                                       "is " + std::string(traits.name) + ": ffn_down_t rows of n_embd = " +
                                           std::to_string(spec.n_embd) + " are not a multiple of its block size " +
                                           std::to_string(traits.block_size));
    }
  }
  return spec;
}

// A predictor tensor in dtype `to`: its bytes, or its rows converted.
void fill_predictor(const GgufFile& stats, const TensorInfo& info, DType to, std::span<std::byte> out) {
  const auto src = stats.tensor_data(info);
  if (info.dtype == to) {
    std::memcpy(out.data(), src.data(), out.size());
    return;
  }
  const int64_t cols = info.ne[0];
  const int64_t in_row = kernels::row_bytes(info.dtype, cols);
  const int64_t out_row = kernels::row_bytes(to, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    kernels::dequantize_row(info.dtype, src.data() + r * in_row, row.data(), cols);
    kernels::quantize_row(to, row.data(), out.data() + r * out_row, cols);
  }
}

// Lines about what PowerInfer's loader (llm_load_sparse_model_tensors for
// llama and bamboo) would refuse or misread in the output.
void powerinfer_notes(const GgufFile& in, const model::ModelSpec& spec, std::vector<std::string>& notes) {
  if (spec.tied_embeddings) {
    notes.push_back("tied embeddings: output.weight written as a copy of token_embd.weight (PowerInfer's loader "
                    "requires one)");
  }
  std::vector<std::string> extra;
  for (const auto& t : in.tensors()) {
    const int64_t l = layer_of(t.name);
    bool known = t.name == "token_embd.weight" || t.name == "output_norm.weight" || t.name == "output.weight";
    for (const char* n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up",
                          "ffn_down", "fc1", "fc2"}) {
      known = known || (l >= 0 && t.name == model::layer_tensor_name(l, n));
    }
    if (!known) extra.push_back(t.name);
  }
  if (!extra.empty()) {
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 4; ++i) list += (i ? ", " : "") + extra[i];
    if (extra.size() > 4) list += ", ...";
    notes.push_back(std::to_string(extra.size()) + " tensor(s) PowerInfer's loader does not use (" + list +
                    "): it refuses files with unused tensors");
  }
}

}  // namespace

ConvertPwriResult convert_to_pwri(const ConvertPwriOptions& o, const ConvertProgress& progress) {
  const auto predictor_type = parse_predictor_type(o.predictor_type);
  const auto in = open_input(o.input, "the model to convert");
  const auto spec = check_input(*in);

  const auto stats_file = open_input(o.stats, "--stats");
  const auto stats = sparse::read_activation_stats(*stats_file);
  sparse::check_stats_match_model(stats, stats_file->path(), *in, spec);
  if (!sparse::has_predictors(*stats_file)) {
    throw ModelLoadError::for_tensor(stats_file->path(), model::layer_tensor_name(0, "fc1"),
                                     "is absent: these statistics carry no predictors; train them with "
                                     "`thermocline profile --train-predictors` on this model");
  }
  const sparse::PredictorSet predictors = sparse::map_predictors(*stats_file, spec);  // shapes and thresholds checked

  ConvertPwriResult result;
  result.down_dtype = in->tensor(model::layer_tensor_name(0, "ffn_down")).dtype;
  result.threshold = o.threshold.value_or(predictors.threshold);
  result.layer_thresholds = !o.threshold && stats_file->has(sparse::kLayerThresholdsKey);

  gguf::GgufWriter w(gguf::Magic::PWRI, static_cast<uint32_t>(in->alignment()));
  // llama's graph becomes bamboo for dReLU, as PowerInfer names it; other
  // architectures (falcon) keep their name.
  const bool llama_graph = spec.arch == model::kArchLlama || spec.arch == model::kArchBamboo;
  result.architecture = llama_graph ? std::string(model::architecture_for(spec.ffn_form, true)) : spec.arch;
  const std::string in_prefix = spec.arch + ".", out_prefix = result.architecture + ".";
  for (const auto& [key, value] : in->metadata()) {
    if (key == sparse::kLayerThresholdsKey) continue;  // those of the input's own predictors, if any
    if (key == "general.architecture") {
      w.set(key, gguf::Value(result.architecture));
    } else if (key.rfind(in_prefix, 0) == 0) {
      w.set(out_prefix + key.substr(in_prefix.size()), value);
    } else {
      w.set(key, value);
    }
  }
  // PowerInfer requires the epsilon, which llama.cpp (and Thermocline) default.
  if (spec.architecture->norm == model::NormKind::Rms && !in->has(in_prefix + "attention.layer_norm_rms_epsilon")) {
    w.set(out_prefix + "attention.layer_norm_rms_epsilon", gguf::Value(static_cast<float>(spec.rms_eps)));
  }
  w.set(std::string(model::kFfnFormKey), gguf::Value(std::string(model::ffn_form_name(spec.ffn_form))));
  w.set(std::string(sparse::kSparseThresholdKey), gguf::Value(result.threshold));
  if (result.layer_thresholds) {
    w.set(std::string(sparse::kLayerThresholdsKey),
          gguf::Value::f32_array(stats_file->get_f32_array(sparse::kLayerThresholdsKey)));
  }
  w.set(std::string(kConvertSourceKey), gguf::Value(o.input.filename().string() + " + predictors from " +
                                                    o.stats.filename().string()));

  // Where each layer's predictors go: after the layer's last tensor.
  auto is_input_predictor = [](const std::string& name, int64_t l) {
    return l >= 0 && (name == model::layer_tensor_name(l, "fc1") || name == model::layer_tensor_name(l, "fc2"));
  };
  const auto& tensors = in->tensors();
  std::vector<size_t> last_of_layer(static_cast<size_t>(spec.n_layer), 0);
  for (size_t idx = 0; idx < tensors.size(); ++idx) {
    const int64_t l = layer_of(tensors[idx].name);
    if (l >= 0 && l < spec.n_layer && !is_input_predictor(tensors[idx].name, l)) {
      last_of_layer[static_cast<size_t>(l)] = idx;
    }
  }

  auto pool = std::make_shared<ThreadPool>(o.n_threads);
  auto add_predictors = [&](int64_t l) {
    for (const char* which : {"fc1", "fc2"}) {
      const TensorInfo* info = &stats_file->tensor(model::layer_tensor_name(l, which));
      const DType to = predictor_type.value_or(info->dtype);
      const int64_t block = kernels::dtype_traits(to).block_size;
      if (info->ne[0] % block != 0) {
        throw ModelLoadError::for_tensor(stats_file->path(), info->name,
                                         "has rows of " + std::to_string(info->ne[0]) + ", not a multiple of the " +
                                             std::string(kernels::dtype_name(to)) + " block size " +
                                             std::to_string(block) + "; choose another --predictor-type");
      }
      w.add_tensor(info->name, to, info->ne,
                   [stats_file, info, to](std::span<std::byte> out) { fill_predictor(*stats_file, *info, to, out); });
    }
  };
  bool replaced_predictors = false;
  for (size_t idx = 0; idx < tensors.size(); ++idx) {
    const TensorInfo* t = &tensors[idx];
    const int64_t l = layer_of(t->name);
    if (is_input_predictor(t->name, l)) {
      replaced_predictors = true;
    } else if (l >= 0 && t->name == model::layer_tensor_name(l, "ffn_down")) {
      // ffn_down_t: dtype of ffn_down, {n_embd, n_ff}, row i = neuron i's output column.
      w.add_tensor(model::layer_tensor_name(l, "ffn_down_t"), t->dtype, {t->ne[1], t->ne[0]},
                   [in, t, pool](std::span<std::byte> out) {
                     model::transpose_down_into(model::tensor_view(*in, t->name), out, *pool);
                   });
    } else {
      auto copy = [in, t](std::span<std::byte> out) { std::memcpy(out.data(), in->tensor_data(*t).data(), out.size()); };
      w.add_tensor(t->name, t->dtype, t->ne, copy);
      if (spec.tied_embeddings && t->name == "token_embd.weight") {
        // PowerInfer's loader requires an output head: the tied one, materialized.
        w.add_tensor("output.weight", t->dtype, t->ne, copy);
        result.n_tensors += 1;
      }
    }
    if (l >= 0 && l < spec.n_layer && idx == last_of_layer[static_cast<size_t>(l)]) add_predictors(l);
    result.n_tensors += is_input_predictor(t->name, l) ? 0 : 1;
  }
  result.n_tensors += 2 * spec.n_layer;

  result.down_requantized = kernels::dtype_traits(result.down_dtype).is_quantized;
  if (result.down_requantized) {
    result.notes.push_back("ffn_down is " + std::string(kernels::dtype_name(result.down_dtype)) +
                           ": dequantized, transposed and re-quantized in " +
                           std::string(kernels::dtype_name(result.down_dtype)) +
                           " along the new rows, which re-rounds it (convert from an f16 file for exact values)");
  }
  if (replaced_predictors) {
    result.notes.push_back("the model's own blk.N.fc1/fc2 were replaced by the predictors of " +
                           o.stats.filename().string());
  }
  powerinfer_notes(*in, spec, result.notes);

  w.write(o.output, progress);
  result.file_bytes = std::filesystem::file_size(o.output);
  return result;
}

}  // namespace tc::profiler
