// CpuBackend: the Backend on the host CPU, running kernels/cpu ops on a
// ThreadPool. The readable reference for every other backend.
#pragma once

#include <memory>

#include "kernels/backend.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::kernels {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int n_threads);

  DeviceKind device() const override { return DeviceKind::Cpu; }
  std::string name() const override;
  int n_threads() const override { return pool_.n_threads(); }
  Buffer allocate(size_t bytes) override { return Buffer::host(bytes); }
  Buffer allocate_host(size_t bytes) override { return Buffer::host(bytes); }
  // Zero-copy: the host view itself, empty storage.
  PlacedTensor upload(const Tensor& host) override { return PlacedTensor{host, Buffer()}; }
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy_on_device(void* dst, const void* src, size_t bytes) override;
  void synchronize() override {}
  // Work is done when issued: empty events, a copy queue of memcpys.
  std::unique_ptr<Event> make_event() override { return std::make_unique<Event>(); }
  std::unique_ptr<CopyQueue> make_copy_queue() override;
  void record_event(Event&) override {}
  void wait_event(const Event&) override {}

  void matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y) override;
  void matmul_many(std::span<const MatmulTarget> targets, const float* x, int64_t n_tokens) override;
  void matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                   float* y) override;
  void axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                 float* y) override;
  void get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) override;
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) override;
  void layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n, float eps,
                  float* y) override;
  void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
            const RopeParams& params) override;
  void attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
                 int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out,
                 const AttentionParams& params) override;
  void host_parallel(int64_t n, const std::function<void(int64_t i)>& body) override;
  void attention_batch(std::span<const AttentionSequence> sequences, int64_t n_head, int64_t n_head_kv,
                       int64_t head_dim, const AttentionParams& params) override;
  void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) override;
  void add(float* y, const float* x, int64_t n) override;
  void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) override;
  void scale(float* x, int64_t n, float s) override;
  void softcap(float* x, int64_t n, float cap) override;
  void relu(float* x, int64_t n) override;
  void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) override;
  void store_f16(const float* src, int64_t n, uint16_t* dst) override;
  void store_kv(const float* src, int64_t n_rows, int64_t row_len, DType type, void* dst) override;
  void argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) override;

  ThreadPool& pool() { return pool_; }

 private:
  ThreadPool pool_;
};

}  // namespace tc::kernels
