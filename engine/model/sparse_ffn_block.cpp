// SparseFfnBlock::run: predictor, predicted set, live set, gathered gate/up,
// scaled-row down (see the header for the steps).
#include "engine/model/sparse_ffn_block.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace tc::model {

SparseFfnBlock::SparseFfnBlock(const ModelSpec& spec, kernels::Backend& backend,
                               std::vector<sparse::LayerPredictor> predictors, kernels::Activation activation)
    : spec_(spec), backend_(backend), predictors_(std::move(predictors)), activation_(activation) {
  if (activation != kernels::Activation::ReGLU && activation != kernels::Activation::DReLU &&
      activation != kernels::Activation::Relu && activation != kernels::Activation::ReluSquared) {
    throw std::invalid_argument("the sparse FFN needs a ReLU-family model (reglu, drelu, relu or relu2)");
  }
  if (static_cast<int64_t>(predictors_.size()) != spec.n_layer) {
    throw std::invalid_argument("the sparse FFN needs one predictor per layer");
  }
  for (const auto& p : predictors_) max_rank_ = std::max(max_rank_, p.rank());
  const auto n_layer = static_cast<size_t>(spec.n_layer);
  counters_.token_layers.assign(n_layer, 0);
  counters_.predicted.assign(n_layer, 0);
  counters_.computed.assign(n_layer, 0);
  rows_.resize(static_cast<size_t>(spec.n_ff));
  live_.resize(static_cast<size_t>(spec.n_ff));
}

void SparseFfnBlock::reserve(int64_t n_tokens) {
  if (n_tokens <= capacity_tokens_) return;
  const auto t = static_cast<size_t>(n_tokens);
  const auto n_ff = static_cast<size_t>(spec_.n_ff);
  hidden_.resize(t * static_cast<size_t>(max_rank_));
  scores_.resize(t * n_ff);
  gate_.resize(t * n_ff);
  up_.resize(t * n_ff);
  capacity_tokens_ = n_tokens;
}

void SparseFfnBlock::run(int64_t layer, const LayerWeights& w, const float* x, const float* cur, int64_t n_tokens,
                         float* out) {
  reserve(n_tokens);
  const auto l = static_cast<size_t>(layer);
  const auto& pred = predictors_[l];
  const int64_t n_ff = spec_.n_ff;
  const int64_t rank = pred.rank();
  float* hidden = hidden_.data();
  const float* scores = scores_.data();
  float* gate = gate_.data();
  float* up = up_.data();
  int32_t* rows = rows_.data();
  int32_t* live = live_.data();

  // 1. Predictor: scores = fc2 · relu(fc1 · x); P = union over the tokens.
  backend_.matmul(pred.fc1, x, n_tokens, hidden);
  backend_.synchronize();
  for (int64_t i = 0; i < n_tokens * rank; ++i) hidden[i] = std::max(hidden[i], 0.0f);
  backend_.matmul(pred.fc2, hidden, n_tokens, scores_.data());
  backend_.synchronize();
  // The scans below write every index and advance by the test (no branch
  // per neuron: a predicted set is an unpredictable tenth of n_ff).
  int64_t n_pred = 0;
  for (int64_t i = 0; i < n_ff; ++i) {
    bool on = scores[i] > pred.threshold;
    for (int64_t t = 1; t < n_tokens; ++t) on |= scores[t * n_ff + i] > pred.threshold;
    rows[n_pred] = static_cast<int32_t>(i);
    n_pred += on;
  }

  // 2. Gate over P. Each token keeps only its own predicted neurons (a
  // gate of 0 there is 0 after the ReLU), so its output does not depend on
  // the other tokens of the step. L = the neurons whose gate is positive for
  // some token (the others are exactly 0 after the ReLU).
  backend_.matmul_rows(w.ffn_gate, cur, n_tokens, rows, n_pred, gate);
  backend_.synchronize();
  if (n_tokens > 1) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* score = scores + t * n_ff;
      float* g = gate + t * n_pred;
      for (int64_t k = 0; k < n_pred; ++k) {
        if (!(score[rows[k]] > pred.threshold)) g[k] = 0.0f;
      }
    }
  }
  int64_t n_live = 0;
  for (int64_t k = 0; k < n_pred; ++k) {
    bool on = gate[k] > 0.0f;
    for (int64_t t = 1; t < n_tokens; ++t) on |= gate[t * n_pred + k] > 0.0f;
    live[n_live] = static_cast<int32_t>(k);
    n_live += on;
  }
  // Compact gate to [T, |L|] and rows to L in place: each write lands at or
  // before the element it copies, and before every element still to be read.
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t m = 0; m < n_live; ++m) gate[t * n_live + m] = gate[t * n_pred + live[m]];
  }
  for (int64_t m = 0; m < n_live; ++m) rows[m] = rows[live[m]];
  counters_.token_layers[l] += n_tokens;
  counters_.predicted[l] += n_pred;
  counters_.computed[l] += n_live;

  // 3. Up over L (gated forms), the activation, down as scaled rows of ffn_down_t.
  if (kernels::is_gated(activation_)) {
    backend_.matmul_rows(w.ffn_up, cur, n_tokens, rows, n_live, up);
    backend_.ffn_activation(activation_, gate, up, n_tokens * n_live, up);
  } else {
    backend_.ffn_activation(activation_, gate, nullptr, n_tokens * n_live, up);
  }
  backend_.axpy_rows(w.ffn_down_t, up, n_tokens, rows, n_live, out);
}

}  // namespace tc::model
