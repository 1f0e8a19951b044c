// Writing a BERT sentence encoder's file (llama.cpp's bert, nomic-bert and
// jina-bert-v2 keys and tensor names).
#include "profiler/make_bert.h"

#include <stdexcept>
#include <string>

#include "engine/model/architecture.h"
#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"

namespace tc::profiler {
namespace {

using kernels::DType;

constexpr int64_t kTokenTypes = 2;  // BERT's "sentence A" and "sentence B"

}  // namespace

void check_bert_options(const MakeModelOptions& o) {
  if (o.n_head * (o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head) != o.n_embd) {
    throw std::invalid_argument(o.arch + ": the heads must span n_embd (--n-head x head_dim = --n-embd)");
  }
  if (o.n_expert > 0) throw std::invalid_argument(o.arch + ": --experts is not supported (nomic-bert-moe is not)");
  if (o.arch == "jina-bert-v2" && o.attn_norm_2 && o.n_head_kv != o.n_head) {
    throw std::invalid_argument(o.arch + ": --attn-norm-2 needs --n-head-kv = --n-head (q and k norms span n_embd)");
  }
}

void write_bert_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                      const RandomTensorAdder& add) {
  const model::Architecture& a = *model::find_architecture(o.arch);
  const bool absolute = a.bert_layers == model::BertLayers::Absolute;
  const bool jina = a.bert_layers == model::BertLayers::Alibi;
  const std::string p = o.arch + ".";
  // CLS (bge), mean (nomic) or rank (a reranker's head).
  w.set(p + "pooling_type", gguf::Value(uint32_t{o.reranker ? 4u : absolute ? 2u : 1u}));
  if (o.reranker) w.set(p + "classifier.output_labels", gguf::Value::string_array({"LABEL_0"}));
  w.set(p + "attention.causal", gguf::Value(false));
  w.set("tokenizer.ggml.token_type_count", gguf::Value(static_cast<uint32_t>(kTokenTypes)));

  const LayerTensorWriter t(o, add);
  // The extra input rows: f32 in every file, as the converter keeps them.
  add("token_types.weight", DType::F32, {o.n_embd, kTokenTypes}, 0.0f, 0.5f);
  if (absolute) add("position_embd.weight", DType::F32, {o.n_embd, o.n_ctx}, 0.0f, 0.5f);
  auto layer_norm = [&](const std::string& name) {  // weight near 1, bias near 0
    t.norm(name + ".weight", o.n_embd);
    add(name + ".bias", DType::F32, {o.n_embd}, 0.0f, 0.1f);
  };
  layer_norm("token_embd_norm");
  const int64_t n_kv = o.n_embd / o.n_head * o.n_head_kv;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view s) { return model::layer_tensor_name(l, s); };
    auto bias = [&](std::string_view s, int64_t n) {
      add("blk." + std::to_string(l) + "." + std::string(s) + ".bias", DType::F32, {n}, 0.0f, 0.5f);
    };
    if (absolute || jina) {
      t.attention(l, base, heavy, o.n_embd, n_kv);
      bias("attn_q", o.n_embd);
      bias("attn_k", n_kv);
      bias("attn_v", n_kv);
      bias("attn_output", o.n_embd);
    } else {
      t.matrix(name("attn_qkv"), base, o.n_embd, o.n_embd + 2 * n_kv);
      t.matrix(name("attn_output"), base, o.n_embd, o.n_embd);
    }
    if (jina && o.attn_norm_2) {  // q and k LayerNorms (f32 [n_embd] each, with biases)
      layer_norm("blk." + std::to_string(l) + ".attn_q_norm");
      layer_norm("blk." + std::to_string(l) + ".attn_k_norm");
    }
    layer_norm("blk." + std::to_string(l) + ".attn_output_norm");
    if (jina && o.attn_norm_2) layer_norm("blk." + std::to_string(l) + ".attn_norm_2");
    if (jina) {  // GeGLU: ffn_up {n_embd, 2 n_ff} (gate rows, then up rows) with a bias, or ffn_gate and ffn_up
      if (o.attn_norm_2) t.matrix(name("ffn_gate"), base, o.n_embd, o.n_ff);
      t.matrix(name("ffn_up"), base, o.n_embd, o.attn_norm_2 ? o.n_ff : 2 * o.n_ff);
      bias("ffn_up", o.attn_norm_2 ? o.n_ff : 2 * o.n_ff);
      t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
      bias("ffn_down", o.n_embd);
    } else if (absolute) {
      t.matrix(name("ffn_up"), base, o.n_embd, o.n_ff);
      bias("ffn_up", o.n_ff);
      t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
      bias("ffn_down", o.n_embd);
    } else {
      t.swiglu_ffn(l, base, heavy, o.n_ff);
    }
    layer_norm("blk." + std::to_string(l) + ".layer_output_norm");
  }
  if (o.reranker && jina) {  // jina-reranker-v1's head: one score from cls (llama.cpp applies tanh to it)
    t.matrix("cls.weight", base, o.n_embd, 1);
    add("cls.bias", DType::F32, {1}, 0.0f, 0.1f);
  } else if (o.reranker) {  // the classification head: dense n_embd -> n_embd, tanh, then one score
    t.matrix("cls.weight", base, o.n_embd, o.n_embd);
    add("cls.bias", DType::F32, {o.n_embd}, 0.0f, 0.1f);
    t.matrix("cls.output.weight", base, o.n_embd, 1);
    add("cls.output.bias", DType::F32, {1}, 0.0f, 0.1f);
  }
}

}  // namespace tc::profiler
