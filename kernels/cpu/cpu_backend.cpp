// CpuBackend: forwards each op to kernels/cpu with the backend's pool.
#include "kernels/cpu/cpu_backend.h"

#include <atomic>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/sparse_ffn.h"

namespace tc::kernels {

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

std::string CpuBackend::name() const {
  return "cpu (" + matmul_isa() + ", " + std::to_string(pool_.n_threads()) + " threads)";
}

namespace {

// The CPU's copy queue: each copy is done when issued, so events order nothing.
class MemcpyQueue final : public CopyQueue {
 public:
  void copy_to_device(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
  }
  void record_event(Event&) override {}
  void wait_event(const Event&) override {}
  void synchronize() override {}
};

}  // namespace

std::unique_ptr<CopyQueue> CpuBackend::make_copy_queue() { return std::make_unique<MemcpyQueue>(); }

void CpuBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

void CpuBackend::matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y) {
  kernels::matmul(w, x, n_tokens, y, pool_);
}

void CpuBackend::matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens) {
  kernels::matmul_many(targets, x, n_tokens, pool_);
}

void CpuBackend::matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                             float* y) {
  kernels::matmul_rows(w, x, n_tokens, rows, n_rows, y, pool_);
}

void CpuBackend::axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                           float* y) {
  kernels::axpy_rows(w_t, a, n_tokens, rows, n_rows, y, pool_);
}

void CpuBackend::get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) {
  kernels::get_rows(table, ids, n_tokens, out);
}

// Element-wise ops and row norms over this many values or more are split
// across the pool (each value or row is computed alone, so the split changes
// no bit): below it a fork/join costs more than it saves. In an 8-sequence
// decode step of a 1B model, run on one thread, they left the other idle for
// 3-4% of the step.
constexpr int64_t kParallelValues = 8192;

void CpuBackend::rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) {
  if (n_rows < 2 || n_rows * n < kParallelValues) return kernels::rms_norm(x, weight, n_rows, n, eps, y);
  pool_.parallel_for(n_rows, 1, [&](int64_t r0, int64_t r1) {
    kernels::rms_norm(x + r0 * n, weight, r1 - r0, n, eps, y + r0 * n);
  });
}

void CpuBackend::layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n,
                            float eps, float* y) {
  if (n_rows < 2 || n_rows * n < kParallelValues) return kernels::layer_norm(x, weight, bias, n_rows, n, eps, y);
  pool_.parallel_for(n_rows, 1, [&](int64_t r0, int64_t r1) {
    kernels::layer_norm(x + r0 * n, weight, bias, r1 - r0, n, eps, y + r0 * n);
  });
}

void CpuBackend::rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
                      const RopeParams& params) {
  kernels::rope(x, n_tokens, n_head, head_dim, positions, params);
}

void CpuBackend::attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
                           int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
                           const AttentionParams& params) {
  kernels::attention(q, k, v, n_tokens, n_kv, n_head, n_head_kv, head_dim, positions, out, params, pool_);
}

void CpuBackend::host_parallel(int64_t n, const std::function<void(int64_t i)>& body) {
  if (n <= 1 || pool_.n_threads() == 1) {
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  // Claimed one at a time: the items may cost very different amounts.
  std::atomic<int64_t> next{0};
  pool_.run([&](int, int) {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
  });
}

void CpuBackend::attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                                 int64_t head_dim, const AttentionParams& params) {
  kernels::attention_batch(sequences, n_head, n_head_kv, head_dim, params, pool_);
}

void CpuBackend::ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) {
  if (n < kParallelValues) return kernels::ffn_activation(act, gate, up, n, out);
  pool_.parallel_for(n, 16, [&](int64_t i0, int64_t i1) {
    kernels::ffn_activation(act, gate + i0, up + i0, i1 - i0, out + i0);
  });
}

void CpuBackend::add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void CpuBackend::add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) {
  kernels::add_bias(y, bias, n_rows, n);
}

void CpuBackend::scale(float* x, int64_t n, float s) { kernels::scale(x, n, s); }

void CpuBackend::softcap(float* x, int64_t n, float cap) {
  if (n < kParallelValues) return kernels::softcap(x, n, cap);
  pool_.parallel_for(n, 16, [&](int64_t i0, int64_t i1) { kernels::softcap(x + i0, i1 - i0, cap); });
}

void CpuBackend::relu(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void CpuBackend::threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) {
  const int64_t n_words = (n + 31) / 32;
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * n;
    uint32_t* out = bits + r * n_words;
    for (int64_t w = 0; w < n_words; ++w) {
      uint32_t word = 0;
      const int64_t end = std::min<int64_t>(32, n - 32 * w);
      for (int64_t b = 0; b < end; ++b) word |= static_cast<uint32_t>(row[32 * w + b] > threshold) << b;
      out[w] = word;
    }
  }
}

void CpuBackend::store_f16(const float* src, int64_t n, uint16_t* dst) { kernels::store_f16(src, n, dst); }
void CpuBackend::store_kv(const float* src, int64_t n_rows, int64_t row_len, DType type, void* dst) {
  kernels::store_kv(src, n_rows, row_len, type, dst);
}

void CpuBackend::argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* row = x + r * n;
    int64_t best = 0;
    float best_value = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      const float v = std::isnan(row[i]) ? -INFINITY : row[i];
      if (v > best_value) {  // strict: ties keep the lower index
        best_value = v;
        best = i;
      }
    }
    out[r] = static_cast<int32_t>(best);
  }
}

}  // namespace tc::kernels
