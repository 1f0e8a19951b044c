// HostDeviceBackend: a test backend that claims to be a GPU (DeviceKind::
// Cuda) but keeps its "device" memory on the host and runs every op on a
// CpuBackend. It drives the model code's device path (weights uploaded as
// packed copies, token ids and positions copied in, the head's rows gathered
// on the device, logits copied out) on machines without a GPU, and counts
// what crossed the "bus". Its copy queue (the prefetch path) is deferred like
// a real copy engine that lags: a copy lands only when the backend's stream
// waits on an event recorded after it (or the queue synchronizes), so an op
// that reads prefetched rows without that wait reads stale ones; the order of
// records, waits and prefetch copies is logged for tests to check. It also
// records the largest workspace request the CUDA backend's matmul and
// axpy_rows would make (kernels/device_scratch.h). With record_graphs it
// records step graphs as the CUDA backend does (begin_graph below).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/check.h"
#include "kernels/device_scratch.h"

namespace tc::test {

// One entry of HostDeviceBackend's queue log.
struct QueueLogEntry {
  enum class Queue { Compute, Copy };
  enum class Kind { Copy, Record, Wait };
  Queue queue;
  Kind kind;
  int event_id = -1;         // Record, Wait: the event (ids count from 0 in creation order)
  const void* dst = nullptr;  // Copy: destination and size
  size_t bytes = 0;
};

class HostDeviceBackend final : public kernels::Backend {
 public:
  explicit HostDeviceBackend(int n_threads) : cpu_(kernels::create_backend(kernels::DeviceKind::Cpu, {.n_threads = n_threads})) {}

  size_t uploaded_bytes = 0;   // weight bytes copied by upload()
  size_t allocated_bytes = 0;  // allocate(): "device" memory other than weights
  size_t scratch_peak = 0;     // the CUDA backend's workspace after the same ops: its largest request
  int long_matmul_rows = 0;    // matmul_rows calls over more than kGemvMaxTokens tokens (the GEMV, never cuBLAS)
  size_t scratch_reserved = 0;  // reserve_scratch(): the largest asked for
  // What the CUDA backend allocates with its cuBLAS handle, at construction (cuBLAS's workspace).
  const size_t blas_bytes = kernels::kCublasWorkspaceBytes;
  int uploads = 0;
  size_t to_device_bytes = 0;  // copy_to_device
  size_t to_host_bytes = 0;    // copy_to_host
  std::atomic<size_t> prefetch_bytes{0};  // copy queues' copy_to_device (issued)
  bool record_graphs = false;    // begin_graph() records step graphs (off: the ops run as issued)
  bool fail_next_graph = false;  // the next end_graph() fails, as a driver refusing a graph would
  int graphs_run = 0;            // steps run as recorded graphs
  int graphs_failed = 0;         // recordings failed or aborted
  std::vector<uint64_t> graph_keys;  // begin_graph()'s keys, in order
  std::atomic<int64_t> prefetch_copies{0};

  // The log of records, waits and copy-queue copies, in host order (thread-safe).
  std::vector<QueueLogEntry> queue_log() const {
    std::lock_guard lock(log_mutex_);
    return log_;
  }

  kernels::DeviceKind device() const override { return kernels::DeviceKind::Cuda; }
  std::string name() const override { return "host-device (test)"; }
  int n_threads() const override { return cpu_->n_threads(); }
  kernels::Buffer allocate(size_t bytes) override {
    not_recording("allocate()");
    allocated_bytes += bytes;
    return kernels::Buffer::host(bytes);
  }
  kernels::Buffer allocate_host(size_t bytes) override {
    not_recording("allocate_host()");
    return kernels::Buffer::host(bytes);
  }
  void reserve_scratch(size_t bytes) override {
    not_recording("reserve_scratch()");
    scratch_reserved = std::max(scratch_reserved, bytes);
  }
  // A packed copy, as the CUDA backend makes (row_bytes = the packed size).
  kernels::PlacedTensor upload(const kernels::Tensor& host) override {
    not_recording("upload()");
    kernels::Tensor t = host;
    t.row_bytes = kernels::row_bytes(host.dtype, host.ne[0]);
    kernels::Buffer storage = kernels::Buffer::host(static_cast<size_t>(t.row_bytes * t.n_rows()));
    for (int64_t r = 0; r < t.n_rows(); ++r) {
      std::memcpy(storage.as<std::byte>() + r * t.row_bytes, host.row(r), static_cast<size_t>(t.row_bytes));
    }
    t.data = storage.data();
    t.memory = kernels::MemoryKind::Device;
    uploaded_bytes += storage.size();
    ++uploads;
    return {t, std::move(storage)};
  }
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    to_device_bytes += bytes;
    issue([=] { std::memcpy(dst, src, bytes); });
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    to_host_bytes += bytes;
    issue([=] { std::memcpy(dst, src, bytes); });
  }
  void copy_on_device(void* dst, const void* src, size_t bytes) override {
    issue([=] { std::memcpy(dst, src, bytes); });
  }
  // The stream only: the copy queue's copies may still be pending.
  void synchronize() override { not_recording("synchronize()"); }

  // Step graphs, as a GPU with CUDA graphs records them: with record_graphs
  // the ops between begin_graph() and end_graph() are kept, not run, and
  // end_graph() runs them in order, so a step that reads what its ops write
  // before the graph has run sees stale memory; what a graph cannot hold
  // (synchronize(), allocations, events) fails a TC_CHECK while recording.
  bool begin_graph(uint64_t key) override {
    if (!record_graphs || graphs_off_) return false;
    recording_ = true;
    graph_keys.push_back(key);
    return true;
  }
  bool end_graph() override {
    TC_CHECK(recording_, "HostDeviceBackend: end_graph() without begin_graph()");
    recording_ = false;
    std::vector<std::function<void()>> tape = std::move(tape_);
    tape_.clear();
    if (fail_next_graph) {  // the driver refused the graph: nothing runs, graphs go off
      fail_next_graph = false;
      graphs_off_ = true;
      ++graphs_failed;
      return false;
    }
    for (const auto& op : tape) op();
    ++graphs_run;
    return true;
  }
  void abort_graph() override {
    recording_ = false;
    tape_.clear();
    graphs_off_ = true;
    ++graphs_failed;
  }
  std::string graph_summary() const override { return "host-device graphs: " + std::to_string(graphs_run); }

  std::unique_ptr<kernels::Event> make_event() override {
    not_recording("make_event()");
    return std::make_unique<FakeEvent>(next_event_id_++);
  }
  std::unique_ptr<kernels::CopyQueue> make_copy_queue() override {
    not_recording("make_copy_queue()");
    return std::make_unique<FakeCopyQueue>(*this);
  }
  void record_event(kernels::Event& event) override {
    not_recording("record_event()");
    auto& e = fake(event);
    e.queue.store(nullptr);
    e.recorded.store(true);
    e.when = std::chrono::steady_clock::now();
    log({QueueLogEntry::Queue::Compute, QueueLogEntry::Kind::Record, e.id});
  }
  // Ops run when issued here, so the host's clock at each record is when
  // the stream got there.
  double elapsed_seconds(const kernels::Event& start, const kernels::Event& end) override {
    const auto& a = fake(start);
    const auto& b = fake(end);
    TC_CHECK(a.recorded.load() && b.recorded.load() && a.queue.load() == nullptr && b.queue.load() == nullptr,
             "HostDeviceBackend: elapsed_seconds between events not both recorded on the stream");
    return std::chrono::duration<double>(b.when - a.when).count();
  }
  // Lands the copies the event follows on its queue, then logs the wait.
  void wait_event(const kernels::Event& event) override {
    not_recording("wait_event()");
    const auto& e = fake(event);
    TC_CHECK(e.recorded.load(), "HostDeviceBackend: waiting on an event never recorded");
    if (FakeCopyQueue* q = e.queue.load(); q != nullptr) q->land_until(e.mark.load());
    log({QueueLogEntry::Queue::Compute, QueueLogEntry::Kind::Wait, e.id});
  }

  void matmul(const kernels::Tensor& w, const float* x, int64_t n_tokens, float* y) override {
    scratch_peak = std::max(scratch_peak, kernels::gemm_scratch(w.dtype, w.n_cols(), w.n_rows(), n_tokens).total());
    issue([=, this] { cpu_->matmul(w, x, n_tokens, y); });
  }
  void matmul_rows(const kernels::Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                   float* y) override {
    if (n_tokens > kernels::kGemvMaxTokens) ++long_matmul_rows;
    issue([=, this] { cpu_->matmul_rows(w, x, n_tokens, rows, n_rows, y); });
  }
  void axpy_rows(const kernels::Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                 float* y) override {
    scratch_peak = std::max(scratch_peak, kernels::axpy_scratch_bytes(n_rows, n_tokens, w_t.n_cols()));
    issue([=, this] { cpu_->axpy_rows(w_t, a, n_tokens, rows, n_rows, y); });
  }
  void get_rows(const kernels::Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) override {
    issue([=, this] { cpu_->get_rows(table, ids, n_tokens, out); });
  }
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) override {
    issue([=, this] { cpu_->rms_norm(x, weight, n_rows, n, eps, y); });
  }
  void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
            const kernels::RopeParams& params) override {
    issue([=, this] { cpu_->rope(x, n_tokens, n_head, head_dim, positions, params); });
  }
  void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                  float* y) override {
    issue([=, this] { cpu_->layer_norm(x, weight, bias, n_rows, n, eps, y); });
  }
  void attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv, int64_t n_head,
                 int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
                 const kernels::AttentionParams& params) override {
    issue([=, this] { cpu_->attention(q, k, v, n_tokens, n_kv, n_head, n_head_kv, head_dim, positions, out, params); });
  }
  void ffn_activation(kernels::Activation act, const float* gate, const float* up, int64_t n, float* out) override {
    issue([=, this] { cpu_->ffn_activation(act, gate, up, n, out); });
  }
  void add(float* y, const float* x, int64_t n) override {
    issue([=, this] { cpu_->add(y, x, n); });
  }
  void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) override {
    issue([=, this] { cpu_->add_bias(y, bias, n_rows, n); });
  }
  void scale(float* x, int64_t n, float s) override {
    issue([=, this] { cpu_->scale(x, n, s); });
  }
  void softcap(float* x, int64_t n, float cap) override {
    issue([=, this] { cpu_->softcap(x, n, cap); });
  }
  void relu(float* x, int64_t n) override {
    issue([=, this] { cpu_->relu(x, n); });
  }
  void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) override {
    issue([=, this] { cpu_->threshold_bits(x, n_rows, n, threshold, bits); });
  }
  void store_f16(const float* src, int64_t n, uint16_t* dst) override {
    issue([=, this] { cpu_->store_f16(src, n, dst); });
  }
  void argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) override {
    issue([=, this] { cpu_->argmax(x, n_rows, n, out); });
  }

 private:
  class FakeCopyQueue;
  struct FakeEvent final : kernels::Event {
    explicit FakeEvent(int event_id) : id(event_id) {}
    const int id;
    std::atomic<bool> recorded{false};
    std::atomic<FakeCopyQueue*> queue{nullptr};  // recorded on this copy queue; null: on the stream
    std::atomic<uint64_t> mark{0};                // copy queue: the copies [0, mark) come before it
    std::chrono::steady_clock::time_point when;   // stream: the host's clock at the last record
  };
  static FakeEvent& fake(kernels::Event& e) { return dynamic_cast<FakeEvent&>(e); }
  static const FakeEvent& fake(const kernels::Event& e) { return dynamic_cast<const FakeEvent&>(e); }

  // Copies pile up until something lands them: the stream waiting on an
  // event recorded after them, synchronize(), or destruction.
  class FakeCopyQueue final : public kernels::CopyQueue {
   public:
    explicit FakeCopyQueue(HostDeviceBackend& owner) : owner_(owner) {}
    ~FakeCopyQueue() override { land_until(UINT64_MAX); }
    void copy_to_device(void* dst, const void* src, size_t bytes) override {
      owner_.prefetch_bytes += bytes;
      ++owner_.prefetch_copies;
      owner_.log({QueueLogEntry::Queue::Copy, QueueLogEntry::Kind::Copy, -1, dst, bytes});
      std::lock_guard lock(mutex_);
      pending_.push_back({dst, src, bytes});
      ++issued_;
    }
    void record_event(kernels::Event& event) override {
      auto& e = fake(event);
      {
        std::lock_guard lock(mutex_);
        e.mark.store(issued_);
      }
      e.queue.store(this);
      e.recorded.store(true);
      owner_.log({QueueLogEntry::Queue::Copy, QueueLogEntry::Kind::Record, e.id});
    }
    // The stream's work is done when issued: nothing to wait for but the log.
    void wait_event(const kernels::Event& event) override {
      const auto& e = fake(event);
      TC_CHECK(e.recorded.load(), "HostDeviceBackend: copy queue waiting on an event never recorded");
      owner_.log({QueueLogEntry::Queue::Copy, QueueLogEntry::Kind::Wait, e.id});
    }
    void synchronize() override { land_until(UINT64_MAX); }
    // Performs the pending copies numbered below `mark`, in order.
    void land_until(uint64_t mark) {
      std::lock_guard lock(mutex_);
      while (!pending_.empty() && landed_ < mark) {
        const Pending& p = pending_.front();
        std::memcpy(p.dst, p.src, p.bytes);
        pending_.pop_front();
        ++landed_;
      }
    }

   private:
    struct Pending {
      void* dst;
      const void* src;
      size_t bytes;
    };
    HostDeviceBackend& owner_;
    std::mutex mutex_;
    std::deque<Pending> pending_;
    uint64_t issued_ = 0;  // copies issued so far
    uint64_t landed_ = 0;  // copies performed so far
  };

  // Runs an op now, or keeps it for end_graph() while recording.
  template <class Op>
  void issue(Op&& op) {
    if (recording_) {
      tape_.emplace_back(std::forward<Op>(op));
    } else {
      op();
    }
  }
  void not_recording(const char* what) const {
    if (recording_) {
      const std::string message = std::string("HostDeviceBackend: ") + what + " while recording a step graph";
      TC_CHECK(false, message.c_str());
    }
  }

  void log(const QueueLogEntry& entry) {
    std::lock_guard lock(log_mutex_);
    log_.push_back(entry);
  }

  std::unique_ptr<kernels::Backend> cpu_;
  bool recording_ = false;
  bool graphs_off_ = false;  // after a failed or aborted recording, as the CUDA backend
  std::vector<std::function<void()>> tape_;
  std::atomic<int> next_event_id_{0};
  mutable std::mutex log_mutex_;
  std::vector<QueueLogEntry> log_;
};

}  // namespace tc::test
