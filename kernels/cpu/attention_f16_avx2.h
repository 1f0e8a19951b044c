// Internal to ops_attention.cpp: decode attention's inner loops reading the
// f16 KV cache directly, F16C converting in registers (no round trip
// through a converted f32 scratch), for runs where each K and V value is
// used once (one token, one query head per KV head). Same operations in the
// same order as dot8 and add_rows64 of ops_attention.cpp's x86-64-v3 clone,
// so the same bits. Built with -mavx2 -mfma -mf16c (x86-64 only); call only
// where f16_kv_direct_available().
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

}  // namespace tc::kernels::detail
