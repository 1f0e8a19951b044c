// The training-free predictor baseline: a truncated SVD of each layer's gate.
// rms_norm scales x by a positive number, so sign(gate_i) =
// sign((M x)_i) with M = W_gate diag(ffn_norm) [n_ff, n_embd]. With M ≈ A B
// (rank h), fc1 = [B; -B] and fc2 = [A, -A] give fc2 · relu(fc1 · x) =
// A relu(Bx) - A relu(-Bx) = A B x exactly: a predictor of rank 2h. For
// dReLU models this predicts only the gate half of the firing condition.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model_spec.h"
#include "kernels/cpu/thread_pool.h"
#include "profiler/predictor_mlp.h"

namespace tc::profiler {

// M ≈ A B with the top singular triplets, balanced (A = U sqrt(S),
// B = sqrt(S) V^T) so that neither factor's scale dominates a rounding.
struct GateFactors {
  int64_t rank = 0;
  std::vector<double> a;      // f64 [n_ff, rank]
  std::vector<double> b;      // f64 [rank, n_embd]
  std::vector<double> sigma;  // f64 [rank]: singular values, descending
};

// Randomized range finder (Gaussian test matrix with 10 extra columns,
// `power_iterations` subspace iterations, modified Gram-Schmidt) on M read
// from `file` (any weight dtype), then a float64 Jacobi eigensolve of the
// small Gram matrix. rank <= min(n_ff, n_embd). Deterministic for a given
// seed and thread count.
GateFactors factor_gate(const gguf::GgufFile& file, const model::ModelSpec& spec, int64_t layer, int64_t rank,
                        uint64_t seed, kernels::ThreadPool& pool, int power_iterations = 2);

// The predictor of rank 2 * half built from the top `half` factors
// (half <= f.rank): fc1 = [B; -B], fc2 = [A, -A], as float32.
LowRankMlp svd_predictor(const GateFactors& f, int64_t half, int64_t n_embd, int64_t n_ff);

// Eigen-decomposition of a symmetric f64 [n, n] matrix by cyclic Jacobi
// rotations: values descending, vectors[c * n + m] = component c of vector m.
void symmetric_eigen(std::vector<double> matrix, int64_t n, std::vector<double>& values,
                     std::vector<double>& vectors);

}  // namespace tc::profiler
