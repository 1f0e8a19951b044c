// LlamaModel against the float64 reference, KV-cache decoding against one
// pass, and batched sequences against each alone, on generated models.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "kernels/cpu/lanes16.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

using tc::test::random_tokens;

namespace {

struct TestModel {
  std::unique_ptr<tc::model::LoadedModel> loaded;
  std::unique_ptr<tc::kernels::Backend> backend;
  std::unique_ptr<LlamaModel> model;
};

TestModel make_test_model(const std::string& name, const std::string& type, tc::model::FfnForm form,
                          bool tied = false, int n_threads = 2) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("forward_" + name) / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = type;
  o.ffn_form = form;
  o.tied_embeddings = tied;
  o.rope_freq_base = 10000.0;
  o.seed = 11;
  if (type == "q3_k" || type == "q4_k" || type == "q5_k" || type == "q6_k" || type == "q4_k_m" || type == "iq4_xs") {
    o.n_embd = 256;
    o.n_ff = 512;
    o.n_head = 8;
  }
  tc::profiler::make_model(o);
  TestModel m;
  m.loaded = tc::model::load_model(o.output);
  m.backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = n_threads});
  m.model = std::make_unique<LlamaModel>(*m.loaded, *m.backend);
  return m;
}

// Logits for every position of one sequence in one step.
std::vector<float> one_pass(TestModel& m, const std::vector<TokenId>& tokens) {
  KvCache kv(*m.backend, m.model->spec(), 1, 64);
  std::vector<float> logits;
  const StepSequence seq{0, tokens, true};
  REQUIRE(m.model->forward({&seq, 1}, kv, logits) == StepStatus::Ok);
  return logits;
}

}  // namespace

TEST_CASE("forward logits match the float64 reference on f32 models", "[model][forward]") {
  for (auto form : {tc::model::FfnForm::SwiGLU, tc::model::FfnForm::ReGLU, tc::model::FfnForm::DReLU}) {
    for (bool tied : {false, true}) {
      const std::string name = std::string(tc::model::ffn_form_name(form)) + (tied ? "_tied" : "");
      INFO(name);
      auto m = make_test_model(name, "f32", form, tied);
      const auto tokens = random_tokens(12, 5, 512);
      const auto logits = one_pass(m, tokens);
      const auto ref = tc::test::reference_logits(m.loaded->file, m.loaded->spec, tokens);
      for (size_t p = 0; p < tokens.size(); ++p) {
        INFO("position " << p);
        CHECK(tc::test::relative_error(logits.data() + p * 512, ref[p]) < 1e-4);
      }
    }
  }
}

TEST_CASE("forward logits on quantized models stay close to the reference", "[model][forward]") {
  // The reference dequantizes the same weights, so only the engine's
  // activation rounding (f16/bf16 conversions, Q8 activations) differs:
  // bf16 rounds each matmul input to 8 significant bits where f16 keeps 11,
  // hence 8x f16's bound (measured 0.0026-0.0041 here).
  const std::pair<const char*, double> cases[] = {{"f16", 1e-3}, {"bf16", 8e-3}, {"q8_0", 3e-2},
                                                  {"q4_0", 3e-2}, {"q4_k_m", 3e-2}};
  for (const auto& [type, tolerance] : cases) {
    INFO(type);
    auto m = make_test_model(type, type, tc::model::FfnForm::SwiGLU);
    const auto tokens = random_tokens(8, 6, 512);
    const auto logits = one_pass(m, tokens);
    const auto ref = tc::test::reference_logits(m.loaded->file, m.loaded->spec, tokens);
    for (size_t p = 0; p < tokens.size(); ++p) {
      CHECK(tc::test::relative_error(logits.data() + p * 512, ref[p]) < tolerance);
    }
  }
}

TEST_CASE("decoding token by token equals one pass over the prefix", "[model][forward]") {
  for (const char* type : {"f32", "q8_0"}) {
    INFO(type);
    auto m = make_test_model(std::string("kv_") + type, type, tc::model::FfnForm::ReGLU);
    const auto tokens = random_tokens(10, 7, 512);
    const auto full = one_pass(m, tokens);

    KvCache kv(*m.backend, m.model->spec(), 1, 64);
    std::vector<float> logits;
    // A 4-token prefill chunk, then one token at a time.
    const StepSequence prefill{0, std::span(tokens).first(4), true};
    REQUIRE(m.model->forward({&prefill, 1}, kv, logits) == StepStatus::Ok);
    for (size_t p = 0; p < 4; ++p) {
      for (int64_t i = 0; i < 512; ++i) CHECK(logits[p * 512 + i] == Approx(full[p * 512 + i]).margin(1e-4));
    }
    for (size_t p = 4; p < tokens.size(); ++p) {
      const StepSequence step{0, std::span(tokens).subspan(p, 1), false};
      REQUIRE(m.model->forward({&step, 1}, kv, logits) == StepStatus::Ok);
      REQUIRE(logits.size() == 512);
      std::vector<double> want(full.begin() + static_cast<long>(p * 512), full.begin() + static_cast<long>((p + 1) * 512));
      CHECK(tc::test::relative_error(logits.data(), want) < 1e-5);
    }
    CHECK(kv.n_used(0) == 10);
  }
}

TEST_CASE("several sequences in one step give the same logits as each alone", "[model][forward]") {
  auto m = make_test_model("batch", "q4_0", tc::model::FfnForm::SwiGLU);
  const auto a = random_tokens(6, 8, 512);
  const auto b = random_tokens(9, 9, 512);
  const auto c = random_tokens(1, 10, 512);
  const auto la = one_pass(m, a);
  const auto lb = one_pass(m, b);
  const auto lc = one_pass(m, c);

  KvCache kv(*m.backend, m.model->spec(), 3, 64);
  std::vector<float> logits;
  const StepSequence batch[] = {{2, b, false}, {0, a, true}, {1, c, false}};
  REQUIRE(m.model->forward(batch, kv, logits) == StepStatus::Ok);
  REQUIRE(logits.size() == (1 + 6 + 1) * 512u);
  auto expect_row = [&](size_t row, const std::vector<float>& alone, size_t alone_row) {
    std::vector<double> want(alone.begin() + static_cast<long>(alone_row * 512),
                             alone.begin() + static_cast<long>((alone_row + 1) * 512));
    CHECK(tc::test::relative_error(logits.data() + row * 512, want) < 1e-5);
  };
  expect_row(0, lb, 8);
  for (size_t p = 0; p < 6; ++p) expect_row(1 + p, la, p);
  expect_row(7, lc, 0);
  CHECK(kv.n_used(0) == 6);
  CHECK(kv.n_used(1) == 1);
  CHECK(kv.n_used(2) == 9);

  // A decode step for two of them continues each cache independently.
  const std::vector<TokenId> next_a = {a[0]};
  const std::vector<TokenId> next_b = {b[0]};
  const StepSequence decode[] = {{0, next_a, false}, {2, next_b, false}};
  REQUIRE(m.model->forward(decode, kv, logits) == StepStatus::Ok);
  std::vector<TokenId> a2 = a, b2 = b;
  a2.push_back(a[0]);
  b2.push_back(b[0]);
  const auto la2 = one_pass(m, a2);
  const auto lb2 = one_pass(m, b2);
  expect_row(0, la2, 6);
  expect_row(1, lb2, 9);
}

TEST_CASE("forward refuses a full context and bad tokens without changing state", "[model][forward]") {
  auto m = make_test_model("limits", "f16", tc::model::FfnForm::SwiGLU);
  KvCache kv(*m.backend, m.model->spec(), 1, 8);
  std::vector<float> logits;
  const auto tokens = random_tokens(9, 12, 512);
  const StepSequence too_long{0, tokens, false};
  CHECK(m.model->forward({&too_long, 1}, kv, logits) == StepStatus::ContextFull);
  CHECK(kv.n_used(0) == 0);
  const std::vector<TokenId> bad = {1, 512};
  const StepSequence bad_seq{0, bad, false};
  CHECK(m.model->forward({&bad_seq, 1}, kv, logits) == StepStatus::InvalidToken);
  CHECK(kv.n_used(0) == 0);
}

TEST_CASE("forward results do not depend on the thread count", "[model][forward]") {
  auto one = make_test_model("threads1", "q8_0", tc::model::FfnForm::DReLU, false, 1);
  auto three = make_test_model("threads3", "q8_0", tc::model::FfnForm::DReLU, false, 3);
  const auto tokens = random_tokens(7, 13, 512);
  CHECK(one_pass(one, tokens) == one_pass(three, tokens));
}

TEST_CASE("Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, K-quant, IQ4_XS and IQ4_NL models give the same logits bits repacked or not",
          "[model][forward][q4_lanes16]") {
  // n_embd 64 (k/v: 32 rows; the K-quants and IQ4_XS: 256 and 64), n_ff 160 (512), tied
  // and untied heads: every matrix has whole 16-row tiles; a 7-token prompt
  // and a 3-sequence step cover 1, 3 and 7 tokens per matmul. Q4_K_M: its
  // Q4_K and Q6_K matrices in their two layouts side by side.
  using tc::kernels::CpuRepack;
  for (const std::string dtype :
       {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q3_k", "q4_k", "q4_k_m", "q5_k", "q6_k", "iq4_xs", "iq4_nl"}) {
    for (bool tied : {false, true}) {
      INFO(dtype << (tied ? " tied" : " untied"));
      auto m = make_test_model("repack_" + dtype + (tied ? "_tied" : ""), dtype, tc::model::FfnForm::ReGLU, tied);
      tc::model::ForwardOptions plain_options;
      plain_options.cpu_repack = CpuRepack::Off;
      LlamaModel plain(*m.loaded, *m.backend, plain_options);
      REQUIRE(plain.repacked_weight_bytes() == 0);
      LlamaModel& repacked = *m.model;  // default options: CpuRepack::Auto
      using tc::kernels::DType;
      const DType repacked_dtype = dtype == "q8_0" ? DType::Q8_0
                                   : dtype == "q4_1" ? DType::Q4_1
                                   : dtype == "q4_0" ? DType::Q4_0
                                   : dtype == "q3_k" ? DType::Q3_K
                                   : dtype == "q5_k" ? DType::Q5_K
                                   : dtype == "q6_k" ? DType::Q6_K
                                   : dtype == "iq4_xs" ? DType::IQ4_XS
                                   : dtype == "iq4_nl" ? DType::IQ4_NL
                                   : dtype == "q5_0" ? DType::Q5_0
                                   : dtype == "q5_1" ? DType::Q5_1
                                                     : DType::Q4_K;  // q4_k, q4_k_m
      const bool wanted = tc::kernels::lanes16_wanted(repacked_dtype, CpuRepack::Auto);
      if (wanted) {
        // Every matrix but the tied head (get_rows reads token_embd's rows).
        CHECK(repacked.repacked_weight_bytes() > 0);
      } else {
        CHECK(repacked.repacked_weight_bytes() == 0);
        WARN("this CPU's matmul variant does not read the " << dtype << " lane layout: repacked vs plain not compared");
      }
      auto run = [&](LlamaModel& model) {
        KvCache kv(*m.backend, model.spec(), 3, 64);
        std::vector<float> prompt, step;
        const auto a = random_tokens(7, 21, 512);
        const StepSequence first[] = {{0, a, true}};
        REQUIRE(model.forward(first, kv, prompt) == StepStatus::Ok);
        const auto b = random_tokens(1, 22, 512);
        const auto c = random_tokens(2, 23, 512);
        const std::vector<TokenId> next = {a[3]};
        const StepSequence batch[] = {{0, next, false}, {1, b, true}, {2, c, true}};
        REQUIRE(model.forward(batch, kv, step) == StepStatus::Ok);
        prompt.insert(prompt.end(), step.begin(), step.end());
        return prompt;
      };
      const auto repacked_logits = run(repacked);
      const auto plain_logits = run(plain);
      REQUIRE(repacked_logits.size() == (7 + 1 + 1 + 2) * 512u);
      REQUIRE(repacked_logits == plain_logits);
    }
  }
}
