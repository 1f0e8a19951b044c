// [cuda] The whole forward pass on the CUDA backend against the float64
// reference (f32 models) and against the CPU backend (every weight type),
// prefill and KV-cache decoding. Skipped with a message where no CUDA
// backend is available (CPU-only builds, machines without a GPU).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/engine/model/step_logits.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;

std::unique_ptr<tc::model::LoadedModel> gpu_test_model(const std::string& type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("forward_cuda_" + type) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = type == "q4_k" || type == "q6_k" ? 256 : 128;
  o.n_layer = 2;
  o.n_ff = type == "q4_k" || type == "q6_k" ? 512 : 320;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.seed = 17;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

}  // namespace

TEST_CASE("[cuda] the forward pass on the GPU matches the float64 reference and the CPU", "[cuda][model]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  const auto tokens = tc::test::random_tokens(14, 9, kVocab);
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"}) {
    INFO(type);
    const auto loaded = gpu_test_model(type);
    auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel on_cpu(*loaded, *cpu);
    LlamaModel on_gpu(*loaded, *cuda);
    const auto want = tc::test::prompt_then_decode_logits(on_cpu, *cpu, tokens, 8);
    const auto got = tc::test::prompt_then_decode_logits(on_gpu, *cuda, tokens, 8);
    REQUIRE(got.size() == want.size());
    const auto ref = tc::test::reference_logits(loaded->file, loaded->spec, tokens);
    // The CPU quantizes activations to int8 for the quantized types; the GPU
    // may not, so both are held to the reference's distance from the CPU.
    const bool exact_weights = std::string(type) == "f32";
    for (size_t p = 0; p < tokens.size(); ++p) {
      INFO("position " << p);
      const float* g = got.data() + p * kVocab;
      const float* c = want.data() + p * kVocab;
      if (exact_weights) {
        CHECK(tc::test::relative_error(g, ref[p]) < 1e-4);
      } else {
        const double cpu_error = tc::test::relative_error(c, ref[p]);
        CHECK(tc::test::relative_error(g, ref[p]) < std::max(2.0 * cpu_error, 1e-3));
      }
    }
  }
}
