// CudaBackend: validates arguments on the host (the checks kernels/cpu makes,
// where they need no device data), then forwards each op to its launcher
// (launch.h) or to cuBLAS (cublas_matmul.h) on the backend's stream.
#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "kernels/check.h"
#include "kernels/cuda/cublas_matmul.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_copy_queue.h"
#include "kernels/cuda/launch.h"
#include "kernels/device_scratch.h"

namespace tc::kernels {
namespace {

// Sets the device current and describes it: "cuda:0 (NVIDIA H100 80GB HBM3,
// sm_90, 79.1 GiB)".
std::string activate_and_describe(int device_index) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw BackendUnavailable(std::string("CUDA backend requested, but no CUDA device: ") + cudaGetErrorString(err));
  }
  if (device_index < 0 || device_index >= count) {
    throw BackendUnavailable("CUDA backend requested on device " + std::to_string(device_index) + ", but there are " +
                             std::to_string(count) + " CUDA device(s)");
  }
  TC_CUDA_CHECK(cudaSetDevice(device_index));
  cudaDeviceProp prop{};
  TC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_index));
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1u << 30));
  return "cuda:" + std::to_string(device_index) + " (" + prop.name + ", sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + memory + ")";
}

bool device_addressable(MemoryKind kind) { return kind == MemoryKind::Device || kind == MemoryKind::PinnedHost; }

// What the kernels need of a weight or table tensor: device-addressable
// memory, whole blocks per row, rows at least packed and 2-byte aligned
// (4 for F32) so the f16 scales and f32 values load aligned. MXFP4 has no
// f16 field and is read bytewise: its 17-byte blocks leave rows of an odd
// number of blocks at odd byte counts, so any alignment does.
void check_matrix(const Tensor& w) {
  TC_CHECK(device_addressable(w.memory),
           "CUDA backend: weight tensors must be in device or pinned memory (place them with upload())");
  TC_CHECK(w.data != nullptr, "CUDA backend: weight tensor without data");
  TC_CHECK(w.n_cols() % dtype_traits(w.dtype).block_size == 0,
           "CUDA backend: row length must be a multiple of the dtype's block size");
  TC_CHECK(w.row_bytes >= row_bytes(w.dtype, w.n_cols()), "CUDA backend: row_bytes below the packed row size");
  const uintptr_t align = w.dtype == DType::F32 ? 4 : (w.dtype == DType::MXFP4 ? 1 : 2);
  TC_CHECK(reinterpret_cast<uintptr_t>(w.data) % align == 0 && static_cast<uintptr_t>(w.row_bytes) % align == 0,
           "CUDA backend: weight rows must start 2-byte aligned (4-byte for F32)");
}

void check_weight(const Tensor& w) {
  TC_CHECK(is_weight_dtype(w.dtype), "CUDA backend: not a weight dtype (F32, F16, BF16 or a block format)");
  check_matrix(w);
}

}  // namespace

CudaBackend::CudaBackend(int device_index)
    : device_index_(device_index), name_(activate_and_describe(device_index)), stream_(), cublas_(stream_.get()) {}

void CudaBackend::activate() const { TC_CUDA_CHECK(cudaSetDevice(device_index_)); }

void CudaBackend::check_not_recording(const char* what) const {
  TC_CHECK(!graphs_.recording(), what);
}

Buffer CudaBackend::allocate(size_t bytes) {
  check_not_recording("allocate() while recording a step graph");
  activate();
  return device_buffer(bytes);
}

Buffer CudaBackend::allocate_host(size_t bytes) {
  check_not_recording("allocate_host() while recording a step graph");
  activate();
  return pinned_buffer(bytes);
}

bool CudaBackend::begin_graph(uint64_t key) {
  activate();
  return graphs_.begin(stream_.get(), key);
}

bool CudaBackend::end_graph() {
  activate();
  return graphs_.end(stream_.get());
}

void CudaBackend::abort_graph() {
  activate();
  graphs_.abort(stream_.get(), "an op failed while the step was recorded");
}

PlacedTensor CudaBackend::upload(const Tensor& host) {
  check_not_recording("upload() while recording a step graph");
  activate();
  const int64_t packed = row_bytes(host.dtype, host.n_cols());
  const int64_t n_rows = host.n_rows();
  TC_CHECK(n_rows >= 0 && host.row_bytes >= packed, "upload: row_bytes below the packed row size");
  PlacedTensor placed{host, device_buffer(static_cast<size_t>(packed * n_rows))};
  if (packed > 0 && n_rows > 0) {
    TC_CHECK(host.data != nullptr, "upload: tensor without data");
    // Pitched copy: packs padded rows. cudaMemcpyDefault lets UVA tell
    // pageable, pinned and device sources apart.
    TC_CUDA_CHECK(cudaMemcpy2DAsync(placed.storage.data(), static_cast<size_t>(packed), host.data,
                                    static_cast<size_t>(host.row_bytes), static_cast<size_t>(packed),
                                    static_cast<size_t>(n_rows), cudaMemcpyDefault, stream_.get()));
    stream_.synchronize();
  }
  placed.tensor.data = placed.storage.data();
  placed.tensor.row_bytes = packed;
  placed.tensor.memory = MemoryKind::Device;
  return placed;
}

void CudaBackend::copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  activate();
  TC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_.get()));
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  activate();
  TC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_.get()));
}

void CudaBackend::copy_on_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  activate();
  TC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_.get()));
}

void CudaBackend::synchronize() {
  check_not_recording("synchronize() while recording a step graph");
  activate();
  stream_.synchronize();
}

std::unique_ptr<Event> CudaBackend::make_event() {
  check_not_recording("make_event() while recording a step graph");
  activate();
  return std::make_unique<CudaBackendEvent>();
}

std::unique_ptr<CopyQueue> CudaBackend::make_copy_queue() {
  check_not_recording("make_copy_queue() while recording a step graph");
  return std::make_unique<CudaCopyQueue>(device_index_);
}

void CudaBackend::record_event(Event& event) {
  check_not_recording("record_event() while recording a step graph");
  activate();
  cuda_event(event).record(stream_.get());
}

void CudaBackend::wait_event(const Event& event) {
  check_not_recording("wait_event() while recording a step graph");
  activate();
  cuda_event(event).wait_on(stream_.get());
}

std::unique_ptr<Event> CudaBackend::make_timing_event() {
  check_not_recording("make_timing_event() while recording a step graph");
  activate();
  return std::make_unique<CudaBackendEvent>(true);
}

void CudaBackend::reserve_scratch(size_t bytes) {
  check_not_recording("reserve_scratch() while recording a step graph");
  activate();
  if (bytes > 0) workspace_.get(bytes, stream_.get());
}

double CudaBackend::elapsed_seconds(const Event& start, const Event& end) {
  activate();
  return CudaEvent::elapsed_ms(cuda_event(start), cuda_event(end)) / 1000.0;
}

void CudaBackend::matmul(const Tensor& w, const float* x, int64_t n_tokens, float* y) {
  check_weight(w);
  TC_CHECK(n_tokens >= 0, "matmul: n_tokens must be >= 0");
  activate();
  if (n_tokens <= kGemvMaxTokens) {
    cuda::gemv(w, x, n_tokens, nullptr, w.n_rows(), y, stream_.get());
  } else {
    cuda::matmul_cublas(w, x, n_tokens, y, cublas_.get(), workspace_, stream_.get());
  }
}

void CudaBackend::matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows,
                              int64_t n_rows, float* y) {
  check_weight(w);
  TC_CHECK(n_tokens >= 0 && n_rows >= 0, "matmul_rows: n_tokens and n_rows must be >= 0");
  activate();
  cuda::gemv(w, x, n_tokens, rows, n_rows, y, stream_.get());
}

void CudaBackend::axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows,
                            int64_t n_rows, float* y) {
  check_weight(w_t);
  TC_CHECK(n_tokens >= 0 && n_rows >= 0, "axpy_rows: n_tokens and n_rows must be >= 0");
  activate();
  const int64_t n_out = w_t.n_cols();
  if (n_tokens == 0 || n_out == 0) return;
  // Splits of the active rows (kernels/device_scratch.h): a function of
  // n_rows only, so a token's result does not depend on the batch.
  const int64_t n_split = axpy_split_count(n_rows);
  if (n_split == 1) {
    // One split's sum starts at +0 like pass 2 does, so writing y directly
    // gives the same bits.
    cuda::axpy_rows_partial(w_t, a, n_tokens, rows, n_rows, 1, y, stream_.get());
    return;
  }
  // Passes of at most axpy_pass_tokens tokens keep the partials within
  // kAxpyMaxPartialBytes (a 512-token prompt at n_embd 5120 would need 320
  // MiB at once); a token's sum is the same in any pass.
  const int64_t pass = axpy_pass_tokens(n_split, n_out);
  auto* partial = static_cast<float*>(
      workspace_.get(axpy_scratch_bytes(n_rows, n_tokens, n_out), stream_.get()));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += pass) {
    const int64_t tt = std::min(pass, n_tokens - t0);
    cuda::axpy_rows_partial(w_t, a + t0 * n_rows, tt, rows, n_rows, n_split, partial, stream_.get());
    cuda::sum_partials(partial, n_split, tt * n_out, y + t0 * n_out, stream_.get());
  }
}

void CudaBackend::get_rows(const Tensor& table, const int32_t* ids, int64_t n_tokens, float* out) {
  TC_CHECK(is_weight_dtype(table.dtype), "get_rows: table dtype must be a weight dtype");
  check_matrix(table);
  TC_CHECK(n_tokens >= 0, "get_rows: n_tokens must be >= 0");
  activate();
  cuda::get_rows(table, ids, n_tokens, out, stream_.get());
}

void CudaBackend::rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n, float eps, float* y) {
  TC_CHECK(n > 0, "rms_norm: row length must be positive");
  TC_CHECK(n_rows >= 0, "rms_norm: n_rows must be >= 0");
  activate();
  cuda::rms_norm(x, weight, n_rows, n, eps, y, stream_.get());
}

void CudaBackend::layer_norm(const float* x, const float* weight, const float* bias, int64_t n_rows, int64_t n,
                             float eps, float* y) {
  TC_CHECK(n > 0, "layer_norm: row length must be positive");
  TC_CHECK(n_rows >= 0, "layer_norm: n_rows must be >= 0");
  activate();
  cuda::layer_norm(x, weight, bias, n_rows, n, eps, y, stream_.get());
}

void CudaBackend::rope(float* x, int64_t n_tokens, int64_t n_head, int64_t head_dim, const int32_t* positions,
                       const RopeParams& params) {
  TC_CHECK(params.n_rot >= 0 && params.n_rot % 2 == 0 && params.n_rot <= head_dim,
           "rope: n_rot must be even and <= head_dim");
  TC_CHECK(n_tokens >= 0 && n_head >= 0, "rope: n_tokens and n_head must be >= 0");
  activate();
  cuda::rope(x, n_tokens, n_head, head_dim, positions, params, stream_.get());
}

void CudaBackend::attention(const float* q, const void* k, const void* v, int64_t n_tokens, int64_t n_kv,
                            int64_t n_head, int64_t n_head_kv, int64_t head_dim, const int32_t* positions,
                            float* out, const AttentionParams& params) {
  TC_CHECK(n_head > 0 && n_head_kv > 0 && n_head % n_head_kv == 0,
           "attention: n_head must be a positive multiple of n_head_kv");
  TC_CHECK(head_dim > 0 && head_dim <= cuda::kMaxHeadDim, "attention: head_dim must be in [1, 256] on CUDA");
  TC_CHECK(n_tokens >= 0 && n_kv >= 0, "attention: n_tokens and n_kv must be >= 0");
  TC_CHECK(params.scale >= 0.0f && params.softcap >= 0.0f && params.window >= 0,
           "attention: scale, softcap and window must not be negative");
  TC_CHECK(params.sinks == nullptr, "attention: attention sinks (gpt-oss) run on the CPU backend only");
  TC_CHECK(params.k_type == DType::F16 && params.v_type == DType::F16,
           "attention: a q8_0 KV cache runs on the CPU backend only");
  activate();
  cuda::attention(q, static_cast<const uint16_t*>(k), static_cast<const uint16_t*>(v), n_tokens, n_kv, n_head, n_head_kv, head_dim, positions, out, params, stream_.get());
}

void CudaBackend::ffn_activation(Activation act, const float* gate, const float* up, int64_t n, float* out) {
  activate();
  cuda::ffn_activation(act, gate, up, n, out, stream_.get());
}

void CudaBackend::add(float* y, const float* x, int64_t n) {
  activate();
  cuda::add(y, x, n, stream_.get());
}

void CudaBackend::add_bias(float* y, const float* bias, int64_t n_rows, int64_t n) {
  TC_CHECK(n_rows >= 0 && n >= 0, "add_bias: n_rows and n must be >= 0");
  activate();
  cuda::add_bias(y, bias, n_rows, n, stream_.get());
}

void CudaBackend::scale(float* x, int64_t n, float s) {
  activate();
  cuda::scale(x, n, s, stream_.get());
}

void CudaBackend::softcap(float* x, int64_t n, float cap) {
  TC_CHECK(cap > 0.0f, "softcap: the cap must be positive");
  activate();
  cuda::softcap(x, n, cap, stream_.get());
}

void CudaBackend::relu(float* x, int64_t n) {
  activate();
  cuda::relu(x, n, stream_.get());
}

void CudaBackend::threshold_bits(const float* x, int64_t n_rows, int64_t n, float threshold, uint32_t* bits) {
  TC_CHECK(n_rows >= 0 && n >= 0, "threshold_bits: n_rows and n must be >= 0");
  activate();
  cuda::threshold_bits(x, n_rows, n, threshold, bits, stream_.get());
}

void CudaBackend::store_f16(const float* src, int64_t n, uint16_t* dst) {
  activate();
  cuda::store_f16(src, n, dst, stream_.get());
}

void CudaBackend::argmax(const float* x, int64_t n_rows, int64_t n, int32_t* out) {
  TC_CHECK(n > 0 || n_rows == 0, "argmax: rows must not be empty");
  activate();
  cuda::argmax_rows(x, n_rows, n, out, stream_.get());
}

}  // namespace tc::kernels
