// Context shift (engine/model/context_shift.h): after LlamaModel::shift_context
// a slot's layer-0 keys and values equal those of a fresh pass over the
// tokens that stay (within the cache type's rounding), on every RoPE form
// (adjacent and NeoX pairs, partial rotation, frequency factors, YaRN,
// LongRoPE, linear scaling, sliding-window layers, latent attention); kept
// rows stay and moved value rows move bit for bit; one layer's decode after
// a shift gives the fresh pass's logits; a fake GPU and layer offload shift
// to the CPU's bytes; the plan's arithmetic and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/context_shift.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "kernels/cpu/quantize.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
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
constexpr int64_t kCtx = 64;
constexpr int64_t kUsed = 40, kKeep = 4, kDiscard = 15;

tc::profiler::MakeModelOptions small(const std::string& name, const std::string& arch) {
  tc::profiler::MakeModelOptions o;
  o.arch = arch;
  o.output = tc::test::scratch_dir("context_shift_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f32";
  o.seed = 53;
  o.n_threads = 2;
  return o;
}

struct ShiftCase {
  std::string name;
  tc::profiler::MakeModelOptions options;
  KvCacheTypes types;
};

std::vector<ShiftCase> shift_cases() {
  std::vector<ShiftCase> cases;
  cases.push_back({"llama", small("llama", "llama"), {}});
  cases.push_back({"llama q8_0 cache", small("llama_q8", "llama"), {DType::Q8_0, DType::Q8_0}});
  auto partial = small("partial", "llama");
  partial.n_rot = 16;  // half of each 32-value head
  cases.push_back({"partial rotation", partial, {}});
  auto factors = small("factors", "llama");
  factors.rope_freqs = true;
  cases.push_back({"frequency factors", factors, {}});
  auto linear = small("linear", "llama");
  linear.rope_scale_linear = 2;
  cases.push_back({"linear scaling", linear, {}});
  auto yarn = small("yarn", "qwen2");
  yarn.n_ctx = 4096;
  yarn.rope_scale_yarn = 4;
  cases.push_back({"NeoX pairs with YaRN", yarn, {}});
  auto longrope = small("longrope", "phi3");
  longrope.n_ctx = 4096;
  longrope.longrope_orig_ctx = 1024;
  cases.push_back({"LongRoPE", longrope, {}});
  auto windowed = small("windowed", "gemma3");
  windowed.sliding_window = 16;
  windowed.swa_pattern = 2;  // layer 0 windowed (its own RoPE base), layer 1 global
  cases.push_back({"sliding window", windowed, {}});
  auto mla = small("mla", "deepseek2");
  mla.n_embd = 64;
  mla.n_ff = 64;
  mla.n_head_kv = 1;
  mla.head_dim = 32;  // 16 rotated, 16 not
  mla.n_expert = 4;
  mla.n_expert_used = 2;
  cases.push_back({"latent attention", mla, {}});
  return cases;
}

void prefill(LlamaModel& model, KvCache& kv, const std::vector<TokenId>& tokens) {
  kv.clear(0);
  std::vector<float> logits;
  const StepSequence step{0, tokens, false};
  REQUIRE(model.forward({&step, 1}, kv, logits) == StepStatus::Ok);
}

std::vector<float> row_values(const KvCache& kv, DType type, const void* matrix, int64_t row_bytes, int64_t row) {
  std::vector<float> out(static_cast<size_t>(kv.n_embd_kv()));
  tc::kernels::dequantize_row(type, static_cast<const std::byte*>(matrix) + row * row_bytes, out.data(),
                              kv.n_embd_kv());
  return out;
}

// The largest |a - b| over the row, in units of b's largest |value|.
double row_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<std::byte> rows_bytes(const void* matrix, int64_t row_bytes, int64_t first, int64_t n) {
  const auto* p = static_cast<const std::byte*>(matrix) + first * row_bytes;
  return {p, p + n * row_bytes};
}

std::vector<TokenId> kept_tokens(const std::vector<TokenId>& tokens) {
  std::vector<TokenId> kept(tokens.begin(), tokens.begin() + kKeep);
  kept.insert(kept.end(), tokens.begin() + kKeep + kDiscard, tokens.end());
  return kept;
}

}  // namespace

TEST_CASE("a shifted cache's layer-0 keys and values are a fresh pass's over the kept tokens", "[model][context_shift]") {
  const auto tokens = tc::test::random_tokens(kUsed, 59, kVocab);
  const auto kept = kept_tokens(tokens);
  const auto n_after = static_cast<int64_t>(kept.size());
  for (const ShiftCase& c : shift_cases()) {
    INFO(c.name);
    tc::profiler::make_model(c.options);
    const auto loaded = tc::model::load_model(c.options.output);
    const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel model(*loaded, *backend);
    KvCache shifted = model.make_kv_cache(1, kCtx, c.types);
    KvCache fresh = model.make_kv_cache(1, kCtx, c.types);
    prefill(model, shifted, tokens);
    prefill(model, fresh, kept);

    const int64_t n_layer = loaded->spec.n_layer;
    const bool one_matrix = shifted.k(0, 0) == shifted.v(0, 0);
    std::vector<std::vector<std::byte>> kept_k, moved_v;
    const std::vector<float> old_key = row_values(shifted, c.types.k, shifted.k(0, 0), shifted.k_row_bytes(), kUsed - 1);
    for (int64_t l = 0; l < n_layer; ++l) {
      kept_k.push_back(rows_bytes(shifted.k(0, l), shifted.k_row_bytes(), 0, kKeep));
      moved_v.push_back(rows_bytes(shifted.v(0, l), shifted.v_row_bytes(), kKeep + kDiscard, n_after - kKeep));
    }

    model.shift_context(shifted, 0, kKeep, kDiscard);
    REQUIRE(shifted.n_used(0) == n_after);

    // f16: each side rounds once more than the exact rotation, about 2^-11
    // of the row's scale; q8_0: a block's step (max / 127) each.
    const double tolerance = c.types.k == DType::Q8_0 ? 2.0 / 127.0 : 2e-3;
    double worst_k = 0, worst_v = 0;
    for (int64_t r = 0; r < n_after; ++r) {
      worst_k = std::max(worst_k, row_difference(row_values(shifted, c.types.k, shifted.k(0, 0), shifted.k_row_bytes(), r),
                                                 row_values(fresh, c.types.k, fresh.k(0, 0), fresh.k_row_bytes(), r)));
      worst_v = std::max(worst_v, row_difference(row_values(shifted, c.types.v, shifted.v(0, 0), shifted.v_row_bytes(), r),
                                                 row_values(fresh, c.types.v, fresh.v(0, 0), fresh.v_row_bytes(), r)));
    }
    INFO("worst key difference " << worst_k << ", value " << worst_v << " (tolerance " << tolerance << ")");
    CHECK(worst_k < tolerance);
    CHECK(worst_v < tolerance);
    // The rotation matters: the last key as it was stored, unrotated, is far from its fresh value.
    const double unrotated =
        row_difference(old_key, row_values(fresh, c.types.k, fresh.k(0, 0), fresh.k_row_bytes(), n_after - 1));
    INFO("the last key unrotated differs by " << unrotated);
    CHECK(unrotated > 10 * tolerance);

    for (int64_t l = 0; l < n_layer; ++l) {
      INFO("layer " << l);
      CHECK(rows_bytes(shifted.k(0, l), shifted.k_row_bytes(), 0, kKeep) == kept_k[static_cast<size_t>(l)]);
      if (!one_matrix) {
        CHECK(rows_bytes(shifted.v(0, l), shifted.v_row_bytes(), kKeep, n_after - kKeep) ==
              moved_v[static_cast<size_t>(l)]);
      }
    }
  }
}

TEST_CASE("one layer decoding after a shift gives a fresh pass's logits", "[model][context_shift]") {
  auto o = small("one_layer", "llama");
  o.n_layer = 1;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const auto tokens = tc::test::random_tokens(kUsed + 1, 61, kVocab);
  const std::vector<TokenId> context(tokens.begin(), tokens.end() - 1);
  auto kept = kept_tokens(context);
  kept.push_back(tokens.back());

  KvCache kv = model.make_kv_cache(1, kCtx);
  prefill(model, kv, context);
  model.shift_context(kv, 0, kKeep, kDiscard);
  std::vector<float> shifted, fresh, unshifted;
  const StepSequence next{0, std::span(tokens).last(1), false};
  REQUIRE(model.forward({&next, 1}, kv, shifted) == StepStatus::Ok);
  KvCache fresh_kv = model.make_kv_cache(1, kCtx);
  const StepSequence whole{0, kept, false};
  REQUIRE(model.forward({&whole, 1}, fresh_kv, fresh) == StepStatus::Ok);
  // Without the shift (the dropped tokens still in view) the logits are far off.
  KvCache plain = model.make_kv_cache(1, kCtx);
  const StepSequence all{0, tokens, false};
  REQUIRE(model.forward({&all, 1}, plain, unshifted) == StepStatus::Ok);
  const std::vector<float> fresh_row(fresh.end() - kVocab, fresh.end());
  const double err = row_difference(std::vector<float>(shifted.begin(), shifted.end()), fresh_row);
  const double baseline = row_difference(std::vector<float>(unshifted.end() - kVocab, unshifted.end()), fresh_row);
  INFO("shifted decode against the fresh pass: " << err << "; the unshifted context: " << baseline);
  CHECK(err < 5e-3);
  CHECK(baseline > 20 * err);
}

TEST_CASE("a shift on a fake GPU and across layer offload writes the CPU's bytes", "[model][context_shift][device]") {
  auto o = small("device", "llama");
  o.weight_type = "f16";
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  const auto tokens = tc::test::random_tokens(kUsed, 67, kVocab);
  LlamaModel on_cpu(*loaded, *cpu);
  KvCache want = on_cpu.make_kv_cache(1, kCtx);
  prefill(on_cpu, want, tokens);
  on_cpu.shift_context(want, 0, kKeep, kDiscard);
  auto same_bytes = [&](const KvCache& got) {
    for (int64_t l = 0; l < loaded->spec.n_layer; ++l) {
      INFO("layer " << l);
      CHECK(rows_bytes(got.k(0, l), got.k_row_bytes(), 0, want.n_used(0)) ==
            rows_bytes(want.k(0, l), want.k_row_bytes(), 0, want.n_used(0)));
      CHECK(rows_bytes(got.v(0, l), got.v_row_bytes(), 0, want.n_used(0)) ==
            rows_bytes(want.v(0, l), want.v_row_bytes(), 0, want.n_used(0)));
    }
  };
  {
    INFO("fake GPU");
    tc::test::HostDeviceBackend device(2);
    LlamaModel on_device(*loaded, device);
    KvCache kv = on_device.make_kv_cache(1, kCtx);
    prefill(on_device, kv, tokens);
    on_device.shift_context(kv, 0, kKeep, kDiscard);
    CHECK(kv.n_used(0) == want.n_used(0));
    same_bytes(kv);
  }
  {
    INFO("layer offload, one layer on the fake GPU");
    tc::test::HostDeviceBackend device(2);
    const auto host = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
    LlamaModel split(*loaded, device, {}, {}, tc::model::LayerOffloadOptions{.cpu = host.get(), .n_device_layers = 1});
    KvCache kv = split.make_kv_cache(1, kCtx);
    prefill(split, kv, tokens);
    split.shift_context(kv, 0, kKeep, kDiscard);
    same_bytes(kv);
  }
}

TEST_CASE("the context shift's plan keeps at most half the context and drops half of the rest", "[model][context_shift]") {
  using tc::model::plan_context_shift;
  CHECK(plan_context_shift(64, 64, 4).n_keep == 4);
  CHECK(plan_context_shift(64, 64, 4).n_discard == 30);
  CHECK(plan_context_shift(64, 64, 0).n_discard == 32);
  CHECK(plan_context_shift(64, 64, 63).n_keep == 32);  // clamped: a shift always frees a quarter
  CHECK(plan_context_shift(64, 64, 63).n_discard == 16);
  CHECK(plan_context_shift(64, 64, -1).n_keep == 0);
  CHECK(plan_context_shift(1, 1, 4).n_discard == 0);  // nothing to drop
  CHECK(plan_context_shift(3, 3, 4).n_keep == 1);
  CHECK(plan_context_shift(3, 3, 4).n_discard == 1);
}

TEST_CASE("a context shift is refused where keys are normed after RoPE, and with bad bounds", "[model][context_shift]") {
  tc::model::ModelSpec spec;
  spec.architecture = tc::model::find_architecture("hunyuan-dense");
  REQUIRE(spec.architecture != nullptr);
  CHECK_THAT(tc::model::context_shift_refusal(spec), Catch::Contains("norms its keys after RoPE"));
  spec.architecture = tc::model::find_architecture("llama");
  CHECK(tc::model::context_shift_refusal(spec).empty());

  const auto o = small("refusal", "llama");
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  LlamaModel model(*loaded, *backend);
  KvCache kv = model.make_kv_cache(1, kCtx);
  prefill(model, kv, tc::test::random_tokens(10, 71, kVocab));
  CHECK_THROWS_AS(model.shift_context(kv, 0, 4, 0), std::invalid_argument);
  CHECK_THROWS_AS(model.shift_context(kv, 0, 4, 7), std::invalid_argument);
  CHECK_THROWS_AS(model.shift_context(kv, 0, -1, 2), std::invalid_argument);
  CHECK(kv.n_used(0) == 10);
}
