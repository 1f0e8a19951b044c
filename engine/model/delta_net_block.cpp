// The gated delta net of Qwen 3.5's recurrent layers, op by op in
// llama.cpp's order (its CPU backend's ssm_conv, l2_norm and
// gated_delta_net).
#include "engine/model/delta_net_block.h"

#include "engine/model/causal_conv.h"
#include "engine/model/lane_dot.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tc::model {
namespace {

const float* f32(const kernels::Tensor& t) { return static_cast<const float*>(t.data); }

float silu(float x) { return x / (1.0f + std::exp(-x)); }

// x /= max(||x||, eps), the norm summed in double (ggml_l2_norm).
void l2_normalize(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace

DeltaNetBlock::DeltaNetBlock(const ModelSpec& spec, kernels::Backend& backend) : spec_(spec), backend_(backend) {
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("the gated delta net runs on the CPU backend only so far");
  }
}

void DeltaNetBlock::run_head(int64_t h, const float* qkv, const float* beta, const float* decay, int64_t n,
                             float* state, float* o) const {
  const DeltaNetShape& d = spec_.delta_net;
  const int64_t dim = d.head_dim, channels = d.conv_dim(), kh = d.key_head(h);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  thread_local std::vector<float> delta;  // per thread: heads run side by side
  delta.resize(static_cast<size_t>(dim));
  for (int64_t t = 0; t < n; ++t) {
    const float* row = qkv + t * channels;
    const float* q = row + kh * dim;
    const float* k = row + d.key_dim() + kh * dim;
    const float* v = row + 2 * d.key_dim() + h * dim;
    const float b = beta[t * d.n_v_heads + h];
    const float g = decay[t * d.n_v_heads + h];
    // state[j * dim + i] is S[i][j]: row j of the stored matrix is column j of S.
    for (int64_t i = 0; i < dim * dim; ++i) state[i] *= g;
    for (int64_t j = 0; j < dim; ++j) delta[static_cast<size_t>(j)] = (v[j] - lane_dot(state + j * dim, k, dim)) * b;
    for (int64_t j = 0; j < dim; ++j) {
      float* m = state + j * dim;
      const float dj = delta[static_cast<size_t>(j)];
      for (int64_t i = 0; i < dim; ++i) m[i] += k[i] * dj;
    }
    float* out = o + t * d.value_dim() + h * dim;
    for (int64_t j = 0; j < dim; ++j) out[j] = lane_dot(state + j * dim, q, dim) * scale;
  }
}

void DeltaNetBlock::ungroup_qkvz(const float* qkvz, int64_t n_tokens) {
  const DeltaNetShape& d = spec_.delta_net;
  const int64_t dim = d.head_dim, channels = d.conv_dim(), run = d.n_v_heads / d.n_k_heads * dim;
  const int64_t group = 2 * dim + 2 * run;  // a key head's q, k, then its value heads' v, then their z
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = qkvz + t * (channels + d.value_dim());
    float* qkv = qkv_.data() + t * channels;
    float* z = z_.data() + t * d.value_dim();
    for (int64_t g = 0; g < d.n_k_heads; ++g) {
      const float* src = row + g * group;
      std::copy_n(src, dim, qkv + g * dim);
      std::copy_n(src + dim, dim, qkv + d.key_dim() + g * dim);
      std::copy_n(src + 2 * dim, run, qkv + 2 * d.key_dim() + g * run);
      std::copy_n(src + 2 * dim + run, run, z + g * run);
    }
  }
}

void DeltaNetBlock::ungroup_ba(const float* ba, int64_t n_tokens) {
  const DeltaNetShape& d = spec_.delta_net;
  const int64_t n_v = d.n_v_heads, per_k = n_v / d.n_k_heads;
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t g = 0; g < d.n_k_heads; ++g) {
      const float* src = ba + t * 2 * n_v + g * 2 * per_k;  // the group's betas, then its alphas
      std::copy_n(src, per_k, beta_.data() + t * n_v + g * per_k);
      std::copy_n(src + per_k, per_k, decay_.data() + t * n_v + g * per_k);
    }
  }
}

void DeltaNetBlock::run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
                        std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) {
  const DeltaNetShape& d = spec_.delta_net;
  const int64_t channels = d.conv_dim(), n_v = d.n_v_heads, dim = d.head_dim;
  const auto eps = static_cast<float>(spec_.rms_eps);
  const auto grow = [n_tokens](std::vector<float>& v, int64_t width) {
    v.resize(std::max(v.size(), static_cast<size_t>(n_tokens * width)));
  };
  grow(qkv_, channels);
  grow(z_, d.value_dim());
  grow(beta_, n_v);
  grow(decay_, n_v);
  grow(o_, d.value_dim());
  // Qwen3-Next's fused projections land in fused_ (qkvz, then ba) and are ungrouped below.
  const bool fused_qkvz = w.dn_qkvz.data != nullptr, fused_ba = w.dn_ba.data != nullptr;
  const int64_t qkvz_width = fused_qkvz ? channels + d.value_dim() : 0, ba_width = fused_ba ? 2 * n_v : 0;
  grow(fused_, qkvz_width + ba_width);
  float* qkvz = fused_.data();
  float* ba = qkvz + n_tokens * qkvz_width;
  kernels::MatmulTarget projections[4];
  size_t n_projections = 0;
  const auto project = [&](const kernels::Tensor& t, float* into) { projections[n_projections++] = {&t, into}; };
  if (fused_qkvz) {
    project(w.dn_qkvz, qkvz);
  } else {
    project(w.dn_qkv, qkv_.data());
    project(w.dn_z, z_.data());
  }
  if (fused_ba) {
    project(w.dn_ba, ba);
  } else {
    project(w.dn_beta, beta_.data());
    project(w.dn_alpha, decay_.data());
  }
  backend_.matmul_many(std::span(projections, n_projections), cur, n_tokens);
  backend_.synchronize();
  if (fused_qkvz) ungroup_qkvz(qkvz, n_tokens);
  if (fused_ba) ungroup_ba(ba, n_tokens);
  const float* dt = f32(w.dn_dt_bias);
  const float* a = f32(w.dn_a);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t h = 0; h < n_v; ++h) {
      float& b = beta_[static_cast<size_t>(t * n_v + h)];
      b = 1.0f / (1.0f + std::exp(-b));
      const float biased = decay_[static_cast<size_t>(t * n_v + h)] + dt[h];
      const float softplus = biased > 20.0f ? biased : std::log(1.0f + std::exp(biased));
      decay_[static_cast<size_t>(t * n_v + h)] = std::exp(softplus * a[h]);
    }
  }
  for (const RecurrentSequence& s : sequences) {
    float* qkv = qkv_.data() + s.first * channels;
    causal_conv(qkv, channels, s.n, channels, f32(w.dn_conv), d.conv_kernel, nullptr, true,
                kv.conv_state(s.slot, layer), window_);
    for (int64_t t = 0; t < s.n; ++t) {
      for (int64_t head = 0; head < 2 * d.n_k_heads; ++head) l2_normalize(qkv + t * channels + head * dim, dim, eps);
    }
    float* state = kv.delta_state(s.slot, layer);
    const float* beta = beta_.data() + s.first * n_v;
    const float* decay = decay_.data() + s.first * n_v;
    float* o = o_.data() + s.first * d.value_dim();
    backend_.host_parallel(n_v, [&](int64_t h) { run_head(h, qkv, beta, decay, s.n, state + h * dim * dim, o); });
  }
  // rms_norm(o, ssm_norm) * silu(z), per head; then the output projection.
  backend_.rms_norm(o_.data(), f32(w.dn_norm), n_tokens * n_v, dim, eps, o_.data());
  for (int64_t i = 0; i < n_tokens * d.value_dim(); ++i) o_[static_cast<size_t>(i)] *= silu(z_[static_cast<size_t>(i)]);
  backend_.matmul(w.dn_out, o_.data(), n_tokens, out);
}

}  // namespace tc::model
