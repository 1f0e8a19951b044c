// Gemma 4's layers of their own shapes (Architecture::gemma4_layers): the
// spec read from a make-model file, the KV cache's layout where the last
// layers share earlier caches, a decode after a context shift against a
// fresh pass, the files refused with the key named, and the paths such
// models do not take yet. Logits against llama.cpp: arch_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"
#include "kernels/cpu/quantize.h"
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

// Layers 0-1 and 3-4 windowed (heads of 16, 2 KV heads), 2 and 5 global
// (heads of 32, 1 KV head); 3-5 share the caches of 1 and 2.
tc::profiler::MakeModelOptions gemma4(const std::string& name) {
  tc::profiler::MakeModelOptions o;
  o.arch = "gemma4";
  o.output = tc::test::scratch_dir("gemma4_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 6;
  o.n_ff = 256;
  o.n_head = 8;
  o.n_head_kv = 2;
  o.shared_kv_layers = 3;
  o.n_embd_per_layer = 16;
  o.sliding_window = 16;
  o.weight_type = "f32";
  o.seed = 91;
  o.n_threads = 2;
  return o;
}


}  // namespace

TEST_CASE("a Gemma 4 file's layers have their own heads, widths and caches", "[model][gemma4]") {
  const auto o = gemma4("spec");
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  REQUIRE(s.layers_differ());
  CHECK(s.head_dim == 32);  // the global layers'
  CHECK(s.n_head_kv == 1);
  CHECK(s.n_embd_per_layer == 16);
  CHECK(s.attn_scale == 1.0f);
  CHECK(s.final_softcap == 30.0f);  // llama.cpp's default where the file names none
  const int64_t want_head_dim[] = {16, 16, 32, 16, 16, 32};
  const int64_t want_kv_heads[] = {2, 2, 1, 2, 2, 1};
  const int64_t want_ff[] = {256, 256, 256, 512, 512, 512};
  const int64_t want_kv_layer[] = {0, 1, 2, 1, 1, 2};
  for (int64_t l = 0; l < s.n_layer; ++l) {
    INFO("layer " << l);
    const auto i = static_cast<size_t>(l);
    CHECK(s.is_swa(l) == (l != 2 && l != 5));
    CHECK(s.shape(l).head_dim == want_head_dim[i]);
    CHECK(s.shape(l).n_rot == want_head_dim[i]);
    CHECK(s.shape(l).n_head_kv == want_kv_heads[i]);
    CHECK(s.shape(l).n_ff == want_ff[i]);
    CHECK(s.shape(l).kv_layer == want_kv_layer[i]);
  }
  CHECK(s.widest_n_embd_q() == 8 * 32);
  CHECK(s.widest_n_embd_kv() == 32);
  CHECK(s.widest_n_ff() == 512);

  // Three layers cache their own f16 rows: 32 + 32 + 32 values each, keys and values.
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  KvCache kv(*backend, s, 2, 64);
  CHECK(kv.bytes() == static_cast<size_t>(2 * 64 * 3 * 2 * 32) * sizeof(uint16_t));
  CHECK(KvCache::bytes_for(s, 2, 64, {}) == kv.bytes());
  CHECK(kv.n_embd_kv(2) == 32);
  CHECK(kv.k_row_bytes(0) == 32 * 2);
  CHECK(kv.k(1, 3) == kv.k(1, 1));
  CHECK(kv.v(1, 5) == kv.v(1, 2));
  CHECK(kv.k(1, 2) != kv.k(0, 2));
  CHECK(kv.k(0, 1) != kv.k(0, 2));
}

TEST_CASE("a context shift on Gemma 4 leaves the rows a fresh pass over the kept tokens writes", "[model][gemma4]") {
  // Layer 0 reads only the embeddings, so after a shift its rows (and a
  // one-layer model's next logits) must be a fresh pass's; later layers'
  // kept rows saw the dropped tokens. Two layers: 0 windowed (heads of 16),
  // 1 global (heads of 32, frequency factors); one layer: global.
  constexpr int64_t kKeep = 4, kDiscard = 15, kUsed = 40, kCtx = 64;
  const auto tokens = tc::test::random_tokens(kUsed + 1, 93, kVocab);
  const std::vector<TokenId> context(tokens.begin(), tokens.end() - 1);
  std::vector<TokenId> kept(context.begin(), context.begin() + kKeep);
  kept.insert(kept.end(), context.begin() + kKeep + kDiscard, context.end());
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  for (const int64_t n_layer : {2, 1}) {
    INFO(n_layer << " layers");
    auto o = gemma4("shift_" + std::to_string(n_layer));
    o.n_layer = n_layer;
    o.shared_kv_layers = 0;
    tc::profiler::make_model(o);
    const auto loaded = tc::model::load_model(o.output);
    LlamaModel model(*loaded, *backend);
    std::vector<float> logits, shifted, fresh;
    KvCache kv = model.make_kv_cache(1, kCtx);
    const StepSequence prefill{0, context, false};
    REQUIRE(model.forward({&prefill, 1}, kv, logits) == StepStatus::Ok);
    model.shift_context(kv, 0, kKeep, kDiscard);
    KvCache fresh_kv = model.make_kv_cache(1, kCtx);
    const StepSequence whole{0, kept, false};
    REQUIRE(model.forward({&whole, 1}, fresh_kv, fresh) == StepStatus::Ok);
    REQUIRE(kv.n_used(0) == fresh_kv.n_used(0));
    // Layer 0's keys, row by row in f32 (f16 in the cache: within a few of its steps).
    const int64_t width = kv.n_embd_kv(0);
    std::vector<float> got(static_cast<size_t>(width)), want(got.size());
    double worst = 0;
    for (int64_t r = 0; r < kv.n_used(0); ++r) {
      const auto* g = static_cast<const std::byte*>(kv.k(0, 0)) + r * kv.k_row_bytes(0);
      const auto* w = static_cast<const std::byte*>(fresh_kv.k(0, 0)) + r * fresh_kv.k_row_bytes(0);
      tc::kernels::dequantize_row(tc::kernels::DType::F16, g, got.data(), width);
      tc::kernels::dequantize_row(tc::kernels::DType::F16, w, want.data(), width);
      worst = std::max(worst, tc::test::relative_max_difference(got, want));
    }
    INFO("layer 0's shifted keys against the fresh pass's: " << worst);
    CHECK(worst < 2e-3);
    if (n_layer > 1) continue;
    const StepSequence next{0, std::span(tokens).last(1), false};
    REQUIRE(model.forward({&next, 1}, kv, shifted) == StepStatus::Ok);
    const StepSequence last{0, std::span(tokens).last(1), false};
    REQUIRE(model.forward({&last, 1}, fresh_kv, fresh) == StepStatus::Ok);
    INFO("the next logits against the fresh pass's: " << tc::test::relative_max_difference(shifted, fresh));
    CHECK(tc::test::relative_max_difference(shifted, fresh) < 5e-3);
  }
}

TEST_CASE("a prompt in pieces gives the logits of the prompt at once on Gemma 4", "[model][gemma4]") {
  const bool experts = GENERATE(false, true);
  INFO((experts ? "with" : "without") << " experts");
  auto o = gemma4(experts ? "chunks_experts" : "chunks");
  if (experts) {  // 26B A4B's form: 8 experts of 128 beside each dense FFN, 2 per token
    o.n_expert = 8;
    o.n_expert_used = 2;
  }
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  REQUIRE(loaded->spec.has_experts() == experts);
  if (experts) {
    CHECK(loaded->spec.n_ff == 128);
    CHECK(loaded->spec.shape(0).n_ff == 256);
    CHECK(loaded->spec.shape(5).n_ff == 512);
  }
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const auto tokens = tc::test::random_tokens(30, 95, kVocab);
  std::vector<float> at_once;
  KvCache a = model.make_kv_cache(1, 64);
  const StepSequence whole{0, tokens, false};
  REQUIRE(model.forward({&whole, 1}, a, at_once) == StepStatus::Ok);
  CHECK(tc::test::relative_max_difference(tc::test::last_logits_in_pieces(model, tokens, 20), at_once) < 1e-4);
}

TEST_CASE("Gemma 4 files that cannot run are refused, naming the key", "[model][gemma4]") {
  const auto o = gemma4("refused");
  tc::profiler::make_model(o);
  const auto f = tc::gguf::GgufFile::open(o.output);
  REQUIRE(tc::test::load_error(f).empty());
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "gemma4_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  // Layer 4 would be the last with its own cache: windowed, where llama.cpp's rule needs it global.
  CHECK_THAT(tc::test::load_error(with("gemma4.attention.shared_kv_layers", tc::gguf::Value(uint32_t{1}))),
             Catch::Contains("gemma4.attention.shared_kv_layers") && Catch::Contains("another kind"));
  CHECK_THAT(tc::test::load_error(with("gemma4.attention.shared_kv_layers", tc::gguf::Value(uint32_t{5}))),
             Catch::Contains("gemma4.attention.shared_kv_layers"));
  CHECK_THAT(tc::test::load_error(with("gemma4.expert_count", tc::gguf::Value(uint32_t{8}))),
             Catch::Contains("gemma4.expert_used_count"));
  tc::gguf::Value::Array short_array(3, tc::gguf::Value(uint32_t{2}));
  CHECK_THAT(tc::test::load_error(with("gemma4.attention.head_count_kv",
                                       tc::gguf::Value::array(tc::gguf::ValueType::UINT32, short_array))),
             Catch::Contains("gemma4.attention.head_count_kv") && Catch::Contains("one per layer"));
  CHECK_THAT(tc::test::load_error(with("gemma4.rope.dimension_count_swa", tc::gguf::Value(uint32_t{17}))),
             Catch::Contains("gemma4.rope.dimension_count_swa"));

  const auto loaded = tc::model::load_model(o.output);
  tc::test::HostDeviceBackend device(2);
  CHECK_THROWS_WITH(LlamaModel(*loaded, device),
                    Catch::Contains("gemma4") && Catch::Contains("CPU backend only"));
}
