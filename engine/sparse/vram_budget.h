// The VRAM budget of the placement solver and of layer offload: the one
// given (`--vram-budget`, parsed by config/byte_size.h) or the default (free
// memory of the GPU minus a margin). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/device_info.h"

namespace tc::sparse {

// What the default budget leaves unreserved on a GPU: max(kMinVramMargin,
// 5% of its total memory) for the CUDA context, cuBLAS's loaded kernels and
// allocator slack.
inline constexpr uint64_t kMinVramMargin = uint64_t{512} << 20;
uint64_t vram_margin(uint64_t total_bytes);

struct VramBudget {
  uint64_t bytes = 0;
  // Where it came from: "--vram-budget 12GiB", or the default's
  // "GPU 0 (NAME): 70.2 GiB free - 3.9 GiB margin".
  std::string source;
};

// The budget when none is given: the free memory of GPU `device_index` (as
// query_gpus() lists it) minus vram_margin(its total). Throws
// std::invalid_argument when there is no such GPU to measure (a build
// without CUDA, no device) or its free memory is below the margin; the
// message says to pass --vram-budget.
VramBudget default_vram_budget(const kernels::GpuInventory& gpus, int device_index = 0);

// `given` (bytes; `given_text` is how the user wrote it, for the source)
// when set, else default_vram_budget(kernels::query_gpus(), device_index).
VramBudget resolve_vram_budget(std::optional<uint64_t> given, std::string_view given_text, int device_index = 0);

// "1.50 GiB" (KiB, MiB or GiB with two decimals; "512 B" below 1 KiB): for tables.
std::string human_bytes(uint64_t bytes);
// "1.50 GiB (1610612736 bytes)": for plans and errors.
std::string describe_bytes(uint64_t bytes);

}  // namespace tc::sparse
