// CudaError: a failed CUDA runtime or cuBLAS call. Free of CUDA headers so
// that the CUDA plugin (which throws it) and the main binary (which catches
// it, through the Backend interface) see one definition.
#pragma once

#include <stdexcept>
#include <string>

namespace tc::kernels {

// what(): "CUDA error: <call> failed at <file>:<line>: <message> (<code
// name>)". After a sticky error (a fault in a kernel) the device is
// unusable: the engine moves to Failed.
class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  // The cudaError_t or cublasStatus_t value.
  int code() const { return code_; }

 private:
  int code_;
};

}  // namespace tc::kernels
