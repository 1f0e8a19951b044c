// The sampler's stages in a chosen order (see sampler_chain.h). Each
// stage is llama.cpp's, as the fast path in sampler.cpp applies it:
// probabilities among the candidates left, at the temperature reached.
#include "engine/runtime/sampler_chain.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/runtime/sampler.h"
#include "kernels/check.h"

namespace tc::runtime {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct Named {
  std::string_view name;
  SamplerStage stage;
};
// The filter stages by llama.cpp's names; "penalties" and "dry" are handled apart.
constexpr Named kNames[] = {
    {"top_k", SamplerStage::TopK},      {"top_p", SamplerStage::TopP},
    {"top_n_sigma", SamplerStage::TopNSigma}, {"typ_p", SamplerStage::Typical},
    {"min_p", SamplerStage::MinP},      {"temperature", SamplerStage::Temperature},
    {"xtc", SamplerStage::Xtc},         {"nucleus", SamplerStage::TopP},
    {"temp", SamplerStage::Temperature}, {"typ", SamplerStage::Typical},
};

void add_stage(SamplerList& list, SamplerStage s) {
  if (std::find(list.stages.begin(), list.stages.end(), s) == list.stages.end()) list.stages.push_back(s);
}

// A name as llama.cpp matches it: exact, kebab-case ("top-k") or dashless ("topk").
bool same_name(std::string_view given, std::string_view name) {
  if (given == name) return true;
  std::string kebab(name), bare;
  std::replace(kebab.begin(), kebab.end(), '_', '-');
  for (char c : name) {
    if (c != '_') bare += c;
  }
  return given == kebab || given == bare;
}

bool stage_on(const SamplingParams& p, SamplerStage s) {
  switch (s) {
    case SamplerStage::TopNSigma: return p.top_n_sigma > 0.0f;
    case SamplerStage::TopK: return p.top_k > 0;
    case SamplerStage::Typical: return p.typical_p < 1.0f;
    case SamplerStage::TopP: return p.top_p < 1.0f;
    case SamplerStage::MinP: return p.min_p > 0.0f;
    case SamplerStage::Xtc: return p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f;
    case SamplerStage::Temperature: return p.temperature != 1.0f || p.dynatemp_range > 0.0f;
  }
  return false;
}

// Softmax weights exp(logit - max) of the candidates (best first) and their sum.
double weights(const std::vector<ChainCandidate>& c, std::vector<double>& w) {
  w.clear();
  double sum = 0.0;
  for (const auto& cand : c) {
    w.push_back(std::exp(static_cast<double>(cand.logit) - c.front().logit));
    sum += w.back();
  }
  return sum;
}

void keep_top_n_sigma(std::vector<ChainCandidate>& c, float n) {
  double sum = 0.0, sum2 = 0.0;
  for (const auto& cand : c) {
    sum += cand.logit;
    sum2 += static_cast<double>(cand.logit) * cand.logit;
  }
  const double mean = sum / static_cast<double>(c.size());
  const double sd = std::sqrt(std::max(0.0, sum2 / static_cast<double>(c.size()) - mean * mean));
  const double floor = c.front().logit - n * sd;
  c.erase(std::find_if(c.begin(), c.end(), [&](const ChainCandidate& x) { return x.logit < floor; }), c.end());
}

void keep_typical(std::vector<ChainCandidate>& c, float typical_p, std::vector<double>& w) {
  const double log_sum = std::log(weights(c, w));
  double entropy = 0.0;
  for (const auto& cand : c) {
    const double log_p = static_cast<double>(cand.logit) - c.front().logit - log_sum;
    entropy -= std::exp(log_p) * log_p;
  }
  std::vector<std::pair<double, size_t>> order;
  for (size_t i = 0; i < c.size(); ++i) {
    const double log_p = static_cast<double>(c[i].logit) - c.front().logit - log_sum;
    order.emplace_back(std::fabs(-log_p - entropy), i);
  }
  std::sort(order.begin(), order.end());
  size_t keep = order.size();
  double cum = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    cum += std::exp(static_cast<double>(c[order[i].second].logit) - c.front().logit - log_sum);
    if (cum > static_cast<double>(typical_p)) {
      keep = i + 1;
      break;
    }
  }
  std::vector<bool> kept(c.size(), false);
  for (size_t i = 0; i < keep; ++i) kept[order[i].second] = true;
  size_t out = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (kept[i]) c[out++] = c[i];
  }
  c.resize(out);
}

void keep_top_p(std::vector<ChainCandidate>& c, float top_p, std::vector<double>& w) {
  const double target = static_cast<double>(top_p) * weights(c, w);
  double cum = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    cum += w[i];
    if (cum >= target) {
      c.resize(i + 1);
      return;
    }
  }
}

void exclude_top_choices(std::vector<ChainCandidate>& c, float threshold, std::vector<double>& w) {
  const double cut = static_cast<double>(threshold) * weights(c, w);
  size_t n_above = 0;
  while (n_above < c.size() && w[n_above] >= cut) ++n_above;
  if (n_above < 2) return;
  c.erase(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n_above - 1));  // the least likely of them stays
}

float dynamic_temperature(const std::vector<ChainCandidate>& c, const SamplingParams& p, std::vector<double>& w) {
  if (c.size() <= 1) return p.temperature;
  const double lo = std::max(0.0f, p.temperature - p.dynatemp_range);
  const double hi = static_cast<double>(p.temperature) + p.dynatemp_range;
  const double sum = weights(c, w);
  double entropy = 0.0;
  for (double x : w) {
    const double q = x / sum;
    if (q > 0.0) entropy -= q * std::log(q);
  }
  const double normalized = entropy / std::log(static_cast<double>(c.size()));
  return static_cast<float>(lo + (hi - lo) * std::pow(normalized, static_cast<double>(p.dynatemp_exponent)));
}

}  // namespace

SamplerList sampler_list_from_names(std::span<const std::string_view> names) {
  SamplerList list;
  for (std::string_view given : names) {
    if (same_name(given, "penalties")) list.penalties = true;
    if (same_name(given, "dry")) list.dry = true;
    for (const Named& n : kNames) {
      if (same_name(given, n.name)) add_stage(list, n.stage);
    }
  }
  return list;
}

SamplerList sampler_list_from_chars(std::string_view chars) {
  SamplerList list;
  for (char c : chars) {
    switch (c) {
      case 'k': add_stage(list, SamplerStage::TopK); break;
      case 'y': add_stage(list, SamplerStage::Typical); break;
      case 'p': add_stage(list, SamplerStage::TopP); break;
      case 's': add_stage(list, SamplerStage::TopNSigma); break;
      case 'm': add_stage(list, SamplerStage::MinP); break;
      case 't': add_stage(list, SamplerStage::Temperature); break;
      case 'x': add_stage(list, SamplerStage::Xtc); break;
      case 'e': list.penalties = true; break;
      case 'd': list.dry = true; break;
      default: break;  // llama.cpp skips what it does not know
    }
  }
  return list;
}

void use_sampler_list(SamplerList list, SamplingParams& s) {
  if (!list.penalties) {
    s.repeat_penalty = 1.0f;
    s.presence_penalty = 0.0f;
    s.frequency_penalty = 0.0f;
  }
  if (!list.dry) s.dry_multiplier = 0.0f;
  if (list.stages.empty()) {
    s.top_k = 0;
    s.top_p = 1.0f;
    s.min_p = 0.0f;
    s.typical_p = 1.0f;
    s.xtc_probability = 0.0f;
    s.top_n_sigma = -1.0f;
    s.dynatemp_range = 0.0f;
    if (s.temperature > 0.0f) s.temperature = 1.0f;
  }
  s.stage_order = std::move(list.stages);
}

bool needs_general_chain(const SamplingParams& p) {
  size_t at = 0;  // where in the default order the last stage that is on was
  for (SamplerStage s : p.stage_order) {
    if (!stage_on(p, s)) continue;
    const auto pos = static_cast<size_t>(std::find(kDefaultStageOrder.begin(), kDefaultStageOrder.end(), s) -
                                         kDefaultStageOrder.begin());
    if (pos < at) return true;
    at = pos;
  }
  return false;
}

text::TokenId draw_in_order(std::span<const float> logits, const SamplingParams& p, double u, bool xtc_now,
                            std::vector<ChainCandidate>& c) {
  c.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] != -kInf) c.push_back({logits[i], static_cast<text::TokenId>(i)});
  }
  TC_CHECK(!c.empty(), "draw_in_order: no candidate");
  std::sort(c.begin(), c.end(), Better{});
  std::vector<double> w;
  for (SamplerStage s : p.stage_order) {
    if (!stage_on(p, s) || c.size() < 2) continue;
    switch (s) {
      case SamplerStage::TopNSigma: keep_top_n_sigma(c, p.top_n_sigma); break;
      case SamplerStage::TopK: c.resize(std::min(c.size(), static_cast<size_t>(p.top_k))); break;
      case SamplerStage::Typical: keep_typical(c, p.typical_p, w); break;
      case SamplerStage::TopP: keep_top_p(c, p.top_p, w); break;
      case SamplerStage::MinP: {
        const double floor = c.front().logit + std::log(static_cast<double>(p.min_p));
        c.erase(std::find_if(c.begin(), c.end(), [&](const ChainCandidate& x) { return x.logit < floor; }), c.end());
        break;
      }
      case SamplerStage::Xtc:
        if (xtc_now) exclude_top_choices(c, p.xtc_threshold, w);
        break;
      case SamplerStage::Temperature: {
        const float t = p.dynatemp_range > 0.0f ? dynamic_temperature(c, p, w) : p.temperature;
        if (t <= 0.0f) {
          c.resize(1);  // the limit: the most likely
        } else {
          for (auto& cand : c) cand.logit /= t;
        }
        break;
      }
    }
  }
  const double target = u * weights(c, w);
  double acc = 0.0;
  for (size_t i = 0; i < c.size(); ++i) {
    acc += w[i];
    if (acc > target) return c[i].id;
  }
  return c.back().id;  // rounding left target at the very top
}

}  // namespace tc::runtime
