// ModernBERT (modern-bert) files as llama.cpp reads them: the windowed
// layers (two of three, the first of each three global) and their RoPE
// base, the FFN form hidden_activation names, the weights a layer has
// (none before layer 0's attention, one attn_qkv, one ffn_up of 2 n_ff
// rows, LayerNorms without biases); a reranker's file maps its head.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "profiler/make_model.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::gguf::Value;
using tc::model::FfnForm;

// Five layers of 64 (4 heads of 16, each with its own k and v), a window of 8.
GgufFile make(const std::function<void(tc::profiler::MakeModelOptions&)>& edit = {}) {
  static int n = 0;  // a fresh file each time: earlier ones stay mapped
  auto o = tc::test::small_model_options("modern-bert");
  o.n_layer = 5;
  o.n_head_kv = o.n_head;
  o.sliding_window = 8;
  if (edit) edit(o);
  o.output = tc::test::scratch_dir("modern_bert_spec_" + std::to_string(n++)) / "m.gguf";
  tc::profiler::make_model(o);
  return GgufFile::open(o.output);
}

GgufFile with_keys(const GgufFile& f, const std::function<void(tc::gguf::GgufWriter&)>& edit,
                   const std::string& drop_key = "") {
  return tc::test::copy_gguf(f, "modern_bert_spec_copy", "", edit, drop_key);
}

}  // namespace

TEST_CASE("modern-bert: the first layer of each three is global and the others windowed with their own RoPE base",
          "[model][arch]") {
  const auto f = make();
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.architecture->bidirectional);
  CHECK(s.n_swa == 8);
  CHECK(s.swa_layers == std::vector<bool>{false, true, true, false, true});
  CHECK(s.rope_freq_base == 160000.0);  // ModernBERT's global_rope_theta
  CHECK(s.rope_freq_base_swa == 10000.0);
  CHECK(s.rope_freq_scale_swa == 1.0);
  CHECK(s.pooling == tc::model::Pooling::Cls);
  CHECK(tc::test::load_error(f).empty());
  SECTION("the file's period is still dense-first") {
    const auto two = make([](auto& o) { o.swa_pattern = 2; });
    CHECK(tc::model::read_model_spec(two).swa_layers == std::vector<bool>{false, true, false, true, false});
  }
  SECTION("without rope.freq_base_swa the windowed layers' base is llama.cpp's default 10000") {
    const auto g = with_keys(f, {}, "modern-bert.rope.freq_base_swa");
    CHECK(tc::model::read_model_spec(g).rope_freq_base_swa == 10000.0);
  }
  SECTION("without a window every layer is global") {
    const auto g = with_keys(f, {}, "modern-bert.attention.sliding_window");
    CHECK(tc::model::read_model_spec(g).swa_layers.empty());
  }
}

TEST_CASE("modern-bert: hidden_activation picks the GLU form as llama.cpp maps it", "[model][arch]") {
  CHECK(tc::model::read_model_spec(make()).ffn_form == FfnForm::GeGLU);
  const auto silu = make([](auto& o) { o.hidden_act = "silu"; });  // granite-embedding-small-english-r2
  CHECK(tc::model::read_model_spec(silu).ffn_form == FfnForm::SwiGLU);
  const auto f = make();
  struct Case {
    const char* name;
    FfnForm form;
  };
  for (const Case& c : {Case{"swish", FfnForm::SwiGLU}, Case{"swiglu", FfnForm::SwiGLU}, Case{"reglu", FfnForm::ReGLU},
                        Case{"geglu", FfnForm::GeGLU}, Case{"gelu_pytorch_tanh", FfnForm::GeGLU}}) {
    INFO(c.name);
    const auto g = with_keys(f, [&](tc::gguf::GgufWriter& w) {
      w.set("modern-bert.hidden_activation", Value(std::string(c.name)));
    }, std::string(tc::model::kFfnFormKey));
    CHECK(tc::model::read_model_spec(g).ffn_form == c.form);
  }
  const auto none = with_keys(f, {}, "modern-bert.hidden_activation");
  CHECK(tc::model::read_model_spec(none).ffn_form == FfnForm::GeGLU);
  // relu would be ungated over ffn_up's 2 n_ff rows: llama.cpp cannot run it.
  const auto relu = with_keys(f, [](tc::gguf::GgufWriter& w) {
    w.set("modern-bert.hidden_activation", Value(std::string("relu")));
  });
  CHECK_THAT(tc::test::load_error(relu), Catch::Contains("modern-bert.hidden_activation"));
  const auto disagree = with_keys(f, [](tc::gguf::GgufWriter& w) {
    w.set(std::string(tc::model::kFfnFormKey), Value(std::string("swiglu")));
  });
  CHECK_THAT(tc::test::load_error(disagree),
             Catch::Contains(std::string(tc::model::kFfnFormKey)) && Catch::Contains("hidden_activation"));
}

TEST_CASE("modern-bert: layer 0 has no attn_norm and q/k/v and gate/up are views of one tensor each",
          "[model][arch]") {
  const auto f = make();
  const auto s = tc::model::read_model_spec(f);
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.layers[0].attn_norm.data == nullptr);
  CHECK(w.layers[1].attn_norm.data != nullptr);
  CHECK(w.layers[1].attn_norm_b.data == nullptr);
  CHECK(w.token_embd_norm.data != nullptr);
  CHECK(w.token_embd_norm_b.data == nullptr);
  CHECK(w.output_norm.data != nullptr);
  CHECK(w.output_norm_b.data == nullptr);
  CHECK(w.position_embd.data == nullptr);
  CHECK(w.token_types.data == nullptr);
  // ffn_up's first n_ff rows are the gate (ggml_geglu's first half), the rest up.
  const auto& l1 = w.layers[1];
  CHECK(l1.ffn_gate.ne[1] == s.n_ff);
  CHECK(l1.ffn_up.ne[1] == s.n_ff);
  CHECK(static_cast<const std::byte*>(l1.ffn_up.data) ==
        static_cast<const std::byte*>(l1.ffn_gate.data) + s.n_ff * l1.ffn_gate.row_bytes);
  CHECK(static_cast<const std::byte*>(l1.attn_k.data) ==
        static_cast<const std::byte*>(l1.attn_q.data) + s.n_embd * l1.attn_q.row_bytes);
  SECTION("a file with layer 0's attn_norm uses it as llama.cpp does") {
    const auto g = tc::test::copy_gguf(f, "modern_bert_spec_copy", "", [&](tc::gguf::GgufWriter& out) {
      out.add_tensor("blk.0.attn_norm.weight", tc::kernels::DType::F32, {s.n_embd},
                     std::vector<std::byte>(static_cast<size_t>(s.n_embd) * sizeof(float)));
    });
    CHECK(tc::model::map_llama_weights(g, tc::model::read_model_spec(g)).layers[0].attn_norm.data != nullptr);
  }
}

TEST_CASE("modern-bert: a reranker's file (rank pooling) maps its head", "[model][arch]") {
  const auto f = make([](auto& o) { o.reranker = true; });
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.pooling == tc::model::Pooling::Rank);
  CHECK(s.n_cls_out == 1);
  CHECK_FALSE(s.rank_by_last_token);
  const auto w = tc::model::map_llama_weights(f, s);
  CHECK(w.cls.data != nullptr);
  CHECK(w.cls_norm.data != nullptr);
  CHECK(w.cls_out.data != nullptr);
  CHECK(w.cls_b.data == nullptr);  // ModernBERT's dense layer has no bias
  // Rank pooling without cls.output: nothing to score with (the engine refuses rerank requests on it).
  const auto headless = tc::test::copy_gguf(f, "modern_bert_spec_copy", "cls.output.weight", {}, "");
  CHECK(tc::model::read_model_spec(headless).n_cls_out == 0);
  CHECK(tc::test::load_error(headless).empty());
}
