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
  Q5_0 = 6,   // read and written, not a matmul weight type (see is_weight_dtype)
  Q8_0 = 8,
  Q4_K = 12,
  Q6_K = 14,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  BF16 = 30,
};

// Elements per block of the k-quant super-block formats.
inline constexpr int64_t kQK_K = 256;
// Elements per block of Q4_0, Q5_0 and Q8_0.
inline constexpr int64_t kQK4_0 = 32;
inline constexpr int64_t kQK5_0 = 32;
inline constexpr int64_t kQK8_0 = 32;

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

// Q4_K: 8 sub-blocks of 32 elements, each with a 6-bit scale and 6-bit min
// packed into `scales`; x = d * sc * q - dmin * m.
struct BlockQ4_K {
  uint16_t d;              // f16 super-block scale for the scales
  uint16_t dmin;           // f16 super-block scale for the mins
  uint8_t scales[12];      // 6-bit scales and mins, packed
  uint8_t qs[kQK_K / 2];   // 4-bit quants
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q6_K: 16 sub-blocks of 16 elements, 8-bit signed scales;
// x = d * scales[sub] * (q - 32) with q 6-bit (4 low bits in ql, 2 high in qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];       // low 4 bits of the quants
  uint8_t qh[kQK_K / 4];       // high 2 bits of the quants
  int8_t scales[kQK_K / 16];   // 8-bit sub-block scales
  uint16_t d;                  // f16 super-block scale
};
static_assert(sizeof(BlockQ6_K) == 210);

struct DTypeTraits {
  std::string_view name;   // as ggml spells it: "f32", "q4_K", ...
  int64_t block_size;      // elements per block (1 for plain types)
  int64_t block_bytes;     // bytes per block
  bool is_quantized;
};

// Traits of a supported type.
const DTypeTraits& dtype_traits(DType type);
// The DType for a raw ggml type id, or nullopt when Thermocline does not
// support it (unknown or unsupported formats such as Q5_1 or IQ2_XXS).
std::optional<DType> dtype_from_id(uint32_t id);
// The DType named `name` (case-insensitive: "f16", "Q8_0", "q4_k"), or nullopt.
std::optional<DType> dtype_from_name(std::string_view name);
inline std::string_view dtype_name(DType type) { return dtype_traits(type).name; }

// The dtypes a weight matrix may have (what matmul and the sparse FFN run).
// Q5_0 is not one: files that hold it (PowerInfer's predictors) are widened
// to f16 by the loader.
inline bool is_weight_dtype(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q8_0:
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

// Bytes taken by a row of `n_elements`; n_elements must be a multiple of the
// block size (checked by callers that read files; CHECKed here).
int64_t row_bytes(DType type, int64_t n_elements);

}  // namespace tc::kernels
