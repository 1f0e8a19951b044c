// Internal to kernels/cpu: the contract between the axpy driver
// (sparse_ffn.cpp: dispatch, column split, threads) and the per-ISA axpy
// kernels (sparse_ffn_portable.cpp, sparse_ffn_avx2.cpp,
// sparse_ffn_avx512.cpp). The gathered GEMV needs no kernels of its own: it
// is matmul's (matmul_kernels.h, MatmulArgs::rows).
//
// As for matmul: only plain data and function pointers cross this boundary;
// the ISA files keep their helpers in anonymous namespaces.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/dtype.h"

namespace tc::kernels::detail {

// One axpy_rows call as the kernels see it (see sparse_ffn.h).
struct AxpyArgs {
  DType dtype = DType::F32;
  const std::byte* w = nullptr;  // weights, neuron i's row at w + i * row_bytes
  int64_t row_bytes = 0;
  int64_t n_out = 0;              // columns of a row
  const int32_t* rows = nullptr;  // i32 [n_rows]
  int64_t n_rows = 0;
  const float* a = nullptr;  // f32 [n_tokens, n_rows]
  int64_t n_tokens = 0;
  float* y = nullptr;  // f32 [n_tokens, n_out]
};

// The axpy kernel of one instruction-set variant: pure and thread-safe.
struct AxpyIsa {
  const char* name;
  // Writes y[t, j] for j in [j_begin, j_end) and every token. j_begin is a
  // multiple of axpy_column_grain(dtype); j_end is one too, or n_out. Each
  // output is summed in the order sparse_ffn.h states, so the column range
  // never changes its bits.
  void (*compute_columns)(const AxpyArgs& args, int64_t j_begin, int64_t j_end);
};

// Columns are split between threads in multiples of this: whole blocks of
// the dtype and whole 64-column tiles of the SIMD kernels.
// (Defined in sparse_ffn.cpp, not inline: see the top of this file.)
int64_t axpy_column_grain(DType dtype);

// The variants compiled into this binary (nullptr: built without the flags).
const AxpyIsa& axpy_isa_portable();
const AxpyIsa* axpy_isa_avx2();
const AxpyIsa* axpy_isa_avx512();

// The axpy variant of the same instruction set as a matmul variant: matmul's
// run-time choice (CPUID, THERMOCLINE_ISA) picks both.
const AxpyIsa& axpy_isa_for(const MatmulIsa& isa);

// axpy_rows() with a given variant; pool may be nullptr (single-threaded).
void axpy_rows_with(const AxpyIsa& isa, const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows,
                    int64_t n_rows, float* y, ThreadPool* pool);

}  // namespace tc::kernels::detail
