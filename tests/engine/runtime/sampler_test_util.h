// Helpers of the Sampler tests: float64 references (softmax, ranking),
// logits from probabilities, empirical draw counts and Pearson's chi-square.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "engine/runtime/sampler.h"

namespace tc::runtime::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

inline std::vector<double> log_softmax_ref(const std::vector<float>& logits) {
  double m = -std::numeric_limits<double>::infinity();
  for (float v : logits) m = std::max(m, static_cast<double>(v));
  double z = 0.0;
  for (float v : logits) z += std::exp(static_cast<double>(v) - m);
  std::vector<double> out;
  for (float v : logits) out.push_back(static_cast<double>(v) - m - std::log(z));
  return out;
}

inline std::vector<double> softmax_ref(const std::vector<float>& logits, double temperature = 1.0) {
  std::vector<float> scaled;
  for (float v : logits) scaled.push_back(static_cast<float>(v / temperature));
  auto lp = log_softmax_ref(scaled);
  for (double& x : lp) x = std::exp(x);
  return lp;
}

inline TokenId argmax_ref(const std::vector<float>& logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Token ids by logit descending, ties to the lower id.
inline std::vector<TokenId> ranked_ids(const std::vector<float>& logits) {
  std::vector<TokenId> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<TokenId>(i);
  std::stable_sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)];
  });
  return ids;
}

// Logits whose softmax is exactly `probs` (up to rounding).
inline std::vector<float> logits_from_probs(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

// Counts of n draws from one Sampler on the same logits.
inline std::vector<int> draw_counts(Sampler& sampler, const std::vector<float>& logits, int n) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) {
    const SampleResult r = sampler.sample(logits);
    REQUIRE(r.status == SampleStatus::Ok);
    REQUIRE(r.token >= 0);
    REQUIRE(r.token < static_cast<TokenId>(logits.size()));
    ++counts[static_cast<size_t>(r.token)];
  }
  return counts;
}

inline std::set<TokenId> drawn_set(const std::vector<int>& counts) {
  std::set<TokenId> s;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) s.insert(static_cast<TokenId>(i));
  }
  return s;
}

// Pearson chi-square of observed counts against expected probabilities.
inline double chi_square(const std::vector<int>& counts, const std::vector<double>& probs) {
  double n = 0;
  for (int c : counts) n += c;
  double chi = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double e = probs[i] * n;
    if (e == 0.0) {
      REQUIRE(counts[i] == 0);
      continue;
    }
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

inline SamplingParams with_temp(float t, uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = t;
  p.seed = seed;
  return p;
}

}  // namespace tc::runtime::test
