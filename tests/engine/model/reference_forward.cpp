// The float64 reference forward pass: direct loops over the model's
// equations, one position at a time, full causal attention each time.
#include "tests/engine/model/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quantize.h"

namespace tc::test {

Matrix load_matrix(const gguf::GgufFile& file, const std::string& name) {
  const auto& info = file.tensor(name);
  const auto data = file.tensor_data(info);
  const int64_t cols = info.ne[0];
  int64_t rows = 1;  // a 3-D tensor's matrices stacked: [ne[2] * ne[1]][ne[0]]
  for (size_t d = 1; d < info.ne.size(); ++d) rows *= info.ne[d];
  const int64_t row_bytes = kernels::row_bytes(info.dtype, cols);
  Matrix m(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
  std::vector<float> tmp(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, tmp.data(), cols);
    std::copy(tmp.begin(), tmp.end(), m[static_cast<size_t>(r)].begin());
  }
  return m;
}

std::vector<double> matvec(const Matrix& w, const std::vector<double>& x) {
  std::vector<double> y(w.size());
  for (size_t r = 0; r < w.size(); ++r) {
    double s = 0;
    for (size_t c = 0; c < x.size(); ++c) s += w[r][c] * x[c];
    y[r] = s;
  }
  return y;
}

namespace {

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

// Rotates adjacent pairs of each head (llama.cpp's normal mode).
void rope(std::vector<double>& x, int64_t n_head, int64_t head_dim, int64_t n_rot, int64_t pos, double base,
          double scale) {
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < n_rot / 2; ++i) {
      const double theta = static_cast<double>(pos) * scale * std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
      const size_t a = static_cast<size_t>(h * head_dim + 2 * i);
      const double x0 = x[a], x1 = x[a + 1];
      x[a] = x0 * std::cos(theta) - x1 * std::sin(theta);
      x[a + 1] = x0 * std::sin(theta) + x1 * std::cos(theta);
    }
  }
}

double round_f16(double v) { return kernels::f16_to_f32(kernels::f32_to_f16(static_cast<float>(v))); }

// A cache row as the cache holds it: each value rounded to f16, or the row
// (whole 32-value blocks) quantized to q8_0 and read back.
void round_kv_row(std::vector<double>& row, kernels::DType type) {
  if (type != kernels::DType::Q8_0) {
    for (auto& e : row) e = round_f16(e);
    return;
  }
  const auto n = static_cast<int64_t>(row.size());
  std::vector<float> f(row.begin(), row.end());
  std::vector<unsigned char> q(static_cast<size_t>(kernels::row_bytes(kernels::DType::Q8_0, n)));
  kernels::quantize_row(kernels::DType::Q8_0, f.data(), q.data(), n);
  kernels::dequantize_row(kernels::DType::Q8_0, q.data(), f.data(), n);
  std::copy(f.begin(), f.end(), row.begin());
}

Matrix transpose(const Matrix& m) {
  Matrix t(m.empty() ? 0 : m[0].size(), std::vector<double>(m.size()));
  for (size_t r = 0; r < m.size(); ++r) {
    for (size_t c = 0; c < m[r].size(); ++c) t[c][r] = m[r][c];
  }
  return t;
}

double silu_times(double g, double u) { return g / (1.0 + std::exp(-g)) * u; }

// A mixture of experts' layer weights: the router [n_expert][n_embd] and the
// experts' matrices stacked, expert e's rows at e * n_ff (gate, up) and
// e * n_embd (down).
struct Experts {
  Matrix router, gate, up, down;
};

// softmax over the router's logits, the k most probable experts, their
// probabilities renormalised, sum of p_e * down_e(silu(gate_e h) * up_e h).
std::vector<double> moe_ffn(const Experts& w, const model::ModelSpec& s, const std::vector<double>& h,
                            double* min_gap) {
  const auto logits = matvec(w.router, h);
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t e = 0; e < p.size(); ++e) total += (p[e] = std::exp(logits[e] - max));
  for (double& v : p) v /= total;
  std::vector<size_t> order(p.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  const auto k = static_cast<size_t>(s.n_expert_used);
  if (k < order.size() && min_gap != nullptr) *min_gap = std::min(*min_gap, p[order[k - 1]] - p[order[k]]);
  double chosen = 0;
  for (size_t i = 0; i < k; ++i) chosen += p[order[i]];
  std::vector<double> y(static_cast<size_t>(s.n_embd), 0.0);
  const auto n_ff = static_cast<size_t>(s.n_ff), n_embd = static_cast<size_t>(s.n_embd);
  for (size_t i = 0; i < k; ++i) {
    const size_t e = order[i];
    std::vector<double> a(n_ff);
    for (size_t j = 0; j < n_ff; ++j) {
      double g = 0, u = 0;
      for (size_t c = 0; c < h.size(); ++c) {
        g += w.gate[e * n_ff + j][c] * h[c];
        u += w.up[e * n_ff + j][c] * h[c];
      }
      a[j] = silu_times(g, u);
    }
    for (size_t r = 0; r < n_embd; ++r) {
      double d = 0;
      for (size_t j = 0; j < n_ff; ++j) d += w.down[e * n_embd + r][j] * a[j];
      y[r] += p[e] / chosen * d;
    }
  }
  return y;
}

}  // namespace

std::vector<std::vector<double>> reference_logits(const gguf::GgufFile& file, const model::ModelSpec& s,
                                                  const std::vector<text::TokenId>& tokens,
                                                  const FfnObserver& observe_ffn, const NeuronMask& mask,
                                                  std::vector<double>* router_gaps, kernels::KvCacheTypes kv_types) {
  auto layer_name = [](int64_t l, const char* t) { return model::layer_tensor_name(l, t); };
  const Matrix embd = load_matrix(file, "token_embd.weight");
  const Matrix out_w = s.tied_embeddings ? embd : load_matrix(file, "output.weight");
  const std::vector<double> out_norm = load_matrix(file, "output_norm.weight")[0];
  const int64_t group = s.n_head / s.n_head_kv;

  if (router_gaps != nullptr) router_gaps->assign(tokens.size(), 1.0);
  std::vector<std::vector<double>> x;  // residual per position
  for (auto id : tokens) x.push_back(embd[static_cast<size_t>(id)]);
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const auto attn_norm = load_matrix(file, layer_name(l, "attn_norm"))[0];
    const auto wq = load_matrix(file, layer_name(l, "attn_q"));
    const auto wk = load_matrix(file, layer_name(l, "attn_k"));
    const auto wv = load_matrix(file, layer_name(l, "attn_v"));
    const auto wo = load_matrix(file, layer_name(l, "attn_output"));
    const auto ffn_norm = load_matrix(file, layer_name(l, "ffn_norm"))[0];
    const bool moe = s.has_experts();
    Experts experts;
    Matrix wg, wu, wd;
    if (moe) {
      experts = {load_matrix(file, layer_name(l, "ffn_gate_inp")), load_matrix(file, layer_name(l, "ffn_gate_exps")),
                 load_matrix(file, layer_name(l, "ffn_up_exps")), load_matrix(file, layer_name(l, "ffn_down_exps"))};
    } else {
      if (model::is_gated(s.ffn_form)) wg = load_matrix(file, layer_name(l, "ffn_gate"));
      wu = load_matrix(file, layer_name(l, "ffn_up"));
      // ffn_down_t row i = neuron i: the transpose of ffn_down (row j = output j).
      wd = s.sparse_layout ? transpose(load_matrix(file, layer_name(l, "ffn_down_t")))
                           : load_matrix(file, layer_name(l, "ffn_down"));
    }

    std::vector<std::vector<double>> q(tokens.size()), k(tokens.size()), v(tokens.size());
    for (size_t p = 0; p < tokens.size(); ++p) {
      const auto h = rms_norm(x[p], attn_norm, s.rms_eps);
      q[p] = matvec(wq, h);
      k[p] = matvec(wk, h);
      v[p] = matvec(wv, h);
      rope(q[p], s.n_head, s.head_dim, s.n_rot, static_cast<int64_t>(p), s.rope_freq_base, s.rope_freq_scale);
      rope(k[p], s.n_head_kv, s.head_dim, s.n_rot, static_cast<int64_t>(p), s.rope_freq_base, s.rope_freq_scale);
      round_kv_row(k[p], kv_types.k);
      round_kv_row(v[p], kv_types.v);
    }
    for (size_t p = 0; p < tokens.size(); ++p) {
      std::vector<double> attn(static_cast<size_t>(s.n_embd), 0.0);
      for (int64_t h = 0; h < s.n_head; ++h) {
        const int64_t kvh = h / group;
        std::vector<double> scores(p + 1);
        double max_score = -1e300;
        for (size_t j = 0; j <= p; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.head_dim; ++d) {
            dot += q[p][static_cast<size_t>(h * s.head_dim + d)] * k[j][static_cast<size_t>(kvh * s.head_dim + d)];
          }
          scores[j] = dot / std::sqrt(static_cast<double>(s.head_dim));
          max_score = std::max(max_score, scores[j]);
        }
        double total = 0;
        for (auto& sc : scores) total += (sc = std::exp(sc - max_score));
        for (size_t j = 0; j <= p; ++j) {
          for (int64_t d = 0; d < s.head_dim; ++d) {
            attn[static_cast<size_t>(h * s.head_dim + d)] +=
                scores[j] / total * v[j][static_cast<size_t>(kvh * s.head_dim + d)];
          }
        }
      }
      const auto o = matvec(wo, attn);
      for (size_t i = 0; i < o.size(); ++i) x[p][i] += o[i];

      const auto h = rms_norm(x[p], ffn_norm, s.rms_eps);
      if (moe) {
        const auto y = moe_ffn(experts, s, h, router_gaps != nullptr ? &(*router_gaps)[p] : nullptr);
        for (size_t i = 0; i < y.size(); ++i) x[p][i] += y[i];
        continue;
      }
      // An ungated FFN's one matrix (ffn_up) takes the gate's place.
      const bool gated = model::is_gated(s.ffn_form);
      auto g = matvec(gated ? wg : wu, h);
      if (observe_ffn) observe_ffn({l, p, x[p], g});
      const std::vector<char> keep = mask ? mask({l, p, x[p], g}) : std::vector<char>{};
      const auto u = gated ? matvec(wu, h) : std::vector<double>{};
      for (size_t i = 0; i < g.size(); ++i) {
        switch (s.ffn_form) {
          case model::FfnForm::SwiGLU: g[i] = silu_times(g[i], u[i]); break;
          case model::FfnForm::ReGLU: g[i] = std::max(g[i], 0.0) * u[i]; break;
          case model::FfnForm::DReLU: g[i] = std::max(g[i], 0.0) * std::max(u[i], 0.0); break;
          case model::FfnForm::Relu: g[i] = std::max(g[i], 0.0); break;
          case model::FfnForm::ReluSquared: g[i] = std::max(g[i], 0.0) * std::max(g[i], 0.0); break;
          default: throw std::invalid_argument("reference_forward: llama's gated forms, relu and relu2 only");
        }
        if (!keep.empty() && keep[i] == 0) g[i] = 0.0;
      }
      const auto d = matvec(wd, g);
      for (size_t i = 0; i < d.size(); ++i) x[p][i] += d[i];
    }
  }
  std::vector<std::vector<double>> logits;
  for (const auto& row : x) logits.push_back(matvec(out_w, rms_norm(row, out_norm, s.rms_eps)));
  return logits;
}

double relative_error(const float* a, const std::vector<double>& b) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(static_cast<double>(a[i]) - b[i]));
    max_ref = std::max(max_ref, std::abs(b[i]));
  }
  return max_diff / max_ref;
}

}  // namespace tc::test
