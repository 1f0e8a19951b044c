// The activation statistics file: round trip, every malformed case rejected
// with a ModelLoadError naming the file and the key or tensor, the writer's
// own checks, and the check against the model (n_ff, fingerprint).
#include <catch2/catch.hpp>

#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "profiler/make_model.h"
#include "tests/engine/gguf_edit.h"
#include "tests/test_util.h"

using tc::gguf::ModelLoadError;
using tc::gguf::Value;
using tc::kernels::DType;
using tc::sparse::ActivationStats;
using tc::sparse::stats_key;
using tc::test::GgufEdit;

namespace {

// Seeded counts in [0, n_tokens], never all zero.
ActivationStats sample_stats(int64_t n_layer, int64_t n_ff, uint64_t n_tokens, uint64_t seed) {
  ActivationStats s;
  s.model = {"tiny", "reglu", n_layer, 64, n_ff, 123456, 0x1234abcd5678ef90ull};
  s.rule = tc::sparse::FiringRule::GatePositive;
  s.n_tokens = n_tokens;
  s.n_ctx = 128;
  s.corpus = "corpus.txt";
  s.thresholds.assign(static_cast<size_t>(n_layer), 0.0f);
  std::mt19937_64 rng(seed);
  for (int64_t l = 0; l < n_layer; ++l) {
    std::vector<int32_t> c(static_cast<size_t>(n_ff));
    for (auto& v : c) v = static_cast<int32_t>(rng() % (n_tokens + 1));
    c[0] = static_cast<int32_t>(n_tokens);
    s.fire_counts.push_back(std::move(c));
  }
  return s;
}

std::filesystem::path write_valid(const std::filesystem::path& dir) {
  const auto path = dir / "valid.stats.gguf";
  tc::sparse::write_activation_stats(sample_stats(3, 40, 1000, 7), path);
  return path;
}

// Expects read_activation_stats(path) to throw a ModelLoadError naming the
// file and `item` and saying `problem`.
void expect_rejected(const std::filesystem::path& path, const std::string& item, const std::string& problem) {
  tc::test::expect_load_error([&] { tc::sparse::read_activation_stats(path); }, path, item, problem);
}

std::filesystem::path make_tiny_model(const std::string& name, int64_t n_ff, uint64_t seed) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("stats_" + name) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 32;
  o.n_layer = 2;
  o.n_ff = n_ff;
  o.n_head = 2;
  o.n_head_kv = 1;
  o.weight_type = "f16";
  o.ffn_form = tc::model::FfnForm::ReGLU;
  o.seed = seed;
  tc::profiler::make_model(o);
  return o.output;
}

}  // namespace

TEST_CASE("activation stats round-trip through the file", "[sparse][stats]") {
  const auto dir = tc::test::scratch_dir("stats_roundtrip");
  auto s = sample_stats(3, 40, 1000, 1);
  s.rule = tc::sparse::FiringRule::AbsAboveThreshold;
  s.fire_fraction = 0.4f;
  s.thresholds = {0.25f, 0.5f, 1.5f};
  tc::sparse::write_activation_stats(s, dir / "s.gguf");
  const auto r = tc::sparse::read_activation_stats(dir / "s.gguf");
  CHECK(r.model.name == s.model.name);
  CHECK(r.model.ffn_form == s.model.ffn_form);
  CHECK(r.model.n_layer == 3);
  CHECK(r.model.n_embd == 64);
  CHECK(r.model.n_ff == 40);
  CHECK(r.model.file_size == s.model.file_size);
  CHECK(r.model.tensor_hash == s.model.tensor_hash);
  CHECK(r.rule == s.rule);
  CHECK(r.n_tokens == 1000);
  CHECK(r.n_ctx == 128);
  CHECK(r.corpus == "corpus.txt");
  CHECK(r.fire_fraction == 0.4f);
  CHECK(r.thresholds == s.thresholds);
  CHECK(r.fire_counts == s.fire_counts);

  // The container: our architecture, one i32 [n_ff] tensor per layer.
  const auto f = tc::gguf::GgufFile::open(dir / "s.gguf");
  CHECK(f.get_string("general.architecture") == "thermocline.activation_stats");
  CHECK(f.get_string(stats_key("firing")) == "|act|>threshold");
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.tensor("blk.2.ffn_fire_count", {40}).dtype == DType::I32);
}

TEST_CASE("every malformed stats file is rejected, naming the key or tensor", "[sparse][stats]") {
  const auto dir = tc::test::scratch_dir("stats_malformed");
  const auto valid = write_valid(dir);
  REQUIRE_NOTHROW(tc::sparse::read_activation_stats(valid));
  const auto bad = dir / "bad.stats.gguf";
  auto with = [&](const std::function<void(GgufEdit&)>& edit) {
    auto raw = GgufEdit::from(valid);
    edit(raw);
    raw.write(bad);
    return bad;
  };

  SECTION("truncated") {
    const std::string bytes = tc::test::read_file(valid);
    tc::test::write_file(bad, bytes.substr(0, bytes.size() - 60));
    expect_rejected(bad, "blk.2.ffn_fire_count", "runs past the end of the file");
    tc::test::write_file(bad, bytes.substr(0, 40));
    CHECK_THROWS_AS(tc::sparse::read_activation_stats(bad), ModelLoadError);
  }
  SECTION("not a stats file") {
    expect_rejected(with([](GgufEdit& r) { r.set("general.architecture", Value(std::string("llama"))); }),
                    "general.architecture", "not an activation statistics file");
  }
  SECTION("another version") {
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("version"), Value(uint32_t{2})); }),
                    stats_key("version"), "reads version 1");
  }
  SECTION("a key missing or of the wrong type") {
    for (const char* key : {"n_tokens", "model.n_ff", "model.tensor_hash", "firing", "thresholds", "corpus"}) {
      INFO(key);
      expect_rejected(with([&](GgufEdit& r) { r.erase_key(stats_key(key)); }), stats_key(key), "");
    }
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("n_tokens"), Value(std::string("many"))); }),
                    stats_key("n_tokens"), "type");
  }
  SECTION("values out of range") {
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("n_tokens"), Value(uint64_t{0})); }),
                    stats_key("n_tokens"), "outside");
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("model.n_layer"), Value(uint32_t{0})); }),
                    stats_key("model.n_layer"), "outside");
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("firing"), Value(std::string("sometimes"))); }),
                    stats_key("firing"), "not one of");
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("fire_fraction"), Value(1.5f)); }),
                    stats_key("fire_fraction"), "outside [0, 1]");
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("thresholds"), Value::f32_array({0, 0})); }),
                    stats_key("thresholds"), "expected n_layer = 3");
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("thresholds"), Value::f32_array({0, -1, 0})); }),
                    stats_key("thresholds"), "negative");
  }
  SECTION("wrong n_ff: the key and the tensors disagree") {
    expect_rejected(with([](GgufEdit& r) { r.set(stats_key("model.n_ff"), Value(uint32_t{41})); }),
                    "blk.0.ffn_fire_count", "expected i32 [41] (n_ff)");
  }
  SECTION("a tensor of the wrong dtype or rank") {
    expect_rejected(with([](GgufEdit& r) { r.tensors[1].dtype = DType::F32; }), "blk.1.ffn_fire_count",
                    "is f32 [40], expected i32 [40]");
    expect_rejected(with([](GgufEdit& r) {
                      r.tensors[2].ne = {20, 2};
                    }),
                    "blk.2.ffn_fire_count", "expected i32 [40]");
  }
  SECTION("a layer missing, an extra tensor") {
    expect_rejected(with([](GgufEdit& r) { r.tensors.pop_back(); }), "blk.2.ffn_fire_count", "missing");
    expect_rejected(with([](GgufEdit& r) {
                      r.tensors.push_back({"blk.3.ffn_fire_count", DType::I32, {40}, std::vector<std::byte>(160)});
                    }),
                    "blk.3.ffn_fire_count", "not expected");
  }
  SECTION("a count above n_tokens or negative") {
    for (const int32_t v : {1001, -1}) {
      INFO(v);
      expect_rejected(with([v](GgufEdit& r) { r.values<int32_t>("blk.1.ffn_fire_count")[7] = v; }),
                      "blk.1.ffn_fire_count", "neuron 7 has count " + std::to_string(v));
    }
  }
}

TEST_CASE("the writer refuses inconsistent stats", "[sparse][stats]") {
  const auto path = tc::test::scratch_dir("stats_writer") / "s.gguf";
  auto s = sample_stats(2, 10, 50, 3);
  s.fire_counts[1][3] = 51;
  CHECK_THROWS_WITH(tc::sparse::write_activation_stats(s, path), Catch::Contains("outside [0, n_tokens]"));
  s = sample_stats(2, 10, 50, 3);
  s.fire_counts[1].pop_back();
  CHECK_THROWS_AS(tc::sparse::write_activation_stats(s, path), std::invalid_argument);
  s = sample_stats(2, 10, 50, 3);
  s.thresholds.pop_back();
  CHECK_THROWS_WITH(tc::sparse::write_activation_stats(s, path), Catch::Contains("thresholds"));
  s = sample_stats(2, 10, 50, 3);
  s.model.n_ff = 11;
  CHECK_THROWS_WITH(tc::sparse::write_activation_stats(s, path), Catch::Contains("n_ff 11"));
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("stats are checked against the model they are used with", "[sparse][stats]") {
  const auto a_path = make_tiny_model("a", 96, 1);
  const auto b_path = make_tiny_model("b", 96, 2);   // same shapes, other weights
  const auto c_path = make_tiny_model("c", 128, 1);  // other n_ff
  const auto a = tc::model::load_model(a_path);
  const auto b = tc::model::load_model(b_path);
  const auto c = tc::model::load_model(c_path);

  const auto fa = tc::sparse::fingerprint_model(a->file, a->spec);
  CHECK(fa.n_layer == 2);
  CHECK(fa.n_ff == 96);
  CHECK(fa.ffn_form == "reglu");
  CHECK(fa.file_size == std::filesystem::file_size(a_path));
  CHECK(fa.tensor_hash == tc::sparse::fingerprint_model(tc::gguf::GgufFile::open(a_path), a->spec).tensor_hash);
  CHECK(fa.tensor_hash != tc::sparse::fingerprint_model(b->file, b->spec).tensor_hash);

  auto s = sample_stats(2, 96, 100, 4);
  s.model = fa;
  const auto dir = tc::test::scratch_dir("stats_match");
  tc::sparse::write_activation_stats(s, dir / "a.stats.gguf");
  const auto read = tc::sparse::read_activation_stats(dir / "a.stats.gguf");
  const std::string stats_path = (dir / "a.stats.gguf").string();
  CHECK_NOTHROW(tc::sparse::check_stats_match_model(read, stats_path, a->file, a->spec));
  try {
    tc::sparse::check_stats_match_model(read, stats_path, b->file, b->spec);
    FAIL("stats of model a accepted for model b");
  } catch (const ModelLoadError& e) {
    const std::string what = e.what();
    CHECK(what.find(stats_path) != std::string::npos);
    CHECK(what.find(stats_key("model.tensor_hash")) != std::string::npos);
    CHECK(what.find(b_path.string()) != std::string::npos);
    CHECK(what.find("another model") != std::string::npos);
  }
  CHECK_THROWS_WITH(tc::sparse::check_stats_match_model(read, stats_path, c->file, c->spec),
                    Catch::Contains(stats_key("model.n_ff")) && Catch::Contains("is 96") &&
                        Catch::Contains("has 128"));
  // A model file is not a stats file.
  CHECK_THROWS_WITH(tc::sparse::read_activation_stats(a_path),
                    Catch::Contains("general.architecture") && Catch::Contains("not an activation statistics file"));
}
