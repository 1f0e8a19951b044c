// The plugin's side of query_gpus(): asks the CUDA runtime for devices.
// Reached from the main binary only through the plugin's table
// (cuda_plugin_entry.cpp).
#pragma once

#include "kernels/device_info.h"

namespace tc::kernels {

// Never throws; cuda_built true, a machine without a driver or GPU says why
// in `status`.
GpuInventory query_cuda_devices();

}  // namespace tc::kernels
