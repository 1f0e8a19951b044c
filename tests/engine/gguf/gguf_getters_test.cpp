// GgufFile's typed getters, tensor lookups and open() errors, and the
// wording of ModelLoadError.
#include <catch2/catch.hpp>

#include <cstring>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/test_util.h"

namespace {

using Catch::Matchers::Contains;
using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::ModelLoadError;
using tc::gguf::Value;
using tc::gguf::ValueType;
using tc::kernels::DType;

GgufFile getters_file() {
  GgufWriter w;
  w.set("s", Value("hello"));
  w.set("u8", Value(uint8_t{200}));
  w.set("u32", Value(uint32_t{4000000000u}));
  w.set("neg", Value(int32_t{-5}));
  w.set("big", Value(uint64_t{0xffffffffffffffffull}));
  w.set("f32", Value(1.5f));
  w.set("f64", Value(-2.25));
  w.set("flag", Value(true));
  w.set("strs", Value::string_array({"a", "b\xff"}));
  w.set("f32s", Value::f32_array({0.5f, -3.0f}));
  w.set("i32s", Value::i32_array({-1, 7}));
  w.set("u8s", Value::array(ValueType::UINT8, {Value(uint8_t{9}), Value(uint8_t{255})}));
  w.set("u32s", Value::array(ValueType::UINT32, {Value(uint32_t{1}), Value(uint32_t{3000000000u})}));
  w.set("arrs", Value::array(ValueType::ARRAY, {Value::i32_array({1})}));
  const auto f = tc::test::random_floats(16 * 4, 3);
  std::vector<std::byte> data(f.size() * 4);
  std::memcpy(data.data(), f.data(), data.size());
  w.add_tensor("blk.0.attn_q.weight", DType::F32, {16, 4}, data);
  const auto path = tc::test::scratch_dir("gguf_getters") / "model.gguf";
  w.write(path);
  return GgufFile::open(path);
}

// The message of the ModelLoadError `fn` throws (fails when none is thrown).
template <typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const ModelLoadError& e) {
    return e.what();
  }
  FAIL("no ModelLoadError thrown");
  return {};
}

}  // namespace

TEST_CASE("typed getters convert compatible values", "[gguf]") {
  const auto f = getters_file();
  CHECK(f.get_string("s") == "hello");
  CHECK(f.get_string("missing", "dflt") == "dflt");
  CHECK(f.get_string("s", "dflt") == "hello");
  CHECK(f.get_u64("u8") == 200);
  CHECK(f.get_u64("u32") == 4000000000u);
  CHECK(f.get_u64("big") == 0xffffffffffffffffull);
  CHECK(f.get_u64("missing", 17) == 17);
  CHECK(f.get_i64("neg") == -5);
  CHECK(f.get_i64("u32") == 4000000000ll);
  CHECK(f.get_i64("missing", -9) == -9);
  CHECK(f.get_f64("f32") == 1.5);
  CHECK(f.get_f64("f64") == -2.25);
  CHECK(f.get_f64("u8") == 200.0);
  CHECK(f.get_f64("missing", 0.75) == 0.75);
  CHECK(f.get_bool("flag", false) == true);
  CHECK(f.get_bool("missing", true) == true);
  CHECK(f.get_string_array("strs") == std::vector<std::string>{"a", "b\xff"});
  CHECK(f.get_f32_array("f32s") == std::vector<float>{0.5f, -3.0f});
  CHECK(f.get_f32_array("i32s") == std::vector<float>{-1.0f, 7.0f});
  CHECK(f.get_i32_array("i32s") == std::vector<int32_t>{-1, 7});
  CHECK(f.get_i32_array("u8s") == std::vector<int32_t>{9, 255});
}

TEST_CASE("typed getters name the key and the expected type on errors", "[gguf]") {
  const auto f = getters_file();
  const std::string p = f.path() + ": key ";
  CHECK_THAT(error_of([&] { f.get_string("nope"); }),
             Contains(p + "'nope': missing metadata key; expected a string"));
  CHECK_THAT(error_of([&] { f.get_string("u8"); }),
             Contains(p + "'u8': has type u8, expected a string"));
  CHECK_THAT(error_of([&] { f.get_u64("neg"); }), Contains(p + "'neg': value -5 is negative"));
  CHECK_THAT(error_of([&] { f.get_u64("s"); }),
             Contains(p + "'s': has type str, expected an unsigned integer"));
  CHECK_THAT(error_of([&] { f.get_i64("big"); }),
             Contains(p + "'big': value 18446744073709551615 does not fit i64"));
  CHECK_THAT(error_of([&] { f.get_f64("strs"); }),
             Contains(p + "'strs': has type arr[str], expected a number"));
  CHECK_THAT(error_of([&] { f.get_bool("u8", false); }),
             Contains(p + "'u8': has type u8, expected bool"));
  CHECK_THAT(error_of([&] { f.get_string_array("i32s"); }),
             Contains(p + "'i32s': has type arr[i32], expected an array of str"));
  CHECK_THAT(error_of([&] { f.get_f32_array("strs"); }),
             Contains(p + "'strs': has type arr[str], expected an array of f32"));
  CHECK_THAT(error_of([&] { f.get_f32_array("arrs"); }),
             Contains(p + "'arrs': has type arr[arr], expected an array of f32"));
  CHECK_THAT(error_of([&] { f.get_i32_array("f32s"); }),
             Contains(p + "'f32s': has type arr[f32], expected an array of i32"));
  CHECK_THAT(error_of([&] { f.get_i32_array("u32s"); }),
             Contains(p + "'u32s': element 1 = 3000000000 does not fit i32"));
  CHECK_THAT(error_of([&] { f.get_i32_array("s"); }),
             Contains(p + "'s': has type str, expected an array of i32"));
}

TEST_CASE("tensor lookups check presence and exact shape", "[gguf]") {
  const auto f = getters_file();
  const auto& t = f.tensor("blk.0.attn_q.weight", {16, 4});
  CHECK(t.ne == std::vector<int64_t>{16, 4});
  CHECK(f.find_tensor("blk.0.attn_k.weight") == nullptr);
  CHECK(f.find_tensor("blk.0.attn_q.weight") == &t);
  CHECK_THAT(error_of([&] { f.tensor("blk.0.attn_k.weight"); }),
             Contains(f.path() + ": tensor 'blk.0.attn_k.weight': tensor not found"));
  CHECK_THAT(error_of([&] { f.tensor("blk.0.attn_q.weight", {4, 16}); }),
             Contains("tensor 'blk.0.attn_q.weight': has shape [16, 4], expected [4, 16]"));
  CHECK_THAT(error_of([&] { f.tensor("blk.0.attn_q.weight", {16, 4, 1}); }),
             Contains("has shape [16, 4], expected [16, 4, 1]"));
  CHECK_THAT(error_of([&] { f.tensor("blk.0.attn_k.weight", {16, 4}); }),
             Contains("tensor not found"));
}

TEST_CASE("open() reports missing files, directories and empty files", "[gguf]") {
  const auto dir = tc::test::scratch_dir("gguf_open_errors");
  const auto missing = dir / "missing.gguf";
  CHECK_THAT(error_of([&] { GgufFile::open(missing); }),
             Contains(missing.string() + ": cannot open the file: No such file or directory"));
  CHECK_THAT(error_of([&] { GgufFile::open(dir); }),
             Contains(dir.string() + ": is a directory"));
  tc::test::write_file(dir / "empty.gguf", "");
  CHECK_THAT(error_of([&] { GgufFile::open(dir / "empty.gguf"); }),
             Contains("empty.gguf: file is empty (0 bytes)"));
}

TEST_CASE("ModelLoadError formats file, item kind and problem", "[gguf]") {
  const auto t = ModelLoadError::for_tensor("model.gguf", "blk.0.attn_q.weight",
                                            "offset 1234 + 5678 bytes runs past the end of the "
                                            "file (size 4096)");
  CHECK(std::string(t.what()) ==
        "model.gguf: tensor 'blk.0.attn_q.weight': offset 1234 + 5678 bytes runs past the end "
        "of the file (size 4096)");
  CHECK(t.file() == "model.gguf");
  CHECK(t.item() == "blk.0.attn_q.weight");
  const auto k = ModelLoadError::for_key("m.gguf", "general.alignment", "bad");
  CHECK(std::string(k.what()) == "m.gguf: key 'general.alignment': bad");
  CHECK(std::string(ModelLoadError("m.gguf", "", "bad magic").what()) == "m.gguf: bad magic");
  CHECK(std::string(ModelLoadError("m.gguf", "x", "bad").what()) == "m.gguf: 'x': bad");
  // Arbitrary bytes in names are escaped; valid UTF-8 is kept.
  const auto e = ModelLoadError::for_tensor("m.gguf", std::string("a\nb\xff\xc3\xa9", 6), "bad");
  CHECK(std::string(e.what()) == "m.gguf: tensor 'a\\x0ab\\xff\xc3\xa9': bad");
  CHECK(e.item() == std::string("a\nb\xff\xc3\xa9", 6));
  CHECK(tc::gguf::printable(std::string(200, 'n'), 10) == "nnnnnnnnnn...");
}
