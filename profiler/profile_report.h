// profile_report: what activation statistics say about sparsity, per layer:
// a markdown table (firing rate, sparsity, how many neurons cover 80/90/99%
// of the firings, the hottest neuron) and an SVG of each layer's firing
// frequency by neuron rank on log-log axes (the power law), written by hand.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/sparse/activation_stats.h"

namespace tc::profiler {

struct LayerSummary {
  int64_t layer = 0;
  double fire_rate = 0;      // mean over tokens of the fraction of neurons firing
  double sparsity = 0;       // 1 - fire_rate
  // Fewest neurons, hottest first, whose firings add up to at least 80, 90
  // and 99% of the layer's firings (0 when nothing fired).
  int64_t cover_80 = 0;
  int64_t cover_90 = 0;
  int64_t cover_99 = 0;
  double hottest_rate = 0;   // the hottest neuron's firings / n_tokens
  int64_t n_never = 0;       // neurons that never fired
};

std::vector<LayerSummary> summarize(const sparse::ActivationStats& stats);

// The header line (model, tokens, firing rule) and the table.
std::string report_markdown(const sparse::ActivationStats& stats, const std::vector<LayerSummary>& layers);

// A standalone SVG document: x = neuron rank (1 = hottest), y = firings per
// token, both log10, one polyline per layer. Neurons that never fired are
// left off (log 0).
std::string firing_svg(const sparse::ActivationStats& stats);

// Writes DIR/report.md and DIR/firing.svg (creating DIR); returns the
// markdown. Throws std::runtime_error naming the path on I/O failure.
std::string write_report(const sparse::ActivationStats& stats, const std::filesystem::path& dir);

}  // namespace tc::profiler
