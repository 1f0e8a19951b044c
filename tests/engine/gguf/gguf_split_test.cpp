// Split models (gguf_split.h): shard names taken apart and made, a file
// written as shards and opened from its first shard with every tensor's
// bytes as in the whole file, and each way a split can be broken refused
// with the file and key at fault (a later shard opened first, a missing or
// renamed shard, a wrong split.no, tensors that do not add up, a tensor in
// two shards, a shard parsed from memory). llama.cpp loads the same shards:
// tests/oracle/greedy_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_split.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::ModelLoadError;
using tc::gguf::Value;
using tc::kernels::DType;
using tc::test::random_bytes;

// Eight tensors of different sizes and a few keys.
fs::path whole_file(const fs::path& dir) {
  GgufWriter w;
  w.set("general.architecture", Value(std::string("llama")));
  w.set("llama.block_count", Value(uint32_t{4}));
  for (int i = 0; i < 8; ++i) {
    const int64_t n = 16 * (i + 1);
    w.add_tensor(std::string("t").append(std::to_string(i)), i % 2 == 0 ? DType::F32 : DType::F16, {n, 2},
                 random_bytes(static_cast<size_t>(n * 2 * (i % 2 == 0 ? 4 : 2)), static_cast<uint64_t>(i + 1)));
  }
  const fs::path path = dir / "whole.gguf";
  w.write(path);
  return path;
}

// A shard written by hand: the three split keys and the given tensors.
void write_shard(const fs::path& path, int no, int count, int n_tensors_key, const std::vector<std::string>& names) {
  GgufWriter w;
  w.set("split.no", Value(static_cast<uint16_t>(no)));
  w.set("split.count", Value(static_cast<uint16_t>(count)));
  w.set("split.tensors.count", Value(static_cast<int32_t>(n_tensors_key)));
  for (const auto& name : names) w.add_tensor(name, DType::F32, {4}, random_bytes(16, 7));
  w.write(path);
}

void check_refusal(const fs::path& path, const std::string& file, const std::string& needle) {
  try {
    (void)GgufFile::open(path);
    FAIL("opened " << path << ", expected an error mentioning: " << needle);
  } catch (const ModelLoadError& e) {
    CHECK_THAT(e.what(), Catch::Contains(file) && Catch::Contains(needle));
  }
}

}  // namespace

TEST_CASE("split shard names: taken apart and made as llama.cpp's", "[gguf][split]") {
  const auto n = tc::gguf::parse_split_name("/models/Qwen2.5-72B-Q4_K_M-00002-of-00003.gguf");
  REQUIRE(n);
  CHECK(n->prefix == fs::path("/models/Qwen2.5-72B-Q4_K_M"));
  CHECK(n->no == 2);
  CHECK(n->count == 3);
  CHECK(tc::gguf::split_shard_path(n->prefix, 1, 3) == fs::path("/models/Qwen2.5-72B-Q4_K_M-00001-of-00003.gguf"));
  for (const char* bad :
       {"m.gguf", "m-0001-of-0003.gguf", "m-00004-of-00003.gguf", "m-00000-of-00003.gguf", "m-00001-of-00003.bin",
        "-00001-of-00003.gguf", "m-0000a-of-00003.gguf", "m_00001-of-00003.gguf"}) {
    INFO(bad);
    CHECK_FALSE(tc::gguf::parse_split_name(bad));
  }
}

TEST_CASE("a file written as shards opens from its first shard with every tensor's bytes", "[gguf][split]") {
  const auto dir = tc::test::scratch_dir("gguf_split_roundtrip");
  const GgufFile whole = GgufFile::open(whole_file(dir));
  const auto paths = tc::gguf::write_split(whole, dir / "m", 3);
  REQUIRE(paths.size() == 3);
  CHECK(paths[0].filename() == "m-00001-of-00003.gguf");
  CHECK(paths[2].filename() == "m-00003-of-00003.gguf");

  const GgufFile split = GgufFile::open(paths[0]);
  CHECK(split.shard_count() == 3);
  CHECK(split.shard_path(2) == paths[2].string());
  CHECK(split.get_string("general.architecture") == "llama");
  CHECK(split.file_size() == fs::file_size(paths[0]) + fs::file_size(paths[1]) + fs::file_size(paths[2]));
  REQUIRE(split.tensors().size() == whole.tensors().size());
  std::vector<int> per_shard(3, 0);
  for (size_t i = 0; i < whole.tensors().size(); ++i) {
    const auto& a = whole.tensors()[i];
    const auto& b = split.tensors()[i];
    INFO(a.name);
    CHECK(b.name == a.name);
    CHECK(b.dtype == a.dtype);
    CHECK(b.ne == a.ne);
    const auto da = whole.tensor_data(a);
    const auto db = split.tensor_data(b);
    CHECK(std::equal(da.begin(), da.end(), db.begin(), db.end()));
    ++per_shard.at(b.shard);
  }
  for (int n : per_shard) CHECK(n >= 1);
  // The split keys, as gguf-split writes them.
  CHECK(split.find("split.no")->type() == tc::gguf::ValueType::UINT16);
  CHECK(split.get_u64("split.count") == 3);
  CHECK(split.get_u64("split.tensors.count") == 8);
  CHECK_THROWS_WITH(tc::gguf::write_split(split, dir / "again", 2), Catch::Contains("already split"));
  CHECK_THROWS_WITH(tc::gguf::write_split(whole, dir / "many", 9), Catch::Contains("8 tensors into 9 shards"));
}

TEST_CASE("a broken split is refused naming the file and what is wrong", "[gguf][split]") {
  const auto dir = tc::test::scratch_dir("gguf_split_broken");
  const GgufFile whole = GgufFile::open(whole_file(dir));
  const auto paths = tc::gguf::write_split(whole, dir / "m", 3);

  // A later shard opened first.
  check_refusal(paths[1], "m-00002-of-00003.gguf", "shard 2 of 3 of a split model; open the first shard, m-00001-of-00003.gguf");
  // The first shard under another name: its siblings cannot be found.
  fs::copy_file(paths[0], dir / "renamed.gguf");
  check_refusal(dir / "renamed.gguf", "renamed.gguf", "is not named PREFIX-00001-of-00003.gguf");
  // A missing shard.
  fs::rename(paths[2], dir / "away.gguf");
  check_refusal(paths[0], "m-00001-of-00003.gguf", "shard 3 of 3 is missing: expected " + paths[2].string());
  fs::rename(dir / "away.gguf", paths[2]);
  CHECK_NOTHROW(GgufFile::open(paths[0]));

  // Hand-made shards: a wrong split.no, a count that does not add up, a tensor twice.
  write_shard(dir / "a-00001-of-00002.gguf", 0, 2, 2, {"x"});
  write_shard(dir / "a-00002-of-00002.gguf", 0, 2, 2, {"y"});
  check_refusal(dir / "a-00001-of-00002.gguf", "a-00002-of-00002.gguf", "'split.no': is 0, expected 1");
  write_shard(dir / "a-00002-of-00002.gguf", 1, 2, 2, {"y", "z"});
  check_refusal(dir / "a-00001-of-00002.gguf", "a-00001-of-00002.gguf",
                "'split.tensors.count': is 2, but the 2 shards hold 3 tensors");
  write_shard(dir / "a-00002-of-00002.gguf", 1, 2, 2, {"x"});
  check_refusal(dir / "a-00001-of-00002.gguf", "a-00002-of-00002.gguf", "is also in an earlier shard");
  write_shard(dir / "a-00002-of-00002.gguf", 1, 2, 2, {"y"});
  CHECK(GgufFile::open(dir / "a-00001-of-00002.gguf").tensors().size() == 2);

  // A shard parsed from memory cannot reach its siblings.
  const std::string bytes = tc::test::read_file(paths[0]);
  CHECK_THROWS_WITH(GgufFile::from_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), "mem"),
                    Catch::Contains("'split.count'") && Catch::Contains("shard of a split model"));
}
