// Forward pass and Adam training of the low-rank predictor MLP. Every
// product goes through kernels::matmul (f32 weights), which gives the same
// bits for any thread count; the elementwise steps are split by index.
#include "profiler/predictor_mlp.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "kernels/cpu/matmul.h"

namespace tc::profiler {
namespace {

using kernels::DType;
using kernels::Tensor;

// A packed f32 matrix of n_rows rows of n_cols as a matmul weight.
Tensor f32_matrix(const float* data, int64_t n_cols, int64_t n_rows) {
  return Tensor::matrix(data, DType::F32, n_cols, n_rows);
}

// out [n_cols, n_rows] = in [n_rows, n_cols] transposed.
void transpose(const float* in, int64_t n_rows, int64_t n_cols, float* out) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < n_rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < n_cols; c0 += kTile) {
      const int64_t r1 = std::min(n_rows, r0 + kTile), c1 = std::min(n_cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) out[c * n_rows + r] = in[r * n_cols + c];
      }
    }
  }
}

struct Adam {
  std::vector<float> m, v;
  explicit Adam(size_t n) : m(n, 0.0f), v(n, 0.0f) {}
  void step(float* w, const float* g, size_t n, float lr, int64_t t, kernels::ThreadPool& pool) {
    constexpr float kB1 = 0.9f, kB2 = 0.999f, kEps = 1e-8f;
    const float c1 = 1.0f - std::pow(kB1, static_cast<float>(t));
    const float c2 = 1.0f - std::pow(kB2, static_cast<float>(t));
    pool.parallel_for(static_cast<int64_t>(n), 256, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        m[i] = kB1 * m[i] + (1.0f - kB1) * g[i];
        v[i] = kB2 * v[i] + (1.0f - kB2) * g[i] * g[i];
        w[i] -= lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + kEps);
      }
    });
  }
};

// Copies `init`'s hidden units into the first units of `mlp` (whose inputs
// are scaled by `scale`). ReLU is positively homogeneous, so each unit's
// fc1 row may be scaled by a and its fc2 column by 1 / a without changing
// a score: the rows get the norm of the He init (sqrt 2), the scale Adam's
// fixed-size steps suit, and fc2 a gain that puts the scores of the first
// training samples at an RMS of `logit_rms`.
void start_from(const LowRankMlp& init, const PredictorSamples& samples, int64_t layer,
                std::span<const int64_t> train, const std::vector<float>& scale, float logit_rms,
                kernels::ThreadPool& pool, LowRankMlp& mlp) {
  const int64_t n_embd = samples.n_embd, n_ff = samples.n_ff, r = mlp.rank, ri = init.rank;
  if (ri > r) throw std::invalid_argument("predictor training: the initial predictor has a larger rank");
  const auto probe = train.first(std::min<size_t>(train.size(), 256));
  std::vector<float> scores(probe.size() * static_cast<size_t>(n_ff));
  predictor_scores(init, samples, layer, probe, scores.data(), pool);
  double ss = 0.0;
  for (const float v : scores) ss += static_cast<double>(v) * v;
  const double rms = std::sqrt(ss / static_cast<double>(std::max<size_t>(scores.size(), 1)));
  const double gain = rms > 0.0 ? logit_rms / rms : 1.0;
  for (int64_t k = 0; k < ri; ++k) {
    double norm2 = 0.0;
    for (int64_t j = 0; j < n_embd; ++j) {
      const double w = init.fc1[k * n_embd + j] / scale[j];
      norm2 += w * w;
    }
    const double a = norm2 > 0.0 ? std::sqrt(2.0 / norm2) : 1.0;
    for (int64_t j = 0; j < n_embd; ++j) mlp.fc1[k * n_embd + j] = static_cast<float>(a * init.fc1[k * n_embd + j] / scale[j]);
    for (int64_t i = 0; i < n_ff; ++i) mlp.fc2[i * r + k] = static_cast<float>(gain / a * init.fc2[i * ri + k]);
  }
  for (int64_t i = 0; i < n_ff; ++i) {
    for (int64_t k = ri; k < r; ++k) mlp.fc2[i * r + k] *= 0.01f;
  }
}

}  // namespace

double standard_normal(std::mt19937_64& rng) {
  const double u1 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void predictor_scores(const LowRankMlp& mlp, const PredictorSamples& samples, int64_t layer,
                      std::span<const int64_t> idx, float* scores, kernels::ThreadPool& pool) {
  const int64_t n_embd = samples.n_embd, n_ff = samples.n_ff, r = mlp.rank;
  constexpr int64_t kBlock = 512;
  std::vector<float> x(static_cast<size_t>(kBlock * n_embd)), h(static_cast<size_t>(kBlock * r));
  const Tensor fc1 = f32_matrix(mlp.fc1.data(), n_embd, r);
  const Tensor fc2 = f32_matrix(mlp.fc2.data(), r, n_ff);
  const auto n = static_cast<int64_t>(idx.size());
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t nb = std::min(kBlock, n - b);
    for (int64_t t = 0; t < nb; ++t) {
      std::copy_n(samples.x_row(layer, idx[static_cast<size_t>(b + t)]), n_embd, x.data() + t * n_embd);
    }
    kernels::matmul(fc1, x.data(), nb, h.data(), pool);
    for (int64_t i = 0; i < nb * r; ++i) h[i] = std::max(h[i], 0.0f);
    kernels::matmul(fc2, h.data(), nb, scores + b * n_ff, pool);
  }
}

LowRankMlp train_low_rank_mlp(const PredictorSamples& samples, int64_t layer, std::span<const int64_t> train,
                              const MlpTrainOptions& o, kernels::ThreadPool& pool, const MlpProgress& progress,
                              const LowRankMlp* init) {
  const int64_t n_embd = samples.n_embd, n_ff = samples.n_ff, r = o.rank;
  const auto n_train = static_cast<int64_t>(train.size());
  if (r < 1 || o.epochs < 1 || o.batch < 1 || !(o.learning_rate > 0) || !(o.pos_weight > 0)) {
    throw std::invalid_argument("predictor training: rank, epochs, batch, learning rate and positive weight must be > 0");
  }
  if (n_train < 1) throw std::invalid_argument("predictor training: no training samples");

  // Per-channel input scale: unit RMS over the training samples, floored
  // for (nearly) silent channels.
  std::vector<double> ss(static_cast<size_t>(n_embd), 0.0);
  for (const int64_t s : train) {
    const float* x = samples.x_row(layer, s);
    for (int64_t j = 0; j < n_embd; ++j) ss[j] += static_cast<double>(x[j]) * x[j];
  }
  std::vector<float> scale(static_cast<size_t>(n_embd));
  double max_rms = 0.0;
  for (auto& v : ss) max_rms = std::max(max_rms, v = std::sqrt(v / static_cast<double>(n_train)));
  for (int64_t j = 0; j < n_embd; ++j) {
    const double floor = std::max(1e-3 * max_rms, 1e-20);
    scale[j] = static_cast<float>(1.0 / std::max(ss[j], floor));
  }

  // He init for fc1 (unit inputs), small fc2.
  std::mt19937_64 rng(o.seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(layer + 1)) ^
                      static_cast<uint64_t>(r));
  LowRankMlp mlp{r, std::vector<float>(static_cast<size_t>(r * n_embd)), std::vector<float>(static_cast<size_t>(n_ff * r))};
  const float sd1 = std::sqrt(2.0f / static_cast<float>(n_embd)), sd2 = 1.0f / std::sqrt(static_cast<float>(r));
  for (auto& w : mlp.fc1) w = sd1 * static_cast<float>(standard_normal(rng));
  for (auto& w : mlp.fc2) w = sd2 * static_cast<float>(standard_normal(rng));
  if (init != nullptr) start_from(*init, samples, layer, train, scale, o.init_logit_rms, pool, mlp);

  const int64_t batch = std::min(o.batch, n_train);
  const int64_t steps_per_epoch = n_train / batch;
  const int64_t n_steps = steps_per_epoch * o.epochs;
  const int64_t warmup = std::max<int64_t>(1, n_steps / 20);
  const auto sz = [](int64_t n) { return static_cast<size_t>(n); };
  std::vector<float> xb(sz(batch * n_embd)), xt(xb.size());
  std::vector<float> hpre(sz(batch * r)), h(hpre.size()), ht(hpre.size()), dh(hpre.size()), dht(hpre.size());
  std::vector<float> s(sz(batch * n_ff)), g(s.size()), gt(s.size());
  std::vector<float> w2t(mlp.fc2.size()), d1(mlp.fc1.size()), d2(mlp.fc2.size());
  std::vector<uint8_t> y(s.size());
  Adam adam1(mlp.fc1.size()), adam2(mlp.fc2.size());
  std::vector<int64_t> order(train.begin(), train.end());
  const float inv_batch = 1.0f / static_cast<float>(batch);

  int64_t step = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    for (int64_t i = n_train - 1; i > 0; --i) {
      std::swap(order[sz(i)], order[sz(static_cast<int64_t>(draw_below(rng(), static_cast<uint64_t>(i + 1))))]);
    }
    for (int64_t e = 0; e < steps_per_epoch; ++e, ++step) {
      for (int64_t t = 0; t < batch; ++t) {
        const int64_t sample = order[sz(e * batch + t)];
        const float* x = samples.x_row(layer, sample);
        for (int64_t j = 0; j < n_embd; ++j) xb[sz(t * n_embd + j)] = x[j] * scale[sz(j)];
        const uint64_t* bits = samples.fired_row(layer, sample);
        for (int64_t i = 0; i < n_ff; ++i) y[sz(t * n_ff + i)] = (bits[i / 64] >> (i % 64)) & 1u;
      }
      // Forward.
      kernels::matmul(f32_matrix(mlp.fc1.data(), n_embd, r), xb.data(), batch, hpre.data(), pool);
      for (size_t i = 0; i < h.size(); ++i) h[i] = std::max(hpre[i], 0.0f);
      kernels::matmul(f32_matrix(mlp.fc2.data(), r, n_ff), h.data(), batch, s.data(), pool);
      // dLoss/dscore, mean over the batch: (1 - y) p - w y (1 - p).
      pool.parallel_for(static_cast<int64_t>(s.size()), 1024, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const float p = 1.0f / (1.0f + std::exp(-s[i]));
          g[i] = (y[i] ? -o.pos_weight * (1.0f - p) : p) * inv_batch;
        }
      });
      // dfc2 [n_ff, r]: (i, k) = sum_t g[t, i] h[t, k].
      transpose(g.data(), batch, n_ff, gt.data());
      transpose(h.data(), batch, r, ht.data());
      kernels::matmul(f32_matrix(ht.data(), batch, r), gt.data(), n_ff, d2.data(), pool);
      // dh [batch, r] = g fc2, through the relu.
      transpose(mlp.fc2.data(), n_ff, r, w2t.data());
      kernels::matmul(f32_matrix(w2t.data(), n_ff, r), g.data(), batch, dh.data(), pool);
      for (size_t i = 0; i < dh.size(); ++i) dh[i] = hpre[i] > 0.0f ? dh[i] : 0.0f;
      // dfc1 [r, n_embd]: (k, j) = sum_t dh[t, k] x[t, j].
      transpose(dh.data(), batch, r, dht.data());
      transpose(xb.data(), batch, n_embd, xt.data());
      kernels::matmul(f32_matrix(xt.data(), batch, n_embd), dht.data(), r, d1.data(), pool);

      const double frac = static_cast<double>(step) / static_cast<double>(n_steps);
      const double lr = o.learning_rate * std::min(1.0, static_cast<double>(step + 1) / static_cast<double>(warmup)) *
                        (0.1 + 0.45 * (1.0 + std::cos(std::numbers::pi * frac)));
      adam1.step(mlp.fc1.data(), d1.data(), d1.size(), static_cast<float>(lr), step + 1, pool);
      adam2.step(mlp.fc2.data(), d2.data(), d2.size(), static_cast<float>(lr), step + 1, pool);
      if (progress) progress(step + 1, n_steps);
    }
  }
  // Fold the input scale into fc1: fc1 · (scale o x) = (fc1 diag(scale)) · x.
  for (int64_t k = 0; k < r; ++k) {
    for (int64_t j = 0; j < n_embd; ++j) mlp.fc1[sz(k * n_embd + j)] *= scale[sz(j)];
  }
  return mlp;
}

}  // namespace tc::profiler
