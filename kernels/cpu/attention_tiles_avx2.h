// Internal to ops_attention.cpp: a prefill run's scores and weighted V sums
// on the 8-lane (AVX2) path, two tokens of one head at a time, so that each
// converted K and V value is loaded once into a register for both. Every
// score and output value gets the operations of dot8 and add_rows64 /
// add_rows8 (attention_lanes.h, as the x86-64-v3 clone runs them: FMAs), in
// the same order, so a token's bits are those of a decode step. Built with
// -mavx2 -mfma -mf16c (x86-64 only); call only where f16_kv_direct_available().
#pragma once

#include <cstdint>

namespace tc::kernels::detail {

// For i < n_tokens, t = tokens[i]: scores[t * score_stride + j] = dot8(q +
// t * q_stride, the block's K rows)[j] * scale for j < n_valid[i] (1 <=
// n_valid[i] <= 8). The block's 8 f32 K rows of this head are k + j *
// width (rows past the block's end zero); head_dim a multiple of 8.
void score_tokens_rows8(const float* q, int64_t q_stride, float* scores, int64_t score_stride, const int64_t* tokens,
                        const int64_t* n_valid, int64_t n_tokens, const float* k, int64_t width, int64_t head_dim,
                        float scale);

// For i < n_tokens, t = tokens[i]: out[t * out_stride + d] += p[t *
// p_stride + j] * v[j * width + d] for j < n[i] ascending, d < head_dim (a
// multiple of 8).
void add_tokens_rows8(const float* p, int64_t p_stride, float* out, int64_t out_stride, const int64_t* tokens,
                      const int64_t* n, int64_t n_tokens, const float* v, int64_t width, int64_t head_dim);

}  // namespace tc::kernels::detail
