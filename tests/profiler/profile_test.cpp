// Activation profiling: the FFN observer hook against the float64 reference;
// fire counts against a brute-force count over float64
// gate/up pre-activations (tests/profiler/reference_ffn.h) for ReGLU, dReLU
// and SwiGLU; independence of batch size and threads; the --tokens limit;
// the stats of a profile reading back and matching their model; the report
// numbers on planted distributions; the SVG's well-formedness.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <regex>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"
#include "engine/sparse/activation_stats.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "profiler/profile.h"
#include "profiler/profile_report.h"
#include "tests/profiler/reference_ffn.h"
#include "tests/test_util.h"

using tc::model::FfnForm;
using tc::sparse::ActivationStats;
using tc::text::TokenId;

namespace {

std::unique_ptr<tc::model::LoadedModel> make_test_model(FfnForm form, const std::string& type = "f32") {
  tc::profiler::MakeModelOptions o;
  const std::string name = "profile_" + std::string(tc::model::ffn_form_name(form)) + "_" + type;
  o.output = tc::test::scratch_dir(name) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = type;
  o.ffn_form = form;
  o.seed = 5;
  o.name = "profile-test";
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

std::vector<TokenId> corpus_tokens(const tc::model::LoadedModel& m, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TokenId> out{m.tokenizer->vocab().bos_id};
  while (out.size() < n) out.push_back(static_cast<TokenId>(rng() % static_cast<uint64_t>(m.spec.n_vocab)));
  return out;
}

tc::profiler::ProfileOptions options(int64_t n_ctx, int64_t n_batch, int64_t max_tokens = 0, float fraction = 0.5f) {
  tc::profiler::ProfileOptions o;
  o.n_ctx = n_ctx;
  o.n_batch = n_batch;
  o.max_tokens = max_tokens;
  o.silu_fire_fraction = fraction;
  return o;
}

ActivationStats profile(const tc::model::LoadedModel& m, const std::vector<TokenId>& tokens,
                        tc::profiler::ProfileOptions o, int n_threads = 2) {
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = n_threads});
  return tc::profiler::profile_activations(m, *backend, tokens, m.tokenizer->vocab().bos_id, o);
}

// Per neuron, the fewest and the most tokens it can have fired on given the
// float64 pre-activations, treating values within `eps` of the decision
// boundary as either (float32 rounding may put them on either side).
struct Bounds {
  std::vector<std::vector<int64_t>> low, high;  // [n_layer][n_ff]
};

Bounds reference_bounds(const tc::model::LoadedModel& m, const std::vector<TokenId>& tokens, int64_t n_ctx,
                        const std::vector<float>& thresholds, double eps) {
  const auto& s = m.spec;
  Bounds b{std::vector<std::vector<int64_t>>(static_cast<size_t>(s.n_layer), std::vector<int64_t>(s.n_ff, 0)),
           std::vector<std::vector<int64_t>>(static_cast<size_t>(s.n_layer), std::vector<int64_t>(s.n_ff, 0))};
  const auto n = static_cast<int64_t>(tokens.size());
  for (int64_t start = 0; start < n; start += n_ctx) {
    const auto chunk =
        tc::runtime::chunk_tokens(tokens, start, std::min(n_ctx, n - start), m.tokenizer->vocab().bos_id);
    const auto pre = tc::test::reference_ffn_pre_activations(m.file, s, chunk);
    for (size_t l = 0; l < static_cast<size_t>(s.n_layer); ++l) {
      for (size_t t = 0; t < chunk.size(); ++t) {
        for (size_t i = 0; i < static_cast<size_t>(s.n_ff); ++i) {
          const double g = pre.gate[l][t][i], u = pre.up[l][t][i];
          bool surely = false, maybe = false;
          switch (s.ffn_form) {
            case FfnForm::ReGLU:
              surely = g > eps;
              maybe = g > -eps;
              break;
            case FfnForm::DReLU:
              surely = g > eps && u > eps;
              maybe = g > -eps && u > -eps;
              break;
            case FfnForm::SwiGLU: {
              const double a = std::abs(g / (1.0 + std::exp(-g)) * u);
              surely = a > thresholds[l] + eps;
              maybe = a > thresholds[l] - eps;
              break;
            }
            default: FAIL("no profile reference for " << tc::model::ffn_form_name(s.ffn_form));
          }
          b.low[l][i] += surely;
          b.high[l][i] += maybe;
        }
      }
    }
  }
  return b;
}

void check_against_reference(const tc::model::LoadedModel& m, const ActivationStats& stats,
                             const std::vector<TokenId>& tokens, int64_t n_ctx) {
  const auto b = reference_bounds(m, tokens, n_ctx, stats.thresholds, 1e-4);
  int64_t exact = 0, ambiguous = 0, total = 0;
  for (size_t l = 0; l < b.low.size(); ++l) {
    for (size_t i = 0; i < b.low[l].size(); ++i) {
      const int64_t c = stats.fire_counts[l][i];
      INFO("layer " << l << " neuron " << i);
      CHECK(b.low[l][i] <= c);
      CHECK(c <= b.high[l][i]);
      exact += b.low[l][i] == b.high[l][i];
      ambiguous += b.high[l][i] - b.low[l][i];
      total += c;
    }
  }
  // The bounds pin nearly every count exactly, and firings are neither none nor all.
  CHECK(exact >= static_cast<int64_t>(0.98 * static_cast<double>(b.low.size() * b.low[0].size())));
  CHECK(ambiguous * 1000 <= static_cast<int64_t>(tokens.size()) * m.spec.n_ff * m.spec.n_layer);
  CHECK(total > 0);
  CHECK(total < static_cast<int64_t>(tokens.size()) * m.spec.n_ff * m.spec.n_layer);
}

// Tags are balanced, attributes quoted, nothing that is not a number where one is expected.
void check_svg_well_formed(const std::string& svg) {
  REQUIRE(svg.rfind("<?xml", 0) == 0);
  REQUIRE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\"") != std::string::npos);
  REQUIRE(svg.size() > 7);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z]+)((?:\s+[a-zA-Z][a-zA-Z0-9:-]*="[^"<>]*")*)\s*(/?)>)");
  const size_t pos = svg.find("?>") + 2;
  for (auto it = std::sregex_iterator(svg.begin() + static_cast<std::ptrdiff_t>(pos), svg.end(), tag);
       it != std::sregex_iterator(); ++it) {
    const auto& mt = *it;
    if (mt[1] == "/") {
      REQUIRE_FALSE(open.empty());
      CHECK(open.back() == mt[2].str());
      open.pop_back();
    } else if (mt[4] != "/") {
      open.push_back(mt[2]);
    }
  }
  CHECK(open.empty());
  // Every '<' starts a tag the regex accepted.
  const auto n_lt = std::count(svg.begin(), svg.end(), '<');
  const auto n_tags = std::distance(std::sregex_iterator(svg.begin(), svg.end(), tag), std::sregex_iterator());
  CHECK(n_lt == n_tags + 1);  // + the <?xml ...?> declaration
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}

}  // namespace

TEST_CASE("fire counts equal a float64 brute-force count (ReGLU, dReLU)", "[profiler][profile]") {
  for (const auto form : {FfnForm::ReGLU, FfnForm::DReLU}) {
    INFO(tc::model::ffn_form_name(form));
    const auto m = make_test_model(form);
    const auto tokens = corpus_tokens(*m, 40, 1);
    // Chunks of 16, 16 and 8 tokens, steps of 5 that straddle the chunk edges.
    const auto stats = profile(*m, tokens, options(16, 5));
    REQUIRE(stats.n_tokens == 40);
    REQUIRE(stats.n_layer() == 2);
    REQUIRE(stats.n_ff() == 160);
    CHECK(stats.n_ctx == 16);
    CHECK(stats.rule == tc::sparse::firing_rule_for(form));
    CHECK(stats.fire_fraction == 0.0f);
    CHECK(stats.thresholds == std::vector<float>{0.0f, 0.0f});
    check_against_reference(*m, stats, tokens, 16);
  }
}

TEST_CASE("the FFN observer sees the pre-norm residual and the raw gate and up", "[profiler][observer]") {
  struct Recorder final : tc::model::ForwardObserver {
    int64_t n_embd = 0, n_ff = 0;
    std::vector<std::vector<float>> ffn_in, gate, up;  // per layer: f32 [n_tokens, n_embd] / [n_tokens, n_ff]
    std::vector<int64_t> layers;
    void on_ffn(int64_t layer, int64_t n_tokens, const float* x, const float* g, const float* u) override {
      layers.push_back(layer);
      ffn_in.emplace_back(x, x + n_tokens * n_embd);
      gate.emplace_back(g, g + n_tokens * n_ff);
      up.emplace_back(u, u + n_tokens * n_ff);
    }
  };
  const auto m = make_test_model(FfnForm::ReGLU);
  const auto tokens = corpus_tokens(*m, 12, 6);
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::model::LlamaModel llama(*m, *backend);
  tc::runtime::KvCache kv(*backend, m->spec, 1, 16);
  Recorder rec;
  rec.n_embd = m->spec.n_embd;
  rec.n_ff = m->spec.n_ff;
  llama.set_observer(&rec);
  std::vector<float> logits;
  const tc::model::StepSequence step{0, tokens, false};
  REQUIRE(llama.forward({&step, 1}, kv, logits) == tc::model::StepStatus::Ok);
  REQUIRE(rec.layers == std::vector<int64_t>{0, 1});

  const auto ref = tc::test::reference_ffn_pre_activations(m->file, m->spec, tokens);
  auto max_rel = [](const std::vector<float>& got, const std::vector<std::vector<double>>& want) {
    double diff = 0, scale = 0;
    const size_t cols = want[0].size();
    for (size_t t = 0; t < want.size(); ++t) {
      for (size_t i = 0; i < cols; ++i) {
        diff = std::max(diff, std::abs(static_cast<double>(got[t * cols + i]) - want[t][i]));
        scale = std::max(scale, std::abs(want[t][i]));
      }
    }
    return diff / scale;
  };
  for (size_t l = 0; l < 2; ++l) {
    INFO("layer " << l);
    CHECK(max_rel(rec.ffn_in[l], ref.ffn_in[l]) < 1e-5);
    CHECK(max_rel(rec.gate[l], ref.gate[l]) < 1e-5);
    CHECK(max_rel(rec.up[l], ref.up[l]) < 1e-5);
  }
  // Detached, the next step reports nothing.
  llama.set_observer(nullptr);
  kv.clear(0);
  REQUIRE(llama.forward({&step, 1}, kv, logits) == tc::model::StepStatus::Ok);
  CHECK(rec.layers.size() == 2);
}

TEST_CASE("SwiGLU thresholds fire the asked fraction on the calibration chunk", "[profiler][profile]") {
  const auto m = make_test_model(FfnForm::SwiGLU);
  const auto tokens = corpus_tokens(*m, 48, 2);
  for (const float fraction : {0.5f, 0.2f}) {
    INFO(fraction);
    // One chunk: the calibration chunk is the profiled one.
    const auto one = profile(*m, tokens, options(16, 16, 16, fraction));
    CHECK(one.rule == tc::sparse::FiringRule::AbsAboveThreshold);
    CHECK(one.fire_fraction == fraction);
    for (int64_t l = 0; l < 2; ++l) {
      CHECK(one.thresholds[static_cast<size_t>(l)] > 0.0f);
      int64_t fired = 0;
      for (const int32_t c : one.fire_counts[static_cast<size_t>(l)]) fired += c;
      const double rate = static_cast<double>(fired) / (16.0 * 160.0);
      CHECK(std::abs(rate - fraction) <= 2.0 / (16.0 * 160.0));
    }
  }
  const auto stats = profile(*m, tokens, options(16, 6, 0, 0.3f));
  CHECK(stats.n_tokens == 48);
  check_against_reference(*m, stats, tokens, 16);
}

TEST_CASE("fire counts do not depend on batch size or threads, and --tokens limits them", "[profiler][profile]") {
  const auto m = make_test_model(FfnForm::ReGLU, "q8_0");
  const auto tokens = corpus_tokens(*m, 70, 3);
  const auto base = profile(*m, tokens, options(32, 32), 2);
  CHECK(base.n_tokens == 70);
  for (const int64_t batch : {1, 7, 64}) {
    for (const int threads : {1, 2}) {
      INFO("batch " << batch << " threads " << threads);
      CHECK(profile(*m, tokens, options(32, batch), threads).fire_counts == base.fire_counts);
    }
  }
  // The first 40 tokens: one chunk of 32 and one of 8, whatever follows.
  const auto limited = profile(*m, tokens, options(32, 32, 40));
  const std::vector<TokenId> head(tokens.begin(), tokens.begin() + 40);
  CHECK(limited.n_tokens == 40);
  CHECK(limited.fire_counts == profile(*m, head, options(32, 32)).fire_counts);
  // A longer --tokens than the corpus profiles the corpus.
  CHECK(profile(*m, tokens, options(32, 32, 1000)).fire_counts == base.fire_counts);

  CHECK_THROWS_WITH(profile(*m, {}, options(32, 32)), Catch::Contains("no tokens"));
  CHECK_THROWS_WITH(profile(*m, tokens, options(0, 32)), Catch::Contains("context"));
  std::vector<TokenId> bad = tokens;
  bad[50] = 5000;
  CHECK_THROWS_WITH(profile(*m, bad, options(32, 32)), Catch::Contains("outside [0, 512)"));
}

TEST_CASE("profiled stats read back and match their model only", "[profiler][profile]") {
  const auto m = make_test_model(FfnForm::ReGLU);
  const auto other = make_test_model(FfnForm::DReLU);  // same shapes, other file
  auto o = options(16, 16);
  o.corpus_name = "random.txt";
  const auto stats = profile(*m, corpus_tokens(*m, 24, 4), o);
  const auto path = tc::test::scratch_dir("profile_roundtrip") / "m.stats.gguf";
  tc::sparse::write_activation_stats(stats, path);
  const auto r = tc::sparse::read_activation_stats(path);
  CHECK(r.fire_counts == stats.fire_counts);
  CHECK(r.corpus == "random.txt");
  CHECK(r.model.name == "profile-test");
  CHECK(r.model.ffn_form == "reglu");
  CHECK_NOTHROW(tc::sparse::check_stats_match_model(r, path.string(), m->file, m->spec));
  CHECK_THROWS_AS(tc::sparse::check_stats_match_model(r, path.string(), other->file, other->spec),
                  tc::gguf::ModelLoadError);
}

TEST_CASE("report numbers on planted distributions", "[profiler][report]") {
  ActivationStats s;
  s.model = {"planted", "reglu", 3, 16, 10, 0, 0};
  s.n_tokens = 100;
  s.n_ctx = 100;
  s.thresholds = {0, 0, 0};
  // Layer 0: 100 firings; the top 3 hold exactly 80, the top 4 90, the top 7 all.
  s.fire_counts.push_back({2, 10, 0, 50, 3, 10, 0, 20, 5, 0});
  s.fire_counts.push_back(std::vector<int32_t>(10, 0));    // layer 1: silent
  s.fire_counts.push_back(std::vector<int32_t>(10, 100));  // layer 2: every neuron on every token
  const auto layers = tc::profiler::summarize(s);
  REQUIRE(layers.size() == 3);
  CHECK(layers[0].fire_rate == Approx(0.1));
  CHECK(layers[0].sparsity == Approx(0.9));
  CHECK(layers[0].cover_80 == 3);
  CHECK(layers[0].cover_90 == 4);
  CHECK(layers[0].cover_99 == 7);
  CHECK(layers[0].hottest_rate == Approx(0.5));
  CHECK(layers[0].n_never == 3);
  CHECK(layers[1].fire_rate == 0.0);
  CHECK(layers[1].sparsity == 1.0);
  CHECK(layers[1].cover_80 == 0);
  CHECK(layers[1].hottest_rate == 0.0);
  CHECK(layers[1].n_never == 10);
  CHECK(layers[2].fire_rate == 1.0);
  CHECK(layers[2].cover_80 == 8);
  CHECK(layers[2].cover_90 == 9);
  CHECK(layers[2].cover_99 == 10);
  CHECK(layers[2].hottest_rate == 1.0);

  const std::string md = tc::profiler::report_markdown(s, layers);
  CHECK(md.find("| 0 | 10.0% | 90.0% | 3 (30.0%) | 4 (40.0%) | 7 (70.0%) | 50.0% | 3 |") != std::string::npos);
  CHECK(md.find("| 1 | 0.0% | 100.0% | 0 (0.0%) |") != std::string::npos);
  CHECK(md.find("| 2 | 100.0% | 0.0% | 8 (80.0%) | 9 (90.0%) | 10 (100.0%) | 100.0% | 0 |") != std::string::npos);
  CHECK(md.find("| all | 36.7% | 63.3% |") != std::string::npos);
  CHECK(md.find("100 tokens") != std::string::npos);
  CHECK(md.find("gate>0") != std::string::npos);

  // 99% exactly on a boundary: 99 of 100 firings in the top neuron.
  s.fire_counts[0] = {99, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  CHECK(tc::profiler::summarize(s)[0].cover_99 == 1);
  CHECK(tc::profiler::summarize(s)[0].cover_80 == 1);
}

TEST_CASE("the firing SVG is well formed, one polyline per layer, log-log", "[profiler][report]") {
  ActivationStats s;
  const int64_t n_ff = 3000;
  s.model = {"power <law> & co", "reglu", 4, 16, n_ff, 0, 0};
  s.n_tokens = 100000;
  s.thresholds.assign(4, 0.0f);
  for (int64_t l = 0; l < 4; ++l) {
    std::vector<int32_t> c(static_cast<size_t>(n_ff));
    for (int64_t i = 0; i < n_ff; ++i) {  // count ~ rank^-1, some never firing
      c[static_cast<size_t>(i)] = static_cast<int32_t>(50000.0 / static_cast<double>(i + 1 + l));
    }
    s.fire_counts.push_back(std::move(c));
  }
  s.fire_counts[3].assign(static_cast<size_t>(n_ff), 0);  // a silent layer plots nothing
  const std::string svg = tc::profiler::firing_svg(s);
  check_svg_well_formed(svg);
  const std::regex polyline("<polyline ");
  CHECK(std::distance(std::sregex_iterator(svg.begin(), svg.end(), polyline), std::sregex_iterator()) == 4);
  CHECK(svg.find("power &lt;law&gt; &amp; co") != std::string::npos);
  CHECK(svg.find("layer 3") != std::string::npos);
  CHECK(svg.find(">1000<") != std::string::npos);   // x decades up to 10^4 for n_ff 3000
  CHECK(svg.find(">10000<") != std::string::npos);
  CHECK(svg.find(">0.001<") != std::string::npos);  // y down to the rarest firing (16 / 100000)
  CHECK(svg.find(">1e-4<") != std::string::npos);
  CHECK(svg.find("log scale") != std::string::npos);
  // A power law is a straight line on log-log axes: check layer 0's points.
  const auto start = svg.find("points=\"") + 8;
  const auto points = svg.substr(start, svg.find('"', start) - start);
  std::vector<std::pair<double, double>> xy;
  const std::regex pair(R"(([0-9.]+),([0-9.]+))");
  for (auto it = std::sregex_iterator(points.begin(), points.end(), pair); it != std::sregex_iterator(); ++it) {
    xy.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  REQUIRE(xy.size() > 50);
  REQUIRE(xy.size() < 1000);  // log-spaced ranks, not every neuron
  const double slope_a = (xy[10].second - xy[0].second) / (xy[10].first - xy[0].first);
  const double slope_b = (xy[40].second - xy[20].second) / (xy[40].first - xy[20].first);
  CHECK(slope_a == Approx(slope_b).epsilon(0.05));

  const auto dir = tc::test::scratch_dir("profile_report") / "out";
  const std::string md = tc::profiler::write_report(s, dir);
  CHECK(tc::test::read_file(dir / "report.md") == md);
  CHECK(tc::test::read_file(dir / "firing.svg") == svg);
}
