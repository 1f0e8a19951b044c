// Randomized truncated SVD of W_gate diag(ffn_norm) in float64 (Halko,
// Martinsson, Tropp 2011, algorithm 4.4) and the exact [B; -B] / [A, -A]
// predictor built from it.
#include "profiler/predictor_svd.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include "kernels/cpu/quantize.h"

namespace tc::profiler {
namespace {

double dot(const double* a, const double* b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[c * n_rows + i] = mat_i · vt_c: mat f64 [n_rows, n_cols], vt f64 [k, n_cols].
std::vector<double> mul_rows(const std::vector<double>& mat, int64_t n_rows, int64_t n_cols,
                             const std::vector<double>& vt, int64_t k, kernels::ThreadPool& pool) {
  std::vector<double> out(static_cast<size_t>(k * n_rows));
  pool.parallel_for(n_rows, 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < k; ++c) out[c * n_rows + i] = dot(mat.data() + i * n_cols, vt.data() + c * n_cols, n_cols);
    }
  });
  return out;
}

// Orthonormalizes the k rows of qt (f64 [k, n]) in place: modified
// Gram-Schmidt, twice for stability. A row left with no norm (the range is
// smaller than k) is replaced by a random one.
void orthonormalize(std::vector<double>& qt, int64_t k, int64_t n, std::mt19937_64& rng) {
  for (int64_t c = 0; c < k; ++c) {
    double* v = qt.data() + c * n;
    const double norm0 = std::sqrt(dot(v, v, n));
    for (int attempt = 0; attempt < 4; ++attempt) {
      for (int pass = 0; pass < 2; ++pass) {
        for (int64_t p = 0; p < c; ++p) {
          const double* u = qt.data() + p * n;
          const double d = dot(u, v, n);
          for (int64_t i = 0; i < n; ++i) v[i] -= d * u[i];
        }
      }
      const double norm = std::sqrt(dot(v, v, n));
      if (norm > 1e-12 * norm0 && norm > 0.0) {
        for (int64_t i = 0; i < n; ++i) v[i] /= norm;
        break;
      }
      for (int64_t i = 0; i < n; ++i) v[i] = standard_normal(rng);
    }
  }
}

}  // namespace

void symmetric_eigen(std::vector<double> a, int64_t n, std::vector<double>& values, std::vector<double>& vectors) {
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  auto at = [&](int64_t r, int64_t c) -> double& { return a[static_cast<size_t>(r * n + c)]; };
  double total = 0.0;
  for (const double x : a) total += x * x;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) off += at(p, q) * at(p, q);
    }
    if (off <= 1e-30 * total) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0.0) continue;
        // The rotation that zeroes a[p][q] (Golub & Van Loan, 8.5.2).
        const double theta = (at(q, q) - at(p, p)) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int64_t k = 0; k < n; ++k) {
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
        for (int64_t k = 0; k < n; ++k) {
          double& vkp = v[static_cast<size_t>(k * n + p)];
          double& vkq = v[static_cast<size_t>(k * n + q)];
          const double x = vkp, y = vkq;
          vkp = c * x - s * y;
          vkq = s * x + c * y;
        }
      }
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return at(x, x) > at(y, y); });
  values.resize(static_cast<size_t>(n));
  vectors.resize(static_cast<size_t>(n * n));
  for (int64_t m = 0; m < n; ++m) {
    const int64_t src = order[static_cast<size_t>(m)];
    values[static_cast<size_t>(m)] = at(src, src);
    for (int64_t c = 0; c < n; ++c) vectors[static_cast<size_t>(c * n + m)] = v[static_cast<size_t>(c * n + src)];
  }
}

GateFactors factor_gate(const gguf::GgufFile& file, const model::ModelSpec& spec, int64_t layer, int64_t rank,
                        uint64_t seed, kernels::ThreadPool& pool, int power_iterations) {
  const int64_t n_embd = spec.n_embd, n_ff = spec.n_ff;
  if (rank < 1 || rank > std::min(n_embd, n_ff)) {
    throw std::invalid_argument("gate SVD: rank " + std::to_string(rank) + " is outside [1, min(n_embd, n_ff) = " +
                                std::to_string(std::min(n_embd, n_ff)) + "]");
  }
  // M = W_gate diag(ffn_norm) f64 [n_ff, n_embd], and its transpose (Falcon:
  // ffn_up and attn_norm, its LayerNorm's bias and centring left out).
  const auto& gate =
      file.tensor(model::layer_tensor_name(layer, model::ffn_activated_tensor(*spec.architecture)), {n_embd, n_ff});
  const auto& norm =
      file.tensor(model::layer_tensor_name(layer, model::ffn_input_norm_tensor(*spec.architecture)), {n_embd});
  if (norm.dtype != kernels::DType::F32) throw file.error(norm.name, "is not f32");
  const auto* norm_w = reinterpret_cast<const float*>(file.tensor_data(norm).data());
  const auto gate_data = file.tensor_data(gate);
  const int64_t gate_row_bytes = kernels::row_bytes(gate.dtype, n_embd);
  std::vector<double> m(static_cast<size_t>(n_ff * n_embd)), mt(m.size());
  pool.parallel_for(n_ff, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(n_embd));
    for (int64_t i = begin; i < end; ++i) {
      kernels::dequantize_row(gate.dtype, gate_data.data() + i * gate_row_bytes, row.data(), n_embd);
      for (int64_t j = 0; j < n_embd; ++j) m[i * n_embd + j] = static_cast<double>(row[j]) * norm_w[j];
    }
  });
  for (int64_t i = 0; i < n_ff; ++i) {
    for (int64_t j = 0; j < n_embd; ++j) mt[j * n_ff + i] = m[i * n_embd + j];
  }

  // Range finder: Q (stored as rows qt [k, n_ff]) spans M's top singular directions.
  const int64_t k = std::min(rank + 10, std::min(n_embd, n_ff));
  std::mt19937_64 rng(seed ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(layer + 1)));
  std::vector<double> omega(static_cast<size_t>(k * n_embd));
  for (auto& x : omega) x = standard_normal(rng);
  std::vector<double> qt = mul_rows(m, n_ff, n_embd, omega, k, pool);
  orthonormalize(qt, k, n_ff, rng);
  for (int it = 0; it < power_iterations; ++it) {
    std::vector<double> zt = mul_rows(mt, n_embd, n_ff, qt, k, pool);  // (M^T Q)^T [k, n_embd]
    orthonormalize(zt, k, n_embd, rng);
    qt = mul_rows(m, n_ff, n_embd, zt, k, pool);
    orthonormalize(qt, k, n_ff, rng);
  }
  // C = Q^T M [k, n_embd]; C C^T = U S^2 U^T; M ≈ Q U S V^T with V^T = S^-1 U^T C.
  const std::vector<double> c = mul_rows(mt, n_embd, n_ff, qt, k, pool);
  std::vector<double> gram(static_cast<size_t>(k * k));
  for (int64_t p = 0; p < k; ++p) {
    for (int64_t q = 0; q <= p; ++q) gram[p * k + q] = gram[q * k + p] = dot(c.data() + p * n_embd, c.data() + q * n_embd, n_embd);
  }
  std::vector<double> lambda, u;
  symmetric_eigen(std::move(gram), k, lambda, u);

  GateFactors f;
  f.rank = rank;
  f.sigma.resize(static_cast<size_t>(rank));
  f.a.assign(static_cast<size_t>(n_ff * rank), 0.0);
  f.b.assign(static_cast<size_t>(rank * n_embd), 0.0);
  const double sigma_max = std::sqrt(std::max(lambda[0], 0.0));
  for (int64_t mi = 0; mi < rank; ++mi) {
    const double sigma = std::sqrt(std::max(lambda[static_cast<size_t>(mi)], 0.0));
    f.sigma[static_cast<size_t>(mi)] = sigma;
    // A = Q U sqrt(S), B = sqrt(S)^-1 U^T C (the two scales meet at sqrt(S)).
    const double root = std::sqrt(std::max(sigma, 1e-12 * sigma_max + 1e-300));
    for (int64_t ci = 0; ci < k; ++ci) {
      const double w = u[static_cast<size_t>(ci * k + mi)];
      if (w == 0.0) continue;
      for (int64_t i = 0; i < n_ff; ++i) f.a[static_cast<size_t>(i * rank + mi)] += qt[ci * n_ff + i] * w * root;
      for (int64_t j = 0; j < n_embd; ++j) f.b[static_cast<size_t>(mi * n_embd + j)] += c[ci * n_embd + j] * w / root;
    }
  }
  return f;
}

LowRankMlp svd_predictor(const GateFactors& f, int64_t half, int64_t n_embd, int64_t n_ff) {
  if (half < 1 || half > f.rank) {
    throw std::invalid_argument("SVD predictor: " + std::to_string(half) + " factors asked, " +
                                std::to_string(f.rank) + " computed");
  }
  const int64_t r = 2 * half;
  LowRankMlp mlp{r, std::vector<float>(static_cast<size_t>(r * n_embd)), std::vector<float>(static_cast<size_t>(n_ff * r))};
  for (int64_t k = 0; k < half; ++k) {
    for (int64_t j = 0; j < n_embd; ++j) {
      const auto b = static_cast<float>(f.b[static_cast<size_t>(k * n_embd + j)]);
      mlp.fc1[static_cast<size_t>(k * n_embd + j)] = b;
      mlp.fc1[static_cast<size_t>((half + k) * n_embd + j)] = -b;
    }
  }
  for (int64_t i = 0; i < n_ff; ++i) {
    for (int64_t k = 0; k < half; ++k) {
      const auto a = static_cast<float>(f.a[static_cast<size_t>(i * f.rank + k)]);
      mlp.fc2[static_cast<size_t>(i * r + k)] = a;
      mlp.fc2[static_cast<size_t>(i * r + half + k)] = -a;
    }
  }
  return mlp;
}

}  // namespace tc::profiler
