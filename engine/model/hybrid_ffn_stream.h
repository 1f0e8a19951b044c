// Hybrid mode's dense prompt steps on the GPU: the FFN's rows streamed over
// the bus in tiles, so a long prompt chunk's cold neurons cost one copy of
// their rows instead of T tokens' worth of CPU arithmetic. Per layer, per
// tile of kStreamTileBytes-ish rows (neurons [n0, n0 + r)), double-buffered:
//   copy queue: wait until the stage's last reader is done, copy the
//               tile's gate, up and ffn_down_t rows (contiguous in host
//               memory) into the stage, record `copied`;
//   stream:     wait for `copied`; gate and up as matmuls over the stage
//               (cuBLAS above 8 tokens), the activation, the down
//               projection as axpy_rows over the stage's rows into `out`
//               (first tile) or a partial sum added to it; record `done`.
// Every neuron is streamed, hot ones too (their rows are interleaved with
// the cold ones in host memory, so whole tiles copy in three calls); the
// CPU computes nothing in such a step and no host sync happens per layer.
// Used for dense steps of at least kStreamMinTokens tokens (below that the
// CPU's share of a few tokens costs less than copying the rows) in layers
// with cold neurons (a wholly hot layer runs from its device rows).
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "engine/model/hybrid_weights.h"
#include "engine/model/model_spec.h"
#include "kernels/backend.h"

namespace tc::model {

// Bytes of one matrix's tile at most (whole rows; one row when a row is larger).
inline constexpr int64_t kStreamTileBytes = int64_t{16} << 20;
// Dense steps of at least this many tokens stream their FFN (a guess to be
// measured on a GPU: the CPU's cold share grows with the tokens, the
// streamed bytes do not).
inline constexpr int64_t kStreamMinTokens = 32;

// Rows per tile for rows of at most max_row_bytes, at most n_ff.
int64_t stream_tile_rows(int64_t max_row_bytes, int64_t n_ff, int64_t tile_bytes = kStreamTileBytes);
// Device bytes of the two stages: 2 x 3 matrices x tile rows x max_row_bytes.
uint64_t stream_stage_bytes(int64_t max_row_bytes, int64_t n_ff);

class HybridFfnStream {
 public:
  // `spec`, `device` and `weights` must outlive this object; the weights'
  // host matrices must be row layout with packed rows (the mapped file, or
  // the transposed ffn_down_t). Allocates the stages on `device` and makes
  // its copy queue and events. `tile_bytes`: a matrix tile's bytes at most
  // (tests take small ones to run many tiles).
  HybridFfnStream(const ModelSpec& spec, kernels::Backend& device, const HybridWeights& weights,
                  kernels::Activation activation, int64_t tile_bytes = kStreamTileBytes);
  // Waits for the ops that read the stages (then the copy queue, for its copies) before freeing them.
  ~HybridFfnStream();
  HybridFfnStream(const HybridFfnStream&) = delete;
  HybridFfnStream& operator=(const HybridFfnStream&) = delete;

  // out = FFN(cur) of `layer` over every neuron. Device memory: cur f32
  // [T, n_embd]; gate, up f32 [T, tile rows] at least; partial f32 [T,
  // n_embd]; out f32 [T, n_embd], overwritten. Returns with the ops and
  // copies in flight.
  void run(int64_t layer, const float* cur, int64_t n_tokens, float* gate, float* up, float* partial, float* out);

  int64_t tile_rows() const { return tile_rows_; }
  // Bytes copied to the device so far (every run's tiles).
  uint64_t streamed_bytes() const { return streamed_bytes_; }

 private:
  struct Stage {
    kernels::Buffer gate, up, down_t;  // weight dtype [tile_rows, n_embd] each, rows packed
    std::unique_ptr<kernels::Event> copied, done;
    bool used = false;  // `done` recorded: a copy into this stage must wait for it
  };

  const ModelSpec& spec_;
  kernels::Backend& device_;
  const HybridWeights& weights_;
  kernels::Activation activation_;
  int64_t tile_rows_ = 0;
  std::array<Stage, 2> stages_;
  kernels::Buffer rows_;  // i32 [tile_rows]: 0, 1, 2, ... (axpy_rows over a stage's rows in order)
  // After the stages: destroyed first, it waits for its copies into them.
  std::unique_ptr<kernels::CopyQueue> queue_;
  int next_stage_ = 0;
  uint64_t streamed_bytes_ = 0;
};

}  // namespace tc::model
