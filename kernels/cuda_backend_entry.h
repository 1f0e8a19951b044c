// The CUDA backend's constructor behind a declaration free of CUDA headers:
// kernels/cuda_plugin_loader.cpp defines it by forwarding to the CUDA plugin
// (libthermocline_cuda.so, loaded on first use), so no header needs an
// #ifdef and the main binary links no CUDA library. Only
// backend_factory.cpp calls it.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace tc::kernels {

// A CudaBackend on options.device_index. Throws BackendUnavailable when
// the plugin cannot be loaded (the message names the file and why) or the
// device cannot be used, CudaError (kernels/cuda_error.h) when setting it
// up fails.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace tc::kernels
