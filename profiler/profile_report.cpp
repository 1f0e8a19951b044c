// The per-layer summary, its markdown table, and the log-log SVG plot.
#include "profiler/profile_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "profiler/report_format.h"

namespace tc::profiler {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
    }
  }
  return out;
}

// Smallest k such that the k largest of `sorted_desc` sum to at least percent% of `total`.
int64_t cover(const std::vector<int64_t>& sorted_desc, int64_t total, int64_t pct) {
  if (total == 0) return 0;
  int64_t sum = 0;
  for (size_t k = 0; k < sorted_desc.size(); ++k) {
    sum += sorted_desc[k];
    if (sum * 100 >= pct * total) return static_cast<int64_t>(k + 1);
  }
  return static_cast<int64_t>(sorted_desc.size());
}

std::vector<int64_t> sorted_counts(const std::vector<int32_t>& counts) {
  std::vector<int64_t> s(counts.begin(), counts.end());
  std::sort(s.begin(), s.end(), std::greater<>());
  return s;
}

// Tick label for 10^e: "1", "10", "0.01", "1e-5".
std::string decade_label(int e) {
  if (e >= 0 && e <= 4) return std::to_string(static_cast<int64_t>(std::lround(std::pow(10.0, e))));
  if (e < 0 && e >= -3) return "0." + std::string(static_cast<size_t>(-e - 1), '0') + "1";
  return "1e" + std::to_string(e);
}

// Layer colours: evenly spaced hues at fixed saturation and value, as #rrggbb.
std::string layer_colour(int64_t layer, int64_t n_layer) {
  const double h = n_layer <= 1 ? 0.0 : 300.0 * static_cast<double>(layer) / static_cast<double>(n_layer - 1);
  const double s = 0.75, v = 0.8;
  const double c = v * s;
  const double x = c * (1 - std::fabs(std::fmod(h / 60.0, 2.0) - 1));
  const double m = v - c;
  double r = 0, g = 0, b = 0;
  if (h < 60) r = c, g = x;
  else if (h < 120) r = x, g = c;
  else if (h < 180) g = c, b = x;
  else if (h < 240) g = x, b = c;
  else if (h < 300) r = x, b = c;
  else r = c, b = x;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround((r + m) * 255)),
                static_cast<int>(std::lround((g + m) * 255)), static_cast<int>(std::lround((b + m) * 255)));
  return buf;
}

}  // namespace

std::vector<LayerSummary> summarize(const sparse::ActivationStats& stats) {
  std::vector<LayerSummary> out;
  const auto n_tokens = static_cast<double>(stats.n_tokens);
  const auto n_ff = static_cast<double>(stats.n_ff());
  for (int64_t l = 0; l < stats.n_layer(); ++l) {
    const auto sorted = sorted_counts(stats.fire_counts[static_cast<size_t>(l)]);
    const int64_t total = std::accumulate(sorted.begin(), sorted.end(), int64_t{0});
    LayerSummary s;
    s.layer = l;
    s.fire_rate = static_cast<double>(total) / (n_tokens * n_ff);
    s.sparsity = 1.0 - s.fire_rate;
    s.cover_80 = cover(sorted, total, 80);
    s.cover_90 = cover(sorted, total, 90);
    s.cover_99 = cover(sorted, total, 99);
    s.hottest_rate = sorted.empty() ? 0.0 : static_cast<double>(sorted.front()) / n_tokens;
    s.n_never = std::count(sorted.begin(), sorted.end(), int64_t{0});
    out.push_back(s);
  }
  return out;
}

std::string report_markdown(const sparse::ActivationStats& stats, const std::vector<LayerSummary>& layers) {
  const bool thresholds = stats.rule == sparse::FiringRule::AbsAboveThreshold;
  const int64_t n_ff = stats.n_ff();
  auto with_share = [n_ff](int64_t k) {
    return std::to_string(k) + " (" + percent(static_cast<double>(k) / static_cast<double>(n_ff)) + ")";
  };
  std::string md = "Activation profile of `" + stats.model.name + "` (" + stats.model.ffn_form + ", " +
                   std::to_string(stats.n_layer()) + " layers, n_ff " + std::to_string(n_ff) + "): " +
                   std::to_string(stats.n_tokens) + " tokens" +
                   (stats.corpus.empty() ? "" : " of " + stats.corpus) + ", chunks of " +
                   std::to_string(stats.n_ctx) + ", a neuron fires when " +
                   std::string(sparse::firing_rule_name(stats.rule)) +
                   (thresholds ? " (thresholds set so " + percent(stats.fire_fraction) +
                                     " of the first chunk's activations fire)"
                               : "") +
                   ".\n\n";
  md += "| layer | firing / token | sparsity | neurons for 80% | for 90% | for 99% | hottest neuron | never fired |";
  md += thresholds ? " threshold |\n" : "\n";
  md += "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |";
  md += thresholds ? " ---: |\n" : "\n";
  double rate_sum = 0;
  for (const auto& s : layers) {
    md += "| " + std::to_string(s.layer) + " | " + percent(s.fire_rate) + " | " + percent(s.sparsity) + " | " +
          with_share(s.cover_80) + " | " + with_share(s.cover_90) + " | " + with_share(s.cover_99) + " | " +
          percent(s.hottest_rate) + " | " + std::to_string(s.n_never) + " |";
    if (thresholds) md.append(" ").append(format_double("%.4g", stats.thresholds[static_cast<size_t>(s.layer)])).append(" |");
    md += "\n";
    rate_sum += s.fire_rate;
  }
  if (!layers.empty()) {
    const double mean = rate_sum / static_cast<double>(layers.size());
    md += "| all | " + percent(mean) + " | " + percent(1.0 - mean) + " | | | | | |" + (thresholds ? " |\n" : "\n");
  }
  return md;
}

std::string firing_svg(const sparse::ActivationStats& stats) {
  constexpr double kWidth = 760, kHeight = 500;
  constexpr double kLeft = 80, kRight = 130, kTop = 50, kBottom = 60;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  const int64_t n_ff = stats.n_ff();
  const int64_t n_layer = stats.n_layer();
  const auto n_tokens = static_cast<double>(stats.n_tokens);

  // Axis ranges in decades: ranks 1 .. 10^x_max, frequencies 10^y_min .. 1.
  const double log_n_ff = std::log10(static_cast<double>(std::max<int64_t>(n_ff, 2)));
  const int x_max = std::max(1, static_cast<int>(std::ceil(log_n_ff)));
  int32_t min_count = std::numeric_limits<int32_t>::max();
  for (const auto& layer : stats.fire_counts) {
    for (const int32_t c : layer) {
      if (c > 0) min_count = std::min(min_count, c);
    }
  }
  const double min_freq = min_count == std::numeric_limits<int32_t>::max() ? 0.1 : min_count / n_tokens;
  const int y_min = std::min(-1, static_cast<int>(std::floor(std::log10(min_freq))));
  auto px = [&](double rank) { return kLeft + plot_w * std::log10(rank) / x_max; };
  auto py = [&](double freq) { return kTop + plot_h * (std::log10(freq) / y_min); };

  std::string svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + format_double("%.0f", kWidth) + "\" height=\"" +
         format_double("%.0f", kHeight) + "\" viewBox=\"0 0 " + format_double("%.0f", kWidth) + " " + format_double("%.0f", kHeight) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + format_double("%.1f", kLeft + plot_w / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" +
         xml_escape("FFN firing frequency by neuron rank: " + stats.model.name + " (" + stats.model.ffn_form + ", " +
                    std::to_string(stats.n_tokens) + " tokens)") +
         "</text>\n";

  // Grid, ticks and labels at every decade.
  svg += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (int e = 0; e <= x_max; ++e) {
    const double x = px(std::pow(10.0, e));
    svg += "<line x1=\"" + format_double("%.1f", x) + "\" y1=\"" + format_double("%.1f", kTop) + "\" x2=\"" + format_double("%.1f", x) +
           "\" y2=\"" + format_double("%.1f", kTop + plot_h) + "\"/>\n";
  }
  for (int e = y_min; e <= 0; ++e) {
    const double y = py(std::pow(10.0, e));
    svg += "<line x1=\"" + format_double("%.1f", kLeft) + "\" y1=\"" + format_double("%.1f", y) + "\" x2=\"" +
           format_double("%.1f", kLeft + plot_w) + "\" y2=\"" + format_double("%.1f", y) + "\"/>\n";
  }
  svg += "</g>\n";
  svg += "<rect x=\"" + format_double("%.1f", kLeft) + "\" y=\"" + format_double("%.1f", kTop) + "\" width=\"" +
         format_double("%.1f", plot_w) + "\" height=\"" + format_double("%.1f", plot_h) +
         "\" fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n";
  svg += "<g text-anchor=\"middle\">\n";
  for (int e = 0; e <= x_max; ++e) {
    svg += "<text x=\"" + format_double("%.1f", px(std::pow(10.0, e))) + "\" y=\"" + format_double("%.1f", kTop + plot_h + 18) +
           "\">" + decade_label(e) + "</text>\n";
  }
  svg += "</g>\n<g text-anchor=\"end\">\n";
  for (int e = y_min; e <= 0; ++e) {
    svg += "<text x=\"" + format_double("%.1f", kLeft - 6) + "\" y=\"" + format_double("%.1f", py(std::pow(10.0, e)) + 4) + "\">" +
           decade_label(e) + "</text>\n";
  }
  svg += "</g>\n";
  svg += "<text x=\"" + format_double("%.1f", kLeft + plot_w / 2) + "\" y=\"" + format_double("%.1f", kHeight - 16) +
         "\" text-anchor=\"middle\">neuron rank (1 = most often firing), log scale</text>\n";
  svg += "<text transform=\"translate(20," + format_double("%.1f", kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">firings per token, log scale</text>\n";

  // One polyline per layer over log-spaced ranks (every rank when n_ff is small).
  std::vector<int64_t> ranks;
  for (int64_t r = 1; r <= n_ff;) {
    ranks.push_back(r);
    r = std::max(r + 1, static_cast<int64_t>(std::floor(static_cast<double>(r) * 1.01)));
  }
  if (ranks.back() != n_ff) ranks.push_back(n_ff);
  svg += "<g fill=\"none\" stroke-width=\"1.5\">\n";
  for (int64_t l = 0; l < n_layer; ++l) {
    const auto sorted = sorted_counts(stats.fire_counts[static_cast<size_t>(l)]);
    std::string points;
    for (const int64_t r : ranks) {
      const int64_t c = sorted[static_cast<size_t>(r - 1)];
      if (c == 0) break;
      if (!points.empty()) points += ' ';
      points += format_double("%.1f", px(static_cast<double>(r))) + "," +
                format_double("%.1f", py(static_cast<double>(c) / n_tokens));
    }
    svg += "<polyline stroke=\"" + layer_colour(l, n_layer) + "\" points=\"" + points + "\"><title>layer " +
           std::to_string(l) + "</title></polyline>\n";
  }
  svg += "</g>\n";

  // Legend.
  const double step = std::min(18.0, plot_h / static_cast<double>(std::max<int64_t>(n_layer, 1)));
  svg += "<g>\n";
  for (int64_t l = 0; l < n_layer; ++l) {
    const double y = kTop + 8 + step * static_cast<double>(l);
    const double x = kLeft + plot_w + 14;
    svg += "<line x1=\"" + format_double("%.1f", x) + "\" y1=\"" + format_double("%.1f", y) + "\" x2=\"" + format_double("%.1f", x + 24) +
           "\" y2=\"" + format_double("%.1f", y) + "\" stroke=\"" + layer_colour(l, n_layer) + "\" stroke-width=\"2\"/>\n";
    svg += "<text x=\"" + format_double("%.1f", x + 30) + "\" y=\"" + format_double("%.1f", y + 4) + "\">layer " +
           std::to_string(l) + "</text>\n";
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

std::string write_report(const sparse::ActivationStats& stats, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir.string() + ": " + ec.message());
  const std::string md = report_markdown(stats, summarize(stats));
  auto write = [](const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
  };
  write(dir / "report.md", md);
  write(dir / "firing.svg", firing_svg(stats));
  return md;
}

}  // namespace tc::profiler
