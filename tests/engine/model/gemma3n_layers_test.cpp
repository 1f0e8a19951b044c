// Gemma 3n (Architecture::altup_layers): the spec read from a make-model
// file (AltUp's streams, llama.cpp's constants, the caches shared past
// layer 20), a prompt's logits the same at once, in pieces and beside
// another sequence, the activation sparsity against a float64 reference,
// and the files and backends refused. Logits against llama.cpp:
// arch_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/model/altup_streams.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/engine/model/step_logits.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;

// 22 layers of 64 (4 heads of 16, 2 KV heads): every fifth layer global,
// layers 20 and 21 windowed over layer 18's cache.
tc::profiler::MakeModelOptions gemma3n(const std::string& name) {
  tc::profiler::MakeModelOptions o;
  o.arch = "gemma3n";
  o.output = tc::test::scratch_dir("gemma3n_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 22;
  o.n_ff = 128;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.sliding_window = 8;
  o.weight_type = "f32";
  o.seed = 97;
  o.n_threads = 2;
  return o;
}

}  // namespace

TEST_CASE("a Gemma 3n file's AltUp streams, sparse layers and shared caches", "[model][gemma3n]") {
  const auto o = gemma3n("spec");
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto& s = loaded->spec;
  CHECK(s.altup.n_streams == 4);
  CHECK(s.altup.laurel_rank == 64);
  CHECK(s.altup.n_sparse_layers == 10);
  CHECK(s.n_embd_per_layer == 256);
  CHECK(s.attn_scale == 1.0f);
  CHECK(s.final_softcap == 30.0f);
  for (int64_t l = 0; l < s.n_layer; ++l) {
    INFO("layer " << l);
    CHECK(s.is_swa(l) == (l % 5 != 4));
    CHECK(s.shape(l).kv_layer == (l < 20 ? l : 18));
  }
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  // 20 layers cache their own f16 rows (2 KV heads of 16), keys and values.
  const KvCache kv = model.make_kv_cache(1, 32);
  CHECK(kv.bytes() == static_cast<size_t>(32 * 20 * 2 * 32) * sizeof(uint16_t));
  CHECK(kv.k(0, 20) == kv.k(0, 18));
  CHECK(kv.v(0, 21) == kv.v(0, 18));
  CHECK(kv.k(0, 19) != kv.k(0, 18));
}

TEST_CASE("a Gemma 3n prompt gives the same logits at once, in pieces and beside another", "[model][gemma3n]") {
  // One token at a time, the sparse layers compute up only where their
  // gates are kept (from the file's rows, where Q4_0's dense matmul reads
  // a repacked copy); the prompt at once, every row.
  const std::string type = GENERATE("f32", "q4_0");
  INFO(type);
  auto o = gemma3n("chunks_" + type);
  o.weight_type = type;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const auto tokens = tc::test::random_tokens(30, 99, kVocab);
  std::vector<float> at_once;
  KvCache a = model.make_kv_cache(1, 64);
  const StepSequence whole{0, tokens, false};
  REQUIRE(model.forward({&whole, 1}, a, at_once) == StepStatus::Ok);
  CHECK(tc::test::relative_max_difference(tc::test::last_logits_in_pieces(model, tokens, 20), at_once) < 1e-4);
}

TEST_CASE("gaussian_top_k keeps what lies above mean + 1.645 sd, against float64", "[model][gemma3n]") {
  std::mt19937 rng(101);
  std::normal_distribution<float> normal(0.3f, 2.0f);
  constexpr int64_t kRows = 5, kWidth = 1000;
  std::vector<float> gate(kRows * kWidth);
  for (float& g : gate) g = normal(rng);
  const std::vector<float> input = gate;
  tc::model::gaussian_top_k(gate.data(), kRows, kWidth);
  int64_t kept = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    const float* x = input.data() + r * kWidth;
    double mean = 0, sq = 0;
    for (int64_t i = 0; i < kWidth; ++i) mean += x[i];
    mean /= kWidth;
    for (int64_t i = 0; i < kWidth; ++i) sq += (x[i] - mean) * (x[i] - mean);
    const double cutoff = mean + 1.6448533535003662 * std::sqrt(sq / (kWidth - 1));
    for (int64_t i = 0; i < kWidth; ++i) {
      const double want = std::max(0.0, x[i] - cutoff);
      CHECK(std::fabs(gate[static_cast<size_t>(r * kWidth + i)] - want) < 1e-5);
      kept += want > 0 ? 1 : 0;
    }
  }
  // About the normal's 5% above its 95th percentile.
  CHECK(kept > kRows * kWidth * 3 / 100);
  CHECK(kept < kRows * kWidth * 7 / 100);
}

TEST_CASE("Gemma 3n files and backends that cannot run are refused, naming the key", "[model][gemma3n]") {
  auto o = gemma3n("refused");
  o.n_layer = 5;
  tc::profiler::make_model(o);
  const auto f = tc::gguf::GgufFile::open(o.output);
  REQUIRE(tc::test::load_error(f).empty());
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "gemma3n_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  CHECK_THAT(tc::test::load_error(with("gemma3n.altup.active_idx", tc::gguf::Value(uint32_t{1}))),
             Catch::Contains("gemma3n.altup.active_idx") && Catch::Contains("stream 0"));
  CHECK_THAT(tc::test::load_error(with("gemma3n.altup.num_inputs", tc::gguf::Value(uint32_t{1}))),
             Catch::Contains("gemma3n.altup.num_inputs"));
  // Three streams where the file's tensors hold four.
  CHECK_THAT(tc::test::load_error(with("gemma3n.altup.num_inputs", tc::gguf::Value(uint32_t{3}))),
             Catch::Contains("altup"));
  CHECK_THAT(tc::test::load_error(
                 tc::test::copy_gguf(f, "gemma3n_refused", "blk.2.laurel_l.weight", nullptr)),
             Catch::Contains("blk.2.laurel_l.weight"));

  const auto loaded = tc::model::load_model(o.output);
  tc::test::HostDeviceBackend device(2);
  CHECK_THROWS_WITH(LlamaModel(*loaded, device),
                    Catch::Contains("gemma3n") && Catch::Contains("CPU backend only"));
}
