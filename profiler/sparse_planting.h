// Synthetic sparse ReLU models for `make-model --sparse`: per-neuron firing
// rates following a power law are planted into the gate weights through a
// constant residual channel, calibrated layer by layer on a forward pass over
// random tokens, and the file carries exact low-rank predictors (fc1/fc2).
// The construction is described in docs/synthetic-sparse-models.md.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/sparse/predictors.h"
#include "kernels/dtype.h"
#include "profiler/make_model.h"

namespace tc::profiler {

// Bounds of a neuron's planted firing frequency.
inline constexpr double kMinFireFrequency = 1e-3;
inline constexpr double kMaxFireFrequency = 0.99;

// Metadata keys that record what was planted (besides thermocline.ffn_form
// and thermocline.make_model.seed).
inline constexpr std::string_view kSparseActiveKey = "thermocline.synthetic.sparse_active";    // f32
inline constexpr std::string_view kSparseAlphaKey = "thermocline.synthetic.sparse_alpha";      // f32
inline constexpr std::string_view kPredictorRankKey = "thermocline.synthetic.predictor_rank";  // u32
inline constexpr std::string_view kCalibTokensKey = "thermocline.synthetic.calib_tokens";      // u32
// f32 [n_layer]: fraction of gate pre-activations > 0 on the calibration tokens.
inline constexpr std::string_view kLayerActiveKey = "thermocline.synthetic.layer_active";
// u32: the residual channel held constant (the per-neuron bias input).
inline constexpr std::string_view kBiasChannelKey = "thermocline.synthetic.bias_channel";
// f32: --sparse-overlap (0: none planted).
inline constexpr std::string_view kSparseOverlapKey = "thermocline.synthetic.sparse_overlap";
// f32 [n_layer]: fraction of a calibration token's active neurons active for
// the previous token too.
inline constexpr std::string_view kLayerOverlapKey = "thermocline.synthetic.layer_overlap";

// Target firing frequency of the neuron of rank k (0 = hottest), k < n:
// clip(s * (k + 1)^-alpha, kMinFireFrequency, kMaxFireFrequency), with s
// chosen (bisection) so that the mean over the n ranks is `mean`.
// Non-increasing. Throws std::invalid_argument unless
// kMinFireFrequency < mean < kMaxFireFrequency and alpha >= 0.
std::vector<double> power_law_frequencies(int64_t n, double mean, double alpha);

// Quantized predictors round the planted scores: each layer then gets the
// largest threshold <= 0 (thermocline.predictor.layer_thresholds, and the
// lowest as powerinfer.sparse_threshold) that keeps this fraction of the
// firing (token, neuron) pairs of the calibration tokens predicted.
inline constexpr double kPlantedRecall = 0.999;

struct SparseTensorTypes {
  kernels::DType base;       // token_embd, attention, ffn_gate, ffn_up
  kernels::DType heavy;      // output, attn_v, ffn_down / ffn_down_t
  kernels::DType predictor;  // fc1, fc2
};

// The predictor rank used: o.sparse.predictor_rank, or its default
// (n_embd / 4 rounded to a multiple of 64, at least 64).
int64_t sparse_predictor_rank(const MakeModelOptions& o);

// fc1/fc2's dtype: o.sparse.predictor_type, or `base` when empty. Throws
// std::invalid_argument for a name that is not a weight format.
kernels::DType sparse_predictor_type(const MakeModelOptions& o, kernels::DType base);

// Checks the sparse options against the dims and types. Throws
// std::invalid_argument saying which option is wrong and what was expected.
void check_sparse_options(const MakeModelOptions& o, const SparseTensorTypes& types);

// Runs the calibration forward pass (uses n_threads threads, deterministic
// for any count), then adds every tensor of the model to `w` (data produced
// at write time, row by row from seeded streams) and the
// thermocline.synthetic.* and powerinfer.sparse_threshold keys. The caller
// sets the other metadata and picks the magic (PWRI for SparseLayout::PowerInfer).
void add_sparse_model(const MakeModelOptions& o, const SparseTensorTypes& types, gguf::GgufWriter& w,
                      int n_threads);

}  // namespace tc::profiler
