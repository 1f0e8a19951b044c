// Loading of llama.cpp's libggml-base.so for the oracle tests, and the
// reference GGUF file written with llama.cpp's own writer.
#include "tests/oracle/ggml_oracle.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <variant>

#include "kernels/check.h"
#include "tests/oracle/shared_library.h"
#include "tests/test_util.h"

namespace tc::oracle {
namespace {

using kernels::DType;
using gguf::Value;
using gguf::ValueType;

struct Loaded {
  GgmlApi api{};
  bool ok = false;
  std::string reason;
};


Loaded load() {
  Loaded out;
  const auto path = ggml_library_path();
  // Never closed: the functions stay valid for the life of the process.
  void* handle = open_shared_library(path, "THERMOCLINE_GGML_LIB", out.reason);
  if (handle == nullptr) return out;
  std::string missing;
  GgmlApi& a = out.api;
#define TC_RESOLVE(name) resolve_symbol(handle, #name, a.name, missing)
  TC_RESOLVE(ggml_quantize_chunk);
  TC_RESOLVE(dequantize_row_q8_0);
  TC_RESOLVE(dequantize_row_q4_0);
  TC_RESOLVE(dequantize_row_q4_1);
  TC_RESOLVE(dequantize_row_q5_0);
  TC_RESOLVE(dequantize_row_q5_1);
  TC_RESOLVE(dequantize_row_iq4_nl);
  TC_RESOLVE(dequantize_row_q2_K);
  TC_RESOLVE(dequantize_row_q3_K);
  TC_RESOLVE(dequantize_row_q4_K);
  TC_RESOLVE(dequantize_row_q5_K);
  TC_RESOLVE(dequantize_row_q6_K);
  TC_RESOLVE(dequantize_row_iq4_xs);
  TC_RESOLVE(dequantize_row_mxfp4);
  TC_RESOLVE(quantize_row_mxfp4_ref);
  TC_RESOLVE(ggml_fp16_to_fp32);
  TC_RESOLVE(ggml_fp32_to_fp16);
  TC_RESOLVE(ggml_bf16_to_fp32);
  TC_RESOLVE(ggml_fp32_to_bf16);
  TC_RESOLVE(ggml_blck_size);
  TC_RESOLVE(ggml_type_size);
  TC_RESOLVE(ggml_row_size);
  TC_RESOLVE(ggml_init);
  TC_RESOLVE(ggml_free);
  TC_RESOLVE(ggml_new_tensor);
  TC_RESOLVE(ggml_set_name);
  TC_RESOLVE(ggml_get_tensor);
  TC_RESOLVE(ggml_get_data);
  TC_RESOLVE(ggml_nbytes);
  TC_RESOLVE(gguf_init_empty);
  TC_RESOLVE(gguf_init_from_file);
  TC_RESOLVE(gguf_free);
  TC_RESOLVE(gguf_get_version);
  TC_RESOLVE(gguf_get_alignment);
  TC_RESOLVE(gguf_get_data_offset);
  TC_RESOLVE(gguf_get_n_kv);
  TC_RESOLVE(gguf_find_key);
  TC_RESOLVE(gguf_get_key);
  TC_RESOLVE(gguf_get_kv_type);
  TC_RESOLVE(gguf_get_arr_type);
  TC_RESOLVE(gguf_get_val_u8);
  TC_RESOLVE(gguf_get_val_i8);
  TC_RESOLVE(gguf_get_val_u16);
  TC_RESOLVE(gguf_get_val_i16);
  TC_RESOLVE(gguf_get_val_u32);
  TC_RESOLVE(gguf_get_val_i32);
  TC_RESOLVE(gguf_get_val_f32);
  TC_RESOLVE(gguf_get_val_u64);
  TC_RESOLVE(gguf_get_val_i64);
  TC_RESOLVE(gguf_get_val_f64);
  TC_RESOLVE(gguf_get_val_bool);
  TC_RESOLVE(gguf_get_val_str);
  TC_RESOLVE(gguf_get_arr_n);
  TC_RESOLVE(gguf_get_arr_data);
  TC_RESOLVE(gguf_get_arr_str);
  TC_RESOLVE(gguf_get_n_tensors);
  TC_RESOLVE(gguf_find_tensor);
  TC_RESOLVE(gguf_get_tensor_name);
  TC_RESOLVE(gguf_get_tensor_offset);
  TC_RESOLVE(gguf_get_tensor_type);
  TC_RESOLVE(gguf_get_tensor_size);
  TC_RESOLVE(gguf_get_tensor_ne);
  TC_RESOLVE(gguf_set_val_u8);
  TC_RESOLVE(gguf_set_val_i8);
  TC_RESOLVE(gguf_set_val_u16);
  TC_RESOLVE(gguf_set_val_i16);
  TC_RESOLVE(gguf_set_val_u32);
  TC_RESOLVE(gguf_set_val_i32);
  TC_RESOLVE(gguf_set_val_f32);
  TC_RESOLVE(gguf_set_val_u64);
  TC_RESOLVE(gguf_set_val_i64);
  TC_RESOLVE(gguf_set_val_f64);
  TC_RESOLVE(gguf_set_val_bool);
  TC_RESOLVE(gguf_set_val_str);
  TC_RESOLVE(gguf_set_arr_data);
  TC_RESOLVE(gguf_set_arr_str);
  TC_RESOLVE(gguf_add_tensor);
  TC_RESOLVE(gguf_write_to_file);
#undef TC_RESOLVE
  if (!missing.empty()) {
    out.reason = path.string() + " lacks the symbols: " + missing;
    return out;
  }
  out.ok = true;
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

const GgmlApi& require_api() {
  const GgmlApi* api = ggml();
  if (api == nullptr) throw std::runtime_error("llama.cpp oracle unavailable: " + unavailable_reason());
  return *api;
}

int ggml_type_id(DType type) { return static_cast<int>(type); }

// ---- reference file content ----

constexpr int64_t kEmbd = 256;
constexpr int64_t kHeadKv = 2;
constexpr int64_t kHeadDim = 64;
constexpr int64_t kFf = 512;

// A SentencePiece-style vocabulary: control tokens, a byte token, word
// pieces with the U+2581 space marker, and multi-byte UTF-8 pieces.
const std::vector<std::string>& vocab_tokens() {
  static const std::vector<std::string> tokens = {
      "<unk>",  "<s>",      "</s>",     "<0x0A>",    "\xE2\x96\x81",  "\xE2\x96\x81the",
      "\xE2\x96\x81" "a", "h", "e", "l", "o", "\xE2\x96\x81hello", "\xE2\x96\x81world", ",", ".",
      "!",      "\xC3\xA9", "\xE6\x97\xA5\xE6\x9C\xAC", "\xE2\x96\x81is", "\xE2\x96\x81of", "in",
      "er",     "an",       "\xE2\x96\x81t", "\xE2\x96\x81s", "re", "on", "at", "en", "\xE2\x96\x81" "b",
      "\xE2\x96\x81" "c", "\xE2\x96\x81" "d"};
  return tokens;
}

GgufTensorSpec make_tensor(const std::string& name, DType dtype, std::vector<int64_t> ne,
                           uint64_t seed, float scale, float offset) {
  int64_t n_rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) n_rows *= ne[i];
  auto values = test::random_floats(static_cast<size_t>(ne[0] * n_rows), seed, scale);
  for (auto& v : values) v += offset;
  GgufTensorSpec t{name, dtype, std::move(ne), {}};
  t.data = ggml_quantize(dtype, values.data(), n_rows, t.ne[0]);
  return t;
}

// Appends the raw little-endian bytes of one array element to `out`.
void append_element(const Value& item, std::vector<uint8_t>& out) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          out.push_back(v ? 1 : 0);  // GGUF stores bools as one byte
        } else if constexpr (std::is_arithmetic_v<T>) {
          const auto* p = reinterpret_cast<const uint8_t*>(&v);
          out.insert(out.end(), p, p + sizeof(T));
        } else {
          throw std::invalid_argument("write_gguf_with_ggml: strings and nested arrays are not raw elements");
        }
      },
      item.storage());
}

void set_ggml_value(const GgmlApi& api, GgufContext* ctx, const std::string& key, const Value& value) {
  const char* k = key.c_str();
  const auto& s = value.storage();
  switch (value.type()) {
    case ValueType::UINT8: return api.gguf_set_val_u8(ctx, k, std::get<uint8_t>(s));
    case ValueType::INT8: return api.gguf_set_val_i8(ctx, k, std::get<int8_t>(s));
    case ValueType::UINT16: return api.gguf_set_val_u16(ctx, k, std::get<uint16_t>(s));
    case ValueType::INT16: return api.gguf_set_val_i16(ctx, k, std::get<int16_t>(s));
    case ValueType::UINT32: return api.gguf_set_val_u32(ctx, k, std::get<uint32_t>(s));
    case ValueType::INT32: return api.gguf_set_val_i32(ctx, k, std::get<int32_t>(s));
    case ValueType::FLOAT32: return api.gguf_set_val_f32(ctx, k, std::get<float>(s));
    case ValueType::BOOL: return api.gguf_set_val_bool(ctx, k, std::get<bool>(s));
    case ValueType::STRING: return api.gguf_set_val_str(ctx, k, std::get<std::string>(s).c_str());
    case ValueType::UINT64: return api.gguf_set_val_u64(ctx, k, std::get<uint64_t>(s));
    case ValueType::INT64: return api.gguf_set_val_i64(ctx, k, std::get<int64_t>(s));
    case ValueType::FLOAT64: return api.gguf_set_val_f64(ctx, k, std::get<double>(s));
    case ValueType::ARRAY: break;
  }
  const auto& items = *value.as_array();
  if (value.array_type() == ValueType::STRING) {
    std::vector<const char*> ptrs;
    for (const auto& item : items) ptrs.push_back(item.as_string()->c_str());
    api.gguf_set_arr_str(ctx, k, ptrs.data(), ptrs.size());
    return;
  }
  if (value.array_type() == ValueType::ARRAY) {
    throw std::invalid_argument("write_gguf_with_ggml: ggml cannot write nested arrays (" + key + ")");
  }
  std::vector<uint8_t> bytes;
  for (const auto& item : items) append_element(item, bytes);
  const uint8_t dummy = 0;  // a valid pointer even for an empty array
  api.gguf_set_arr_data(ctx, k, static_cast<int>(value.array_type()),
                        bytes.empty() ? &dummy : bytes.data(), items.size());
}

struct GgufDeleter {
  void operator()(GgufContext* ctx) const { ggml()->gguf_free(ctx); }
};
struct GgmlDeleter {
  void operator()(GgmlContext* ctx) const { ggml()->ggml_free(ctx); }
};

}  // namespace

std::filesystem::path ggml_library_path() {
  if (const char* env = std::getenv("THERMOCLINE_GGML_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  return test::source_dir() / ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so";
}

const GgmlApi* ggml() { return loaded().ok ? &loaded().api : nullptr; }
const std::string& unavailable_reason() { return loaded().reason; }

bool oracle_required() {
  const char* env = std::getenv("THERMOCLINE_REQUIRE_ORACLE");
  return env != nullptr && *env != '\0' && std::string(env) != "0";
}

std::vector<uint8_t> ggml_quantize(DType type, const float* src, int64_t n_rows, int64_t n_per_row) {
  const GgmlApi& api = require_api();
  const size_t row = api.ggml_row_size(ggml_type_id(type), n_per_row);
  std::vector<uint8_t> out(row * static_cast<size_t>(n_rows));
  const size_t written =
      api.ggml_quantize_chunk(ggml_type_id(type), src, out.data(), 0, n_rows, n_per_row, nullptr);
  if (written != out.size()) throw std::runtime_error("ggml_quantize_chunk wrote an unexpected size");
  return out;
}

void ggml_dequantize(DType type, const void* src, float* dst, int64_t n) {
  const GgmlApi& api = require_api();
  switch (type) {
    case DType::Q8_0: return api.dequantize_row_q8_0(src, dst, n);
    case DType::Q4_0: return api.dequantize_row_q4_0(src, dst, n);
    case DType::Q4_1: return api.dequantize_row_q4_1(src, dst, n);
    case DType::Q5_0: return api.dequantize_row_q5_0(src, dst, n);
    case DType::Q5_1: return api.dequantize_row_q5_1(src, dst, n);
    case DType::IQ4_NL: return api.dequantize_row_iq4_nl(src, dst, n);
    case DType::Q2_K: return api.dequantize_row_q2_K(src, dst, n);
    case DType::Q3_K: return api.dequantize_row_q3_K(src, dst, n);
    case DType::Q4_K: return api.dequantize_row_q4_K(src, dst, n);
    case DType::Q5_K: return api.dequantize_row_q5_K(src, dst, n);
    case DType::Q6_K: return api.dequantize_row_q6_K(src, dst, n);
    case DType::IQ4_XS: return api.dequantize_row_iq4_xs(src, dst, n);
    case DType::MXFP4: return api.dequantize_row_mxfp4(src, dst, n);
    default: break;
  }
  TC_CHECK(false, "ggml_dequantize: not a block format");
}

namespace {

template <typename T>
Value::Array raw_array_items(const void* data, size_t n) {
  Value::Array items;
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, static_cast<const uint8_t*>(data) + i * sizeof(T), sizeof(T));
    items.emplace_back(v);
  }
  return items;
}

}  // namespace

Value ggml_kv_value(const GgufContext* ctx, int64_t key_id) {
  const GgmlApi& api = require_api();
  const auto type = static_cast<ValueType>(api.gguf_get_kv_type(ctx, key_id));
  switch (type) {
    case ValueType::UINT8: return Value(api.gguf_get_val_u8(ctx, key_id));
    case ValueType::INT8: return Value(api.gguf_get_val_i8(ctx, key_id));
    case ValueType::UINT16: return Value(api.gguf_get_val_u16(ctx, key_id));
    case ValueType::INT16: return Value(api.gguf_get_val_i16(ctx, key_id));
    case ValueType::UINT32: return Value(api.gguf_get_val_u32(ctx, key_id));
    case ValueType::INT32: return Value(api.gguf_get_val_i32(ctx, key_id));
    case ValueType::FLOAT32: return Value(api.gguf_get_val_f32(ctx, key_id));
    case ValueType::BOOL: return Value(api.gguf_get_val_bool(ctx, key_id));
    case ValueType::STRING: return Value(std::string(api.gguf_get_val_str(ctx, key_id)));
    case ValueType::UINT64: return Value(api.gguf_get_val_u64(ctx, key_id));
    case ValueType::INT64: return Value(api.gguf_get_val_i64(ctx, key_id));
    case ValueType::FLOAT64: return Value(api.gguf_get_val_f64(ctx, key_id));
    case ValueType::ARRAY: break;
    default: throw std::runtime_error("ggml_kv_value: unknown value type");
  }
  const auto elem = static_cast<ValueType>(api.gguf_get_arr_type(ctx, key_id));
  const size_t n = api.gguf_get_arr_n(ctx, key_id);
  if (elem == ValueType::STRING) {
    Value::Array items;
    for (size_t i = 0; i < n; ++i) items.emplace_back(std::string(api.gguf_get_arr_str(ctx, key_id, i)));
    return Value::array(elem, std::move(items));
  }
  if (elem == ValueType::ARRAY) throw std::runtime_error("ggml_kv_value: nested arrays are not readable through ggml");
  const void* data = n > 0 ? api.gguf_get_arr_data(ctx, key_id) : nullptr;
  switch (elem) {
    case ValueType::UINT8: return Value::array(elem, raw_array_items<uint8_t>(data, n));
    case ValueType::INT8: return Value::array(elem, raw_array_items<int8_t>(data, n));
    case ValueType::UINT16: return Value::array(elem, raw_array_items<uint16_t>(data, n));
    case ValueType::INT16: return Value::array(elem, raw_array_items<int16_t>(data, n));
    case ValueType::UINT32: return Value::array(elem, raw_array_items<uint32_t>(data, n));
    case ValueType::INT32: return Value::array(elem, raw_array_items<int32_t>(data, n));
    case ValueType::FLOAT32: return Value::array(elem, raw_array_items<float>(data, n));
    case ValueType::UINT64: return Value::array(elem, raw_array_items<uint64_t>(data, n));
    case ValueType::INT64: return Value::array(elem, raw_array_items<int64_t>(data, n));
    case ValueType::FLOAT64: return Value::array(elem, raw_array_items<double>(data, n));
    case ValueType::BOOL: {
      Value::Array items;
      for (size_t i = 0; i < n; ++i) items.emplace_back(static_cast<const uint8_t*>(data)[i] != 0);
      return Value::array(elem, std::move(items));
    }
    default: break;
  }
  throw std::runtime_error("ggml_kv_value: unknown array element type");
}

GgufSpec reference_gguf_spec() {
  require_api();
  GgufSpec spec;
  auto& md = spec.metadata;
  const auto& tokens = vocab_tokens();
  const auto n_vocab = static_cast<int64_t>(tokens.size());

  md.emplace_back("general.architecture", Value("llama"));
  md.emplace_back("general.name", Value("thermocline-reference"));
  md.emplace_back("general.file_type", Value(uint32_t{7}));
  md.emplace_back("general.quantization_version", Value(uint32_t{2}));
  md.emplace_back("llama.context_length", Value(uint32_t{512}));
  md.emplace_back("llama.embedding_length", Value(static_cast<uint32_t>(kEmbd)));
  md.emplace_back("llama.block_count", Value(uint32_t{1}));
  md.emplace_back("llama.feed_forward_length", Value(static_cast<uint32_t>(kFf)));
  md.emplace_back("llama.attention.head_count", Value(uint32_t{4}));
  md.emplace_back("llama.attention.head_count_kv", Value(static_cast<uint32_t>(kHeadKv)));
  md.emplace_back("llama.rope.dimension_count", Value(static_cast<uint32_t>(kHeadDim)));
  md.emplace_back("llama.rope.freq_base", Value(10000.0f));
  md.emplace_back("llama.attention.layer_norm_rms_epsilon", Value(1e-5f));
  md.emplace_back("llama.vocab_size", Value(static_cast<uint32_t>(n_vocab)));

  md.emplace_back("tokenizer.ggml.model", Value("llama"));
  md.emplace_back("tokenizer.ggml.tokens", Value::string_array(tokens));
  std::vector<float> scores;
  std::vector<int32_t> token_types;
  for (int64_t i = 0; i < n_vocab; ++i) {
    scores.push_back(i < 4 ? 0.0f : -static_cast<float>(i) * 0.25f);
    // 2 unknown, 3 control, 6 byte, 1 normal (llama.cpp's token types).
    token_types.push_back(i == 0 ? 2 : i < 3 ? 3 : i == 3 ? 6 : 1);
  }
  md.emplace_back("tokenizer.ggml.scores", Value::f32_array(scores));
  md.emplace_back("tokenizer.ggml.token_type", Value::i32_array(token_types));
  md.emplace_back("tokenizer.ggml.bos_token_id", Value(uint32_t{1}));
  md.emplace_back("tokenizer.ggml.eos_token_id", Value(uint32_t{2}));
  md.emplace_back("tokenizer.ggml.unknown_token_id", Value(uint32_t{0}));
  md.emplace_back("tokenizer.ggml.add_bos_token", Value(true));
  md.emplace_back("tokenizer.ggml.add_eos_token", Value(false));

  // One key of every scalar type, with values that use the full width.
  md.emplace_back("test.u8", Value(uint8_t{251}));
  md.emplace_back("test.i8", Value(int8_t{-117}));
  md.emplace_back("test.u16", Value(uint16_t{65021}));
  md.emplace_back("test.i16", Value(int16_t{-31234}));
  md.emplace_back("test.u32", Value(uint32_t{4000000007u}));
  md.emplace_back("test.i32", Value(int32_t{-2000000011}));
  md.emplace_back("test.f32", Value(-3.1415927e-7f));
  md.emplace_back("test.bool", Value(true));
  md.emplace_back("test.str", Value("h\xC3\xA9llo, w\xC3\xB6rld \xE2\x9C\x93 \"quoted\"\n"));
  md.emplace_back("test.str_empty", Value(""));
  md.emplace_back("test.u64", Value(uint64_t{0x8000000000000005ull}));
  md.emplace_back("test.i64", Value(int64_t{-0x4000000000000003ll}));
  md.emplace_back("test.f64", Value(-2.718281828459045e+200));
  // One array of every element type.
  md.emplace_back("test.arr.u8", Value::array(ValueType::UINT8, {Value(uint8_t{0}), Value(uint8_t{255})}));
  md.emplace_back("test.arr.i8", Value::array(ValueType::INT8, {Value(int8_t{-128}), Value(int8_t{127})}));
  md.emplace_back("test.arr.u16", Value::array(ValueType::UINT16, {Value(uint16_t{1}), Value(uint16_t{65535})}));
  md.emplace_back("test.arr.i16", Value::array(ValueType::INT16, {Value(int16_t{-32768}), Value(int16_t{3})}));
  md.emplace_back("test.arr.u32", Value::array(ValueType::UINT32, {Value(uint32_t{7}), Value(uint32_t{0xffffffffu})}));
  md.emplace_back("test.arr.i32", Value::i32_array({-5, 0, 2147483647}));
  md.emplace_back("test.arr.f32", Value::f32_array({1.5f, -0.0f, 3.4e38f, 1e-45f}));
  md.emplace_back("test.arr.bool", Value::array(ValueType::BOOL, {Value(true), Value(false), Value(true)}));
  md.emplace_back("test.arr.str", Value::string_array({"", "a", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", std::string(300, 'x')}));
  md.emplace_back("test.arr.u64", Value::array(ValueType::UINT64, {Value(uint64_t{0xffffffffffffffffull})}));
  md.emplace_back("test.arr.i64", Value::array(ValueType::INT64, {Value(int64_t{-1}), Value(int64_t{1} << 40)}));
  md.emplace_back("test.arr.f64", Value::array(ValueType::FLOAT64, {Value(0.1), Value(-1e-300)}));
  md.emplace_back("test.arr.empty", Value::array(ValueType::INT32, {}));

  // A one-layer llama covering every weight dtype; seeds are fixed.
  auto& t = spec.tensors;
  t.push_back(make_tensor("token_embd.weight", DType::Q4_K, {kEmbd, n_vocab}, 101, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.attn_norm.weight", DType::F32, {kEmbd}, 102, 0.1f, 1.0f));
  t.push_back(make_tensor("blk.0.attn_q.weight", DType::Q8_0, {kEmbd, kEmbd}, 103, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.attn_k.weight", DType::Q4_0, {kEmbd, kHeadKv * kHeadDim}, 104, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.attn_v.weight", DType::Q6_K, {kEmbd, kHeadKv * kHeadDim}, 105, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.attn_output.weight", DType::F16, {kEmbd, kEmbd}, 106, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.ffn_norm.weight", DType::F32, {kEmbd}, 107, 0.1f, 1.0f));
  t.push_back(make_tensor("blk.0.ffn_gate.weight", DType::Q4_K, {kEmbd, kFf}, 108, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.ffn_up.weight", DType::BF16, {kEmbd, kFf}, 109, 0.02f, 0.0f));
  t.push_back(make_tensor("blk.0.ffn_down.weight", DType::Q6_K, {kFf, kEmbd}, 110, 0.02f, 0.0f));
  t.push_back(make_tensor("output_norm.weight", DType::F32, {kEmbd}, 111, 0.1f, 1.0f));
  t.push_back(make_tensor("output.weight", DType::Q8_0, {kEmbd, n_vocab}, 112, 0.02f, 0.0f));
  return spec;
}

void write_gguf_with_ggml(const GgufSpec& spec, const std::filesystem::path& path) {
  const GgmlApi& api = require_api();
  std::unique_ptr<GgufContext, GgufDeleter> gguf_ctx(api.gguf_init_empty());
  for (const auto& [key, value] : spec.metadata) set_ggml_value(api, gguf_ctx.get(), key, value);

  // ggml_new_tensor carves tensor headers and data out of one arena.
  size_t arena = 1 << 20;
  for (const auto& t : spec.tensors) arena += t.data.size() + 1024;
  std::unique_ptr<GgmlContext, GgmlDeleter> ggml_ctx(api.ggml_init({arena, nullptr, false}));
  if (!ggml_ctx) throw std::runtime_error("ggml_init failed");
  for (const auto& t : spec.tensors) {
    GgmlTensor* tensor = api.ggml_new_tensor(ggml_ctx.get(), ggml_type_id(t.dtype),
                                             static_cast<int>(t.ne.size()), t.ne.data());
    api.ggml_set_name(tensor, t.name.c_str());
    if (api.ggml_nbytes(tensor) != t.data.size()) {
      throw std::runtime_error("write_gguf_with_ggml: " + t.name + " has " +
                               std::to_string(t.data.size()) + " bytes, ggml expects " +
                               std::to_string(api.ggml_nbytes(tensor)));
    }
    std::memcpy(api.ggml_get_data(tensor), t.data.data(), t.data.size());
    api.gguf_add_tensor(gguf_ctx.get(), tensor);
  }
  if (!api.gguf_write_to_file(gguf_ctx.get(), path.c_str(), false)) {
    throw std::runtime_error("gguf_write_to_file failed for " + path.string());
  }
}

std::filesystem::path write_reference_gguf(const std::filesystem::path& path) {
  write_gguf_with_ggml(reference_gguf_spec(), path);
  return path;
}

}  // namespace tc::oracle
