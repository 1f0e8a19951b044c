// estimate_prefetch: the two per-run times of the cost model.
#include "engine/sparse/prefetch_cost.h"

#include <algorithm>

#include "kernels/check.h"

namespace tc::sparse {

PrefetchEstimate estimate_prefetch(const Bandwidths& bandwidths, const PrefetchTraffic& traffic) {
  TC_CHECK(bandwidths.known(), "estimate_prefetch: every bandwidth must be positive");
  const double b = traffic.neuron_bytes;
  const double on_cpu = std::max(traffic.cold - traffic.hits, 0.0);
  PrefetchEstimate e;
  e.cpu_s = std::max(traffic.hot * b / bandwidths.gpu, traffic.cold * b / bandwidths.host_dram);
  e.prefetch_s = traffic.lookahead_bytes / bandwidths.gpu +
                 std::max({(traffic.hot + traffic.hits) * b / bandwidths.gpu,
                           (on_cpu + kHostBytesPerFilledByte * traffic.fills) * b / bandwidths.host_dram,
                           traffic.fills * b / bandwidths.pcie_h2d});
  e.prefetch = e.prefetch_s < e.cpu_s;
  return e;
}

}  // namespace tc::sparse
