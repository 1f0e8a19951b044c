// The contract between the main binary and the CUDA plugin
// (libthermocline_cuda.so): one extern "C" entry that returns a table of
// function pointers, checked by its ABI version before anything else is used.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/backend.h"
#include "kernels/device_info.h"

namespace tc::kernels {

// Bump whenever the table, or a type that crosses it (Backend and what its
// methods take: backend.h, buffer.h, tensor.h, cpu/ops.h, device_info.h,
// cuda_error.h), changes layout or meaning. The plugin and the binary come
// from the same build; this catches a stale plugin left beside a newer one.
inline constexpr uint32_t kCudaPluginAbiVersion = 3;  // 3: layer_norm, add_bias, scale, softcap; RoPE and attention params

// The entry's name and the plugin's file name (next to the executable, or in
// the install prefix's lib/thermocline/).
inline constexpr const char* kCudaPluginEntrySymbol = "thermocline_cuda_plugin_entry";
inline constexpr const char* kCudaPluginFileName = "libthermocline_cuda.so";

// Static data of the plugin, valid while it is loaded (never unloaded).
// abi_version stays the first member in every version so that a mismatch
// can be read and reported.
struct CudaPluginApi {
  uint32_t abi_version = 0;
  // As kernels/device_info.h's query_gpus(): never throws, cuda_built true.
  GpuInventory (*query_gpus)() = nullptr;
  // As kernels/cuda_backend_entry.h's make_cuda_backend(): BackendUnavailable
  // or CudaError on failure. The Backend's code lives in the plugin.
  std::unique_ptr<Backend> (*make_cuda_backend)(const BackendOptions& options) = nullptr;
};

// The type of the entry; it never returns null.
using CudaPluginEntry = const CudaPluginApi* (*)();

}  // namespace tc::kernels
