// GgufWriter -> GgufFile round trips: every metadata value type, nested and
// empty arrays, every dtype's tensor data, PWRI magic, custom alignment, and
// zero-copy tensor data inside the file mapping.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::Magic;
using tc::gguf::Value;
using tc::gguf::ValueType;
using tc::kernels::DType;
using tc::test::random_bytes;


// Every scalar type with a value far from zero, in GGUF type-id order.
std::vector<std::pair<std::string, Value>> scalar_values() {
  const auto r = tc::test::random_floats(2, 42);
  return {
      {"t.u8", Value(uint8_t{201})},
      {"t.i8", Value(int8_t{-101})},
      {"t.u16", Value(uint16_t{60001})},
      {"t.i16", Value(int16_t{-30001})},
      {"t.u32", Value(uint32_t{4000000001u})},
      {"t.i32", Value(int32_t{-2000000001})},
      {"t.f32", Value(r[0])},
      {"t.bool_true", Value(true)},
      {"t.bool_false", Value(false)},
      // Not valid UTF-8, with an embedded NUL: strings are bytes.
      {"t.str", Value(std::string("caf\xc3\xa9 \xff\xfe\0end", 13))},
      {"t.str_empty", Value(std::string())},
      {"t.u64", Value(uint64_t{0x8000000000000005ull})},
      {"t.i64", Value(int64_t{-0x4000000000000003ll})},
      {"t.f64", Value(static_cast<double>(r[1]) * 1e100)},
  };
}

Value nested(int depth, uint32_t seed) {
  if (depth == 1) return Value::i32_array({static_cast<int32_t>(seed), -7, 1 << 30});
  return Value::array(ValueType::ARRAY, {nested(depth - 1, seed), nested(depth - 1, seed + 1)});
}

// Writes `w` to a fresh scratch file and opens it.
GgufFile write_and_open(const GgufWriter& w, const std::string& name) {
  const auto path = tc::test::scratch_dir(name) / (name + ".gguf");
  w.write(path);
  return GgufFile::open(path);
}

}  // namespace

TEST_CASE("every metadata value type round-trips in insertion order", "[gguf]") {
  GgufWriter w;
  auto values = scalar_values();
  values.emplace_back("t.arr_u8", Value::array(ValueType::UINT8, {Value(uint8_t{3}), Value(uint8_t{250})}));
  values.emplace_back("t.arr_i64", Value::array(ValueType::INT64, {Value(int64_t{-5}), Value(int64_t{1} << 40)}));
  values.emplace_back("t.arr_f32", Value::f32_array(tc::test::random_floats(5, 7)));
  values.emplace_back("t.arr_f64", Value::array(ValueType::FLOAT64, {Value(2.5), Value(-1e-300)}));
  values.emplace_back("t.arr_bool", Value::array(ValueType::BOOL, {Value(true), Value(false), Value(true)}));
  values.emplace_back("t.arr_str", Value::string_array({"a", "", "\xe2\x96\x81the", std::string(300, 'x')}));
  values.emplace_back("t.arr_empty_u8", Value::array(ValueType::UINT8, {}));
  values.emplace_back("t.arr_empty_str", Value::array(ValueType::STRING, {}));
  values.emplace_back("t.arr_empty_arr", Value::array(ValueType::ARRAY, {}));
  // Arrays of arrays with different inner element types.
  values.emplace_back("t.arr_arr", Value::array(ValueType::ARRAY,
                                                {Value::string_array({"x", "yz"}),
                                                 Value::i32_array({-1, 2, -3}),
                                                 Value::array(ValueType::FLOAT32, {})}));
  values.emplace_back("t.nested_max", nested(tc::gguf::kMaxArrayDepth, 5));
  for (const auto& [k, v] : values) w.set(k, v);

  const auto f = write_and_open(w, "gguf_value_types");
  CHECK(f.version() == 3);
  CHECK(f.magic() == Magic::GGUF);
  REQUIRE(f.metadata().size() == values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    INFO(values[i].first);
    CHECK(f.metadata()[i].first == values[i].first);
    CHECK(f.metadata()[i].second == values[i].second);
    CHECK(f.metadata()[i].second.type() == values[i].second.type());
    if (values[i].second.is_array()) {
      CHECK(f.metadata()[i].second.array_type() == values[i].second.array_type());
    }
  }
  // Spot-check that equality is not vacuous: the types survive exactly.
  CHECK(f.find("t.u16")->type() == ValueType::UINT16);
  CHECK(*f.find("t.str")->as_string() == std::string("caf\xc3\xa9 \xff\xfe\0end", 13));
  CHECK(f.find("t.arr_empty_arr")->array_type() == ValueType::ARRAY);
  CHECK(f.find("t.arr_empty_arr")->as_array()->empty());
  const Value* deep = f.find("t.nested_max");
  for (int d = 1; d < tc::gguf::kMaxArrayDepth; ++d) deep = &deep->as_array()->at(1);
  CHECK(deep->array_type() == ValueType::INT32);
  CHECK(deep->as_array()->at(0) == Value(int32_t{5 + tc::gguf::kMaxArrayDepth - 1}));
}

TEST_CASE("setting a key twice keeps its first position and its last value", "[gguf]") {
  GgufWriter w;
  w.set("a", Value(uint32_t{1}));
  w.set("b", Value("two"));
  w.set("a", Value(int64_t{-3}));
  const auto f = write_and_open(w, "gguf_set_twice");
  REQUIRE(f.metadata().size() == 2);
  CHECK(f.metadata()[0].first == "a");
  CHECK(f.metadata()[0].second == Value(int64_t{-3}));
  CHECK(f.metadata()[1].first == "b");
}

TEST_CASE("every dtype's tensor data round-trips byte for byte", "[gguf]") {
  const DType all[] = {DType::F32, DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K,
                       DType::Q6_K, DType::I8,  DType::I16,  DType::I32,  DType::I64,  DType::F64};
  GgufWriter w;
  std::vector<std::vector<std::byte>> data;
  uint64_t seed = 100;
  for (DType t : all) {
    const auto& traits = tc::kernels::dtype_traits(t);
    const std::vector<int64_t> ne = {traits.block_size * 2, 3};
    data.push_back(random_bytes(static_cast<size_t>(tc::kernels::row_bytes(t, ne[0]) * 3), seed++));
    w.add_tensor("w." + std::string(traits.name), t, ne, data.back());
  }
  // A 1-D, a 4-D and an empty tensor too.
  data.push_back(random_bytes(4 * 7, seed++));
  w.add_tensor("w.vec", DType::F32, {7}, data.back());
  data.push_back(random_bytes(2 * 2 * 3 * 4 * 5, seed++));
  w.add_tensor("w.4d", DType::F16, {2, 3, 4, 5}, data.back());
  data.push_back({});
  w.add_tensor("w.empty", DType::F32, {0, 4}, data.back());

  const auto f = write_and_open(w, "gguf_dtypes");
  REQUIRE(f.tensors().size() == data.size());
  uint64_t expected_offset = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    const auto& t = f.tensors()[i];
    INFO(t.name);
    CHECK(t.offset == expected_offset);
    CHECK(t.offset % f.alignment() == 0);
    CHECK(t.n_bytes == data[i].size());
    const auto bytes = f.tensor_data(t);
    REQUIRE(bytes.size() == data[i].size());
    CHECK(std::equal(bytes.begin(), bytes.end(), data[i].begin()));
    expected_offset += (t.n_bytes + f.alignment() - 1) / f.alignment() * f.alignment();
  }
  CHECK(f.tensor("w.q4_K").dtype == DType::Q4_K);
  CHECK(f.tensor("w.q4_K").ne == std::vector<int64_t>{512, 3});
  CHECK(f.tensor("w.q4_K").n_rows() == 3);
  CHECK(f.tensor("w.4d").n_elements() == 120);
  CHECK(f.tensor("w.4d").shape_string() == "[2, 3, 4, 5]");
  CHECK(f.data_offset() + expected_offset == f.file_size());
}

TEST_CASE("PWRI magic round-trips", "[gguf]") {
  GgufWriter w(Magic::PWRI);
  w.set("powerinfer.sparse_threshold", Value(0.25f));
  w.add_tensor("blk.0.fc1.weight", DType::F16, {8, 4}, random_bytes(64, 9));
  const auto dir = tc::test::scratch_dir("gguf_pwri");
  w.write(dir / "m.powerinfer.gguf");
  CHECK(tc::test::read_file(dir / "m.powerinfer.gguf").substr(0, 4) == "PWRI");
  const auto f = GgufFile::open(dir / "m.powerinfer.gguf");
  CHECK(f.magic() == Magic::PWRI);
  CHECK(tc::gguf::magic_name(f.magic()) == "PWRI");
  CHECK(f.get_f64("powerinfer.sparse_threshold") == 0.25);
  CHECK(f.tensor("blk.0.fc1.weight", {8, 4}).dtype == DType::F16);
}

TEST_CASE("custom alignment is recorded and applied to the data section", "[gguf]") {
  for (uint32_t alignment : {1u, 64u, 4096u}) {
    GgufWriter w(Magic::GGUF, alignment);
    w.set("general.architecture", Value("llama"));
    w.add_tensor("a", DType::F32, {3}, random_bytes(12, 1));
    w.add_tensor("b", DType::Q8_0, {32}, random_bytes(34, 2));
    w.add_tensor("c", DType::F32, {5}, random_bytes(20, 3));
    const auto f = write_and_open(w, "gguf_align_" + std::to_string(alignment));
    INFO("alignment " << alignment);
    CHECK(f.alignment() == alignment);
    CHECK(f.data_offset() % alignment == 0);
    REQUIRE(f.has("general.alignment"));
    CHECK(f.metadata()[0].first == "general.alignment");
    CHECK(f.find("general.alignment")->type() == ValueType::UINT32);
    CHECK(f.get_u64("general.alignment") == alignment);
    const uint64_t pad12 = (12 + alignment - 1) / alignment * alignment;
    const uint64_t pad34 = (34 + alignment - 1) / alignment * alignment;
    CHECK(f.tensor("b").offset == pad12);
    CHECK(f.tensor("c").offset == pad12 + pad34);
  }
  GgufWriter w;  // default 32: no key written
  w.add_tensor("a", DType::F32, {3}, random_bytes(12, 1));
  const auto f = write_and_open(w, "gguf_align_default");
  CHECK(f.alignment() == 32);
  CHECK_FALSE(f.has("general.alignment"));
  CHECK(f.data_offset() % 32 == 0);
}

TEST_CASE("tensor data is a zero-copy view into the file mapping", "[gguf]") {
  GgufWriter w;
  const auto a = random_bytes(4 * 64, 21);
  const auto b = random_bytes(2 * 96, 22);
  w.add_tensor("a", DType::F32, {64}, a);
  w.add_tensor("b", DType::F16, {96}, b);
  const auto path = tc::test::scratch_dir("gguf_zero_copy") / "z.gguf";
  w.write(path);
  const auto f = GgufFile::open(path);
  const auto da = f.tensor_data(f.tensor("a"));
  const auto db = f.tensor_data(f.tensor("b"));
  CHECK(da.data() == f.tensor_data(f.tensor("a")).data());  // same bytes, not a fresh copy
  CHECK(db.data() - da.data() ==
        static_cast<std::ptrdiff_t>(f.tensor("b").offset - f.tensor("a").offset));

  // The pointer lies inside a mapping of this very file (/proc/self/maps).
  const auto canonical = std::filesystem::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  bool inside = false;
  while (std::getline(maps, line)) {
    if (line.size() < canonical.size() ||
        line.compare(line.size() - canonical.size(), canonical.size(), canonical) != 0) {
      continue;
    }
    std::istringstream ls(line);
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    ls >> std::hex >> lo >> dash >> hi;
    const auto p = reinterpret_cast<uintptr_t>(db.data());
    if (p >= lo && p + db.size() <= hi) inside = true;
  }
  CHECK(inside);
  CHECK(std::equal(db.begin(), db.end(), b.begin()));
}

TEST_CASE("from_bytes parses a private copy of the buffer", "[gguf]") {
  GgufWriter w;
  const auto a = random_bytes(4 * 16, 31);
  w.add_tensor("a", DType::F32, {16}, a);
  const auto path = tc::test::scratch_dir("gguf_from_bytes") / "m.gguf";
  w.write(path);
  std::string bytes = tc::test::read_file(path);
  const auto f = GgufFile::from_bytes(
      {reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "in-memory");
  CHECK(f.path() == "in-memory");
  const auto view = f.tensor_data(f.tensor("a"));
  CHECK(static_cast<const void*>(view.data()) != static_cast<const void*>(bytes.data() + f.data_offset()));
  std::fill(bytes.begin(), bytes.end(), '\x5a');  // the parsed copy is unaffected
  CHECK(std::equal(view.begin(), view.end(), a.begin()));
}

TEST_CASE("a moved GgufFile keeps its tensor views valid", "[gguf]") {
  GgufWriter w;
  const auto a = random_bytes(4 * 8, 41);
  w.add_tensor("a", DType::F32, {8}, a);
  auto f1 = write_and_open(w, "gguf_move");
  const auto* before = f1.tensor_data(f1.tensor("a")).data();
  GgufFile f2 = std::move(f1);
  const auto view = f2.tensor_data(f2.tensor("a"));
  CHECK(view.data() == before);
  CHECK(std::equal(view.begin(), view.end(), a.begin()));
}

TEST_CASE("GGUF version 2 files are read like version 3", "[gguf]") {
  GgufWriter w;
  w.set("general.architecture", Value("llama"));
  const auto a = random_bytes(4 * 8, 51);
  w.add_tensor("a", DType::F32, {8}, a);
  const auto path = tc::test::scratch_dir("gguf_v2") / "v2.gguf";
  w.write(path);
  std::string bytes = tc::test::read_file(path);
  REQUIRE(bytes[4] == 3);
  bytes[4] = 2;  // v2 and v3 share the little-endian layout
  tc::test::write_file(path, bytes);
  const auto f = GgufFile::open(path);
  CHECK(f.version() == 2);
  CHECK(f.get_string("general.architecture") == "llama");
  const auto d = f.tensor_data(f.tensor("a", {8}));
  CHECK(std::equal(d.begin(), d.end(), a.begin()));
}
