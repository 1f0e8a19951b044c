// Writing a ModernBERT encoder's file (llama.cpp's modern-bert keys and
// tensor names).
#include "profiler/make_modern_bert.h"

#include <stdexcept>
#include <string>

#include "engine/model/architecture.h"
#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {
namespace {

using kernels::DType;

constexpr int64_t kLocalAttention = 128;    // ModernBERT's local_attention (the window)
constexpr int64_t kGlobalEvery = 3;         // its global_attn_every_n_layers
constexpr float kLocalRopeTheta = 10000.0f;  // its local_rope_theta (rope.freq_base_swa)

std::string hidden_act(const MakeModelOptions& o) { return o.hidden_act.empty() ? "gelu" : o.hidden_act; }

}  // namespace

void check_modern_bert_options(const MakeModelOptions& o) {
  // llama.cpp's attn_qkv is {n_embd, 3 n_embd}: every head has its own k and v.
  if (o.n_head_kv != o.n_head || (o.head_dim > 0 && o.head_dim * o.n_head != o.n_embd)) {
    throw std::invalid_argument("modern-bert: one attn_qkv of 3 n_embd rows: --n-head-kv = --n-head and the heads "
                                "span n_embd");
  }
  if (o.n_expert > 0) throw std::invalid_argument("modern-bert: --experts is not supported");
  model::FfnForm form = model::FfnForm::GeGLU;
  if (!model::hidden_activation_form(hidden_act(o), form)) {
    throw std::invalid_argument("modern-bert: --hidden-act relu makes a file llama.cpp cannot run (gelu, silu)");
  }
}

void write_modern_bert_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                             const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  // CLS (gte-modernbert, granite-embedding R2), or rank (gte-reranker-modernbert).
  w.set(p + "pooling_type", gguf::Value(uint32_t{o.reranker ? 4u : 2u}));
  if (o.reranker) w.set(p + "classifier.output_labels", gguf::Value::string_array({"LABEL_0"}));
  w.set(p + "attention.causal", gguf::Value(false));
  const int64_t window = o.sliding_window > 0 ? o.sliding_window : kLocalAttention;
  w.set(p + "attention.sliding_window", gguf::Value(static_cast<uint32_t>(window)));
  const int64_t every = o.swa_pattern > 0 ? o.swa_pattern : kGlobalEvery;
  w.set(p + "attention.sliding_window_pattern", gguf::Value(static_cast<uint32_t>(every)));
  w.set(p + "rope.freq_base_swa", gguf::Value(kLocalRopeTheta));
  w.set(p + "rope.scaling.type", gguf::Value(std::string("none")));
  const std::string act = hidden_act(o);
  w.set(p + "hidden_activation", gguf::Value(act));
  model::FfnForm form = model::FfnForm::GeGLU;
  model::hidden_activation_form(act, form);
  w.set(std::string(model::kFfnFormKey), gguf::Value(std::string(model::ffn_form_name(form))));
  if (!o.vocab_family && o.tokenizer == text::TokenizerKind::Bpe) {  // the converter's flags (WordPiece adds its own)
    for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
                            "tokenizer.ggml.add_sep_token"}) {
      w.set(key, gguf::Value(true));
    }
  }

  const LayerTensorWriter t(o, add);
  t.norm("token_embd_norm.weight", o.n_embd);  // weight only, as every LayerNorm here
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view s) { return model::layer_tensor_name(l, s); };
    if (l > 0) t.norm(name("attn_norm"), o.n_embd);  // layer 0's is an identity: no tensor
    t.matrix(name("attn_qkv"), base, o.n_embd, 3 * o.n_embd);
    t.matrix(name("attn_output"), base, o.n_embd, o.n_embd);
    t.norm(name("ffn_norm"), o.n_embd);
    t.matrix(name("ffn_up"), base, o.n_embd, 2 * o.n_ff);  // the gate's n_ff rows, then up's
    t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
  }
  if (o.reranker) {  // the head: dense n_embd -> n_embd (no bias), gelu, a LayerNorm, then one score
    t.matrix("cls.weight", base, o.n_embd, o.n_embd);
    t.norm("cls.norm.weight", o.n_embd);
    t.matrix("cls.output.weight", base, o.n_embd, 1);
    add("cls.output.bias", DType::F32, {1}, 0.0f, 0.1f);
  }
}

}  // namespace tc::profiler
