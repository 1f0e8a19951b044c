// The float64 forward pass of reference_ffn.h: whole-sequence loops, layer by
// layer, causal softmax attention with GQA and llama.cpp's pairwise RoPE.
#include "tests/profiler/reference_ffn.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quantize.h"

namespace tc::test {
namespace {

using Rows = std::vector<std::vector<double>>;  // [rows][cols]

// A weight as double rows (GGUF ne = {cols, rows}).
Rows weight(const gguf::GgufFile& file, const std::string& name) {
  const auto& info = file.tensor(name);
  const int64_t cols = info.ne[0];
  const int64_t rows = info.n_rows();
  const auto bytes = file.tensor_data(info);
  const int64_t stride = kernels::row_bytes(info.dtype, cols);
  Rows out(static_cast<size_t>(rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(info.dtype, bytes.data() + r * stride, row.data(), cols);
    out[static_cast<size_t>(r)].assign(row.begin(), row.end());
  }
  return out;
}

std::vector<double> mul(const Rows& w, const std::vector<double>& x) {
  std::vector<double> y(w.size(), 0.0);
  for (size_t r = 0; r < w.size(); ++r) {
    for (size_t c = 0; c < x.size(); ++c) y[r] += w[r][c] * x[c];
  }
  return y;
}

std::vector<double> norm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double mean_sq = 0;
  for (const double v : x) mean_sq += v * v / static_cast<double>(x.size());
  const double k = 1.0 / std::sqrt(mean_sq + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * k * w[i];
  return y;
}

void rotate(std::vector<double>& v, const model::ModelSpec& s, int64_t n_heads, int64_t pos) {
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < s.n_rot; i += 2) {
      const double angle = static_cast<double>(pos) * s.rope_freq_scale *
                           std::pow(s.rope_freq_base, -static_cast<double>(i) / static_cast<double>(s.n_rot));
      double& a = v[static_cast<size_t>(h * s.head_dim + i)];
      double& b = v[static_cast<size_t>(h * s.head_dim + i + 1)];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(angle) - b0 * std::sin(angle);
      b = a0 * std::sin(angle) + b0 * std::cos(angle);
    }
  }
}

double to_f16(double v) { return kernels::f16_to_f32(kernels::f32_to_f16(static_cast<float>(v))); }

}  // namespace

FfnPreActivations reference_ffn_pre_activations(const gguf::GgufFile& file, const model::ModelSpec& s,
                                                const std::vector<text::TokenId>& tokens) {
  const size_t n = tokens.size();
  const Rows embd = weight(file, "token_embd.weight");
  Rows x;
  for (const auto t : tokens) x.push_back(embd[static_cast<size_t>(t)]);

  FfnPreActivations out;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    auto w = [&](const char* t) { return weight(file, model::layer_tensor_name(l, t)); };
    const auto attn_norm = w("attn_norm")[0];
    const auto ffn_norm = w("ffn_norm")[0];
    const Rows wq = w("attn_q"), wk = w("attn_k"), wv = w("attn_v"), wo = w("attn_output");
    const Rows wg = w("ffn_gate"), wu = w("ffn_up"), wd = w("ffn_down");

    Rows q(n), k(n), v(n);
    for (size_t p = 0; p < n; ++p) {
      const auto h = norm(x[p], attn_norm, s.rms_eps);
      q[p] = mul(wq, h);
      k[p] = mul(wk, h);
      v[p] = mul(wv, h);
      rotate(q[p], s, s.n_head, static_cast<int64_t>(p));
      rotate(k[p], s, s.n_head_kv, static_cast<int64_t>(p));
      std::transform(k[p].begin(), k[p].end(), k[p].begin(), to_f16);
      std::transform(v[p].begin(), v[p].end(), v[p].begin(), to_f16);
    }
    // Attention for every position first (it reads the layer's input), then the FFN.
    for (size_t p = 0; p < n; ++p) {
      std::vector<double> mixed(static_cast<size_t>(s.n_embd), 0.0);
      for (int64_t h = 0; h < s.n_head; ++h) {
        const size_t qo = static_cast<size_t>(h * s.head_dim);
        const size_t ko = static_cast<size_t>((h / (s.n_head / s.n_head_kv)) * s.head_dim);
        std::vector<double> weights(p + 1);
        for (size_t j = 0; j <= p; ++j) {
          double dot = 0;
          for (size_t d = 0; d < static_cast<size_t>(s.head_dim); ++d) dot += q[p][qo + d] * k[j][ko + d];
          weights[j] = dot / std::sqrt(static_cast<double>(s.head_dim));
        }
        const double top = *std::max_element(weights.begin(), weights.end());
        double sum = 0;
        for (auto& e : weights) sum += (e = std::exp(e - top));
        for (size_t j = 0; j <= p; ++j) {
          for (size_t d = 0; d < static_cast<size_t>(s.head_dim); ++d) mixed[qo + d] += weights[j] / sum * v[j][ko + d];
        }
      }
      const auto o = mul(wo, mixed);
      for (size_t i = 0; i < o.size(); ++i) x[p][i] += o[i];
    }
    out.ffn_in.push_back(x);
    out.gate.emplace_back(n);
    out.up.emplace_back(n);
    for (size_t p = 0; p < n; ++p) {
      const auto h = norm(x[p], ffn_norm, s.rms_eps);
      auto g = mul(wg, h);
      auto u = mul(wu, h);
      std::vector<double> a(g.size());
      for (size_t i = 0; i < g.size(); ++i) {
        const double rg = std::max(g[i], 0.0);
        switch (s.ffn_form) {
          case model::FfnForm::SwiGLU: a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i]; break;
          case model::FfnForm::ReGLU: a[i] = rg * u[i]; break;
          case model::FfnForm::DReLU: a[i] = rg * std::max(u[i], 0.0); break;
          default: throw std::invalid_argument("reference_ffn: llama's gated forms only");
        }
      }
      const auto d = mul(wd, a);
      for (size_t i = 0; i < d.size(); ++i) x[p][i] += d[i];
      out.gate.back()[p] = std::move(g);
      out.up.back()[p] = std::move(u);
    }
  }
  return out;
}

}  // namespace tc::test
