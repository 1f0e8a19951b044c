// The portable axpy kernel: plain C++ over the reference dequantizers,
// compiled for baseline x86-64 (or any target). The fallback on CPUs
// without AVX2 and the readable reference the SIMD variants are tested
// against. Each term is a * w rounded, then added (no FMA), in the order
// sparse_ffn.h states.
#include <cstring>

#include "kernels/cpu/quantize.h"
#include "kernels/cpu/sparse_ffn_kernels.h"

namespace tc::kernels::detail {
namespace {

// Columns dequantized at a time: a multiple of every block size, small
// enough to stay in L1 while every token uses it.
constexpr int64_t kSpan = 256;

void compute_columns(const AxpyArgs& args, int64_t j0, int64_t j1) {
  for (int64_t t = 0; t < args.n_tokens; ++t) {
    std::memset(args.y + t * args.n_out + j0, 0, static_cast<size_t>(j1 - j0) * sizeof(float));
  }
  const DTypeTraits& traits = dtype_traits(args.dtype);
  float w[kSpan];
  for (int64_t k = 0; k < args.n_rows; ++k) {
    bool active = false;
    for (int64_t t = 0; t < args.n_tokens; ++t) active = active || args.a[t * args.n_rows + k] != 0.0f;
    if (!active) continue;  // a ReLU zero for every token: the row is not read
    const std::byte* row = args.w + static_cast<int64_t>(args.rows[k]) * args.row_bytes;
    for (int64_t c0 = j0; c0 < j1; c0 += kSpan) {
      const int64_t n = j1 - c0 < kSpan ? j1 - c0 : kSpan;
      // c0 and n are whole blocks: j0 is a multiple of the column grain.
      dequantize_row(args.dtype, row + c0 / traits.block_size * traits.block_bytes, w, n);
      for (int64_t t = 0; t < args.n_tokens; ++t) {
        const float ak = args.a[t * args.n_rows + k];
        if (ak == 0.0f) continue;
        float* y = args.y + t * args.n_out + c0;
        for (int64_t j = 0; j < n; ++j) y[j] += ak * w[j];
      }
    }
  }
}

constexpr AxpyIsa kPortable = {"portable", compute_columns};

}  // namespace

const AxpyIsa& axpy_isa_portable() { return kPortable; }

}  // namespace tc::kernels::detail
