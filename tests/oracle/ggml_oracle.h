// llama.cpp as an external oracle for the tests: loads its own prebuilt
// libggml-base.so (npm @node-llama-cpp/linux-x64, installed by
// scripts/setup.sh) with dlopen and exposes the few C functions the tests
// compare against: quantize/dequantize, f16/bf16 conversion, GGUF read/write.
// The library is optional: tests call TC_ORACLE_REQUIRE_OR_SKIP() first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/value.h"
#include "kernels/dtype.h"

namespace tc::oracle {

// Opaque ggml / gguf handles.
struct GgmlContext;
struct GgmlTensor;
struct GgufContext;

// By-value parameter structs, laid out as in ggml.h / gguf.h.
struct GgmlInitParams {
  size_t mem_size;
  void* mem_buffer;
  bool no_alloc;
};
struct GgufInitParams {
  bool no_alloc;
  GgmlContext** ctx;  // when set, ggml creates the tensors (and loads their data unless no_alloc)
};
// ggml_bf16_t is a struct wrapping the bits; passed in a register like uint16_t.
struct GgmlBf16 {
  uint16_t bits;
};

// Entry points resolved from the library. Enum parameters (ggml_type,
// gguf_type) are plain ints with the values of kernels::DType and
// gguf::ValueType. Type errors (e.g. gguf_get_val_u8 on a string) abort the
// process inside ggml: check gguf_get_kv_type first.
struct GgmlApi {
  // Quantization. ggml_quantize_chunk writes nrows rows of n_per_row values
  // (imatrix may be null) and returns the bytes written.
  size_t (*ggml_quantize_chunk)(int type, const float* src, void* dst, int64_t start,
                                int64_t nrows, int64_t n_per_row, const float* imatrix);
  void (*dequantize_row_q8_0)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q4_0)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q4_1)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q5_0)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q5_1)(const void* x, float* y, int64_t k);
  void (*dequantize_row_iq4_nl)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q2_K)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q3_K)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q4_K)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q5_K)(const void* x, float* y, int64_t k);
  void (*dequantize_row_q6_K)(const void* x, float* y, int64_t k);
  void (*dequantize_row_iq4_xs)(const void* x, float* y, int64_t k);
  void (*dequantize_row_mxfp4)(const void* x, float* y, int64_t k);
  void (*quantize_row_mxfp4_ref)(const float* x, void* y, int64_t k);
  float (*ggml_fp16_to_fp32)(uint16_t h);
  uint16_t (*ggml_fp32_to_fp16)(float f);
  float (*ggml_bf16_to_fp32)(GgmlBf16 h);
  GgmlBf16 (*ggml_fp32_to_bf16)(float f);
  int64_t (*ggml_blck_size)(int type);
  size_t (*ggml_type_size)(int type);
  size_t (*ggml_row_size)(int type, int64_t ne);

  // ggml contexts and tensors (to hand tensors to the GGUF writer).
  GgmlContext* (*ggml_init)(GgmlInitParams params);
  void (*ggml_free)(GgmlContext* ctx);
  GgmlTensor* (*ggml_new_tensor)(GgmlContext* ctx, int type, int n_dims, const int64_t* ne);
  GgmlTensor* (*ggml_set_name)(GgmlTensor* tensor, const char* name);
  GgmlTensor* (*ggml_get_tensor)(GgmlContext* ctx, const char* name);
  void* (*ggml_get_data)(const GgmlTensor* tensor);
  size_t (*ggml_nbytes)(const GgmlTensor* tensor);

  // GGUF.
  GgufContext* (*gguf_init_empty)();
  GgufContext* (*gguf_init_from_file)(const char* fname, GgufInitParams params);
  void (*gguf_free)(GgufContext* ctx);
  uint32_t (*gguf_get_version)(const GgufContext* ctx);
  size_t (*gguf_get_alignment)(const GgufContext* ctx);
  size_t (*gguf_get_data_offset)(const GgufContext* ctx);
  int64_t (*gguf_get_n_kv)(const GgufContext* ctx);
  int64_t (*gguf_find_key)(const GgufContext* ctx, const char* key);  // -1 when absent
  const char* (*gguf_get_key)(const GgufContext* ctx, int64_t key_id);
  int (*gguf_get_kv_type)(const GgufContext* ctx, int64_t key_id);
  int (*gguf_get_arr_type)(const GgufContext* ctx, int64_t key_id);
  uint8_t (*gguf_get_val_u8)(const GgufContext* ctx, int64_t key_id);
  int8_t (*gguf_get_val_i8)(const GgufContext* ctx, int64_t key_id);
  uint16_t (*gguf_get_val_u16)(const GgufContext* ctx, int64_t key_id);
  int16_t (*gguf_get_val_i16)(const GgufContext* ctx, int64_t key_id);
  uint32_t (*gguf_get_val_u32)(const GgufContext* ctx, int64_t key_id);
  int32_t (*gguf_get_val_i32)(const GgufContext* ctx, int64_t key_id);
  float (*gguf_get_val_f32)(const GgufContext* ctx, int64_t key_id);
  uint64_t (*gguf_get_val_u64)(const GgufContext* ctx, int64_t key_id);
  int64_t (*gguf_get_val_i64)(const GgufContext* ctx, int64_t key_id);
  double (*gguf_get_val_f64)(const GgufContext* ctx, int64_t key_id);
  bool (*gguf_get_val_bool)(const GgufContext* ctx, int64_t key_id);
  const char* (*gguf_get_val_str)(const GgufContext* ctx, int64_t key_id);
  size_t (*gguf_get_arr_n)(const GgufContext* ctx, int64_t key_id);
  const void* (*gguf_get_arr_data)(const GgufContext* ctx, int64_t key_id);
  const char* (*gguf_get_arr_str)(const GgufContext* ctx, int64_t key_id, size_t i);
  int64_t (*gguf_get_n_tensors)(const GgufContext* ctx);
  int64_t (*gguf_find_tensor)(const GgufContext* ctx, const char* name);  // -1 when absent
  const char* (*gguf_get_tensor_name)(const GgufContext* ctx, int64_t tensor_id);
  size_t (*gguf_get_tensor_offset)(const GgufContext* ctx, int64_t tensor_id);
  int (*gguf_get_tensor_type)(const GgufContext* ctx, int64_t tensor_id);
  size_t (*gguf_get_tensor_size)(const GgufContext* ctx, int64_t tensor_id);
  const int64_t* (*gguf_get_tensor_ne)(const GgufContext* ctx, int64_t tensor_id);  // 4 entries
  void (*gguf_set_val_u8)(GgufContext* ctx, const char* key, uint8_t val);
  void (*gguf_set_val_i8)(GgufContext* ctx, const char* key, int8_t val);
  void (*gguf_set_val_u16)(GgufContext* ctx, const char* key, uint16_t val);
  void (*gguf_set_val_i16)(GgufContext* ctx, const char* key, int16_t val);
  void (*gguf_set_val_u32)(GgufContext* ctx, const char* key, uint32_t val);
  void (*gguf_set_val_i32)(GgufContext* ctx, const char* key, int32_t val);
  void (*gguf_set_val_f32)(GgufContext* ctx, const char* key, float val);
  void (*gguf_set_val_u64)(GgufContext* ctx, const char* key, uint64_t val);
  void (*gguf_set_val_i64)(GgufContext* ctx, const char* key, int64_t val);
  void (*gguf_set_val_f64)(GgufContext* ctx, const char* key, double val);
  void (*gguf_set_val_bool)(GgufContext* ctx, const char* key, bool val);
  void (*gguf_set_val_str)(GgufContext* ctx, const char* key, const char* val);
  void (*gguf_set_arr_data)(GgufContext* ctx, const char* key, int type, const void* data, size_t n);
  void (*gguf_set_arr_str)(GgufContext* ctx, const char* key, const char** data, size_t n);
  void (*gguf_add_tensor)(GgufContext* ctx, const GgmlTensor* tensor);
  bool (*gguf_write_to_file)(const GgufContext* ctx, const char* fname, bool only_meta);
};

// Where the library is looked for: $THERMOCLINE_GGML_LIB when set, else
// <repo>/.deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so.
std::filesystem::path ggml_library_path();

// The loaded API (loaded once, thread-safe), or nullptr when the library is
// missing or lacks a symbol; unavailable_reason() then says which.
const GgmlApi* ggml();
const std::string& unavailable_reason();
// True when $THERMOCLINE_REQUIRE_ORACLE is set to a non-empty value other than 0.
bool oracle_required();

// ggml_quantize_chunk over `n_rows` rows of `n_per_row` values.
std::vector<uint8_t> ggml_quantize(kernels::DType type, const float* src, int64_t n_rows,
                                   int64_t n_per_row);
// ggml's dequantize_row_* for every block format Thermocline reads (CHECKs
// others).
void ggml_dequantize(kernels::DType type, const void* src, float* dst, int64_t n);

// The value of key `key_id` as ggml read it, converted to a gguf::Value
// (arrays of arrays are not supported by ggml's API and throw).
gguf::Value ggml_kv_value(const GgufContext* ctx, int64_t key_id);

// The content of a GGUF file as the interop tests describe it.
struct GgufTensorSpec {
  std::string name;
  kernels::DType dtype;
  std::vector<int64_t> ne;   // GGUF order, innermost first
  std::vector<uint8_t> data; // row_bytes(dtype, ne[0]) * rows
};
struct GgufSpec {
  // In file order. Only what ggml's writer can express: scalars and
  // one-level arrays.
  std::vector<std::pair<std::string, gguf::Value>> metadata;
  std::vector<GgufTensorSpec> tensors;
};

// A small llama-style model: general.* and llama.* hparams (n_embd 256,
// n_layer 1, n_head 4, n_head_kv 2, n_ff 512), a 32-token SentencePiece-style
// tokenizer.ggml.* vocab, one `test.*` key of each of the 12 scalar value
// types and a `test.arr.*` array of each element type (strings, empty and
// non-ASCII ones included), and llama tensors covering F32, F16, BF16, Q8_0,
// Q4_0, Q4_K and Q6_K with seeded random data quantized by ggml itself.
// Deterministic. Throws std::runtime_error when the library is unavailable.
GgufSpec reference_gguf_spec();

// Writes `spec` with llama.cpp's own GGUF writer (gguf_write_to_file).
// A `general.alignment` u32 key in the metadata sets the alignment. Throws
// std::runtime_error when the library is unavailable or the write fails.
void write_gguf_with_ggml(const GgufSpec& spec, const std::filesystem::path& path);

// Writes reference_gguf_spec() to `path` with ggml's writer; returns path.
// For tests of `thermocline inspect` and the model loader on a file that
// llama.cpp itself produced.
std::filesystem::path write_reference_gguf(const std::filesystem::path& path);

}  // namespace tc::oracle

// First statement of a test that needs the oracle: without the library the
// test passes with a warning naming the reason (Catch2 v2 has no SKIP),
// unless THERMOCLINE_REQUIRE_ORACLE is set (CI), where it fails instead.
#define TC_ORACLE_REQUIRE_OR_SKIP()                                                        \
  do {                                                                                     \
    if (::tc::oracle::ggml() == nullptr) {                                                 \
      if (::tc::oracle::oracle_required()) {                                               \
        FAIL("llama.cpp oracle required but unavailable: " << ::tc::oracle::unavailable_reason()); \
      }                                                                                    \
      WARN("SKIPPED (llama.cpp oracle unavailable): " << ::tc::oracle::unavailable_reason());     \
      return;                                                                              \
    }                                                                                      \
  } while (0)
