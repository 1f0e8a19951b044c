// Predictors: PowerInfer's per-layer low-rank MLPs that guess which FFN
// neurons fire before the FFN runs:
//   score = fc2 · relu(fc1 · x),  neuron i predicted active iff score_i > threshold
// with x the residual entering the FFN block (before ffn_norm) and the
// threshold PowerInfer's `powerinfer.sparse_threshold` (0: sigmoid >= 0.5).
// They live in PWRI model files, in `make-model --sparse` files, and in the
// stats files of `profile --train-predictors`, always under the names
// blk.N.fc1.weight / blk.N.fc2.weight. Views into a mapped file (or into
// owned converted copies); const after load.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "kernels/tensor.h"

namespace tc::sparse {

// f32 metadata key (PowerInfer's): the score a neuron must exceed to be
// predicted active. Absent: 0.
inline constexpr std::string_view kSparseThresholdKey = "powerinfer.sparse_threshold";

// f32 array [n_layer] (ours): per-layer thresholds that override the global
// one (a trained predictor is calibrated to its target recall layer by
// layer; PowerInfer's tools read only the global key).
inline constexpr std::string_view kLayerThresholdsKey = "thermocline.predictor.layer_thresholds";

struct LayerPredictor {
  kernels::Tensor fc1;  // weight dtype {n_embd, r}: row k = hidden unit k
  kernels::Tensor fc2;  // weight dtype {r, n_ff}: row i = neuron i's score weights
  float threshold = 0.0f;  // this layer's threshold (the layer key's entry, else the global key)
  int64_t rank() const { return fc1.ne[1]; }
};

struct PredictorSet {
  std::vector<LayerPredictor> layers;  // [n_layer]
  float threshold = 0.0f;              // powerinfer.sparse_threshold
  std::string source;                  // path of the file they came from

  bool empty() const { return layers.empty(); }
};

// True when `file` holds blk.0.fc1.weight.
bool has_predictors(const gguf::GgufFile& file);

// Views of every layer's fc1/fc2 in `file` (which must outlive the result),
// checked against `spec`: fc1 {n_embd, r}, fc2 {r, n_ff}, the same r within
// a layer (r may differ between layers), a dtype the matmul kernels run
// (is_weight_dtype: PowerInfer's q5_0 predictors included).
// Throws gguf::ModelLoadError naming the file and the tensor or key at fault.
PredictorSet map_predictors(const gguf::GgufFile& file, const model::ModelSpec& spec);

}  // namespace tc::sparse
