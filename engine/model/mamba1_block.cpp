// Mamba-1's layer, op by op in llama.cpp's order (its CPU backend's
// ssm_conv and ssm_scan; see mamba1_block.h).
#include "engine/model/mamba1_block.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/model/causal_conv.h"
#include "kernels/cpu/f8_lanes.h"

namespace tc::model {
namespace {

const float* f32(const kernels::Tensor& t) { return static_cast<const float*>(t.data); }

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // ggml's threshold

// One channel's n states advanced by a token, s[k] = s[k] exp(dt a[k]) +
// b[k] x_dt, and its output sum_k s[k] c[k]: eight states at a time (the
// exp is Cephes' expf, about 1 ulp: kernels/cpu/f8_lanes.h; the sum in
// eight lanes, then in order), vectorized for AVX2 where the CPU has it.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
float advance_channel(float* s, const float* a, const float* b, const float* c, float dt, float x_dt, int64_t n) {
  using kernels::F8;
  using kernels::F8u;  // (TC_LOAD8 and TC_STORE8 name it)
  F8 acc{};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    F8 decay = TC_LOAD8(a + k) * dt;
    kernels::exp8(decay);
    const F8 v = TC_LOAD8(s + k) * decay + TC_LOAD8(b + k) * x_dt;
    TC_STORE8(s + k, v);
    acc += v * TC_LOAD8(c + k);
  }
  float sum = 0.0f;
  for (int j = 0; j < 8; ++j) sum += acc[j];
  for (; k < n; ++k) {
    s[k] = s[k] * std::exp(dt * a[k]) + b[k] * x_dt;
    sum += s[k] * c[k];
  }
  return sum;
}

}  // namespace

Mamba1Block::Mamba1Block(const ModelSpec& spec, kernels::Backend& backend) : spec_(spec), backend_(backend) {
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("Mamba-1 layers run on the CPU backend only so far");
  }
  ones_.assign(static_cast<size_t>(std::max(spec.mamba1.dt_rank, spec.mamba1.d_state)), 1.0f);
}

void Mamba1Block::scan_channels(int64_t c0, int64_t c1, const LayerWeights& w, int64_t first, int64_t n,
                                float* state) {
  const Mamba1Shape& d = spec_.mamba1;
  const int64_t inner = d.d_inner, ds = d.d_state, n_xdb = d.dt_rank + 2 * ds;
  const float* a_all = f32(w.m2_a);
  for (int64_t t = first; t < first + n; ++t) {
    const float* b = xdb_.data() + t * n_xdb + d.dt_rank;
    const float* c = b + ds;
    for (int64_t i = c0; i < c1; ++i) {
      const float dt = softplus(dt_[static_cast<size_t>(t * inner + i)]);
      const float x_dt = x_[static_cast<size_t>(t * inner + i)] * dt;
      const float sum = advance_channel(state + i * ds, a_all + i * ds, b, c, dt, x_dt, ds);
      y_[static_cast<size_t>(t * inner + i)] = sum;
    }
  }
}

void Mamba1Block::run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
                      std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) {
  const Mamba1Shape& d = spec_.mamba1;
  const int64_t inner = d.d_inner, ds = d.d_state, n_xdb = d.dt_rank + 2 * ds;
  const auto eps = static_cast<float>(spec_.rms_eps);
  auto grow = [](std::vector<float>& v, int64_t n) { v.resize(std::max(v.size(), static_cast<size_t>(n))); };
  grow(in_, n_tokens * 2 * inner);
  grow(x_, n_tokens * inner);
  grow(xdb_, n_tokens * n_xdb);
  grow(dt_low_, n_tokens * d.dt_rank);
  grow(dt_, n_tokens * inner);
  grow(y_, n_tokens * inner);
  backend_.matmul(w.m2_in, cur, n_tokens, in_.data());
  backend_.synchronize();
  for (const RecurrentSequence& s : sequences) {
    causal_conv(in_.data() + s.first * 2 * inner, 2 * inner, s.n, inner, f32(w.m2_conv), d.conv_kernel,
                f32(w.m2_conv_b), true, kv.conv_state(s.slot, layer), window_);
  }
  for (int64_t t = 0; t < n_tokens; ++t) std::copy_n(in_.data() + t * 2 * inner, inner, x_.data() + t * inner);
  backend_.matmul(w.m1_x, x_.data(), n_tokens, xdb_.data());
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* row = xdb_.data() + t * n_xdb;
    if (w.m1_dt_norm.data != nullptr) {  // Jamba: dt, B and C each RMS-normed, with learned weights
      backend_.rms_norm(row, f32(w.m1_dt_norm), 1, d.dt_rank, eps, row);
      backend_.rms_norm(row + d.dt_rank, f32(w.m1_b_norm), 1, ds, eps, row + d.dt_rank);
      backend_.rms_norm(row + d.dt_rank + ds, f32(w.m1_c_norm), 1, ds, eps, row + d.dt_rank + ds);
    } else if (d.dt_b_c_rms) {  // Falcon-Mamba: the same without weights
      backend_.rms_norm(row, ones_.data(), 1, d.dt_rank, eps, row);
      backend_.rms_norm(row + d.dt_rank, ones_.data(), 2, ds, eps, row + d.dt_rank);
    }
    std::copy_n(row, d.dt_rank, dt_low_.data() + t * d.dt_rank);
  }
  backend_.matmul(w.m1_dt, dt_low_.data(), n_tokens, dt_.data());
  backend_.add_bias(dt_.data(), f32(w.m2_dt_bias), n_tokens, inner);
  constexpr int64_t kChannelBlock = 64;
  const int64_t n_blocks = (inner + kChannelBlock - 1) / kChannelBlock;
  for (const RecurrentSequence& s : sequences) {
    float* state = kv.delta_state(s.slot, layer);
    backend_.host_parallel(n_blocks, [&](int64_t blk) {
      scan_channels(blk * kChannelBlock, std::min(inner, (blk + 1) * kChannelBlock), w, s.first, s.n, state);
    });
  }
  // (y + x D) * silu(z), then ssm_out.
  const float* skip = f32(w.m2_d);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* z = in_.data() + t * 2 * inner + inner;
    const float* x = x_.data() + t * inner;
    float* y = y_.data() + t * inner;
    for (int64_t i = 0; i < inner; ++i) y[i] = (y[i] + x[i] * skip[i]) * (z[i] / (1.0f + std::exp(-z[i])));
  }
  backend_.matmul(w.m2_out, y_.data(), n_tokens, out);
}

}  // namespace tc::model
