// The mixture-of-experts FFN: routing, then each chosen expert over its
// gathered rows, then each token's weighted sum.
#include "engine/model/moe_ffn_block.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <span>
#include <stdexcept>

namespace tc::model {
namespace {

const float* f32(const kernels::Tensor& t) { return static_cast<const float*>(t.data); }

// out = the sum of a token's k weighted expert rows, most probable first
// (slots: f32 [k, n_embd]): the one order both of run()'s paths use, so
// the same bits.
void sum_slots(const float* slots, int64_t k, int64_t n_embd, float* out) {
  std::memcpy(out, slots, static_cast<size_t>(n_embd) * sizeof(float));
  for (int64_t s = 1; s < k; ++s) {
    const float* src = slots + s * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) out[i] += src[i];
  }
}

// gpt-oss's routing of one token: the k largest logits (ties: the lower
// index), weighted by a softmax over those k alone.
void route_by_chosen_logits(const float* l, int64_t k, std::span<int32_t> order, int32_t* experts, float* weights) {
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return l[a] > l[b] || (l[a] == l[b] && a < b);
  });
  const float max = l[order[0]];
  double sum = 0;
  for (int64_t s = 0; s < k; ++s) {
    const int32_t e = order[static_cast<size_t>(s)];
    experts[s] = e;
    weights[s] = static_cast<float>(std::exp(static_cast<double>(l[e]) - max));
    sum += weights[s];
  }
  const auto inv = static_cast<float>(1.0 / sum);
  for (int64_t s = 0; s < k; ++s) weights[s] *= inv;
}

// DeepSeek V3's group routing of one token: each of `groups` equal groups
// of `select` scores by the sum of its two largest values; the experts
// outside the `used` best groups (ties: the lower group) become -inf.
// `order` is scratch of at least `groups` entries.
void keep_best_groups(std::span<float> select, int64_t groups, int64_t used, std::span<int32_t> order) {
  const auto per_group = static_cast<int64_t>(select.size()) / groups;
  std::array<float, kMaxExperts> score_storage;
  const std::span<float> score(score_storage.data(), static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    const float* v = select.data() + g * per_group;
    float first = -INFINITY, second = -INFINITY;
    for (int64_t i = 0; i < per_group; ++i) {
      if (v[i] > first) {
        second = first;
        first = v[i];
      } else if (v[i] > second) {
        second = v[i];
      }
    }
    score[static_cast<size_t>(g)] = first + second;
  }
  const std::span<int32_t> by_score = order.first(static_cast<size_t>(groups));
  std::iota(by_score.begin(), by_score.end(), 0);
  std::partial_sort(by_score.begin(), by_score.begin() + used, by_score.end(), [&](int32_t a, int32_t b) {
    const float sa = score[static_cast<size_t>(a)], sb = score[static_cast<size_t>(b)];
    return sa > sb || (sa == sb && a < b);
  });
  std::array<bool, kMaxExperts> kept{};
  for (int64_t i = 0; i < used; ++i) kept[static_cast<size_t>(by_score[static_cast<size_t>(i)])] = true;
  for (int64_t g = 0; g < groups; ++g) {
    if (kept[static_cast<size_t>(g)]) continue;
    std::fill_n(select.begin() + g * per_group, per_group, -INFINITY);
  }
}

}  // namespace

void route_experts(const float* logits, int64_t n_tokens, int64_t n_expert, int64_t k, int32_t* experts,
                   float* weights, const Routing& routing) {
  if (n_expert > kMaxExperts || k < 1 || k > n_expert) throw std::invalid_argument("route_experts: bad counts");
  std::array<float, kMaxExperts> probs_storage;
  std::array<float, kMaxExperts> select_storage;
  std::array<int32_t, kMaxExperts> order_storage;
  const std::span<float> probs(probs_storage.data(), static_cast<size_t>(n_expert));
  const std::span<int32_t> order(order_storage.data(), static_cast<size_t>(n_expert));
  const bool sigmoid = routing.gating == ExpertGating::Sigmoid;
  // What the choice ranks: the probabilities, or with a selection bias or
  // groups a copy (biased, and outside the chosen groups -inf).
  const bool grouped = routing.groups > 1;
  const bool biased = routing.selection_bias != nullptr;
  const std::span<float> select =
      biased || grouped ? std::span<float>(select_storage.data(), probs.size()) : probs;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* l = logits + t * n_expert;
    if (routing.gating == ExpertGating::SoftmaxOfChosen) {
      route_by_chosen_logits(l, k, order, experts + t * k, weights + t * k);
      continue;
    }
    if (sigmoid) {
      for (int64_t e = 0; e < n_expert; ++e) probs[static_cast<size_t>(e)] = 1.0f / (1.0f + std::exp(-l[e]));
    } else {
      const float max = *std::max_element(l, l + n_expert);
      double sum = 0;
      for (int64_t e = 0; e < n_expert; ++e) {
        const auto p = static_cast<float>(std::exp(static_cast<double>(l[e]) - max));
        probs[static_cast<size_t>(e)] = p;
        sum += p;
      }
      const auto inv = static_cast<float>(1.0 / sum);
      for (float& p : probs) p *= inv;
    }
    if (biased) {
      for (int64_t e = 0; e < n_expert; ++e) {
        select[static_cast<size_t>(e)] = probs[static_cast<size_t>(e)] + routing.selection_bias[e];
      }
    } else if (grouped) {
      std::copy(probs.begin(), probs.end(), select.begin());
    }
    if (grouped) keep_best_groups(select, routing.groups, routing.groups_used, order);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      const float pa = select[static_cast<size_t>(a)], pb = select[static_cast<size_t>(b)];
      return pa > pb || (pa == pb && a < b);
    });
    double chosen_sum = 0;
    for (int64_t s = 0; s < k; ++s) chosen_sum += probs[static_cast<size_t>(order[static_cast<size_t>(s)])];
    const float denom = routing.normalize ? std::max(static_cast<float>(chosen_sum), 6.103515625e-5f) : 1.0f;
    const bool scaled = routing.scale != 0.0f && routing.scale != 1.0f;
    for (int64_t s = 0; s < k; ++s) {
      const int32_t e = order[static_cast<size_t>(s)];
      experts[t * k + s] = e;
      weights[t * k + s] = probs[static_cast<size_t>(e)] / denom;
      if (scaled) weights[t * k + s] *= routing.scale;
    }
  }
}

MoeFfnBlock::MoeFfnBlock(const ModelSpec& spec, kernels::Backend& backend)
    : spec_(spec),
      backend_(backend),
      activation_(activation_for(spec.ffn_form)),
      expert_tokens_(static_cast<size_t>(spec.n_layer), std::vector<int64_t>(static_cast<size_t>(spec.n_expert))) {
  if (!spec.has_experts()) throw std::invalid_argument("MoeFfnBlock: the model has no experts");
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("a mixture of experts runs on the CPU backend only so far");
  }
}

void MoeFfnBlock::grow(int64_t n_tokens) {
  if (n_tokens <= capacity_) return;
  const int64_t t = std::max(n_tokens, capacity_ * 2);
  const auto n = [t](int64_t width) { return static_cast<size_t>(t * width); };
  const int64_t k = spec_.n_expert_used;
  logits_.resize(n(spec_.n_expert));
  chosen_.resize(n(k));
  weights_.resize(n(k));
  by_expert_.resize(n(k));
  expert_begin_.resize(static_cast<size_t>(spec_.n_expert + 1));
  cursor_.resize(static_cast<size_t>(spec_.n_expert));
  rows_in_.resize(n(spec_.n_embd));
  // At least k rows: one token's k experts side by side (run_one_token).
  const auto rows = static_cast<size_t>(std::max(t, k));
  gate_.resize(rows * static_cast<size_t>(spec_.n_ff));
  up_.resize(rows * static_cast<size_t>(spec_.n_ff));
  rows_out_.resize(rows * static_cast<size_t>(spec_.n_embd));
  slot_out_.resize(n(k * spec_.n_embd));
  shared_gate_.resize(n(spec_.n_ff_shared));
  shared_up_.resize(n(spec_.n_ff_shared));
  shared_out_.resize(spec_.n_ff_shared > 0 ? n(spec_.n_embd) : 0);
  gate_up_targets_.reserve(static_cast<size_t>(2 * k));
  capacity_ = t;
}

void MoeFfnBlock::run(int64_t layer, const LayerWeights& w, const float* in, int64_t n_tokens, float* out,
                      const float* router_in) {
  const int64_t n_embd = spec_.n_embd;
  const int64_t n_ff = spec_.n_ff;
  const int64_t n_expert = spec_.n_expert;
  const int64_t k = spec_.n_expert_used;
  const auto row_bytes = static_cast<size_t>(n_embd) * sizeof(float);
  grow(n_tokens);
  backend_.matmul(w.ffn_gate_inp, router_in != nullptr ? router_in : in, n_tokens, logits_.data());
  if (w.ffn_gate_inp_b.data != nullptr) backend_.add_bias(logits_.data(), f32(w.ffn_gate_inp_b), n_tokens, n_expert);
  const Routing routing{.normalize = spec_.expert_weights_norm,
                        .gating = spec_.expert_gating,
                        .selection_bias = f32(w.ffn_exp_probs_b),
                        .scale = spec_.expert_weights_scale,
                        .groups = spec_.expert_groups,
                        .groups_used = spec_.expert_groups_used};
  route_experts(logits_.data(), n_tokens, n_expert, k, chosen_.data(), weights_.data(), routing);

  if (n_tokens == 1) {
    run_one_token(layer, w, in, out);
    add_shared_expert(w, in, n_tokens, out);
    return;
  }
  // Group the (token, slot) pairs by expert (a counting sort, tokens in order).
  std::fill(expert_begin_.begin(), expert_begin_.end(), 0);
  for (int64_t i = 0; i < n_tokens * k; ++i) ++expert_begin_[static_cast<size_t>(chosen_[i]) + 1];
  std::partial_sum(expert_begin_.begin(), expert_begin_.end(), expert_begin_.begin());
  std::vector<int64_t>& counts = expert_tokens_[static_cast<size_t>(layer)];
  std::copy(expert_begin_.begin(), expert_begin_.end() - 1, cursor_.begin());
  for (int64_t i = 0; i < n_tokens * k; ++i) {
    by_expert_[static_cast<size_t>(cursor_[static_cast<size_t>(chosen_[i])]++)] = static_cast<int32_t>(i);
  }

  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t begin = expert_begin_[static_cast<size_t>(e)];
    const int64_t m = expert_begin_[static_cast<size_t>(e) + 1] - begin;
    if (m == 0) continue;
    counts[static_cast<size_t>(e)] += m;
    const ExpertWeights& x = w.experts[static_cast<size_t>(e)];
    for (int64_t r = 0; r < m; ++r) {
      const int64_t token = by_expert_[static_cast<size_t>(begin + r)] / k;
      std::memcpy(rows_in_.data() + r * n_embd, in + token * n_embd, row_bytes);
    }
    const kernels::MatmulTarget gate_up[] = {{&x.gate, gate_.data()}, {&x.up, up_.data()}};
    backend_.matmul_many(std::span(gate_up, x.up.data != nullptr ? 2 : 1), rows_in_.data(), m);  // ungated: one
    if (x.gate_b.data != nullptr) {
      backend_.add_bias(gate_.data(), f32(x.gate_b), m, n_ff);
      backend_.add_bias(up_.data(), f32(x.up_b), m, n_ff);
    }
    backend_.ffn_activation(activation_, gate_.data(), up_.data(), m * n_ff, gate_.data());
    backend_.matmul(x.down, gate_.data(), m, rows_out_.data());
    if (x.down_b.data != nullptr) backend_.add_bias(rows_out_.data(), f32(x.down_b), m, n_embd);
    if (x.down_scale != 1.0f) backend_.scale(rows_out_.data(), m * n_embd, x.down_scale);
    for (int64_t r = 0; r < m; ++r) {
      const int64_t pair = by_expert_[static_cast<size_t>(begin + r)];
      const float weight = weights_[static_cast<size_t>(pair)];
      const float* src = rows_out_.data() + r * n_embd;
      float* dst = slot_out_.data() + pair * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) dst[i] = src[i] * weight;
    }
  }

  for (int64_t t = 0; t < n_tokens; ++t) sum_slots(slot_out_.data() + t * k * n_embd, k, n_embd, out + t * n_embd);
  add_shared_expert(w, in, n_tokens, out);
}

void MoeFfnBlock::add_shared_expert(const LayerWeights& w, const float* in, int64_t n_tokens, float* out) {
  if (spec_.n_ff_shared == 0) return;
  const int64_t n_embd = spec_.n_embd;
  const int64_t n_ff = spec_.n_ff_shared;
  const ExpertWeights& x = w.shared_expert;
  const kernels::MatmulTarget gate_up[] = {{&x.gate, shared_gate_.data()}, {&x.up, shared_up_.data()}};
  backend_.matmul_many(std::span(gate_up, x.up.data != nullptr ? 2 : 1), in, n_tokens);
  backend_.ffn_activation(activation_, shared_gate_.data(), shared_up_.data(), n_tokens * n_ff, shared_gate_.data());
  backend_.matmul(x.down, shared_gate_.data(), n_tokens, shared_out_.data());
  const auto* g = static_cast<const float*>(w.ffn_gate_inp_shexp.data);
  if (g == nullptr) {  // ungated (DeepSeek's form): the routed output plus the shared one
    for (int64_t i = 0; i < n_tokens * n_embd; ++i) out[i] += shared_out_[static_cast<size_t>(i)];
    return;
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = in + t * n_embd;
    float dot = 0.0f;
    for (int64_t i = 0; i < n_embd; ++i) dot += g[i] * row[i];
    const float gate = 1.0f / (1.0f + std::exp(-dot));
    float* y = out + t * n_embd;
    const float* shared = shared_out_.data() + t * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) y[i] += shared[i] * gate;
  }
}

void MoeFfnBlock::run_one_token(int64_t layer, const LayerWeights& w, const float* in, float* out) {
  // A decode step: every chosen expert reads the same row, so their gate
  // and up matrices go through one matmul_many, and one activation.
  const int64_t n_embd = spec_.n_embd;
  const int64_t n_ff = spec_.n_ff;
  const int64_t k = spec_.n_expert_used;
  std::vector<int64_t>& counts = expert_tokens_[static_cast<size_t>(layer)];
  gate_up_targets_.clear();
  for (int64_t s = 0; s < k; ++s) {
    const ExpertWeights& x = w.experts[static_cast<size_t>(chosen_[static_cast<size_t>(s)])];
    gate_up_targets_.push_back({&x.gate, gate_.data() + s * n_ff});
    if (x.up.data != nullptr) gate_up_targets_.push_back({&x.up, up_.data() + s * n_ff});
    ++counts[static_cast<size_t>(chosen_[static_cast<size_t>(s)])];
  }
  backend_.matmul_many(gate_up_targets_, in, 1);
  for (int64_t s = 0; s < k; ++s) {
    const ExpertWeights& x = w.experts[static_cast<size_t>(chosen_[static_cast<size_t>(s)])];
    if (x.gate_b.data == nullptr) continue;
    backend_.add_bias(gate_.data() + s * n_ff, f32(x.gate_b), 1, n_ff);
    backend_.add_bias(up_.data() + s * n_ff, f32(x.up_b), 1, n_ff);
  }
  backend_.ffn_activation(activation_, gate_.data(), up_.data(), k * n_ff, gate_.data());
  for (int64_t s = 0; s < k; ++s) {
    const ExpertWeights& x = w.experts[static_cast<size_t>(chosen_[static_cast<size_t>(s)])];
    float* row = rows_out_.data() + s * n_embd;
    backend_.matmul(x.down, gate_.data() + s * n_ff, 1, row);
    if (x.down_b.data != nullptr) backend_.add_bias(row, f32(x.down_b), 1, n_embd);
    if (x.down_scale != 1.0f) backend_.scale(row, n_embd, x.down_scale);
  }
  // Weighted, then summed most probable first: run()'s operations, so the same bits.
  for (int64_t s = 0; s < k; ++s) {
    const float weight = weights_[static_cast<size_t>(s)];
    float* row = rows_out_.data() + s * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) row[i] = row[i] * weight;
  }
  sum_slots(rows_out_.data(), k, n_embd, out);
}

}  // namespace tc::model
