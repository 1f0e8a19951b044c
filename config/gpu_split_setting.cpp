// parse_gpu_split_setting: the GPU split options to a mode, contradictions refused.
#include "config/gpu_split_setting.h"

#include "config/byte_size.h"

namespace tc::config {

GpuSplitSetting parse_gpu_split_setting(const DeviceSetting& device, std::string_view placement,
                                        int64_t offload_layers, std::string_view vram_budget,
                                        std::string_view prefetch) {
  using Option = GpuSplitOption;
  GpuSplitSetting s;
  if (prefetch == "on") {
    s.prefetch = PrefetchSetting::On;
  } else if (prefetch == "off") {
    s.prefetch = PrefetchSetting::Off;
  } else if (prefetch != "auto") {
    throw GpuSplitError(Option::Prefetch, "--prefetch: '" + std::string(prefetch) + "' is not on, off or auto");
  }
  if (s.prefetch == PrefetchSetting::On && placement.empty()) {
    throw GpuSplitError(Option::Prefetch, "--prefetch on copies cold neurons into a VRAM cache in hybrid mode: it "
                                          "needs --placement (FILE or auto)");
  }
  if (!vram_budget.empty()) {
    try {
      s.vram_budget = parse_byte_size(vram_budget);
    } catch (const std::invalid_argument& e) {
      throw GpuSplitError(Option::VramBudget, std::string("--vram-budget: ") + e.what());
    }
    s.vram_budget_text = std::string(vram_budget);
  }
  if (offload_layers < -1) {
    throw GpuSplitError(Option::OffloadLayers, "--offload-layers: must be a layer count K >= 0 (or -1: off), got " +
                                                   std::to_string(offload_layers));
  }
  const bool auto_placement = placement == kPlacementAuto;
  if (!placement.empty() && offload_layers >= 0) {
    throw GpuSplitError(Option::Placement, "--placement (hybrid mode) and --offload-layers (layer offload) are two "
                                           "modes: pick one");
  }
  if (!placement.empty() && !auto_placement && s.vram_budget) {
    throw GpuSplitError(Option::VramBudget,
                        "--vram-budget with --placement FILE: the placement file spent its budget when `thermocline "
                        "place` made it; drop --vram-budget, or use --placement auto to solve the placement at "
                        "start within this budget");
  }
  if (offload_layers >= 0 && s.vram_budget) {
    throw GpuSplitError(Option::VramBudget, "--vram-budget and --offload-layers both choose how many layers layer "
                                            "offload puts on the GPU: pick one");
  }
  if (!placement.empty()) {
    if (!device.cuda) {
      throw GpuSplitError(Option::Placement,
                          "--placement runs hybrid mode (hot neurons on a GPU, cold ones on the CPU): it needs "
                          "--device cuda; on the CPU every neuron is already on the CPU, drop --placement");
    }
    s.mode = auto_placement ? GpuSplitMode::HybridAuto : GpuSplitMode::HybridFile;
    if (!auto_placement) s.placement_file = std::filesystem::path(std::string(placement));
    return s;
  }
  if (offload_layers >= 0 || s.vram_budget) {
    const bool by_budget = offload_layers < 0;
    if (!device.cuda) {
      throw GpuSplitError(by_budget ? Option::VramBudget : Option::OffloadLayers,
                          std::string(by_budget ? "--vram-budget" : "--offload-layers") +
                              " runs layer offload (the first layers on a GPU, the rest on the CPU): it needs "
                              "--device cuda" +
                              (by_budget ? " (with --placement auto it is the hybrid solver's budget instead)" : ""));
    }
    s.mode = GpuSplitMode::LayerOffload;
    s.offload_layers = offload_layers;
  }
  return s;
}

}  // namespace tc::config
