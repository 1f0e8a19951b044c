// Backend: the device the forward pass runs on, behind one interface (in
// the spirit of ggml-backend): memory, copies, synchronization, and the ops
// of the forward pass. The model code calls only this interface, so
// the CUDA backend slots in beside the CPU one.
// Pointers passed to ops and copies live in memory the backend addresses:
// host or mapped memory for the CPU backend; device memory for the CUDA
// backend (from allocate(), or the tensors upload() returns; pinned host
// memory from allocate_host() also works there, read over PCIe). Weight
// tensors passed to a CUDA backend must be MemoryKind::Device or PinnedHost
// (checked). Ops are issued in order on the backend's stream and may return
// before they finish (CUDA); on the CPU they run synchronously and
// synchronize() is a no-op. Free a buffer an issued op uses only after
// synchronize(). Not thread-safe: one engine thread drives a backend; a
// CopyQueue it made may be driven by one other thread at the same time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "kernels/buffer.h"
#include "kernels/check.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/tensor.h"

namespace tc::kernels {

enum class DeviceKind { Cpu, Cuda };

struct BackendOptions {
  int n_threads = 0;   // CPU worker threads, caller included; 0: physical cores
  int device_index = 0;  // which CUDA device (query_gpus() lists them)
};

// A tensor placed in a backend's memory: the view the ops take and the
// memory it points into. On the CPU backend `storage` is empty and `tensor`
// is the host view itself (zero-copy); on CUDA `storage` owns the device
// copy. Move-only; the view is valid while `storage` lives (CPU: while the
// host memory lives).
struct PlacedTensor {
  Tensor tensor;
  Buffer storage;
};

// A point in a queue of device work (a backend's stream or a CopyQueue),
// recorded after some work so that another queue can wait for that work on
// the device, the host not waiting (CUDA: a cudaEvent_t). Made by
// Backend::make_event() and used only with that backend and its copy
// queues. Recording again moves the point; a wait refers to the recording
// that came before it in host time, so the thread that records must hand
// the event to the thread that waits (the prefetcher's shared state does).
// The CPU backend's events are empty: its work is done when issued.
class Event {
 public:
  virtual ~Event() = default;
};

// A second in-order queue of host -> device copies beside a backend's
// stream (CUDA: a non-blocking stream of its own, so the copies overlap the
// ops), for prefetching weight rows while the ops run. Made by
// Backend::make_copy_queue(); ordered with the backend's stream only
// through events. One thread drives it (not necessarily the backend's).
// Destroying it waits for its copies. The CPU backend's copies are memcpys
// done when issued.
class CopyQueue {
 public:
  virtual ~CopyQueue() = default;
  // Copies `bytes` from host memory `src` to backend memory `dst` after the
  // copies (and waits) issued on this queue before; may return at once.
  // `src` must stay unchanged until synchronize() (or until an event
  // recorded after the copy has been waited for by the host), and ops read
  // `dst` only after waiting on such an event (Backend::wait_event). From
  // allocate_host() memory the copy is truly asynchronous on CUDA.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  // Records `event` after the copies issued so far on this queue.
  virtual void record_event(Event& event) = 0;
  // Copies issued after this start only once the work `event` marks (on
  // the backend's stream) is done; the host does not wait.
  virtual void wait_event(const Event& event) = 0;
  // The host waits for every copy issued so far.
  virtual void synchronize() = 0;
};

// Asking for a backend this build or machine cannot provide.
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind device() const = 0;
  virtual std::string name() const = 0;   // "cpu (avx2, 2 threads)"
  virtual int n_threads() const = 0;
  // body(i) for every i in [0, n), on the host: on the CPU backend's threads
  // (each i once, any order, concurrently), elsewhere one after another on
  // the calling thread. For host work between steps (sampling a step's
  // sequences); body must be safe to run for different i at once.
  virtual void host_parallel(int64_t n, const std::function<void(int64_t i)>& body) {
    for (int64_t i = 0; i < n; ++i) body(i);
  }

  // Working memory for activations and the KV cache on this device
  // (MemoryKind::Host on the CPU, Device on CUDA), zero-filled.
  virtual Buffer allocate(size_t bytes) = 0;
  // Host memory the CPU reads and writes directly and this backend copies to
  // and from fastest: page-locked (PinnedHost) on CUDA, so copies are truly
  // asynchronous; ordinary Host memory on the CPU. Zero-filled. For staging
  // token ids, positions, logits and sampled ids.
  virtual Buffer allocate_host(size_t bytes) = 0;
  // A weight tensor placed where this backend's ops read it. `host`: any
  // memory the CPU reads (heap, mapped file). CUDA: a device copy with rows
  // packed (row_bytes = the packed size), same dtype and ne. CPU: `host`
  // itself, nothing copied. Synchronous: `host` may change or go away once
  // this returns (CPU: the returned view still points into it).
  virtual PlacedTensor upload(const Tensor& host) = 0;
  // Copies of `bytes` bytes, in order with the ops: the copy sees every op
  // issued before it and the ops issued after it see the copy. May return
  // before the copy is done: `src` must stay unchanged and `dst` unread until
  // synchronize(). copy_to_device: host -> backend memory; copy_to_host:
  // backend -> host memory; copy_on_device: within backend memory (ranges
  // must not overlap). The CPU backend copies with memcpy at once.
  virtual void copy_to_device(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every op and copy issued so far has finished. CUDA: also
  // where a fault of an earlier kernel surfaces (as CudaError).
  virtual void synchronize() = 0;
  // Events and a second copy queue (see above), for the hybrid prefetch path.
  virtual std::unique_ptr<Event> make_event() = 0;
  virtual std::unique_ptr<CopyQueue> make_copy_queue() = 0;
  // Records `event` after the ops and copies issued so far on this stream.
  virtual void record_event(Event& event) = 0;
  // Ops and copies issued after this run only once the work `event` marks
  // (on a copy queue of this backend) is done; the host does not wait.
  virtual void wait_event(const Event& event) = 0;
  // Events for measuring the stream's time (CUDA: with timing, a little
  // dearer to record than make_event()'s), and the seconds between two of
  // them recorded on this backend's stream, once both are done (after a
  // synchronize()); -1 where the backend does not time its work (the CPU's
  // ops are done when issued: nothing to time apart from the host's clock).
  virtual std::unique_ptr<Event> make_timing_event() { return make_event(); }
  virtual double elapsed_seconds(const Event& /*start*/, const Event& /*end*/) { return -1.0; }
  // Grows the backend's scratch workspace (the GEMM tiles and axpy_rows
  // partial sums, kernels/device_scratch.h) to at least `bytes` now, so no
  // later op allocates. The CPU backend has none: a no-op.
  virtual void reserve_scratch(size_t /*bytes*/) {}

  // Step graphs (CUDA graphs), for decode steps made of many short ops: the
  // ops and copies issued between begin_graph() and end_graph() are recorded
  // instead of run, and end_graph() runs them as one graph (one launch for
  // the host instead of one per op). A graph recorded before under the same
  // `key` (the caller's name for the step's shape) is updated in place,
  // which costs less than making a new one.
  //   begin_graph() returns false where the backend does not record (the
  //   CPU; graphs turned off): the ops then run as they are issued.
  //   end_graph() returns false when the recording failed (an op a graph
  //   cannot hold): nothing ran, and the caller issues the same ops again
  //   without a graph (graphs stay off for this backend from then on).
  //   abort_graph() ends a recording that an exception left open,
  //   discarding it.
  // While recording: no synchronize(), allocate(), allocate_host(),
  // upload(), reserve_scratch(), events or copy queues; copies to and from
  // the host use allocate_host() memory, and the host reads nothing the ops
  // write until end_graph() and a synchronize() after it.
  virtual bool begin_graph(uint64_t /*key*/) { return false; }
  virtual bool end_graph() { return false; }
  virtual void abort_graph() {}
  // How step graphs fared so far, one line for logs and `bench` (how many
  // steps ran as graphs, or why graphs are off); empty where the backend
  // has none.
  virtual std::string graph_summary() const { return {}; }

  // y[n_tokens, n_out] = x[n_tokens, n_in] * w^T (see kernels/cpu/matmul.h).
  virtual void matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y) = 0;
  // matmul() of each target with the same x (q, k and v; gate and up): the
  // CPU backend prepares x once and runs them as one job. Same bits.
  virtual void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens) {
    for (const MatmulTarget& t : targets) matmul(*t.w, x, n_tokens, t.y);
  }
  // The sparse FFN of decode (see kernels/cpu/sparse_ffn.h). rows: i32
  // [n_rows], the active neurons shared by all tokens, each in
  // [0, n_neurons), any order.
  // Row-gathered GEMV (gate/up): y[t, k] = dot(w[rows[k], :], x[t, :]).
  //   w: ne = {n_in, n_neurons} (row i = neuron i, e.g. ffn_gate f16
  //   [n_ff, n_embd]), any matmul dtype; x: f32 [n_tokens, n_in];
  //   y: f32 [n_tokens, n_rows]. Bit-identical to matmul's outputs for those rows
  //   (CUDA: where matmul runs its GEMV, n_tokens <= 8; above, cuBLAS).
  virtual void matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                           float* y) = 0;
  // Down projection as a sum of scaled rows: y[t, :] = sum_k a[t, k] * w_t[rows[k], :].
  //   w_t: ne = {n_out, n_neurons} (row i = neuron i's output column:
  //   ffn_down_t f16 [n_ff, n_embd]), any matmul dtype; a: f32
  //   [n_tokens, n_rows] (matmul_rows' layout, after the activation);
  //   y: f32 [n_tokens, n_out], overwritten. Exact zeros in a are skipped;
  //   the same bits for any thread count.
  virtual void axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                         float* y) = 0;
  virtual void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) = 0;
  virtual void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps,
                        float* y) = 0;
  // LayerNorm with weight and bias (null: none; kernels/cpu/ops.h). y may alias x.
  virtual void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n,
                          float eps, float* y) = 0;
  // params.freq_factors, when set, points into this backend's memory.
  virtual void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
                    const RopeParams& params) = 0;
  // k, v: the sequence's cache of params.k_type and params.v_type (f16
  // everywhere; q8_0 on the CPU backend).
  virtual void attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
                         int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions,
                         float* out, const AttentionParams& params) = 0;
  // attention() of each sequence (each over its own cache); the CPU backend
  // runs them as one job for its threads. Same bits as one call each.
  virtual void attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                               int64_t head_dim, const AttentionParams& params) {
    for (const AttentionSequence& s : sequences) {
      attention(s.q, s.k, s.v, s.n_tokens, s.n_kv, n_head, n_head_kv, head_dim, s.positions, s.out, params);
    }
  }
  // up may be null for the ungated activations (is_gated false).
  virtual void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) = 0;
  // y[i] += x[i]
  virtual void add(float* y, const float* x, int64_t n) = 0;
  // y[r, :] += bias[:] for r < n_rows (a linear layer's bias). y: f32
  // [n_rows, n]; bias: f32 [n].
  virtual void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) = 0;
  // x[i] *= s, in place. x: f32 [n].
  virtual void scale(float* x, int64_t n, float s) = 0;
  // x[i] = cap * tanh(x[i] / cap), in place (logit soft-capping). x: f32 [n]; cap > 0.
  virtual void softcap(float* x, int64_t n, float cap) = 0;
  // x[i] = x[i] < 0 ? 0 : x[i], in place (the predictor's hidden layer);
  // -0 and NaN are kept. x: f32 [n].
  virtual void relu(float* x, int64_t n) = 0;
  // The scores above a threshold as a bitmask (the predicted-active neurons,
  // 1 bit each, so an active set crosses PCIe as n/8 bytes per token):
  //   bit b of bits[r * n_words + w] = x[r * n + 32 w + b] > threshold
  // with n_words = (n + 31) / 32; NaN is not above; the tail bits of a row's
  // last word are 0. x: f32 [n_rows, n]; bits: u32 [n_rows, n_words] in
  // backend memory, overwritten.
  virtual void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) = 0;
  virtual void store_f16(const float* src, int64_t n, uint16_t* dst) = 0;
  // n_rows rows of row_len values written to a KV cache of `type`
  // (kernels/cpu/ops.h store_kv). Backends that keep only f16 caches take
  // F16 and refuse the rest.
  virtual void store_kv(const float* src, int64_t n_rows, int64_t row_len, DType type, void* dst) {
    TC_CHECK(type == DType::F16, "store_kv: this backend keeps its KV cache in f16 only");
    store_f16(src, n_rows * row_len, static_cast<uint16_t*>(dst));
  }
  // Greedy sampling: out[r] = the index of the largest x[r, :], NaN counting
  // as -inf, ties (and rows of only -inf/NaN) to the lowest index, as
  // the sampler's temperature-0 path. x: f32 [n_rows, n]; out: i32 [n_rows]
  // in backend memory (read back with copy_to_host: 4 bytes per sequence).
  virtual void argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) = 0;
};

// The backend for `device`. Throws BackendUnavailable for CUDA in a build
// without it or on a machine without the device (backend_factory.cpp is the
// one file that knows), with the reason.
std::unique_ptr<Backend> create_backend(DeviceKind device, const BackendOptions& options = {});

}  // namespace tc::kernels
