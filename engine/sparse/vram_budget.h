// The VRAM budget of the placement solver: parsing `--vram-budget` values
// ("12GiB", "1.5GiB", "800MiB", "8G", "8GB", "1000000") and the default
// budget (free memory of GPU 0 minus a margin). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/device_info.h"

namespace tc::sparse {

// Parses a byte count: a plain integer (bytes), or a number (digits with an
// optional fraction) followed by a unit, case-insensitive, optionally
// separated by one space:
//   B                 bytes
//   KiB MiB GiB TiB   powers of 1024
//   K   M   G   T     powers of 1024 too (the short forms of the above)
//   KB  MB  GB  TB    powers of 1000 (SI)
// Rule: a unit ending in "B" without an "i" is decimal; every other unit is
// binary. Fractions are rounded down to whole bytes; plain bytes must be a
// whole number. Throws std::invalid_argument naming the value for anything
// else (empty, negative, garbage, unknown unit, more than 2^63 - 1 bytes).
uint64_t parse_byte_size(std::string_view text);

// What query_gpus() leaves unreserved on GPU 0: max(kMinVramMargin, 5% of
// its total memory) for the CUDA context, cuBLAS workspaces and allocator
// slack.
inline constexpr uint64_t kMinVramMargin = uint64_t{512} << 20;
uint64_t vram_margin(uint64_t total_bytes);

struct DefaultBudget {
  uint64_t bytes = 0;      // free bytes of GPU 0 minus vram_margin(total)
  std::string source;      // "GPU 0 (NAME): 70.2 GiB free - 3.9 GiB margin"
};

// The budget when none is given. Throws std::invalid_argument when there is
// no GPU to measure (a build without CUDA, no device) or its free memory is
// below the margin; the message says to pass --vram-budget.
DefaultBudget default_vram_budget(const kernels::GpuInventory& gpus);

// "1.50 GiB" (KiB, MiB or GiB with two decimals; "512 B" below 1 KiB): for tables.
std::string human_bytes(uint64_t bytes);
// "1.50 GiB (1610612736 bytes)": for plans and errors.
std::string describe_bytes(uint64_t bytes);

}  // namespace tc::sparse
