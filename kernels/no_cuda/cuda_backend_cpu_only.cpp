// make_cuda_backend() for builds without the CUDA backend.
#include "kernels/cuda_backend_entry.h"
#include "kernels/device_info.h"

namespace tc::kernels {

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) {
  throw BackendUnavailable("CUDA backend requested, but " + query_gpus().status);
}

}  // namespace tc::kernels
