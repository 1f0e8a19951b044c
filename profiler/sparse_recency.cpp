// The positional head of synthetic sparse models (see sparse_recency.h).
#include "profiler/sparse_recency.h"

#include <algorithm>
#include <cmath>

namespace tc::profiler {

namespace {

double pair_theta(int64_t i, int64_t head_dim, double rope_base) {
  return std::pow(rope_base, -2.0 * static_cast<double>(i) / static_cast<double>(head_dim));
}

}  // namespace

RecencyPairs recency_pairs(int64_t head_dim, double rope_base) {
  RecencyPairs p;
  const int64_t n_pairs = head_dim / 2;
  for (int64_t i = 0; i < n_pairs; ++i) {
    if (pair_theta(i, head_dim, rope_base) <= kRecencyMaxTheta) p.pairs.push_back(i);
  }
  if (p.pairs.empty()) p.pairs.push_back(n_pairs - 1);
  // Geometric frequencies, ratio r = base^(2 / head_dim): at distance d the
  // pairs slower than 1/d still add about `amplitude` each and the faster ones
  // about nothing, so the score drops by amplitude per factor r of distance,
  // i.e. weights ~ d^-(amplitude / ln r).
  const double log_ratio = 2.0 * std::log(rope_base) / static_cast<double>(head_dim);
  p.amplitude = kRecencyTailExponent * log_ratio;
  return p;
}

std::vector<double> recency_weights(const RecencyPairs& p, int64_t head_dim, double rope_base, int64_t context) {
  std::vector<double> score(static_cast<size_t>(context + 1));
  for (int64_t d = 0; d <= context; ++d) {
    double s = 0.0;
    for (int64_t i : p.pairs) s += std::cos(pair_theta(i, head_dim, rope_base) * static_cast<double>(d));
    score[static_cast<size_t>(d)] = p.amplitude * s;
  }
  const double top = *std::max_element(score.begin(), score.end());
  double sum = 0.0;
  for (auto& s : score) {
    s = std::exp(s - top);
    sum += s;
  }
  for (auto& s : score) s /= sum;
  return score;
}

double consecutive_overlap(const std::vector<uint8_t>& active, int64_t n_tok, int64_t n, int64_t seq_len) {
  int64_t shared = 0, total = 0;
  for (int64_t t = 0; t < n_tok; ++t) {
    if (t % seq_len == 0) continue;
    const uint8_t* cur = active.data() + t * n;
    const uint8_t* prev = cur - n;
    for (int64_t i = 0; i < n; ++i) {
      if (cur[i] == 0) continue;
      ++total;
      shared += prev[i] != 0 ? 1 : 0;
    }
  }
  return total == 0 ? 0.0 : static_cast<double>(shared) / static_cast<double>(total);
}

}  // namespace tc::profiler
