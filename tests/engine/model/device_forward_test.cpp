// The forward pass's device path (weights placed on the backend, ids and
// positions copied in, logits copied out) on HostDeviceBackend, a "GPU" that
// lives in host memory: the same logits as the CPU backend, bit for bit, and
// the models and options a GPU backend cannot run yet refused with a reason.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/sparsity_plan.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/test_util.h"

using tc::model::FfnMode;
using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;

std::unique_ptr<tc::model::LoadedModel> small_model(const std::string& name, const std::string& type, bool tied,
                                                    bool sparse = false, bool pwri = false) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("device_forward_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 192;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.tied_embeddings = tied;
  o.seed = 5;
  o.n_threads = 2;
  if (sparse) {
    o.ffn_form = tc::model::FfnForm::ReGLU;
    o.sparse.enabled = true;
    o.sparse.predictor_rank = 32;
    o.sparse.layout = pwri ? tc::profiler::SparseLayout::PowerInfer : tc::profiler::SparseLayout::Gguf;
  }
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

// Two sequences prefilled in one step (one with every position's logits),
// then four steps decoding both: every step's logits, concatenated.
std::vector<float> run_steps(LlamaModel& m, tc::kernels::Backend& backend) {
  KvCache kv(backend, m.spec(), 2, 64);
  const auto a = tc::test::random_tokens(9, 1, kVocab);
  const auto b = tc::test::random_tokens(5, 2, kVocab);
  std::vector<float> all, logits;
  const StepSequence prefill[] = {{0, a, true}, {1, b, false}};
  REQUIRE(m.forward(prefill, kv, logits) == StepStatus::Ok);
  all.insert(all.end(), logits.begin(), logits.end());
  for (int step = 0; step < 4; ++step) {
    const TokenId next_a = (7 * step + 3) % kVocab, next_b = (11 * step + 5) % kVocab;
    const StepSequence decode[] = {{0, std::span(&next_a, 1), false, true}, {1, std::span(&next_b, 1), false, true}};
    REQUIRE(m.forward(decode, kv, logits) == StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

}  // namespace

TEST_CASE("the device path gives the CPU path's logits bit for bit", "[model][device]") {
  for (const char* type : {"f32", "f16", "q4_0"}) {
    for (bool tied : {false, true}) {
      INFO(type << (tied ? " tied" : ""));
      const auto loaded = small_model(std::string(type) + (tied ? "_tied" : ""), type, tied);
      auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
      LlamaModel on_cpu(*loaded, *cpu);
      tc::test::HostDeviceBackend device(2);
      LlamaModel on_device(*loaded, device);

      // Every tensor was uploaded once (a tied head shares token_embd's copy).
      const auto& spec = loaded->spec;
      CHECK(device.uploads == 2 + (tied ? 0 : 1) + 9 * static_cast<int>(spec.n_layer));
      size_t file_bytes = 0;
      for (const auto& t : loaded->file.tensors()) file_bytes += loaded->file.tensor_data(t).size();
      CHECK(device.uploaded_bytes == file_bytes);

      const auto want = run_steps(on_cpu, *cpu);
      const auto got = run_steps(on_device, device);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      // Only token ids and positions went in, only logits came out:
      // 9 + 5 prefill tokens and 4 x 2 decoded, 10 + 4 x 2 logit rows.
      CHECK(device.to_device_bytes == 2 * sizeof(int32_t) * (14 + 8));
      CHECK(device.to_host_bytes == sizeof(float) * kVocab * (10 + 8));
    }
  }
}

TEST_CASE("a device backend refuses what runs on the CPU only so far, saying so", "[model][device]") {
  tc::test::HostDeviceBackend device(1);
  const auto gguf = small_model("sparse_gguf", "f32", false, true, false);
  const auto pwri = small_model("sparse_pwri", "f32", false, true, true);
  CHECK_THROWS_WITH(LlamaModel(*gguf, device, {.ffn_mode = FfnMode::Sparse}),
                    Catch::Contains("CPU backend only") && Catch::Contains("--sparsity dense"));
  CHECK_THROWS_WITH(LlamaModel(*pwri, device), Catch::Contains("PWRI") && Catch::Contains("CPU backend only"));

  // "auto" resolves to dense on a GPU, and says why.
  const auto plan = tc::sparse::plan_sparsity(*gguf, {}, 0, false);
  CHECK(plan.forward.ffn_mode == FfnMode::Dense);
  CHECK_THAT(plan.summary, Catch::Contains("CPU backend only"));
  CHECK(tc::sparse::plan_sparsity(*gguf, {}, 0, true).forward.ffn_mode == FfnMode::Sparse);

  // Observers read activations in host memory.
  LlamaModel dense(*gguf, device);
  struct Observer : tc::model::ForwardObserver {
    void on_ffn(int64_t, int64_t, const float*, const float*, const float*) override {}
  } observer;
  CHECK_THROWS_WITH(dense.set_observer(&observer), Catch::Contains("needs the CPU backend"));
  CHECK_NOTHROW(dense.set_observer(nullptr));
}
