// HybridStepTimer, the bytes per token of each side, and the report.
#include "engine/model/hybrid_time_split.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/hybrid_prefetch.h"
#include "engine/model/sparse_ffn_block.h"
#include "engine/sparse/decode_bytes.h"

namespace tc::model {

double host_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

HybridStepTimer::HybridStepTimer(kernels::Backend& device, int64_t n_layer)
    : device_(device), n_layer_(n_layer), begin_(device.make_timing_event()), end_(device.make_timing_event()) {
  for (int64_t i = 0; i < n_layer * kMarks; ++i) marks_.push_back(device.make_timing_event());
}

void HybridStepTimer::begin_step() {
  wall_start_ = host_seconds();
  device_.record_event(*begin_);
}

void HybridStepTimer::mark(int64_t layer, Mark m) { device_.record_event(event(layer, m)); }

void HybridStepTimer::end_step() { device_.record_event(*end_); }

double HybridStepTimer::span(kernels::Event& a, kernels::Event& b) const { return device_.elapsed_seconds(a, b); }

void HybridStepTimer::finish_step() {
  split_.wall_s += host_seconds() - wall_start_;
  ++split_.steps;
  if (n_layer_ == 0) return;
  double gpu = span(*begin_, event(0, Mark::PredictEnd));
  if (gpu < 0) return;  // the backend does not time its stream
  for (int64_t l = 0; l < n_layer_; ++l) {
    gpu += span(event(l, Mark::HotBegin), event(l, Mark::HotEnd));
    gpu += span(event(l, Mark::MergeBegin), event(l, Mark::MergeEnd));
    gpu += l + 1 < n_layer_ ? span(event(l, Mark::MergeEnd), event(l + 1, Mark::PredictEnd))
                            : span(event(l, Mark::MergeEnd), *end_);
  }
  split_.gpu_s += gpu;
  split_.gpu_timed = true;
}

void HybridStepTimer::reset() { split_ = {}; }

HybridBytes hybrid_bytes_per_token(const LoadedModel& model, const SparseFfnCounters& ffn,
                                   const HybridSplitCounters& sides, const PrefetchCounters* prefetch,
                                   const HybridTimeSplit& split, double mean_context) {
  const auto& spec = model.spec;
  const sparse::DecodeBytes dense = sparse::decode_bytes_per_token(model, &ffn, mean_context);
  HybridBytes b;
  b.gpu = dense.attention + dense.predictors + dense.head + dense.kv;
  const auto row = [&](int64_t l, const char* t) {
    const auto* info = model.file.find_tensor(layer_tensor_name(l, t));
    return info == nullptr ? 0.0 : static_cast<double>(info->n_bytes) / static_cast<double>(spec.n_ff);
  };
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    const auto i = static_cast<size_t>(l);
    if (ffn.token_layers[i] == 0) continue;
    const double tokens = static_cast<double>(ffn.token_layers[i]);
    const double gate = row(l, "ffn_gate");
    const double up = row(l, "ffn_up");
    const double down = row(l, "ffn_down") + row(l, "ffn_down_t");  // one of the two: the same bytes per neuron
    const double device = static_cast<double>(sides.hot[i] + sides.cached[i]) / tokens;
    const double cpu_part = static_cast<double>(sides.cold[i]) / tokens;
    const double cpu_live = std::max(0.0, static_cast<double>(ffn.computed[i]) / tokens - device);
    b.gpu += device * (gate + up + down);
    b.cpu += cpu_part * gate + cpu_live * (up + down);
    if (prefetch != nullptr) b.bus += static_cast<double>(prefetch->filled[i]) / tokens * (gate + up + down);
  }
  if (split.steps > 0) {
    int64_t tokens = 0;
    for (const int64_t t : ffn.token_layers) tokens = std::max(tokens, t);
    b.bus += static_cast<double>(split.bus_bytes) / static_cast<double>(std::max<int64_t>(tokens, 1));
  }
  return b;
}

std::string describe_time_split(const HybridTimeSplit& split, const HybridBytes& bytes,
                                const sparse::Bandwidths& bandwidths) {
  if (split.steps == 0) return "hybrid decode: no steps timed\n";
  const double n = static_cast<double>(split.steps);
  const auto ms = [n](double seconds) { return 1e3 * seconds / n; };
  char gpu[32] = "not timed";
  if (split.gpu_timed) std::snprintf(gpu, sizeof gpu, "%.2f ms", ms(split.gpu_s));
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "hybrid decode, per token (%lld steps): %.2f ms wall; GPU busy %s, CPU (cold neurons) "
                "%.2f ms, waits on the GPU %.2f ms; bus %.3f MB\n",
                static_cast<long long>(split.steps), ms(split.wall_s), gpu, ms(split.cpu_s), ms(split.wait_s),
                bytes.bus / 1e6);
  out += line;
  if (!bandwidths.known()) return out + "modelled limit: bandwidths not measured\n";
  const double gpu_s = bytes.gpu / bandwidths.gpu;
  const double cpu_s = bytes.cpu / bandwidths.host_dram;
  const double bus_s = bytes.bus / bandwidths.pcie_h2d;
  const double limit = std::max({gpu_s, cpu_s, bus_s});
  std::snprintf(line, sizeof line, "modelled limit %.2f ms = max(GPU %.3f GB / %.0f GB/s, CPU %.3f GB / %.1f GB/s, "
                "bus %.3f MB / %.1f GB/s): %.0f%% of it achieved\n",
                1e3 * limit, bytes.gpu / 1e9, bandwidths.gpu / 1e9, bytes.cpu / 1e9, bandwidths.host_dram / 1e9,
                bytes.bus / 1e6, bandwidths.pcie_h2d / 1e9, 100.0 * limit / (split.wall_s / n));
  return out + line;
}

}  // namespace tc::model
