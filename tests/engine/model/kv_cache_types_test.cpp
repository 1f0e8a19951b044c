// A q8_0 KV cache (keys, values or both): the forward pass against the
// float64 reference that stores K and V as q8_0 blocks, decode against one
// pass, its size and modelled read bytes, and the models and backends that
// refuse it.
#include <catch2/catch.hpp>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/decode_bytes.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/test_util.h"

using tc::kernels::DType;
using tc::kernels::KvCacheTypes;
using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;

// An f32 model whose heads are 32 values (one q8_0 block), or `head_dim`.
std::unique_ptr<tc::model::LoadedModel> make_model(const std::string& name, int64_t head_dim = 32) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("kv_types_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 128 / head_dim;
  o.n_head_kv = o.n_head / 2;
  o.weight_type = "f32";
  o.rope_freq_base = 10000.0;
  o.seed = 23;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

// Logits of every position of `tokens` in one step over a fresh cache of `types`.
std::vector<float> one_pass(LlamaModel& model, const std::vector<TokenId>& tokens, KvCacheTypes types) {
  KvCache kv = model.make_kv_cache(1, 64, types);
  std::vector<float> logits;
  const StepSequence seq{0, tokens, true};
  REQUIRE(model.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
  return logits;
}

}  // namespace

TEST_CASE("a q8_0 KV cache gives the float64 reference's logits with K and V stored as q8_0", "[model][forward][kv_q8_0]") {
  const auto loaded = make_model("reference");
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const auto tokens = tc::test::random_tokens(12, 31, kVocab);
  const auto f16_logits = one_pass(model, tokens, {});
  for (const KvCacheTypes types : {KvCacheTypes{DType::Q8_0, DType::Q8_0}, KvCacheTypes{DType::Q8_0, DType::F16},
                                   KvCacheTypes{DType::F16, DType::Q8_0}}) {
    INFO("keys " << tc::kernels::dtype_name(types.k) << " values " << tc::kernels::dtype_name(types.v));
    const auto logits = one_pass(model, tokens, types);
    const auto ref = tc::test::reference_logits(loaded->file, loaded->spec, tokens, {}, {}, nullptr, types);
    const auto ref_f16 = tc::test::reference_logits(loaded->file, loaded->spec, tokens);
    double worst = 0, worst_f16 = 0;
    for (size_t p = 0; p < tokens.size(); ++p) {
      INFO("position " << p);
      const double err = tc::test::relative_error(logits.data() + p * kVocab, ref[p]);
      CHECK(err < 2e-5);
      worst = std::max(worst, err);
      worst_f16 = std::max(worst_f16, tc::test::relative_error(logits.data() + p * kVocab, ref_f16[p]));
    }
    // The cache type took effect: the logits are nearer the q8_0 reference
    // than the f16 one, and differ from an f16 cache's.
    INFO("worst relative error " << worst << ", against the f16 reference " << worst_f16);
    CHECK(worst * 4 < worst_f16);
    CHECK(std::memcmp(logits.data(), f16_logits.data(), logits.size() * sizeof(float)) != 0);
  }
}

TEST_CASE("decoding token by token over a q8_0 KV cache equals one pass", "[model][forward][kv_q8_0]") {
  const auto loaded = make_model("decode");
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const KvCacheTypes types{DType::Q8_0, DType::Q8_0};
  const auto tokens = tc::test::random_tokens(10, 37, kVocab);
  const auto full = one_pass(model, tokens, types);
  KvCache kv = model.make_kv_cache(1, 64, types);
  std::vector<float> logits;
  const StepSequence prefill{0, std::span(tokens).first(4), true};
  REQUIRE(model.forward({&prefill, 1}, kv, logits) == StepStatus::Ok);
  for (size_t p = 4; p < tokens.size(); ++p) {
    const StepSequence step{0, std::span(tokens).subspan(p, 1), false};
    REQUIRE(model.forward({&step, 1}, kv, logits) == StepStatus::Ok);
    const std::vector<double> want(full.begin() + static_cast<long>(p * kVocab),
                                   full.begin() + static_cast<long>((p + 1) * kVocab));
    INFO("position " << p);
    CHECK(tc::test::relative_error(logits.data(), want) < 1e-5);
  }
}

TEST_CASE("a q8_0 KV cache takes 34 bytes per 32 values", "[model][kv_q8_0]") {
  const auto loaded = make_model("size");
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  const auto& spec = loaded->spec;
  const KvCache f16(*backend, spec, 3, 100);
  const KvCache q8(*backend, spec, 3, 100, {DType::Q8_0, DType::Q8_0});
  const KvCache mixed(*backend, spec, 3, 100, {DType::Q8_0, DType::F16});
  const uint64_t values = 2 * 3 * 100 * static_cast<uint64_t>(spec.n_layer * spec.n_embd_kv());
  CHECK(f16.bytes() == values * 2);
  CHECK(q8.bytes() == values / 32 * 34);
  CHECK(mixed.bytes() == values + values / 64 * 34);
  CHECK(q8.bytes() == KvCache::bytes_for(spec, 3, 100, q8.types()));
  CHECK(q8.k_row_bytes() == spec.n_embd_kv() / 32 * 34);
  // Matrices do not overlap: slot 2's last layer's V ends where the buffer does.
  const auto* last_v = static_cast<const std::byte*>(q8.v(2, spec.n_layer - 1));
  const auto* first_k = static_cast<const std::byte*>(q8.k(0, 0));
  CHECK(last_v + 100 * q8.v_row_bytes() == first_k + q8.bytes());
}

TEST_CASE("a decode token's modelled bytes count the KV cache at its types", "[model][kv_q8_0]") {
  const auto loaded = make_model("decode_bytes");
  const auto& spec = loaded->spec;
  const double mean_context = 100;
  for (const KvCacheTypes types : {KvCacheTypes{}, KvCacheTypes{DType::Q8_0, DType::Q8_0},
                                   KvCacheTypes{DType::Q8_0, DType::F16}}) {
    const auto b = tc::sparse::decode_bytes_per_token(*loaded, nullptr, mean_context, types);
    CHECK(b.kv == Approx(mean_context * static_cast<double>(KvCache::bytes_for(spec, 1, 1, types))));
  }
  const double f16 = tc::sparse::decode_bytes_per_token(*loaded, nullptr, mean_context).kv;
  CHECK(f16 == Approx(mean_context * static_cast<double>(2 * spec.n_layer * spec.n_embd_kv() * 2)));
}

TEST_CASE("a q8_0 KV cache is refused where it cannot work, with the reason", "[model][kv_q8_0]") {
  SECTION("heads that are not whole 32-value blocks") {
    const auto loaded = make_model("head16", 16);
    const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
    CHECK_THROWS_WITH(KvCache(*backend, loaded->spec, 1, 16, {DType::F16, DType::Q8_0}),
                      Catch::Contains("multiple of 32") && Catch::Contains("16"));
    CHECK_NOTHROW(KvCache(*backend, loaded->spec, 1, 16));
  }
  SECTION("a type that is not a KV type") {
    const auto loaded = make_model("q4");
    const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
    CHECK_THROWS_WITH(KvCache(*backend, loaded->spec, 1, 16, {DType::Q4_0, DType::F16}),
                      Catch::Contains("f16 or q8_0"));
  }
  SECTION("a model whose attention runs on a GPU") {
    const auto loaded = make_model("device");
    tc::test::HostDeviceBackend device(1);
    LlamaModel model(*loaded, device);
    CHECK_THROWS_WITH(model.make_kv_cache(1, 16, {DType::Q8_0, DType::Q8_0}), Catch::Contains("CPU only"));
    CHECK_NOTHROW(model.make_kv_cache(1, 16));
  }
}
