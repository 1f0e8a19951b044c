// Recurrent layers: Qwen 3.5's gated delta net (Architecture::qwen35_layers;
// Qwen3-Next's layout too), Mamba-2 (Granite 4.0-H, Nemotron-H's layers of
// one block each) and LFM2's short convolution: the spec
// read from a make-model file, the recurrent state kept per slot beside the
// attention layers' KV cache, a prompt's logits the same at once, in pieces
// and beside another sequence, and the files refused with the key named.
// Logits against llama.cpp: arch_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/context_shift.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/decode_bytes.h"
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

// Layers 0-2 and 4 a delta net (2 query/key heads, 4 value heads of 32),
// layer 3 gated attention (8 heads of 32, 2 KV heads, RoPE on 16).
tc::profiler::MakeModelOptions qwen35(const std::string& name) {
  tc::profiler::MakeModelOptions o;
  o.arch = "qwen35";
  o.output = tc::test::scratch_dir("qwen35_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 128;
  o.n_layer = 5;
  o.n_ff = 256;
  o.n_head = 8;
  o.n_head_kv = 2;
  o.head_dim = 32;
  o.n_rot = 16;
  o.weight_type = "f32";
  o.seed = 97;
  o.n_threads = 2;
  return o;
}


}  // namespace

TEST_CASE("a Qwen 3.5 file's delta net layers and their state", "[model][recurrent]") {
  const auto o = qwen35("spec");
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  REQUIRE(s.has_recurrent_layers());
  for (int64_t l = 0; l < s.n_layer; ++l) CHECK(s.is_recurrent(l) == (l != 3));
  CHECK(s.delta_net.conv_kernel == 4);
  CHECK(s.delta_net.n_k_heads == 2);
  CHECK(s.delta_net.n_v_heads == 4);
  CHECK(s.delta_net.head_dim == 32);
  CHECK(s.delta_net.conv_dim() == 2 * 64 + 128);
  CHECK(s.n_rot == 16);
  CHECK(s.n_embd_kv(0) == 0);
  CHECK(s.n_embd_kv(3) == 64);
  CHECK_FALSE(tc::model::context_shift_refusal(s).empty());
  // Value heads 0-3 read key heads 0, 1, 0, 1 (Qwen3-Next's: 0, 0, 1, 1).
  CHECK_FALSE(s.delta_net.grouped_heads);
  CHECK(s.delta_net.key_head(2) == 0);
  CHECK(s.delta_net.key_head(3) == 1);
  tc::model::DeltaNetShape grouped = s.delta_net;
  grouped.grouped_heads = true;
  CHECK(grouped.key_head(1) == 0);
  CHECK(grouped.key_head(2) == 1);

  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  KvCache kv(*backend, s, 2, 64);
  // One attention layer's f16 keys and values, and four layers' f32 states and their checkpoint, per slot.
  const size_t state = static_cast<size_t>(3 * 256 + 4 * 32 * 32) * sizeof(float);
  CHECK(kv.bytes() == 2 * (64 * 2 * 64 * sizeof(uint16_t) + 2 * 4 * state));
  CHECK(KvCache::bytes_for(s, 2, 64, {}) == kv.bytes());
  CHECK_FALSE(kv.keeps_prefixes());
  kv.delta_state(1, 2)[5] = 3.0f;
  kv.conv_state(1, 4)[0] = 2.0f;
  kv.set_used(1, 10);
  CHECK_THROWS(kv.set_used(1, 4));  // no prefix of a recurrent state
  kv.set_used(1, 12);
  CHECK(kv.delta_state(1, 2)[5] == 3.0f);
  kv.clear(1);
  CHECK(kv.delta_state(1, 2)[5] == 0.0f);
  CHECK(kv.conv_state(1, 4)[0] == 0.0f);
  CHECK_THROWS(kv.delta_state(0, 3));  // the attention layer has none

  // A checkpoint: the state at 12 positions, back after the slot went on.
  kv.delta_state(1, 2)[5] = 4.0f;
  kv.set_used(1, 12);
  kv.save_checkpoint(1);
  CHECK(kv.checkpoint_at(1) == 12);
  kv.delta_state(1, 2)[5] = 9.0f;
  kv.set_used(1, 20);
  kv.restore_checkpoint(1);
  CHECK(kv.n_used(1) == 12);
  CHECK(kv.delta_state(1, 2)[5] == 4.0f);
  kv.clear(1);  // cut below it: it lapses
  CHECK(kv.checkpoint_at(1) == -1);
  CHECK_THROWS(kv.restore_checkpoint(1));
  CHECK(kv.checkpoint_at(0) == -1);
}

TEST_CASE("a recurrent model's prompt gives the same logits at once, in pieces and beside another",
          "[model][recurrent]") {
  const std::string arch =
      GENERATE("qwen35", "qwen35moe", "qwen3next", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
               "nemotron_h_moe", "falcon-h1", "mamba2", "mamba", "jamba");
  INFO(arch);
  auto o = qwen35("chunks_" + arch);
  if (arch.starts_with("lfm2")) o.head_dim = 0;  // LFM2's heads span n_embd
  // 8 experts, 2 per token (and a shared expert where the form has one).
  const bool only_recurrent = arch == "mamba2" || arch == "mamba";
  if (only_recurrent) o.arch = arch;
  if (arch != "qwen35" && arch != "lfm2" && arch != "nemotron_h" && arch != "falcon-h1" && !only_recurrent) {
    o.arch = arch;
    o.n_expert = 8;
    o.n_expert_used = 2;
    o.fused_qkv = true;  // qwen3next: ssm_in
  }
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel model(*loaded, *backend);
  const auto tokens = tc::test::random_tokens(30, 99, kVocab);
  const auto other = tc::test::random_tokens(11, 98, kVocab);
  const std::span<const TokenId> all(tokens);
  std::vector<float> at_once, piece, fresh_other;
  KvCache a = model.make_kv_cache(1, 64);
  const StepSequence whole{0, all, false};
  REQUIRE(model.forward({&whole, 1}, a, at_once) == StepStatus::Ok);
  KvCache c = model.make_kv_cache(1, 64);
  const StepSequence alone{0, other, false};
  REQUIRE(model.forward({&alone, 1}, c, fresh_other) == StepStatus::Ok);

  // Slot 1 takes the other prompt in the same steps as slot 0's first pieces.
  KvCache b = model.make_kv_cache(2, 64);
  std::vector<float> both;
  const std::span<const TokenId> o_all(other);
  const StepSequence first[] = {{0, all.first(13), false}, {1, o_all.first(5), false}};
  REQUIRE(model.forward(first, b, both) == StepStatus::Ok);
  const StepSequence second[] = {{1, o_all.subspan(5), false}, {0, all.subspan(13, 7), false}};
  REQUIRE(model.forward(second, b, both) == StepStatus::Ok);
  const std::vector<float> other_row(both.begin(), both.begin() + kVocab);
  for (size_t i = 20; i < tokens.size(); ++i) {
    const StepSequence one{0, all.subspan(i, 1), false};
    REQUIRE(model.forward({&one, 1}, b, piece) == StepStatus::Ok);
  }
  CHECK(tc::test::relative_max_difference(piece, at_once) < 1e-4);
  CHECK(tc::test::relative_max_difference(other_row, fresh_other) < 1e-4);

  // An emptied slot starts from a zero state again.
  b.clear(0);
  std::vector<float> again;
  REQUIRE(model.forward({&whole, 1}, b, again) == StepStatus::Ok);
  CHECK(tc::test::relative_max_difference(again, at_once) < 1e-4);
}

TEST_CASE("a Granite 4.0-H file's Mamba-2 layers and their state", "[model][recurrent]") {
  auto o = qwen35("granite_spec");
  o.arch = "granitehybrid";
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  REQUIRE(s.runs_mamba2());
  for (int64_t l = 0; l < s.n_layer; ++l) CHECK(s.is_recurrent(l) == (l != 3));
  CHECK(s.n_head_kv == 2);
  CHECK(s.no_rope);
  const tc::model::Mamba2Shape& m = s.mamba2;
  CHECK(m.d_inner == 256);
  CHECK(m.head_dim() == 32);
  CHECK(m.n_group == 2);
  CHECK(m.conv_dim() == 256 + 2 * 2 * 16);
  CHECK(m.in_dim() == 256 + m.conv_dim() + 8);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  KvCache kv(*backend, s, 2, 64);
  // One attention layer's f16 keys and values, four layers' f32 states and their checkpoint, per slot.
  const size_t state = static_cast<size_t>(3 * m.conv_dim() + 256 * 16) * sizeof(float);
  CHECK(kv.bytes() == 2 * (64 * 2 * 64 * sizeof(uint16_t) + 2 * 4 * state));
  CHECK_FALSE(kv.keeps_prefixes());
  // A decode token reads the attention layer's cached rows and every Mamba-2 layer's state once.
  const auto read = tc::sparse::decode_bytes_per_token(*loaded, nullptr, 10.0);
  CHECK(read.kv == 10.0 * (2 * 64 * sizeof(uint16_t)) + 4.0 * static_cast<double>(state));
  CHECK(read.attention > 4.0 * 128 * static_cast<double>(m.in_dim()) * sizeof(float));  // ssm_in, f32

  const auto f = tc::gguf::GgufFile::open(o.output);
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "granite_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  CHECK_THAT(tc::test::load_error(with("granitehybrid.attention.head_count_kv",
                                       tc::gguf::Value::i32_array({0, 0, 2, 4, 0}))),
             Catch::Contains("granitehybrid.attention.head_count_kv") && Catch::Contains("differs"));
  CHECK_THAT(tc::test::load_error(with("granitehybrid.ssm.group_count", tc::gguf::Value(uint32_t{3}))),
             Catch::Contains("granitehybrid.ssm.group_count"));
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "granite_refused", "blk.1.ssm_d", {})),
             Catch::Contains("blk.1.ssm_d"));
}

TEST_CASE("an LFM2 file's short convolution layers and their state", "[model][recurrent]") {
  auto o = qwen35("lfm2_spec");
  o.arch = "lfm2";
  o.head_dim = 0;
  o.n_layer = 6;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  for (int64_t l = 0; l < s.n_layer; ++l) CHECK(s.is_recurrent(l) == (l % 3 != 2));
  CHECK(s.short_conv_taps == 3);
  CHECK(s.recurrent_conv_values() == 2 * 128);
  CHECK(s.recurrent_matrix_values() == 0);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  KvCache kv(*backend, s, 2, 64);
  // Two attention layers' f16 keys and values (2 KV heads of 16), four layers' f32 conv states and their checkpoint.
  CHECK(kv.bytes() == 2 * (2 * 64 * 2 * 32 * sizeof(uint16_t) + 2 * 4 * 2 * 128 * sizeof(float)));

  const auto f = tc::gguf::GgufFile::open(o.output);
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "lfm2_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  CHECK_THAT(tc::test::load_error(with("lfm2.shortconv.l_cache", tc::gguf::Value(uint32_t{1}))),
             Catch::Contains("lfm2.shortconv.l_cache"));
  // A windowed file: every attention layer takes the window.
  const auto windowed =
      tc::model::read_model_spec(with("lfm2.attention.sliding_window", tc::gguf::Value(uint32_t{512})));
  CHECK(windowed.n_swa == 512);
  for (int64_t l = 0; l < windowed.n_layer; ++l) {
    if (!windowed.is_recurrent(l)) CHECK(windowed.is_swa(l));
  }
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "lfm2_refused", "token_embd_norm.weight", {})),
             Catch::Contains("token_embd_norm.weight"));
}

TEST_CASE("a Nemotron-H file's layers of one block each", "[model][recurrent]") {
  auto o = qwen35("nemotron_h_spec");
  o.arch = "nemotron_h";
  o.n_layer = 6;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  // Mamba-2, FFN, Mamba-2, attention, Mamba-2, FFN.
  for (int64_t l = 0; l < s.n_layer; ++l) {
    INFO("layer " << l);
    CHECK(s.is_recurrent(l) == (l % 2 == 0));
    CHECK(s.has_mixer(l) == (l % 4 != 1));
    CHECK(s.has_ffn(l) == (l % 4 == 1));
    CHECK(s.n_embd_kv(l) == (l == 3 ? 2 * 32 : 0));
  }
  CHECK(s.n_ff == 256);
  CHECK(s.no_rope);
  CHECK(s.ffn_form == tc::model::FfnForm::ReluSquared);
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  const size_t state = static_cast<size_t>(3 * s.mamba2.conv_dim() + s.mamba2.ssm_state_values()) * sizeof(float);
  CHECK(KvCache(*backend, s, 1, 64).bytes() == 64 * 2 * 64 * sizeof(uint16_t) + 2 * 3 * state);

  const auto f = tc::gguf::GgufFile::open(o.output);
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "nemotron_h_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  CHECK_THAT(tc::test::load_error(with("nemotron_h.feed_forward_length",
                                       tc::gguf::Value::i32_array({0, 256, 0, 0, 0, 128}))),
             Catch::Contains("nemotron_h.feed_forward_length") && Catch::Contains("differs"));
  CHECK_THAT(tc::test::load_error(with("nemotron_h.feed_forward_length", tc::gguf::Value::i32_array({0, 256}))),
             Catch::Contains("one per layer"));
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "nemotron_h_refused", "blk.1.ffn_up.weight", {})),
             Catch::Contains("blk.1.ffn_up.weight"));
  CHECK_THAT(tc::test::load_error(with("nemotron_h.moe_latent_size", tc::gguf::Value(uint32_t{64}))),
             Catch::Contains("nemotron_h.moe_latent_size"));
  // A head count of 0 (Mamba-2 alone) where a layer attends.
  CHECK_THAT(tc::test::load_error(with("nemotron_h.attention.head_count", tc::gguf::Value(uint32_t{0}))),
             Catch::Contains("nemotron_h.attention.head_count") && Catch::Contains("layer 3 attends"));
}

TEST_CASE("a Jamba file: Mamba-1 beside attention, experts on the routed layers only", "[model][recurrent]") {
  auto o = qwen35("jamba_spec");
  o.arch = "jamba";
  o.n_layer = 4;
  o.n_expert = 8;
  o.n_expert_used = 2;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    INFO("layer " << l);
    CHECK(s.is_recurrent(l) == (l != 2));
    CHECK(s.layer_has_experts(l) == (l % 2 == 1));
    CHECK(s.has_ffn(l));
  }
  CHECK(s.no_rope);
  CHECK(s.n_ff == 256);
  const auto f = tc::gguf::GgufFile::open(o.output);
  // A mixture without a router anywhere, and a Mamba layer without its dt norm.
  const auto no_router = tc::test::copy_gguf(tc::test::copy_gguf(f, "jamba_refused", "blk.1.ffn_gate_inp.weight", {}),
                                             "jamba_refused", "blk.3.ffn_gate_inp.weight", {});
  CHECK_THAT(tc::test::load_error(no_router), Catch::Contains("jamba.expert_count") && Catch::Contains("router"));
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "jamba_refused", "blk.0.ssm_dt_norm.weight", {})),
             Catch::Contains("blk.0.ssm_dt_norm.weight"));
}

TEST_CASE("a Mamba-2 or Mamba-1 file's layers are all recurrent and cache only their state", "[model][recurrent]") {
  const std::string arch = GENERATE("mamba2", "mamba");
  INFO(arch);
  auto o = qwen35(arch + "_spec");
  o.arch = arch;
  o.n_layer = 3;
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    INFO("layer " << l);
    CHECK(s.is_recurrent(l));
    CHECK(!s.has_ffn(l));
    CHECK(s.n_embd_kv(l) == 0);
  }
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  // Mamba-2: 3 taps of conv_dim and head_dim x d_state per head; Mamba-1: 3 taps of d_inner (256) and 16 states each.
  const size_t state = (arch == "mamba2" ? static_cast<size_t>(3 * s.mamba2.conv_dim() + s.mamba2.ssm_state_values())
                                         : static_cast<size_t>(3 * 256 + 256 * 16)) *
                       sizeof(float);
  // No key or value rows: 2 slots' states of 3 layers, each with its checkpoint copy.
  CHECK(KvCache(*backend, s, 2, 64).bytes() == 2 * 2 * 3 * state);
  if (arch != "mamba") return;
  CHECK(s.mamba1.dt_rank == 8);  // ceil(128 / 16)
  const auto f = tc::gguf::GgufFile::open(o.output);
  const auto wider = tc::test::copy_gguf(f, "mamba_refused", "", [](tc::gguf::GgufWriter& w) {
    w.set("mamba.ssm.inner_size", tc::gguf::Value(uint32_t{384}));
  });
  CHECK_THAT(tc::test::load_error(wider), Catch::Contains("mamba.ssm.inner_size") && Catch::Contains("2 x"));
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "mamba_refused", "blk.1.ssm_x.weight", {})),
             Catch::Contains("blk.1.ssm_x.weight"));
}

TEST_CASE("a Falcon-H1 file's layers run Mamba-2 beside attention", "[model][recurrent]") {
  auto o = qwen35("falcon_h1_spec");
  o.arch = "falcon-h1";
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const tc::model::ModelSpec& s = loaded->spec;
  for (int64_t l = 0; l < s.n_layer; ++l) {
    CHECK(s.is_recurrent(l));
    CHECK(s.n_embd_kv(l) == 2 * 32);
  }
  const auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  // Every layer's f16 keys and values and its f32 state, and the state's checkpoint.
  const size_t state = static_cast<size_t>(3 * s.mamba2.conv_dim() + s.mamba2.ssm_state_values()) * sizeof(float);
  CHECK(KvCache(*backend, s, 1, 64).bytes() == 5 * (64 * 2 * 64 * sizeof(uint16_t) + 2 * state));
  // Its FFN norm is named without .weight; its Mamba-2 norm may be absent.
  const auto f = tc::gguf::GgufFile::open(o.output);
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "falcon_h1_refused", "blk.2.ffn_norm", {})),
             Catch::Contains("blk.2.ffn_norm"));
  CHECK(tc::test::load_error(tc::test::copy_gguf(f, "falcon_h1_refused", "blk.2.ssm_norm.weight", {})).empty());
}

TEST_CASE("Qwen 3.5 files that cannot run are refused, naming the key", "[model][recurrent]") {
  const auto o = qwen35("refused");
  tc::profiler::make_model(o);
  const auto f = tc::gguf::GgufFile::open(o.output);
  REQUIRE(tc::test::load_error(f).empty());
  auto with = [&](const std::string& key, tc::gguf::Value value) {
    return tc::test::copy_gguf(f, "qwen35_refused", "", [&](tc::gguf::GgufWriter& w) { w.set(key, value); });
  };
  CHECK_THAT(tc::test::load_error(with("qwen35.ssm.inner_size", tc::gguf::Value(uint32_t{100}))),
             Catch::Contains("qwen35.ssm.inner_size"));
  CHECK_THAT(tc::test::load_error(with("qwen35.ssm.group_count", tc::gguf::Value(uint32_t{3}))),
             Catch::Contains("qwen35.ssm.group_count"));
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(f, "qwen35_refused", "blk.1.ssm_a", {})),
             Catch::Contains("blk.1.ssm_a"));

  // Qwen3-Next's fused projections, grouped by key head.
  auto next = qwen35("refused_next");
  next.arch = "qwen3next";
  next.n_expert = 4;
  next.n_expert_used = 2;
  next.fused_qkv = true;
  tc::profiler::make_model(next);
  const auto g = tc::gguf::GgufFile::open(next.output);
  REQUIRE(tc::test::load_error(g).empty());
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(g, "qwen3next_refused", "blk.2.ssm_ba.weight", {})),
             Catch::Contains("blk.2.ssm_ba"));
  // Without ssm_in the split form is looked for.
  CHECK_THAT(tc::test::load_error(tc::test::copy_gguf(g, "qwen3next_refused", "blk.0.ssm_in.weight", {})),
             Catch::Contains("blk.0.attn_qkv"));

  const auto loaded = tc::model::load_model(o.output);
  tc::test::HostDeviceBackend device(2);
  CHECK_THROWS_WITH(LlamaModel(*loaded, device), Catch::Contains("qwen35") && Catch::Contains("CPU backend only"));
}
