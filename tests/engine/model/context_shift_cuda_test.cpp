// [cuda] Context shift on the CUDA backend: the GPU's cache after
// LlamaModel::shift_context holds, bit for bit, what the CPU's shift makes
// of the same bytes (the keys pass through host memory either way), and a
// decode step after it gives the CPU's logits on that cache. Skipped with a
// message where no CUDA backend is available.
#include <catch2/catch.hpp>

#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;

namespace {

constexpr int64_t kVocab = 512, kCtx = 64, kUsed = 40, kKeep = 4, kDiscard = 15;

// The rows [0, n) of every layer's K and V of slot 0, in host memory.
std::vector<std::byte> cache_bytes(tc::kernels::Backend& b, const KvCache& kv, int64_t n_layer, int64_t n) {
  std::vector<std::byte> out;
  for (int64_t l = 0; l < n_layer; ++l) {
    for (const auto& [matrix, row_bytes] : {std::pair{kv.k(0, l), kv.k_row_bytes()}, std::pair{kv.v(0, l), kv.v_row_bytes()}}) {
      std::vector<std::byte> rows(static_cast<size_t>(n * row_bytes));
      b.copy_to_host(rows.data(), matrix, rows.size());
      b.synchronize();
      out.insert(out.end(), rows.begin(), rows.end());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("[cuda] a context shift on the GPU writes the CPU's shift of the same bytes", "[cuda][model][context_shift]") {
  TC_CUDA_BACKEND_OR_SKIP(cuda);
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("context_shift_cuda") / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f32";  // the two sides' logits then differ by their sums' order only
  o.seed = 19;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const int64_t n_layer = loaded->spec.n_layer;
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel on_cpu(*loaded, *cpu);
  LlamaModel on_gpu(*loaded, *cuda);
  const auto tokens = tc::test::random_tokens(kUsed + 1, 23, kVocab);

  KvCache gpu_kv = on_gpu.make_kv_cache(1, kCtx);
  std::vector<float> logits;
  const StepSequence prefill{0, std::span(tokens).first(kUsed), false};
  REQUIRE(on_gpu.forward({&prefill, 1}, gpu_kv, logits) == StepStatus::Ok);
  // The CPU's cache starts from the GPU's bytes.
  KvCache cpu_kv = on_cpu.make_kv_cache(1, kCtx);
  const auto before = cache_bytes(*cuda, gpu_kv, n_layer, kUsed);
  size_t offset = 0;
  for (int64_t l = 0; l < n_layer; ++l) {
    for (const auto& [matrix, row_bytes] :
         {std::pair{cpu_kv.k(0, l), cpu_kv.k_row_bytes()}, std::pair{cpu_kv.v(0, l), cpu_kv.v_row_bytes()}}) {
      std::memcpy(matrix, before.data() + offset, static_cast<size_t>(kUsed * row_bytes));
      offset += static_cast<size_t>(kUsed * row_bytes);
    }
  }
  cpu_kv.set_used(0, kUsed);

  on_gpu.shift_context(gpu_kv, 0, kKeep, kDiscard);
  on_cpu.shift_context(cpu_kv, 0, kKeep, kDiscard);
  REQUIRE(gpu_kv.n_used(0) == cpu_kv.n_used(0));
  CHECK(cache_bytes(*cuda, gpu_kv, n_layer, gpu_kv.n_used(0)) == cache_bytes(*cpu, cpu_kv, n_layer, cpu_kv.n_used(0)));

  // The next token on each side's shifted cache.
  std::vector<float> gpu_logits, cpu_logits;
  const StepSequence next{0, std::span(tokens).last(1), false};
  REQUIRE(on_gpu.forward({&next, 1}, gpu_kv, gpu_logits) == StepStatus::Ok);
  REQUIRE(on_cpu.forward({&next, 1}, cpu_kv, cpu_logits) == StepStatus::Ok);
  const std::vector<double> want(cpu_logits.begin(), cpu_logits.end());
  CHECK(tc::test::relative_error(gpu_logits.data(), want) < 1e-3);
}
