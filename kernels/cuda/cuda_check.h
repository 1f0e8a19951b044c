// Error checks for CUDA runtime and cuBLAS calls: TC_CUDA_CHECK(call) and
// TC_CUBLAS_CHECK(call) throw tc::kernels::CudaError naming the call, the
// file:line and the runtime's message. Only kernels/cuda/ includes this.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/cuda_error.h"

namespace tc::kernels {

[[noreturn]] void cuda_call_failed(cudaError_t err, const char* call, const char* file, int line);
[[noreturn]] void cublas_call_failed(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace tc::kernels

#define TC_CUDA_CHECK(call)                                                          \
  do {                                                                               \
    const cudaError_t tc_cuda_err_ = (call);                                         \
    if (tc_cuda_err_ != cudaSuccess) {                                               \
      ::tc::kernels::cuda_call_failed(tc_cuda_err_, #call, __FILE__, __LINE__);      \
    }                                                                                \
  } while (0)

#define TC_CUBLAS_CHECK(call)                                                        \
  do {                                                                               \
    const cublasStatus_t tc_cublas_status_ = (call);                                 \
    if (tc_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                \
      ::tc::kernels::cublas_call_failed(tc_cublas_status_, #call, __FILE__, __LINE__); \
    }                                                                                \
  } while (0)

// Checks that the last kernel launch was accepted (bad grid, too much shared
// memory, no kernel image for this GPU). Faults inside the kernel surface at
// the next synchronizing call.
#define TC_CUDA_CHECK_LAUNCH() TC_CUDA_CHECK(cudaGetLastError())
