// The sampler's stages in a chosen order (llama-server's `samplers`,
// sampler_chain.h): the default order given explicitly draws token for
// token what no order draws; other orders against float64 references of
// their kept sets (draw counts, chi-square), each one a set the default
// order would not keep; a stage left out is off.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "engine/runtime/sampler.h"
#include "tests/engine/runtime/sampler_test_util.h"

using tc::runtime::Sampler;
using tc::runtime::SamplerStage;
using tc::runtime::SamplingParams;
using tc::runtime::TokenId;
using namespace tc::runtime::test;

namespace {

// Probabilities of ids 0..4; as logits for the sampler.
const std::vector<double> kProbs = {0.5, 0.2, 0.15, 0.1, 0.05};

// p^(1/t) over `ids`, normalised: the distribution at temperature t of what they keep.
std::vector<double> at_temperature(const std::set<TokenId>& ids, double t) {
  std::vector<double> out(kProbs.size(), 0.0);
  double sum = 0.0;
  for (TokenId i : ids) sum += std::pow(kProbs[static_cast<size_t>(i)], 1.0 / t);
  for (TokenId i : ids) out[static_cast<size_t>(i)] = std::pow(kProbs[static_cast<size_t>(i)], 1.0 / t) / sum;
  return out;
}

std::vector<int> counts(SamplingParams p, std::vector<SamplerStage> order, int n = 20000) {
  p.stage_order = std::move(order);
  Sampler sampler(p, static_cast<int32_t>(kProbs.size()));
  return draw_counts(sampler, logits_from_probs(kProbs), n);
}

}  // namespace

TEST_CASE("sampler order: the default order given explicitly draws what no order draws", "[sampler]") {
  SamplingParams p = with_temp(0.8f, 17);
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.02f;
  p.typical_p = 0.95f;
  p.xtc_probability = 0.5f;
  p.xtc_threshold = 0.1f;
  p.top_n_sigma = 3.0f;
  p.dynatemp_range = 0.3f;
  SamplingParams ordered = p;
  ordered.stage_order.assign(tc::runtime::kDefaultStageOrder.begin(), tc::runtime::kDefaultStageOrder.end());
  CHECK_FALSE(tc::runtime::needs_general_chain(ordered));
  Sampler a(p, 64), b(ordered, 64);
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 2.0f);
  for (int i = 0; i < 500; ++i) {
    std::vector<float> logits(64);
    for (float& x : logits) x = noise(rng);
    REQUIRE(a.sample(logits).token == b.sample(logits).token);
  }
}

TEST_CASE("sampler order: other orders keep what their order keeps", "[sampler]") {
  SamplingParams p = with_temp(2.0f, 5);
  // Temperature first (SillyTavern's "temperature last" off): min_p 0.25
  // judges the scaled distribution, where all five pass (sqrt(0.05 / 0.5)
  // = 0.32); in the default order only 0, 1, 2 (p >= 0.125) would.
  p.min_p = 0.25f;
  CHECK(chi_square(counts(p, {SamplerStage::Temperature, SamplerStage::MinP}), at_temperature({0, 1, 2, 3, 4}, 2.0)) <
        25.0);
  CHECK(chi_square(counts(p, {SamplerStage::MinP, SamplerStage::Temperature}), at_temperature({0, 1, 2}, 2.0)) <
        25.0);
  // Top-p 0.6 after the temperature: the scaled shares 0.34, 0.21, 0.19
  // reach it with three tokens (two in the default order).
  p.min_p = 0.0f;
  p.top_p = 0.6f;
  CHECK(chi_square(counts(p, {SamplerStage::Temperature, SamplerStage::TopP}), at_temperature({0, 1, 2}, 2.0)) < 25.0);
  CHECK(chi_square(counts(p, {SamplerStage::TopP, SamplerStage::Temperature}), at_temperature({0, 1}, 2.0)) < 25.0);
  // XTC before top-k: 0, 1, 2 pass 0.12, 2 stays with 3 and 4, top-k 2
  // keeps 2 and 3; the default order (top-k first) leaves 1 alone.
  SamplingParams x = with_temp(1.0f, 6);
  x.xtc_probability = 1.0f;
  x.xtc_threshold = 0.12f;
  x.top_k = 2;
  CHECK(chi_square(counts(x, {SamplerStage::Xtc, SamplerStage::TopK}), at_temperature({2, 3}, 1.0)) < 25.0);
  CHECK(drawn_set(counts(x, {SamplerStage::TopK, SamplerStage::Xtc}, 2000)) == std::set<TokenId>{1});
}

TEST_CASE("sampler order: a stage left out is off", "[sampler]") {
  SamplingParams p = with_temp(2.0f, 8);
  p.top_k = 2;
  p.min_p = 0.3f;
  // Only the temperature: top-k and min-p are off.
  CHECK(chi_square(counts(p, {SamplerStage::Temperature}), at_temperature({0, 1, 2, 3, 4}, 2.0)) < 25.0);
  // Only top-k: the draw is at temperature 1.
  CHECK(chi_square(counts(p, {SamplerStage::TopK}), at_temperature({0, 1}, 1.0)) < 25.0);
  // Greedy stays greedy without a temperature stage.
  SamplingParams g = with_temp(0.0f);
  g.stage_order = {SamplerStage::TopK};
  g.top_k = 3;
  Sampler greedy(g, 5);
  CHECK(greedy.sample(logits_from_probs(kProbs)).token == 0);
}
