// The sparse FFN driver. The gathered GEMV is matmul's driver over a row set
// (matmul_rows_with); axpy_rows checks its arguments, takes the axpy variant
// of matmul's instruction set, and splits the output columns across the
// pool in block-aligned chunks that threads claim.
#include "kernels/cpu/sparse_ffn.h"

#include <atomic>
#include <cstring>

#include "kernels/check.h"
#include "kernels/cpu/sparse_ffn_kernels.h"

namespace tc::kernels {
namespace detail {
namespace {

// Column chunks per thread. Every chunk walks all active rows, so fewer,
// wider chunks read longer contiguous pieces of each row: one chunk per
// thread (half a 4096-wide row each on 2 threads) against two took the Q4_0
// down projection of 1101 rows from 0.21-0.22 to 0.17-0.18 ms and F16 from
// 0.30-0.31 to 0.26-0.27 ms (sparse_ffn_bench -t 2 --active 10, Xeon VM,
// 2026-11-23). Chunks are still claimed from a counter, so a chunk whose
// worker has not started is taken by the caller. Which thread computes a
// column never changes its bits.
constexpr int64_t kAxpyChunksPerThread = 1;

// What the pool's threads share during one axpy_rows; passed by pointer so
// the job lambda stays small enough for std::function's inline storage.
struct AxpyJob {
  const AxpyIsa* isa;
  const AxpyArgs* args;
  int64_t grain;
  int64_t n_grains;
  int64_t n_chunks;
  std::atomic<int64_t> next_chunk{0};
};

void compute_axpy_chunks(AxpyJob& job) {
  const int64_t n_out = job.args->n_out;
  for (;;) {
    const int64_t c = job.next_chunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.n_chunks) return;
    const int64_t j0 = job.n_grains * c / job.n_chunks * job.grain;
    const int64_t j1 = job.n_grains * (c + 1) / job.n_chunks * job.grain;
    if (j0 < j1) job.isa->compute_columns(*job.args, j0, j1 < n_out ? j1 : n_out);
  }
}

}  // namespace

int64_t axpy_column_grain(DType dtype) {
  const int64_t block = dtype_traits(dtype).block_size;
  return block > 64 ? block : 64;
}

const AxpyIsa& axpy_isa_for(const MatmulIsa& isa) {
  // avx512bf16 and amx differ from avx512 in some of matmul's kernels only.
  const bool avx512 = std::strcmp(isa.name, "avx512") == 0 || std::strcmp(isa.name, "avx512bf16") == 0 ||
                      std::strcmp(isa.name, "amx") == 0;
  if (avx512 && axpy_isa_avx512() != nullptr) return *axpy_isa_avx512();
  if (std::strcmp(isa.name, "avx2") == 0 && axpy_isa_avx2() != nullptr) return *axpy_isa_avx2();
  return axpy_isa_portable();
}

void axpy_rows_with(const AxpyIsa& isa, const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows,
                    int64_t n_rows, float* y, ThreadPool* pool) {
  TC_CHECK(w_t.data != nullptr && y != nullptr, "axpy_rows: null weights or output");
  TC_CHECK(n_tokens >= 0 && n_rows >= 0, "axpy_rows: negative token or row count");
  TC_CHECK((rows != nullptr && a != nullptr) || n_rows == 0, "axpy_rows: null row set or activations");
  TC_CHECK(is_weight_dtype(w_t.dtype), "axpy_rows: unsupported weight dtype");
  AxpyArgs args;
  args.dtype = w_t.dtype;
  args.w = static_cast<const std::byte*>(w_t.data);
  args.row_bytes = w_t.row_bytes;
  args.n_out = w_t.n_cols();
  args.rows = rows;
  args.n_rows = n_rows;
  args.a = a;
  args.n_tokens = n_tokens;
  args.y = y;
  // row_bytes() CHECKs that n_out is a whole number of blocks.
  TC_CHECK(args.row_bytes >= row_bytes(w_t.dtype, args.n_out), "axpy_rows: row_bytes smaller than a packed row");
  const int64_t n_neurons = w_t.n_rows();
  for (int64_t k = 0; k < n_rows; ++k) {
    TC_CHECK(rows[k] >= 0 && rows[k] < n_neurons, "axpy_rows: row index outside the weight matrix");
  }
  if (n_tokens == 0 || args.n_out == 0) return;

  const int nt = pool != nullptr ? pool->n_threads() : 1;
  const int64_t grain = axpy_column_grain(w_t.dtype);
  const int64_t n_grains = (args.n_out + grain - 1) / grain;
  const int64_t n_chunks = n_grains < nt * kAxpyChunksPerThread ? n_grains : nt * kAxpyChunksPerThread;
  if (nt == 1 || n_chunks == 1) {
    isa.compute_columns(args, 0, args.n_out);
    return;
  }
  AxpyJob job{&isa, &args, grain, n_grains, n_chunks};
  AxpyJob* jp = &job;
  pool->run([jp](int, int) { compute_axpy_chunks(*jp); });
}

}  // namespace detail

void matmul_rows(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows, float* y,
                 ThreadPool& pool) {
  detail::matmul_rows_with(detail::chosen_isa(), w, x, n_tokens, rows, n_rows, y, &pool);
}

void axpy_rows(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows, float* y,
               ThreadPool& pool) {
  static const detail::AxpyIsa& isa = detail::axpy_isa_for(detail::chosen_isa());
  detail::axpy_rows_with(isa, w_t, a, n_tokens, rows, n_rows, y, &pool);
}

void matmul_rows_reference(const Tensor& w, const float* x, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                           float* y) {
  detail::matmul_rows_with(detail::isa_portable(), w, x, n_tokens, rows, n_rows, y, nullptr);
}

void axpy_rows_reference(const Tensor& w_t, const float* a, int64_t n_tokens, const int32_t* rows, int64_t n_rows,
                         float* y) {
  detail::axpy_rows_with(detail::axpy_isa_portable(), w_t, a, n_tokens, rows, n_rows, y, nullptr);
}

}  // namespace tc::kernels
