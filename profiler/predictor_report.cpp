// Formatting of the predictor report (markdown table, stderr summary).
#include "profiler/predictor_report.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "profiler/report_format.h"

namespace tc::profiler {
namespace {

std::string kib(int64_t bytes) { return format_double("%.1f KiB", static_cast<double>(bytes) / 1024.0); }

std::string count(int64_t n) {
  if (n >= 1000000) return format_double("%.2fM", static_cast<double>(n) / 1e6);
  if (n >= 1000) return format_double("%.1fk", static_cast<double>(n) / 1e3);
  return std::to_string(n);
}

std::vector<const std::vector<LayerPredictor>*> kinds(const PredictorBuild& b) {
  std::vector<const std::vector<LayerPredictor>*> out{&b.layers};
  if (!b.baseline.empty()) out.push_back(&b.baseline);
  return out;
}

// Per-kind totals over the layers.
struct Totals {
  double recall = 0, precision = 0, predicted = 0, active = 0;
  int64_t bytes = 0, ffn_bytes = 0, flops = 0, ffn_flops = 0;
  double sparse_flops = 0;  // predictor + predicted-active share of the FFN
  std::vector<int64_t> missed;
};

Totals totals(const std::vector<LayerPredictor>& layers) {
  Totals t;
  for (const auto& p : layers) {
    t.recall += p.eval.recall();
    t.precision += p.eval.precision();
    t.predicted += p.eval.predicted_fraction();
    t.active += p.eval.true_fraction();
    t.bytes += p.cost.bytes;
    t.ffn_bytes += p.cost.ffn_bytes;
    t.flops += p.cost.flops;
    t.ffn_flops += p.cost.ffn_flops;
    t.sparse_flops += static_cast<double>(p.cost.flops) + p.eval.predicted_fraction() * static_cast<double>(p.cost.ffn_flops);
    if (!p.target_reached) t.missed.push_back(p.layer);
  }
  const auto n = static_cast<double>(layers.size());
  t.recall /= n;
  t.precision /= n;
  t.predicted /= n;
  t.active /= n;
  return t;
}

std::string layer_list(const std::vector<int64_t>& layers) {
  std::string s;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(layers[i]);
  }
  return s;
}

}  // namespace

std::string predictor_report_markdown(const PredictorBuild& b) {
  const auto& o = b.options;
  std::string s = "# Activation predictors\n\n";
  s += "Kind written: **" + std::string(predictor_kind_name(o.kind)) + "**, type " +
       std::string(kernels::dtype_name(o.dtype)) + ", target recall " + format_double("%.3g", o.target_recall) +
       ", candidate ranks up to " + std::to_string(o.max_rank) + ". FFN form " +
       std::string(model::ffn_form_name(b.ffn_form)) + ", n_embd " + std::to_string(b.n_embd) + ", n_ff " +
       std::to_string(b.n_ff) + ".\n";
  s += "Recorded tokens per layer: " + std::to_string(b.n_samples) + " (train " + std::to_string(b.split.train.size()) +
       ", calibration " + std::to_string(b.split.calib.size()) + ", evaluation " + std::to_string(b.split.eval.size()) +
       "); " + format_double("%.1f", b.seconds) + " s.\n\n";
  s += "Figures on the evaluation tokens (never trained or calibrated on), with the weights as written. "
       "Rank: the smallest candidate whose recall at threshold 0 reached the target on the calibration tokens "
       "(else the largest, marked *); threshold: calibrated there so that recall >= target.\n\n";
  s += "| layer | kind | rank | threshold | recall | precision | predicted active | truly active | predictor bytes "
       "| FLOPs / token | of FFN |\n";
  s += "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (size_t l = 0; l < b.layers.size(); ++l) {
    for (const auto* kind : kinds(b)) {
      const auto& p = (*kind)[l];
      s += "| " + std::to_string(p.layer) + " | " + std::string(predictor_kind_name(p.kind)) + " | " +
           std::to_string(p.rank) + (p.target_reached ? "" : "*") + " | " + format_double("%.3g", p.threshold) + " | " +
           format_double("%.4f", p.eval.recall()) + " | " + format_double("%.4f", p.eval.precision()) + " | " +
           percent(p.eval.predicted_fraction()) + " | " + percent(p.eval.true_fraction()) + " | " + kib(p.cost.bytes) +
           " | " + count(p.cost.flops) + " | " +
           percent(static_cast<double>(p.cost.bytes) / static_cast<double>(p.cost.ffn_bytes)) + " |\n";
    }
  }
  s += "\n\"of FFN\": predictor bytes over the layer's ffn_gate + ffn_up + ffn_down bytes as stored (FLOPs: " +
       format_double("%.1f%%", 100.0 * static_cast<double>(b.layers[0].cost.flops) / static_cast<double>(b.layers[0].cost.ffn_flops)) +
       " of the dense FFN's in layer 0).\n\n";

  s += "Recall at threshold 0 on the calibration tokens, by rank tried:\n\n";
  for (const auto* kind : kinds(b)) {
    for (const auto& p : *kind) {
      s += "- layer " + std::to_string(p.layer) + ", " + std::string(predictor_kind_name(p.kind)) + ":";
      for (const auto& t : p.trials) {
        s += ' ';
        s += std::to_string(t.rank);
        s += " → ";
        s += format_double("%.4f", t.calib.recall());
        s += ';';
      }
      s.pop_back();
      s += "\n";
    }
  }
  s += "\n";
  for (const auto* kind : kinds(b)) {
    const Totals t = totals(*kind);
    const std::string name(predictor_kind_name((*kind)[0].kind));
    if (!t.missed.empty()) {
      s += "- " + name + ": the target recall was not reached at threshold 0 by rank " + std::to_string(o.max_rank) +
           " in layer(s) " + layer_list(t.missed) + "; the largest rank is used, its threshold lowered to reach the "
           "target.\n";
    }
    s += "- " + name + ": predictor + predicted-active FFN FLOPs per token are " +
         percent(t.sparse_flops / static_cast<double>(t.ffn_flops)) + " of the dense FFN's (true active fraction " +
         percent(t.active) + ").\n";
  }
  if (!b.baseline.empty() || o.kind == PredictorKind::Svd) {
    s += "- svd: fc1 = [B; -B], fc2 = [A, -A] with A B the truncated SVD of W_gate diag(ffn_norm), so the score "
         "is A B x, the gate up to rms_norm's positive scale; no training.";
    if (b.ffn_form == model::FfnForm::DReLU) {
      s += " This is a dReLU model: the SVD predicts only gate > 0, not up > 0, so its precision is low by design.";
    }
    s += "\n";
  }
  return s;
}

std::string predictor_summary(const PredictorBuild& b) {
  std::string s;
  for (const auto* kind : kinds(b)) {
    const Totals t = totals(*kind);
    const std::string name(predictor_kind_name((*kind)[0].kind));
    std::string ranks;
    for (const auto& p : *kind) {
      if (!ranks.empty()) ranks += ',';
      ranks += std::to_string(p.rank);
    }
    s += "predictors (" + name + (kind == &b.layers ? ", written" : ", baseline") + "): ranks " + ranks +
         "; held-out recall " + format_double("%.4f", t.recall) + ", precision " + format_double("%.4f", t.precision) +
         " (mean over layers); predicted active " + percent(t.predicted) + " vs truly active " + percent(t.active) +
         "; predictor " + kib(t.bytes) + " = " + percent(static_cast<double>(t.bytes) / static_cast<double>(t.ffn_bytes)) +
         " of the FFN weights\n";
    if (!t.missed.empty()) {
      s += "  target recall " + format_double("%.3g", b.options.target_recall) + " not reached at max rank " +
           std::to_string(b.options.max_rank) + " in layer(s) " + layer_list(t.missed) +
           " (max rank used, threshold lowered)\n";
    }
  }
  return s;
}

std::string write_predictor_report(const PredictorBuild& b, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const std::string md = predictor_report_markdown(b);
  const auto path = dir / "predictors.md";
  std::ofstream out(path, std::ios::binary);
  if (!(out << md) || !out.flush()) throw std::runtime_error("cannot write " + path.string());
  return md;
}

}  // namespace tc::profiler
