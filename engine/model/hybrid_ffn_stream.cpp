// HybridFfnStream: tiles of FFN rows copied over the copy queue into two
// device stages, computed on the stream as they land.
#include "engine/model/hybrid_ffn_stream.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace tc::model {
namespace {

// The tile of rows [n0, n0 + r) of a host matrix as a device matrix over `stage`.
kernels::Tensor stage_view(const kernels::Tensor& host, kernels::Buffer& stage, int64_t r) {
  kernels::Tensor t = host;
  t.data = stage.data();
  t.ne = {host.ne[0], r, 1, 1};
  t.memory = kernels::MemoryKind::Device;
  return t;
}

}  // namespace

int64_t stream_tile_rows(int64_t max_row_bytes, int64_t n_ff, int64_t tile_bytes) {
  return std::clamp<int64_t>(tile_bytes / std::max<int64_t>(max_row_bytes, 1), 1, std::max<int64_t>(n_ff, 1));
}

uint64_t stream_stage_bytes(int64_t max_row_bytes, int64_t n_ff) {
  return 2 * 3 * static_cast<uint64_t>(stream_tile_rows(max_row_bytes, n_ff)) * static_cast<uint64_t>(max_row_bytes);
}

HybridFfnStream::HybridFfnStream(const ModelSpec& spec, kernels::Backend& device, const HybridWeights& weights,
                                 kernels::Activation activation, int64_t tile_bytes)
    : spec_(spec), device_(device), weights_(weights), activation_(activation) {
  int64_t max_row_bytes = 0;
  for (const auto& w : weights.layers) {
    for (const kernels::Tensor* t : {&w.host_gate, &w.host_up, &w.host_down_t}) {
      if (t->layout != kernels::WeightLayout::Rows || t->row_bytes != kernels::row_bytes(t->dtype, t->ne[0]) ||
          t->n_rows() != spec.n_ff) {
        throw std::invalid_argument("streaming the FFN needs its host rows packed, row layout, n_ff of them");
      }
      max_row_bytes = std::max(max_row_bytes, t->row_bytes);
    }
  }
  tile_rows_ = stream_tile_rows(max_row_bytes, spec.n_ff, tile_bytes);
  const auto stage_bytes = static_cast<size_t>(tile_rows_ * max_row_bytes);
  for (auto& s : stages_) {
    s.gate = device.allocate(stage_bytes);
    s.up = device.allocate(stage_bytes);
    s.down_t = device.allocate(stage_bytes);
    s.copied = device.make_event();
    s.done = device.make_event();
  }
  std::vector<int32_t> rows(static_cast<size_t>(tile_rows_));
  std::iota(rows.begin(), rows.end(), 0);
  rows_ = device.allocate(rows.size() * sizeof(int32_t));
  device.copy_to_device(rows_.data(), rows.data(), rows.size() * sizeof(int32_t));
  device.synchronize();  // `rows` is a local
  queue_ = device.make_copy_queue();
}

HybridFfnStream::~HybridFfnStream() {
  try {
    device_.synchronize();
  } catch (...) {  // a faulted device: nothing to wait for, and a destructor must not throw
  }
}

void HybridFfnStream::run(int64_t layer, const float* cur, int64_t n_tokens, float* gate, float* up, float* partial,
                          float* out) {
  const HybridLayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const auto* rows = rows_.as<int32_t>();
  for (int64_t n0 = 0; n0 < spec_.n_ff; n0 += tile_rows_) {
    const int64_t r = std::min(tile_rows_, spec_.n_ff - n0);
    Stage& s = stages_[static_cast<size_t>(next_stage_)];
    next_stage_ ^= 1;
    // The copy overwrites the stage only once the ops that read it last are done.
    if (s.used) queue_->wait_event(*s.done);
    for (const auto& [host, stage] : {std::pair{&w.host_gate, &s.gate}, std::pair{&w.host_up, &s.up},
                                      std::pair{&w.host_down_t, &s.down_t}}) {
      const auto bytes = static_cast<size_t>(r * host->row_bytes);
      queue_->copy_to_device(stage->data(), host->row(n0), bytes);
      streamed_bytes_ += bytes;
    }
    queue_->record_event(*s.copied);
    device_.wait_event(*s.copied);
    device_.matmul(stage_view(w.host_gate, s.gate, r), cur, n_tokens, gate);
    device_.matmul(stage_view(w.host_up, s.up, r), cur, n_tokens, up);
    device_.ffn_activation(activation_, gate, up, n_tokens * r, up);
    float* y = n0 == 0 ? out : partial;
    device_.axpy_rows(stage_view(w.host_down_t, s.down_t, r), up, n_tokens, rows, r, y);
    if (n0 > 0) device_.add(out, partial, n_tokens * spec_.n_embd);
    device_.record_event(*s.done);
    s.used = true;
  }
}

}  // namespace tc::model
