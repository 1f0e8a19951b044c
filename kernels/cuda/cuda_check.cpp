// The failure paths of TC_CUDA_CHECK and TC_CUBLAS_CHECK.
#include "kernels/cuda/cuda_check.h"

namespace tc::kernels {

void cuda_call_failed(cudaError_t err, const char* call, const char* file, int line) {
  throw CudaError(std::string("CUDA error: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")",
                  static_cast<int>(err));
}

void cublas_call_failed(cublasStatus_t status, const char* call, const char* file, int line) {
  throw CudaError(std::string("cuBLAS error: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                      cublasGetStatusString(status) + " (" + cublasGetStatusName(status) + ")",
                  static_cast<int>(status));
}

}  // namespace tc::kernels
