// convert --to-pwri: turns a llama.cpp GGUF of a ReLU model plus the
// predictors of a `thermocline profile --train-predictors` stats file into a
// PowerInfer file (magic PWRI, ffn_down_t, fc1/fc2). Streams tensor data from
// the mapped inputs through GgufWriter fillers; see docs/pwri.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/dtype.h"

namespace tc::profiler {

// str metadata key written to the output: where it came from
// ("model.gguf + predictors from model.stats.gguf").
inline constexpr std::string_view kConvertSourceKey = "thermocline.convert.source";

struct ConvertPwriOptions {
  std::filesystem::path input;    // llama.cpp GGUF (magic GGUF) of a reglu or drelu model
  std::filesystem::path stats;    // stats file of this model carrying blk.N.fc1/fc2
  std::filesystem::path output;   // the PWRI file (written atomically)
  // dtype of fc1/fc2 in the output: f16, q8_0, q4_0 or q5_0; empty: as stored in `stats`.
  std::string predictor_type;
  // Overrides powerinfer.sparse_threshold; the stats' per-layer thresholds
  // (thermocline.predictor.layer_thresholds) are then dropped.
  std::optional<float> threshold;
  int n_threads = 0;              // transposition threads; 0: physical cores
};

struct ConvertPwriResult {
  kernels::DType down_dtype = kernels::DType::F16;  // ffn_down's dtype, kept for ffn_down_t
  bool down_requantized = false;                    // quantized ffn_down: re-rounded in its own dtype
  int64_t n_tensors = 0;                            // tensors written
  uint64_t file_bytes = 0;                          // size of the output
  float threshold = 0.0f;                           // powerinfer.sparse_threshold written
  bool layer_thresholds = false;                    // thermocline.predictor.layer_thresholds written
  std::string architecture;                         // general.architecture written (model::architecture_for)
  // One line each: what the conversion changed beyond the layout (the
  // re-rounding of a quantized ffn_down) and what PowerInfer's own loader
  // would not accept in this file (tied embeddings, extra tensors, ...).
  // For the caller to print.
  std::vector<std::string> notes;
};

// Progress: bytes written so far, total bytes.
using ConvertProgress = std::function<void(uint64_t done, uint64_t total)>;

// Converts `o.input` to `o.output`. Every metadata key of the input is kept
// (plus thermocline.ffn_form, powerinfer.sparse_threshold, the per-layer
// thresholds when the stats have them, and kConvertSourceKey), except that
// a dReLU `llama` model becomes architecture `bamboo`, its `llama.*` keys
// renamed `bamboo.*` (PowerInfer runs dReLU for bamboo only); every tensor
// keeps its place and bytes except blk.N.ffn_down.weight {n_ff, n_embd},
// which becomes blk.N.ffn_down_t.weight {n_embd, n_ff} (row i = neuron i;
// float dtypes transposed exactly, quantized ones dequantized, transposed
// and re-quantized in the same dtype), and the input's own fc1/fc2, if any,
// which give way to the stats' predictors: blk.N.fc1 {n_embd, r_N} and
// blk.N.fc2 {r_N, n_ff} follow layer N's last tensor.
// Throws gguf::ModelLoadError naming the file and the key or tensor at
// fault: a missing file, a SwiGLU or already-PWRI input, stats of another
// model or without predictors, a shape a dtype's blocks cannot hold;
// std::invalid_argument for a bad option; std::runtime_error on I/O errors.
ConvertPwriResult convert_to_pwri(const ConvertPwriOptions& o, const ConvertProgress& progress = {});

}  // namespace tc::profiler
