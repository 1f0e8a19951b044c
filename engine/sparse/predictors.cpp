// map_predictors: fc1/fc2 views checked against the model, and thresholds read.
#include "engine/sparse/predictors.h"

#include <cmath>
#include <cstring>

#include "engine/model/llama_weights.h"

namespace tc::sparse {
namespace {

using gguf::ModelLoadError;

kernels::Tensor predictor_tensor(const gguf::GgufFile& file, const std::string& name, int64_t n_cols,
                                 int64_t n_rows) {
  const auto& info = file.tensor(name);
  if (info.ne.size() != 2 || info.ne[0] != n_cols || (n_rows > 0 && info.ne[1] != n_rows)) {
    throw ModelLoadError::for_tensor(file.path(), name,
                                     "has shape " + info.shape_string() + ", expected [" + std::to_string(n_cols) +
                                         ", " + (n_rows > 0 ? std::to_string(n_rows) : std::string("rank")) + "]");
  }
  const kernels::Tensor t = model::tensor_view(file, name);
  if (!kernels::is_weight_dtype(t.dtype)) {
    throw ModelLoadError::for_tensor(file.path(), name,
                                     "has dtype " + std::string(kernels::dtype_name(t.dtype)) +
                                         ", expected a weight dtype (f32, f16, bf16 or a block format)");
  }
  return t;
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
    p.fc1 = predictor_tensor(file, model::layer_tensor_name(l, "fc1"), spec.n_embd, 0);
    const int64_t rank = p.fc1.ne[1];
    p.fc2 = predictor_tensor(file, model::layer_tensor_name(l, "fc2"), rank, spec.n_ff);
    p.threshold = layer_thresholds.empty() ? set.threshold : layer_thresholds[static_cast<size_t>(l)];
    set.layers.push_back(p);
  }
  return set;
}

}  // namespace tc::sparse
