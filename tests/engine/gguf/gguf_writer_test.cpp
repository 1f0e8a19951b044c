// GgufWriter behaviour: argument checks, fillers called in order at write
// time, progress reports, atomic replacement, and Value's display form.
#include <catch2/catch.hpp>

#include <cstring>

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


}  // namespace

TEST_CASE("GgufWriter rejects bad tensors and settings", "[gguf][writer]") {
  CHECK_THROWS_AS(GgufWriter(Magic::GGUF, 0), std::invalid_argument);
  CHECK_THROWS_AS(GgufWriter(Magic::GGUF, 48), std::invalid_argument);
  GgufWriter w(Magic::GGUF, 64);
  w.add_tensor("a", DType::F32, {4}, random_bytes(16, 1));
  CHECK_THROWS_WITH(w.add_tensor("a", DType::F32, {4}, random_bytes(16, 1)),
                    Catch::Contains("'a': duplicate tensor name"));
  CHECK_THROWS_WITH(w.add_tensor("b", DType::F32, {1, 1, 1, 1, 1}, random_bytes(4, 1)),
                    Catch::Contains("5 dimensions"));
  CHECK_THROWS_WITH(w.add_tensor("b", DType::F32, {}, random_bytes(4, 1)),
                    Catch::Contains("0 dimensions"));
  CHECK_THROWS_WITH(w.add_tensor("b", DType::Q4_K, {128, 2}, random_bytes(144, 1)),
                    Catch::Contains("row length 128 is not a multiple of the q4_K block size 256"));
  CHECK_THROWS_WITH(w.add_tensor("b", DType::F32, {4, -1}, random_bytes(4, 1)),
                    Catch::Contains("negative dimension"));
  CHECK_THROWS_WITH(w.add_tensor("b", DType::F16, {4}, random_bytes(9, 1)),
                    Catch::Contains("9 bytes of data, expected 8"));
  CHECK_THROWS_WITH(w.add_tensor("b", static_cast<DType>(16), {4}, random_bytes(4, 1)),  // iq2_xxs
                    Catch::Contains("unsupported dtype"));
  CHECK_THROWS_WITH(w.set("general.alignment", Value(uint32_t{32})),
                    Catch::Contains("must be the writer's alignment 64"));
  CHECK_NOTHROW(w.set("general.alignment", Value(uint64_t{64})));
  Value deep = Value::i32_array({1});
  for (int d = 1; d < tc::gguf::kMaxArrayDepth; ++d) deep = Value::array(ValueType::ARRAY, {deep});
  CHECK_NOTHROW(w.set("deep16", deep));
  deep = Value::array(ValueType::ARRAY, {deep});
  CHECK_THROWS_WITH(w.set("deep17", deep), Catch::Contains("nested deeper than 16"));
  CHECK_THROWS_WITH(Value::array(ValueType::UINT8, {Value(uint16_t{1})}),
                    Catch::Contains("element 0 has type u16, expected u8"));
  // Failed add_tensor calls left nothing behind: only "a" is written.
  const auto path = tc::test::scratch_dir("gguf_writer_errors") / "m.gguf";
  w.write(path);
  const auto f = GgufFile::open(path);
  CHECK(f.tensors().size() == 1);
  CHECK(f.find("general.alignment")->type() == ValueType::UINT32);
  CHECK(f.get_u64("general.alignment") == 64);
  CHECK(f.metadata().size() == 2);  // general.alignment set explicitly, once
}

TEST_CASE("fillers run in order at write time and fill exactly the tensor", "[gguf][writer]") {
  GgufWriter w;
  std::vector<std::string> calls;
  const auto a = random_bytes(2 * 10, 5);
  const auto b = random_bytes(34 * 3, 6);
  w.add_tensor("a", DType::F16, {10}, [&](std::span<std::byte> out) {
    calls.push_back("a:" + std::to_string(out.size()));
    std::memcpy(out.data(), a.data(), out.size());
  });
  w.add_tensor("b", DType::Q8_0, {32, 3}, [&](std::span<std::byte> out) {
    calls.push_back("b:" + std::to_string(out.size()));
    std::memcpy(out.data(), b.data(), out.size());
  });
  CHECK(calls.empty());  // nothing is produced before write()
  const auto path = tc::test::scratch_dir("gguf_fillers") / "m.gguf";
  w.write(path);
  CHECK(calls == std::vector<std::string>{"a:20", "b:102"});
  const auto f = GgufFile::open(path);
  const auto db = f.tensor_data(f.tensor("b"));
  CHECK(std::equal(db.begin(), db.end(), b.begin(), b.end()));
  // Writing again calls the fillers again and gives the same bytes.
  const std::string first = tc::test::read_file(path);
  w.write(path);
  CHECK(calls.size() == 4);
  CHECK(tc::test::read_file(path) == first);
}

TEST_CASE("progress reports rise to the file size", "[gguf][writer]") {
  GgufWriter w(Magic::GGUF, 128);
  for (int i = 0; i < 5; ++i) {
    std::string name = "t";
    name += std::to_string(i);
    w.add_tensor(name, DType::F32, {100 + i}, random_bytes(4 * (100 + i), i + 1));
  }
  std::vector<std::pair<uint64_t, uint64_t>> reports;
  const auto path = tc::test::scratch_dir("gguf_progress") / "m.gguf";
  w.write(path, [&](uint64_t done, uint64_t total) { reports.emplace_back(done, total); });
  REQUIRE(reports.size() == 6);  // header + one per tensor
  const uint64_t size = std::filesystem::file_size(path);
  for (size_t i = 0; i < reports.size(); ++i) {
    CHECK(reports[i].second == size);
    if (i > 0) CHECK(reports[i].first > reports[i - 1].first);
  }
  CHECK(reports.back().first == size);
}

TEST_CASE("write() replaces the target atomically and cleans up on failure", "[gguf][writer]") {
  const auto dir = tc::test::scratch_dir("gguf_atomic");
  const auto path = dir / "m.gguf";
  GgufWriter good;
  good.set("v", Value(uint32_t{1}));
  good.add_tensor("a", DType::F32, {4}, random_bytes(16, 1));
  good.write(path);
  const std::string before = tc::test::read_file(path);
  CHECK_FALSE(std::filesystem::exists(dir / "m.gguf.tmp"));

  GgufWriter bad;
  bad.set("v", Value(uint32_t{2}));
  bad.add_tensor("a", DType::F32, {4}, [](std::span<std::byte>) {
    throw std::runtime_error("filler failed");
  });
  CHECK_THROWS_WITH(bad.write(path), "filler failed");
  CHECK_FALSE(std::filesystem::exists(dir / "m.gguf.tmp"));
  CHECK(tc::test::read_file(path) == before);  // the old file is untouched

  CHECK_THROWS_WITH(good.write(dir / "no_such_dir" / "m.gguf"),
                    Catch::Contains((dir / "no_such_dir" / "m.gguf.tmp").string()) &&
                        Catch::Contains("No such file or directory"));
}

TEST_CASE("a tensor larger than the write buffer round-trips", "[gguf][writer]") {
  // 12 MiB: more than one 8 MiB write chunk, so the direct-write path runs.
  const size_t n = 3u << 20;
  const auto values = tc::test::random_floats(n, 77);
  GgufWriter w;
  w.add_tensor("small", DType::F32, {3}, random_bytes(12, 1));
  w.add_tensor("big", DType::F32, {static_cast<int64_t>(n)}, [&](std::span<std::byte> out) {
    std::memcpy(out.data(), values.data(), out.size());
  });
  w.add_tensor("after", DType::F32, {5}, random_bytes(20, 2));
  const auto path = tc::test::scratch_dir("gguf_big") / "m.gguf";
  w.write(path);
  const auto f = GgufFile::open(path);
  const auto big = f.tensor_data(f.tensor("big"));
  REQUIRE(big.size() == n * 4);
  CHECK(std::memcmp(big.data(), values.data(), big.size()) == 0);
  const auto after = f.tensor_data(f.tensor("after"));
  const auto expected_after = random_bytes(20, 2);
  CHECK(std::equal(after.begin(), after.end(), expected_after.begin()));
}

TEST_CASE("Value display strings", "[gguf][value]") {
  CHECK(Value(uint32_t{42}).to_display_string() == "42");
  CHECK(Value(int8_t{-3}).to_display_string() == "-3");
  CHECK(Value(0.1f).to_display_string() == "0.1");
  CHECK(Value(true).to_display_string() == "true");
  CHECK(Value("a\"b\n").to_display_string() == "\"a\\\"b\\x0a\"");
  CHECK(Value::i32_array({1, 2, 3}).to_display_string() == "[1, 2, 3]");
  std::vector<int32_t> many(100);
  for (int i = 0; i < 100; ++i) many[i] = i * 3 + 1;
  CHECK(Value::i32_array(many).to_display_string(3) == "[1, 4, 7, ...] (100 i32 items)");
  CHECK(Value::array(ValueType::ARRAY, {Value::string_array({"x"}), Value::array(ValueType::UINT8, {})})
            .to_display_string() == "[[\"x\"], []]");
  CHECK(tc::gguf::value_type_name(ValueType::FLOAT64) == "f64");
}

TEST_CASE("Value numeric conversions respect ranges", "[gguf][value]") {
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  CHECK(Value(uint64_t{1} << 63).to_u64(u));
  CHECK_FALSE(Value(uint64_t{1} << 63).to_i64(i));
  CHECK(Value(int16_t{-7}).to_i64(i));
  CHECK(i == -7);
  CHECK_FALSE(Value(int16_t{-7}).to_u64(u));
  CHECK_FALSE(Value(true).to_i64(i));
  CHECK_FALSE(Value("3").to_f64(d));
  CHECK(Value(uint8_t{250}).to_f64(d));
  CHECK(d == 250.0);
  CHECK(Value(uint8_t{1}).is_integer());
  CHECK_FALSE(Value(1.0f).is_integer());
  CHECK(Value(1.0).is_float());
}
