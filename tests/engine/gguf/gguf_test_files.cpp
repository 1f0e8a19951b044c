// The base GGUF file and the malformed cases patched from it.
#include "tests/engine/gguf/gguf_test_files.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/test_util.h"

namespace tc::test::gguf {
namespace {

using tc::gguf::GgufWriter;
using tc::gguf::Value;
using tc::gguf::ValueType;
using tc::kernels::DType;
using tc::test::random_bytes;


// Offset of the only occurrence of `needle` in the header of `bytes`.
size_t find_once(const std::string& bytes, const std::string& needle) {
  const size_t end = base_header_end(bytes);
  const size_t pos = bytes.find(needle);
  if (pos == std::string::npos || pos >= end || bytes.find(needle, pos + 1) < end) {
    throw std::logic_error("test fixture: '" + needle + "' is not unique in the header");
  }
  return pos;
}

// Offset just past the key string `key` (where its value type id starts).
size_t after_key(const std::string& bytes, const std::string& key) {
  return find_once(bytes, key) + key.size();
}

// Offset of the field after the name of tensor `name` (its n_dims).
size_t tensor_info(const std::string& bytes, const std::string& name) {
  return find_once(bytes, name) + name.size();
}

template <typename T>
std::string put(std::string bytes, size_t pos, T v) {
  if (pos + sizeof v > bytes.size()) throw std::logic_error("test fixture: patch out of range");
  std::memcpy(bytes.data() + pos, &v, sizeof v);
  return bytes;
}

std::string replace(std::string bytes, size_t pos, const std::string& with) {
  bytes.replace(pos, with.size(), with);
  return bytes;
}

Value nested(int depth) {
  if (depth == 1) return Value::array(ValueType::UINT32, {Value(uint32_t{7}), Value(uint32_t{8}),
                                                          Value(uint32_t{9})});
  return Value::array(ValueType::ARRAY, {nested(depth - 1)});
}

std::vector<MalformedCase> make_cases() {
  // Positions inside the base file (all found by name, so the cases follow
  // any change to base_file_bytes()).
  const auto arch_len = [](const std::string& b) { return after_key(b, "general.architecture") + 4; };
  const auto a_info = [](const std::string& b) { return tensor_info(b, kTensorA); };
  const auto b_info = [](const std::string& b) { return tensor_info(b, kTensorB); };
  const std::string tensor_b = std::string("tensor '") + kTensorB + "'";
  const std::string tensor_a = std::string("tensor '") + kTensorA + "'";

  std::vector<MalformedCase> c;
  c.push_back({"empty", "a 0-byte file", "", "", {"empty", "0 bytes"},
               [](const std::string&) { return std::string(); }});
  c.push_back({"bad_magic", "magic 'GGML' instead of 'GGUF'", "", "",
               {"bad magic 'GGML'", "expected 'GGUF'"},
               [](const std::string& b) { return replace(b, 0, "GGML"); }});
  c.push_back({"legacy_ggjt", "the magic of a legacy GGJT file", "", "", {"legacy", "GGJT"},
               [](const std::string& b) { return replace(b, 0, "tjgg"); }});
  c.push_back({"version_1", "GGUF version 1", "", "", {"version 1", "expected version 2 or 3"},
               [](const std::string& b) { return put<uint32_t>(b, 4, 1); }});
  c.push_back({"version_99", "GGUF version 99", "", "", {"unsupported GGUF version 99"},
               [](const std::string& b) { return put<uint32_t>(b, 4, 99); }});
  c.push_back({"big_endian", "version 3 stored big-endian", "", "", {"big-endian"},
               [](const std::string& b) { return put<uint32_t>(b, 4, 0x03000000u); }});
  c.push_back({"truncated_header", "the first 20 bytes only", "", "",
               {"truncated", "metadata entry count"},
               [](const std::string& b) { return b.substr(0, 20); }});
  c.push_back({"kv_count_huge", "metadata entry count 2^63", "", "",
               {"metadata entry count 9223372036854775808", "impossible"},
               [](const std::string& b) { return put<uint64_t>(b, 16, uint64_t{1} << 63); }});
  c.push_back({"tensor_count_huge", "tensor count 2^63", "", "",
               {"tensor count 9223372036854775808", "impossible"},
               [](const std::string& b) { return put<uint64_t>(b, 8, uint64_t{1} << 63); }});
  c.push_back({"key_past_end", "first key's length 2^40", "", "",
               {"key of metadata entry 0 length 1099511627776", "past the end"},
               [](const std::string& b) { return put<uint64_t>(b, 24, uint64_t{1} << 40); }});
  c.push_back({"string_past_end", "a string value's length 2^40", "key 'general.architecture'",
               "general.architecture", {"string length 1099511627776", "past the end"},
               [arch_len](const std::string& b) {
                 return put<uint64_t>(b, arch_len(b), uint64_t{1} << 40);
               }});
  c.push_back({"array_past_end", "a string array's length 2^62", "key 'tokenizer.ggml.tokens'",
               "tokenizer.ggml.tokens", {"array of 4611686018427387904 str", "past the end"},
               [](const std::string& b) {
                 return put<uint64_t>(b, after_key(b, "tokenizer.ggml.tokens") + 8,
                                      uint64_t{1} << 62);
               }});
  c.push_back({"unknown_value_type", "value type id 13", "key 'test.key_a'", "test.key_a",
               {"unknown value type 13"},
               [](const std::string& b) { return put<uint32_t>(b, after_key(b, "test.key_a"), 13); }});
  c.push_back({"bool_not_0_or_1", "a bool stored as 2", "key 'test.flag'", "test.flag",
               {"bool value", "is 2", "expected 0 or 1"},
               [](const std::string& b) { return put<uint8_t>(b, after_key(b, "test.flag") + 4, 2); }});
  c.push_back({"nesting_too_deep", "arrays nested 17 deep (the innermost u32[3] becomes an array "
                                   "holding one empty u8 array)",
               "key 'test.nested'", "test.nested", {"nested 17 deep", "at most 16"},
               [](const std::string& b) {
                 // Value type, then 15 levels of (elem type ARRAY, count 1),
                 // then the innermost (elem type u32, count 3, 3 x u32).
                 const size_t inner = after_key(b, "test.nested") + 4 + 15 * 12;
                 auto p = put<uint32_t>(b, inner, static_cast<uint32_t>(ValueType::ARRAY));
                 p = put<uint64_t>(p, inner + 4, 1);
                 p = put<uint32_t>(p, inner + 12, static_cast<uint32_t>(ValueType::UINT8));
                 return put<uint64_t>(p, inner + 16, 0);
               }});
  c.push_back({"duplicate_key", "key test.key_b renamed to test.key_a", "key 'test.key_a'",
               "test.key_a", {"duplicate metadata key"},
               [](const std::string& b) { return replace(b, find_once(b, "test.key_b"), "test.key_a"); }});
  c.push_back({"alignment_not_pow2", "general.alignment = 48", "key 'general.alignment'",
               "general.alignment", {"alignment 48 is not a power of two"},
               [](const std::string& b) {
                 return put<uint32_t>(b, after_key(b, "general.alignment") + 4, 48);
               }});
  c.push_back({"alignment_zero", "general.alignment = 0", "key 'general.alignment'",
               "general.alignment", {"alignment 0 is not a power of two", "non-zero"},
               [](const std::string& b) {
                 return put<uint32_t>(b, after_key(b, "general.alignment") + 4, 0);
               }});
  c.push_back({"alignment_signed", "general.alignment stored as i32", "key 'general.alignment'",
               "general.alignment", {"has type i32", "expected an unsigned integer"},
               [](const std::string& b) {
                 return put<uint32_t>(b, after_key(b, "general.alignment"),
                                      static_cast<uint32_t>(ValueType::INT32));
               }});
  c.push_back({"duplicate_tensor", "tensor.b renamed to tensor.a", tensor_a, kTensorA,
               {"duplicate tensor name"},
               [](const std::string& b) { return replace(b, find_once(b, kTensorB), kTensorA); }});
  c.push_back({"too_many_dims", "n_dims = 5", tensor_a, kTensorA,
               {"has 5 dimensions", "expected 1 to 4"},
               [a_info](const std::string& b) { return put<uint32_t>(b, a_info(b), 5); }});
  c.push_back({"zero_dims", "n_dims = 0", tensor_a, kTensorA, {"has 0 dimensions"},
               [a_info](const std::string& b) { return put<uint32_t>(b, a_info(b), 0); }});
  c.push_back({"negative_dim", "ne[1] = -1", tensor_b, kTensorB, {"ne[1] is -1", "expected >= 0"},
               [b_info](const std::string& b) { return put<int64_t>(b, b_info(b) + 12, -1); }});
  c.push_back({"element_count_overflow", "ne = [2^32, 2^32]", tensor_b, kTensorB,
               {"element count", "overflows int64"},
               [b_info](const std::string& b) {
                 auto p = put<int64_t>(b, b_info(b) + 4, int64_t{1} << 32);
                 return put<int64_t>(p, b_info(b) + 12, int64_t{1} << 32);
               }});
  c.push_back({"byte_size_overflow", "f32 ne = [2^31, 2^31]: 2^62 elements, 2^64 bytes",
               tensor_b, kTensorB, {"byte size", "overflows"},
               [b_info](const std::string& b) {
                 auto p = put<int64_t>(b, b_info(b) + 4, int64_t{1} << 31);
                 return put<int64_t>(p, b_info(b) + 12, int64_t{1} << 31);
               }});
  c.push_back({"unsupported_dtype", "dtype id 16 (iq2_xxs)", tensor_a, kTensorA,
               {"iq2_xxs", "ggml type id 16", "not supported"},
               [a_info](const std::string& b) { return put<uint32_t>(b, a_info(b) + 20, 16); }});
  c.push_back({"unknown_dtype", "dtype id 1000", tensor_a, kTensorA, {"unknown dtype id 1000"},
               [a_info](const std::string& b) { return put<uint32_t>(b, a_info(b) + 20, 1000); }});
  c.push_back({"row_not_block_multiple", "q8_0 tensor with ne[0] = 33", tensor_a, kTensorA,
               {"ne[0] = 33", "q8_0 block size 32"},
               [a_info](const std::string& b) { return put<int64_t>(b, a_info(b) + 4, 33); }});
  c.push_back({"misaligned_offset", "data offset 129 with alignment 64", tensor_b, kTensorB,
               {"offset 129", "not a multiple of the alignment 64"},
               [b_info](const std::string& b) { return put<uint64_t>(b, b_info(b) + 24, 129); }});
  c.push_back({"offset_past_end", "data offset 2^40", tensor_b, kTensorB,
               {"offset 1099511627776 + 256 bytes runs past the end of the file"},
               [b_info](const std::string& b) {
                 return put<uint64_t>(b, b_info(b) + 24, uint64_t{1} << 40);
               }});
  c.push_back({"size_past_end", "ne[1] = 5 instead of 4 (one row more than stored)", tensor_b,
               kTensorB, {"offset 128 + 320 bytes runs past the end of the file"},
               [b_info](const std::string& b) { return put<int64_t>(b, b_info(b) + 12, 5); }});
  c.push_back({"tensor_info_truncated", "cut just after the name of the last tensor", tensor_b,
               kTensorB, {"truncated", "n_dims"},
               [b_info](const std::string& b) { return b.substr(0, b_info(b)); }});
  c.push_back({"data_section_missing", "cut at the end of the tensor infos, before the padding",
               "", "", {"truncated", "data section starts at offset"},
               [](const std::string& b) { return b.substr(0, base_header_end(b)); }});
  c.push_back({"data_truncated", "the last 10 bytes of tensor data cut", tensor_b, kTensorB,
               {"runs past the end of the file"},
               [](const std::string& b) { return b.substr(0, b.size() - 10); }});
  return c;
}

}  // namespace

std::string base_file_bytes() {
  GgufWriter w(tc::gguf::Magic::GGUF, kBaseAlignment);
  w.set("general.architecture", Value("llama"));
  w.set("general.name", Value("malformed-corpus base"));
  w.set("test.key_a", Value(uint32_t{11}));
  w.set("test.key_b", Value(uint32_t{22}));
  w.set("test.flag", Value(true));
  w.set("tokenizer.ggml.tokens", Value::string_array({"<s>", "hello", "world"}));
  w.set("test.nested", nested(tc::gguf::kMaxArrayDepth));
  w.set("test.scale", Value(0.125f));
  w.add_tensor(kTensorA, DType::Q8_0, {32, 2}, random_bytes(68, 11));
  w.add_tensor(kTensorB, DType::F32, {16, 4}, random_bytes(256, 12));
  const auto dir = scratch_dir("gguf_base_file");
  w.write(dir / "base.gguf");
  return read_file(dir / "base.gguf");
}

size_t base_header_end(const std::string& base) {
  const size_t pos = base.find(kTensorB);
  if (pos == std::string::npos) throw std::logic_error("test fixture: no tensor.b in base file");
  // name, n_dims, ne[0], ne[1], dtype, offset
  return pos + std::strlen(kTensorB) + 4 + 2 * 8 + 4 + 8;
}

const std::vector<MalformedCase>& malformed_cases() {
  static const std::vector<MalformedCase> cases = make_cases();
  return cases;
}

std::filesystem::path malformed_corpus_dir() {
  return source_dir() / "tests" / "data" / "gguf_malformed";
}

}  // namespace tc::test::gguf
