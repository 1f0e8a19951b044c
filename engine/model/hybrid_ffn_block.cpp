// HybridFfnBlock::run: predictor on the device, the predicted set split
// device/CPU on the host (hot and cached neurons on the device), the
// device's part there while the CPU runs the rest, one add to merge (see
// the header for the steps and what crosses the bus).
#include "engine/model/hybrid_ffn_block.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tc::model {
namespace {

// Rows [0, n) of a row-layout matrix, as a matrix of n rows.
kernels::Tensor leading_rows(kernels::Tensor t, int64_t n) {
  t.ne = {t.ne[0], n, 1, 1};
  return t;
}

}  // namespace

HybridFfnBlock::HybridFfnBlock(const ModelSpec& spec, kernels::Backend& device, kernels::Backend& cpu,
                               const sparse::PredictorSet& predictors, const HybridWeights& weights,
                               kernels::Activation activation, PrefetchOptions prefetch)
    : spec_(spec), device_(device), cpu_(cpu), predictors_(predictors), weights_(weights), activation_(activation) {
  if (activation != kernels::Activation::ReGLU && activation != kernels::Activation::DReLU) {
    throw std::invalid_argument("the hybrid FFN needs a ReLU-family model (reglu or drelu)");
  }
  if (cpu.device() != kernels::DeviceKind::Cpu) {
    throw std::invalid_argument("the hybrid FFN's cold part needs a CPU backend");
  }
  if (static_cast<int64_t>(predictors.layers.size()) != spec.n_layer ||
      static_cast<int64_t>(weights.layers.size()) != spec.n_layer) {
    throw std::invalid_argument("the hybrid FFN needs one predictor and one weight split per layer");
  }
  for (const auto& p : predictors.layers) {
    max_rank_ = std::max(max_rank_, p.rank());
    fc1_.push_back(device.upload(p.fc1));
    fc2_.push_back(device.upload(p.fc2));
  }
  const auto n_layer = static_cast<size_t>(spec.n_layer);
  counters_.token_layers.assign(n_layer, 0);
  counters_.predicted.assign(n_layer, 0);
  counters_.computed.assign(n_layer, 0);
  split_.hot.assign(n_layer, 0);
  split_.cached.assign(n_layer, 0);
  split_.cold.assign(n_layer, 0);
  split_.dense_device.assign(n_layer, 0);
  split_.dense_cold.assign(n_layer, 0);
  n_words_ = (spec.n_ff + 31) / 32;
  const auto n_ff = static_cast<size_t>(spec.n_ff);
  cold_rows_.resize(n_ff);
  cold_all_.resize(n_ff);
  device_ids_.resize(n_ff);
  live_.resize(n_ff);
  device_rows_dev_ = device.allocate(n_ff * sizeof(int32_t));
  device_rows_host_ = device.allocate_host(n_ff * sizeof(int32_t));
  if (prefetch.mode != PrefetchMode::Off) {
    prefetch_ = std::make_unique<HybridPrefetch>(spec, device, cpu, weights, predictors, std::move(prefetch));
  }
}

void HybridFfnBlock::reserve(int64_t n_tokens) {
  // The streamed dense steps' stages exist only where a step can be that
  // long (the placement counts them only then: hybrid_step_workspace).
  if (n_tokens >= kStreamMinTokens && stream_ == nullptr) {
    stream_ = std::make_unique<HybridFfnStream>(spec_, device_, weights_, activation_);
  }
  if (n_tokens <= capacity_tokens_) return;
  // The buffers replaced below may still be read by ops issued for an
  // earlier run in this step (a decode run, then a longer prompt run of the
  // same layer): a buffer an issued op uses is freed only after synchronize().
  if (capacity_tokens_ > 0) device_.synchronize();
  const int64_t t = std::max(n_tokens, capacity_tokens_ * 2);
  const auto f32 = [t](int64_t n) { return static_cast<size_t>(t * n) * sizeof(float); };
  const auto words = 2 * static_cast<size_t>(t * n_words_) * sizeof(uint32_t);  // the layer's and the guess
  hidden_dev_ = device_.allocate(f32(max_rank_));
  scores_dev_ = device_.allocate(f32(spec_.n_ff));
  bits_dev_ = device_.allocate(words);
  device_mask_dev_ = device_.allocate(f32(spec_.n_ff));
  device_gate_dev_ = device_.allocate(f32(spec_.n_ff));
  device_up_dev_ = device_.allocate(f32(spec_.n_ff));
  partial_dev_ = device_.allocate(f32(spec_.n_embd));
  bits_host_ = device_.allocate_host(words);
  cur_host_ = device_.allocate_host(f32(spec_.n_embd));
  device_mask_host_ = device_.allocate_host(f32(spec_.n_ff));
  partial_host_ = device_.allocate_host(f32(spec_.n_embd));
  cold_gate_.resize(static_cast<size_t>(t * spec_.n_ff));
  cold_up_.resize(static_cast<size_t>(t * spec_.n_ff));
  capacity_tokens_ = t;
}

void HybridFfnBlock::run_streamed(int64_t layer, const float* cur, int64_t n_tokens, float* out) {
  using Mark = HybridStepTimer::Mark;
  // The time split's marks in their order; the whole layer counts as the device's part.
  if (timer_ != nullptr) {
    timer_->mark(layer, Mark::PredictEnd);
    timer_->mark(layer, Mark::HotBegin);
  }
  stream_->run(layer, cur, n_tokens, device_gate_dev_.as<float>(), device_up_dev_.as<float>(),
               partial_dev_.as<float>(), out);
  if (timer_ != nullptr) {
    for (const Mark m : {Mark::HotEnd, Mark::MergeBegin, Mark::MergeEnd}) timer_->mark(layer, m);
  }
}

bool HybridFfnBlock::token_predicted(int64_t t, int32_t neuron) const {
  const uint32_t word = bits_host_.as<const uint32_t>()[t * n_words_ + neuron / 32];
  return ((word >> (neuron % 32)) & 1u) != 0;
}

void HybridFfnBlock::predict(int64_t layer, const float* x, int64_t n_tokens, bool guess) {
  auto* bits = bits_dev_.as<uint32_t>();
  float* hidden = hidden_dev_.as<float>();
  float* scores = scores_dev_.as<float>();
  for (int64_t k = 0; k < (guess ? 2 : 1); ++k) {
    const auto l = static_cast<size_t>(layer + k);
    const auto& pred = predictors_.layers[l];
    device_.matmul(fc1_[l].tensor, x, n_tokens, hidden);
    device_.relu(hidden, n_tokens * pred.rank());
    device_.matmul(fc2_[l].tensor, hidden, n_tokens, scores);
    device_.threshold_bits(scores, n_tokens, spec_.n_ff, pred.threshold, bits + k * n_tokens * n_words_);
  }
  const size_t bits_bytes = static_cast<size_t>((guess ? 2 : 1) * n_tokens * n_words_) * sizeof(uint32_t);
  device_.copy_to_host(bits_host_.data(), bits, bits_bytes);
  if (timer_ != nullptr) timer_->add_bus(bits_bytes);
}

void HybridFfnBlock::partition(int64_t layer, const HybridLayerWeights& w, int64_t n_tokens, bool sparse) {
  const int64_t n_ff = spec_.n_ff;
  const auto* bits = bits_host_.as<const uint32_t>();
  auto* device_rows = device_rows_host_.as<int32_t>();
  // Dense steps leave the neuron cache to the CPU: the device part is then
  // the hot rows in order, one plain matmul (cuBLAS for prompt chunks).
  const HybridPrefetch* prefetch = sparse ? prefetch_.get() : nullptr;
  n_hot_ = 0;
  n_device_ = 0;
  n_cold_ = 0;
  n_cold_all_ = 0;
  // P ascending: the union over the tokens' bitmasks (every neuron when dense).
  for (int64_t word_idx = 0; word_idx < n_words_; ++word_idx) {
    uint32_t word = ~0u;
    if (sparse) {
      word = 0;
      for (int64_t t = 0; t < n_tokens; ++t) word |= bits[t * n_words_ + word_idx];
    }
    for (int64_t b = 0; b < 32 && word != 0; ++b, word >>= 1) {
      const int64_t neuron = 32 * word_idx + b;
      if ((word & 1u) == 0 || neuron >= n_ff) continue;
      const auto id = static_cast<int32_t>(neuron);
      int32_t position = w.hot_position[static_cast<size_t>(neuron)];
      if (position >= 0) {
        ++n_hot_;
      } else if (prefetch != nullptr) {
        cold_all_[static_cast<size_t>(n_cold_all_++)] = id;
        const int32_t slot = prefetch->resident_slot(layer, id);
        if (slot >= 0) position = static_cast<int32_t>(w.n_hot) + slot;
      }
      if (position >= 0) {
        device_ids_[static_cast<size_t>(n_device_)] = id;
        device_rows[n_device_++] = position;
      } else {
        cold_rows_[static_cast<size_t>(n_cold_++)] = id;
      }
    }
  }
  if (!sparse || n_tokens == 1) return;
  auto* mask = device_mask_host_.as<float>();
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t k = 0; k < n_device_; ++k) {
      mask[t * n_device_ + k] = token_predicted(t, device_ids_[static_cast<size_t>(k)]) ? 1.0f : 0.0f;
    }
  }
}

int64_t HybridFfnBlock::run_cold(const HybridLayerWeights& w, int64_t n_tokens, bool sparse) {
  const int64_t n_cold = n_cold_;
  const float* cur = cur_host_.as<const float>();
  float* gate = cold_gate_.data();
  float* up = cold_up_.data();
  int32_t* rows = cold_rows_.data();
  int32_t* live = live_.data();
  if (n_cold == 0) return 0;
  cpu_.matmul_rows(w.host_gate, cur, n_tokens, rows, n_cold, gate);
  if (sparse && n_tokens > 1) {
    for (int64_t t = 0; t < n_tokens; ++t) {
      for (int64_t k = 0; k < n_cold; ++k) {
        if (!token_predicted(t, rows[k])) gate[t * n_cold + k] = 0.0f;
      }
    }
  }
  // The live set: neurons whose gate is positive for some token (the others
  // are exactly 0 after the ReLU); gate and rows compacted in place.
  int64_t n_live = 0;
  for (int64_t k = 0; k < n_cold; ++k) {
    bool on = false;
    for (int64_t t = 0; t < n_tokens && !on; ++t) on = gate[t * n_cold + k] > 0.0f;
    if (on) live[n_live++] = static_cast<int32_t>(k);
  }
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t m = 0; m < n_live; ++m) gate[t * n_live + m] = gate[t * n_cold + live[m]];
  }
  for (int64_t m = 0; m < n_live; ++m) rows[m] = rows[live[m]];
  if (n_live == 0) return 0;
  cpu_.matmul_rows(w.host_up, cur, n_tokens, rows, n_live, up);
  cpu_.ffn_activation(activation_, gate, up, n_tokens * n_live, up);
  cpu_.axpy_rows(w.host_down_t, up, n_tokens, rows, n_live, partial_host_.as<float>());
  return n_live;
}

void HybridFfnBlock::run(int64_t layer, const float* x, const float* cur, int64_t n_tokens, bool sparse, float* out) {
  reserve(n_tokens);
  // A layer without cold neurons has nothing to stream: its hot rows are all on the device.
  if (!sparse && n_tokens >= kStreamMinTokens && weights_.layers[static_cast<size_t>(layer)].n_hot < spec_.n_ff) {
    run_streamed(layer, cur, n_tokens, out);
    return;
  }
  const auto l = static_cast<size_t>(layer);
  const HybridLayerWeights& w = weights_.layers[l];
  const int64_t n_embd = spec_.n_embd;
  const size_t embd_bytes = static_cast<size_t>(n_tokens * n_embd) * sizeof(float);

  // 1. Device: the predictor (and the next layer's guess) as bitmasks;
  // ffn_norm(x) and the bitmasks to the host.
  const bool guess = sparse && prefetch_ != nullptr && prefetch_->guesses_next(layer);
  if (sparse) predict(layer, x, n_tokens, guess);
  device_.copy_to_host(cur_host_.data(), cur, embd_bytes);
  const double wait_start = timer_ != nullptr ? host_seconds() : 0.0;
  if (timer_ != nullptr) timer_->mark(layer, HybridStepTimer::Mark::PredictEnd);
  device_.synchronize();
  if (timer_ != nullptr) timer_->add_wait(host_seconds() - wait_start);

  // 2. Host: P split into the device's part and the CPU's; the layer's
  // prefetched rows, once issued, join the device's part.
  if (prefetch_ != nullptr) prefetch_->begin_layer(layer);
  partition(layer, w, n_tokens, sparse);
  counters_.token_layers[l] += sparse ? n_tokens : 0;
  counters_.predicted[l] += sparse ? n_device_ + n_cold_ : 0;
  counters_.computed[l] += sparse ? n_device_ : 0;
  if (sparse) {
    split_.hot[l] += n_hot_;
    split_.cached[l] += n_device_ - n_hot_;
    split_.cold[l] += n_cold_;
  } else {
    split_.dense_device[l] += n_device_;
    split_.dense_cold[l] += n_cold_;
  }

  // 3. Device: hot ∩ P and the cached neurons, issued before the CPU starts
  // (asynchronous on CUDA).
  const int64_t n_device = n_device_;
  if (timer_ != nullptr) {
    timer_->mark(layer, HybridStepTimer::Mark::HotBegin);
    // cur down; the device's rows and the per-token mask up.
    const bool mask = sparse && n_tokens > 1 && n_device > 0;
    timer_->add_bus(embd_bytes + static_cast<size_t>(n_device) * sizeof(int32_t) +
                    (mask ? static_cast<size_t>(n_tokens * n_device) * sizeof(float) : 0));
  }
  if (n_device > 0) {
    const auto* rows = device_rows_dev_.as<int32_t>();
    float* gate = device_gate_dev_.as<float>();
    float* up = device_up_dev_.as<float>();
    device_.copy_to_device(device_rows_dev_.data(), device_rows_host_.data(),
                           static_cast<size_t>(n_device) * sizeof(int32_t));
    if (sparse) {
      device_.matmul_rows(w.hot_gate, cur, n_tokens, rows, n_device, gate);
    } else {
      device_.matmul(leading_rows(w.hot_gate, n_device), cur, n_tokens, gate);
    }
    if (sparse && n_tokens > 1) {
      // relu(gate) * mask: 0 where the token did not predict the neuron (the
      // activation's relu(gate) then keeps it 0), relu(gate) exactly elsewhere.
      device_.copy_to_device(device_mask_dev_.data(), device_mask_host_.data(),
                             static_cast<size_t>(n_tokens * n_device) * sizeof(float));
      device_.ffn_activation(kernels::Activation::ReGLU, gate, device_mask_dev_.as<float>(), n_tokens * n_device, gate);
    }
    if (sparse) {
      device_.matmul_rows(w.hot_up, cur, n_tokens, rows, n_device, up);
    } else {
      device_.matmul(leading_rows(w.hot_up, n_device), cur, n_tokens, up);
    }
    device_.ffn_activation(activation_, gate, up, n_tokens * n_device, up);
    device_.axpy_rows(w.hot_down_t, up, n_tokens, rows, n_device, out);
  }

  // 4. The next layer's guess into its cache (after this layer's device ops
  // were issued, so the copies are ordered after every read of old slots).
  if (sparse && prefetch_ != nullptr) {
    const uint32_t* guess_bits = guess ? bits_host_.as<const uint32_t>() + n_tokens * n_words_ : nullptr;
    prefetch_->end_layer(layer, std::span(cold_all_.data(), static_cast<size_t>(n_cold_all_)), n_hot_, guess_bits,
                         n_tokens);
  }

  if (timer_ != nullptr) timer_->mark(layer, HybridStepTimer::Mark::HotEnd);

  // 5. CPU, meanwhile: the rest of cold ∩ P into the partial sum.
  const double cpu_start = timer_ != nullptr ? host_seconds() : 0.0;
  const int64_t n_cold_live = run_cold(w, n_tokens, sparse);
  if (timer_ != nullptr) timer_->add_cpu(host_seconds() - cpu_start);
  counters_.computed[l] += sparse ? n_cold_live : 0;
  const bool cold_ran = n_cold_live > 0;

  // 6. Merge: one copy of n_embd floats per token and one add.
  if (timer_ != nullptr) timer_->mark(layer, HybridStepTimer::Mark::MergeBegin);
  if (n_device > 0 && cold_ran) {
    device_.copy_to_device(partial_dev_.data(), partial_host_.data(), embd_bytes);
    device_.add(out, partial_dev_.as<float>(), n_tokens * n_embd);
  } else if (n_device == 0) {
    if (!cold_ran) std::memset(partial_host_.data(), 0, embd_bytes);  // nothing fired: the FFN adds 0
    device_.copy_to_device(out, partial_host_.data(), embd_bytes);
  }
  if (timer_ != nullptr) {
    if (n_device == 0 || cold_ran) timer_->add_bus(embd_bytes);  // the partial sum, or the CPU's whole result
    timer_->mark(layer, HybridStepTimer::Mark::MergeEnd);
  }
}

}  // namespace tc::model
