// TEAL: calibration on generated SwiGLU models reaches its target sparsity
// (and nearly so on held-out tokens), target 0 changes nothing, the
// sparsifier against a plain loop, the sampler's independence of how tokens
// are batched, thresholds_for, the stats-file section (round trip, every
// corrupt case rejected by name), and the --sparsity flag's parser
// (config/sparsity_setting.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>

#include "config/sparsity_setting.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/teal.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "profiler/teal_calibration.h"
#include "tests/engine/gguf_edit.h"
#include "tests/test_util.h"

using tc::gguf::ModelLoadError;
using tc::gguf::Value;
using tc::kernels::DType;
using tc::model::kLinearInputCount;
using tc::model::LinearInput;
using tc::sparse::TealCalibration;
using tc::sparse::TealSparsifier;
using tc::text::TokenId;

namespace {

std::unique_ptr<tc::model::LoadedModel> make_swiglu_model(const std::string& name, uint64_t seed) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("teal_" + name) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f32";
  o.ffn_form = tc::model::FfnForm::SwiGLU;
  o.seed = seed;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

std::vector<TokenId> random_tokens(const tc::model::LoadedModel& m, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out{m.tokenizer->vocab().bos_id};
  while (out.size() < n) out.push_back(static_cast<TokenId>(rng() % static_cast<uint64_t>(m.spec.n_vocab)));
  return out;
}

std::unique_ptr<tc::kernels::Backend> cpu() {
  return tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
}

// Counts, per layer and site, the entries a sparsifier would zero in the
// dense inputs (it sparsifies a copy): the calibration's own coverage.
class Coverage final : public tc::model::ForwardObserver {
 public:
  explicit Coverage(TealSparsifier& sparsifier) : sparsifier_(sparsifier) {}
  void on_ffn(int64_t, int64_t, const float*, const float*, const float*) override {}
  void on_linear_input(int64_t layer, LinearInput site, int64_t n_tokens, int64_t n, const float* x) override {
    copy_.assign(x, x + n_tokens * n);
    sparsifier_.sparsify(layer, site, n_tokens, n, copy_.data());
  }

 private:
  TealSparsifier& sparsifier_;
  std::vector<float> copy_;  // f32 [n_tokens, n]
};

// Runs `tokens` through the model as perplexity() does, the sparsifier
// either rewriting the inputs or (dense) only counting.
void run_teal(const tc::model::LoadedModel& m, tc::kernels::Backend& backend, const std::vector<TokenId>& tokens,
              int64_t n_ctx, TealSparsifier& sparsifier, bool dense) {
  tc::model::LlamaModel llama(m, backend);
  tc::runtime::KvCache kv(backend, m.spec, 1, n_ctx);
  Coverage coverage(sparsifier);
  if (dense) {
    llama.set_observer(&coverage);
  } else {
    llama.set_input_sparsifier(&sparsifier);
  }
  sparsifier.reset_counts();
  tc::runtime::perplexity(llama, kv, tokens, m.tokenizer->vocab().bos_id, {n_ctx, n_ctx, 0});
}

// A valid calibration: per layer and site, sorted seeded magnitudes.
TealCalibration sample_calibration(int64_t n_layer, uint64_t seed) {
  TealCalibration c;
  c.levels = tc::sparse::teal_default_levels();
  c.n_layer = n_layer;
  c.n_tokens = 4096;
  const auto values = tc::test::random_floats(static_cast<size_t>(n_layer * kLinearInputCount) * c.levels.size(), seed);
  for (size_t r = 0; r < values.size(); r += c.levels.size()) {
    std::vector<float> row;
    for (size_t j = 0; j < c.levels.size(); ++j) row.push_back(std::fabs(values[r + j]));
    std::sort(row.begin(), row.end());
    c.thresholds.insert(c.thresholds.end(), row.begin(), row.end());
  }
  return c;
}

tc::sparse::ActivationStats sample_stats(int64_t n_layer, int64_t n_ff) {
  tc::sparse::ActivationStats s;
  s.model = {"tiny", "swiglu", n_layer, 64, n_ff, 1000, 0x1234};
  s.rule = tc::sparse::FiringRule::AbsAboveThreshold;
  s.n_tokens = 100;
  s.fire_fraction = 0.5f;
  s.thresholds.assign(static_cast<size_t>(n_layer), 0.5f);
  s.fire_counts.assign(static_cast<size_t>(n_layer), std::vector<int32_t>(static_cast<size_t>(n_ff), 7));
  return s;
}

std::vector<std::byte> bytes_of(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The pieces of a TEAL section, editable, written by GgufWriter as they are.
struct RawTeal {
  std::vector<std::pair<std::string, Value>> keys;
  struct T {
    std::string name;
    DType dtype;
    std::vector<int64_t> ne;
    std::vector<float> values;
  };
  std::vector<T> tensors;

  static RawTeal from(const TealCalibration& c, int64_t stats_n_layer) {
    RawTeal r;
    r.keys = {{tc::sparse::teal_key("version"), Value(uint32_t{1})},
              {tc::sparse::teal_key("n_tokens"), Value(c.n_tokens)}};
    if (stats_n_layer > 0) r.keys.emplace_back(tc::sparse::stats_key("model.n_layer"), Value(uint32_t(stats_n_layer)));
    r.tensors = {{"teal.levels", DType::F32, {c.n_levels()}, c.levels},
                 {"teal.thresholds", DType::F32, {c.n_levels(), kLinearInputCount, c.n_layer}, c.thresholds}};
    return r;
  }
  T& tensor(const std::string& name) {
    for (auto& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::logic_error("no tensor " + name);
  }
  void write(const std::filesystem::path& path) const {
    tc::gguf::GgufWriter w;
    for (const auto& [k, v] : keys) w.set(k, v);
    for (const auto& t : tensors) {
      std::vector<std::byte> b = bytes_of(t.values);
      if (t.dtype == DType::F16) b.resize(b.size() / 2);
      w.add_tensor(t.name, t.dtype, t.ne, std::move(b));
    }
    w.write(path);
  }
};

void expect_rejected(const std::filesystem::path& path, const std::string& item, const std::string& problem) {
  tc::test::expect_load_error([&] { tc::sparse::read_teal_calibration(tc::gguf::GgufFile::open(path)); }, path, item,
                              problem);
}

}  // namespace

TEST_CASE("TEAL calibration reaches its target sparsity on a SwiGLU model", "[sparse][teal]") {
  const auto m = make_swiglu_model("target", 21);
  auto backend = cpu();
  const int64_t n_ctx = 64;
  const auto calib = random_tokens(*m, 1024, 1);
  const auto held_out = random_tokens(*m, 1024, 2);
  tc::profiler::TealCalibrationOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = 32;
  // 1024 tokens x 64 (or 160) entries per site: strides 9 and 21, so the sample is a spread-out subset.
  o.max_samples = int64_t{1} << 13;
  const auto c = tc::profiler::calibrate_teal(*m, *backend, calib, m->tokenizer->vocab().bos_id, o);
  CHECK(c.n_tokens == 1024);
  REQUIRE(c.n_layer == 2);

  // Tolerances. On the dense inputs, the fraction below each threshold is
  // the coverage of a quantile of ~7500 strided samples (with every entry
  // sampled it is exact to 0.001 here); tokens repeat and a row's entries
  // are related, so the error is up to 0.012, not the 0.006 of independent
  // draws: 0.025 on the calibration tokens. Held-out sequences differ most
  // in attn_output (each row mixes the v rows of its own 64-token chunk, so
  // 16 chunks are few independent draws): 0.018 even with every entry
  // sampled, so 0.04. With the sparsifier on, each site's input comes from
  // sparsified inputs upstream and shrinks (attn_output most: v comes from
  // the sparsified attn_qkv input), so sites get sparser than their target,
  // by up to 0.06 here at 0.5: 0.07 above (0.08 held-out).
  struct Run {
    const std::vector<TokenId>* tokens;
    bool dense;
    double below, above;  // allowed deviation from the target
  };
  for (const float target : {0.25f, 0.4f, 0.5f, 0.33f}) {
    TealSparsifier sparsifier(tc::sparse::thresholds_for(c, target));
    for (const Run& r : {Run{&calib, true, 0.025, 0.025}, Run{&held_out, true, 0.04, 0.04},
                         Run{&calib, false, 0.025, 0.07}, Run{&held_out, false, 0.04, 0.08}}) {
      run_teal(*m, *backend, *r.tokens, n_ctx, sparsifier, r.dense);
      for (int64_t l = 0; l < c.n_layer; ++l) {
        for (int s = 0; s < kLinearInputCount; ++s) {
          const auto site = static_cast<LinearInput>(s);
          const auto& counts = sparsifier.counts(l, site);
          INFO("target " << target << " layer " << l << " " << tc::model::linear_input_name(site)
                         << (r.tokens == &calib ? " calibration" : " held-out") << (r.dense ? " dense" : " sparsified")
                         << ": " << counts.fraction());
          CHECK(counts.total == 1024 * static_cast<uint64_t>(site == LinearInput::FfnDown ? 160 : 64));
          CHECK(counts.fraction() >= target - r.below);
          CHECK(counts.fraction() <= target + r.above);
        }
      }
    }
  }
}

TEST_CASE("TEAL at target 0 leaves the logits bit-identical", "[sparse][teal]") {
  const auto m = make_swiglu_model("zero", 22);
  auto backend = cpu();
  const auto tokens = random_tokens(*m, 48, 3);
  tc::profiler::TealCalibrationOptions o;
  o.n_ctx = 16;
  const auto c = tc::profiler::calibrate_teal(*m, *backend, tokens, m->tokenizer->vocab().bos_id, o);

  auto logits_with = [&](TealSparsifier* sparsifier) {
    tc::model::LlamaModel llama(*m, *backend);
    tc::runtime::KvCache kv(*backend, m->spec, 1, 64);
    llama.set_input_sparsifier(sparsifier);
    std::vector<float> logits(tokens.size() * static_cast<size_t>(m->spec.n_vocab), std::nanf(""));
    const tc::model::StepSequence step{0, tokens, true};
    REQUIRE(llama.forward({&step, 1}, kv, logits) == tc::model::StepStatus::Ok);
    return logits;
  };
  TealSparsifier zero(tc::sparse::thresholds_for(c, 0.0f));
  const auto dense = logits_with(nullptr);
  const auto sparse = logits_with(&zero);
  REQUIRE(dense.size() == sparse.size());
  CHECK(std::memcmp(dense.data(), sparse.data(), dense.size() * sizeof(float)) == 0);
  CHECK(zero.all_counts().total == 48 * 2 * (3 * 64 + 160));
  CHECK(zero.all_counts().zeros == 0);  // SwiGLU: no exact zeros of its own
  // Any positive target does change them.
  TealSparsifier some(tc::sparse::thresholds_for(c, 0.05f));
  CHECK(std::memcmp(dense.data(), logits_with(&some).data(), dense.size() * sizeof(float)) != 0);
}

TEST_CASE("the TEAL sparsifier zeroes exactly the entries below the threshold", "[sparse][teal]") {
  const int64_t n_layer = 3, n_tokens = 7, n = 203;
  tc::sparse::TealThresholds t{n_layer, tc::test::random_floats(n_layer * kLinearInputCount, 5, 0.8f)};
  for (auto& v : t.values) v = std::fabs(v);
  t.values[5] = 0.0f;  // layer 1 attn_output: nothing zeroed
  TealSparsifier sparsifier(t);
  for (int64_t l = 0; l < n_layer; ++l) {
    for (int s = 0; s < kLinearInputCount; ++s) {
      const auto site = static_cast<LinearInput>(s);
      const float th = t.at(l, site);
      auto x = tc::test::random_floats(static_cast<size_t>(n_tokens * n), 100 + static_cast<uint64_t>(l * 4 + s));
      x[3] = th;  // at the threshold: kept
      x[4] = -th;
      x[5] = std::nextafter(th, 0.0f);  // just below: zeroed (unless th is 0)
      x[6] = 0.0f;
      x[7] = -0.0f;
      std::vector<float> expected(x.size());
      uint64_t zeros = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        expected[i] = std::fabs(x[i]) < th ? 0.0f : x[i];
        zeros += expected[i] == 0.0f;
      }
      sparsifier.sparsify(l, site, n_tokens, n, x.data());
      INFO("layer " << l << " site " << s << " threshold " << th);
      CHECK(std::memcmp(x.data(), expected.data(), x.size() * sizeof(float)) == 0);
      CHECK(sparsifier.counts(l, site).zeros == zeros);
      CHECK(sparsifier.counts(l, site).total == static_cast<uint64_t>(n_tokens * n));
      if (th > 0.1f) CHECK(zeros > 2);
    }
  }
  CHECK(sparsifier.counts(1, LinearInput::AttnOutput).zeros == 5);  // only the planted zeros (+-0, +-th, below th)
  CHECK(sparsifier.all_counts().total == static_cast<uint64_t>(n_layer * kLinearInputCount * n_tokens * n));
  sparsifier.reset_counts();
  CHECK(sparsifier.site_counts(LinearInput::FfnDown).total == 0);
}

TEST_CASE("the TEAL sampler does not depend on how tokens are batched", "[sparse][teal]") {
  tc::model::ModelSpec spec;
  spec.n_layer = 1;
  spec.n_embd = 24;
  spec.n_ff = 40;
  spec.n_head = 4;  // attn_output's input: n_head * head_dim = n_embd
  spec.head_dim = 6;
  const int64_t n_tokens = 500;
  // |x| uniform on [0, 1): the quantile at level a is about a.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tokens * spec.n_ff));
  for (auto& v : x) v = u(rng);
  auto calibrate = [&](const std::vector<int64_t>& batches) {
    tc::profiler::TealCalibrator cal(spec, n_tokens, 2000);
    int64_t t = 0;
    for (size_t b = 0; t < n_tokens; ++b) {
      const int64_t n = std::min(batches[b % batches.size()], n_tokens - t);
      for (int s = 0; s < kLinearInputCount; ++s) {
        const auto site = static_cast<LinearInput>(s);
        const int64_t row = site == LinearInput::FfnDown ? spec.n_ff : spec.n_embd;
        cal.on_linear_input(0, site, n, row, x.data() + t * row);
      }
      t += n;
    }
    return cal.finish();
  };
  const auto one = calibrate({n_tokens});
  CHECK(one.n_tokens == n_tokens);
  CHECK(calibrate({1}).thresholds == one.thresholds);
  CHECK(calibrate({7, 64, 3}).thresholds == one.thresholds);
  for (int64_t j = 0; j < one.n_levels(); ++j) {
    for (int s = 0; s < kLinearInputCount; ++s) {
      // 2000 samples: a standard error of at most 0.011 on the quantile of a uniform.
      CHECK(std::abs(one.threshold(0, static_cast<LinearInput>(s), j) - one.levels[static_cast<size_t>(j)]) < 0.045f);
    }
  }
}

TEST_CASE("TEAL thresholds for a target interpolate the ladder", "[sparse][teal]") {
  const auto c = sample_calibration(2, 11);
  const auto zero = tc::sparse::thresholds_for(c, 0.0f);
  CHECK(zero.values == std::vector<float>(8, 0.0f));
  const auto at = tc::sparse::thresholds_for(c, 0.4f);  // level 7
  const auto mid = tc::sparse::thresholds_for(c, 0.425f);
  const auto low = tc::sparse::thresholds_for(c, 0.025f);  // half way to the first level
  for (int64_t l = 0; l < 2; ++l) {
    for (int s = 0; s < kLinearInputCount; ++s) {
      const auto site = static_cast<LinearInput>(s);
      CHECK(at.at(l, site) == c.threshold(l, site, 7));
      CHECK(mid.at(l, site) == Approx(0.5 * (c.threshold(l, site, 7) + c.threshold(l, site, 8))));
      CHECK(low.at(l, site) == Approx(0.5 * c.threshold(l, site, 0)));
    }
  }
  CHECK(tc::sparse::thresholds_for(c, 0.95f).at(1, LinearInput::FfnDown) == c.threshold(1, LinearInput::FfnDown, 18));
  CHECK_THROWS_AS(tc::sparse::thresholds_for(c, 0.96f), std::invalid_argument);
  CHECK_THROWS_AS(tc::sparse::thresholds_for(c, -0.1f), std::invalid_argument);
  CHECK_THROWS_AS(tc::sparse::thresholds_for(c, std::nanf("")), std::invalid_argument);
  auto short_ladder = c;
  short_ladder.levels.resize(2);
  short_ladder.thresholds.resize(2 * kLinearInputCount * 2);
  CHECK_THROWS_WITH(tc::sparse::thresholds_for(short_ladder, 0.4f), Catch::Contains("highest level 0.1"));
}

TEST_CASE("the TEAL section round-trips through a stats file", "[sparse][teal]") {
  const auto dir = tc::test::scratch_dir("teal_roundtrip");
  const auto c = sample_calibration(3, 12);
  tc::sparse::write_activation_stats(sample_stats(3, 40), dir / "s.gguf", tc::sparse::teal_section(c));
  CHECK_NOTHROW(tc::sparse::read_activation_stats(dir / "s.gguf"));
  const auto f = tc::gguf::GgufFile::open(dir / "s.gguf");
  REQUIRE(tc::sparse::has_teal_calibration(f));
  CHECK(f.tensor("teal.thresholds", {19, 4, 3}).dtype == DType::F32);
  const auto r = tc::sparse::read_teal_calibration(f);
  CHECK(r.levels == c.levels);
  CHECK(r.thresholds == c.thresholds);
  CHECK(r.n_layer == 3);
  CHECK(r.n_tokens == c.n_tokens);

  tc::sparse::write_activation_stats(sample_stats(3, 40), dir / "plain.gguf");
  CHECK_FALSE(tc::sparse::has_teal_calibration(tc::gguf::GgufFile::open(dir / "plain.gguf")));

  // The writer refuses what the reader would.
  auto bad = c;
  bad.thresholds[5] = std::nanf("");
  CHECK_THROWS_WITH(tc::sparse::teal_section(bad), Catch::Contains("layer 0 attn_qkv level 5"));
  bad = c;
  bad.n_layer = 4;
  CHECK_THROWS_AS(tc::sparse::teal_section(bad), std::invalid_argument);
}

TEST_CASE("every corrupt TEAL section is rejected, naming the key or tensor", "[sparse][teal]") {
  const auto dir = tc::test::scratch_dir("teal_corrupt");
  const auto c = sample_calibration(2, 13);
  const auto path = dir / "bad.gguf";
  auto with = [&](const std::function<void(RawTeal&)>& edit) {
    auto raw = RawTeal::from(c, 2);
    edit(raw);
    raw.write(path);
    return path;
  };
  REQUIRE_NOTHROW(tc::sparse::read_teal_calibration(tc::gguf::GgufFile::open(with([](RawTeal&) {}))));

  expect_rejected(with([](RawTeal& r) { r.keys[0].second = Value(uint32_t{2}); }), "thermocline.teal.version",
                  "reads version 1");
  expect_rejected(with([](RawTeal& r) { r.keys.erase(r.keys.begin() + 1); }), "thermocline.teal.n_tokens", "");
  expect_rejected(with([](RawTeal& r) { r.keys[1].second = Value(uint64_t{0}); }), "thermocline.teal.n_tokens",
                  "expected >= 1");
  expect_rejected(with([](RawTeal& r) { r.tensors.erase(r.tensors.begin()); }), "teal.levels", "is missing");
  expect_rejected(with([](RawTeal& r) { r.tensors.pop_back(); }), "teal.thresholds", "is missing");
  // Shapes: the layer count of the stats file, the ladder's length, the site count, the dtype.
  expect_rejected(with([](RawTeal& r) { r.keys[2].second = Value(uint32_t{3}); }), "teal.thresholds",
                  "expected [19, 4, 3]");
  expect_rejected(with([](RawTeal& r) {
                    auto& t = r.tensor("teal.levels");
                    t.values.pop_back();
                    t.ne = {18};
                  }),
                  "teal.thresholds", "is [19, 4, 2], expected [18, 4, 2]");
  expect_rejected(with([](RawTeal& r) {
                    auto& t = r.tensor("teal.thresholds");
                    t.ne = {19, 8, 1};
                  }),
                  "teal.thresholds", "expected [19, 4, 2]");
  expect_rejected(with([](RawTeal& r) { r.tensor("teal.thresholds").dtype = DType::F16; }), "teal.thresholds",
                  "expected f32");
  expect_rejected(with([](RawTeal& r) { r.tensor("teal.levels").ne = {19, 1}; }), "teal.levels", "expected f32");
  // Values.
  expect_rejected(with([](RawTeal& r) { r.tensor("teal.thresholds").values[19 * 5 + 3] = std::nanf(""); }),
                  "teal.thresholds", "layer 1 attn_output level 3 threshold is nan");
  expect_rejected(with([](RawTeal& r) { r.tensor("teal.thresholds").values[2] = -1.0f; }), "teal.thresholds",
                  "expected finite >= 0");
  expect_rejected(with([](RawTeal& r) {
                    auto& v = r.tensor("teal.thresholds").values;
                    std::swap(v[19 * 3 + 10], v[19 * 3 + 11]);
                  }),
                  "teal.thresholds", "must not decrease");
  expect_rejected(with([](RawTeal& r) { std::swap(r.tensor("teal.levels").values[3], r.tensor("teal.levels").values[4]); }),
                  "teal.levels", "level 4 (0.2) is not above the previous one");
  expect_rejected(with([](RawTeal& r) { r.tensor("teal.levels").values.back() = 1.0f; }), "teal.levels",
                  "outside (0, 1)");
  expect_rejected(with([](RawTeal& r) { r.tensors.push_back({"teal.extra", DType::F32, {1}, {1.0f}}); }),
                  "teal.extra", "is not a TEAL tensor");
}

TEST_CASE("the TEAL ladder reaches the highest target --sparsity accepts", "[sparse][teal]") {
  // Every target parse_sparsity_setting accepts has thresholds.
  CHECK(tc::sparse::teal_default_levels().back() == tc::config::kTealMaxSparsity);
}
