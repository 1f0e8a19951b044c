// Mamba-2's layer, op by op in llama.cpp's order (its CPU backend's
// ssm_conv and ssm_scan; see mamba2_block.h).
#include "engine/model/mamba2_block.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/model/causal_conv.h"

namespace tc::model {
namespace {

const float* f32(const kernels::Tensor& t) { return static_cast<const float*>(t.data); }

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // ggml's threshold

// One row of a head's state in one pass: s = s * decay + b * x_dt, and the
// row read by C, summed in 8 lanes (as ggml sums in SIMD lanes) then in order.
float update_and_read(float* s, const float* b, const float* c, float decay, float x_dt, int64_t n) {
  float part[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) {
      const float v = s[k + j] * decay + b[k + j] * x_dt;
      s[k + j] = v;
      part[j] += v * c[k + j];
    }
  }
  float sum = 0.0f;
  for (; k < n; ++k) {
    s[k] = s[k] * decay + b[k] * x_dt;
    sum += s[k] * c[k];
  }
  for (const float p : part) sum += p;
  return sum;
}

}  // namespace

Mamba2Block::Mamba2Block(const ModelSpec& spec, kernels::Backend& backend) : spec_(spec), backend_(backend) {
  if (backend.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("Mamba-2 layers run on the CPU backend only so far");
  }
}

void Mamba2Block::scan_head(int64_t h, const LayerWeights& w, int64_t first, int64_t n, float* state) {
  const Mamba2Shape& d = spec_.mamba2;
  const int64_t in_dim = d.in_dim(), hd = d.head_dim(), ds = d.d_state;
  const int64_t g = h / (d.n_head / d.n_group);
  const float a = f32(w.m2_a)[h];
  const float dt_bias = f32(w.m2_dt_bias)[h];
  for (int64_t t = first; t < first + n; ++t) {
    const float* row = in_.data() + t * in_dim;
    const float* xbc = row + d.d_inner;
    const float* x = xbc + h * hd;
    const float* b = xbc + d.d_inner + g * ds;
    const float* c = xbc + d.d_inner + d.n_group * ds + g * ds;
    const float dt = softplus(row[d.d_inner + d.conv_dim() + h] + dt_bias);
    const float decay = std::exp(dt * a);
    float* y = y_.data() + t * d.d_inner + h * hd;
    for (int64_t i = 0; i < hd; ++i) {
      float* s = state + i * ds;  // row i of the head's matrix: {d_state, head_dim} in ggml
      const float x_dt = x[i] * dt;
      y[i] = update_and_read(s, b, c, decay, x_dt, ds);
    }
  }
}

void Mamba2Block::run(int64_t layer, const LayerWeights& w, const float* cur, int64_t n_tokens,
                      std::span<const RecurrentSequence> sequences, runtime::KvCache& kv, float* out) {
  const Mamba2Shape& d = spec_.mamba2;
  const int64_t in_dim = d.in_dim(), hd = d.head_dim(), inner = d.d_inner;
  const auto eps = static_cast<float>(spec_.rms_eps);
  in_.resize(std::max(in_.size(), static_cast<size_t>(n_tokens * in_dim)));
  y_.resize(std::max(y_.size(), static_cast<size_t>(n_tokens * inner)));
  backend_.matmul(w.m2_in, cur, n_tokens, in_.data());
  backend_.synchronize();
  for (const RecurrentSequence& s : sequences) {
    causal_conv(in_.data() + s.first * in_dim + inner, in_dim, s.n, d.conv_dim(), f32(w.m2_conv), d.conv_kernel,
                f32(w.m2_conv_b), true, kv.conv_state(s.slot, layer), window_);
    float* state = kv.delta_state(s.slot, layer);
    backend_.host_parallel(d.n_head, [&](int64_t h) { scan_head(h, w, s.first, s.n, state + h * hd * d.d_state); });
  }
  // y + x D, times silu(z); RMS-normed per group, times ssm_norm.
  const float* skip = f32(w.m2_d);
  const float* norm = f32(w.m2_norm);
  const int64_t group = inner / d.n_group;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = in_.data() + t * in_dim;
    float* y = y_.data() + t * inner;
    for (int64_t i = 0; i < inner; ++i) {
      const float z = row[i];
      y[i] = (y[i] + row[inner + i] * skip[i / hd]) * (z / (1.0f + std::exp(-z)));
    }
    if (norm == nullptr) continue;  // Falcon-H1 without its norm
    for (int64_t g = 0; g < d.n_group; ++g) backend_.rms_norm(y + g * group, norm + g * group, 1, group, eps, y + g * group);
  }
  backend_.matmul(w.m2_out, y_.data(), n_tokens, out);
}

}  // namespace tc::model
