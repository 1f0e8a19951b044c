// Internal to make-model's sparse planting (sparse_planting.cpp writes the
// tensors, sparse_calibration.cpp runs the calibration pass): the planted
// model's description -- per-tensor RNG streams, the gate's Hadamard basis,
// the per-layer plan the calibration fills in -- from which any row of any
// tensor is produced on demand. The construction is in
// docs/synthetic-sparse-models.md; sparse_planting.cpp's header comment
// gives the algebra.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "kernels/cpu/thread_pool.h"
#include "kernels/dtype.h"
#include "kernels/tensor.h"
#include "profiler/make_model.h"
#include "profiler/sparse_planting.h"
#include "profiler/sparse_recency.h"
#include "engine/runtime/rng.h"

namespace tc::profiler::planting {

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

inline uint64_t stream_id(Stream s, int64_t layer = -1) {
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
    for (auto& s : s_) s = runtime::splitmix64(x);
  }
  uint64_t next() {
    return runtime::xoshiro256ss_next(s_);
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
inline double normal_quantile(double p) {
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
inline void fwht(float* v, int64_t n) {
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

// The forward pass over calibration tokens that fills m.plan, layer by layer
// (sparse_calibration.cpp).
void calibrate(SparseModel& m, ThreadPool& pool);

}  // namespace tc::profiler::planting
