// The predicted sparse FFN in the forward pass (FfnMode::Sparse) on planted
// sparse models (make-model --sparse), both layouts: against the float64
// reference computing only the neurons the predictor keeps, against the
// dense pass, across thread counts, the dense fallback above the crossover,
// the dense pass of PWRI files, and the errors for models that cannot run it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "kernels/cpu/lanes16.h"
#include "kernels/cpu/q4_lanes16.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/engine/model/step_logits.h"
#include "tests/test_util.h"

using tc::model::FfnMode;
using tc::model::ForwardOptions;
using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

using tc::test::random_tokens;

namespace {

constexpr int64_t kVocab = 512;

tc::profiler::MakeModelOptions planted_options(const std::string& name, bool pwri, const std::string& type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("sparse_forward_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 2;
  o.n_ff = 512;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.ffn_form = tc::model::FfnForm::ReGLU;
  o.seed = 21;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.active = 0.10;
  o.sparse.predictor_rank = 32;
  o.sparse.layout = pwri ? tc::profiler::SparseLayout::PowerInfer : tc::profiler::SparseLayout::Gguf;
  return o;
}

std::unique_ptr<tc::model::LoadedModel> planted_model(const std::string& name, bool pwri,
                                                      const std::string& type = "f32") {
  const auto o = planted_options(name, pwri, type);
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

using tc::test::decode_each_logits;

// Logits of every position of one step over all the tokens.
std::vector<float> one_pass(LlamaModel& m, tc::kernels::Backend& backend, const std::vector<TokenId>& tokens) {
  KvCache kv(backend, m.spec(), 1, 64);
  std::vector<float> logits;
  const StepSequence seq{0, tokens, true};
  REQUIRE(m.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
  return logits;
}

// The predictor in float64: keep neuron i iff fc2 · relu(fc1 · x) > threshold.
tc::test::NeuronMask predictor_mask(const tc::model::LoadedModel& m) {
  std::vector<tc::test::Matrix> fc1, fc2;
  for (int64_t l = 0; l < m.spec.n_layer; ++l) {
    fc1.push_back(tc::test::load_matrix(m.file, tc::model::layer_tensor_name(l, "fc1")));
    fc2.push_back(tc::test::load_matrix(m.file, tc::model::layer_tensor_name(l, "fc2")));
  }
  const float threshold = m.predictors.threshold;
  return [fc1, fc2, threshold](const tc::test::FfnObservation& o) {
    auto hidden = tc::test::matvec(fc1[static_cast<size_t>(o.layer)], o.input);
    for (auto& h : hidden) h = std::max(h, 0.0);
    const auto scores = tc::test::matvec(fc2[static_cast<size_t>(o.layer)], hidden);
    std::vector<char> keep(scores.size());
    for (size_t i = 0; i < scores.size(); ++i) keep[i] = scores[i] > threshold;
    return keep;
  };
}

}  // namespace

TEST_CASE("sparse FFN decode matches the float64 reference over the predicted neurons", "[model][sparse]") {
  for (bool pwri : {false, true}) {
    INFO((pwri ? "pwri" : "gguf"));
    const auto loaded = planted_model(pwri ? "ref_pwri" : "ref_gguf", pwri);
    REQUIRE_FALSE(loaded->predictors.empty());
    auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse});
    const auto tokens = random_tokens(12, 3, kVocab);
    const auto logits = decode_each_logits(sparse, *backend, tokens);
    const auto ref = tc::test::reference_logits(loaded->file, loaded->spec, tokens, {}, predictor_mask(*loaded));
    for (size_t p = 0; p < tokens.size(); ++p) {
      INFO("position " << p);
      CHECK(tc::test::relative_error(logits.data() + p * kVocab, ref[p]) < 1e-4);
    }
    // It really ran sparse: every decode step, about the planted 10% computed.
    const auto& c = *sparse.sparse_counters();
    CHECK(c.sparse_steps == 12);
    CHECK(c.dense_steps == 0);
    for (int64_t l = 0; l < loaded->spec.n_layer; ++l) {
      const auto i = static_cast<size_t>(l);
      CHECK(c.token_layers[i] == 12);
      CHECK(c.computed[i] <= c.predicted[i]);
      const double computed = static_cast<double>(c.computed[i]) / (12.0 * 512.0);
      CHECK(computed > 0.03);
      CHECK(computed < 0.25);
    }
  }
}

TEST_CASE("sparse and dense passes give the same greedy tokens on planted models", "[model][sparse]") {
  for (const char* type : {"f16", "q8_0"}) {
    for (bool pwri : {false, true}) {
      INFO(type << (pwri ? " pwri" : " gguf"));
      const auto loaded = planted_model(std::string("agree_") + type + (pwri ? "_pwri" : "_gguf"), pwri, type);
      auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
      LlamaModel dense(*loaded, *backend);
      LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse});
      const auto tokens = random_tokens(16, 4, kVocab);
      const auto d = decode_each_logits(dense, *backend, tokens);
      const auto s = decode_each_logits(sparse, *backend, tokens);
      for (size_t p = 0; p < tokens.size(); ++p) {
        INFO("position " << p);
        const float* dp = d.data() + p * kVocab;
        const float* sp = s.data() + p * kVocab;
        std::vector<double> dd(dp, dp + kVocab);
        constexpr double kTolerance = 2e-2;
        CHECK(tc::test::relative_error(sp, dd) < kTolerance);
        // The same greedy token unless dense's top two are closer than the
        // tolerance (quantized GGUF files re-round ffn_down when transposed).
        std::vector<float> sorted(dp, dp + kVocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        const double scale = std::max(std::abs(sorted[0]), std::abs(*std::min_element(dp, dp + kVocab)));
        if (sorted[0] - sorted[1] > kTolerance * scale) {
          CHECK(std::max_element(dp, dp + kVocab) - dp == std::max_element(sp, sp + kVocab) - sp);
        }
      }
    }
  }
}

TEST_CASE("the sparse pass gives the same bits on 1 and 2 threads", "[model][sparse]") {
  const auto loaded = planted_model("threads", true, "q4_0");
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = threads});
    LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 4});
    // Steps of 3 tokens: several tokens share the union of predicted sets.
    const auto tokens = random_tokens(12, 5, kVocab);
    KvCache kv(*backend, sparse.spec(), 1, 64);
    std::vector<float> all, logits;
    for (size_t i = 0; i < tokens.size(); i += 3) {
      const StepSequence seq{0, std::span(tokens).subspan(i, 3), true};
      REQUIRE(sparse.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
      all.insert(all.end(), logits.begin(), logits.end());
    }
    runs.push_back(all);
  }
  REQUIRE(runs[0].size() == runs[1].size());
  CHECK(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)) == 0);
}

TEST_CASE("the sparse pass gives the same bits with its Q4_0 matrices and predictors repacked or not",
          "[model][sparse][q4_lanes16]") {
  const auto loaded = planted_model("repack", true, "q4_0");
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  ForwardOptions plain_options{.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 4};
  plain_options.cpu_repack = tc::kernels::CpuRepack::Off;
  LlamaModel plain(*loaded, *backend, plain_options);
  LlamaModel repacked(*loaded, *backend, {.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 4});
  REQUIRE(plain.repacked_weight_bytes() == 0);
  if (!tc::kernels::q4_lanes16_wanted(tc::kernels::CpuRepack::Auto)) {
    WARN("this CPU's matmul variant does not read the Q4_0 lane layout (portable): repacked vs plain not compared");
    return;
  }
  // Exactly attention, the untied head and the predictors (fc1 {128, 32},
  // fc2 {32, 512}) are repacked; not the gathered FFN rows.
  int64_t expected = 0;
  auto add = [&expected](const tc::kernels::Tensor& t) {
    REQUIRE(t.dtype == tc::kernels::DType::Q4_0);
    expected += (tc::kernels::lanes16_bytes(t.dtype, t.n_cols(), t.n_rows()) + 63) / 64 * 64;
  };
  const auto weights = tc::model::map_llama_weights(loaded->file, loaded->spec);
  if (weights.output.data != weights.token_embd.data) add(weights.output);
  for (const auto& l : weights.layers) {
    for (const auto* t : {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output}) add(*t);
  }
  for (const auto& p : loaded->predictors.layers) {
    add(p.fc1);
    add(p.fc2);
  }
  CHECK(static_cast<int64_t>(repacked.repacked_weight_bytes()) == expected);
  // One token per step, then steps of 3 (sparse, the union of predicted sets).
  auto run = [&](LlamaModel& m) {
    auto all = decode_each_logits(m, *backend, random_tokens(6, 31, kVocab));
    const auto tokens = random_tokens(9, 32, kVocab);
    KvCache kv(*backend, m.spec(), 1, 64);
    std::vector<float> logits;
    for (size_t i = 0; i < tokens.size(); i += 3) {
      const StepSequence seq{0, std::span(tokens).subspan(i, 3), true};
      REQUIRE(m.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  };
  const auto a = run(repacked);
  const auto b = run(plain);
  REQUIRE(a.size() == (6 + 9) * static_cast<size_t>(kVocab));
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  CHECK(repacked.sparse_counters()->dense_steps == 0);
}

TEST_CASE("a sequence's sparse logits do not depend on the other sequences of the step", "[model][sparse]") {
  constexpr float kMissingThreshold = 0.5f;  // removing the per-token mask fails this test (checked)
  const auto a = random_tokens(8, 11, kVocab);
  const auto b = random_tokens(8, 12, kVocab);
  for (const char* type : {"f16", "q8_0"}) {
    INFO(type);
    const auto loaded = planted_model(std::string("batch_") + type, true, type);
    // A high threshold makes the predictors miss firing neurons, so the
    // step's union of predicted sets would add neurons to each token.
    for (auto& p : loaded->predictors.layers) p.threshold = kMissingThreshold;
    auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse});
    // Alone: each sequence in its own cache, one token per step.
    const auto alone_a = decode_each_logits(sparse, *backend, a);
    const auto alone_b = decode_each_logits(sparse, *backend, b);
    // Together: both in one step each time (their predicted sets differ).
    KvCache kv(*backend, sparse.spec(), 2, 64);
    std::vector<float> together_a, together_b, logits;
    for (size_t i = 0; i < a.size(); ++i) {
      const StepSequence seqs[] = {{0, std::span(a).subspan(i, 1), false, true},
                                   {1, std::span(b).subspan(i, 1), false, true}};
      REQUIRE(sparse.forward(seqs, kv, logits) == StepStatus::Ok);
      together_a.insert(together_a.end(), logits.begin(), logits.begin() + kVocab);
      together_b.insert(together_b.end(), logits.begin() + kVocab, logits.end());
    }
    CHECK(std::memcmp(alone_a.data(), together_a.data(), alone_a.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(alone_b.data(), together_b.data(), alone_b.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("a decode next to another sequence's long prompt chunk still runs sparse, with the same bits", "[model][sparse]") {
  const auto loaded = planted_model("mixed", true, "f16");
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse});
  const auto a = random_tokens(6, 21, kVocab);
  const auto prompt = random_tokens(20, 22, kVocab);
  const auto alone = decode_each_logits(sparse, *backend, a);
  // A decodes; at its third token B's 20-token prompt (dense) joins the step.
  KvCache kv(*backend, sparse.spec(), 2, 64);
  std::vector<float> mixed, logits;
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<StepSequence> seqs = {{0, std::span(a).subspan(i, 1), false, true}};
    if (i == 2) seqs.push_back({1, prompt, false, false});
    REQUIRE(sparse.forward(seqs, kv, logits) == StepStatus::Ok);
    mixed.insert(mixed.end(), logits.begin(), logits.begin() + kVocab);
  }
  CHECK(std::memcmp(alone.data(), mixed.data(), alone.size() * sizeof(float)) == 0);
  // Both paths ran: 6 steps with sparse rows, one of them with dense rows too.
  CHECK(sparse.sparse_counters()->sparse_steps == 12);
  CHECK(sparse.sparse_counters()->dense_steps == 1);
}

TEST_CASE("steps above the crossover run the dense FFN", "[model][sparse]") {
  const auto loaded = planted_model("crossover", false);
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse, .sparse_max_tokens = 4});
  LlamaModel dense(*loaded, *backend);
  const auto tokens = random_tokens(10, 6, kVocab);
  // A 10-token prefill is above the crossover: the same bits as the dense pass.
  const auto s = one_pass(sparse, *backend, tokens);
  const auto d = one_pass(dense, *backend, tokens);
  CHECK(std::memcmp(s.data(), d.data(), s.size() * sizeof(float)) == 0);
  CHECK(sparse.sparse_counters()->dense_steps == 1);
  CHECK(sparse.sparse_counters()->sparse_steps == 0);
}

TEST_CASE("the dense pass of a PWRI file matches its GGUF twin", "[model][sparse]") {
  // f32: ffn_down_t is exactly ffn_down transposed. Small steps use the
  // scaled-row path, large ones the transposed tiles.
  const auto gguf = planted_model("twin_gguf", false);
  const auto pwri = planted_model("twin_pwri", true);
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel g(*gguf, *backend);
  LlamaModel p(*pwri, *backend);
  for (size_t n : {size_t{1}, size_t{5}, size_t{20}}) {
    INFO(n << " tokens");
    const auto tokens = random_tokens(n, 7 + n, kVocab);
    const auto lg = one_pass(g, *backend, tokens);
    const auto lp = one_pass(p, *backend, tokens);
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> ref(lg.begin() + static_cast<std::ptrdiff_t>(t * kVocab),
                              lg.begin() + static_cast<std::ptrdiff_t>((t + 1) * kVocab));
      CHECK(tc::test::relative_error(lp.data() + t * kVocab, ref) < 1e-5);
    }
  }
}

TEST_CASE("sparse mode refuses models it cannot run", "[model][sparse]") {
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  for (auto form : {tc::model::FfnForm::SwiGLU, tc::model::FfnForm::ReGLU}) {
    tc::profiler::MakeModelOptions o;
    o.output = tc::test::scratch_dir(std::string("sparse_refuse_") + std::string(ffn_form_name(form))) / "m.gguf";
    o.n_vocab = kVocab;
    o.n_embd = 64;
    o.n_layer = 1;
    o.n_ff = 128;
    o.n_head = 4;
    o.ffn_form = form;
    tc::profiler::make_model(o);
    const auto loaded = tc::model::load_model(o.output);
    CHECK_NOTHROW(LlamaModel(*loaded, *backend));
    CHECK_THROWS_WITH(LlamaModel(*loaded, *backend, {.ffn_mode = FfnMode::Sparse}),
                      Catch::Contains(form == tc::model::FfnForm::SwiGLU ? "ReLU-family" : "predictors"));
  }
}
