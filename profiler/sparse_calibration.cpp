// make-model's sparse calibration pass (see sparse_model.h): calibration
// tokens run through the layers built so far set each layer's ffn_norm[0],
// per-neuron biases, positional-head scale (with an overlap to plant) and
// quantized-predictor threshold.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "profiler/sparse_model.h"

namespace tc::profiler::planting {
namespace {

// The planted predictor is exact, but a quantized fc1/fc2 rounds its
// scores, and neurons whose gate is just above 0 fall below the threshold.
// The largest threshold <= 0 that keeps kPlantedRecall of the firing
// (token, neuron) pairs of the calibration tokens: the scores of the
// predictor as stored (rounded through its dtype) on the residual x
// entering the FFN, f32 [n_tok, n_embd]; gate f32 [n_tok, n_ff] > 0 = fires.
float quantized_predictor_threshold(const SparseModel& m, int64_t l, const std::vector<float>& x,
                                    const std::vector<float>& gate, int64_t n_tok, ThreadPool& pool) {
  const DType dtype = m.types.predictor;
  auto rounded = [dtype](int64_t n_cols, float* row) {
    std::vector<std::byte> q(static_cast<size_t>(kernels::row_bytes(dtype, n_cols)));
    kernels::quantize_row(dtype, row, q.data(), n_cols);
    kernels::dequantize_row(dtype, q.data(), row, n_cols);
  };
  const int64_t n = m.n_embd, r = m.rank, n_ff = m.n_ff;
  const F32Matrix fc1(r, n, pool, [&](int64_t k, float* out) { m.fc1_row(l, k, out); rounded(n, out); });
  const F32Matrix fc2(n_ff, r, pool, [&](int64_t i, float* out) { m.fc2_row(l, i, out); rounded(r, out); });
  std::vector<float> hidden(static_cast<size_t>(n_tok * r)), score(static_cast<size_t>(n_tok * n_ff));
  kernels::matmul(fc1.tensor, x.data(), n_tok, hidden.data(), pool);
  for (float& h : hidden) h = std::max(h, 0.0f);
  kernels::matmul(fc2.tensor, hidden.data(), n_tok, score.data(), pool);
  std::vector<float> firing;  // scores of the pairs that fire
  for (size_t e = 0; e < gate.size(); ++e) {
    if (gate[e] > 0.0f) firing.push_back(score[e]);
  }
  if (firing.empty()) return 0.0f;
  const auto k = static_cast<size_t>((1.0 - kPlantedRecall) * static_cast<double>(firing.size()));
  std::nth_element(firing.begin(), firing.begin() + static_cast<std::ptrdiff_t>(k), firing.end());
  // Predicted iff score > threshold: just below the k-th smallest keeps it.
  return std::min(0.0f, std::nextafter(firing[k], -std::numeric_limits<float>::infinity()));
}

}  // namespace

// The forward pass over calibration tokens, layer by layer: attention as the
// engine runs it (f16 KV), then the FFN input sets that layer's ffn_norm[0]
// and biases beta before the FFN output moves on to the next layer. Uses the
// unquantized f32 weights: the firing statistics, not the bits, carry over.
void calibrate(SparseModel& m, ThreadPool& pool) {
  const auto& o = m.o;
  const int64_t n = m.n_embd, n_kv = m.n_embd_kv, n_ff = m.n_ff, rp = m.rp;
  const int64_t head_dim = n / o.n_head;
  const int64_t seq_len = std::min({kCalibSeqLen, o.n_ctx, o.sparse.calib_tokens});
  const int64_t n_seq = o.sparse.calib_tokens / seq_len;
  const int64_t n_tok = n_seq * seq_len;
  const float eps = static_cast<float>(o.rms_eps);
  const kernels::RopeParams rope{head_dim, o.rope_freq_base, 1.0};
  const std::vector<double> freq_by_rank = power_law_frequencies(n_ff, o.sparse.active, o.sparse.alpha);

  std::vector<float> x(static_cast<size_t>(n_tok * n));
  std::vector<int32_t> positions(static_cast<size_t>(n_tok));
  Rng token_rng(o.seed, stream_id(Stream::CalibTokens), 0);
  for (int64_t t = 0; t < n_tok; ++t) {
    m.embd_row(static_cast<int64_t>(token_rng.below(static_cast<uint64_t>(o.n_vocab))), x.data() + t * n);
    positions[static_cast<size_t>(t)] = static_cast<int32_t>(t % seq_len);
  }
  std::vector<float> cur(x.size()), q(x.size()), attn(x.size()), tmp(x.size());
  std::vector<float> k(static_cast<size_t>(n_tok * n_kv)), v(k.size());
  std::vector<uint16_t> k16(k.size()), v16(k.size());
  std::vector<float> u(static_cast<size_t>(n_tok * rp)), z(static_cast<size_t>(n_tok * n_ff));
  std::vector<float> gate(z.size()), up(z.size());
  std::vector<uint8_t> fires(z.size());
  std::vector<double> rms(static_cast<size_t>(n_tok));

  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto& plan = m.plan[static_cast<size_t>(l)];
    const Basis& basis = m.basis[static_cast<size_t>(l)];

    // Attention block.
    {
      std::vector<float> attn_norm(static_cast<size_t>(n));
      m.norm_row(Stream::AttnNorm, l, attn_norm.data());
      kernels::rms_norm(x.data(), attn_norm.data(), n_tok, n, eps, cur.data());
      if (m.positional()) {
        // Head 0's q.k at distance 0 is, on average, its amplitude per pair
        // (after attention's 1 / sqrt(head_dim)).
        double bias_in = 0.0;
        for (int64_t t = 0; t < n_tok; ++t) bias_in += std::abs(cur[static_cast<size_t>(t * n + kBiasChannel)]);
        bias_in /= static_cast<double>(n_tok);
        plan.qk_weight = static_cast<float>(
            std::sqrt(m.recency.amplitude * std::sqrt(static_cast<double>(head_dim))) / bias_in);
      }
      auto qk_rows = [&](Stream s, int64_t n_rows) {
        return F32Matrix(n_rows, n, pool, [&](int64_t r, float* out) { m.qk_row(s, l, r, out); });
      };
      kernels::matmul(qk_rows(Stream::AttnQ, n).tensor, cur.data(), n_tok, q.data(), pool);
      kernels::matmul(qk_rows(Stream::AttnK, n_kv).tensor, cur.data(), n_tok, k.data(), pool);
      {
        const F32Matrix wv(n_kv, n, pool,
                           [&](int64_t r, float* out) { m.random(Stream::AttnV, l, r, out, n, m.sd_embd_in); });
        kernels::matmul(wv.tensor, cur.data(), n_tok, v.data(), pool);
      }
      kernels::rope(q.data(), n_tok, o.n_head, head_dim, positions.data(), rope);
      kernels::rope(k.data(), n_tok, o.n_head_kv, head_dim, positions.data(), rope);
      kernels::store_f16(k.data(), static_cast<int64_t>(k.size()), k16.data());
      kernels::store_f16(v.data(), static_cast<int64_t>(v.size()), v16.data());
      for (int64_t s = 0; s < n_seq; ++s) {
        const int64_t t0 = s * seq_len;
        kernels::attention(q.data() + t0 * n, k16.data() + t0 * n_kv, v16.data() + t0 * n_kv, seq_len, seq_len,
                           o.n_head, o.n_head_kv, head_dim, positions.data() + t0, attn.data() + t0 * n, {}, pool);
      }
    }

    // A' without its bias column (u[0] = 0 below), and which neuron gets
    // which planted frequency: the same for every residual tried.
    const F32Matrix coeffs(n_ff, rp, pool, [&](int64_t i, float* out) { m.coeff_row(l, i, out); });
    std::vector<int64_t> rank_of(static_cast<size_t>(n_ff));
    std::iota(rank_of.begin(), rank_of.end(), int64_t{0});
    Rng perm_rng(o.seed, stream_id(Stream::Permutation, l), 0);
    for (int64_t i = n_ff - 1; i > 0; --i) {
      std::swap(rank_of[static_cast<size_t>(i)], rank_of[static_cast<size_t>(perm_rng.below(static_cast<uint64_t>(i + 1)))]);
    }

    // The FFN planted on the residual `xin` entering it (ffn_norm, beta, the
    // gate pre-activations); returns the calibration tokens' consecutive overlap.
    auto plant_ffn = [&](const std::vector<float>& xin) {
      // FFN input: the bias channel's norm weight makes its normalised value
      // about sqrt(n_embd), so beta comes out on the scale of the other gate
      // entries.
      plan.ffn_norm.resize(static_cast<size_t>(n));
      m.norm_row(Stream::FfnNorm, l, plan.ffn_norm.data());
      double rms_sum = 0.0;
      for (int64_t t = 0; t < n_tok; ++t) {
        double ss = 0.0;
        for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xin[t * n + j]) * xin[t * n + j];
        rms[static_cast<size_t>(t)] = std::sqrt(ss / static_cast<double>(n) + o.rms_eps);
        rms_sum += rms[static_cast<size_t>(t)];
      }
      const double bias_in = kBiasChannelValue * m.sd_embd;  // x[:, 0], constant through the layers
      plan.ffn_norm[kBiasChannel] =
          static_cast<float>(std::sqrt(static_cast<double>(n)) * rms_sum / static_cast<double>(n_tok) / bias_in);
      const double bias_scale = bias_in * plan.ffn_norm[kBiasChannel];  // (x o ffn_norm)[0]

      // z[t, i] = A'_i . B''(x_t o ffn_norm) without the bias term.
      pool.parallel_for(n_tok, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> y(static_cast<size_t>(n)), scratch(static_cast<size_t>(n));
        for (int64_t t = begin; t < end; ++t) {
          for (int64_t j = 0; j < n; ++j) y[static_cast<size_t>(j)] = xin[t * n + j] * plan.ffn_norm[static_cast<size_t>(j)];
          basis.project(y.data(), n, u.data() + t * rp, scratch.data());
        }
      });
      kernels::matmul(coeffs.tensor, u.data(), n_tok, z.data(), pool);

      // Neuron i fires when beta_i * bias_scale + z_i > 0, i.e. when
      // beta_i > s_i = -z_i / bias_scale. With s_i ~ N(mu, sd) over tokens,
      // beta_i = mu + sd * Phi^-1(f_i) fires on a fraction f_i.
      plan.beta.resize(static_cast<size_t>(n_ff));
      pool.parallel_for(n_ff, 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          double sum = 0.0, sum2 = 0.0;
          for (int64_t t = 0; t < n_tok; ++t) {
            const double s = -z[t * n_ff + i] / bias_scale;
            sum += s;
            sum2 += s * s;
          }
          const double mu = sum / static_cast<double>(n_tok);
          const double sd = std::sqrt(std::max(sum2 / static_cast<double>(n_tok) - mu * mu, 0.0));
          const double f = freq_by_rank[static_cast<size_t>(rank_of[static_cast<size_t>(i)])];
          plan.beta[static_cast<size_t>(i)] = static_cast<float>(mu + sd * normal_quantile(f));
        }
      });

      // The gate pre-activations with the planted biases, and which neurons fire.
      int64_t n_active = 0;
      for (int64_t t = 0; t < n_tok; ++t) {
        for (int64_t i = 0; i < n_ff; ++i) {
          const double g = (plan.beta[static_cast<size_t>(i)] * bias_scale + z[t * n_ff + i]) / rms[static_cast<size_t>(t)];
          gate[static_cast<size_t>(t * n_ff + i)] = static_cast<float>(g);
          fires[static_cast<size_t>(t * n_ff + i)] = g > 0.0 ? 1 : 0;
          n_active += g > 0.0 ? 1 : 0;
        }
      }
      plan.calib_active = static_cast<double>(n_active) / static_cast<double>(n_tok * n_ff);
      plan.calib_overlap = consecutive_overlap(fires, n_tok, n_ff, seq_len);
      return plan.calib_overlap;
    };

    // Attention output, then the FFN planted on the residual it leaves.
    if (!m.positional()) {
      const F32Matrix wo(n, n, pool, [&](int64_t j, float* out) { m.attn_output_row(l, j, out); });
      kernels::matmul(wo.tensor, attn.data(), n_tok, tmp.data(), pool);
      for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
      plant_ffn(x);
    } else {
      // x + the other heads' output + scale * head 0's as drawn (attn_output
      // at head0_scale 1): the overlap grows with the scale, and bisection
      // finds the target's.
      std::vector<float> all(x.size()), head0(x.size()), attn0(x.size(), 0.0f), xs(x.size());
      for (int64_t t = 0; t < n_tok; ++t) std::copy_n(attn.data() + t * n, head_dim, attn0.data() + t * n);
      {
        const F32Matrix wo(n, n, pool, [&](int64_t j, float* out) { m.attn_output_row(l, j, out); });
        kernels::matmul(wo.tensor, attn.data(), n_tok, all.data(), pool);
        kernels::matmul(wo.tensor, attn0.data(), n_tok, head0.data(), pool);
      }
      auto overlap_at = [&](double scale) {
        for (size_t i = 0; i < x.size(); ++i) {
          xs[i] = x[i] + (all[i] - head0[i]) + static_cast<float>(scale) * head0[i];
        }
        return plant_ffn(xs);
      };
      const double target = o.sparse.overlap;
      double lo = 0.0, hi = kMaxHead0Scale, best = 0.0;
      if (overlap_at(lo) < target) {
        best = hi;
        if (overlap_at(hi) > target) {
          for (int it = 0; it < 16 && hi - lo > 1e-3; ++it) {
            const double mid = 0.5 * (lo + hi);
            const double got = overlap_at(mid);
            if (std::abs(got - target) < 0.002) lo = hi = mid;
            else (got < target ? lo : hi) = mid;
          }
          best = 0.5 * (lo + hi);
        }
      }
      plan.head0_scale = static_cast<float>(best);
      overlap_at(best);
      x.swap(xs);
    }
    if (o.sparse.write_predictors && kernels::dtype_traits(m.types.predictor).is_quantized) {
      plan.threshold = quantized_predictor_threshold(m, l, x, gate, n_tok, pool);
    }
    if (o.sparse.calibration_progress) o.sparse.calibration_progress(l + 1, o.n_layer);
    if (l + 1 == o.n_layer) break;  // the last FFN output feeds only the head
    kernels::rms_norm(x.data(), plan.ffn_norm.data(), n_tok, n, eps, cur.data());
    {
      const F32Matrix w_up(n_ff, n, pool, [&](int64_t i, float* out) { m.random(Stream::Up, l, i, out, n, m.sd_embd_in); });
      kernels::matmul(w_up.tensor, cur.data(), n_tok, up.data(), pool);
    }
    const auto act = o.ffn_form == model::FfnForm::DReLU ? kernels::Activation::DReLU : kernels::Activation::ReGLU;
    kernels::ffn_activation(act, gate.data(), up.data(), static_cast<int64_t>(gate.size()), gate.data());
    {
      const F32Matrix w_down(n, n_ff, pool, [&](int64_t j, float* out) { m.down_row(l, j, out); });
      kernels::matmul(w_down.tensor, gate.data(), n_tok, tmp.data(), pool);
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] += tmp[i];
  }
}

}  // namespace tc::profiler::planting
