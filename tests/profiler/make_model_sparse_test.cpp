// make-model --sparse: the planted sparsity, its power law and the
// predictors' exactness measured independently by the float64 reference
// pass; the PowerInfer layout against the GGUF one; loading and running
// dense in the engine; thread-count independent bytes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "kernels/cpu/quantize.h"
#include "profiler/make_model.h"
#include "profiler/sparse_planting.h"
#include "tests/test_util.h"

#include "tests/engine/model/reference_forward.h"
#include "tests/profiler/sparse_test_options.h"

using tc::gguf::GgufFile;
using tc::profiler::MakeModelOptions;
using tc::profiler::SparseLayout;

using tc::test::random_tokens;
using tc::test::sparse_options;

namespace {

using Rows = std::vector<std::vector<double>>;

MakeModelOptions tiny_sparse_options(const std::filesystem::path& out) {
  auto o = sparse_options(out);
  o.n_embd = 64;
  o.n_ff = 256;
  o.n_layer = 2;
  o.n_vocab = 512;
  o.sparse.predictor_rank = 32;
  return o;
}

Rows load_rows(const GgufFile& f, const std::string& name) {
  const auto& info = f.tensor(name);
  const auto data = f.tensor_data(info);
  const int64_t row_bytes = tc::kernels::row_bytes(info.dtype, info.ne[0]);
  std::vector<float> tmp(static_cast<size_t>(info.ne[0]));
  Rows rows;
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    tc::kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, tmp.data(), info.ne[0]);
    rows.emplace_back(tmp.begin(), tmp.end());
  }
  return rows;
}

std::vector<double> mat_vec(const Rows& w, const std::vector<double>& x) {
  std::vector<double> y(w.size());
  for (size_t r = 0; r < w.size(); ++r) y[r] = std::inner_product(x.begin(), x.end(), w[r].begin(), 0.0);
  return y;
}

// Firing counts and predictor agreement per layer, from the reference pass.
struct Measured {
  int64_t n_tokens = 0;
  std::vector<std::vector<int64_t>> fire_count;  // [layer][neuron]: gate > 0
  std::vector<int64_t> true_pos, false_pos, false_neg;  // [layer]: predictor score > 0 vs gate > 0
};

Measured measure(const std::filesystem::path& path, int n_seq, int seq_len, uint64_t seed) {
  const auto f = GgufFile::open(path);
  const auto spec = tc::model::read_model_spec(f);
  std::vector<Rows> fc1, fc2;
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    fc1.push_back(load_rows(f, tc::model::layer_tensor_name(l, "fc1")));
    fc2.push_back(load_rows(f, tc::model::layer_tensor_name(l, "fc2")));
  }
  // The thresholds the file asks for (per layer, else the global one).
  const auto n_layer = static_cast<size_t>(spec.n_layer);
  std::vector<float> threshold(n_layer, static_cast<float>(f.get_f64("powerinfer.sparse_threshold", 0.0)));
  if (f.has("thermocline.predictor.layer_thresholds")) threshold = f.get_f32_array("thermocline.predictor.layer_thresholds");
  REQUIRE(threshold.size() == n_layer);
  Measured m;
  m.fire_count.assign(n_layer, std::vector<int64_t>(static_cast<size_t>(spec.n_ff), 0));
  m.true_pos.assign(n_layer, 0);
  m.false_pos.assign(n_layer, 0);
  m.false_neg.assign(n_layer, 0);
  for (int s = 0; s < n_seq; ++s) {
    const auto tokens = random_tokens(static_cast<size_t>(seq_len), seed + static_cast<uint64_t>(s), spec.n_vocab);
    tc::test::reference_logits(f, spec, tokens, [&](const tc::test::FfnObservation& obs) {
      const auto l = static_cast<size_t>(obs.layer);
      auto hidden = mat_vec(fc1[l], obs.input);
      for (auto& v : hidden) v = std::max(v, 0.0);
      const auto score = mat_vec(fc2[l], hidden);
      for (size_t i = 0; i < obs.gate.size(); ++i) {
        const bool fires = obs.gate[i] > 0.0;
        const bool predicted = score[i] > threshold[l];
        m.fire_count[l][i] += fires ? 1 : 0;
        m.true_pos[l] += fires && predicted ? 1 : 0;
        m.false_pos[l] += !fires && predicted ? 1 : 0;
        m.false_neg[l] += fires && !predicted ? 1 : 0;
      }
    });
    m.n_tokens += seq_len;
  }
  return m;
}

// Least-squares slope of log(frequency) against log(rank + 1) over ranks
// [lo, hi) of the frequencies sorted in decreasing order.
double log_log_slope(std::vector<double> freq, size_t lo, size_t hi) {
  std::sort(freq.begin(), freq.end(), std::greater<>());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const auto n = static_cast<double>(hi - lo);
  for (size_t k = lo; k < hi; ++k) {
    const double x = std::log(static_cast<double>(k + 1));
    const double y = std::log(std::max(freq[k], 1e-9));
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

}  // namespace

TEST_CASE("sparse make-model: power-law firing frequencies", "[profiler][make_model][sparse]") {
  using tc::profiler::power_law_frequencies;
  for (double alpha : {0.0, 0.5, 1.0, 2.0}) {
    INFO("alpha " << alpha);
    const auto f = power_law_frequencies(4096, 0.1, alpha);
    CHECK(std::accumulate(f.begin(), f.end(), 0.0) / 4096.0 == Approx(0.1).epsilon(1e-6));
    CHECK(std::is_sorted(f.rbegin(), f.rend()));
    CHECK(f.back() >= tc::profiler::kMinFireFrequency);
    CHECK(f.front() <= tc::profiler::kMaxFireFrequency);
    if (alpha == 0.0) CHECK(f.front() == Approx(f.back()));
  }
  // Away from the clipping, f(k) / f(2k) = 2^alpha.
  const auto f = power_law_frequencies(4096, 0.1, 1.5);
  CHECK(f[1999] / f[3999] == Approx(std::pow(2.0, 1.5)).epsilon(1e-3));
  CHECK_THROWS_WITH(power_law_frequencies(100, 0.999, 1.0), Catch::Contains("active"));
  CHECK_THROWS_WITH(power_law_frequencies(100, 0.1, -1.0), Catch::Contains("alpha"));
}

TEST_CASE("sparse make-model plants the target sparsity with exact predictors", "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_sparse_plant");
  const auto o = sparse_options(dir / "sparse.gguf");
  tc::profiler::make_model(o);
  const auto f = GgufFile::open(o.output);
  CHECK(f.magic() == tc::gguf::Magic::GGUF);
  CHECK(f.get_string("thermocline.ffn_form") == "reglu");
  CHECK(f.get_f64(tc::profiler::kSparseActiveKey) == Approx(0.10));
  CHECK(f.get_f64(tc::profiler::kSparseAlphaKey) == Approx(1.0));
  CHECK(f.get_u64(tc::profiler::kPredictorRankKey) == 64);
  CHECK(f.tensor("blk.2.fc1.weight", {256, 64}).dtype == tc::kernels::DType::F16);
  CHECK(f.tensor("blk.2.fc2.weight", {64, 1024}).dtype == tc::kernels::DType::F16);
  CHECK(f.tensor("blk.2.ffn_down.weight", {1024, 256}).dtype == tc::kernels::DType::F16);

  // 384 fresh tokens (not the calibration ones) in 6 sequences of 64.
  const Measured m = measure(o.output, 6, 64, 1000);
  const auto planted = tc::profiler::power_law_frequencies(o.n_ff, o.sparse.active, o.sparse.alpha);
  // Fit the slope where the planted law is neither capped nor starved of
  // counts: planted f in [20 / n_tokens, 0.5].
  size_t lo = 0, hi = planted.size();
  while (lo < planted.size() && planted[lo] > 0.5) ++lo;
  while (hi > lo && planted[hi - 1] < 20.0 / static_cast<double>(m.n_tokens)) --hi;
  REQUIRE(hi - lo > 200);
  const auto calib_active = f.get_f32_array(tc::profiler::kLayerActiveKey);
  REQUIRE(calib_active.size() == 3);
  for (size_t l = 0; l < 3; ++l) {
    INFO("layer " << l);
    const auto& counts = m.fire_count[l];
    const double total = static_cast<double>(std::accumulate(counts.begin(), counts.end(), int64_t{0}));
    const double active = total / static_cast<double>(m.n_tokens * o.n_ff);
    CHECK(active == Approx(0.10).margin(0.03));
    CHECK(calib_active[l] == Approx(0.10).margin(0.03));

    std::vector<double> freq;
    for (auto c : counts) freq.push_back(static_cast<double>(c) / static_cast<double>(m.n_tokens));
    const double slope = log_log_slope(freq, lo, hi);
    INFO("slope " << slope);
    CHECK(slope == Approx(-o.sparse.alpha).margin(0.15));

    // The hot neurons are spread over the rows, not the first ones.
    std::vector<size_t> order(counts.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return counts[a] > counts[b]; });
    const double mean_hot_idx = std::accumulate(order.begin(), order.begin() + 64, 0.0) / 64.0;
    CHECK(mean_hot_idx > 0.3 * static_cast<double>(o.n_ff));
    CHECK(mean_hot_idx < 0.7 * static_cast<double>(o.n_ff));

    const double tp = static_cast<double>(m.true_pos[l]);
    const double recall = tp / (tp + static_cast<double>(m.false_neg[l]));
    const double precision = tp / (tp + static_cast<double>(m.false_pos[l]));
    INFO("recall " << recall << " precision " << precision);
    CHECK(recall >= 0.99);
    CHECK(precision >= 0.99);
  }
}

TEST_CASE("sparse make-model: quantized predictors get thresholds that keep their recall", "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_sparse_qpred");
  auto o = sparse_options(dir / "sparse.gguf");
  o.sparse.predictor_type = "q4_0";
  tc::profiler::make_model(o);
  const auto f = GgufFile::open(o.output);
  const auto thresholds = f.get_f32_array("thermocline.predictor.layer_thresholds");
  REQUIRE(thresholds.size() == 3);
  for (float t : thresholds) CHECK(t < 0.0f);
  CHECK(f.get_f64("powerinfer.sparse_threshold") == Approx(*std::min_element(thresholds.begin(), thresholds.end())));
  // Fresh tokens: the rounded predictor still finds the firing neurons. The
  // lowered threshold about doubles the predicted set at this small rank
  // (64): the sparse FFN reads their gate rows, and drops them before
  // up/down when the gate is <= 0.
  const Measured m = measure(o.output, 4, 64, 2000);
  for (size_t l = 0; l < 3; ++l) {
    const double tp = static_cast<double>(m.true_pos[l]);
    const double recall = tp / (tp + static_cast<double>(m.false_neg[l]));
    const double precision = tp / (tp + static_cast<double>(m.false_pos[l]));
    INFO("layer " << l << " recall " << recall << " precision " << precision);
    CHECK(recall >= 0.99);
    CHECK(precision >= 0.4);
  }
}

TEST_CASE("sparse make-model: the PowerInfer layout holds the same model", "[profiler][make_model][sparse]") {
  const auto form = GENERATE(tc::model::FfnForm::ReGLU, tc::model::FfnForm::DReLU);
  const bool bamboo = form == tc::model::FfnForm::DReLU;
  const auto dir = tc::test::scratch_dir("make_model_sparse_pwri_" + std::string(tc::model::ffn_form_name(form)));
  auto g = tiny_sparse_options(dir / "m.gguf");
  auto p = tiny_sparse_options(dir / "m.powerinfer.gguf");
  g.ffn_form = p.ffn_form = form;
  p.sparse.layout = SparseLayout::PowerInfer;
  tc::profiler::make_model(g);
  tc::profiler::make_model(p);
  const auto fg = GgufFile::open(g.output);
  const auto fp = GgufFile::open(p.output);
  CHECK(tc::test::read_file(p.output).substr(0, 4) == "PWRI");
  CHECK(fp.magic() == tc::gguf::Magic::PWRI);
  CHECK(fp.version() == 3);
  CHECK(fp.get_f64("powerinfer.sparse_threshold") == 0.0);
  // The same keys and values in the same order; a dReLU model's PWRI file
  // is architecture bamboo (PowerInfer runs dReLU for bamboo only), its
  // llama.* keys under bamboo.*.
  CHECK(fg.get_string("general.architecture") == "llama");
  CHECK(fp.get_string("general.architecture") == (bamboo ? "bamboo" : "llama"));
  REQUIRE(fp.metadata().size() == fg.metadata().size());
  for (size_t i = 0; i < fg.metadata().size(); ++i) {
    const auto& [key, value] = fg.metadata()[i];
    INFO(key);
    if (key == "general.architecture") continue;
    const bool renamed = bamboo && key.rfind("llama.", 0) == 0;
    CHECK(fp.metadata()[i].first == (renamed ? "bamboo." + key.substr(6) : key));
    CHECK(fp.metadata()[i].second == value);
  }
  REQUIRE(fp.tensors().size() == fg.tensors().size());
  for (int64_t l = 0; l < 2; ++l) {
    auto name = [l](const char* t) { return tc::model::layer_tensor_name(l, t); };
    CHECK(fp.find_tensor(name("ffn_down")) == nullptr);
    const auto& down_t = fp.tensor(name("ffn_down_t"), {64, 256});
    const auto& down = fg.tensor(name("ffn_down"), {256, 64});
    CHECK(fp.tensor(name("fc1"), {64, 32}).dtype == tc::kernels::DType::F16);
    CHECK(fp.tensor(name("fc2"), {32, 256}).dtype == tc::kernels::DType::F16);
    // f16 rounds element by element: the transposed bits are equal.
    const auto* dt = reinterpret_cast<const uint16_t*>(fp.tensor_data(down_t).data());
    const auto* d = reinterpret_cast<const uint16_t*>(fg.tensor_data(down).data());
    int64_t mismatches = 0, nonzero = 0;
    for (int64_t i = 0; i < 256; ++i) {
      for (int64_t j = 0; j < 64; ++j) {
        mismatches += dt[i * 64 + j] != d[j * 256 + i] ? 1 : 0;
        nonzero += (dt[i * 64 + j] & 0x7fff) != 0 ? 1 : 0;
      }
    }
    CHECK(mismatches == 0);
    CHECK(nonzero == 256 * 63);  // only the bias channel (column 0) is zero
  }
  // Every other tensor, fc1/fc2 included, has the same bytes.
  for (const auto& t : fg.tensors()) {
    if (t.name.find("ffn_down") != std::string::npos) continue;
    INFO(t.name);
    const auto& other = fp.tensor(t.name);
    const auto a = fg.tensor_data(t);
    const auto b = fp.tensor_data(other);
    CHECK((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0));
  }
  // Both load (spec and tensor checks); the reference pass gives the same logits.
  const auto lg = tc::model::load_model(g.output);
  const auto lp = tc::model::load_model(p.output);
  CHECK(lp->spec.sparse_layout);
  CHECK(lp->spec.ffn_form == form);
  CHECK(lg->spec.ffn_form == form);
  const auto tokens = random_tokens(8, 3, 512);
  const auto ref_g = tc::test::reference_logits(lg->file, lg->spec, tokens);
  const auto ref_p = tc::test::reference_logits(lp->file, lp->spec, tokens);
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::vector<float> row(ref_p[i].begin(), ref_p[i].end());
    CHECK(tc::test::relative_error(row.data(), ref_g[i]) < 1e-6);
  }
}

TEST_CASE("sparse make-model: --no-predictors leaves only fc1 and fc2 out", "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_sparse_nopred");
  auto with = tiny_sparse_options(dir / "with.gguf");
  auto without = tiny_sparse_options(dir / "without.gguf");
  without.sparse.write_predictors = false;
  tc::profiler::make_model(with);
  tc::profiler::make_model(without);
  const auto fw = GgufFile::open(with.output);
  const auto fo = GgufFile::open(without.output);
  CHECK(fo.tensors().size() + 2 * 2 == fw.tensors().size());
  for (const auto& t : fw.tensors()) {
    INFO(t.name);
    const bool predictor = t.name.find(".fc1.") != std::string::npos || t.name.find(".fc2.") != std::string::npos;
    const auto* other = fo.find_tensor(t.name);
    CHECK((other == nullptr) == predictor);
    if (other == nullptr) continue;
    const auto a = fw.tensor_data(t);
    const auto b = fo.tensor_data(*other);
    CHECK((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0));
  }
  CHECK(tc::model::load_model(without.output)->predictors.empty());
  CHECK(tc::model::load_model(with.output)->predictors.layers.size() == 2);
}

TEST_CASE("sparse make-model: the GGUF layout runs dense in the engine", "[profiler][make_model][sparse]") {
  // fc1/fc2 are extra tensors the dense forward pass ignores.
  for (auto form : {tc::model::FfnForm::ReGLU, tc::model::FfnForm::DReLU}) {
    const std::string form_name(tc::model::ffn_form_name(form));
    INFO(form_name);
    const auto dir = tc::test::scratch_dir("make_model_sparse_engine_" + form_name);
    auto o = tiny_sparse_options(dir / "m.gguf");
    o.weight_type = "f32";
    o.ffn_form = form;
    tc::profiler::make_model(o);
    const auto loaded = tc::model::load_model(o.output);
    CHECK(loaded->spec.ffn_form == form);
    auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    tc::model::LlamaModel model(*loaded, *backend);
    const auto tokens = random_tokens(12, 9, 512);
    tc::runtime::KvCache kv(*backend, model.spec(), 1, 64);
    std::vector<float> logits;
    const tc::model::StepSequence seq{0, tokens, true};
    REQUIRE(model.forward({&seq, 1}, kv, logits) == tc::model::StepStatus::Ok);
    const auto ref = tc::test::reference_logits(loaded->file, loaded->spec, tokens);
    for (size_t i = 0; i < tokens.size(); ++i) {
      INFO("position " << i);
      CHECK(tc::test::relative_error(logits.data() + i * 512, ref[i]) < 1e-4);
    }
    // The planted rate holds for the drelu gate as well (a small model,
    // 128 tokens: a looser margin).
    const Measured m = measure(o.output, 4, 32, 77);
    for (size_t l = 0; l < 2; ++l) {
      const auto& c = m.fire_count[l];
      const double active = static_cast<double>(std::accumulate(c.begin(), c.end(), int64_t{0})) /
                            static_cast<double>(m.n_tokens * o.n_ff);
      CHECK(active == Approx(0.10).margin(0.04));
    }
  }
}

TEST_CASE("sparse make-model is deterministic and thread-count independent", "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_sparse_determinism");
  for (auto layout : {SparseLayout::Gguf, SparseLayout::PowerInfer}) {
    auto a = tiny_sparse_options(dir / "a.gguf");
    a.sparse.layout = layout;
    a.n_threads = 1;
    auto b = a;
    b.output = dir / "b.gguf";
    b.n_threads = 3;
    auto c = a;
    c.output = dir / "c.gguf";
    c.seed = 6;
    tc::profiler::make_model(a);
    tc::profiler::make_model(b);
    tc::profiler::make_model(c);
    const auto bytes_a = tc::test::read_file(a.output);
    CHECK(bytes_a == tc::test::read_file(b.output));
    CHECK(bytes_a != tc::test::read_file(c.output));
  }
}

TEST_CASE("sparse make-model rejects inconsistent options", "[profiler][make_model][sparse]") {
  const auto dir = tc::test::scratch_dir("make_model_sparse_bad");
  auto o = tiny_sparse_options(dir / "bad.gguf");
  o.ffn_form = tc::model::FfnForm::SwiGLU;
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("reglu"));
  o.ffn_form = tc::model::FfnForm::DReLU;
  o.sparse.predictor_rank = 31;
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("predictor rank"));
  o.sparse.predictor_rank = 256;  // rank / 2 > n_embd 64
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("predictor rank"));
  o.sparse.predictor_rank = 32;
  o.sparse.predictor_type = "q4_k";  // rows of 32 are not 256-blocks
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("predictor"));
  o.sparse.predictor_type = "iq2_xxs";
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("iq2_xxs"));
  o.sparse.predictor_type.clear();
  o.sparse.active = 0.995;
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("active"));
  o.sparse.active = 0.1;
  o.n_embd = 48;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f32";
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("multiple of 32"));
}
