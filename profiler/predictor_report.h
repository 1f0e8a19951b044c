// The report of `profile --train-predictors`: a per-layer markdown table
// (rank, threshold, held-out recall and precision, predicted and true active
// fractions, predictor size and FLOPs against the layer's FFN) and a short
// summary for stderr.
#pragma once

#include <filesystem>
#include <string>

#include "profiler/predictor_training.h"

namespace tc::profiler {

// Markdown: a heading, the settings, one table row per layer and kind (the
// written kind first, then the SVD baseline when it was evaluated), the
// ranks tried, and notes (layers that missed the target, dReLU's gate-only SVD).
std::string predictor_report_markdown(const PredictorBuild& build);

// A few lines: per kind, mean recall and precision, predicted vs true active
// fraction, predictor bytes against the FFN's, layers that missed the target.
std::string predictor_summary(const PredictorBuild& build);

// Writes dir/predictors.md (creating dir) and returns its text. Throws
// std::runtime_error naming the path on I/O failure.
std::string write_predictor_report(const PredictorBuild& build, const std::filesystem::path& dir);

}  // namespace tc::profiler
