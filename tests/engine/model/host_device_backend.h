// HostDeviceBackend: a test backend that claims to be a GPU (DeviceKind::
// Cuda) but keeps its "device" memory on the host and runs every op on a
// CpuBackend. It drives the model code's device path (weights uploaded as
// packed copies, token ids and positions copied in, the head's rows gathered
// on the device, logits copied out) on machines without a GPU, and counts
// what crossed the "bus".
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace tc::test {

class HostDeviceBackend final : public kernels::Backend {
 public:
  explicit HostDeviceBackend(int n_threads) : cpu_(kernels::create_backend(kernels::DeviceKind::Cpu, {.n_threads = n_threads})) {}

  size_t uploaded_bytes = 0;   // weight bytes copied by upload()
  size_t allocated_bytes = 0;  // allocate(): "device" memory other than weights
  int uploads = 0;
  size_t to_device_bytes = 0;  // copy_to_device
  size_t to_host_bytes = 0;    // copy_to_host

  kernels::DeviceKind device() const override { return kernels::DeviceKind::Cuda; }
  std::string name() const override { return "host-device (test)"; }
  int n_threads() const override { return cpu_->n_threads(); }
  kernels::Buffer allocate(size_t bytes) override {
    allocated_bytes += bytes;
    return kernels::Buffer::host(bytes);
  }
  kernels::Buffer allocate_host(size_t bytes) override { return kernels::Buffer::host(bytes); }
  // A packed copy, as the CUDA backend makes (row_bytes = the packed size).
  kernels::PlacedTensor upload(const kernels::Tensor& host) override {
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
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    to_host_bytes += bytes;
    std::memcpy(dst, src, bytes);
  }
  void copy_on_device(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void synchronize() override {}

  void matmul(const kernels::Tensor& w, const float* x, int64_t n_tokens, float* y) override {
    cpu_->matmul(w, x, n_tokens, y);
  }
  void matmul_rows(const kernels::Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                   float* y) override {
    cpu_->matmul_rows(w, x, n_tokens, rows, n_rows, y);
  }
  void axpy_rows(const kernels::Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                 float* y) override {
    cpu_->axpy_rows(w_t, a, n_tokens, rows, n_rows, y);
  }
  void get_rows(const kernels::Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) override {
    cpu_->get_rows(table, ids, n_tokens, out);
  }
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) override {
    cpu_->rms_norm(x, weight, n_rows, n, eps, y);
  }
  void rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
            const kernels::RopeParams& params) override {
    cpu_->rope(x, n_tokens, n_head, head_dim, positions, params);
  }
  void attention(const float* q, const uint16_t* k, const uint16_t* v, int64_t n_tokens, int64_t n_kv, int64_t n_head,
                 int64_t n_head_kv, int64_t head_dim, const int32_t* positions, float* out) override {
    cpu_->attention(q, k, v, n_tokens, n_kv, n_head, n_head_kv, head_dim, positions, out);
  }
  void ffn_activation(kernels::Activation act, const float* gate, const float* up, int64_t n, float* out) override {
    cpu_->ffn_activation(act, gate, up, n, out);
  }
  void add(float* y, const float* x, int64_t n) override { cpu_->add(y, x, n); }
  void relu(float* x, int64_t n) override { cpu_->relu(x, n); }
  void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) override {
    cpu_->threshold_bits(x, n_rows, n, threshold, bits);
  }
  void store_f16(const float* src, int64_t n, uint16_t* dst) override { cpu_->store_f16(src, n, dst); }
  void argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) override { cpu_->argmax(x, n_rows, n, out); }

 private:
  std::unique_ptr<kernels::Backend> cpu_;
};

}  // namespace tc::test
