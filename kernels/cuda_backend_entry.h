// The CUDA backend's constructor behind a declaration free of CUDA headers:
// kernels/cuda/ defines it in CUDA builds, kernels/no_cuda/ (which throws
// BackendUnavailable) otherwise, so no header needs an #ifdef. Only
// backend_factory.cpp calls it.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace tc::kernels {

// A CudaBackend on options.device_index. Throws BackendUnavailable when
// this build has no CUDA or the device cannot be used, CudaError when
// setting it up fails.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace tc::kernels
