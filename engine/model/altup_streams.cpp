// Gemma 3n's AltUp streams, in llama.cpp's order of operations (gemma3n.cpp:
// the stacked input, altup_predict, altup_correct and the unembedding).
#include "engine/model/altup_streams.h"

#include <algorithm>
#include <cmath>

namespace tc::model {
namespace {

double magnitude(const float* row, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(row[i]) * row[i];
  return std::sqrt(sum);
}

}  // namespace

AltUpStreams::AltUpStreams(const ModelSpec& spec, const LlamaWeights& weights, const LlamaWeights& rows)
    : spec_(spec), weights_(weights) {
  for (int64_t l = 0; l < spec.altup.n_sparse_layers; ++l) {
    up_rows_.push_back(rows.layers[static_cast<size_t>(l)].ffn_up);
  }
}

void AltUpStreams::sparse_gate_up(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* x,
                                  int64_t n_tokens, float* gate, float* up) {
  const int64_t n_ff = spec_.shape(layer).n_ff;
  gaussian_top_k(gate, n_tokens, n_ff);
  active_.clear();
  for (int64_t i = 0; i < n_ff; ++i) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      if (gate[t * n_ff + i] > 0.0f) {
        active_.push_back(static_cast<int32_t>(i));
        break;
      }
    }
  }
  const auto n_active = static_cast<int64_t>(active_.size());
  if (4 * n_active > n_ff) {
    b.matmul(w.ffn_up, x, n_tokens, up);
    return;
  }
  active_up_.resize(static_cast<size_t>(n_tokens * n_active));
  if (n_active > 0) {
    b.matmul_rows(up_rows_[static_cast<size_t>(layer)], x, n_tokens, active_.data(), n_active, active_up_.data());
  }
  std::fill_n(up, n_tokens * n_ff, 0.0f);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t k = 0; k < n_active; ++k) {
      up[t * n_ff + active_[static_cast<size_t>(k)]] = active_up_[static_cast<size_t>(t * n_active + k)];
    }
  }
}

void AltUpStreams::reserve(int64_t n_tokens) {
  if (n_tokens <= capacity_) return;
  capacity_ = n_tokens;
  const int64_t n = spec_.altup.n_streams;
  const auto rows = static_cast<size_t>(capacity_ * spec_.n_embd);
  streams_.resize(static_cast<size_t>(n - 1) * rows);
  predicted_.resize(static_cast<size_t>(n) * rows);
  normed_.resize(rows);
  modalities_.resize(static_cast<size_t>(capacity_ * n));
  coefs_.resize(static_cast<size_t>(capacity_ * n * n));
}

void AltUpStreams::match_magnitude(const float* like, float* y, int64_t n_tokens) const {
  const int64_t n_embd = spec_.n_embd;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float target = static_cast<float>(magnitude(like + t * n_embd, n_embd));
    float* row = y + t * n_embd;
    const float now = static_cast<float>(magnitude(row, n_embd));
    for (int64_t i = 0; i < n_embd; ++i) row[i] = row[i] * target / now;
  }
}

void AltUpStreams::begin(kernels::Backend& b, const float* x, int64_t n_tokens) {
  reserve(n_tokens);  // (the streams are the step's own: nothing carries over)
  for (int64_t k = 1; k < spec_.altup.n_streams; ++k) {
    b.matmul(weights_.altup_proj[static_cast<size_t>(k - 1)], x, n_tokens, stream(k));
    match_magnitude(x, stream(k), n_tokens);
  }
}

void AltUpStreams::route(kernels::Backend& b, const LayerWeights& w, const float* x, int64_t n_tokens) {
  const int64_t n_embd = spec_.n_embd;
  b.rms_norm(x, static_cast<const float*>(w.altup_router_norm.data), n_tokens, n_embd,
             static_cast<float>(spec_.rms_eps), normed_.data());
  b.scale(normed_.data(), n_tokens * n_embd, 1.0f / static_cast<float>(n_embd));
  b.matmul(w.altup_router, normed_.data(), n_tokens, modalities_.data());
  for (int64_t i = 0; i < n_tokens * spec_.altup.n_streams; ++i) {
    modalities_[static_cast<size_t>(i)] = std::tanh(modalities_[static_cast<size_t>(i)]);
  }
}

void AltUpStreams::predict(kernels::Backend& b, const LayerWeights& w, float* x, int64_t n_tokens) {
  const int64_t n = spec_.altup.n_streams;
  const int64_t n_embd = spec_.n_embd;
  route(b, w, x, n_tokens);
  b.matmul(w.altup_predict_coef, modalities_.data(), n_tokens, coefs_.data());
  const int64_t plane = capacity_ * n_embd;
  // prediction_j = stream_j + sum_k coefs[j * n + k] * stream_k, token by token.
  rows_.resize(static_cast<size_t>(n));
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t k = 0; k < n; ++k) rows_[static_cast<size_t>(k)] = (k == 0 ? x : stream(k)) + t * n_embd;
    for (int64_t j = 0; j < n; ++j) {
      const float* c = coefs_.data() + (t * n + j) * n;
      float* out = predicted_.data() + j * plane + t * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) {
        float sum = 0.0f;
        for (int64_t k = 0; k < n; ++k) sum += c[k] * rows_[static_cast<size_t>(k)][i];
        out[i] = sum + rows_[static_cast<size_t>(j)][i];
      }
    }
  }
  // The predictions become the streams; stream 0's stays in predicted_ too.
  std::copy_n(predicted_.data(), n_tokens * n_embd, x);
  for (int64_t k = 1; k < n; ++k) std::copy_n(predicted_.data() + k * plane, n_tokens * n_embd, stream(k));
}

void AltUpStreams::correct(kernels::Backend& b, const LayerWeights& w, const float* activated, float* x,
                           int64_t n_tokens) {
  const int64_t n = spec_.altup.n_streams;
  const int64_t n_embd = spec_.n_embd;
  route(b, w, activated, n_tokens);
  b.matmul(w.altup_correct_coef, modalities_.data(), n_tokens, coefs_.data());
  const float* active = predicted_.data();  // stream 0's prediction
  for (int64_t s = 0; s < n; ++s) {
    float* out = s == 0 ? x : stream(s);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float c = coefs_[static_cast<size_t>(t * n + s)] + 1.0f;
      const int64_t row = t * n_embd;
      for (int64_t i = 0; i < n_embd; ++i) out[row + i] += (activated[row + i] - active[row + i]) * c;
    }
  }
}

void AltUpStreams::scaled_active(const LayerWeights& w, const float* x, int64_t n_tokens, float* out) const {
  const int64_t n_embd = spec_.n_embd;
  const auto* scale = static_cast<const float*>(w.altup_correct_scale.data);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t i = 0; i < n_embd; ++i) out[t * n_embd + i] = x[t * n_embd + i] * scale[i];
  }
}

void AltUpStreams::add_to_inactive(kernels::Backend& b, const float* add, int64_t n_tokens) {
  for (int64_t k = 1; k < spec_.altup.n_streams; ++k) b.add(stream(k), add, n_tokens * spec_.n_embd);
}

void AltUpStreams::finish(kernels::Backend& b, float* x, int64_t n_tokens) {
  const int64_t n = spec_.altup.n_streams;
  const int64_t n_embd = spec_.n_embd;
  float* unembedded = predicted_.data();  // free once the layers are done
  // Summed in llama.cpp's order: stream 0, then each unembedded stream.
  float* sum = normed_.data();
  std::copy_n(x, n_tokens * n_embd, sum);
  for (int64_t k = 1; k < n; ++k) {
    b.matmul(weights_.altup_unembd_proj[static_cast<size_t>(k - 1)], stream(k), n_tokens, unembedded);
    match_magnitude(x, unembedded, n_tokens);
    b.add(sum, unembedded, n_tokens * n_embd);
  }
  const float inv = 1.0f / static_cast<float>(n);
  for (int64_t i = 0; i < n_tokens * n_embd; ++i) x[i] = sum[i] * inv;
}

void gaussian_top_k(float* gate, int64_t n_rows, int64_t n) {
  for (int64_t r = 0; r < n_rows; ++r) {
    // In ggml's precisions: sums in double, each result rounded to f32.
    float* row = gate + r * n;
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += row[i];
    const float mean = static_cast<float>(sum) / static_cast<float>(n);
    double sq = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const float d = row[i] - mean;
      sq += d * d;
    }
    const float sd = std::sqrt(static_cast<float>(sq) * (1.0f / static_cast<float>(n - 1)));
    const float cutoff = mean + sd * AltUpShape::kSparsitySdMultiple;
    for (int64_t i = 0; i < n; ++i) row[i] = std::max(0.0f, row[i] - cutoff);
  }
}

}  // namespace tc::model
