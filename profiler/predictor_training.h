// Building activation predictors for a ReLU-family model from recorded
// samples (profiler/predictor_samples.h): per layer, trained low-rank MLPs
// (profiler/predictor_mlp.h) or the training-free gate SVD
// (profiler/predictor_svd.h); the least-compute rank reaching a target
// recall; a per-layer threshold calibrated to that recall; recall and
// precision on held-out tokens with the weights exactly as written; and the
// stats-file section that stores them (blk.N.fc1/fc2 and the threshold keys
// of engine/sparse/predictors.h). What `thermocline profile --train-predictors` runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/activation_stats.h"
#include "kernels/dtype.h"
#include "profiler/predictor_mlp.h"
#include "profiler/predictor_samples.h"

namespace tc::profiler {

enum class PredictorKind {
  Trained,  // low-rank MLP trained on recorded firings
  Svd,      // truncated SVD of W_gate diag(ffn_norm), no training
};
std::string_view predictor_kind_name(PredictorKind kind);  // "trained", "svd"
bool parse_predictor_kind(std::string_view name, PredictorKind& out);

// Metadata written next to the predictors (besides the threshold keys).
inline constexpr std::string_view kPredictorKindKey = "thermocline.predictor.kind";                    // str
inline constexpr std::string_view kPredictorTargetRecallKey = "thermocline.predictor.target_recall";  // f32

struct PredictorOptions {
  PredictorKind kind = PredictorKind::Trained;
  double target_recall = 0.99;   // in (0, 1]
  int64_t max_rank = 256;        // largest candidate rank (>= 16); see auto_max_rank()
  kernels::DType dtype = kernels::DType::F16;  // fc1/fc2 as written
  double holdout = 0.25;         // fraction of samples not trained on: half calibration, half evaluation
  bool compare_svd = true;       // kind Trained: also evaluate the SVD baseline (reported, not written)
  MlpTrainOptions train;         // .rank is set per candidate
  bool init_from_svd = true;     // kind Trained: start from the gate-SVD predictor of the same rank
  int power_iterations = 2;      // SVD range finder
  uint64_t seed = 1;
  // Layers are built in parallel, each on one thread, so the result does
  // not depend on the thread count. 0: physical cores.
  int n_threads = 0;
};

// Throws std::invalid_argument with a message naming the option: a SwiGLU
// model, target recall outside (0, 1], max rank below 16, a dtype that is
// not a weight format or whose block does not divide n_embd, no candidate
// rank, holdout outside (0, 1).
void check_predictor_options(const PredictorOptions& options, const model::ModelSpec& spec);

// 16, 32, 64, ... up to options.max_rank, keeping multiples of the dtype's
// block size (fc2 rows hold `rank` values) and, for Svd, at most
// 2 * min(n_embd, n_ff).
std::vector<int64_t> candidate_ranks(const PredictorOptions& options, const model::ModelSpec& spec);

// The largest 16 * 2^k whose predictor has at most a quarter of the
// layer's FFN weights: rank (n_embd + n_ff) <= 3 n_ff n_embd / 4 (128 for
// the bundled model, 2048 for a 7B LLaMA); at least 16.
int64_t auto_max_rank(const model::ModelSpec& spec);

// Decisions over a set of tokens: neuron predicted active iff score > threshold.
struct PredictorEval {
  int64_t n_tokens = 0;
  int64_t n_decisions = 0;  // n_tokens * n_ff
  int64_t true_pos = 0, false_pos = 0, false_neg = 0;
  double recall() const;     // tp / (tp + fn); 1 when nothing fired
  double precision() const;  // tp / (tp + fp); 1 when nothing was predicted
  double predicted_fraction() const;  // (tp + fp) / decisions
  double true_fraction() const;       // (tp + fn) / decisions
};

// Counts over sample rows idx of `layer`; scores f32 [idx.size(), n_ff].
PredictorEval evaluate_scores(const float* scores, const PredictorSamples& samples, int64_t layer,
                              std::span<const int64_t> idx, float threshold);

// The largest threshold whose recall over these rows is >= target plus two
// binomial standard errors, sqrt(target (1 - target) / n_firing), so that
// unseen tokens keep the target (0 when no neuron fired there).
float calibrate_threshold(const float* scores, const PredictorSamples& samples, int64_t layer,
                          std::span<const int64_t> idx, double target);

// Per token, for one layer.
struct PredictorCost {
  int64_t bytes = 0;      // fc1 + fc2 at the written dtype
  int64_t flops = 0;      // 2 r (n_embd + n_ff)
  int64_t ffn_bytes = 0;  // ffn_gate + ffn_up + ffn_down(_t) as stored in the model
  int64_t ffn_flops = 0;  // 2 * 3 n_ff n_embd
};

struct RankTrial {
  int64_t rank = 0;
  PredictorEval calib;  // on the calibration tokens at threshold 0
};

struct LayerPredictor {
  PredictorKind kind = PredictorKind::Trained;
  int64_t layer = 0;
  int64_t rank = 0;
  bool target_reached = false;  // a candidate reached the target recall at threshold 0
  float threshold = 0.0f;       // calibrated on the calibration tokens
  std::vector<RankTrial> trials;  // ranks tried, ascending; the last is the one kept
  LowRankMlp weights;             // f32 values of what is written (dequantized)
  std::vector<std::byte> fc1;     // dtype {n_embd, rank}: the bytes written
  std::vector<std::byte> fc2;     // dtype {rank, n_ff}
  PredictorEval eval;             // evaluation tokens at `threshold`
  PredictorCost cost;
};

struct PredictorBuild {
  PredictorOptions options;
  model::FfnForm ffn_form = model::FfnForm::ReGLU;
  int64_t n_embd = 0, n_ff = 0;
  int64_t n_samples = 0;
  SampleSplit split;
  std::vector<LayerPredictor> layers;    // [n_layer], kind options.kind: written
  std::vector<LayerPredictor> baseline;  // [n_layer] Svd when compare_svd and kind Trained; else empty
  float global_threshold = 0.0f;         // min of the layer thresholds: every layer keeps its recall
  double seconds = 0.0;
};

// Work done and in all, counted in tokens (training tokens processed, and
// calibration tokens scored per candidate; candidates skipped once a rank
// reaches the target count as done). Called from the worker threads, one
// call at a time.
using PredictorProgress = std::function<void(int64_t done, int64_t total)>;

// Builds predictors for every layer. `file`/`spec` are the model's (the
// SVD reads ffn_gate and ffn_norm; the cost reads the FFN tensors' sizes).
// Throws std::invalid_argument for bad options or too few samples.
PredictorBuild build_predictors(const gguf::GgufFile& file, const model::ModelSpec& spec,
                                const PredictorSamples& samples, const PredictorOptions& options,
                                const PredictorProgress& progress = {});

// Adds blk.N.fc1.weight / blk.N.fc2.weight, the layer thresholds
// (sparse::kLayerThresholdsKey), powerinfer.sparse_threshold (the global
// threshold), kind and target recall. `build` must outlive the call.
sparse::StatsSections predictor_sections(const PredictorBuild& build);

}  // namespace tc::profiler
