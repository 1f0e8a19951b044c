// The sampling chain of sampler.h: logits -> bias -> penalties -> filters ->
// temperature -> draw, plus the temperature-1 log-probabilities it reports.
#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <utility>

#include "engine/model/prompt_image.h"
#include "engine/runtime/rng.h"
#include "kernels/check.h"

namespace tc::runtime {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kBanBias = -100.0f;  // OpenAI: -100 bans the token
// top-p sorts the candidates in growing chunks, starting here, so the usual
// case (a few dozen tokens reach top_p) costs one partition and a tiny sort.
constexpr size_t kFirstSortChunk = 64;
// Up to this k, top-k keeps a bounded heap while scanning and sorts it;
// beyond, it partitions (nth_element) and keeps the candidates in id order
// unless top-p needs them sorted.
constexpr size_t kTopKSortLimit = 256;
// top-p without top-k bands the tokens by (max - logit) in steps of
// 1/kTopPBucketsPerLogit; the last band takes everything further down.
constexpr float kTopPBucketsPerLogit = 16.0f;
constexpr double kTopPBoundSlack = 0.999;

int top_p_bucket(float d) {
  constexpr float kLast = static_cast<float>(Sampler::kTopPBuckets - 1);
  const float x = d * kTopPBucketsPerLogit;
  return x < kLast ? static_cast<int>(x) : Sampler::kTopPBuckets - 1;
}

// Within range, NaN rejected.
bool in_closed(double x, double lo, double hi) { return x >= lo && x <= hi; }

std::string fmt(double x) {
  std::string s = std::to_string(x);
  // to_string gives six decimals; trim the zeros so "2.000000" reads "2".
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string validate(const SamplingParams& p, int32_t n_vocab) {
  if (!in_closed(p.temperature, 0.0, 2.0)) return "temperature must be in [0, 2], got " + fmt(p.temperature);
  if (p.top_k < 0) return "top_k must be >= 0 (0 = off), got " + std::to_string(p.top_k);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) return "top_p must be in (0, 1], got " + fmt(p.top_p);
  if (!in_closed(p.min_p, 0.0, 1.0)) return "min_p must be in [0, 1], got " + fmt(p.min_p);
  if (!in_closed(p.xtc_probability, 0.0, 1.0)) {
    return "xtc_probability must be in [0, 1], got " + fmt(p.xtc_probability);
  }
  if (!in_closed(p.xtc_threshold, 0.0, 1.0)) return "xtc_threshold must be in [0, 1], got " + fmt(p.xtc_threshold);
  if (!std::isfinite(p.top_n_sigma)) return "top_n_sigma must be a number, got " + fmt(p.top_n_sigma);
  if (!(p.dynatemp_range >= 0.0f && std::isfinite(p.dynatemp_range))) {
    return "dynatemp_range must be >= 0 (0 = off), got " + fmt(p.dynatemp_range);
  }
  if (!(p.dynatemp_exponent >= 0.0f && std::isfinite(p.dynatemp_exponent))) {
    return "dynatemp_exponent must be >= 0, got " + fmt(p.dynatemp_exponent);
  }
  if (!(p.typical_p > 0.0f && p.typical_p <= 1.0f)) return "typical_p must be in (0, 1], got " + fmt(p.typical_p);
  if (p.mirostat < 0 || p.mirostat > 2) return "mirostat must be 0, 1 or 2, got " + std::to_string(p.mirostat);
  if (!(p.mirostat_tau >= 0.0f && std::isfinite(p.mirostat_tau))) {
    return "mirostat_tau must be >= 0, got " + fmt(p.mirostat_tau);
  }
  if (!(p.mirostat_eta >= 0.0f && std::isfinite(p.mirostat_eta))) {
    return "mirostat_eta must be >= 0, got " + fmt(p.mirostat_eta);
  }
  if (!(p.dry_multiplier >= 0.0f && std::isfinite(p.dry_multiplier))) {
    return "dry_multiplier must be >= 0 (0 = off), got " + fmt(p.dry_multiplier);
  }
  if (!(p.dry_base >= 1.0f && std::isfinite(p.dry_base))) return "dry_base must be >= 1, got " + fmt(p.dry_base);
  if (p.dry_allowed_length < 0) return "dry_allowed_length must be >= 0, got " + std::to_string(p.dry_allowed_length);
  if (p.dry_penalty_last_n < -1) {
    return "dry_penalty_last_n must be >= -1 (-1 = the whole history), got " + std::to_string(p.dry_penalty_last_n);
  }
  if (p.dry_sequence_breakers.size() > kMaxDryBreakers) {
    return "dry_sequence_breakers has " + std::to_string(p.dry_sequence_breakers.size()) + " entries; at most " +
           std::to_string(kMaxDryBreakers);
  }
  if (!(p.repeat_penalty > 0.0f && std::isfinite(p.repeat_penalty))) {
    return "repeat_penalty must be > 0 (1 = off), got " + fmt(p.repeat_penalty);
  }
  if (p.repeat_last_n < -1) {
    return "repeat_last_n must be >= -1 (0 = off, -1 = whole history), got " + std::to_string(p.repeat_last_n);
  }
  if (!in_closed(p.presence_penalty, -2.0, 2.0)) {
    return "presence_penalty must be in [-2, 2], got " + fmt(p.presence_penalty);
  }
  if (!in_closed(p.frequency_penalty, -2.0, 2.0)) {
    return "frequency_penalty must be in [-2, 2], got " + fmt(p.frequency_penalty);
  }
  if (p.n_probs < 0 || p.n_probs > kMaxProbs) {
    return "n_probs must be in [0, " + std::to_string(kMaxProbs) + "], got " + std::to_string(p.n_probs);
  }
  for (const auto& [token, bias] : p.logit_bias) {
    if (token < 0 || (n_vocab > 0 && token >= n_vocab)) {
      return "logit_bias token " + std::to_string(token) + " is out of range [0, " +
             (n_vocab > 0 ? std::to_string(n_vocab) : std::string("n_vocab")) + ")";
    }
    if (!in_closed(bias, -100.0, 100.0)) {
      return "logit_bias value for token " + std::to_string(token) + " must be in [-100, 100], got " + fmt(bias);
    }
  }
  // Every token banned: no token could ever be sampled. Caught here, so that
  // the request is a 400 before its answer starts, not an error mid-answer.
  if (n_vocab > 0 && static_cast<int64_t>(p.logit_bias.size()) >= n_vocab) {
    int64_t n_banned = 0;
    for (const auto& [token, bias] : p.logit_bias) n_banned += bias <= kBanBias ? 1 : 0;
    if (n_banned >= n_vocab) {
      return "logit_bias bans every token of the vocabulary (" + std::to_string(n_vocab) + " tokens at " +
             fmt(kBanBias) + "): nothing could be generated";
    }
  }
  return {};
}

Sampler::Sampler(SamplingParams params, int32_t n_vocab) : params_(std::move(params)), n_vocab_(n_vocab) {
  TC_CHECK(n_vocab_ > 0, "Sampler needs n_vocab > 0");
  const std::string error = validate(params_, n_vocab_);
  TC_CHECK(error.empty(), error.c_str());
  if (!params_.stage_order.empty()) {
    // A stage the order leaves out is off.
    const auto listed = [&](SamplerStage s) {
      return std::find(params_.stage_order.begin(), params_.stage_order.end(), s) != params_.stage_order.end();
    };
    if (!listed(SamplerStage::TopNSigma)) params_.top_n_sigma = -1.0f;
    if (!listed(SamplerStage::TopK)) params_.top_k = 0;
    if (!listed(SamplerStage::Typical)) params_.typical_p = 1.0f;
    if (!listed(SamplerStage::TopP)) params_.top_p = 1.0f;
    if (!listed(SamplerStage::MinP)) params_.min_p = 0.0f;
    if (!listed(SamplerStage::Xtc)) params_.xtc_probability = 0.0f;
    if (!listed(SamplerStage::Temperature) && params_.temperature > 0.0f) {
      params_.temperature = 1.0f;
      params_.dynatemp_range = 0.0f;
    }
    general_chain_ = needs_general_chain(params_);
  }
  bias_.assign(params_.logit_bias.begin(), params_.logit_bias.end());
  work_.resize(static_cast<size_t>(n_vocab_));
  candidates_.reserve(static_cast<size_t>(n_vocab_));
  if (params_.repeat_penalty != 1.0f && params_.repeat_last_n != 0) {
    window_stamp_.assign(static_cast<size_t>(n_vocab_), 0);
    if (params_.repeat_last_n > 0) window_.reserve(static_cast<size_t>(params_.repeat_last_n));
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    gen_count_.assign(static_cast<size_t>(n_vocab_), 0);
  }
  reset();
}

void Sampler::reset() {
  mirostat_mu_ = 2.0f * params_.mirostat_tau;
  dry_history_.clear();
  window_.clear();
  window_head_ = 0;
  for (TokenId t : gen_distinct_) gen_count_[static_cast<size_t>(t)] = 0;
  gen_distinct_.clear();
  uint64_t s = params_.seed;
  for (auto& word : rng_) word = splitmix64(s);
  if (constraint_) constraint_->reset();
}

uint64_t Sampler::next_u64() { return xoshiro256ss_next(rng_); }

void Sampler::push_window(TokenId token) {
  if (window_stamp_.empty()) return;  // repeat penalty off
  const int32_t n = params_.repeat_last_n;
  if (n < 0 || window_.size() < static_cast<size_t>(n)) {
    window_.push_back(token);
  } else {
    window_[window_head_] = token;
    window_head_ = (window_head_ + 1) % window_.size();
  }
}

void Sampler::push_dry(TokenId token) {
  if (params_.dry_multiplier == 0.0f || params_.dry_penalty_last_n == 0) return;
  dry_history_.push_back(token);
  // Only the last dry_penalty_last_n count: drop the rest now and then.
  const auto n = static_cast<size_t>(params_.dry_penalty_last_n);
  if (params_.dry_penalty_last_n > 0 && dry_history_.size() >= 2 * n + 64) {
    dry_history_.erase(dry_history_.begin(), dry_history_.end() - static_cast<ptrdiff_t>(n));
  }
}

void Sampler::accept(TokenId token) {
  TC_CHECK(token >= 0 && token < n_vocab_, "accept: token id out of range");
  push_window(token);
  push_dry(token);
  if (!gen_count_.empty()) {
    if (gen_count_[static_cast<size_t>(token)]++ == 0) gen_distinct_.push_back(token);
  }
  if (constraint_) constraint_->accept(token);
}

void Sampler::constrain(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form) {
  TC_CHECK(table != nullptr && static_cast<int32_t>(table->bytes.size()) == n_vocab_,
           "constrain: the token table is not this vocabulary's");
  constraint_.emplace(std::move(table), std::move(form));
}

void Sampler::accept_prompt(std::span<const TokenId> tokens) {
  for (TokenId t : tokens) {
    if (model::is_image_token(t)) continue;  // an image's placeholder: no text to penalise
    TC_CHECK(t >= 0 && t < n_vocab_, "accept_prompt: token id out of range");
    push_window(t);
    push_dry(t);
  }
}

void Sampler::apply_penalties() {
  if (!window_.empty()) {
    if (++stamp_ == 0) {  // wrapped: old marks could collide with the new stamp
      std::fill(window_stamp_.begin(), window_stamp_.end(), 0u);
      stamp_ = 1;
    }
    const float penalty = params_.repeat_penalty;
    for (TokenId t : window_) {
      auto& mark = window_stamp_[static_cast<size_t>(t)];
      if (mark == stamp_) continue;  // each distinct token once
      mark = stamp_;
      float& v = work_[static_cast<size_t>(t)];
      v = v > 0.0f ? v / penalty : v * penalty;
    }
  }
  for (TokenId t : gen_distinct_) {
    const auto count = static_cast<float>(gen_count_[static_cast<size_t>(t)]);
    work_[static_cast<size_t>(t)] -= params_.presence_penalty + params_.frequency_penalty * count;
  }
  if (!dry_history_.empty()) {
    std::span<const TokenId> recent(dry_history_);
    if (params_.dry_penalty_last_n > 0 && recent.size() > static_cast<size_t>(params_.dry_penalty_last_n)) {
      recent = recent.last(static_cast<size_t>(params_.dry_penalty_last_n));
    }
    apply_dry_penalty(recent, {params_.dry_multiplier, params_.dry_base, params_.dry_allowed_length},
                      dry_breakers_.get(), work_, dry_scratch_);
  }
}

void Sampler::prepare_logits(std::span<const float> logits) {
  TC_CHECK(logits.size() == static_cast<size_t>(n_vocab_), "sample: logits size != n_vocab");
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    work_[i] = std::isnan(x) ? -kInf : x;
  }
  // A ban is an assignment, not an addition, so a +inf logit cannot turn
  // into NaN.
  for (const auto& [t, bias] : bias_) {
    float& v = work_[static_cast<size_t>(t)];
    v = bias <= kBanBias ? -kInf : v + bias;
  }
  apply_penalties();
  if (constraint_) constraint_->mask(work_);
  float m = -kInf;
  for (float v : work_) m = std::max(m, v);
  if (m == kInf) {
    for (float& v : work_) v = v == kInf ? 0.0f : -kInf;
    m = 0.0f;
  }
  max_logit_ = m;
}

SampleResult Sampler::sample(std::span<const float> logits) {
  SampleResult result;
  prepare_logits(logits);
  const float m = max_logit_;
  if (m == -kInf) {
    result.status = SampleStatus::NoCandidates;
    result.token = -1;
    result.logprob = -kInf;
    return result;
  }

  // Normaliser of the reported (temperature-1) distribution; >= 1 because
  // the max contributes exp(0).
  double z = 0.0;
  for (float v : work_) z += std::exp(v - m);
  const double log_z = std::log(z);

  if (params_.temperature == 0.0f) {
    result.token = static_cast<TokenId>(std::find(work_.begin(), work_.end(), m) - work_.begin());
  } else {
    result.token = draw_token(z);
  }
  result.logprob = static_cast<float>(static_cast<double>(work_[static_cast<size_t>(result.token)]) - m - log_z);
  if (params_.n_probs > 0) fill_top(result, log_z);
  return result;
}

TokenId Sampler::draw_token(double z) {
  const float m = max_logit_;
  auto& c = candidates_;
  c.clear();
  const size_t k = static_cast<size_t>(params_.top_k);
  const bool top_p_on = params_.top_p < 1.0f;
  const bool min_p_on = params_.min_p > 0.0f;
  const bool xtc_on = params_.xtc_probability > 0.0f && params_.xtc_threshold <= 0.5f;
  const bool typical_on = params_.typical_p < 1.0f;
  const bool dynatemp_on = params_.dynatemp_range > 0.0f;
  // top-n-sigma's floor: logits below it are out (-inf when off).
  const float sigma_floor = top_n_sigma_floor();
  const bool sigma_on = sigma_floor != -kInf;
  const double log_min_p = min_p_on ? std::log(static_cast<double>(params_.min_p)) : 0.0;
  float m_min_p = m;  // p_max of min-p: the most likely token still in
  auto passes_min_p = [&](float v) { return static_cast<double>(v) - m_min_p >= log_min_p; };
  const float temperature = params_.temperature;
  // 53 random bits -> a double in [0, 1); one per call, whatever is kept.
  const double u = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
  if (params_.mirostat != 0) return draw_mirostat(u);
  // XTC's chance: a second draw, only when it is on.
  const bool xtc_now = xtc_on && static_cast<double>(next_u64() >> 11) * 0x1.0p-53 < params_.xtc_probability;
  if (general_chain_) return draw_in_order(work_, params_, u, xtc_now, chain_);

  if (k == 0 && !top_p_on && !min_p_on && !xtc_now && !typical_on && !sigma_on && !dynatemp_on) {
    // Nothing to filter: draw straight from the logits in id order. At
    // temperature 1 the weights are exactly z's terms.
    double sum = z;
    if (temperature != 1.0f) {
      sum = 0.0;
      for (float v : work_) sum += std::exp((v - m) / temperature);
    }
    const double target = u * sum;
    double acc = 0.0;
    TokenId last = -1;
    for (size_t i = 0; i < work_.size(); ++i) {
      const float w = std::exp((work_[i] - m) / temperature);
      if (w == 0.0f) continue;
      acc += w;
      last = static_cast<TokenId>(i);
      if (acc > target) return last;
    }
    return last;  // rounding left target at the very top
  }

  // The draw scans `c` in order, so that order must not depend on the
  // standard library: either token-id order (as collected) or sorted by
  // Better.
  bool sorted = false;
  double total = z;  // sum of exp(logit - m) over what top-k kept, for top-p
  auto sum_candidates = [&] {
    double sum = 0.0;
    for (const auto& cand : c) sum += std::exp(cand.logit - m);
    return sum;
  };
  // min-p keeps a top-by-logit prefix, as top-p does, so without top-k it can
  // filter while collecting: the top-p prefix of what survives is the same
  // one, because top-p normalises by z over all tokens either way. With
  // top-k, top-p's normaliser is the top-k set, so min-p waits its turn.
  const bool min_p_early = min_p_on && k == 0 && !typical_on;

  if (k > 0 && k <= kTopKSortLimit) {
    // Small k: one pass with a bounded heap whose front is the worst kept.
    const Better better;
    for (size_t i = 0; i < work_.size(); ++i) {
      const Candidate cand{work_[i], static_cast<TokenId>(i)};
      if (cand.logit == -kInf || cand.logit < sigma_floor) continue;
      if (c.size() < k) {
        c.push_back(cand);
        std::push_heap(c.begin(), c.end(), better);
      } else if (better(cand, c.front())) {
        std::pop_heap(c.begin(), c.end(), better);
        c.back() = cand;
        std::push_heap(c.begin(), c.end(), better);
      }
    }
    std::sort_heap(c.begin(), c.end(), better);  // best first
    sorted = true;
    if (top_p_on) total = sum_candidates();
  } else if (k > kTopKSortLimit) {
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] != -kInf && work_[i] >= sigma_floor) c.push_back({work_[i], static_cast<TokenId>(i)});
    }
    if (k < c.size()) {
      std::nth_element(c.begin(), c.begin() + static_cast<ptrdiff_t>(k - 1), c.end(), Better{});
      const Candidate pivot = c[k - 1];
      if (top_p_on) {
        c.resize(k);  // top-p sorts what it needs
        total = sum_candidates();
      } else {
        // Nothing else needs an order: collect again in id order, keeping
        // what ranks at or above the k-th token.
        c.clear();
        for (size_t i = 0; i < work_.size(); ++i) {
          const Candidate cand{work_[i], static_cast<TokenId>(i)};
          if (cand.logit != -kInf && cand.logit >= sigma_floor && !Better{}(pivot, cand)) c.push_back(cand);
        }
      }
    }
  } else {
    // No top-k. With top-p, a histogram of (max - logit) bounds from below
    // the mass of each logit band, which says how far down the top-p prefix
    // can reach; only tokens above that line are collected (and sorted).
    int max_bucket = Sampler::kTopPBuckets - 1;
    if (top_p_on && !typical_on && !sigma_on) {  // else top-p's mass is over what those keep
      hist_.fill(0);
      for (float v : work_) {
        if (v != -kInf) ++hist_[static_cast<size_t>(top_p_bucket(m - v))];
      }
      const double target = static_cast<double>(params_.top_p) * z;
      double mass_lower_bound = 0.0;
      for (int b = 0; b < Sampler::kTopPBuckets - 1; ++b) {
        // exp(-(b + 1) / 16) bounds each token of band b from below; the
        // slack absorbs float rounding at the band edges.
        mass_lower_bound += kTopPBoundSlack * hist_[static_cast<size_t>(b)] *
                            std::exp(-static_cast<double>(b + 1) / kTopPBucketsPerLogit);
        if (mass_lower_bound >= target) {
          max_bucket = b;
          break;
        }
      }
    }
    for (size_t i = 0; i < work_.size(); ++i) {
      const float v = work_[i];
      if (v == -kInf || v < sigma_floor || (min_p_early && !passes_min_p(v)) || top_p_bucket(m - v) > max_bucket) {
        continue;
      }
      c.push_back({v, static_cast<TokenId>(i)});
    }
  }
  if (sigma_on && top_p_on) total = sum_candidates();  // top-p's mass: over what top-n-sigma kept

  // min-p's p_max: the most likely token left (typical may drop the top).
  float m_kept = m;
  if (typical_on) {
    keep_typical();
    sorted = true;
    m_kept = c.front().logit;
    total = sum_candidates();
  }

  if (top_p_on) {
    // Smallest prefix (in Better order) whose probability reaches top_p;
    // sorted in doubling chunks, only as far as the prefix reaches.
    const double target = static_cast<double>(params_.top_p) * total;
    const size_t n = c.size();
    size_t n_sorted = sorted ? n : 0;
    size_t keep = n;
    double cum = 0.0;
    for (size_t i = 0; i < n; ++i) {
      if (i == n_sorted) {
        const size_t next = std::min(n, std::max(n_sorted * 2, kFirstSortChunk));
        if (next < n) std::nth_element(c.begin() + static_cast<ptrdiff_t>(n_sorted),
                                       c.begin() + static_cast<ptrdiff_t>(next), c.end(), Better{});
        std::sort(c.begin() + static_cast<ptrdiff_t>(n_sorted), c.begin() + static_cast<ptrdiff_t>(next), Better{});
        n_sorted = next;
      }
      cum += std::exp(c[i].logit - m);
      if (cum >= target) {
        keep = i + 1;
        break;
      }
    }
    c.resize(keep);  // without a break every chunk got sorted: still canonical
  }

  if (min_p_on && !min_p_early) {
    m_min_p = m_kept;
    // The max (always kept) gives p_max, and p / p_max does not change when
    // the kept set is renormalised; stable so the order stays canonical.
    c.erase(std::stable_partition(c.begin(), c.end(), [&](const Candidate& cand) { return passes_min_p(cand.logit); }),
            c.end());
  }

  if (xtc_now) exclude_top_choices();

  // Temperature (dynamic: from the kept candidates' entropy) and softmax
  // weights, then the draw.
  const float t = dynatemp_on ? dynamic_temperature() : temperature;
  if (t <= 0.0f) return std::min_element(c.begin(), c.end(), Better{})->id;  // the limit: the most likely
  double sum = 0.0;
  for (auto& cand : c) {
    cand.logit = std::exp((cand.logit - m) / t);
    sum += cand.logit;
  }
  const double target = u * sum;
  double acc = 0.0;
  for (const auto& cand : c) {
    acc += cand.logit;
    if (acc > target) return cand.id;
  }
  // Rounding left target at the very top: the last token with weight.
  for (auto it = c.rbegin(); it != c.rend(); ++it) {
    if (it->logit > 0.0f) return it->id;
  }
  TC_CHECK(false, "sampler: no candidate with weight (the max always has weight 1)");
  return -1;
}

void Sampler::exclude_top_choices() {
  auto& c = candidates_;
  if (c.size() < 2) return;
  // Probabilities among the candidates at temperature 1 (llama.cpp's chain
  // has XTC before the temperature). One pass each, no sort, so the
  // candidates keep their (canonical) order.
  float m = -kInf;
  for (const auto& cand : c) m = std::max(m, cand.logit);
  double sum = 0.0;
  for (const auto& cand : c) sum += std::exp(static_cast<double>(cand.logit) - m);
  const double threshold = static_cast<double>(params_.xtc_threshold) * sum;
  const auto above = [&](const Candidate& cand) { return std::exp(static_cast<double>(cand.logit) - m) >= threshold; };
  // The least likely candidate at or above the threshold stays.
  const Candidate* stays = nullptr;
  size_t n_above = 0;
  for (const auto& cand : c) {
    if (!above(cand)) continue;
    ++n_above;
    if (stays == nullptr || Better{}(*stays, cand)) stays = &cand;
  }
  if (n_above < 2) return;
  const TokenId stays_id = stays->id;
  c.erase(std::remove_if(c.begin(), c.end(), [&](const Candidate& cand) { return above(cand) && cand.id != stays_id; }),
          c.end());
}

float Sampler::top_n_sigma_floor() const {
  if (params_.top_n_sigma <= 0.0f) return -kInf;
  double sum = 0.0, sum2 = 0.0;
  size_t n = 0;
  for (float v : work_) {
    if (v == -kInf) continue;
    sum += v;
    sum2 += static_cast<double>(v) * v;
    ++n;
  }
  if (n == 0) return -kInf;
  const double mean = sum / static_cast<double>(n);
  const double sd = std::sqrt(std::max(0.0, sum2 / static_cast<double>(n) - mean * mean));
  return static_cast<float>(static_cast<double>(max_logit_) - params_.top_n_sigma * sd);
}

float Sampler::dynamic_temperature() const {
  const auto& c = candidates_;
  const float base = params_.temperature;
  if (c.size() <= 1) return base;
  const double lo = std::max(0.0f, base - params_.dynatemp_range);
  const double hi = static_cast<double>(base) + params_.dynatemp_range;
  float m = -kInf;
  for (const auto& cand : c) m = std::max(m, cand.logit);
  double sum = 0.0;
  for (const auto& cand : c) sum += std::exp(static_cast<double>(cand.logit) - m);
  double entropy = 0.0;
  for (const auto& cand : c) {
    const double p = std::exp(static_cast<double>(cand.logit) - m) / sum;
    if (p > 0.0) entropy -= p * std::log(p);
  }
  const double normalized = entropy / std::log(static_cast<double>(c.size()));
  return static_cast<float>(lo + (hi - lo) * std::pow(normalized, static_cast<double>(params_.dynatemp_exponent)));
}

TokenId Sampler::draw_mirostat(double u) {
  const double m = max_logit_;
  const double t = params_.temperature;
  auto& c = candidates_;
  c.clear();
  // Surprise at the request's temperature: -log2 p = log2 z - (v - m) / (t ln 2).
  double z = 0.0;  // over the vocabulary, at temperature t
  for (float v : work_) z += std::exp((static_cast<double>(v) - m) / t);
  if (params_.mirostat == 2) {
    // v2: the tokens whose surprise is at most mu (at least the most likely
    // one): as a logit, v >= m + t ln2 (log2 z - mu).
    const double v_min = m + t * std::numbers::ln2 * (std::log2(z) - static_cast<double>(mirostat_mu_));
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] != -kInf && work_[i] >= v_min) c.push_back({work_[i], static_cast<TokenId>(i)});
    }
    if (c.empty()) {
      const auto best = std::max_element(work_.begin(), work_.end());  // the first of equal maxima: lowest id
      c.push_back({*best, static_cast<TokenId>(best - work_.begin())});
    }
  } else {
    // v1: a Zipf exponent estimated from the 100 most likely tokens gives
    // the k that makes the expected surprise mu; the top k are kept.
    for (size_t i = 0; i < work_.size(); ++i) {
      if (work_[i] != -kInf) c.push_back({work_[i], static_cast<TokenId>(i)});
    }
    const size_t top = std::min<size_t>(c.size(), 100);
    std::partial_sort(c.begin(), c.begin() + static_cast<ptrdiff_t>(top), c.end(), Better{});
    double sum_tb = 0.0, sum_tt = 0.0;
    for (size_t i = 0; i + 1 < top; ++i) {
      const double ti = std::log((static_cast<double>(i) + 2.0) / (static_cast<double>(i) + 1.0));
      const double bi = (static_cast<double>(c[i].logit) - c[i + 1].logit) / t;  // log(p_i / p_i+1)
      sum_tb += ti * bi;
      sum_tt += ti * ti;
    }
    size_t k = 1;
    if (sum_tt > 0.0) {
      const double s_hat = sum_tb / sum_tt;
      const double eps = s_hat - 1.0;
      const double kk = std::pow(eps * std::pow(2.0, static_cast<double>(mirostat_mu_)) /
                                     (1.0 - std::pow(static_cast<double>(n_vocab_), -eps)),
                                 1.0 / s_hat);
      if (std::isnan(kk)) k = 1;
      else k = static_cast<size_t>(std::clamp(kk, 1.0, static_cast<double>(c.size())));
    }
    if (k > top) std::partial_sort(c.begin(), c.begin() + static_cast<ptrdiff_t>(k), c.end(), Better{});
    c.resize(k);  // sorted (Better): a canonical order for the draw
  }
  // The draw at the request's temperature over what is kept; mu learns from
  // the drawn token's surprise among them.
  double sum = 0.0;
  for (auto& cand : c) {
    cand.logit = static_cast<float>(std::exp((static_cast<double>(cand.logit) - m) / t));
    sum += cand.logit;
  }
  const double target = u * sum;
  double acc = 0.0;
  const Candidate* drawn = nullptr;
  for (const auto& cand : c) {
    acc += cand.logit;
    if (acc > target && cand.logit > 0.0f) {
      drawn = &cand;
      break;
    }
  }
  // Rounding left target at the very top: the last token with weight (the
  // most likely one always has weight 1).
  for (auto it = c.rbegin(); drawn == nullptr && it != c.rend(); ++it) {
    if (it->logit > 0.0f) drawn = &*it;
  }
  TC_CHECK(drawn != nullptr, "mirostat: no candidate with weight");
  const double p = static_cast<double>(drawn->logit) / sum;
  mirostat_mu_ -= params_.mirostat_eta * static_cast<float>(-std::log2(p) - params_.mirostat_tau);
  return drawn->id;
}

void Sampler::keep_typical() {
  auto& c = candidates_;
  std::sort(c.begin(), c.end(), Better{});
  if (c.size() < 2) return;
  // Probabilities among the candidates at temperature 1, their entropy,
  // and each one's distance from it: |surprise - entropy| (nats).
  const double m = c.front().logit;
  double sum = 0.0;
  for (const auto& cand : c) sum += std::exp(static_cast<double>(cand.logit) - m);
  const double log_sum = std::log(sum);
  double entropy = 0.0;
  for (const auto& cand : c) {
    const double log_p = static_cast<double>(cand.logit) - m - log_sum;
    entropy -= std::exp(log_p) * log_p;
  }
  std::vector<std::pair<double, size_t>>& order = typical_order_;
  order.clear();
  for (size_t i = 0; i < c.size(); ++i) {
    const double log_p = static_cast<double>(c[i].logit) - m - log_sum;
    order.emplace_back(std::fabs(-log_p - entropy), i);
  }
  std::sort(order.begin(), order.end());  // ties: the better candidate first (lower index)
  // The fewest, closest to the entropy first, whose probability passes typical_p.
  size_t keep = order.size();
  double cum = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    cum += std::exp(static_cast<double>(c[order[i].second].logit) - m - log_sum);
    if (cum > static_cast<double>(params_.typical_p)) {
      keep = i + 1;
      break;
    }
  }
  std::vector<bool>& kept = typical_kept_;
  kept.assign(c.size(), false);
  for (size_t i = 0; i < keep; ++i) kept[order[i].second] = true;
  size_t out = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (kept[i]) c[out++] = c[i];  // stays sorted (Better)
  }
  c.resize(out);
}

void Sampler::fill_top(SampleResult& result, double log_z) const {
  // One pass with a small sorted array: most tokens fail the first compare.
  const int32_t n_want = params_.n_probs;
  auto& top = result.top;
  int32_t n = 0;
  for (size_t i = 0; i < work_.size(); ++i) {
    const float v = work_[i];
    if (v == -kInf) continue;
    if (n == n_want && !(v > top[static_cast<size_t>(n - 1)].logprob)) continue;  // ties: lower id stays
    int32_t j = n < n_want ? n++ : n - 1;
    while (j > 0 && top[static_cast<size_t>(j - 1)].logprob < v) {
      top[static_cast<size_t>(j)] = top[static_cast<size_t>(j - 1)];
      --j;
    }
    top[static_cast<size_t>(j)] = {static_cast<TokenId>(i), v};  // logit for now
  }
  for (int32_t j = 0; j < n; ++j) {
    auto& entry = top[static_cast<size_t>(j)];
    entry.logprob = static_cast<float>(static_cast<double>(entry.logprob) - max_logit_ - log_z);
  }
  result.n_top = n;
}

}  // namespace tc::runtime
