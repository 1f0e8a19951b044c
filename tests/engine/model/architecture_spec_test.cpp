// The architectures' keys and tensors (architecture.h, model_spec, the
// weight mapping) on small make-model files: each loads with the
// hyperparameters llama.cpp would read; a key or tensor at fault is named;
// fused tensors become row-range views of the file's bytes.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "profiler/make_model.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::test::load_error;
using tc::gguf::Value;
using tc::model::FfnForm;

tc::profiler::MakeModelOptions small(const std::string& arch) { return tc::test::small_model_options(arch); }

// small(arch) as a mixture: 4 experts, 2 per token.
tc::profiler::MakeModelOptions small_moe(const std::string& arch) {
  auto o = small(arch);
  o.n_expert = 4;
  o.n_expert_used = 2;
  return o;
}

GgufFile make(tc::profiler::MakeModelOptions o) {
  static int n = 0;  // a fresh file each time: earlier ones stay mapped
  o.output = tc::test::scratch_dir("arch_spec_" + std::to_string(n++)) / "m.gguf";
  tc::profiler::make_model(o);
  return GgufFile::open(o.output);
}

// A copy of `f` without tensor `skip`, with `edit` applied to the keys
// (after the file's own).
GgufFile copy_of(const GgufFile& f, const std::string& skip, const std::function<void(tc::gguf::GgufWriter&)>& edit) {
  return tc::test::copy_gguf(f, "arch_spec_copy", skip, edit);
}


}  // namespace

TEST_CASE("every architecture make-model writes loads with its own hyperparameters", "[model][arch]") {
  for (const auto& a : tc::model::architectures()) {
    if (a.name == "bamboo") continue;  // a sparse PWRI model only (make_model_sparse_test)
    INFO(a.name);
    auto o = small(std::string(a.name));
    // Latent attention caches one KV head; minicpm3's files keep multi-head keys.
    if (a.mla) o.n_head_kv = a.name == "minicpm3" ? o.n_head : 1;
    if (a.name == "baichuan") o.n_layer = 32;  // the 7B's count, the one read
    if (a.modern_bert_layers) o.n_head_kv = o.n_head;  // (one attn_qkv of 3 n_embd rows)
    const auto f = make(o);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.arch == a.name);
    CHECK(s.architecture == &a);
    CHECK(s.ffn_form == a.ffn_forms.front());
    // (Gemma 4's spec names its global layers' heads, twice its windowed ones'.)
    if (a.name != "mamba2" && a.name != "mamba") {  // (Mamba alone has no attention heads)
      CHECK((a.mla ? s.head_dim_k_mla : s.shape(0).head_dim) == 16);
    }
    CHECK(load_error(f).empty());
  }
}

TEST_CASE("architecture keys: head size, windows, soft-caps, embedding scale", "[model][arch]") {
  SECTION("qwen3: attention.key_length sets head_dim, and q's width with it") {
    auto o = small("qwen3");
    o.head_dim = 32;
    const auto s = tc::model::read_model_spec(make(o));
    CHECK(s.head_dim == 32);
    CHECK(s.n_embd_q() == 128);
    CHECK(s.n_embd_kv() == 64);
    CHECK(s.n_rot == 32);
  }
  SECTION("gemma2: a 4096 window on every other layer, caps 50 and 30, scaled embeddings, tied head") {
    const auto s = tc::model::read_model_spec(make(small("gemma2")));
    CHECK(s.n_swa == 4096);
    CHECK(s.swa_layers == std::vector<bool>{true, false, true});
    CHECK(s.attn_softcap == 50.0f);
    CHECK(s.final_softcap == 30.0f);
    CHECK(s.embd_scale == Approx(8.0));
    CHECK(s.attn_scale == Approx(0.25));  // 1 / sqrt(head_dim)
    CHECK(s.tied_embeddings);
    CHECK(s.rope_freq_base_swa == s.rope_freq_base);
  }
  SECTION("gemma3: no window without the key; with it, five windowed layers to one, base 10000 unscaled") {
    auto o = small("gemma3");
    CHECK(tc::model::read_model_spec(make(o)).swa_layers.empty());
    o.sliding_window = 512;
    o.rope_scale_linear = 8;
    const auto s = tc::model::read_model_spec(make(o));
    CHECK(s.n_swa == 512);
    CHECK(s.swa_layers == std::vector<bool>{true, true, true});  // 3 layers < the period 6
    CHECK(s.rope_freq_base == Approx(1e6));
    CHECK(s.rope_freq_scale == Approx(0.125));
    CHECK(s.rope_freq_base_swa == Approx(10000.0));
    CHECK(s.rope_freq_scale_swa == 1.0);
    CHECK(s.final_softcap == 0.0f);
  }
  SECTION("a per-layer sliding_window_pattern array") {
    auto o = small("gemma3");
    o.sliding_window = 16;
    const auto f = copy_of(make(o), "", [](tc::gguf::GgufWriter& w) {
      w.set("gemma3.attention.sliding_window_pattern",
            Value::array(tc::gguf::ValueType::BOOL, {Value(false), Value(true), Value(false)}));
    });
    CHECK(tc::model::read_model_spec(f).swa_layers == std::vector<bool>{false, true, false});
    const auto bad = copy_of(make(o), "", [](tc::gguf::GgufWriter& w) {
      w.set("gemma3.attention.sliding_window_pattern", Value::array(tc::gguf::ValueType::BOOL, {Value(true)}));
    });
    CHECK_THAT(load_error(bad), Catch::Contains("gemma3.attention.sliding_window_pattern"));
  }
  SECTION("llama: Mistral's window on every layer; phi3 and qwen2 ignore theirs, as llama.cpp") {
    auto o = small("llama");
    o.sliding_window = 4096;
    const auto s = tc::model::read_model_spec(make(o));
    CHECK(s.n_swa == 4096);
    CHECK(s.swa_layers == std::vector<bool>{true, true, true});
    for (const char* arch : {"phi3", "qwen2"}) {
      const auto f = copy_of(make(small(arch)), "", [arch](tc::gguf::GgufWriter& w) {
        w.set(std::string(arch) + ".attention.sliding_window", Value(uint32_t{8}));
      });
      CHECK(tc::model::read_model_spec(f).swa_layers.empty());
    }
  }
  SECTION("phi3 LongRoPE: factors, attn_factor and the original context") {
    auto o = small("phi3");
    o.n_ctx = 4096;
    o.longrope_orig_ctx = 1024;
    const auto f = make(o);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.rope_scaling == tc::model::RopeScaling::LongRope);
    CHECK(s.n_ctx_orig == 1024);
    CHECK(s.rope_attn_factor == Approx(std::sqrt(1.0 + std::log(4.0) / std::log(1024.0))).epsilon(1e-6));
    const auto w = tc::model::map_llama_weights(f, s);
    REQUIRE(w.rope_factors_long.data != nullptr);
    REQUIRE(w.rope_factors_short.data != nullptr);
    CHECK(w.rope_factors_long.ne[0] == 8);
  }
}

TEST_CASE("YaRN: factor, original context and the ramp's betas are read", "[model][arch]") {
  auto o = small("qwen2");
  o.n_ctx = 4096;
  o.rope_scale_yarn = 4;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.rope_scaling == tc::model::RopeScaling::Yarn);
  CHECK(s.rope_freq_scale == 0.25);
  CHECK(s.n_ctx_orig == 1024);
  CHECK(s.yarn_ext_factor == 1.0);
  CHECK(s.yarn_beta_fast == 32.0);
  CHECK(s.yarn_beta_slow == 1.0);
  CHECK(s.rope_attn_factor == 1.0);  // YaRN's own magnitude is the kernel's
  const auto betas = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("qwen2.rope.scaling.yarn_beta_fast", Value(16.0f));
    w.set("qwen2.rope.scaling.yarn_beta_slow", Value(2.0f));
  });
  const auto sb = tc::model::read_model_spec(betas);
  CHECK(sb.yarn_beta_fast == 16.0);
  CHECK(sb.yarn_beta_slow == 2.0);
  const auto bad = copy_of(f, "", [](tc::gguf::GgufWriter& w) { w.set("qwen2.rope.scaling.yarn_beta_fast", Value(-1.0f)); });
  CHECK_THAT(load_error(bad), Catch::Contains("qwen2.rope.scaling.yarn_beta_fast"));
}

TEST_CASE("Mistral 3: YaRN's log multiplier and the query temperature are read", "[model][arch]") {
  auto o = small("mistral3");
  o.n_ctx = 4096;
  o.rope_scale_yarn = 16;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.rope_scaling == tc::model::RopeScaling::Yarn);
  CHECK(s.attn_temp_scale == Approx(0.1));
  CHECK(s.attn_temp_floor == 256);
  // mscale(16, 1) / mscale(16, 1), YaRN's own 1 + 0.1 ln 16 divided out.
  CHECK(s.rope_attn_factor == Approx(1.0 / (1.0 + 0.1 * std::log(16.0))));
  const auto bad = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("mistral3.attention.temperature_scale", Value(-0.5f));
  });
  CHECK_THAT(load_error(bad), Catch::Contains("mistral3.attention.temperature_scale"));
  // Other architectures ignore both keys, as llama.cpp does.
  auto q = small("qwen2");
  q.n_ctx = 4096;
  q.rope_scale_yarn = 16;
  const auto other = copy_of(make(q), "", [](tc::gguf::GgufWriter& w) {
    w.set("qwen2.attention.temperature_scale", Value(0.1f));
    w.set("qwen2.rope.scaling.yarn_log_multiplier", Value(1.0f));
  });
  const auto so = tc::model::read_model_spec(other);
  CHECK(so.attn_temp_scale == 0.0);
  CHECK(so.rope_attn_factor == 1.0);
}

TEST_CASE("architecture errors name the key or tensor at fault", "[model][arch]") {
  SECTION("an unsupported architecture names general.architecture and lists the supported ones") {
    const auto f = copy_of(make(small("llama")), "",
                           [](tc::gguf::GgufWriter& w) { w.set("general.architecture", Value("rwkv6")); });
    const auto msg = load_error(f);
    CHECK_THAT(msg, Catch::Contains("general.architecture"));
    CHECK_THAT(msg, Catch::Contains("'rwkv6'"));
    CHECK_THAT(msg, Catch::Contains("qwen2"));
    CHECK_THAT(msg, Catch::Contains("falcon"));
  }
  SECTION("an unknown RoPE scaling type") {
    const auto f = copy_of(make(small("qwen2")), "",
                           [](tc::gguf::GgufWriter& w) { w.set("qwen2.rope.scaling.type", Value("ntk-by-parts")); });
    const auto msg = load_error(f);
    CHECK_THAT(msg, Catch::Contains("qwen2.rope.scaling.type"));
    CHECK_THAT(msg, Catch::Contains("'ntk-by-parts'"));
    CHECK_THAT(msg, Catch::Contains("yarn"));
  }
  SECTION("multimodal RoPE sections where the architecture has none") {
    const auto f = copy_of(make(small("llama")), "", [](tc::gguf::GgufWriter& w) {
      w.set("llama.rope.dimension_sections", Value::i32_array({2, 3, 3, 0}));
    });
    CHECK_THAT(load_error(f), Catch::Contains("llama.rope.dimension_sections") && Catch::Contains("M-RoPE") &&
                                  Catch::Contains("'llama'"));
  }
  SECTION("value heads of another size than key heads") {
    const auto f = copy_of(make(small("qwen3")), "",
                           [](tc::gguf::GgufWriter& w) { w.set("qwen3.attention.value_length", Value(uint32_t{8})); });
    CHECK_THAT(load_error(f), Catch::Contains("qwen3.attention.value_length"));
  }
  SECTION("an FFN form the architecture does not have") {
    const auto f = copy_of(make(small("falcon")), "", [](tc::gguf::GgufWriter& w) {
      w.set(std::string(tc::model::kFfnFormKey), Value("swiglu"));
    });
    const auto msg = load_error(f);
    CHECK_THAT(msg, Catch::Contains("thermocline.ffn_form"));
    CHECK_THAT(msg, Catch::Contains("gelu, relu"));
  }
  SECTION("required tensors of each architecture") {
    const std::pair<const char*, const char*> cases[] = {
        {"falcon", "blk.1.attn_norm.bias"},     {"falcon", "output_norm.bias"},
        {"falcon", "blk.0.attn_qkv.weight"},    {"qwen3", "blk.2.attn_k_norm.weight"},
        {"gemma2", "blk.0.post_ffw_norm.weight"}, {"gemma3", "blk.1.post_attention_norm.weight"},
        {"phi3", "blk.0.ffn_up.weight"},        {"qwen2", "blk.0.ffn_norm.weight"}};
    for (const auto& [arch, tensor] : cases) {
      INFO(arch << " without " << tensor);
      CHECK_THAT(load_error(copy_of(make(small(arch)), tensor, {})), Catch::Contains(tensor));
    }
  }
  SECTION("a bias of the wrong length names it and the length expected") {
    const auto f = copy_of(make(small("qwen2")), "blk.0.attn_q.bias", [](tc::gguf::GgufWriter& w) {
      w.add_tensor("blk.0.attn_q.bias", tc::kernels::DType::F32, {3}, std::vector<std::byte>(3 * sizeof(float)));
    });
    const auto msg = load_error(f);
    CHECK_THAT(msg, Catch::Contains("blk.0.attn_q.bias"));
    CHECK_THAT(msg, Catch::Contains("64"));
  }
}

TEST_CASE("Granite's multipliers are read, and what Granite files may hold that we do not run is named",
          "[model][arch]") {
  const auto f = make(small("granite"));
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.embd_scale == 12.0f);
  CHECK(s.residual_scale == 0.22f);
  CHECK(s.attn_scale == 0.0078125f);
  CHECK(s.logit_multiplier == 1.0f / 8.0f);
  // Without the multipliers, llama's defaults: only logit_scale is required.
  const auto plain = copy_of(make(small("llama")), "", {});
  CHECK(tc::model::read_model_spec(plain).residual_scale == 0.0f);
  auto without = [&](const std::string& key) { return tc::test::copy_gguf(f, "arch_spec_granite", "", {}, key); };
  CHECK_THAT(load_error(without("granite.logit_scale")), Catch::Contains("granite.logit_scale"));
  const auto no_residual = tc::model::read_model_spec(without("granite.residual_scale"));
  CHECK(no_residual.residual_scale == 0.0f);
  const auto nope = copy_of(f, "", [](tc::gguf::GgufWriter& w) { w.set("granite.rope.scaling.finetuned", Value(false)); });
  CHECK(tc::model::read_model_spec(nope).no_rope);  // Granite's switch: no layer rotates
  CHECK_FALSE(s.no_rope);
  // A shared expert only beside experts (recurrent_layers_test: Granite 4.0-H with them).
  const auto shared = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("granite.expert_shared_feed_forward_length", Value(uint32_t{64}));
  });
  CHECK_THAT(load_error(shared), Catch::Contains("granite.expert_shared_feed_forward_length"));
  const auto negative = copy_of(f, "", [](tc::gguf::GgufWriter& w) { w.set("granite.residual_scale", Value(-1.0f)); });
  CHECK_THAT(load_error(negative), Catch::Contains("granite.residual_scale"));
}

TEST_CASE("Cohere: LayerNorms without biases, logit_scale multiplies, RoPE where the window is", "[model][arch]") {
  SECTION("command-r: the head is token_embd, logit_scale optional, no window") {
    const auto f = make(small("command-r"));
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.logit_multiplier == 0.125f);
    CHECK(s.tied_embeddings);
    CHECK(s.swa_layers.empty());
    const auto w = tc::model::map_llama_weights(f, s);
    CHECK(w.layers[0].attn_norm.data != nullptr);
    CHECK(w.layers[0].attn_norm_b.data == nullptr);
    CHECK(w.output_norm_b.data == nullptr);
    const auto without = tc::test::copy_gguf(f, "arch_spec_cohere", "", {}, "command-r.logit_scale");
    CHECK(tc::model::read_model_spec(without).logit_multiplier == 0.0f);
    // The LayerNorm's epsilon key, not RMSNorm's.
    const auto eps = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
      w.set("command-r.attention.layer_norm_epsilon", Value(1e-3f));
    });
    CHECK(tc::model::read_model_spec(eps).rms_eps == Approx(1e-3));
  }
  SECTION("command-r: Command R+'s per-head q/k LayerNorms are refused by name") {
    const auto f = copy_of(make(small("command-r")), "", [](tc::gguf::GgufWriter& w) {
      w.add_tensor("blk.0.attn_q_norm.weight", tc::kernels::DType::F32, {16, 4},
                   std::vector<std::byte>(64 * sizeof(float)));
    });
    CHECK_THAT(load_error(f), Catch::Contains("blk.0.attn_q_norm.weight") && Catch::Contains("not supported"));
  }
  SECTION("cohere2: a window on three layers of four, the only ones with RoPE; the window is required") {
    auto o = small("cohere2");
    o.n_layer = 4;
    const auto f = make(o);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.n_swa == 4096);
    CHECK(s.swa_layers == std::vector<bool>{true, true, true, false});
    CHECK(s.logit_multiplier == 0.125f);
    const auto no_window = tc::test::copy_gguf(f, "arch_spec_cohere2", "", {}, "cohere2.attention.sliding_window");
    CHECK_THAT(load_error(no_window), Catch::Contains("cohere2.attention.sliding_window") && Catch::Contains("RoPE"));
  }
}

TEST_CASE("OLMo 2: no pre-norms, q/k norms over whole rows, and Olmo 3's windowed layers rotate plainly",
          "[model][arch]") {
  auto o = small("olmo2");
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.swa_layers.empty());
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[0].attn_norm.data == nullptr);
  CHECK(w.layers[0].ffn_norm.data == nullptr);
  CHECK(w.layers[0].attn_q_norm.ne[0] == s.n_embd_q());
  CHECK(w.layers[0].attn_k_norm.ne[0] == s.n_embd_kv());
  CHECK(w.layers[0].ffn_post_norm.data != nullptr);
  CHECK_THAT(load_error(copy_of(f, "blk.1.attn_k_norm.weight", {})), Catch::Contains("blk.1.attn_k_norm.weight"));
  o.n_layer = 4;
  o.sliding_window = 64;
  o.rope_scale_yarn = 4;
  o.n_ctx = 1024;
  const auto olmo3 = tc::model::read_model_spec(make(o));
  CHECK(olmo3.swa_layers == std::vector<bool>{true, true, true, false});
  CHECK(olmo3.rope_freq_scale == Approx(0.25));
  CHECK(olmo3.rope_freq_scale_swa == 1.0);
  CHECK(olmo3.rope_freq_base_swa == olmo3.rope_freq_base);
}

TEST_CASE("ERNIE 4.5 leaves an attn_output.bias out as llama.cpp does, and llama adds it", "[model][arch]") {
  for (const char* arch : {"ernie4_5", "llama"}) {
    INFO(arch);
    const auto f = copy_of(make(small(arch)), "", [](tc::gguf::GgufWriter& w) {
      w.add_tensor("blk.0.attn_output.bias", tc::kernels::DType::F32, {64}, std::vector<std::byte>(64 * sizeof(float)));
    });
    const auto s = tc::model::read_model_spec(f);
    const auto w = tc::model::map_llama_weights(f, s);
    CHECK((w.layers[0].attn_output_b.data != nullptr) == (std::string(arch) == "llama"));
  }
}

TEST_CASE("fused tensors become views of their row ranges", "[model][arch]") {
  auto o = small("phi3");
  o.attn_bias = true;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  const auto w = tc::model::map_llama_weights(f, s);
  const auto& qkv = f.tensor("blk.1.attn_qkv.weight");
  const auto* base = f.tensor_data(qkv).data();
  const auto& l = w.layers[1];
  const int64_t row = tc::kernels::row_bytes(qkv.dtype, 64);
  CHECK(l.attn_q.data == base);
  CHECK(l.attn_q.ne[1] == 64);
  CHECK(l.attn_k.data == base + 64 * row);
  CHECK(l.attn_k.ne[1] == 32);
  CHECK(l.attn_v.data == base + 96 * row);
  REQUIRE(l.attn_q_b.data != nullptr);
  CHECK(static_cast<const std::byte*>(l.attn_k_b.data) ==
        f.tensor_data(f.tensor("blk.1.attn_qkv.bias")).data() + 64 * sizeof(float));
  const auto& up = f.tensor("blk.1.ffn_up.weight");
  CHECK(l.ffn_gate.data == f.tensor_data(up).data());
  CHECK(l.ffn_up.data == f.tensor_data(up).data() + 96 * tc::kernels::row_bytes(up.dtype, 64));
  CHECK(l.ffn_up.ne[1] == 96);

  const auto falcon = make(small("falcon"));
  const auto fw = tc::model::map_llama_weights(falcon, tc::model::read_model_spec(falcon));
  CHECK(fw.layers[0].ffn_gate.data == falcon.tensor_data(falcon.tensor("blk.0.ffn_up.weight")).data());
  CHECK(fw.layers[0].ffn_up.data == nullptr);  // ungated: the one matrix sits in the gate slot
  CHECK(fw.layers[0].ffn_norm.data == nullptr);
}

TEST_CASE("MiniCPM: Granite's multipliers, MiniCPM's constants where the keys are absent", "[model][arch]") {
  const auto f = make(small("minicpm"));
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.embd_scale == 12.0f);
  CHECK(s.residual_scale == static_cast<float>(1.4 / std::sqrt(40.0)));
  CHECK(s.logit_multiplier == 1.0f / 9.0f);
  CHECK(s.attn_scale == 0.0f);  // MiniCPM's loader reads no attention.scale
  auto o = small("minicpm");
  o.no_scale_keys = true;
  o.n_embd = 128;
  const auto legacy = tc::model::read_model_spec(make(o));
  CHECK(legacy.embd_scale == 12.0f);
  CHECK(legacy.residual_scale == 1.4f / std::sqrt(3.0f));  // 3 layers
  CHECK(legacy.logit_multiplier == 256.0f / 128.0f);
  // The keys, where present, win; granite still requires logit_scale.
  const auto keyed = copy_of(make(o), "", [](tc::gguf::GgufWriter& w) { w.set("minicpm.residual_scale", Value(0.5f)); });
  CHECK(tc::model::read_model_spec(keyed).residual_scale == 0.5f);
  CHECK_THAT(load_error(tc::test::copy_gguf(make(small("granite")), "arch_spec_granite", "", {}, "granite.logit_scale")),
             Catch::Contains("granite.logit_scale"));
  auto wrong = small("llama");
  wrong.no_scale_keys = true;
  CHECK_THROWS_WITH(make(wrong), Catch::Contains("--no-scale-keys"));
}

TEST_CASE("DeepSeek's form of experts: dense lead, shared experts, gating, MTP blocks", "[model][arch]") {
  auto o = small("glm4moe");
  o.n_expert = 4;
  o.n_expert_used = 2;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(f.get_i64("glm4moe.block_count") == 4);
  CHECK(s.n_layer == 3);  // the multi-token prediction block left out
  CHECK(s.n_layer_dense_lead == 1);
  CHECK(s.n_ff == 96);
  CHECK(s.n_ff_dense == 192);
  CHECK(s.dense_ffn_width() == 192);
  CHECK(s.n_ff_shared == 96);
  CHECK(s.expert_gating == tc::model::ExpertGating::Sigmoid);
  CHECK(s.expert_weights_norm);
  CHECK(s.expert_weights_scale == 2.5f);
  CHECK_FALSE(s.layer_has_experts(0));
  CHECK(s.layer_has_experts(1));
  const auto w = tc::model::map_llama_weights(f, s);
  REQUIRE(w.layers.size() == 3);
  CHECK(w.layers[0].ffn_gate.ne[1] == 192);
  CHECK(w.layers[0].experts.empty());
  CHECK(w.layers[1].ffn_gate.data == nullptr);
  CHECK(w.layers[1].experts.size() == 4);
  CHECK(w.layers[1].ffn_exp_probs_b.data != nullptr);
  CHECK(w.layers[1].ffn_gate_inp_shexp.data == nullptr);  // ungated
  CHECK(w.layers[1].shared_expert.down.ne[0] == 96);
  CHECK(w.layers[1].attn_q_norm.data == nullptr);  // GLM-4.5-Air's: none
  CHECK(w.layers[1].ffn_norm.data == f.tensor_data(f.tensor("blk.1.post_attention_norm.weight")).data());

  // The selection bias is optional; the gating, groups and counts are checked.
  CHECK(load_error(copy_of(f, "blk.2.exp_probs_b.bias", {})).empty());
  auto with = [&](const char* key, Value v) {
    return load_error(copy_of(f, "", [&](tc::gguf::GgufWriter& w) { w.set(key, v); }));
  };
  CHECK(tc::model::read_model_spec(copy_of(f, "", [](tc::gguf::GgufWriter& w) {
          w.set("glm4moe.expert_gating_func", Value(uint32_t{1}));
        })).expert_gating == tc::model::ExpertGating::Softmax);
  CHECK_THAT(with("glm4moe.expert_gating_func", Value(uint32_t{4})), Catch::Contains("glm4moe.expert_gating_func"));
  CHECK_THAT(with("glm4moe.expert_group_count", Value(uint32_t{8})),
             Catch::Contains("glm4moe.expert_group_count") && Catch::Contains("does not divide"));
  const auto grouped = tc::model::read_model_spec(copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("glm4moe.expert_group_count", Value(uint32_t{2}));
    w.set("glm4moe.expert_group_used_count", Value(uint32_t{1}));
  }));
  CHECK(grouped.expert_groups == 2);
  CHECK(grouped.expert_groups_used == 1);
  CHECK_THAT(with("glm4moe.expert_group_count", Value(uint32_t{2})), Catch::Contains("glm4moe.expert_group_used_count"));
  CHECK_THAT(with("glm4moe.nextn_predict_layers", Value(uint32_t{4})), Catch::Contains("glm4moe.nextn_predict_layers"));
  CHECK_THAT(with("glm4moe.leading_dense_block_count", Value(uint32_t{9})),
             Catch::Contains("glm4moe.leading_dense_block_count"));
  CHECK_THAT(with("glm4moe.expert_shared_count", Value(uint32_t{5})), Catch::Contains("glm4moe.expert_shared_count"));
  CHECK_THAT(with("glm4moe.expert_weights_scale", Value(-1.0f)), Catch::Contains("glm4moe.expert_weights_scale"));
  // A shared expert's width follows the count; a missing shared tensor is named.
  CHECK_THAT(with("glm4moe.expert_shared_count", Value(uint32_t{2})), Catch::Contains("ffn_gate_shexp"));
  CHECK_THAT(load_error(copy_of(f, "blk.1.ffn_down_shexp.weight", {})), Catch::Contains("blk.1.ffn_down_shexp"));
  // Without the dense lead, layer 0's experts are missing.
  CHECK_THAT(with("glm4moe.leading_dense_block_count", Value(uint32_t{0})), Catch::Contains("blk.0.ffn_gate_inp"));
  // GLM-4.5's q/k norms, where the file has them, are read.
  const auto qk = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    for (int l = 0; l < 3; ++l) {
      for (const char* t : {"attn_q_norm", "attn_k_norm"}) {
        w.add_tensor("blk." + std::to_string(l) + "." + t + ".weight", tc::kernels::DType::F32, {16},
                     std::vector<std::byte>(16 * sizeof(float)));
      }
    }
  });
  const auto qs = tc::model::read_model_spec(qk);
  CHECK(tc::model::map_llama_weights(qk, qs).layers[2].attn_q_norm.data != nullptr);
}

TEST_CASE("deepseek2: latent attention's keys, one KV head, routing groups", "[model][arch][mla]") {
  auto o = small("deepseek2");
  o.n_head_kv = 1;
  o.head_dim = 32;
  o.q_lora_rank = 48;
  o.n_expert = 8;
  o.n_expert_used = 2;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.is_mla());
  CHECK(s.kv_lora_rank == 64);
  CHECK(s.q_lora_rank == 48);
  CHECK(s.n_rot == 16);
  CHECK(s.head_dim == 80);  // the cached row: 16 rotated values, then the latent
  CHECK(s.head_dim_k_mla == 32);
  CHECK(s.head_dim_v_mla == 32);
  CHECK(s.n_embd_attn_out() == 4 * 32);
  CHECK(s.n_kv_matrices() == 1);
  CHECK(s.expert_groups == 4);
  CHECK(s.expert_groups_used == 2);
  CHECK(s.attn_scale == Approx(1.0 / std::sqrt(32.0)));  // no YaRN: mscale 1
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[1].mla_q_a.data != nullptr);
  CHECK(w.layers[1].attn_q.data == nullptr);
  REQUIRE(w.layers[1].mla_k_b_heads.size() == 4);
  CHECK(w.layers[1].mla_k_b_heads[1].ne[0] == 16);
  CHECK(w.layers[1].mla_k_b_heads[1].ne[1] == 64);
  CHECK(w.layers[1].mla_v_b_heads[3].ne[1] == 32);

  auto with = [&](const char* key, Value v) {
    return load_error(copy_of(f, "", [&](tc::gguf::GgufWriter& w) { w.set(key, v); }));
  };
  CHECK_THAT(with("deepseek2.attention.key_length", Value(uint32_t{64})), Catch::Contains("deepseek2.attention.key_length"));
  CHECK_THAT(with("deepseek2.attention.value_length", Value(uint32_t{32})),
             Catch::Contains("deepseek2.attention.value_length"));
  CHECK_THAT(with("deepseek2.attention.head_count_kv", Value(uint32_t{2})),
             Catch::Contains("deepseek2.attention.head_count_kv"));
  CHECK_THAT(with("deepseek2.attention.temperature_scale", Value(0.1f)),
             Catch::Contains("deepseek2.attention.temperature_scale"));
  CHECK_THAT(with("deepseek2.expert_group_count", Value(uint32_t{3})), Catch::Contains("deepseek2.expert_group_count"));
  CHECK_THAT(with("deepseek2.expert_group_used_count", Value(uint32_t{5})),
             Catch::Contains("deepseek2.expert_group_used_count"));
  CHECK_THAT(load_error(copy_of(f, "blk.1.attn_k_b.weight", {})), Catch::Contains("blk.1.attn_k_b"));
  // YaRN: llama.cpp's mscale^2 on the scores, the rotation's own magnitude cancelled.
  const auto yarn = tc::model::read_model_spec(copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("deepseek2.rope.scaling.type", Value(std::string("yarn")));
    w.set("deepseek2.rope.scaling.factor", Value(40.0f));
    w.set("deepseek2.rope.scaling.yarn_log_multiplier", Value(0.0707f));
  }));
  const double mscale = 1.0 + 0.1 * 0.707 * std::log(40.0);
  CHECK(yarn.attn_scale == Approx(mscale * mscale / std::sqrt(32.0)).epsilon(1e-5));
  CHECK(yarn.rope_attn_factor == Approx(1.0 / (1.0 + 0.1 * std::log(40.0))).epsilon(1e-5));
  // An MLA model runs on the CPU backend only: the setup moves it there (engine/runtime/model_setup.cpp).
  auto lite = o;
  lite.q_lora_rank = 0;
  const auto lw = tc::model::map_llama_weights(make(lite), tc::model::read_model_spec(make(lite)));
  CHECK(lw.layers[0].attn_q.ne[1] == 4 * 32);
  CHECK(lw.layers[0].mla_q_a.data == nullptr);
  auto bad = small("deepseek2");
  CHECK_THROWS_WITH(make(bad), Catch::Contains("--n-head-kv 1"));

  // A file from before the split: one attn_kv_b, the keys of multi-head attention.
  auto old_form = o;
  old_form.mla_unsplit = true;
  old_form.n_head_kv = 4;
  const auto u = make(old_form);
  CHECK_FALSE(u.has("deepseek2.attention.key_length_mla"));
  const auto us = tc::model::read_model_spec(u);
  CHECK(us.mla_kv_b_unsplit);
  CHECK(us.n_head_kv == 1);
  CHECK(us.head_dim == 80);
  CHECK(us.head_dim_k_mla == 32);
  CHECK(us.head_dim_v_mla == 32);
  const auto uw = tc::model::map_llama_weights(u, us);
  const auto& kv_b = u.tensor("blk.1.attn_kv_b.weight");
  const auto* base = u.tensor_data(kv_b).data();
  const int64_t kv_b_row = tc::kernels::row_bytes(kv_b.dtype, 64);
  CHECK(uw.layers[1].mla_k_b_heads[2].data == base + 2 * 48 * kv_b_row);  // head 2: 16 k rows, then 32 v rows
  CHECK(uw.layers[1].mla_k_b_heads[2].ne[1] == 16);
  CHECK(uw.layers[1].mla_v_b_heads[2].data == base + (2 * 48 + 16) * kv_b_row);
  CHECK(uw.layers[1].mla_v_b_heads[2].ne[1] == 32);
  CHECK_THAT(load_error(copy_of(u, "", [](tc::gguf::GgufWriter& w) {
               w.set("deepseek2.attention.head_count_kv", Value(uint32_t{2}));
             })),
             Catch::Contains("deepseek2.attention.head_count_kv") && Catch::Contains("attn_kv_b"));
  CHECK_THAT(load_error(copy_of(u, "blk.0.attn_kv_b.weight", {})), Catch::Contains("blk.0.attn_kv_b"));
}

TEST_CASE("ernie4_5-moe: a shared expert by width, every layer's experts past the lead", "[model][arch]") {
  auto o = small_moe("ernie4_5-moe");
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.n_layer_dense_lead == 1);
  CHECK(s.n_ff_shared == 96);
  CHECK(s.expert_gating == tc::model::ExpertGating::Softmax);
  CHECK(s.expert_weights_norm);
  CHECK(s.expert_weights_scale == 0.0f);
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[0].attn_output_b.data == nullptr);
  CHECK(w.layers[2].ffn_exp_probs_b.data != nullptr);
  const auto step = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("ernie4_5-moe.interleave_moe_layer_step", Value(uint32_t{2}));
  });
  CHECK_THAT(load_error(step), Catch::Contains("ernie4_5-moe.interleave_moe_layer_step"));
}

TEST_CASE("minicpm3: MiniCPM's constants, latent attention from one attn_kv_b", "[model][arch][mla]") {
  auto o = small("minicpm3");
  o.n_head_kv = 4;
  o.head_dim = 32;
  const auto f = make(o);
  CHECK_FALSE(f.has("minicpm3.attention.value_length"));
  CHECK_FALSE(f.has("minicpm3.embedding_scale"));
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.is_mla());
  CHECK(s.mla_kv_b_unsplit);
  CHECK(s.q_lora_rank == 96);
  CHECK(s.head_dim_k_mla == 32);
  CHECK(s.head_dim_v_mla == 16);  // n_embd / n_head without value_length
  CHECK(s.n_embd_attn_out() == 64);
  CHECK(s.embd_scale == 12.0f);
  CHECK(s.residual_scale == 1.4f / std::sqrt(3.0f));
  CHECK(s.logit_multiplier == 256.0f / 64.0f);
  CHECK(s.attn_scale == 1.0f / std::sqrt(32.0f));
  CHECK(load_error(f).empty());
  auto mqa = o;
  mqa.n_head_kv = 1;
  CHECK_THROWS_WITH(make(mqa), Catch::Contains("--n-head-kv = --n-head"));
}

TEST_CASE("baichuan: the 7B's 32 layers only, naming block_count otherwise", "[model][arch]") {
  auto o = small("baichuan");
  o.n_layer = 32;
  CHECK(load_error(make(o)).empty());
  o.n_layer = 40;
  CHECK_THAT(load_error(make(o)), Catch::Contains("baichuan.block_count") && Catch::Contains("ALiBi"));
}

TEST_CASE("gptneox: each parallel block on its own norm, the sequential form refused", "[model][arch]") {
  const auto f = make(small("gptneox"));
  const auto s = tc::model::read_model_spec(f);
  const auto w = tc::model::map_llama_weights(f, s);
  // The parallel form's shared norm (the FFN's input) is the file's
  // ffn_norm; attention's own (attn_norm_2) is its attn_norm.
  CHECK(w.layers[1].attn_norm.data == f.tensor_data(f.tensor("blk.1.ffn_norm.weight")).data());
  CHECK(w.layers[1].attn_norm_2.data == f.tensor_data(f.tensor("blk.1.attn_norm.weight")).data());
  CHECK(w.layers[1].attn_norm_2_b.data == f.tensor_data(f.tensor("blk.1.attn_norm.bias")).data());
  CHECK(tc::model::ffn_input_norm_tensor(*s.architecture) == "ffn_norm");
  const auto sequential = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
    w.set("gptneox.use_parallel_residual", Value(false));
  });
  CHECK_THAT(load_error(sequential), Catch::Contains("gptneox.use_parallel_residual"));
  CHECK_THAT(load_error(copy_of(f, "blk.0.ffn_norm.bias", {})), Catch::Contains("blk.0.ffn_norm.bias"));
}

TEST_CASE("hunyuan-dense: the RoPE base scaled by alpha, q/k norms after RoPE", "[model][arch]") {
  const auto f = make(small("hunyuan-dense"));
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.architecture->qk_norm_after_rope);
  // 10000 * 1000^(16 / 14), in f32 as llama.cpp computes it.
  CHECK(s.rope_freq_base == Approx(10000.0 * std::pow(1000.0, 16.0 / 14.0)).epsilon(1e-6));
  const auto plain = tc::model::read_model_spec(tc::test::copy_gguf(f, "arch_spec_hunyuan", "", {},
                                                                    "hunyuan-dense.rope.scaling.alpha"));
  CHECK(plain.rope_freq_base == 10000.0);
  CHECK_THAT(load_error(copy_of(f, "", [](tc::gguf::GgufWriter& w) {
               w.set("hunyuan-dense.rope.scaling.alpha", Value(-2.0f));
             })),
             Catch::Contains("hunyuan-dense.rope.scaling.alpha"));
}

TEST_CASE("smallthinker: ReGLU experts by the file's gating, a window that makes the first layer of four global",
          "[model][arch]") {
  auto o = small_moe("smallthinker");
  o.n_layer = 5;
  SECTION("no window: softmax routing, every layer windowless") {
    const auto f = make(o);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.ffn_form == FfnForm::ReGLU);
    CHECK(s.n_expert == 4);
    CHECK(s.expert_gating == tc::model::ExpertGating::Softmax);
    CHECK(s.expert_weights_norm);
    CHECK(s.swa_layers.empty());
    CHECK(s.architecture->router_reads_layer_input);
    const auto bad = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
      w.set("smallthinker.expert_gating_func", Value(uint32_t{7}));
    });
    CHECK_THAT(load_error(bad), Catch::Contains("smallthinker.expert_gating_func"));
    const auto swiglu = copy_of(f, "", [](tc::gguf::GgufWriter& w) {
      w.set(std::string(tc::model::kFfnFormKey), Value("swiglu"));
    });
    CHECK_THAT(load_error(swiglu), Catch::Contains("architecture 'smallthinker' is reglu"));
  }
  SECTION("a window: llama.cpp's 4096 whatever the file names, layers 0 and 4 global; sigmoid routing") {
    o.sliding_window = 64;
    o.expert_gating_func = 2;
    const auto f = make(o);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.n_swa == 4096);
    CHECK(s.swa_layers == std::vector<bool>{false, true, true, true, false});
    CHECK(s.expert_gating == tc::model::ExpertGating::Sigmoid);
  }
  SECTION("make-model writes no gating for architectures that do not read it") {
    auto q = small("qwen3moe");
    q.expert_gating_func = 2;
    CHECK_THROWS_WITH(make(q), Catch::Contains("--expert-gating"));
  }
}

TEST_CASE("hunyuan-moe: experts in every layer, softmax renormalised, one ungated shared expert", "[model][arch]") {
  auto o = small_moe("hunyuan-moe");
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.n_layer_dense_lead == 0);
  CHECK(s.n_ff == 96);
  CHECK(s.n_ff_shared == 96);
  CHECK(s.expert_gating == tc::model::ExpertGating::Softmax);
  CHECK(s.expert_weights_norm);
  CHECK(s.expert_weights_scale == 0.0f);
  const auto w = tc::model::map_llama_weights(f, s);
  for (const auto& layer : w.layers) {
    CHECK(layer.ffn_exp_probs_b.data == nullptr);
    CHECK(layer.ffn_gate_inp_shexp.data == nullptr);
    CHECK(layer.shared_expert.gate.data != nullptr);
    CHECK(layer.attn_q_norm.data != nullptr);
  }
}

TEST_CASE("afmoe: DeepSeek's form of experts, pre- and post-norms, the attention output's gate", "[model][arch]") {
  auto o = small_moe("afmoe");
  o.n_layer = 4;
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.n_layer_dense_lead == 1);
  CHECK(s.expert_gating == tc::model::ExpertGating::Sigmoid);
  CHECK(s.embd_scale == Approx(8.0f));
  CHECK(s.swa_layers.empty());
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[0].attn_gate.data != nullptr);
  CHECK(w.layers[0].attn_gate.ne[0] == 64);
  CHECK(w.layers[0].attn_gate.ne[1] == s.n_embd_q());
  CHECK(w.layers[3].attn_post_norm.data != nullptr);
  CHECK(w.layers[3].ffn_post_norm.data != nullptr);
  // Without the gating key, sigmoid (llama.cpp's default for AFMoE).
  const auto no_gating = tc::test::copy_gguf(f, "arch_spec_afmoe", "", {}, "afmoe.expert_gating_func");
  CHECK(tc::model::read_model_spec(no_gating).expert_gating == tc::model::ExpertGating::Sigmoid);
  CHECK_THAT(load_error(copy_of(f, "blk.2.attn_gate.weight", [](tc::gguf::GgufWriter&) {})),
             Catch::Contains("blk.2.attn_gate.weight"));
}

TEST_CASE("deepseek (V1): a dense lead, softmax routing not renormalised, scaled, a shared expert", "[model][arch]") {
  auto o = small_moe("deepseek");
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.n_layer_dense_lead == 1);
  CHECK(s.expert_gating == tc::model::ExpertGating::Softmax);
  CHECK_FALSE(s.expert_weights_norm);
  CHECK(s.expert_weights_scale == 1.5f);
  CHECK(s.n_ff_shared == 96);
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[0].ffn_gate.data != nullptr);
  CHECK(w.layers[1].ffn_exp_probs_b.data == nullptr);
  CHECK(w.layers[1].shared_expert.down.data != nullptr);
  // Its graph routes by softmax whatever a gating key says: make-model writes none.
  o.expert_gating_func = 2;
  CHECK_THROWS_WITH(make(o), Catch::Contains("--expert-gating"));
}

TEST_CASE("bailingmoe (Ling 1.0): experts in every layer, softmax renormalised by the file's key, shared experts",
          "[model][arch]") {
  auto o = small_moe("bailingmoe");
  const auto f = make(o);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.n_layer_dense_lead == 0);
  CHECK(s.expert_gating == tc::model::ExpertGating::Softmax);
  CHECK(s.expert_weights_norm);
  CHECK(s.expert_weights_scale == 1.5f);
  CHECK(s.n_ff_shared == 96);
  const auto without = tc::test::copy_gguf(f, "arch_spec_ling", "", {}, "bailingmoe.expert_weights_norm");
  CHECK_FALSE(tc::model::read_model_spec(without).expert_weights_norm);
}
