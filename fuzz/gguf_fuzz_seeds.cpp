// Writes a few small valid GGUF files into the directory given as argv[1]:
// the fuzzer's starting corpus beside tests/data/gguf_malformed/.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "engine/gguf/gguf_writer.h"

namespace {

using tc::gguf::GgufWriter;
using tc::gguf::Magic;
using tc::gguf::Value;
using tc::gguf::ValueType;
using tc::kernels::DType;

std::vector<std::byte> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> out(n);
  for (auto& b : out) b = static_cast<std::byte>(rng() & 0xff);
  return out;
}

void add_all_value_types(GgufWriter& w) {
  w.set("general.architecture", Value("llama"));
  w.set("t.u8", Value(uint8_t{200}));
  w.set("t.i8", Value(int8_t{-100}));
  w.set("t.u16", Value(uint16_t{60000}));
  w.set("t.i16", Value(int16_t{-30000}));
  w.set("t.u32", Value(uint32_t{4000000000u}));
  w.set("t.i32", Value(int32_t{-2000000000}));
  w.set("t.f32", Value(0.375f));
  w.set("t.bool", Value(true));
  w.set("t.u64", Value(uint64_t{1} << 60));
  w.set("t.i64", Value(int64_t{-1} << 50));
  w.set("t.f64", Value(-1.5e10));
  w.set("tokenizer.ggml.tokens", Value::string_array({"<s>", "</s>", "\xe2\x96\x81hi", "a"}));
  w.set("tokenizer.ggml.scores", Value::f32_array({0.0f, -1.0f, -2.5f, -3.0f}));
  w.set("tokenizer.ggml.token_type", Value::i32_array({3, 3, 1, 1}));
  w.set("t.arr_arr", Value::array(ValueType::ARRAY, {Value::i32_array({1, 2}),
                                                     Value::string_array({"x"}),
                                                     Value::array(ValueType::BOOL, {})}));
  Value deep = Value::array(ValueType::UINT8, {Value(uint8_t{1})});
  for (int d = 1; d < 4; ++d) deep = Value::array(ValueType::ARRAY, {deep});
  w.set("t.deep", deep);
}

void add_tensors(GgufWriter& w, uint32_t seed) {
  const DType types[] = {DType::F32, DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K,
                         DType::Q6_K, DType::I8,  DType::I16,  DType::I32,  DType::I64,  DType::F64};
  for (DType t : types) {
    const auto& traits = tc::kernels::dtype_traits(t);
    const std::vector<int64_t> ne = {traits.block_size, 2};
    w.add_tensor("blk.0." + std::string(traits.name) + ".weight", t, ne,
                 random_bytes(static_cast<size_t>(traits.block_bytes * 2), seed++));
  }
  w.add_tensor("output_norm.weight", DType::F32, {7}, random_bytes(28, seed++));
  w.add_tensor("t.4d", DType::F16, {2, 2, 2, 3}, random_bytes(48, seed++));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  {
    GgufWriter w;
    add_all_value_types(w);
    add_tensors(w, 1);
    w.write(dir / "valid_all_types.gguf");
  }
  {
    GgufWriter w(Magic::PWRI, 64);
    w.set("general.architecture", Value("llama"));
    w.set("powerinfer.sparse_threshold", Value(0.0f));
    w.add_tensor("blk.0.fc1.weight", DType::F16, {8, 4}, random_bytes(64, 50));
    w.add_tensor("blk.0.fc2.weight", DType::F16, {4, 8}, random_bytes(64, 51));
    w.add_tensor("blk.0.ffn_down_t.weight", DType::Q4_0, {32, 8}, random_bytes(144, 52));
    w.write(dir / "valid_pwri_align64.gguf");
  }
  {
    GgufWriter w(Magic::GGUF, 1);
    add_all_value_types(w);
    w.write(dir / "valid_metadata_only.gguf");
  }
  {
    GgufWriter w;
    w.set("general.architecture", Value("llama"));
    w.add_tensor("token_embd.weight", DType::Q8_0, {32, 3}, random_bytes(102, 60));
    w.write(dir / "valid_v2.gguf");
    // Version 2 has the same layout; patch the version field.
    std::fstream f(dir / "valid_v2.gguf", std::ios::in | std::ios::out | std::ios::binary);
    const uint32_t v2 = 2;
    f.seekp(4);
    f.write(reinterpret_cast<const char*>(&v2), sizeof v2);
  }
  std::printf("wrote 4 seed files to %s\n", dir.c_str());
  return 0;
}
