// The per-layer cost model of hybrid mode's prefetch path: from measured
// bandwidths and a layer's FFN traffic per sparse run, the time of the
// layer's split FFN with every cold neuron on the CPU against the time with
// the VRAM neuron cache serving its hits and the prefetcher copying its
// fills; prefetch when that is shorter. docs/hybrid.md ("The cost model")
// derives the terms.
#pragma once

namespace tc::sparse {

// Bandwidths in bytes per second (measured at start on CUDA:
// sparse::measure_bandwidths; given by hand in tests).
struct Bandwidths {
  double pcie_h2d = 0;   // host -> device over the copy queue, from pinned memory
  double host_dram = 0;  // weight rows read by the CPU pool (the cold neurons' GEMVs)
  double gpu = 0;        // weight rows read by the GPU's GEMVs
  bool known() const { return pcie_h2d > 0 && host_dram > 0 && gpu > 0; }
};

// One layer's FFN traffic per sparse run (averages over runs), in neurons,
// and the bytes behind it.
struct PrefetchTraffic {
  double hot = 0;    // |hot ∩ P|: on the GPU either way
  double cold = 0;   // |cold ∩ P|: every one on the CPU without the cache
  double hits = 0;   // of those, listed in the layer's cache (served by the GPU with prefetch)
  double fills = 0;  // neurons the cache copies in
  double neuron_bytes = 0;     // ffn_gate + ffn_up + ffn_down_t row bytes of one neuron
  double lookahead_bytes = 0;  // the layer's predictor (fc1 + fc2), run once more, one layer ahead
};

// Host DRAM bytes a filled byte costs: the prefetch thread reads the row
// from the mapped file and writes it to pinned staging, and the copy engine
// reads it from there; they share the DRAM bus with the CPU pool.
inline constexpr double kHostBytesPerFilledByte = 3.0;

struct PrefetchEstimate {
  double cpu_s = 0;       // seconds per run, every cold neuron on the CPU
  double prefetch_s = 0;  // seconds per run with the cache and its fills
  bool prefetch = false;  // prefetch_s < cpu_s
};

// cpu_s      = max(hot b / gpu, cold b / dram)
// prefetch_s = lookahead / gpu + max((hot + hits) b / gpu,
//                                    ((cold - hits) + 3 fills) b / dram,
//                                    fills b / pcie)
// with b = neuron_bytes. The GPU's FFN part and the CPU's run at the same
// time (the max); the lookahead runs before them, beside the layer's own
// predictor; the copies run on the copy engine beside everything (counting
// them inside the max is the conservative side). `bandwidths` must be known().
PrefetchEstimate estimate_prefetch(const Bandwidths& bandwidths, const PrefetchTraffic& traffic);

}  // namespace tc::sparse
