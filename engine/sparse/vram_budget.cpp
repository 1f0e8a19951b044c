// The default VRAM budget and byte formatting.
#include "engine/sparse/vram_budget.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tc::sparse {

uint64_t vram_margin(uint64_t total_bytes) { return std::max(kMinVramMargin, total_bytes / 20); }

VramBudget default_vram_budget(const kernels::GpuInventory& gpus, int device_index) {
  if (!gpus.cuda_built || gpus.devices.empty()) {
    throw std::invalid_argument("no GPU to take the VRAM budget from (" + gpus.status +
                                "); pass --vram-budget BYTES (e.g. --vram-budget 12GiB) to plan for a GPU");
  }
  const auto gpu = std::find_if(gpus.devices.begin(), gpus.devices.end(),
                                [&](const kernels::GpuDeviceInfo& d) { return d.index == device_index; });
  if (gpu == gpus.devices.end()) {
    throw std::invalid_argument("no GPU " + std::to_string(device_index) + " to take the VRAM budget from (" +
                                gpus.status + "); pass --vram-budget BYTES (e.g. --vram-budget 12GiB)");
  }
  const uint64_t margin = vram_margin(gpu->total_bytes);
  if (gpu->free_bytes <= margin) {
    throw std::invalid_argument("GPU " + std::to_string(gpu->index) + " (" + gpu->name + ") has " +
                                describe_bytes(gpu->free_bytes) + " free, not more than the margin of " +
                                describe_bytes(margin) + "; pass --vram-budget");
  }
  VramBudget b;
  b.bytes = gpu->free_bytes - margin;
  b.source = "GPU " + std::to_string(gpu->index) + " (" + gpu->name + "): " + describe_bytes(gpu->free_bytes) +
             " free - " + describe_bytes(margin) + " margin";
  return b;
}

VramBudget resolve_vram_budget(std::optional<uint64_t> given, std::string_view given_text, int device_index) {
  if (!given) return default_vram_budget(kernels::query_gpus(), device_index);
  return {*given, "--vram-budget " + (given_text.empty() ? std::to_string(*given) : std::string(given_text))};
}

std::string human_bytes(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  if (bytes >= (uint64_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / static_cast<double>(uint64_t{1} << 30));
  } else if (bytes >= (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / static_cast<double>(uint64_t{1} << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

std::string describe_bytes(uint64_t bytes) { return human_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)"; }

}  // namespace tc::sparse
