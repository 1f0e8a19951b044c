// Portable matmul kernels: plain C++ loops compiled for baseline x86-64 (or
// any target), the fallback on CPUs without AVX2 and the readable reference
// (matmul_reference) the SIMD variants are tested against. Quantized weights
// meet activations quantized to int8 (the same bytes every variant writes)
// in exact integer dot products.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/k4_scales.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"

namespace tc::kernels::detail {
namespace {

// Chunk of the reduction for float weights: a row chunk converted to f32
// stays in L1 while every token uses it.
constexpr int64_t kChunk = 256;

// Blocks whose largest |x| is below this quantize to zeros: 1 / d would
// overflow, and their contribution is far below f32 resolution anyway.
constexpr float kTinyAmax = 1e-30f;
// The largest finite f16: F16-weight activations are clamped to +-this
// before rounding, so a huge x cannot become inf (matmul_x86_common.h too).
constexpr float kF16Max = 65504.0f;

struct XRow {
  const int8_t* qs;
  const float* d;
  const int32_t* sum32;
  const int16_t* sum16;  // Q8_256 only
};

XRow x_row(const MatmulArgs& a, int64_t t) {
  const std::byte* base = a.xq + t * a.xl.stride;
  return {reinterpret_cast<const int8_t*>(base), reinterpret_cast<const float*>(base + a.xl.d_offset),
          reinterpret_cast<const int32_t*>(base + a.xl.sum32_offset),
          reinterpret_cast<const int16_t*>(base + a.xl.sum16_offset)};
}

// Where element e of block b sits in a Q8_32_NIB row of nb blocks.
int64_t nib_position(int64_t b, int64_t e, int64_t nb) {
  if (b % 2 == 1 || b + 1 < nb) {  // a full pair
    const int64_t pair = b / 2, j = b % 2;
    return 64 * pair + (e < 16 ? 16 * j + e : 32 + 16 * j + (e - 16));
  }
  return 32 * b + e;
}

void quantize_x(const XLayout& xl, const float* x, int64_t t_begin, int64_t t_end, std::byte* xq) {
  const int64_t n = xl.n_in;
  for (int64_t t = t_begin; t < t_end; ++t) {
    const float* xr = x + t * n;
    std::byte* row = xq + t * xl.stride;
    if (xl.format == XFormat::F32) {
      std::memcpy(row, xr, static_cast<size_t>(n) * sizeof(float));
      continue;
    }
    if (xl.format == XFormat::BF16) {
      prepare_bf16_x(xr, n, reinterpret_cast<uint16_t*>(row), reinterpret_cast<float*>(row + xl.f32_offset));
      continue;
    }
    if (xl.format == XFormat::F16) {
      auto* h = reinterpret_cast<uint16_t*>(row);
      auto* xf = reinterpret_cast<float*>(row + xl.f32_offset);
      for (int64_t i = 0; i < n; ++i) {
        h[i] = f32_to_f16(std::fmax(std::fmin(xr[i], kF16Max), -kF16Max));
        xf[i] = f16_to_f32(h[i]);
      }
      continue;
    }
    auto* qs = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + xl.d_offset);
    auto* sum32 = reinterpret_cast<int32_t*>(row + xl.sum32_offset);
    auto* sum16 = reinterpret_cast<int16_t*>(row + xl.sum16_offset);
    const int64_t nb = n / xl.block;
    for (int64_t b = 0; b < nb; ++b) {
      const float* xb = xr + b * xl.block;
      float amax = 0.0f;
      for (int64_t i = 0; i < xl.block; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
      const float db = amax < kTinyAmax ? 0.0f : amax / 127.0f;
      const float id = db == 0.0f ? 0.0f : 1.0f / db;
      d[b] = db;
      for (int64_t i = 0; i < xl.block; ++i) {
        const auto q = static_cast<int8_t>(std::nearbyint(xb[i] * id));
        const int64_t pos = xl.format == XFormat::Q8_32_NIB ? nib_position(b, i, nb) : b * xl.block + i;
        qs[pos] = q;
      }
    }
    for (int64_t b = nb; b % 8 != 0; ++b) d[b] = 0.0f;
    for (int64_t g = 0; g < n / 32; ++g) {
      int32_t s = 0;
      for (int64_t i = 0; i < 32; ++i) {
        s += qs[xl.format == XFormat::Q8_32_NIB ? nib_position(g, i, n / 32) : g * 32 + i];
      }
      sum32[g] = s;
    }
    for (int64_t g = n / 32; g % 8 != 0; ++g) sum32[g] = 0;
    if (xl.format == XFormat::Q8_32_NIB) {
      fill_q4_groups(d, sum32, nb, reinterpret_cast<float*>(row + xl.gd_offset),
                     reinterpret_cast<int32_t*>(row + xl.gs8_offset));
    }
    if (xl.format == XFormat::Q8_256) {
      for (int64_t g = 0; g < n / 16; ++g) {
        int32_t s = 0;
        for (int64_t i = 0; i < 16; ++i) s += qs[g * 16 + i];
        sum16[g] = static_cast<int16_t>(s);
      }
    }
  }
}

// ---- float weights ----

// Eight interleaved partial sums (vectorizable without reassociation),
// added pairwise at the end.
float dot_f32(const float* w, const float* x, int64_t n) {
  float acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += w[k + j] * x[k + j];
  }
  for (int j = 0; k + j < n; ++j) acc[j] += w[k + j] * x[k + j];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

void compute_float(const MatmulArgs& a, int64_t r0, int64_t r1) {
  float wf[kChunk];
  float xb[kChunk];  // BF16: one chunk of x's bf16 values, widened
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* row = weight_row(a, r);
    for (int64_t k0 = 0; k0 < a.n_in; k0 += kChunk) {
      const int64_t n = a.n_in - k0 < kChunk ? a.n_in - k0 : kChunk;
      const float* wp = wf;
      if (a.dtype == DType::F32 && reinterpret_cast<uintptr_t>(row) % alignof(float) == 0) {
        wp = reinterpret_cast<const float*>(row) + k0;
      } else if (a.dtype == DType::F32) {  // a row at an odd byte offset: copied, not read as floats in place
        std::memcpy(wf, row + k0 * static_cast<int64_t>(sizeof(float)), static_cast<size_t>(n) * sizeof(float));
      } else {
        const int64_t elem = 2;  // F16 and BF16
        dequantize_row(a.dtype, row + k0 * elem, wf, n);
      }
      for (int64_t t = 0; t < a.n_tokens; ++t) {
        const std::byte* xrow = a.xq + t * a.xl.stride;
        const float* xt = reinterpret_cast<const float*>(xrow + a.xl.f32_offset) + k0;
        if (a.xl.format == XFormat::BF16) {
          dequantize_row(DType::BF16, reinterpret_cast<const uint16_t*>(xrow) + k0, xb, n);
          xt = xb;
        }
        const float s = dot_f32(wp, xt, n);
        float& out = a.y[t * a.n_out + r];
        out = k0 == 0 ? s : out + s;
      }
    }
  }
}

// ---- quantized weights: one block's float contribution from exact int sums ----

float f16(uint16_t h) { return f16_to_f32(h); }

float dot_q8_0(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ8_0*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int i = 0; i < 32; ++i) isum += blk[b].qs[i] * x.qs[b * 32 + i];
    s += static_cast<float>(isum) * (f16(blk[b].d) * x.d[b]);
  }
  return s;
}

float dot_q4_0(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ4_0*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int i = 0; i < 16; ++i) {
      isum += (blk[b].qs[i] & 0x0f) * x.qs[nib_position(b, i, n_blocks)];
      isum += (blk[b].qs[i] >> 4) * x.qs[nib_position(b, 16 + i, n_blocks)];
    }
    isum -= 8 * x.sum32[b];
    s += static_cast<float>(isum) * (f16(blk[b].d) * x.d[b]);
  }
  return s;
}

float dot_q4_K(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ4_K*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ4_K& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;  // sum_j sc_j * sum(q * x) over sub-block j
    int32_t msum = 0;  // sum_j m_j * sum(x) over sub-block j
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_K_scale_min(q.scales, j, sc, m);
      const uint8_t* qs = q.qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      int32_t sub = 0;
      for (int l = 0; l < 32; ++l) sub += ((qs[l] >> shift) & 0x0f) * xq[32 * j + l];
      isum += sc * sub;
      msum += m * x.sum32[b * 8 + j];
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum) - (f16(q.dmin) * x.d[b]) * static_cast<float>(msum);
  }
  return s;
}

float dot_q6_K(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ6_K*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ6_K& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = q.ql + 64 * half;
      const uint8_t* qh = q.qh + 32 * half;
      const int8_t* sc = q.scales + 8 * half;
      const int8_t* xh = xq + 128 * half;
      int32_t sub[8] = {};  // per 16-element sub-block
      for (int l = 0; l < 32; ++l) {
        const int q0 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        sub[l / 16 + 0] += q0 * xh[l];
        sub[l / 16 + 2] += q1 * xh[l + 32];
        sub[l / 16 + 4] += q2 * xh[l + 64];
        sub[l / 16 + 6] += q3 * xh[l + 96];
      }
      for (int i = 0; i < 8; ++i) isum += sc[i] * sub[i];
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum);
  }
  return s;
}

// ---- the 32-element formats with an offset or a table ----
//
// x in Q8_32_NIB order, as for Q4_0 (nib_position).

// Element j (< 32) of a 32-element block whose nibbles are packed as Q4_0's.
int nibble(const uint8_t* qs, int j) { return j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4; }
// Its 5th bit from a Q5_0 / Q5_1 qh.
int fifth_bit(const uint8_t* qh, int j) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof bits);
  return static_cast<int>((bits >> j) & 1u) << 4;
}

// Q4_1 / Q5_1: x = d * q + m, so a block adds d dx sum(q xq) + m dx sum(xq).
template <class Block, bool kFive>
float dot_offset(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const Block*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) {
      int q = nibble(blk[b].qs, j);
      if constexpr (kFive) q |= fifth_bit(blk[b].qh, j);
      isum += q * x.qs[nib_position(b, j, n_blocks)];
    }
    s += static_cast<float>(isum) * (f16(blk[b].d) * x.d[b]) +
         static_cast<float>(x.sum32[b]) * (f16(blk[b].m) * x.d[b]);
  }
  return s;
}

float dot_q5_0(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ5_0*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) isum += (nibble(blk[b].qs, j) | fifth_bit(blk[b].qh, j)) * x.qs[nib_position(b, j, n_blocks)];
    isum -= 16 * x.sum32[b];
    s += static_cast<float>(isum) * (f16(blk[b].d) * x.d[b]);
  }
  return s;
}

float dot_iq4_nl(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockIQ4_NL*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) isum += kIQ4NLValues[nibble(blk[b].qs, j)] * x.qs[nib_position(b, j, n_blocks)];
    s += static_cast<float>(isum) * (f16(blk[b].d) * x.d[b]);
  }
  return s;
}

// MXFP4: as IQ4_NL with its own levels and a power-of-two block scale.
float dot_mxfp4(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockMXFP4*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < 32; ++j) isum += kMXFP4Values[nibble(blk[b].qs, j)] * x.qs[nib_position(b, j, n_blocks)];
    s += static_cast<float>(isum) * (e8m0_to_f32_half(blk[b].e) * x.d[b]);
  }
  return s;
}

// ---- the other k-quants and IQ4_XS (256-element super-blocks) ----

// The 2 bits of element e of a Q2_K / Q3_K super-block.
int low_2bit(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

float dot_q2_K(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ2_K*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ2_K& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;  // sum_s sc_s * sum(q * x) over sub-block s
    int32_t msum = 0;  // sum_s m_s * sum(x) over sub-block s
    for (int sub = 0; sub < 16; ++sub) {
      int32_t part = 0;
      for (int i = 0; i < 16; ++i) part += low_2bit(q.qs, 16 * sub + i) * xq[16 * sub + i];
      isum += (q.scales[sub] & 0x0f) * part;
      msum += (q.scales[sub] >> 4) * x.sum16[b * 16 + sub];
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum) - (f16(q.dmin) * x.d[b]) * static_cast<float>(msum);
  }
  return s;
}

float dot_q3_K(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ3_K*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ3_K& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;
    for (int sub = 0; sub < 16; ++sub) {
      const int low = sub < 8 ? q.scales[sub] & 0x0f : q.scales[sub - 8] >> 4;
      const int sc = (low | (((q.scales[8 + sub % 4] >> (2 * (sub / 4))) & 3) << 4)) - 32;
      int32_t part = 0;
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * sub + i;
        const int v = low_2bit(q.qs, e) + 4 * ((q.hmask[e % 32] >> (e / 32)) & 1) - 4;
        part += v * xq[e];
      }
      isum += sc * part;
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum);
  }
  return s;
}

float dot_q5_K(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockQ5_K*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockQ5_K& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;
    int32_t msum = 0;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_K_scale_min(q.scales, j, sc, m);
      const uint8_t* qs = q.qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      int32_t sub = 0;
      for (int l = 0; l < 32; ++l) {
        const int v = ((qs[l] >> shift) & 0x0f) | (((q.qh[l] >> j) & 1) << 4);
        sub += v * xq[32 * j + l];
      }
      isum += sc * sub;
      msum += m * x.sum32[b * 8 + j];
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum) - (f16(q.dmin) * x.d[b]) * static_cast<float>(msum);
  }
  return s;
}

float dot_iq4_xs(const std::byte* row, const XRow& x, int64_t n_blocks) {
  const auto* blk = reinterpret_cast<const BlockIQ4_XS*>(row);
  float s = 0.0f;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const BlockIQ4_XS& q = blk[b];
    const int8_t* xq = x.qs + b * kQK_K;
    int32_t isum = 0;
    for (int j = 0; j < 8; ++j) {
      const int ls = ((q.scales_l[j / 2] >> (4 * (j % 2))) & 0x0f) | (((q.scales_h >> (2 * j)) & 3) << 4);
      int32_t sub = 0;
      for (int l = 0; l < 32; ++l) sub += kIQ4NLValues[nibble(q.qs + 16 * j, l)] * xq[32 * j + l];
      isum += (ls - 32) * sub;
    }
    s += (f16(q.d) * x.d[b]) * static_cast<float>(isum);
  }
  return s;
}

void compute_quant(const MatmulArgs& a, int64_t r0, int64_t r1) {
  float (*dot)(const std::byte*, const XRow&, int64_t) = nullptr;
  switch (a.dtype) {
    case DType::Q8_0:
      dot = dot_q8_0;
      break;
    case DType::Q4_0:
      dot = dot_q4_0;
      break;
    case DType::Q4_1:
      dot = dot_offset<BlockQ4_1, false>;
      break;
    case DType::Q5_0:
      dot = dot_q5_0;
      break;
    case DType::Q5_1:
      dot = dot_offset<BlockQ5_1, true>;
      break;
    case DType::IQ4_NL:
      dot = dot_iq4_nl;
      break;
    case DType::MXFP4:
      dot = dot_mxfp4;
      break;
    case DType::Q2_K:
      dot = dot_q2_K;
      break;
    case DType::Q3_K:
      dot = dot_q3_K;
      break;
    case DType::Q4_K:
      dot = dot_q4_K;
      break;
    case DType::Q5_K:
      dot = dot_q5_K;
      break;
    case DType::Q6_K:
      dot = dot_q6_K;
      break;
    case DType::IQ4_XS:
      dot = dot_iq4_xs;
      break;
    default:
      return;
  }
  const int64_t n_blocks = a.n_in / a.xl.block;
  for (int64_t r = r0; r < r1; ++r) {
    const std::byte* row = weight_row(a, r);
    for (int64_t t = 0; t < a.n_tokens; ++t) a.y[t * a.n_out + r] = dot(row, x_row(a, t), n_blocks);
  }
}

void compute_rows(const MatmulArgs& a, int64_t r0, int64_t r1) {
  if (a.xl.format == XFormat::F32 || a.xl.format == XFormat::F16 || a.xl.format == XFormat::BF16) {
    compute_float(a, r0, r1);
  } else {
    compute_quant(a, r0, r1);
  }
}

constexpr MatmulIsa kPortable = {"portable", quantize_x, compute_rows};

}  // namespace

const MatmulIsa& isa_portable() { return kPortable; }

}  // namespace tc::kernels::detail
