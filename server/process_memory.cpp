// Memory probes (see process_memory.h): /proc for host memory, the
// kernels' device query for GPU memory.
#include "server/process_memory.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "kernels/device_info.h"

namespace tc::server {

uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

uint64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::optional<uint64_t> gpu_free_bytes(int index) {
  const auto gpus = kernels::query_gpus();
  for (const auto& d : gpus.devices) {
    if (d.index == index) return d.free_bytes;
  }
  return std::nullopt;
}

}  // namespace tc::server
