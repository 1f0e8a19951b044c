// The .generated.gpuidx file: round trip; a file laid out byte by byte as
// PowerInfer's export_split writes it; every malformed case rejected with
// a ModelLoadError naming the file and the key or tensor; truncations and
// corrupted bytes never crash.
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"
#include "engine/sparse/gpu_index.h"
#include "tests/engine/gguf_edit.h"
#include "tests/test_util.h"

using tc::gguf::ModelLoadError;
using tc::gguf::Value;
using tc::kernels::DType;
using tc::sparse::GpuIndex;
using tc::sparse::read_gpu_index;
using tc::test::GgufEdit;

namespace {

GpuIndex sample_index() {
  GpuIndex g;
  g.vram_capacity = 123456789;
  g.n_ff = 40;
  g.hot = {{0, 3, 17, 39}, {}, {}};
  for (int32_t i = 0; i < 40; ++i) g.hot[2].push_back(i);
  for (int32_t i = 5; i < 25; i += 2) g.hot[1].push_back(i);
  g.model_tensor_hash = 0xfeedfacecafebeefull;
  g.notes = {{"vram_budget", 999}, {"n_ctx", 4096}};
  return g;
}

// Little-endian GGUF bytes, built by hand.
struct Bytes {
  std::string s;
  template <typename T>
  void put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& v) {
    put<uint64_t>(v.size());
    s += v;
  }
  void pad(size_t alignment) {
    while (s.size() % alignment != 0) s.push_back('\0');
  }
};

// What powerinfer-py's export_split produces: gguf-py's GGUFWriter output
// (KVs general.architecture, generic.gpu_index.block_count u32,
// split.vram_capacity u64; per layer gpu_idx then gpu_bucket, i32, data
// aligned to 32) with the first 8 bytes overwritten by "PWRI" and version 3.
std::string powerinfer_file(const std::vector<std::vector<int32_t>>& buckets, int64_t n_ff, uint64_t capacity) {
  Bytes b;
  b.s = "GGUF";
  b.put<uint32_t>(3);
  b.put<uint64_t>(2 * buckets.size());  // tensors
  b.put<uint64_t>(3);                   // KVs
  b.str("general.architecture");
  b.put<uint32_t>(8);  // string
  b.str("generic.gpu_index");
  b.str("generic.gpu_index.block_count");
  b.put<uint32_t>(4);  // u32
  b.put<uint32_t>(static_cast<uint32_t>(buckets.size()));
  b.str("split.vram_capacity");
  b.put<uint32_t>(10);  // u64
  b.put<uint64_t>(capacity);
  std::vector<std::vector<int32_t>> data;
  for (const auto& bucket : buckets) {
    std::vector<int32_t> mask(static_cast<size_t>(n_ff), 0);
    for (const int32_t i : bucket) mask[static_cast<size_t>(i)] = 1;
    data.push_back(mask);
    data.push_back(bucket);
  }
  uint64_t offset = 0;
  for (size_t t = 0; t < data.size(); ++t) {
    b.str("blk." + std::to_string(t / 2) + (t % 2 == 0 ? ".gpu_idx" : ".gpu_bucket"));
    b.put<uint32_t>(1);  // n_dims
    b.put<uint64_t>(data[t].size());
    b.put<uint32_t>(26);  // GGML_TYPE_I32
    b.put<uint64_t>(offset);
    offset += (data[t].size() * 4 + 31) / 32 * 32;
  }
  b.pad(32);
  for (const auto& d : data) {
    b.s.append(reinterpret_cast<const char*>(d.data()), d.size() * 4);
    b.pad(32);
  }
  std::memcpy(b.s.data(), "PWRI", 4);
  return b.s;
}

// Expects read_gpu_index to throw a ModelLoadError naming the file, `item`
// and `problem`.
void expect_rejected(const std::filesystem::path& path, int64_t n_layer, int64_t n_ff, const std::string& item,
                     const std::string& problem) {
  tc::test::expect_load_error([&] { read_gpu_index(path, n_layer, n_ff); }, path, item, problem);
}

}  // namespace

TEST_CASE("placement: a gpu index round-trips through its PWRI file", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("gpuidx_roundtrip");
  const auto g = sample_index();
  tc::sparse::write_gpu_index(g, dir / "m.generated.gpuidx");
  const auto r = read_gpu_index(dir / "m.generated.gpuidx", 3, 40, g.model_tensor_hash);
  CHECK(r.vram_capacity == g.vram_capacity);
  CHECK(r.n_ff == 40);
  CHECK(r.hot == g.hot);
  CHECK(r.model_tensor_hash == g.model_tensor_hash);

  // PowerInfer's container: magic PWRI, its keys, mask then bucket per layer.
  CHECK(tc::test::read_file(dir / "m.generated.gpuidx").substr(0, 4) == "PWRI");
  const auto f = tc::gguf::GgufFile::open(dir / "m.generated.gpuidx");
  CHECK(f.get_string("general.architecture") == "generic.gpu_index");
  CHECK(f.get_u64("generic.gpu_index.block_count") == 3);
  CHECK(f.get_u64("split.vram_capacity") == 123456789);
  CHECK(f.get_u64("thermocline.placement.n_ctx") == 4096);
  REQUIRE(f.tensors().size() == 6);
  CHECK(f.tensors()[0].name == "blk.0.gpu_idx");
  CHECK(f.tensors()[1].name == "blk.0.gpu_bucket");
  const auto& mask = f.tensor("blk.0.gpu_idx", {40});
  CHECK(mask.dtype == DType::I32);
  std::vector<int32_t> m(40);
  std::memcpy(m.data(), f.tensor_data(mask).data(), 160);
  CHECK(m[0] == 1);
  CHECK(m[1] == 0);
  CHECK(m[39] == 1);
  CHECK(f.tensor("blk.1.gpu_bucket", {10}).dtype == DType::I32);
  CHECK(f.tensor("blk.2.gpu_bucket", {40}).dtype == DType::I32);
}

TEST_CASE("placement: a gpuidx file in PowerInfer's own layout is read", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("gpuidx_powerinfer");
  const std::vector<std::vector<int32_t>> buckets = {{1, 2, 30}, {}, {0, 5, 6, 7, 63}};
  tc::test::write_file(dir / "pi.gpuidx", powerinfer_file(buckets, 64, 5187846144ull));
  const auto r = read_gpu_index(dir / "pi.gpuidx", 3, 64);
  CHECK(r.hot == buckets);
  CHECK(r.vram_capacity == 5187846144ull);
  CHECK_FALSE(r.model_tensor_hash.has_value());
  // The same plan written by us has the same tensors and values.
  GpuIndex ours;
  ours.vram_capacity = 5187846144ull;
  ours.n_ff = 64;
  ours.hot = buckets;
  tc::sparse::write_gpu_index(ours, dir / "ours.gpuidx");
  const auto theirs = tc::gguf::GgufFile::open(dir / "pi.gpuidx");
  const auto mine = tc::gguf::GgufFile::open(dir / "ours.gpuidx");
  REQUIRE(theirs.tensors().size() == mine.tensors().size());
  for (size_t i = 0; i < mine.tensors().size(); ++i) {
    const auto& a = theirs.tensors()[i];
    const auto& b = mine.tensors()[i];
    CHECK(a.name == b.name);
    CHECK(a.ne == b.ne);
    const auto da = theirs.tensor_data(a);
    const auto db = mine.tensor_data(b);
    CHECK(std::equal(da.begin(), da.end(), db.begin(), db.end()));
  }
  // Against a model of another shape.
  expect_rejected(dir / "pi.gpuidx", 3, 65, "blk.0.gpu_idx", "expected i32 [65] (n_ff)");
  expect_rejected(dir / "pi.gpuidx", 4, 64, "generic.gpu_index.block_count", "n_layer = 4");
  expect_rejected(dir / "pi.gpuidx", 2, 64, "generic.gpu_index.block_count", "n_layer = 2");
}

TEST_CASE("placement: every malformed gpuidx file is rejected, naming the key or tensor", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("gpuidx_malformed");
  const auto valid = dir / "valid.gpuidx";
  tc::sparse::write_gpu_index(sample_index(), valid);
  REQUIRE_NOTHROW(read_gpu_index(valid, 3, 40));
  const auto bad = dir / "bad.gpuidx";
  auto with = [&](const std::function<void(GgufEdit&)>& edit) {
    auto raw = GgufEdit::from(valid, tc::gguf::Magic::PWRI);
    edit(raw);
    raw.write(bad);
    return bad;
  };

  SECTION("not a gpuidx file") {
    expect_rejected(with([](GgufEdit& r) { r.set("general.architecture", Value(std::string("llama"))); }),
                    3, 40, "general.architecture", "not a gpuidx placement file");
  }
  SECTION("keys missing or wrong") {
    expect_rejected(with([](GgufEdit& r) { r.erase_key("split.vram_capacity"); }), 3, 40, "split.vram_capacity",
                    "");
    expect_rejected(with([](GgufEdit& r) { r.set("split.vram_capacity", Value(std::string("lots"))); }), 3, 40,
                    "split.vram_capacity", "type");
    expect_rejected(with([](GgufEdit& r) { r.set("generic.gpu_index.block_count", Value(uint32_t{2})); }), 3, 40,
                    "generic.gpu_index.block_count", "is 2");
  }
  SECTION("tensors missing, extra, or of the wrong type or shape") {
    expect_rejected(with([](GgufEdit& r) { r.erase_tensor("blk.1.gpu_bucket"); }), 3, 40, "blk.1.gpu_bucket",
                    "is missing");
    expect_rejected(with([](GgufEdit& r) { r.erase_tensor("blk.2.gpu_idx"); }), 3, 40, "blk.2.gpu_idx",
                    "is missing");
    // A third layer for a 2-layer model (block_count, which would say so first, removed).
    expect_rejected(with([](GgufEdit& r) { r.erase_key("generic.gpu_index.block_count"); }), 2, 40,
                    "blk.2.gpu_idx", "not expected");
    expect_rejected(valid, 2, 40, "generic.gpu_index.block_count", "is 3 but the model has n_layer = 2");
    expect_rejected(with([](GgufEdit& r) {
                      r.tensor("blk.0.gpu_idx").dtype = DType::F32;
                    }),
                    3, 40, "blk.0.gpu_idx", "is f32 [40], expected i32 [40]");
    expect_rejected(with([](GgufEdit& r) { r.replace("blk.0.gpu_idx", std::vector<int32_t>(41, 0)); }), 3, 40,
                    "blk.0.gpu_idx", "expected i32 [40]");
  }
  SECTION("mask and bucket values") {
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_idx")[5] = 2; }), 3, 40, "blk.0.gpu_idx",
                    "neuron 5 has 2, expected 0 (CPU) or 1 (GPU)");
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_bucket")[1] = -3; }), 3, 40, "blk.0.gpu_bucket",
                    "entry 1 is -3, outside [0, n_ff = 40)");
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_bucket")[3] = 40; }), 3, 40, "blk.0.gpu_bucket",
                    "outside [0, n_ff = 40)");
    expect_rejected(with([](GgufEdit& r) {
                      const auto bucket = r.values<int32_t>("blk.0.gpu_bucket");
                      std::swap(bucket[1], bucket[2]);
                    }),
                    3, 40, "blk.0.gpu_bucket", "strictly ascending");
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_bucket")[2] = 3; }), 3, 40, "blk.0.gpu_bucket",
                    "strictly ascending");
    // The mask marks a neuron the bucket does not list, and the other way round.
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_idx")[9] = 1; }), 3, 40, "blk.0.gpu_bucket",
                    "lists 4 neurons but blk.0.gpu_idx marks 5");
    expect_rejected(with([](GgufEdit& r) { r.values<int32_t>("blk.0.gpu_idx")[17] = 0; }), 3, 40, "blk.0.gpu_bucket",
                    "lists neuron 17 but blk.0.gpu_idx marks it 0");
    expect_rejected(with([](GgufEdit& r) { r.replace("blk.1.gpu_bucket", std::vector<int32_t>{}); }), 3, 40, "blk.1.gpu_bucket",
                    "lists 0 neurons but blk.1.gpu_idx marks 10");
  }
  SECTION("the model's fingerprint") {
    try {
      read_gpu_index(valid, 3, 40, 12345);
      FAIL("a plan for another model was accepted");
    } catch (const ModelLoadError& e) {
      CHECK_THAT(e.what(), Catch::Contains(valid.string()) &&
                               Catch::Contains("thermocline.placement.model.tensor_hash") &&
                               Catch::Contains("another model"));
    }
  }
}

TEST_CASE("placement: truncated and corrupted gpuidx files are errors, never crashes", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("gpuidx_corrupt");
  const auto valid = dir / "valid.gpuidx";
  tc::sparse::write_gpu_index(sample_index(), valid);
  const std::string bytes = tc::test::read_file(valid);
  const auto bad = dir / "bad.gpuidx";
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("first " << n << " of " << bytes.size() << " bytes");
    tc::test::write_file(bad, bytes.substr(0, n));
    CHECK_THROWS_AS(read_gpu_index(bad, 3, 40), ModelLoadError);
  }
  // Random byte flips: either still a consistent plan or a ModelLoadError.
  std::mt19937_64 rng(77);
  int rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string corrupt = bytes;
    for (int k = 0; k < 3; ++k) corrupt[rng() % corrupt.size()] = static_cast<char>(rng() & 0xff);
    tc::test::write_file(bad, corrupt);
    try {
      const auto r = read_gpu_index(bad, 3, 40);
      for (const auto& layer : r.hot) CHECK(std::is_sorted(layer.begin(), layer.end()));
    } catch (const ModelLoadError&) {
      ++rejected;
    }
  }
  CHECK(rejected > 100);
}
