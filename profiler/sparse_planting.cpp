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
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"
#include "profiler/sparse_model.h"

namespace tc::profiler {
namespace {

using kernels::DType;
using kernels::ThreadPool;
using namespace planting;

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
