// Sparse planting: a llama ReLU model in which neuron i of each layer fires
// on a planted fraction f_i of tokens, with exact low-rank predictors.
//
// Residual channel 0 holds a constant c (token_embd[:, 0] = c; attn_output
// and ffn_down write nothing to it), so it acts as a bias input to every
// gate row. The gate is W = A' B'' with B'' [rp, n_embd]: row 0 = e_0 (the
// bias), rows 1.. a random orthonormal basis (signed Hadamard rows within
// power-of-two blocks of columns, column 0 excluded), A' [n_ff, rp]: column 0
// = the bias beta_i, the rest random. Since rms > 0, sign(gate_i . x^) =
// sign(A'_i . B''(x o ffn_norm)), which the predictor computes exactly:
// fc1 = [B' ; -B'] with B' = B'' o ffn_norm, fc2 = [A', -A'], so
// fc2 . relu(fc1 . x) = A' B' x. beta_i is set from the distribution of the
// rest of the sum over calibration tokens run through the layers built so far.
// With an overlap to plant, attention head 0 is positional (sparse_recency.h)
// and its output scale is found per layer by bisection on the calibration
// tokens' consecutive overlap.
#include "profiler/sparse_planting.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "profiler/sparse_recency.h"
#include "profiler/splitmix64.h"

namespace tc::profiler {
namespace {

using kernels::DType;
using kernels::ThreadPool;

// token_embd[:, 0], in units of the embedding sd: a few sd, so the
// constant does not dominate the attention input or a quantized block.
constexpr float kBiasChannelValue = 2.0f;
constexpr int64_t kBiasChannel = 0;
constexpr int64_t kCalibSeqLen = 64;
// attn_output is drawn at this fraction of the usual sd. At full scale the
// attention output carries as much variance as the token embedding at early
// positions and far less later, so the planted rates drifted with position
// (by up to 2.5 points over 6 layers); at half scale they hold within about
// half a point (docs/synthetic-sparse-models.md).
constexpr float kAttnOutputScale = 0.5f;
// The largest factor on attn_output's head-0 columns the overlap search tries
// (a positional head 0 then carries most of the residual's variance).
constexpr double kMaxHead0Scale = 64.0;

// RNG streams: one per tensor (and per layer for layer tensors); each row of
// a tensor has its own generator seeded by (seed, stream, row).
enum class Stream : uint64_t {
  TokenEmbd = 1,
  OutputNorm,
  Output,
  CalibTokens,
  AttnNorm = 16,
  AttnQ,
  AttnK,
  AttnV,
  AttnOutput,
  FfnNorm,
  GateCoeffs,  // A' columns 1..rp-1
  GateBasis,   // Hadamard rows, column signs
  Up,
  Down,        // output-major: row j = output j (n_ff values)
  Permutation, // which neuron gets which planted frequency
};

uint64_t stream_id(Stream s, int64_t layer = -1) {
  return static_cast<uint64_t>(s) + 32u * static_cast<uint64_t>(layer + 1);
}

// xoshiro256**. normal() is the Irwin-Hall sum of the four 16-bit lanes of
// one draw rescaled to unit variance: bounded by +-3.46 and never exactly 0,
// close enough to normal for weights, and about 20x cheaper than Box-Muller
// (a 7B-layer model draws a billion values).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t row) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull) ^ (row * 0x8CB92BA72F3D8DD7ull) ^ 0x73706172736500ull;
    for (auto& s : s_) s = splitmix64(x);
  }
  uint64_t next() {
    const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  float normal() {
    const uint64_t v = next();
    const auto sum = static_cast<uint32_t>((v & 0xffff) + ((v >> 16) & 0xffff) + ((v >> 32) & 0xffff) + (v >> 48));
    constexpr float kScale = 1.7320508075688772f / 65536.0f;  // sqrt(12 / 4) / 2^16
    return (static_cast<float>(sum) - 131070.5f) * kScale;
  }
  void fill(float* out, int64_t n, float sd, float mean) {
    for (int64_t i = 0; i < n; ++i) out[i] = mean + sd * normal();
  }
  // Uniform in [0, n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64); }

 private:
  uint64_t s_[4];
};

// Acklam's rational approximation of the standard normal quantile
// (relative error < 1.2e-9), p in (0, 1).
double normal_quantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                 1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                 6.680131188771972e+01,  -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                 -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double q) {
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  };
  if (p < kLow) return tail(std::sqrt(-2.0 * std::log(p)));
  if (p > 1.0 - kLow) return -tail(std::sqrt(-2.0 * std::log(1.0 - p)));
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// Unnormalised Walsh-Hadamard transform in place (Sylvester order):
// v[p] <- sum_j (-1)^popcount(p & j) v[j]. n is a power of two.
void fwht(float* v, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2) {
    for (int64_t i = 0; i < n; i += 2 * h) {
      for (int64_t j = i; j < i + h; ++j) {
        const float a = v[j];
        const float b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
}

// The gate's random basis B'' rows 1..rp-1 of one layer: row k is the
// Hadamard row pos[k] of its block of `block` columns starting at col0[k],
// times the column signs, / sqrt(block); zero elsewhere. Rows are
// orthonormal (apart from column 0, whose sign is 0: the bias channel is
// not part of the random basis).
struct Basis {
  int64_t block = 0;             // largest power of two dividing n_embd
  std::vector<int64_t> col0;     // [rp], entry 0 unused
  std::vector<int64_t> pos;      // [rp], entry 0 unused
  std::vector<float> sign;       // [n_embd], +-1, sign[0] = 0
  float inv_sqrt_block = 0.0f;

  Basis(uint64_t seed, int64_t layer, int64_t n_embd, int64_t rp) {
    block = n_embd & -n_embd;
    inv_sqrt_block = 1.0f / std::sqrt(static_cast<float>(block));
    const int64_t n_blocks = n_embd / block;
    Rng rng(seed, stream_id(Stream::GateBasis, layer), 0);
    sign.resize(static_cast<size_t>(n_embd));
    for (auto& s : sign) s = (rng.next() >> 63) ? -1.0f : 1.0f;
    sign[kBiasChannel] = 0.0f;
    // Distinct Hadamard rows within each block: a shuffled prefix.
    std::vector<std::vector<int64_t>> order(static_cast<size_t>(n_blocks));
    for (int64_t blk = 0; blk < n_blocks; ++blk) {
      auto& o = order[static_cast<size_t>(blk)];
      o.resize(static_cast<size_t>(block));
      std::iota(o.begin(), o.end(), int64_t{0});
      for (int64_t i = block - 1; i > 0; --i) {
        std::swap(o[static_cast<size_t>(i)], o[static_cast<size_t>(rng.below(static_cast<uint64_t>(i + 1)))]);
      }
    }
    col0.assign(static_cast<size_t>(rp), 0);
    pos.assign(static_cast<size_t>(rp), 0);
    for (int64_t k = 1; k < rp; ++k) {
      const int64_t blk = (k - 1) % n_blocks;
      col0[static_cast<size_t>(k)] = blk * block;
      pos[static_cast<size_t>(k)] = order[static_cast<size_t>(blk)][static_cast<size_t>((k - 1) / n_blocks)];
    }
  }

  // u[k] = B''_k . y for k = 1..rp-1 (u[0] = 0); scratch: n_embd floats.
  void project(const float* y, int64_t n_embd, float* u, float* scratch) const {
    for (int64_t j = 0; j < n_embd; ++j) scratch[j] = sign[static_cast<size_t>(j)] * y[j];
    for (int64_t c = 0; c < n_embd; c += block) fwht(scratch + c, block);
    u[0] = 0.0f;
    for (size_t k = 1; k < pos.size(); ++k) u[k] = scratch[col0[k] + pos[k]] * inv_sqrt_block;
  }

  // out = sum_{k >= 1} a[k] B''_k (a: rp values).
  void combine(const float* a, int64_t n_embd, float* out) const {
    std::fill(out, out + n_embd, 0.0f);
    for (size_t k = 1; k < pos.size(); ++k) out[col0[k] + pos[k]] = a[k];
    for (int64_t c = 0; c < n_embd; c += block) fwht(out + c, block);
    for (int64_t j = 0; j < n_embd; ++j) out[j] *= sign[static_cast<size_t>(j)] * inv_sqrt_block;
  }

  // out = B''_k o w (k >= 1).
  void row(int64_t k, const float* w, int64_t n_embd, float* out) const {
    std::fill(out, out + n_embd, 0.0f);
    const int64_t c0 = col0[static_cast<size_t>(k)];
    const auto p = static_cast<uint64_t>(pos[static_cast<size_t>(k)]);
    for (int64_t j = 0; j < block; ++j) {
      const float h = (std::popcount(p & static_cast<uint64_t>(j)) & 1) ? -inv_sqrt_block : inv_sqrt_block;
      out[c0 + j] = h * sign[static_cast<size_t>(c0 + j)] * w[c0 + j];
    }
  }
};

struct LayerPlan {
  std::vector<float> ffn_norm;  // [n_embd]; [0] scales the bias channel
  std::vector<float> beta;      // [n_ff]: gate column 0
  double calib_active = 0.0;    // fraction of gate > 0 on the calibration tokens
  double calib_overlap = 0.0;   // consecutive_overlap of the calibration tokens' active sets
  float qk_weight = 0.0f;       // positional head 0: its q and k rows' bias-channel entry
  float head0_scale = 1.0f;     // attn_output's head-0 columns times this (1: as drawn)
  float threshold = 0.0f;       // predictor threshold (below 0 only for quantized predictors)
};

// Everything needed to produce any row of any tensor; const after
// calibration, shared by the fillers (which run at write time).
struct SparseModel {
  MakeModelOptions o;
  SparseTensorTypes types;
  int64_t n_embd, n_embd_kv, n_ff, rank, rp;
  float sd_embd, sd_embd_in, sd_ff_in, sd_coeff;
  std::vector<Basis> basis;
  std::vector<LayerPlan> plan;
  int64_t head_dim;
  RecencyPairs recency;           // positional() only
  std::vector<uint8_t> recency_row;  // [head_dim]: 1 for the first dim of each pair head 0 uses

  SparseModel(const MakeModelOptions& opts, const SparseTensorTypes& t)
      : o(opts),
        types(t),
        n_embd(opts.n_embd),
        n_embd_kv(opts.n_embd / opts.n_head * opts.n_head_kv),
        n_ff(opts.n_ff),
        rank(sparse_predictor_rank(opts)),
        rp(rank / 2),
        head_dim(opts.n_embd / opts.n_head) {
    auto sd_for = [&](int64_t fan_in) {
      return o.weight_scale > 0.0f ? o.weight_scale : 1.0f / std::sqrt(static_cast<float>(fan_in));
    };
    sd_embd = o.weight_scale > 0.0f ? o.weight_scale : 1.0f;
    sd_embd_in = sd_for(n_embd);
    sd_ff_in = sd_for(n_ff);
    // Gate entries sum (rp - 1) n_embd-normalised Hadamard terms per block:
    // this makes their sd sd_embd_in, as for any other matrix.
    sd_coeff = sd_embd_in * std::sqrt(static_cast<float>(n_embd) / static_cast<float>(rp - 1));
    for (int64_t l = 0; l < o.n_layer; ++l) basis.emplace_back(o.seed, l, n_embd, rp);
    plan.resize(static_cast<size_t>(o.n_layer));
    if (positional()) {
      recency = recency_pairs(head_dim, o.rope_freq_base);
      recency_row.assign(static_cast<size_t>(head_dim), 0);
      for (int64_t i : recency.pairs) recency_row[static_cast<size_t>(2 * i)] = 1;
    }
  }

  bool positional() const { return o.sparse.overlap > 0.0; }

  void random(Stream s, int64_t layer, int64_t row, float* out, int64_t n, float sd, float mean = 0.0f) const {
    Rng(o.seed, stream_id(s, layer), static_cast<uint64_t>(row)).fill(out, n, sd, mean);
  }
  void embd_row(int64_t v, float* out) const {
    random(Stream::TokenEmbd, -1, v, out, n_embd, sd_embd);
    out[kBiasChannel] = kBiasChannelValue * sd_embd;
  }
  void norm_row(Stream s, int64_t layer, float* out) const { random(s, layer, 0, out, n_embd, 0.1f, 1.0f); }
  // Rows of attn_q (r < n_embd) and attn_k (r < n_embd_kv): random, but for
  // a positional head 0 only the bias channel of the first dim of each of
  // its RoPE pairs (q and k alike, so q.k depends on the distance alone).
  void qk_row(Stream s, int64_t l, int64_t r, float* out) const {
    if (positional() && r < head_dim) {
      std::fill(out, out + n_embd, 0.0f);
      if (recency_row[static_cast<size_t>(r)]) out[kBiasChannel] = plan[static_cast<size_t>(l)].qk_weight;
      return;
    }
    random(s, l, r, out, n_embd, sd_embd_in);
  }
  // Rows of attn_output (n_embd values) and ffn_down (n_ff values): output
  // row 0 is zero, so blocks never write to the bias channel.
  void attn_output_row(int64_t l, int64_t j, float* out) const {
    if (j == kBiasChannel) {
      std::fill(out, out + n_embd, 0.0f);
    } else {
      random(Stream::AttnOutput, l, j, out, n_embd, kAttnOutputScale * sd_embd_in);
      const float scale = plan[static_cast<size_t>(l)].head0_scale;
      if (scale != 1.0f) {
        for (int64_t c = 0; c < head_dim; ++c) out[c] *= scale;
      }
    }
  }
  void down_row(int64_t l, int64_t j, float* out) const {
    if (j == kBiasChannel) {
      std::fill(out, out + n_ff, 0.0f);
    } else {
      random(Stream::Down, l, j, out, n_ff, sd_ff_in);
    }
  }
  // A'_i (rp values); [0] = beta_i once calibrated, 0 before.
  void coeff_row(int64_t l, int64_t i, float* out) const {
    random(Stream::GateCoeffs, l, i, out + 1, rp - 1, sd_coeff);
    const auto& beta = plan[static_cast<size_t>(l)].beta;
    out[0] = beta.empty() ? 0.0f : beta[static_cast<size_t>(i)];
  }
  void gate_row(int64_t l, int64_t i, float* out) const {
    std::vector<float> a(static_cast<size_t>(rp));
    coeff_row(l, i, a.data());
    basis[static_cast<size_t>(l)].combine(a.data(), n_embd, out);
    out[kBiasChannel] = a[0];
  }
  void fc1_row(int64_t l, int64_t k, float* out) const {
    const float sign = k < rp ? 1.0f : -1.0f;
    const int64_t kk = k % rp;
    const auto& w = plan[static_cast<size_t>(l)].ffn_norm;
    if (kk == 0) {
      std::fill(out, out + n_embd, 0.0f);
      out[kBiasChannel] = sign * w[kBiasChannel];
      return;
    }
    basis[static_cast<size_t>(l)].row(kk, w.data(), n_embd, out);
    if (sign < 0) {
      for (int64_t j = 0; j < n_embd; ++j) out[j] = -out[j];
    }
  }
  void fc2_row(int64_t l, int64_t i, float* out) const {
    coeff_row(l, i, out);
    for (int64_t k = 0; k < rp; ++k) out[rp + k] = -out[k];
  }
};

// A row-major f32 matrix produced row by row in parallel, viewed as a weight.
struct F32Matrix {
  std::vector<float> data;
  kernels::Tensor tensor;

  F32Matrix(int64_t n_rows, int64_t n_cols, ThreadPool& pool,
            const std::function<void(int64_t row, float* out)>& row_fn)
      : data(static_cast<size_t>(n_rows * n_cols)) {
    pool.parallel_for(n_rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) row_fn(r, data.data() + r * n_cols);
    });
    tensor.data = data.data();
    tensor.dtype = DType::F32;
    tensor.ne = {n_cols, n_rows, 1, 1};
    tensor.row_bytes = n_cols * static_cast<int64_t>(sizeof(float));
  }
};

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
      {
        const F32Matrix coeffs(n_ff, rp, pool, [&](int64_t i, float* out) { m.coeff_row(l, i, out); });
        kernels::matmul(coeffs.tensor, u.data(), n_tok, z.data(), pool);
      }

      // Neuron i fires when beta_i * bias_scale + z_i > 0, i.e. when
      // beta_i > s_i = -z_i / bias_scale. With s_i ~ N(mu, sd) over tokens,
      // beta_i = mu + sd * Phi^-1(f_i) fires on a fraction f_i.
      std::vector<int64_t> rank_of(static_cast<size_t>(n_ff));
      std::iota(rank_of.begin(), rank_of.end(), int64_t{0});
      Rng perm_rng(o.seed, stream_id(Stream::Permutation, l), 0);
      for (int64_t i = n_ff - 1; i > 0; --i) {
        std::swap(rank_of[static_cast<size_t>(i)], rank_of[static_cast<size_t>(perm_rng.below(static_cast<uint64_t>(i + 1)))]);
      }
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
      // x + the other heads' output + scale * head 0's as drawn: the overlap
      // grows with the scale, and bisection finds the target's.
      std::vector<float> rest(x.size()), head0(x.size()), attn0(x.size(), 0.0f), xs(x.size());
      plan.head0_scale = 0.0f;
      {
        const F32Matrix wo(n, n, pool, [&](int64_t j, float* out) { m.attn_output_row(l, j, out); });
        kernels::matmul(wo.tensor, attn.data(), n_tok, rest.data(), pool);
      }
      plan.head0_scale = 1.0f;
      for (int64_t t = 0; t < n_tok; ++t) std::copy_n(attn.data() + t * n, head_dim, attn0.data() + t * n);
      {
        const F32Matrix wo(n, n, pool, [&](int64_t j, float* out) { m.attn_output_row(l, j, out); });
        kernels::matmul(wo.tensor, attn0.data(), n_tok, head0.data(), pool);
      }
      auto overlap_at = [&](double scale) {
        for (size_t i = 0; i < x.size(); ++i) xs[i] = x[i] + rest[i] + static_cast<float>(scale) * head0[i];
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

// Adds a tensor whose rows come from row_fn (f32), quantized to `dtype` in
// parallel at write time.
void add_rows(gguf::GgufWriter& w, const std::string& name, DType dtype, std::vector<int64_t> ne,
              std::shared_ptr<ThreadPool> pool, std::function<void(int64_t row, float* out)> row_fn) {
  const int64_t n_cols = ne[0];
  const int64_t n_rows = ne.size() > 1 ? ne[1] : 1;
  const int64_t bytes_per_row = kernels::row_bytes(dtype, n_cols);
  w.add_tensor(name, dtype, std::move(ne), [=](std::span<std::byte> out) {
    pool->parallel_for(n_rows, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(n_cols));
      for (int64_t r = begin; r < end; ++r) {
        row_fn(r, row.data());
        kernels::quantize_row(dtype, row.data(), out.data() + r * bytes_per_row, n_cols);
      }
    });
  });
}

// ffn_down_t [n_embd, n_ff]: row i = neuron i = column i of ffn_down, so
// the two layouts hold the same values.
void add_down_transposed(gguf::GgufWriter& w, const std::string& name, DType dtype,
                         std::shared_ptr<const SparseModel> m, int64_t l, std::shared_ptr<ThreadPool> pool) {
  const int64_t n = m->n_embd, n_ff = m->n_ff;
  const int64_t bytes_per_row = kernels::row_bytes(dtype, n);
  w.add_tensor(name, dtype, {n, n_ff}, [=](std::span<std::byte> out) {
    const F32Matrix down(n, n_ff, *pool, [&](int64_t j, float* row) { m->down_row(l, j, row); });
    pool->parallel_for(n_ff, 16, [&](int64_t begin, int64_t end) {
      std::vector<float> row(static_cast<size_t>(n));
      for (int64_t i = begin; i < end; ++i) {
        for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] = down.data[static_cast<size_t>(j * n_ff + i)];
        kernels::quantize_row(dtype, row.data(), out.data() + i * bytes_per_row, n);
      }
    });
  });
}

}  // namespace

std::vector<double> power_law_frequencies(int64_t n, double mean, double alpha) {
  if (!(mean > kMinFireFrequency && mean < kMaxFireFrequency)) {
    throw std::invalid_argument("sparse active fraction " + std::to_string(mean) + " must be in (" +
                                std::to_string(kMinFireFrequency) + ", " + std::to_string(kMaxFireFrequency) + ")");
  }
  if (!(alpha >= 0.0 && alpha <= 16.0)) {
    throw std::invalid_argument("sparse alpha " + std::to_string(alpha) + " must be in [0, 16]");
  }
  std::vector<double> f(static_cast<size_t>(n));
  auto fill = [&](double log_s) {
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const double v = std::exp(log_s - alpha * std::log(static_cast<double>(k + 1)));
      f[static_cast<size_t>(k)] = std::clamp(v, kMinFireFrequency, kMaxFireFrequency);
      sum += f[static_cast<size_t>(k)];
    }
    return sum / static_cast<double>(n);
  };
  // The mean is continuous and non-decreasing in log s, from kMin to kMax.
  double lo = std::log(kMinFireFrequency) - 1.0;
  double hi = std::log(kMaxFireFrequency) + alpha * std::log(static_cast<double>(n)) + 1.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (fill(mid) < mean ? lo : hi) = mid;
  }
  fill(0.5 * (lo + hi));
  return f;
}

int64_t sparse_predictor_rank(const MakeModelOptions& o) {
  if (o.sparse.predictor_rank > 0) return o.sparse.predictor_rank;
  return std::max<int64_t>(64, (o.n_embd / 4 + 32) / 64 * 64);
}

DType sparse_predictor_type(const MakeModelOptions& o, DType base) {
  if (o.sparse.predictor_type.empty()) return base;
  const auto t = kernels::dtype_from_name(o.sparse.predictor_type);
  if (!t || !kernels::is_weight_dtype(*t)) {
    throw std::invalid_argument("predictor type '" + o.sparse.predictor_type +
                                "' is not a weight format (f32, f16, bf16 or a block format such as q4_k)");
  }
  return *t;
}

void check_sparse_options(const MakeModelOptions& o, const SparseTensorTypes& types) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  const auto& s = o.sparse;
  require(o.ffn_form == model::FfnForm::ReGLU || o.ffn_form == model::FfnForm::DReLU,
          "a sparse model needs a ReLU FFN form (reglu or drelu), not " +
              std::string(model::ffn_form_name(o.ffn_form)));
  power_law_frequencies(1, s.active, s.alpha);  // range checks
  const int64_t r = sparse_predictor_rank(o);
  require(r >= 4 && r % 2 == 0 && r / 2 <= o.n_embd,
          "predictor rank " + std::to_string(r) + " must be even, at least 4 and at most 2 * n_embd (" +
              std::to_string(2 * o.n_embd) + ")");
  require(o.n_embd % 32 == 0, "a sparse model needs n_embd a multiple of 32 (the gate's Hadamard blocks), got " +
                                  std::to_string(o.n_embd));
  require(s.calib_tokens >= 16 && s.calib_tokens <= (int64_t{1} << 16),
          "calibration tokens " + std::to_string(s.calib_tokens) + " must be in [16, 65536]");
  const int64_t block = kernels::dtype_traits(types.predictor).block_size;
  const std::string pname(kernels::dtype_name(types.predictor));
  require(o.n_embd % block == 0, "n_embd " + std::to_string(o.n_embd) + " is not a multiple of " +
                                     std::to_string(block) + ", the block size of the predictor type " + pname);
  require(r % block == 0, "predictor rank " + std::to_string(r) + " is not a multiple of " + std::to_string(block) +
                              ", the block size of the predictor type " + pname +
                              " (fc2 rows); choose another --predictor-rank or --predictor-type");
}

void add_sparse_model(const MakeModelOptions& o, const SparseTensorTypes& types, gguf::GgufWriter& w,
                      int n_threads) {
  check_sparse_options(o, types);
  auto pool = std::make_shared<ThreadPool>(n_threads);
  auto model = std::make_shared<SparseModel>(o, types);
  calibrate(*model, *pool);
  std::shared_ptr<const SparseModel> m = model;

  std::vector<float> layer_active, layer_overlap;
  for (const auto& p : m->plan) {
    layer_active.push_back(static_cast<float>(p.calib_active));
    layer_overlap.push_back(static_cast<float>(p.calib_overlap));
  }
  w.set(std::string(kSparseActiveKey), gguf::Value(static_cast<float>(o.sparse.active)));
  w.set(std::string(kSparseAlphaKey), gguf::Value(static_cast<float>(o.sparse.alpha)));
  w.set(std::string(kPredictorRankKey), gguf::Value(static_cast<uint32_t>(m->rank)));
  w.set(std::string(kCalibTokensKey), gguf::Value(static_cast<uint32_t>(o.sparse.calib_tokens)));
  w.set(std::string(kLayerActiveKey), gguf::Value::f32_array(layer_active));
  w.set(std::string(kBiasChannelKey), gguf::Value(static_cast<uint32_t>(kBiasChannel)));
  w.set(std::string(kSparseOverlapKey), gguf::Value(static_cast<float>(o.sparse.overlap)));
  w.set(std::string(kLayerOverlapKey), gguf::Value::f32_array(layer_overlap));
  std::vector<float> thresholds;
  for (const auto& p : m->plan) thresholds.push_back(p.threshold);
  // PowerInfer reads one global threshold: the lowest keeps every layer's recall.
  w.set(std::string(sparse::kSparseThresholdKey), gguf::Value(*std::min_element(thresholds.begin(), thresholds.end())));
  if (*std::min_element(thresholds.begin(), thresholds.end()) < 0.0f) {
    w.set(std::string(sparse::kLayerThresholdsKey), gguf::Value::f32_array(thresholds));
  }

  const int64_t n = m->n_embd, n_ff = m->n_ff;
  auto rows = [&](const std::string& name, DType t, int64_t n_cols, int64_t n_rows,
                  std::function<void(int64_t, float*)> fn) { add_rows(w, name, t, {n_cols, n_rows}, pool, std::move(fn)); };
  auto norm = [&](const std::string& name, std::function<void(float*)> fn) {
    add_rows(w, name, DType::F32, {n}, pool, [fn = std::move(fn)](int64_t, float* out) { fn(out); });
  };

  rows("token_embd.weight", types.base, n, o.n_vocab, [m](int64_t v, float* out) { m->embd_row(v, out); });
  norm("output_norm.weight", [m](float* out) { m->norm_row(Stream::OutputNorm, -1, out); });
  if (!o.tied_embeddings) {
    rows("output.weight", types.heavy, n, o.n_vocab,
         [m](int64_t r, float* out) { m->random(Stream::Output, -1, r, out, m->n_embd, m->sd_embd_in); });
  }
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    auto random_rows = [&](std::string_view t, DType dtype, Stream s, int64_t n_rows) {
      rows(name(t), dtype, n, n_rows, [m, s, l](int64_t r, float* out) { m->random(s, l, r, out, m->n_embd, m->sd_embd_in); });
    };
    norm(name("attn_norm"), [m, l](float* out) { m->norm_row(Stream::AttnNorm, l, out); });
    rows(name("attn_q"), types.base, n, n, [m, l](int64_t r, float* out) { m->qk_row(Stream::AttnQ, l, r, out); });
    rows(name("attn_k"), types.base, n, m->n_embd_kv,
         [m, l](int64_t r, float* out) { m->qk_row(Stream::AttnK, l, r, out); });
    random_rows("attn_v", types.heavy, Stream::AttnV, m->n_embd_kv);
    rows(name("attn_output"), types.base, n, n, [m, l](int64_t j, float* out) { m->attn_output_row(l, j, out); });
    norm(name("ffn_norm"), [m, l](float* out) {
      const auto& w_norm = m->plan[static_cast<size_t>(l)].ffn_norm;
      std::copy(w_norm.begin(), w_norm.end(), out);
    });
    rows(name("ffn_gate"), types.base, n, n_ff, [m, l](int64_t i, float* out) { m->gate_row(l, i, out); });
    random_rows("ffn_up", types.base, Stream::Up, n_ff);
    if (o.sparse.layout == SparseLayout::PowerInfer) {
      add_down_transposed(w, name("ffn_down_t"), types.heavy, m, l, pool);
    } else {
      rows(name("ffn_down"), types.heavy, n_ff, n, [m, l](int64_t j, float* out) { m->down_row(l, j, out); });
    }
    if (!o.sparse.write_predictors) continue;
    rows(name("fc1"), types.predictor, n, m->rank, [m, l](int64_t k, float* out) { m->fc1_row(l, k, out); });
    rows(name("fc2"), types.predictor, m->rank, n_ff, [m, l](int64_t i, float* out) { m->fc2_row(l, i, out); });
  }
}

}  // namespace tc::profiler
