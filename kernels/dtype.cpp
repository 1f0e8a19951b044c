// Traits of the supported dtypes and lookups by ggml id and by name.
#include "kernels/dtype.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "kernels/check.h"

namespace tc::kernels {
namespace {

struct Entry {
  DType type;
  DTypeTraits traits;
};

constexpr std::array kEntries = {
    Entry{DType::F32, {"f32", 1, 4, false}},
    Entry{DType::F16, {"f16", 1, 2, false}},
    Entry{DType::Q4_0, {"q4_0", kQK4_0, sizeof(BlockQ4_0), true}},
    Entry{DType::Q4_1, {"q4_1", kQK4_1, sizeof(BlockQ4_1), true}},
    Entry{DType::Q5_0, {"q5_0", kQK5_0, sizeof(BlockQ5_0), true}},
    Entry{DType::Q5_1, {"q5_1", kQK5_1, sizeof(BlockQ5_1), true}},
    Entry{DType::Q8_0, {"q8_0", kQK8_0, sizeof(BlockQ8_0), true}},
    Entry{DType::Q2_K, {"q2_K", kQK_K, sizeof(BlockQ2_K), true}},
    Entry{DType::Q3_K, {"q3_K", kQK_K, sizeof(BlockQ3_K), true}},
    Entry{DType::Q4_K, {"q4_K", kQK_K, sizeof(BlockQ4_K), true}},
    Entry{DType::Q5_K, {"q5_K", kQK_K, sizeof(BlockQ5_K), true}},
    Entry{DType::Q6_K, {"q6_K", kQK_K, sizeof(BlockQ6_K), true}},
    Entry{DType::IQ4_NL, {"iq4_nl", kQK4_NL, sizeof(BlockIQ4_NL), true}},
    Entry{DType::IQ4_XS, {"iq4_xs", kQK_K, sizeof(BlockIQ4_XS), true}},
    Entry{DType::I8, {"i8", 1, 1, false}},
    Entry{DType::I16, {"i16", 1, 2, false}},
    Entry{DType::I32, {"i32", 1, 4, false}},
    Entry{DType::I64, {"i64", 1, 8, false}},
    Entry{DType::F64, {"f64", 1, 8, false}},
    Entry{DType::BF16, {"bf16", 1, 2, false}},
    Entry{DType::MXFP4, {"mxfp4", kQK_MXFP4, sizeof(BlockMXFP4), true}},
};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

const DTypeTraits& dtype_traits(DType type) {
  for (const auto& e : kEntries) {
    if (e.type == type) return e.traits;
  }
  ::tc::check_failed("known dtype", "dtype_traits: unsupported dtype value", __FILE__, __LINE__);
}

std::optional<DType> dtype_from_id(uint32_t id) {
  for (const auto& e : kEntries) {
    if (static_cast<uint32_t>(e.type) == id) return e.type;
  }
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  const std::string wanted = lower(name);
  for (const auto& e : kEntries) {
    if (lower(e.traits.name) == wanted) return e.type;
  }
  return std::nullopt;
}

int64_t row_bytes(DType type, int64_t n_elements) {
  const auto& t = dtype_traits(type);
  TC_CHECK(n_elements >= 0 && n_elements % t.block_size == 0,
           "row length must be a multiple of the dtype's block size");
  return n_elements / t.block_size * t.block_bytes;
}

}  // namespace tc::kernels
