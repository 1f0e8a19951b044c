// Element types of weights and activations, with the block layouts of
// llama.cpp's quantized formats. Numeric values equal ggml's `ggml_type` ids,
// which GGUF files store, so a DType can be read from a file as is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tc::kernels {

enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  IQ4_NL = 20,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
  MXFP4 = 39,
};

// Elements per block of the k-quant super-block formats.
inline constexpr int64_t kQK_K = 256;
// Elements per block of the 32-element formats.
inline constexpr int64_t kQK4_0 = 32;
inline constexpr int64_t kQK4_1 = 32;
inline constexpr int64_t kQK5_0 = 32;
inline constexpr int64_t kQK5_1 = 32;
inline constexpr int64_t kQK8_0 = 32;
inline constexpr int64_t kQK4_NL = 32;
inline constexpr int64_t kQK_MXFP4 = 32;

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl), ascending.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// The 16 levels of MXFP4 (ggml's kvalues_mxfp4): the OCP E2M1 values
// 0, 0.5, 1, 1.5, 2, 3, 4, 6 doubled so they are integers, positive for
// codes 0-7 and negated for codes 8-15 (the sign bit; code 8 is -0, which
// no quantizer writes). The block scale carries the factor 1/2.
inline constexpr int8_t kMXFP4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// Q8_0: x[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;            // f16 scale
  int8_t qs[kQK8_0];     // quants
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q4_0: x[i] = d * (nibble - 8); qs[j] holds element j (low nibble) and
// element j + 16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;                // f16 scale
  uint8_t qs[kQK4_0 / 2];    // nibbles
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x[i] = d * nibble + m; nibbles packed as in Q4_0.
struct BlockQ4_1 {
  uint16_t d;                // f16 scale
  uint16_t m;                // f16 offset (the block's minimum)
  uint8_t qs[kQK4_1 / 2];    // nibbles
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x[i] = d * (q - 16) with q 5-bit: the low 4 bits as in Q4_0 (qs[j]
// holds element j low, element j + 16 high), the 5th bit of element i is
// bit i of qh (read as a little-endian uint32). PowerInfer ships predictors
// in this format.
struct BlockQ5_0 {
  uint16_t d;                // f16 scale
  uint8_t qh[4];             // 5th bits
  uint8_t qs[kQK5_0 / 2];    // low nibbles
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x[i] = d * q + m with q 5-bit packed as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;                // f16 scale
  uint16_t m;                // f16 offset (the block's minimum)
  uint8_t qh[4];             // 5th bits
  uint8_t qs[kQK5_1 / 2];    // low nibbles
};
static_assert(sizeof(BlockQ5_1) == 24);

// IQ4_NL: x[i] = d * kIQ4NLValues[nibble]; nibbles packed as in Q4_0.
struct BlockIQ4_NL {
  uint16_t d;                 // f16 scale
  uint8_t qs[kQK4_NL / 2];    // indices into kIQ4NLValues
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// MXFP4 (OCP microscaling FP4, as gpt-oss ships its experts): x[i] =
// 2^(e - 128) * kMXFP4Values[nibble], i.e. the E8M0 scale 2^(e - 127) times
// the E2M1 value; nibbles packed as in Q4_0. e = 0 and 1 give the f32
// subnormals 2^-128 and 2^-127 (ggml's GGML_E8M0_TO_FP32_HALF); e = 255 is
// 2^127, not NaN. No f16 field: 17 bytes, so blocks sit at any alignment.
struct BlockMXFP4 {
  uint8_t e;                    // E8M0 exponent, bias 127
  uint8_t qs[kQK_MXFP4 / 2];    // indices into kMXFP4Values
};
static_assert(sizeof(BlockMXFP4) == 17);

// Q2_K: 16 sub-blocks of 16 elements; scales[s] holds sub-block s's 4-bit
// scale (low nibble) and 4-bit min (high nibble); x = d * sc * q - dmin * m
// with q 2-bit. Element 128h + 32k + l (l < 32) is bits 2k..2k+1 of
// qs[32h + l].
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // 4-bit scales and mins
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  uint16_t d;                  // f16 super-block scale for the scales
  uint16_t dmin;               // f16 super-block scale for the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16 elements with signed 6-bit scales (stored + 32,
// low nibbles in scales[0..7], top two bits in scales[8..11]);
// x = d * (sc - 32) * (q - 4) with q 3-bit: the low 2 bits as Q2_K packs
// them, the 3rd bit of element e is bit e / 32 of hmask[e % 32].
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // 3rd bits
  uint8_t qs[kQK_K / 4];     // low 2 bits
  uint8_t scales[12];        // 6-bit scales, packed
  uint16_t d;                // f16 super-block scale
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32 elements, each with a 6-bit scale and 6-bit min
// packed into `scales`; x = d * sc * q - dmin * m.
struct BlockQ4_K {
  uint16_t d;              // f16 super-block scale for the scales
  uint16_t dmin;           // f16 super-block scale for the mins
  uint8_t scales[12];      // 6-bit scales and mins, packed
  uint8_t qs[kQK_K / 2];   // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: as Q4_K with 5-bit quants: the low 4 bits packed as Q4_K packs its
// nibbles, the 5th bit of element 64c + 32h + l (h < 2, l < 32) is bit
// 2c + h of qh[l].
struct BlockQ5_K {
  uint16_t d;              // f16 super-block scale for the scales
  uint16_t dmin;           // f16 super-block scale for the mins
  uint8_t scales[12];      // 6-bit scales and mins, packed as Q4_K's
  uint8_t qh[kQK_K / 8];   // 5th bits
  uint8_t qs[kQK_K / 2];   // low 4 bits
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 elements, 8-bit signed scales;
// x = d * scales[sub] * (q - 32) with q 6-bit (4 low bits in ql, 2 high in qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];       // low 4 bits of the quants
  uint8_t qh[kQK_K / 4];       // high 2 bits of the quants
  int8_t scales[kQK_K / 16];   // 8-bit sub-block scales
  uint16_t d;                  // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

// IQ4_XS: 8 sub-blocks of 32 elements with signed 6-bit scales (stored + 32:
// low nibbles in scales_l, sub-block j's nibble j % 2 of byte j / 2; top two
// bits j in bits 2j..2j+1 of scales_h); x = d * (sc - 32) *
// kIQ4NLValues[nibble], each sub-block's nibbles packed as in IQ4_NL.
struct BlockIQ4_XS {
  uint16_t d;                  // f16 super-block scale
  uint16_t scales_h;           // top 2 bits of the scales
  uint8_t scales_l[kQK_K / 64];  // low 4 bits of the scales
  uint8_t qs[kQK_K / 2];       // indices into kIQ4NLValues
};
static_assert(sizeof(BlockIQ4_XS) == 136);

struct DTypeTraits {
  std::string_view name;   // as ggml spells it: "f32", "q4_K", ...
  int64_t block_size;      // elements per block (1 for plain types)
  int64_t block_bytes;     // bytes per block
  bool is_quantized;
};

// Traits of a supported type.
const DTypeTraits& dtype_traits(DType type);
// The DType for a raw ggml type id, or nullopt when Thermocline does not
// support it (unknown or unsupported formats such as IQ2_XXS or TQ1_0).
std::optional<DType> dtype_from_id(uint32_t id);
// The DType named `name` (case-insensitive: "f16", "Q8_0", "q4_k"), or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);
inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

// The dtypes a weight matrix may have (what matmul and the sparse FFN run
// on the CPU): every type dtype_traits knows except the integer and f64 ones.
inline bool is_weight_dtype(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::IQ4_NL:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
    case DType::MXFP4:
      return true;
    default:
      return false;
  }
}

// Bytes taken by a row of `n_elements`; n_elements must be a multiple of the
// block size (checked by callers that read files; CHECKed here).
int64_t row_bytes(DType type, int64_t n_elements);

}  // namespace tc::kernels
