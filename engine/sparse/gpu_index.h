// PowerInfer's neuron placement file (`MODEL.generated.gpuidx`): a GGUF
// container with magic PWRI, general.architecture "generic.gpu_index", the
// u64 key split.vram_capacity and, per layer N, two i32 tensors:
//   blk.N.gpu_idx    [n_ff]  1 where neuron i is on the GPU, else 0
//   blk.N.gpu_bucket [k]     the GPU neurons' indices, ascending
// We write PowerInfer's keys plus informative thermocline.placement.* ones
// (which PowerInfer ignores); see docs/placement.md. Plain data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace tc::sparse {

inline constexpr std::string_view kGpuIndexArchitecture = "generic.gpu_index";
// u64: bytes PowerInfer may spend on the split FFN neurons (the budget left
// after the fixed part).
inline constexpr std::string_view kVramCapacityKey = "split.vram_capacity";
// u32 (optional on read): n_layer, as PowerInfer's writer adds it.
inline constexpr std::string_view kGpuIndexBlockCountKey = "generic.gpu_index.block_count";
// u64 (optional on read): fingerprint of the model the plan was made for
// (ModelFingerprint::tensor_hash); checked when present.
inline constexpr std::string_view kGpuIndexModelHashKey = "thermocline.placement.model.tensor_hash";

std::string gpu_idx_tensor_name(int64_t layer);     // "blk.3.gpu_idx"
std::string gpu_bucket_tensor_name(int64_t layer);  // "blk.3.gpu_bucket"

struct GpuIndex {
  uint64_t vram_capacity = 0;                // split.vram_capacity
  int64_t n_ff = 0;                          // neurons per layer
  std::vector<std::vector<int32_t>> hot;     // i32 [n_layer][k_l]: layer l's GPU neuron indices, ascending
  std::optional<uint64_t> model_tensor_hash; // kGpuIndexModelHashKey
  // Further informative u64 keys written as "thermocline.placement.<name>"
  // (vram_budget, fixed_bytes, hot_bytes, n_ctx, ...); not read back.
  std::vector<std::pair<std::string, uint64_t>> notes;

  int64_t n_layer() const { return static_cast<int64_t>(hot.size()); }
};

// Writes atomically. Throws std::invalid_argument when an index list is not
// ascending or out of [0, n_ff), std::runtime_error naming the path on I/O
// failure.
void write_gpu_index(const GpuIndex& index, const std::filesystem::path& path);

// Reads and validates against the model: the architecture, split.vram_capacity,
// exactly n_layer layers of both tensors (i32, gpu_idx [n_ff] of 0/1 only,
// gpu_bucket 1-D ascending and in range, equal to the mask's ones), no
// other tensor, block_count and the model hash when present (expected_hash
// nullopt: not checked). Throws gguf::ModelLoadError naming the file and
// the key or tensor at fault; never reads out of bounds.
GpuIndex read_gpu_index(const std::filesystem::path& path, int64_t n_layer, int64_t n_ff,
                        std::optional<uint64_t> expected_hash = std::nullopt);
GpuIndex read_gpu_index(const gguf::GgufFile& file, int64_t n_layer, int64_t n_ff,
                        std::optional<uint64_t> expected_hash = std::nullopt);

}  // namespace tc::sparse
