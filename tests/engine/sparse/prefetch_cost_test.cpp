// The prefetch path's per-layer cost model on hand-given bandwidths (a
// 7B-shaped f16 layer: 24 KiB per neuron, a 31 MB predictor), with the times
// worked out by hand; and the bandwidth probe's three numbers.
#include <catch2/catch.hpp>

#include <cmath>

#include "engine/sparse/bandwidth_probe.h"
#include "engine/sparse/prefetch_cost.h"
#include "kernels/backend.h"
#include "kernels/check.h"

using tc::sparse::Bandwidths;
using tc::sparse::estimate_prefetch;
using tc::sparse::PrefetchTraffic;

namespace {

constexpr Bandwidths kPc{.pcie_h2d = 25e9, .host_dram = 50e9, .gpu = 1000e9};
constexpr double kNeuronBytes = 3 * 4096 * 2;  // f16 gate + up + down_t rows of n_embd 4096

PrefetchTraffic traffic(double hot, double cold, double hits, double fills) {
  return {.hot = hot, .cold = cold, .hits = hits, .fills = fills, .neuron_bytes = kNeuronBytes,
          .lookahead_bytes = 31e6};
}

}  // namespace

TEST_CASE("prefetch cost: a CPU-bound layer whose cache hits far outnumber its fills prefetches",
          "[sparse][prefetch]") {
  const auto e = estimate_prefetch(kPc, traffic(800, 250, 200, 20));
  // CPU only: 250 neurons from DRAM (122.88 us) against 800 on the GPU (19.66 us).
  CHECK(e.cpu_s == Approx(250 * kNeuronBytes / 50e9));
  // Prefetch: the lookahead (31 us), then the CPU's 50 misses plus 3 x 20
  // filled neurons of DRAM traffic (54.07 us), above the GPU's 1000 neurons
  // (24.58 us) and the 20 fills over PCIe (19.66 us).
  CHECK(e.prefetch_s == Approx(31e6 / 1000e9 + (50 + 3 * 20) * kNeuronBytes / 50e9));
  CHECK(e.prefetch);
}

TEST_CASE("prefetch cost: fills that are not reused cost more DRAM traffic than they save", "[sparse][prefetch]") {
  // 100 fills for 200 hits: (50 + 300) neurons of DRAM traffic, 203.03 us > 122.88 us.
  const auto e = estimate_prefetch(kPc, traffic(800, 250, 200, 100));
  CHECK(e.prefetch_s == Approx(31e6 / 1000e9 + (50 + 3 * 100) * kNeuronBytes / 50e9));
  CHECK_FALSE(e.prefetch);
}

TEST_CASE("prefetch cost: a GPU-bound layer keeps its few cold neurons on the CPU", "[sparse][prefetch]") {
  // 2 cold neurons (0.98 us) hide behind 800 hot ones (19.66 us); the lookahead alone costs 31 us.
  const auto e = estimate_prefetch(kPc, traffic(800, 2, 2, 0));
  CHECK(e.cpu_s == Approx(800 * kNeuronBytes / 1000e9));
  CHECK(e.prefetch_s == Approx(31e6 / 1000e9 + 802 * kNeuronBytes / 1000e9));
  CHECK_FALSE(e.prefetch);
  // Without the lookahead's cost the same layer would still not gain: the GPU part grows.
  auto free_lookahead = traffic(800, 2, 2, 0);
  free_lookahead.lookahead_bytes = 0;
  CHECK_FALSE(estimate_prefetch(kPc, free_lookahead).prefetch);
}

TEST_CASE("prefetch cost: a slow bus makes the copies the bottleneck", "[sparse][prefetch]") {
  Bandwidths slow_bus = kPc;
  slow_bus.pcie_h2d = 1e9;
  const auto e = estimate_prefetch(slow_bus, traffic(800, 250, 200, 20));
  CHECK(e.prefetch_s == Approx(31e6 / 1000e9 + 20 * kNeuronBytes / 1e9));  // 522.52 us of copies
  CHECK_FALSE(e.prefetch);
  // And a slow host the other way round: the same traffic on a 10 GB/s DRAM prefetches.
  Bandwidths slow_host = kPc;
  slow_host.host_dram = 10e9;
  CHECK(estimate_prefetch(slow_host, traffic(800, 250, 200, 20)).prefetch);
}

TEST_CASE("prefetch cost: unknown bandwidths are refused", "[sparse][prefetch]") {
  Bandwidths none;
  CHECK_FALSE(none.known());
  CHECK_THROWS_AS(estimate_prefetch(none, traffic(1, 1, 1, 1)), tc::InvariantError);
}

TEST_CASE("bandwidth probe: three positive, finite rates", "[sparse][prefetch]") {
  auto device = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  const Bandwidths bw = tc::sparse::measure_bandwidths(*device, *cpu, size_t{4} << 20);
  CHECK(bw.known());
  for (const double rate : {bw.pcie_h2d, bw.host_dram, bw.gpu}) {
    CHECK(std::isfinite(rate));
    CHECK(rate > 1e6);  // more than 1 MB/s: a memcpy or GEMV over 4 MiB, not a failed run
  }
}
