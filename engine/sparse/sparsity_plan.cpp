// plan_sparsity: the --sparsity setting resolved against a loaded model.
#include "engine/sparse/sparsity_plan.h"

#include <cstdio>
#include <stdexcept>

namespace tc::sparse {
namespace {

bool can_run_sparse_ffn(const model::LoadedModel& m) {
  return model::is_relu_family(m.spec.ffn_form) && !m.predictors.empty();
}

}  // namespace

SparsityPlan plan_sparsity(const model::LoadedModel& model, const config::SparsitySetting& setting,
                           int64_t sparse_max_tokens, bool cpu_backend) {
  SparsityPlan plan;
  plan.forward.sparse_max_tokens = sparse_max_tokens;
  const bool sparse_ffn = setting.mode == config::SparsityMode::Relu ||
                          (setting.mode == config::SparsityMode::Auto && cpu_backend && can_run_sparse_ffn(model));
  if (sparse_ffn) {
    // LlamaModel's constructor explains what is missing when this cannot run.
    plan.forward.ffn_mode = model::FfnMode::Sparse;
    plan.summary = "sparse FFN (predictors: " + model.predictors.source + "; generated tokens" +
                   (sparse_max_tokens > 0 ? " and prompt chunks of up to " + std::to_string(sparse_max_tokens) + " tokens"
                                          : std::string()) +
                   ")";
    if (model.predictors.empty()) plan.summary = "sparse FFN (no predictors)";
    return plan;
  }
  if (setting.mode == config::SparsityMode::Teal) {
    if (!model.stats_file || !has_teal_calibration(*model.stats_file)) {
      throw std::invalid_argument(
          "--sparsity " + config::sparsity_setting_string(setting) +
          " needs a stats file with TEAL thresholds: run `thermocline profile -m MODEL --corpus TEXT -o STATS "
          "--teal` and pass --stats STATS");
    }
    plan.teal = std::make_unique<TealSparsifier>(
        thresholds_for(read_teal_calibration(*model.stats_file), setting.teal_target));
    char target[32];
    std::snprintf(target, sizeof target, "%.2f", static_cast<double>(setting.teal_target));
    plan.summary = std::string("TEAL at target sparsity ") + target + " (thresholds: " +
                   model.stats_file->path() + ")";
    return plan;
  }
  const bool relu_auto = setting.mode == config::SparsityMode::Auto && model::is_relu_family(model.spec.ffn_form);
  plan.summary = !relu_auto ? "dense"
                 : !cpu_backend
                     ? "dense (the sparse FFN runs on the CPU backend only, or on a GPU with --placement)"
                     : "dense (the model has no predictors; see thermocline profile --train-predictors)";
  return plan;
}

}  // namespace tc::sparse
