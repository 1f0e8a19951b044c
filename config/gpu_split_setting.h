// The GPU split shared by `serve` (keys placement, prefetch, offload_layers,
// vram_budget) and the running subcommands (--placement, --prefetch,
// --offload-layers, --vram-budget): which parts of the model go to the GPU. Parsed and checked
// for contradictions here, in the leaf config library, so every front end
// applies one rule; engine/runtime/model_setup.h carries it out.
//
// The rule (docs/hybrid.md, "Choosing the mode"):
//   --placement FILE        hybrid mode: the hot neurons of a `thermocline place` file
//   --placement auto        hybrid mode: the placement solved at load from the stats
//                           file, within --vram-budget (default: free VRAM minus a margin)
//   --offload-layers K      layer offload: the first K layers on the GPU
//   --vram-budget B alone   layer offload: the largest K whose bytes fit B
// So --vram-budget is the budget of the mode in use: the solver's with
// --placement auto, layer offload's otherwise. It contradicts a placement
// file (which spent its budget when it was made) and --offload-layers
// (which fixes K). Every mode needs --device cuda[:N]. --prefetch (hybrid
// mode's VRAM neuron cache, docs/hybrid.md) is on, off or auto; "on"
// needs hybrid mode, auto and off mean nothing without it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "config/device_setting.h"

namespace tc::config {

// The --placement value that solves the placement at load.
inline constexpr std::string_view kPlacementAuto = "auto";

// Hybrid mode's prefetch path: cold neurons predicted for the next layer
// copied into a VRAM cache while the GPU computes. Auto: a per-layer cost
// model on measured bandwidths decides.
enum class PrefetchSetting { Off, On, Auto };
inline constexpr std::string_view kPrefetchValues[] = {"on", "off", "auto"};

enum class GpuSplitMode {
  None,          // no split: the whole model on the --device backend
  HybridFile,    // hot neurons on the GPU, from a placement file
  HybridAuto,    // hot neurons on the GPU, solved at load
  LayerOffload,  // the first layers on the GPU, the rest on the CPU
};

struct GpuSplitSetting {
  GpuSplitMode mode = GpuSplitMode::None;
  std::filesystem::path placement_file;  // HybridFile only
  int64_t offload_layers = -1;           // LayerOffload: K; -1: the largest K that fits vram_budget
  // Bytes. HybridAuto: the solver's budget (nullopt: the GPU's free memory
  // minus a margin); LayerOffload with offload_layers -1: K's budget.
  std::optional<uint64_t> vram_budget;
  std::string vram_budget_text;          // vram_budget as written ("12GiB"), for logs
  PrefetchSetting prefetch = PrefetchSetting::Auto;  // hybrid modes only

  bool hybrid() const { return mode == GpuSplitMode::HybridFile || mode == GpuSplitMode::HybridAuto; }
};

// The option a GpuSplitError is about (serve reports it under that key).
enum class GpuSplitOption { Placement, OffloadLayers, VramBudget, Prefetch };

class GpuSplitError : public std::invalid_argument {
 public:
  GpuSplitError(GpuSplitOption option, const std::string& message) : std::invalid_argument(message), option_(option) {}
  GpuSplitOption option() const { return option_; }

 private:
  GpuSplitOption option_;
};

// placement: "" (none), "auto" or a placement file's path; offload_layers:
// -1 (off) or K >= 0; vram_budget: "" (none) or a byte size
// (config/byte_size.h); prefetch: on, off or auto. Throws GpuSplitError
// naming the flags at fault: a bad budget, K or prefetch value, two modes at
// once, a placement file with a budget, a mode without --device cuda,
// prefetch on without hybrid mode. Whether the file exists, K fits the model, and the
// build and machine have the GPU is checked at load.
GpuSplitSetting parse_gpu_split_setting(const DeviceSetting& device, std::string_view placement,
                                        int64_t offload_layers, std::string_view vram_budget,
                                        std::string_view prefetch = "auto");

}  // namespace tc::config
