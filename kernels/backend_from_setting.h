// create_backend for a configured device (config/device_setting.h): the
// one mapping from the `device` option to a backend, shared by `serve` and
// the running subcommands.
#pragma once

#include <memory>

#include "config/device_setting.h"
#include "kernels/backend.h"

namespace tc::kernels {

// Throws BackendUnavailable (with the reason) when this build or machine
// has no such device.
std::unique_ptr<Backend> create_backend(const config::DeviceSetting& device, int n_threads);

}  // namespace tc::kernels
