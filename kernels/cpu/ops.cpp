// CPU reference implementations of the element-wise and per-row ops in
// ops.h: get_rows, rms_norm, layer_norm, rope, ffn_activation, add_bias,
// scale, softcap, store_f16, store_kv, alibi_slope. Attention lives in ops_attention.cpp. Plain
// scalar loops but SwiGLU and gelu, whose exp runs eight lanes at a time (f8_lanes.h).
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include "kernels/check.h"
#include "kernels/cpu/f8_lanes.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/rope_yarn.h"

namespace tc::kernels {

void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) {
  const int64_t n_embd = table.n_cols();
  const int64_t n_vocab = table.n_rows();
  for (int64_t t = 0; t < n_tokens; ++t) {
    TC_CHECK(ids[t] >= 0 && ids[t] < n_vocab, "get_rows: token id out of range [0, n_vocab)");
    dequantize_row(table.dtype, table.row(ids[t]), out + t * n_embd, n_embd);
  }
}

void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) {
  TC_CHECK(n > 0, "rms_norm: row length must be positive");
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // As ggml_compute_forward_rms_norm_f32: squares rounded to f32, summed in
    // double in index order; the mean and the scale in f32. The weight is
    // applied after the scale, as the separate ggml_mul in llama.cpp's graph.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i] * xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) yr[i] = (xr[i] * scale) * weight[i];
  }
}

void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                float* y) {
  TC_CHECK(n > 0, "layer_norm: row length must be positive");
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    // As ggml_compute_forward_norm_f32: the mean and the variance summed in
    // double, each rounded to f32; the centred values in f32. The weight and
    // the bias come after, as llama.cpp's separate ggml_mul and ggml_add.
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(xr[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    double sum2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = xr[i] - mean;
      sum2 += static_cast<double>(d * d);
    }
    const float variance = static_cast<float>(sum2 / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(variance + eps);
    if (bias == nullptr) {
      for (int64_t i = 0; i < n; ++i) yr[i] = ((xr[i] - mean) * scale) * weight[i];
    } else {
      for (int64_t i = 0; i < n; ++i) yr[i] = ((xr[i] - mean) * scale) * weight[i] + bias[i];
    }
  }
}

void yarn_corr_dims(int64_t n_rot, int64_t n_ctx_orig, double freq_base, double beta_fast, double beta_slow,
                    double& corr_low, double& corr_high) {
  // The pair index whose angle turns n_beta times over n_ctx_orig positions.
  const auto corr_dim = [&](double n_beta) {
    return static_cast<float>(n_rot) *
           std::log(static_cast<float>(n_ctx_orig) / (static_cast<float>(n_beta) * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(static_cast<float>(freq_base)));
  };
  corr_low = std::max(0.0f, std::floor(corr_dim(beta_fast)));
  corr_high = std::min(static_cast<float>(n_rot - 1), std::ceil(corr_dim(beta_slow)));
}

void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
          const RopeParams& params) {
  const int64_t n_rot = params.n_rot;
  TC_CHECK(n_rot >= 0 && n_rot % 2 == 0 && n_rot <= head_dim, "rope: n_rot must be even and <= head_dim");
  const int64_t n_pairs = n_rot / 2;
  if (n_pairs == 0) return;
  // cos/sin of each pair's angle for the current token; grows once, then
  // reused (rope runs on the engine thread only).
  thread_local std::vector<double> cos_sin;
  if (cos_sin.size() < static_cast<size_t>(2 * n_pairs)) cos_sin.resize(static_cast<size_t>(2 * n_pairs));
  const double magnitude = rope_magnitude(params.freq_scale, params.ext_factor, params.attn_factor);

  for (int64_t t = 0; t < n_tokens; ++t) {
    // Angles in double, each from its own pow(): llama.cpp builds them in f32
    // by repeated multiplication with theta_scale = base^(-2/n_rot), whose
    // rounding error grows with the pair index and the position (about 1e-4
    // rad at position 4000). Double keeps every angle exact to ~1e-12 rad, so
    // results may differ from llama.cpp by that much at long contexts.
    const double pos = static_cast<double>(positions[t]);
    for (int64_t i = 0; i < n_pairs; ++i) {
      double theta = pos * rope_pair_scale(params.freq_scale, params.ext_factor, params.corr_low, params.corr_high, i) *
                     std::pow(params.freq_base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
      if (params.freq_factors != nullptr) theta /= static_cast<double>(params.freq_factors[i]);
      cos_sin[2 * i] = std::cos(theta) * magnitude;
      cos_sin[2 * i + 1] = std::sin(theta) * magnitude;
    }
    // Normal mode rotates dims (2i, 2i + 1), Neox mode dims (i, i + n_rot/2).
    const int64_t first_step = params.mode == RopeMode::Neox ? 1 : 2;
    const int64_t second_offset = params.mode == RopeMode::Neox ? n_pairs : 1;
    for (int64_t h = 0; h < n_head; ++h) {
      float* xh = x + (t * n_head + h) * head_dim;
      for (int64_t i = 0; i < n_pairs; ++i) {
        const double c = cos_sin[2 * i];
        const double s = cos_sin[2 * i + 1];
        float* p0 = xh + i * first_step;
        float* p1 = p0 + second_offset;
        const double x0 = *p0;
        const double x1 = *p1;
        // Rotated in double and rounded once: no f32 cancellation error when
        // x0*c and x1*s nearly cancel.
        *p0 = static_cast<float>(x0 * c - x1 * s);
        *p1 = static_cast<float>(x0 * s + x1 * c);
      }
    }
  }
}

namespace {

// out = silu(g) * u for eight lanes, silu(g) = g / (1 + exp(-g)) as
// ggml_silu_f32: for g << 0 exp overflows to inf and the quotient is -0,
// for g >> 0 it is g.
inline __attribute__((always_inline)) void swiglu8(const float* gate, const float* up, float* out) {
  const F8 g = TC_LOAD8(gate);
  F8 e = -g;
  exp8(e);
  TC_STORE8(out, g / (1.0f + e) * TC_LOAD8(up));
}

// Cloned for x86-64-v3 (AVX2, FMA) next to the baseline build, as
// attend_chunk: 8 wide with FMA there. The last partial group of eight runs
// on a padded copy, so every value gets the same operations wherever it sits
// (a token's activations do not depend on the batch around it).
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) swiglu8(gate + i, up + i, out + i);
  if (i == n) return;
  float g[8] = {}, u[8] = {}, o[8];
  for (int64_t l = 0; i + l < n; ++l) g[l] = gate[i + l], u[l] = up[i + l];
  swiglu8(g, u, o);
  for (int64_t l = 0; i + l < n; ++l) out[i + l] = o[l];
}

// gelu's tanh approximation, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) x
// (1 + 0.044715 x^2), as ggml_gelu_f32 (ggml's CPU backend reads it from a
// table of its f16 results), for eight lanes in the same function's other
// form, x / (1 + exp(-2u)): no libm call per value, and no cancellation in
// 1 + tanh(u) for x << 0 (there exp overflows to inf and the quotient is
// -0; for x >> 0 it is x).
// With up non-null: out = gelu(gate) * up.
inline __attribute__((always_inline)) void gelu8(const float* gate, const float* up, float* out) {
  constexpr float kMinus2Sqrt2OverPi = -2.0f * 0.79788456080286535587989211986876f;
  constexpr float kCoefA = 0.044715f;
  const F8 x = TC_LOAD8(gate);
  F8 e = x * kMinus2Sqrt2OverPi * (1.0f + kCoefA * x * x);
  exp8(e);
  const F8 g = x / (1.0f + e);
  TC_STORE8(out, up != nullptr ? g * TC_LOAD8(up) : g);
}

// out = gelu(gate), times up when up is non-null; cloned as swiglu below,
// the last partial group on a padded copy.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
void gelu(const float* gate, const float* up, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) gelu8(gate + i, up != nullptr ? up + i : nullptr, out + i);
  if (i == n) return;
  float g[8] = {}, u[8] = {}, o[8];
  for (int64_t l = 0; i + l < n; ++l) g[l] = gate[i + l], u[l] = up != nullptr ? up[i + l] : 0.0f;
  gelu8(g, up != nullptr ? u : nullptr, o);
  for (int64_t l = 0; i + l < n; ++l) out[i + l] = o[l];
}

// gpt-oss's clamped SwiGLU in f32, in ggml_swiglu_oai's order of operations.
inline float swiglu_oai(float gate, float up) {
  constexpr float kAlpha = 1.702f;
  constexpr float kLimit = 7.0f;
  const float g = std::min(gate, kLimit);
  const float u = std::clamp(up, -kLimit, kLimit);
  return g / (1.0f + std::exp(kAlpha * -g)) * (u + 1.0f);
}

}  // namespace

void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) {
  switch (act) {
    case Activation::SwiGLU:
      swiglu(gate, up, n, out);
      return;
    case Activation::ReGLU:
      for (int64_t i = 0; i < n; ++i) out[i] = (gate[i] > 0.0f ? gate[i] : 0.0f) * up[i];
      return;
    case Activation::DReLU:
      for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i] > 0.0f ? gate[i] : 0.0f;
        const float u = up[i] > 0.0f ? up[i] : 0.0f;
        out[i] = g * u;
      }
      return;
    case Activation::GeGLU:
      gelu(gate, up, n, out);
      return;
    case Activation::Gelu:
      gelu(gate, nullptr, n, out);
      return;
    case Activation::Relu:
      for (int64_t i = 0; i < n; ++i) out[i] = gate[i] > 0.0f ? gate[i] : 0.0f;
      return;
    case Activation::ReluSquared:
      // As llama.cpp's ggml_sqr(ggml_relu(x)): one rounded product.
      for (int64_t i = 0; i < n; ++i) out[i] = gate[i] > 0.0f ? gate[i] * gate[i] : 0.0f;
      return;
    case Activation::SwiGluOai:
      for (int64_t i = 0; i < n; ++i) out[i] = swiglu_oai(gate[i], up[i]);
      return;
  }
  TC_CHECK(false, "ffn_activation: unknown Activation");
}

float alibi_slope(float max_bias, int64_t n_head, int64_t h) {
  const auto n2 = static_cast<int64_t>(1) << static_cast<int>(std::floor(std::log2(static_cast<double>(n_head))));
  const float m0 = powf(2.0f, -max_bias / static_cast<float>(n2));
  const float m1 = powf(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
  return h < n2 ? powf(m0, static_cast<float>(h + 1)) : powf(m1, static_cast<float>(2 * (h - n2) + 1));
}

void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* yr = y + r * n;
    for (int64_t i = 0; i < n; ++i) yr[i] += bias[i];
  }
}

void scale(float* x, int64_t n, float s) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void softcap(float* x, int64_t n, float cap) {
  TC_CHECK(cap > 0.0f, "softcap: the cap must be positive");
  // As llama.cpp's graph: ggml_scale by 1/cap, ggml_tanh, ggml_scale by cap.
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

void store_f16(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

void store_kv(const float* src, int64_t n_rows, int64_t row_len, DType type, void* dst) {
  TC_CHECK(is_kv_dtype(type), "store_kv: a KV cache holds f16 or q8_0 values");
  if (type == DType::F16) return store_f16(src, n_rows * row_len, static_cast<uint16_t*>(dst));
  TC_CHECK(row_len % kQK8_0 == 0, "store_kv: q8_0 rows must be whole blocks of 32 values");
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  const int64_t n_blocks = n_rows * row_len / kQK8_0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQK8_0;
    if (std::all_of(x, x + kQK8_0, [](float f) { return std::isfinite(f); })) {
      quantize_row(DType::Q8_0, x, blocks + b, kQK8_0);
    } else {
      blocks[b].d = f32_to_f16(std::numeric_limits<float>::quiet_NaN());
      std::fill(std::begin(blocks[b].qs), std::end(blocks[b].qs), int8_t{0});
    }
  }
}

}  // namespace tc::kernels
