// Internal to ops_attention.cpp: the score, softmax-exp and weighted-V loops
// of CPU attention in AVX-512 registers, 16 lanes where attention_lanes.h's
// x86-64-v3 code takes 8, two query heads at a time. Every lane does the
// operations it does there, in the same order, so the bits are those of
// dot8, chunk_exp and add_rows64: on an AVX-512 CPU a decode still matches
// a prefill, any split and the AVX2 path. Built with -mavx512f -mavx512vl
// -mfma -mf16c -ffp-contract=off (x86-64 only; every FMA is written out);
// call only where attention_zmm_enabled().
//
// K blocks for the scores are converted into a pair layout: positions 2p and
// 2p + 1 of a block of 8 share 16-value slots, one per 8-value block of
// their rows, so that one zmm register carries two positions' lanes of
// dot8 and the 8 rows reduce with half the shuffles.
#pragma once

#include <cstdint>

namespace tc::kernels::detail {

// True on CPUs with AVX-512F/VL and the x86-64-v3 attention path, unless
// THERMOCLINE_ISA asks for portable or avx2 code, or a test switched it off.
bool attention_zmm_enabled();

// Test hook: false makes attention take the AVX2 loops (to compare bits).
void set_attention_zmm_for_testing(bool enabled);

// f32 [4 pairs][width / 8][2][8]: rows i < n of f16 src (row i at src + i *
// src_stride, `width` values, a multiple of 8) in the pair layout; the
// slots of rows n..7 are zero. dst holds 8 * width floats.
void f16_block_to_pairs(const uint16_t* src, int64_t src_stride, int64_t n, int64_t width, float* dst);

// The same from q8_0 rows (row i at src + i * src_stride_bytes, `width`
// values a multiple of 32 in block_q8_0 blocks): each value q * d, exact.
void q8_0_block_to_pairs(const void* src, int64_t src_stride_bytes, int64_t n, int64_t width, float* dst);

// dst[0, n) = f32 of the f16 row (n a multiple of 8), as F16C gives them.
void f16_row_to_f32(const uint16_t* src, int64_t n, float* dst);

// dst[0, n) = the q8_0 row's values (n a multiple of 32), as ops_attention's
// 8-lane converter gives them (q * d, exact).
void q8_0_row_to_f32(const void* src, int64_t n, float* dst);

// Scores of a block of 8 positions for query heads r < n_heads: scores[r *
// score_stride + i] = dot8(q + r * head_dim, K row i of head r's KV head)[i]
// * scale for i < n_valid. Head r's KV head starts kv_offsets[r] values
// into a position's row of `width` values (so 2 * kv_offsets[r] floats into
// the block's pair layout). head_dim is a multiple of 8. Along the way the cache lines [ahead, ahead
// + ahead_bytes) are asked for, a piece per pair of heads.
void score_heads_pairs(const float* q, int64_t n_heads, const int64_t* kv_offsets, const float* k_pairs,
                       int64_t width, int64_t head_dim, float scale, int64_t n_valid, float* scores,
                       int64_t score_stride, const void* ahead = nullptr, int64_t ahead_bytes = 0);

// out[r * head_dim + d] += p[r * p_stride + i] * v[i * width + kv_offsets[r] + d]
// for i < n ascending, d < head_dim / 64 * 64, r < n_heads: the weighted V
// sum of a block of n converted rows, add_rows64's arithmetic. The caller
// adds the rest of each head (add_rows8). `ahead` as for score_heads_pairs.
void add_heads_rows(const float* p, int64_t p_stride, int64_t n_heads, const int64_t* kv_offsets, const float* v,
                    int64_t width, int64_t head_dim, int64_t n, float* out, const void* ahead = nullptr,
                    int64_t ahead_bytes = 0);

// The scores of a prefill's block of 8 positions for one query head, several
// tokens at a time (each K value loaded once for all of them): for i <
// n_tokens, with t = tokens[i], scores[t * score_stride + j] = dot8(q + t *
// q_stride, K row j)[j] * scale for j < n_valid[i] (1 <= n_valid[i] <= 8).
// k_pairs is the head's KV head in the block's pair layout (the block's
// base + 2 * its kv offset), `width` the block's row width. score_heads_pairs'
// arithmetic per score.
void score_tokens_pairs(const float* q, int64_t q_stride, float* scores, int64_t score_stride, const int64_t* tokens,
                        const int64_t* n_valid, int64_t n_tokens, const float* k_pairs, int64_t width,
                        int64_t head_dim, float scale);

// The weighted V sum of a prefill's block of converted rows for one query
// head, several tokens at a time (each V value loaded once for all of
// them): for i < n_tokens, with t = tokens[i], out[t * out_stride + d] +=
// p[t * p_stride + j] * v[j * width + d] for j < n[i] ascending, d <
// head_dim (all of it, a multiple of 8). add_rows64's and add_rows8's
// arithmetic per value.
void add_tokens_rows(const float* p, int64_t p_stride, float* out, int64_t out_stride, const int64_t* tokens,
                     const int64_t* n, int64_t n_tokens, const float* v, int64_t width, int64_t head_dim);

// p[0, n) = exp(p - m) with m = max p[0, n), n >= 1: returns m and sets
// sum to the sum of the exps, chunk_exp's arithmetic (f64 sum included).
float exp_scores(float* p, int64_t n, double& sum);

}  // namespace tc::kernels::detail
