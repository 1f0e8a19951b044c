// llama.cpp's other samplers in the Sampler: XTC, typical, top-n-sigma,
// dynamic temperature and Mirostat 1 and 2, each against a float64
// reference of its kept set (draw counts, chi-square), alone and with
// top-k, top-p and min-p around it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "engine/runtime/sampler.h"
#include "tests/engine/runtime/sampler_test_util.h"

using tc::runtime::Sampler;
using tc::runtime::SamplingParams;
using tc::runtime::TokenId;
using namespace tc::runtime::test;

TEST_CASE("XTC drops the top choices above its threshold but the least likely of them", "[sampler]") {
  // Sorted: 3 (0.4), 0 (0.3), 4 (0.15), 1 (0.1), 2 (0.05).
  const std::vector<double> probs = {0.3, 0.1, 0.05, 0.4, 0.15};
  const auto logits = logits_from_probs(probs);
  auto counts = [&](float probability, float threshold, int top_k = 0, float min_p = 0.0f, uint64_t seed = 7) {
    SamplingParams p = with_temp(1.0f, seed);
    p.xtc_probability = probability;
    p.xtc_threshold = threshold;
    p.top_k = top_k;
    p.min_p = min_p;
    Sampler sampler(p, 5);
    return draw_counts(sampler, logits, 20000);
  };
  // Always on, threshold 0.12: 3, 0 and 4 pass it; 4, the least likely of
  // them, stays with 1 and 2, renormalised (float64 reference: 0.15, 0.1, 0.05 over 0.3).
  CHECK(chi_square(counts(1.0f, 0.12f), {0.0, 0.1 / 0.3, 0.05 / 0.3, 0.0, 0.15 / 0.3}) < 25.0);
  // Threshold 0.35: only 3 passes, so nothing is dropped.
  CHECK(chi_square(counts(1.0f, 0.35f), probs) < 25.0);
  // Above 0.5 XTC is off (at most one token could pass).
  CHECK(chi_square(counts(1.0f, 0.6f), probs) < 25.0);
  // Half the time: a mixture of the two distributions.
  std::vector<double> mixed(5);
  const std::vector<double> dropped = {0.0, 0.1 / 0.3, 0.05 / 0.3, 0.0, 0.15 / 0.3};
  for (size_t i = 0; i < 5; ++i) mixed[i] = 0.5 * probs[i] + 0.5 * dropped[i];
  CHECK(chi_square(counts(0.5f, 0.12f), mixed) < 25.0);
  // Among what top-k and min-p left: top_k 3 keeps 3, 0, 4, whose shares
  // (0.47, 0.35, 0.18) all pass 0.12: only 4 remains.
  CHECK(drawn_set(counts(1.0f, 0.12f, 3)) == std::set<TokenId>{4});
  // min_p 0.3 keeps 3, 0, 4 too (threshold 0.12 of p_max).
  CHECK(drawn_set(counts(1.0f, 0.12f, 0, 0.3f)) == std::set<TokenId>{4});
  // Greedy is greedy.
  SamplingParams g = with_temp(0.0f);
  g.xtc_probability = 1.0f;
  g.xtc_threshold = 0.12f;
  Sampler greedy(g, 5);
  CHECK(greedy.sample(logits).token == 3);
  // Off (probability 0) leaves the draws exactly as without it, seed for seed.
  SamplingParams off = with_temp(1.0f, 9), plain = with_temp(1.0f, 9);
  off.xtc_threshold = 0.12f;
  Sampler a(off, 5), b(plain, 5);
  CHECK(draw_counts(a, logits, 500) == draw_counts(b, logits, 500));
}

TEST_CASE("typical keeps the tokens closest to the entropy, before top-p and min-p", "[sampler]") {
  // float64 reference: entropy, |surprise - entropy| ascending (ties: the
  // more likely first), the fewest whose mass passes typical_p.
  auto typical_set = [](const std::vector<double>& probs, double typical_p) {
    double entropy = 0.0;
    for (double q : probs) entropy -= q * std::log(q);
    std::vector<std::pair<double, size_t>> order;
    for (size_t i = 0; i < probs.size(); ++i) order.emplace_back(std::fabs(-std::log(probs[i]) - entropy), i);
    std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : probs[a.second] > probs[b.second];
    });
    std::vector<double> kept(probs.size(), 0.0);
    double cum = 0.0, mass = 0.0;
    for (const auto& [score, i] : order) {
      kept[i] = probs[i];
      mass += probs[i];
      cum += probs[i];
      if (cum > typical_p) break;
    }
    for (double& q : kept) q /= mass;
    return kept;
  };
  const std::vector<double> probs = {0.3, 0.1, 0.05, 0.4, 0.15};
  const auto logits = logits_from_probs(probs);
  for (const double tp : {0.5, 0.8, 0.9}) {  // away from the cumulative sums 0.3, 0.7, 0.85, 0.95
    CAPTURE(tp);
    for (int top_k : {0, 5, 300}) {  // no top-k, a heap top-k, and one above the heap's limit
      CAPTURE(top_k);
      SamplingParams p = with_temp(1.0f, 11);
      p.typical_p = static_cast<float>(tp);
      p.top_k = top_k;
      Sampler sampler(p, 5);
      CHECK(chi_square(draw_counts(sampler, logits, 20000), typical_set(probs, tp)) < 25.0);
    }
  }
  // A top token far above the typical ones is dropped, and min-p then takes
  // its p_max among what typical kept: the five 0.12s all stay.
  const std::vector<double> peaked = {0.4, 0.12, 0.12, 0.12, 0.12, 0.12};
  SamplingParams p = with_temp(1.0f, 12);
  p.typical_p = 0.5f;
  p.min_p = 0.9f;
  Sampler sampler(p, 6);
  CHECK(drawn_set(draw_counts(sampler, logits_from_probs(peaked), 4000)) == std::set<TokenId>{1, 2, 3, 4, 5});
}

TEST_CASE("top-n-sigma keeps the logits within n sd of the largest, and dynatemp sets the temperature by entropy",
          "[sampler]") {
  const std::vector<double> probs = {0.3, 0.1, 0.05, 0.4, 0.15};
  const auto logits = logits_from_probs(probs);
  // float64 reference: the sd over the logits, the floor, the kept set renormalised.
  auto sigma_set = [&](double n) {
    double mean = 0.0, sq = 0.0;
    for (float v : logits) mean += v;
    mean /= 5.0;
    for (float v : logits) sq += (v - mean) * (v - mean);
    const double floor = *std::max_element(logits.begin(), logits.end()) - n * std::sqrt(sq / 5.0);
    std::vector<double> kept(5, 0.0);
    double mass = 0.0;
    for (size_t i = 0; i < 5; ++i) {
      if (logits[i] >= floor) mass += (kept[i] = probs[i]);
    }
    for (double& q : kept) q /= mass;
    return kept;
  };
  for (const double n : {0.5, 1.0, 2.0}) {
    for (int top_k : {0, 4, 300}) {
      CAPTURE(n, top_k);
      SamplingParams p = with_temp(1.0f, 21);
      p.top_n_sigma = static_cast<float>(n);
      p.top_k = top_k;
      Sampler sampler(p, 5);
      CHECK(chi_square(draw_counts(sampler, logits, 20000), sigma_set(n)) < 25.0);
    }
  }
  // Before top-p, whose mass is then over what top-n-sigma kept: sigma 1
  // keeps 3 and 0 (0.4 and 0.3), and top-p 0.5 of those is 3 alone (over
  // every token it would be 3 and 0).
  REQUIRE(sigma_set(1.0)[0] > 0.0);
  REQUIRE(sigma_set(1.0)[4] == 0.0);
  SamplingParams sp = with_temp(1.0f, 22);
  sp.top_n_sigma = 1.0f;
  sp.top_p = 0.5f;
  Sampler sigma_then_p(sp, 5);
  CHECK(drawn_set(draw_counts(sigma_then_p, logits, 4000)) == std::set<TokenId>{3});

  // dynatemp: temperature 1 +- 0.5 by the normalised entropy of the five.
  for (const double exponent : {1.0, 2.0}) {
    CAPTURE(exponent);
    double entropy = 0.0;
    for (double q : probs) entropy -= q * std::log(q);
    const double t = 0.5 + 1.0 * std::pow(entropy / std::log(5.0), exponent);
    SamplingParams p = with_temp(1.0f, 23);
    p.dynatemp_range = 0.5f;
    p.dynatemp_exponent = static_cast<float>(exponent);
    Sampler sampler(p, 5);
    CHECK(chi_square(draw_counts(sampler, logits, 20000), softmax_ref(logits, t)) < 25.0);
  }
}

TEST_CASE("mirostat: v2 keeps the tokens within mu, v1 the top k of its Zipf estimate, and mu learns", "[sampler]") {
  // Sorted: 3 (0.4), 0 (0.3), 4 (0.15), 1 (0.1), 2 (0.05).
  const std::vector<double> probs = {0.3, 0.1, 0.05, 0.4, 0.15};
  const auto logits = logits_from_probs(probs);
  // First draws of fresh samplers (mu = 2 tau), one per seed.
  auto first_draws = [&](int version, float tau) {
    std::vector<int> counts(5, 0);
    for (uint64_t seed = 1; seed <= 6000; ++seed) {
      SamplingParams p = with_temp(1.0f, seed);
      p.mirostat = version;
      p.mirostat_tau = tau;
      Sampler sampler(p, 5);
      ++counts[static_cast<size_t>(sampler.sample(logits).token)];
    }
    return counts;
  };
  // v2, tau 1: mu 2 keeps surprise <= 2 bits, p >= 0.25: tokens 3 and 0.
  CHECK(chi_square(first_draws(2, 1.0f), {0.3 / 0.7, 0.0, 0.0, 0.4 / 0.7, 0.0}) < 25.0);
  // v2, tau 0.5: mu 1 keeps p >= 0.5: nothing, so the most likely alone.
  CHECK(drawn_set(first_draws(2, 0.5f)) == std::set<TokenId>{3});
  // v1 (float64 reference): s from the sorted probabilities, then k.
  auto k_of = [&](double mu) {
    const std::vector<double> sorted = {0.4, 0.3, 0.15, 0.1, 0.05};
    double tb = 0.0, tt = 0.0;
    for (size_t i = 0; i + 1 < sorted.size(); ++i) {
      const double t = std::log((i + 2.0) / (i + 1.0));
      tb += t * std::log(sorted[i] / sorted[i + 1]);
      tt += t * t;
    }
    const double s_hat = tb / tt, eps = s_hat - 1.0;
    return std::clamp(std::pow(eps * std::pow(2.0, mu) / (1.0 - std::pow(5.0, -eps)), 1.0 / s_hat), 1.0, 5.0);
  };
  REQUIRE(static_cast<int>(k_of(2.0)) == 2);
  REQUIRE(static_cast<int>(k_of(1.0)) == 1);
  CHECK(chi_square(first_draws(1, 1.0f), {0.3 / 0.7, 0.0, 0.0, 0.4 / 0.7, 0.0}) < 25.0);
  CHECK(drawn_set(first_draws(1, 0.5f)) == std::set<TokenId>{3});

  // mu after a draw: mu - eta * (surprise of the drawn token among those kept - tau).
  SamplingParams p = with_temp(1.0f, 5);
  p.mirostat = 2;
  p.mirostat_tau = 1.0f;
  p.mirostat_eta = 0.25f;
  Sampler sampler(p, 5);
  CHECK(sampler.mirostat_mu() == 2.0f);
  const TokenId t = sampler.sample(logits).token;
  const double kept_p = (t == 3 ? 0.4 : 0.3) / 0.7;
  CHECK(sampler.mirostat_mu() == Approx(2.0 - 0.25 * (-std::log2(kept_p) - 1.0)).epsilon(1e-5));
  sampler.reset();
  CHECK(sampler.mirostat_mu() == 2.0f);
  // Greedy stays greedy.
  SamplingParams g = with_temp(0.0f);
  g.mirostat = 2;
  Sampler greedy(g, 5);
  CHECK(greedy.sample(logits).token == 3);
}
