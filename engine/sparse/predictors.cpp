// map_predictors: fc1/fc2 views checked against the model, thresholds read,
// and predictors in a dtype the kernels cannot run widened to f16.
#include "engine/sparse/predictors.h"

#include <cmath>
#include <cstring>

#include "engine/model/llama_weights.h"
#include "kernels/cpu/quantize.h"

namespace tc::sparse {
namespace {

using gguf::ModelLoadError;

// A copy of `t` in f16 (same shape), owned by `set`.
kernels::Tensor widen_to_f16(const kernels::Tensor& t, PredictorSet& set) {
  const int64_t cols = t.n_cols();
  const int64_t rows = t.n_rows();
  auto bytes = std::make_unique<std::byte[]>(static_cast<size_t>(cols * rows) * sizeof(uint16_t));
  auto* out = reinterpret_cast<uint16_t*>(bytes.get());
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(t.dtype, t.row(r), row.data(), cols);
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = kernels::f32_to_f16(row[static_cast<size_t>(c)]);
  }
  kernels::Tensor wide = kernels::Tensor::matrix(bytes.get(), kernels::DType::F16, cols, rows);
  set.owned.push_back(std::move(bytes));
  return wide;
}

kernels::Tensor predictor_tensor(const gguf::GgufFile& file, const std::string& name, int64_t n_cols,
                                 int64_t n_rows, PredictorSet& set) {
  const auto& info = file.tensor(name);
  if (info.ne.size() != 2 || info.ne[0] != n_cols || (n_rows > 0 && info.ne[1] != n_rows)) {
    throw ModelLoadError::for_tensor(file.path(), name,
                                     "has shape " + info.shape_string() + ", expected [" + std::to_string(n_cols) +
                                         ", " + (n_rows > 0 ? std::to_string(n_rows) : std::string("rank")) + "]");
  }
  const kernels::Tensor t = model::tensor_view(file, name);
  if (kernels::is_weight_dtype(t.dtype)) return t;
  if (!kernels::dtype_traits(t.dtype).is_quantized) {
    throw ModelLoadError::for_tensor(file.path(), name,
                                     "has dtype " + std::string(kernels::dtype_name(t.dtype)) +
                                         ", expected a weight dtype (f32, f16, bf16, q8_0, q4_0, q5_0, q4_K, q6_K)");
  }
  return widen_to_f16(t, set);
}

}  // namespace

bool has_predictors(const gguf::GgufFile& file) {
  return file.find_tensor(model::layer_tensor_name(0, "fc1")) != nullptr;
}

PredictorSet map_predictors(const gguf::GgufFile& file, const model::ModelSpec& spec) {
  PredictorSet set;
  set.source = file.path();
  set.threshold = static_cast<float>(file.get_f64(kSparseThresholdKey, 0.0));
  if (!std::isfinite(set.threshold)) throw file.error(std::string(kSparseThresholdKey), "must be finite");
  std::vector<float> layer_thresholds;
  if (file.has(kLayerThresholdsKey)) {
    layer_thresholds = file.get_f32_array(kLayerThresholdsKey);
    if (static_cast<int64_t>(layer_thresholds.size()) != spec.n_layer) {
      throw file.error(std::string(kLayerThresholdsKey), "has " + std::to_string(layer_thresholds.size()) +
                                                             " entries, expected n_layer = " +
                                                             std::to_string(spec.n_layer));
    }
    for (const float v : layer_thresholds) {
      if (!std::isfinite(v)) throw file.error(std::string(kLayerThresholdsKey), "has a non-finite entry");
    }
  }
  set.layers.reserve(static_cast<size_t>(spec.n_layer));
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    LayerPredictor p;
    p.fc1 = predictor_tensor(file, model::layer_tensor_name(l, "fc1"), spec.n_embd, 0, set);
    const int64_t rank = p.fc1.ne[1];
    p.fc2 = predictor_tensor(file, model::layer_tensor_name(l, "fc2"), rank, spec.n_ff, set);
    p.threshold = layer_thresholds.empty() ? set.threshold : layer_thresholds[static_cast<size_t>(l)];
    set.layers.push_back(p);
  }
  return set;
}

}  // namespace tc::sparse
