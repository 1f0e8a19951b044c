// transpose_down and TransposedDown: the two ways between ffn_down and
// ffn_down_t.
#include "engine/model/transposed_down.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/cpu/quantize.h"

namespace tc::model {
namespace {

// Steps up to this many tokens compute the dense down projection as a sum of
// scaled rows (reading down_t once per step); larger ones tile and transpose.
constexpr int64_t kAxpyMaxTokens = 8;
// Output columns per transposed tile (a multiple of every block size).
constexpr int64_t kTileColumns = 256;

}  // namespace

namespace {

template <typename T>
void transpose_elements(const std::byte* src_bytes, std::byte* dst_bytes, int64_t n_ff, int64_t n_embd,
                        int64_t i_begin, int64_t i_end) {
  const auto* src = reinterpret_cast<const T*>(src_bytes);
  auto* dst = reinterpret_cast<T*>(dst_bytes);
  constexpr int64_t kTile = 64;
  for (int64_t j0 = 0; j0 < n_embd; j0 += kTile) {
    const int64_t j1 = std::min(n_embd, j0 + kTile);
    for (int64_t i = i_begin; i < i_end; ++i) {
      for (int64_t j = j0; j < j1; ++j) dst[i * n_embd + j] = src[j * n_ff + i];
    }
  }
}

}  // namespace

void transpose_down_into(const kernels::Tensor& down, std::span<std::byte> out, kernels::ThreadPool& pool) {
  const int64_t n_ff = down.n_cols();
  const int64_t n_embd = down.n_rows();
  const kernels::DType dtype = down.dtype;
  const auto* src = static_cast<const std::byte*>(down.data);
  const auto& traits = kernels::dtype_traits(dtype);
  if (!traits.is_quantized) {
    constexpr int64_t kBand = 64;  // neurons per task
    pool.parallel_for((n_ff + kBand - 1) / kBand, 1, [&](int64_t begin, int64_t end) {
      const int64_t i0 = begin * kBand;
      const int64_t i1 = std::min(n_ff, end * kBand);
      if (traits.block_bytes == 4) {
        transpose_elements<uint32_t>(src, out.data(), n_ff, n_embd, i0, i1);
      } else {
        transpose_elements<uint16_t>(src, out.data(), n_ff, n_embd, i0, i1);
      }
    });
    return;
  }
  // Tiles of whole blocks of neurons: each reads `tile` columns of every
  // ffn_down row, then writes `tile` re-quantized ffn_down_t rows.
  const int64_t tile = std::max<int64_t>(traits.block_size, 256 / traits.block_size * traits.block_size);
  const int64_t out_row = kernels::row_bytes(dtype, n_embd);
  pool.parallel_for((n_ff + tile - 1) / tile, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> cols(static_cast<size_t>(tile));
    std::vector<float> rows(static_cast<size_t>(tile * n_embd));  // f32 [tile, n_embd]
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i0 = t * tile;
      const int64_t n_i = std::min(tile, n_ff - i0);  // a multiple of the block: so are n_ff and i0
      const int64_t col_offset = kernels::row_bytes(dtype, i0);
      for (int64_t j = 0; j < n_embd; ++j) {
        kernels::dequantize_row(dtype, down.row(j) + col_offset, cols.data(), n_i);
        for (int64_t c = 0; c < n_i; ++c) rows[static_cast<size_t>(c * n_embd + j)] = cols[static_cast<size_t>(c)];
      }
      for (int64_t c = 0; c < n_i; ++c) {
        kernels::quantize_row(dtype, rows.data() + c * n_embd, out.data() + (i0 + c) * out_row, n_embd);
      }
    }
  });
}

kernels::Tensor transpose_down(const kernels::Tensor& ffn_down, kernels::Buffer& storage, kernels::ThreadPool& pool) {
  const int64_t n_ff = ffn_down.n_cols();
  const int64_t n_embd = ffn_down.n_rows();
  const size_t bytes = static_cast<size_t>(kernels::row_bytes(ffn_down.dtype, n_embd) * n_ff);
  storage = kernels::Buffer::host(bytes);
  transpose_down_into(ffn_down, {storage.as<std::byte>(), bytes}, pool);
  return kernels::Tensor::matrix(storage.data(), ffn_down.dtype, n_embd, n_ff);
}

void TransposedDown::run(const kernels::Tensor& down_t, const float* a, int64_t n_tokens, float* y) {
  const int64_t n_ff = down_t.n_rows();
  const int64_t n_out = down_t.n_cols();
  if (static_cast<int64_t>(all_rows_.size()) != n_ff) {
    all_rows_.resize(static_cast<size_t>(n_ff));
    std::iota(all_rows_.begin(), all_rows_.end(), 0);
  }
  if (n_tokens <= kAxpyMaxTokens) {
    backend_.axpy_rows(down_t, a, n_tokens, all_rows_.data(), n_ff, y);
    return;
  }
  row_.resize(static_cast<size_t>(kTileColumns));
  tile_.resize(static_cast<size_t>(kTileColumns * n_ff));
  tile_out_.resize(static_cast<size_t>(n_tokens * kTileColumns));
  for (int64_t j0 = 0; j0 < n_out; j0 += kTileColumns) {
    const int64_t nj = std::min(kTileColumns, n_out - j0);
    for (int64_t i = 0; i < n_ff; ++i) {
      const std::byte* piece = down_t.row(i) + kernels::row_bytes(down_t.dtype, j0);
      kernels::dequantize_row(down_t.dtype, piece, row_.data(), nj);
      for (int64_t j = 0; j < nj; ++j) tile_[static_cast<size_t>(j * n_ff + i)] = row_[static_cast<size_t>(j)];
    }
    backend_.matmul(kernels::Tensor::matrix(tile_.data(), kernels::DType::F32, n_ff, nj), a, n_tokens,
                    tile_out_.data());
    backend_.synchronize();
    for (int64_t t = 0; t < n_tokens; ++t) {
      std::memcpy(y + t * n_out + j0, tile_out_.data() + t * nj, static_cast<size_t>(nj) * sizeof(float));
    }
  }
}

}  // namespace tc::model
