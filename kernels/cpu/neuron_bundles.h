// Neuron bundles: the layout a ReLU FFN's sparse (cold) path reads. Bundle
// b holds one neuron's gate row, up row and ffn_down_t row back to back, so a
// neuron that fires is one contiguous run of memory (as in "LLM in a Flash"),
// and a layer's bundles are ordered so the neurons that fire most often sit
// together. bundle_ffn() computes the FFN over a set of bundles in one pass
// per neuron group: the gate rows, then the up and down rows of the neurons
// whose gate is positive, on the pool's threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/tensor.h"

namespace tc::kernels {

// Where the parts of a bundle sit. Every part is a row of n_embd elements in
// `dtype`'s block format (row_bytes each). The gate rows, read for every
// predicted neuron, form one matrix in bundle order (row_bytes apart); the
// up and ffn_down_t rows, read only for the neurons whose gate is positive,
// sit back to back in bundles `stride` bytes apart (a multiple of 64, so
// each starts on a cache line). Keeping the gate apart stops the hardware
// prefetcher from running on into the up rows of neurons that turn out
// dead.
struct BundleLayout {
  DType dtype = DType::F32;
  int64_t n_embd = 0;
  int64_t row_bytes = 0;  // one packed row of n_embd elements
  int64_t stride = 0;     // bytes from one up/down bundle to the next: 2 * row_bytes rounded up to 64

  int64_t up_offset() const { return 0; }
  int64_t down_offset() const { return row_bytes; }
};

// The layout of bundles of rows of n_embd elements in `dtype` (any weight
// dtype; n_embd a multiple of its block size).
BundleLayout bundle_layout(DType dtype, int64_t n_embd);

// A layer's bundles: `n_bundles` of `layout`, the gate rows at `gate`
// (n_bundles * row_bytes bytes) and the up/down bundles at `up_down`
// (n_bundles * stride bytes, 64-byte aligned). Not owning.
struct BundleSet {
  BundleLayout layout;
  const std::byte* gate = nullptr;
  const std::byte* up_down = nullptr;
  int64_t n_bundles = 0;

  // The three parts as matrices of n_bundles rows (row b = bundle b's
  // part): the views matmul_rows and axpy_rows take.
  Tensor gate_rows() const;
  Tensor up_rows() const;
  Tensor down_t_rows() const;
};

// Bytes of n bundles of `layout`: the gate matrix, then the up/down bundles.
inline int64_t bundle_gate_bytes(const BundleLayout& l, int64_t n) { return n * l.row_bytes; }
inline int64_t bundle_up_down_bytes(const BundleLayout& l, int64_t n) { return n * l.stride; }

// Copies neurons[b]'s rows of gate, up and down_t into bundle b, for b <
// neurons.size(): the gate row to gate_dst (bundle_gate_bytes), the up and
// down rows to up_down_dst (bundle_up_down_bytes, 64-byte aligned; padding
// bytes zeroed). gate, up: {n_embd, n_ff} (row i = neuron i), down_t:
// {n_embd, n_ff} (row i = neuron i's output column), all of layout's dtype
// in row layout. Runs on the pool.
void pack_bundles(const Tensor& gate, const Tensor& up, const Tensor& down_t, std::span<const int32_t> neurons,
                  const BundleLayout& layout, std::byte* gate_dst, std::byte* up_down_dst, ThreadPool& pool);

// Scratch of bundle_ffn, grown to the largest call; one per calling thread.
struct BundleFfnScratch {
  std::vector<float> gate;        // f32 [n_chunks, T, kBundleChunk]: gate of each chunk's slots
  std::vector<float> act;         // f32 [n_chunks, T, kBundleChunk]: up, then the activation, of the live ones
  std::vector<int32_t> live;      // i32 [n_chunks, kBundleChunk]: each chunk's live bundle slots
  std::vector<int32_t> n_live;    // i32 [n_chunks]
  std::vector<uint8_t> token_on;  // u8 [n_chunks, T]: the chunk has a live neuron for token t
  std::vector<float> partial;     // f32 [n_chunks, T, n_embd]: each chunk's down sum
  std::vector<int32_t> chunk_begin;  // i32 [n_chunks + 1]: the chunks as ranges of the slot list
  std::vector<std::byte> xq;         // x prepared for the dtype's dot products (matmul's activation layout)
};

// Bundle slots per chunk: bundle_ffn sums each fixed range of kBundleChunk
// bundle slots ([c * kBundleChunk, (c + 1) * kBundleChunk)) on one thread,
// then adds the ranges' partial sums in order.
constexpr int64_t kBundleChunk = 512;

// The FFN over a set of bundles:
//   y[t, :] = sum over k of act(g[t, k], u[t, k]) * down_t row of bundle slots[k]
//   g[t, k] = gate row of slots[k] · x[t, :],  u[t, k] = up row of slots[k] · x[t, :]
// with matmul's bits for each dot product (the same activation quantization
// and summation order as matmul_rows on the bundles' gate_rows() and
// up_rows() views).
// x:     f32 [n_tokens, n_embd], contiguous (ffn_norm's output).
// slots: i32 [n_slots], strictly ascending bundle positions in [0, n_bundles).
// keep:  u8 [n_tokens, n_slots] or nullptr: keep[t, k] == 0 drops slot k for
//        token t (its gate is taken as 0: the token did not predict it);
//        nullptr keeps every slot for every token.
// act:   ReGLU or DReLU (relu(gate) gates the neuron: a slot whose gate is
//        <= 0 for every token is "dead", its up and down rows are not read).
// y:     f32 [n_tokens, n_embd], overwritten.
// Returns the number of live slots (gate > 0 for some kept token).
// Summation: each kBundleChunk range of slots is summed as axpy_rows sums
// (ascending, from +0, zeros skipped); y[t] is the sum of the ranges that
// have a live slot for token t, in ascending order, from +0. Ranges are fixed
// by slot position, not by the call: a token's output has the same bits for
// any thread count and whatever other tokens the call holds.
int64_t bundle_ffn(const BundleSet& bundles, const float* x, int64_t n_tokens, const int32_t* slots, int64_t n_slots,
                   const uint8_t* keep, Activation act, float* y, BundleFfnScratch& scratch, ThreadPool& pool);

// The same computation by the portable scalar kernels, single-threaded (the
// reference the fast path is tested against).
int64_t bundle_ffn_reference(const BundleSet& bundles, const float* x, int64_t n_tokens, const int32_t* slots,
                             int64_t n_slots, const uint8_t* keep, Activation act, float* y,
                             BundleFfnScratch& scratch);

}  // namespace tc::kernels
