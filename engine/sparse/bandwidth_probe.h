// The bandwidths the prefetch cost model takes (sparse::Bandwidths),
// measured at start: host -> device over a copy queue, and the GEMVs the
// hybrid FFN runs, on the GPU and on the CPU pool, over weights too large
// for a cache.
#pragma once

#include <cstddef>

#include "engine/sparse/prefetch_cost.h"
#include "kernels/backend.h"

namespace tc::sparse {

// Each bandwidth the best of three timed runs over `bytes` (rounded down to
// whole f32 rows of 4096): one copy from allocate_host() memory to device
// memory over device.make_copy_queue(); one F32 matmul of a single token on
// `device` over device memory; the same on `cpu` (a CPU backend) over host
// memory. Allocates about 2 * bytes on the host and `bytes` on the device
// for the duration. Takes tens of milliseconds for the default.
Bandwidths measure_bandwidths(kernels::Backend& device, kernels::Backend& cpu, size_t bytes = size_t{256} << 20);

// The memory bandwidth of `backend`'s own memory in bytes per second, the
// best of five runs: on a GPU a device-to-device copy of `bytes`, counting
// the bytes read and the bytes written (the ceiling a kernel that streams
// its weights can reach); on the CPU a read of `bytes` summed by the
// backend's threads. Allocates `bytes` (twice on a GPU) for the duration.
double measure_memory_bandwidth(kernels::Backend& backend, size_t bytes = size_t{512} << 20);

}  // namespace tc::sparse
