// Internal to ops_attention.cpp: decode attention's inner loops reading the
// f16 (or q8_0) KV cache directly, converting in registers (no round trip
// through a converted f32 scratch), for runs where each K and V value is
// used once (one token, one query head per KV head). Same operations in the
// same order as dot8 and add_rows64 of ops_attention.cpp's x86-64-v3 clone
// on the converted values (a q8_0 value q * d is exact in f32), so the same
// bits. Built with -mavx2 -mfma -mf16c (x86-64 only); call only where
// f16_kv_direct_available().
#pragma once

#include <cstdint>

namespace tc::kernels::detail {

// True on x86-64-v3 CPUs in builds whose ops_attention.cpp runs the
// x86-64-v3 clone there (not sanitizer builds, which build it baseline).
bool f16_kv_direct_available();

// out[i] = dot(q[0, n), f32(k[i * k_stride + 0, n))) for i < 8, n a multiple of 8: dot8's arithmetic.
void dot8_f16(const float* q, const uint16_t* k, int64_t k_stride, int64_t n, float* out);

// o[0, 64) += p[i] * f32(v[i * v_stride + 0, 64)) for i < n ascending: add_rows64's arithmetic.
void add_rows64_f16(const float* p, const uint16_t* v, int64_t v_stride, int64_t n, float* o);

// The same over q8_0 rows (kernels/dtype.h BlockQ8_0; row i at k + i *
// k_stride_bytes, from a block boundary): n a multiple of 32.
void dot8_q8_0(const float* q, const void* k, int64_t k_stride_bytes, int64_t n, float* out);
// 64 values = two blocks from v + i * v_stride_bytes.
void add_rows64_q8_0(const float* p, const void* v, int64_t v_stride_bytes, int64_t n, float* o);

// dst[0, n) = the values of a q8_0 row (n a multiple of 32), q * d each.
void q8_0_row_to_f32_avx2(const void* src, int64_t n, float* dst);

}  // namespace tc::kernels::detail
