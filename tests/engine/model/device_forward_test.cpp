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
#include "tests/engine/model/device_test_steps.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/test_util.h"

using tc::model::FfnMode;
using tc::model::LlamaModel;

TEST_CASE("the device path gives the CPU path's logits bit for bit", "[model][device]") {
  for (const char* type : {"f32", "f16", "q4_0"}) {
    for (bool tied : {false, true}) {
      INFO(type << (tied ? " tied" : ""));
      const auto loaded = tc::test::small_device_model(std::string(type) + (tied ? "_tied" : ""), type, tied);
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

      const auto want = tc::test::run_two_sequences(on_cpu, *cpu, 4);
      const auto got = tc::test::run_two_sequences(on_device, device, 4);
      REQUIRE(got.size() == want.size());
      CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
      // Only token ids and positions went in, only logits came out:
      // 9 + 5 prefill tokens and 4 x 2 decoded, 10 + 4 x 2 logit rows.
      CHECK(device.to_device_bytes == 2 * sizeof(int32_t) * (14 + 8));
      CHECK(device.to_host_bytes == sizeof(float) * tc::test::kDeviceTestVocab * (10 + 8));
    }
  }
}

TEST_CASE("a device backend refuses what runs on the CPU only so far, saying so", "[model][device]") {
  tc::test::HostDeviceBackend device(1);
  const auto gguf = tc::test::small_device_model("sparse_gguf", "f32", false, true, false);
  const auto pwri = tc::test::small_device_model("sparse_pwri", "f32", false, true, true);
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
