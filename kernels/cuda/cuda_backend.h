// CudaBackend: the Backend on one NVIDIA GPU. Ops are kernels (kernels/cuda/
// *.cu) and cuBLAS GEMMs issued on the backend's own non-blocking stream;
// they return at once, synchronize() waits for the stream. Every pointer an
// op takes is device memory (allocate(), upload()) or pinned host memory
// (allocate_host()). Errors of CUDA calls throw CudaError; argument errors
// fail a TC_CHECK before anything is launched.
#pragma once

#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_resources.h"
#include "kernels/cuda/cuda_step_graphs.h"

namespace tc::kernels {

class CudaBackend final : public Backend {
 public:
  // Throws BackendUnavailable if device_index is not a usable device,
  // CudaError if creating the stream or cuBLAS handle fails.
  explicit CudaBackend(int device_index);

  DeviceKind device() const override { return DeviceKind::Cuda; }
  std::string name() const override { return name_; }
  // The backend runs no CPU worker threads: the calling thread only issues work.
  int n_threads() const override { return 1; }
  int device_index() const { return device_index_; }
  cudaStream_t stream() const { return stream_.get(); }

  Buffer allocate(size_t bytes) override;
  Buffer allocate_host(size_t bytes) override;
  PlacedTensor upload(const Tensor& host) override;
  void copy_to_device(void* dst, const void* src, size_t bytes) override;
  void copy_to_host(void* dst, const void* src, size_t bytes) override;
  void copy_on_device(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  // CudaBackendEvent / CudaCopyQueue (cuda_copy_queue.h).
  std::unique_ptr<Event> make_event() override;
  std::unique_ptr<CopyQueue> make_copy_queue() override;
  void record_event(Event& event) override;
  void wait_event(const Event& event) override;
  std::unique_ptr<Event> make_timing_event() override;
  double elapsed_seconds(const Event& start, const Event& end) override;
  void reserve_scratch(size_t bytes) override;
  // Stream capture into CUDA graphs (cuda_step_graphs.h).
  bool begin_graph(uint64_t key) override;
  bool end_graph() override;
  void abort_graph() override;
  std::string graph_summary() const override { return graphs_.summary(); }

  void matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y) override;
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
  void ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) override;
  void add(float* y, const float* x, int64_t n) override;
  void add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) override;
  void scale(float* x, int64_t n, float s) override;
  void softcap(float* x, int64_t n, float cap) override;
  void relu(float* x, int64_t n) override;
  void threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) override;
  void store_f16(const float* src, int64_t n, uint16_t* dst) override;
  void argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) override;

 private:
  // Makes this backend's device current on the calling thread (the engine
  // thread may not be the one that built the backend).
  void activate() const;
  // TC_CHECKs that no step graph is being recorded (what a graph cannot hold).
  void check_not_recording(const char* what) const;

  int device_index_;
  std::string name_;
  CudaStream stream_;
  CublasHandle cublas_;
  DeviceWorkspace workspace_;
  cuda::StepGraphs graphs_;
};

}  // namespace tc::kernels
