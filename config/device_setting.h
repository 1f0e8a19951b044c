// The device setting shared by `serve` (key `device`) and the running
// subcommands (--device): which backend runs the model. "cpu", "cuda"
// (GPU 0) or "cuda:N". Parsed here, in the leaf config library, so every
// front end validates it the same way; whether the build and machine have
// that device is kernels/'s business (create_backend says why not).
#pragma once

#include <string>
#include <string_view>

namespace tc::config {

struct DeviceSetting {
  bool cuda = false;  // false: the CPU backend
  int index = 0;      // cuda only: the CUDA device index (0 .. 63)
};

// Throws std::invalid_argument quoting the value and saying what is accepted.
DeviceSetting parse_device_setting(std::string_view text);
// Back to the flag's spelling ("cpu", "cuda:1").
std::string device_setting_string(const DeviceSetting& setting);

}  // namespace tc::config
