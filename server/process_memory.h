// Memory probes for deciding how many models fit: the machine's physical
// memory, this process's resident set, a GPU's free bytes. Each reads the
// system afresh (no caching); thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace tc::server {

// Physical memory (MemTotal of /proc/meminfo) in bytes; 0 if unknown.
uint64_t mem_total_bytes();

// This process's resident set (/proc/self/statm) in bytes; 0 if unknown.
uint64_t rss_bytes();

// Free bytes of GPU `index` as the driver reports them; nullopt without
// that GPU (or in a build without CUDA).
std::optional<uint64_t> gpu_free_bytes(int index);

}  // namespace tc::server
