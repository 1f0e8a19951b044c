// Tensor: a non-owning view of a 1-4 dimensional array (pointer, dtype,
// shape, row stride, memory kind). ne[0] is the innermost (contiguous)
// dimension, as in GGUF: a matrix of `rows` rows of `cols` elements has
// ne = {cols, rows}. Rows may be padded (row_bytes >= the packed size).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace tc::kernels {

enum class MemoryKind {
  Host,        // ordinary host memory (heap)
  MappedFile,  // a read-only mmap of a model file
  PinnedHost,  // page-locked host memory (CUDA builds)
  Device,      // GPU memory
};

// How a matrix's rows are laid out in memory.
enum class WeightLayout {
  Rows,         // row r at data + r * row_bytes, in the dtype's own block format
  Q4_0Lanes16,  // Q4_0 repacked for the CPU matmul in tiles of 16 rows
                // (kernels/cpu/q4_lanes16.h); row() does not apply, only
                // matmul() and the helpers there read it
  Q4_1Lanes16,  // Q4_1 the same way, its minimums after the scales
  Q8_0Lanes16,  // Q8_0 the same way (kernels/cpu/q8_lanes16.h)
  Q4_KLanes16,  // Q4_K the same way (kernels/cpu/q4k_lanes16.h)
  Q5_KLanes16,  // Q5_K the same way (kernels/cpu/q5k_lanes16.h)
  Q6_KLanes16,  // Q6_K the same way (kernels/cpu/q6k_lanes16.h)
  Q3_KLanes16,  // Q3_K the same way (kernels/cpu/q3k_lanes16.h)
  IQ4_XSLanes16,  // IQ4_XS the same way (kernels/cpu/iq4xs_lanes16.h)
  IQ4_NLLanes16,  // IQ4_NL in Q4_0Lanes16's bytes (its blocks are Q4_0's: an f16
                  // scale and 16 bytes of nibble pairs; kernels/cpu/q4_lanes16.h)
  Q5_0Lanes16,    // Q5_0 in tiles of 16 rows, its fifth bits beside the nibbles
                  // (kernels/cpu/q5_lanes16.h)
  Q5_1Lanes16,    // Q5_1 the same way, its minimums after the scales
};

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  int64_t row_bytes = 0;   // bytes from one row (ne[0] elements) to the next
  MemoryKind memory = MemoryKind::Host;
  WeightLayout layout = WeightLayout::Rows;  // row_bytes stays the plain row size either way

  int64_t n_cols() const { return ne[0]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t n_elements() const { return ne[0] * n_rows(); }
  std::byte* row(int64_t r) const { return static_cast<std::byte*>(data) + r * row_bytes; }
  template <typename T>
  T* row_as(int64_t r) const {
    return reinterpret_cast<T*>(row(r));
  }

  // A packed view of `data` with shape {n_cols, n_rows}.
  static Tensor matrix(const void* data, DType dtype, int64_t n_cols, int64_t n_rows,
                       MemoryKind memory = MemoryKind::Host) {
    Tensor t;
    t.data = const_cast<void*>(data);
    t.dtype = dtype;
    t.ne = {n_cols, n_rows, 1, 1};
    t.row_bytes = kernels::row_bytes(dtype, n_cols);
    t.memory = memory;
    return t;
  }
};

}  // namespace tc::kernels
