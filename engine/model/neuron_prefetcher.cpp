// NeuronPrefetcher: the job table shared with the prefetch thread, and the
// thread's gather-then-copy of one fill.
#include "engine/model/neuron_prefetcher.h"

#include <algorithm>
#include <cstring>

#include "kernels/check.h"

namespace tc::model {
namespace {

// The three tensors a neuron's rows come from, host side and device side.
struct RowSource {
  const kernels::Tensor& host;
  const kernels::Tensor& device;
};

int64_t packed_row_bytes(const kernels::Tensor& t) { return kernels::row_bytes(t.dtype, t.n_cols()); }

}  // namespace

NeuronPrefetcher::NeuronPrefetcher(kernels::Backend& device, const HybridWeights& weights)
    : device_(device), weights_(weights) {
  const size_t n_layer = weights.layers.size();
  jobs_.resize(n_layer);
  busy_.assign(n_layer, 0);
  shared_.state.assign(n_layer, JobState::Idle);
  shared_.posted.assign(n_layer, 0);
  int64_t staging_bytes = 0;
  int64_t max_slots = 0;
  for (size_t l = 0; l < n_layer; ++l) {
    const HybridLayerWeights& w = weights.layers[l];
    jobs_[l].fills.reserve(static_cast<size_t>(w.n_slots));
    jobs_[l].slots_free = device.make_event();
    jobs_[l].copied = device.make_event();
    max_slots = std::max(max_slots, w.n_slots);
    if (w.n_slots > 0) {
      const int64_t neuron_bytes =
          packed_row_bytes(w.host_gate) + packed_row_bytes(w.host_up) + packed_row_bytes(w.host_down_t);
      staging_bytes = std::max(staging_bytes, w.n_slots * neuron_bytes);
    }
  }
  sorted_.reserve(static_cast<size_t>(max_slots));
  queue_ = device.make_copy_queue();
  staging_ = device.allocate_host(static_cast<size_t>(staging_bytes));
  thread_ = std::thread([this] { thread_main(); });
}

NeuronPrefetcher::~NeuronPrefetcher() {
  {
    std::lock_guard lock(shared_.mutex);
    shared_.stop = true;
  }
  shared_.wake.notify_one();
  thread_.join();
}

void NeuronPrefetcher::post(int64_t layer, std::span<const SlotFill> fills) {
  const auto l = static_cast<size_t>(layer);
  TC_CHECK(!busy(layer), "NeuronPrefetcher: a layer has one fill in flight at a time");
  TC_CHECK(static_cast<int64_t>(fills.size()) <= weights_.layers[l].n_slots, "NeuronPrefetcher: more fills than slots");
  LayerJob& job = jobs_[l];
  job.fills.assign(fills.begin(), fills.end());
  // Every op issued so far (reads of the slots' old occupants included)
  // comes before the copies.
  device_.record_event(*job.slots_free);
  {
    std::lock_guard lock(shared_.mutex);
    if (shared_.error) std::rethrow_exception(shared_.error);
    shared_.state[l] = JobState::Posted;
    shared_.posted[(shared_.head + shared_.n_posted) % shared_.posted.size()] = layer;
    ++shared_.n_posted;
  }
  busy_[l] = 1;
  shared_.wake.notify_one();
}

std::span<const SlotFill> NeuronPrefetcher::collect(int64_t layer, bool wait) {
  const auto l = static_cast<size_t>(layer);
  if (!busy(layer)) return {};
  {
    std::unique_lock lock(shared_.mutex);
    if (wait) shared_.issued.wait(lock, [&] { return shared_.state[l] != JobState::Posted; });
    if (shared_.state[l] == JobState::Failed) std::rethrow_exception(shared_.error);
    if (shared_.state[l] != JobState::Issued) return {};
    shared_.state[l] = JobState::Idle;
  }
  busy_[l] = 0;
  device_.wait_event(*jobs_[l].copied);
  return jobs_[l].fills;
}

void NeuronPrefetcher::thread_main() {
  for (;;) {
    int64_t layer = 0;
    {
      std::unique_lock lock(shared_.mutex);
      shared_.wake.wait(lock, [this] { return shared_.stop || shared_.n_posted > 0; });
      if (shared_.stop) break;
      layer = shared_.posted[shared_.head];
      shared_.head = (shared_.head + 1) % shared_.posted.size();
      --shared_.n_posted;
    }
    JobState done = JobState::Issued;
    try {
      issue(layer);
    } catch (...) {
      std::lock_guard lock(shared_.mutex);
      shared_.error = std::current_exception();
      done = JobState::Failed;
    }
    {
      std::lock_guard lock(shared_.mutex);
      shared_.state[static_cast<size_t>(layer)] = done;
    }
    shared_.issued.notify_all();
  }
  // Copies still queued read the staging: finish them before it goes.
  try {
    queue_->synchronize();
  } catch (...) {
  }
}

void NeuronPrefetcher::issue(int64_t layer) {
  const HybridLayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  const LayerJob& job = jobs_[static_cast<size_t>(layer)];
  // The previous fill's copies read the staging until they are done.
  queue_->synchronize();
  sorted_.assign(job.fills.begin(), job.fills.end());
  std::sort(sorted_.begin(), sorted_.end(), [](const SlotFill& a, const SlotFill& b) { return a.slot < b.slot; });
  const RowSource sources[] = {{w.host_gate, w.hot_gate}, {w.host_up, w.hot_up}, {w.host_down_t, w.hot_down_t}};
  const auto n = static_cast<int64_t>(sorted_.size());
  std::byte* staging = staging_.as<std::byte>();
  // Gather: per tensor, the rows in slot order.
  std::byte* out = staging;
  for (const RowSource& src : sources) {
    const int64_t row_bytes = packed_row_bytes(src.host);
    for (int64_t k = 0; k < n; ++k, out += row_bytes) {
      std::memcpy(out, src.host.row(sorted_[static_cast<size_t>(k)].neuron), static_cast<size_t>(row_bytes));
    }
  }
  // Copy: one copy per run of consecutive slots per tensor, after the
  // device's stream passed the post.
  queue_->wait_event(*job.slots_free);
  const std::byte* in = staging;
  for (const RowSource& src : sources) {
    const int64_t row_bytes = packed_row_bytes(src.host);
    for (int64_t k = 0; k < n;) {
      int64_t run = 1;
      while (k + run < n && sorted_[static_cast<size_t>(k + run)].slot == sorted_[static_cast<size_t>(k)].slot + run) {
        ++run;
      }
      queue_->copy_to_device(src.device.row(w.n_hot + sorted_[static_cast<size_t>(k)].slot), in + k * row_bytes,
                             static_cast<size_t>(run * row_bytes));
      k += run;
    }
    in += n * row_bytes;
  }
  queue_->record_event(*job.copied);
}

}  // namespace tc::model
