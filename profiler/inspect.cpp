// Builds the inspect report: one data-gathering pass, then a text or JSON
// rendering of the same facts. The file is read with its unsupported tensors
// listed rather than refused, so the report says what is supported and,
// for what is not, which key, tensor or dtype stops it.
#include "profiler/inspect.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/vision/vision_model.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/kv_cache.h"
#include "engine/text/vocab.h"

namespace tc::profiler {
namespace {

using nlohmann::json;

struct Report {
  const gguf::GgufFile& file;
  std::optional<model::ModelSpec> spec;
  std::string spec_error;
  std::optional<text::Vocab> vocab;
  std::string vocab_error;
  uint64_t total_tensor_bytes = 0;
  int64_t total_elements = 0;
  std::map<std::string, int64_t> dtype_counts;  // tensors per dtype name, unsupported ones included
};

// One line per reason the file cannot run as a model (empty: it can).
std::vector<std::string> blockers(const Report& r) {
  std::vector<std::string> out;
  for (const auto& u : r.file.unsupported_tensors()) out.push_back("tensor '" + u.name + "': " + u.problem);
  if (!r.spec) out.push_back(r.spec_error);
  return out;
}

std::string dtype_summary(const Report& r) {
  std::string s;
  for (const auto& [name, n] : r.dtype_counts) s += (s.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return s;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string token_text(const text::Vocab& v, text::TokenId id) {
  if (id < 0 || id >= v.n_vocab()) return "none";
  return std::to_string(id) + " '" + v.tokens[static_cast<size_t>(id)] + "'";
}

std::string_view kind_name(text::TokenizerKind k) {
  switch (k) {
    case text::TokenizerKind::Spm:
      return "llama (SentencePiece BPE)";
    case text::TokenizerKind::Bpe:
      return "gpt2 (byte-level BPE)";
    case text::TokenizerKind::Gemma4:
      return "gemma4 (BPE over UTF-8, Gemma 4)";
    case text::TokenizerKind::Wpm:
      return "bert (WordPiece)";
    case text::TokenizerKind::Ugm:
      return "t5 (SentencePiece unigram)";
  }
  return "?";
}

json value_to_json(const gguf::Value& v, size_t max_items) {
  using gguf::ValueType;
  if (const auto* s = v.as_string()) return *s;
  if (const auto* b = v.as_bool()) return *b;
  if (const auto* arr = v.as_array()) {
    json items = json::array();
    for (size_t i = 0; i < arr->size() && i < max_items; ++i) items.push_back(value_to_json((*arr)[i], max_items));
    json out = {{"type", "array"}, {"element_type", gguf::value_type_name(v.array_type())}, {"count", arr->size()}};
    out[arr->size() > max_items ? "head" : "items"] = std::move(items);
    return out;
  }
  if (v.is_float()) {
    double d = 0;
    v.to_f64(d);
    return d;
  }
  int64_t i = 0;
  if (v.to_i64(i)) return i;
  uint64_t u = 0;
  v.to_u64(u);
  return u;
}

// The ways this model's layers differ from llama's, as one line ("" for plain llama).
// Whether any layer attends (Mamba alone has none).
bool any_attention(const model::ModelSpec& s) {
  for (int64_t l = 0; l < s.n_layer; ++l) {
    if (s.has_mixer(l) && (!s.is_recurrent(l) || s.attends_beside_mamba2)) return true;
  }
  return false;
}

// Whether any layer has an FFN (Mamba alone has none).
bool any_ffn(const model::ModelSpec& s) {
  for (int64_t l = 0; l < s.n_layer; ++l) {
    if (s.has_ffn(l)) return true;
  }
  return false;
}

// The layers' kinds beyond attention and the FFN: recurrent mixers, Gemma
// 3n's streams, per-layer inputs, an encoder, multimodal RoPE, experts on
// some layers.
void append_layer_kinds(const model::ModelSpec& s, std::vector<std::string>& out) {
  const auto n = [](int64_t v) { return std::to_string(v); };
  if (s.has_recurrent_layers()) {
    int64_t k = 0;
    for (int64_t l = 0; l < s.n_layer; ++l) k += s.is_recurrent(l) ? 1 : 0;
    std::string kind;
    if (s.runs_mamba1()) {
      kind = "Mamba-1 (d_inner " + n(s.mamba1.d_inner) + ", " + n(s.mamba1.d_state) + " states, dt_rank " +
             n(s.mamba1.dt_rank) + ")";
    } else if (s.runs_mamba2()) {
      kind = "Mamba-2 (" + n(s.mamba2.n_head) + " heads of " + n(s.mamba2.head_dim()) + ", " + n(s.mamba2.d_state) +
             " states)";
    } else if (s.short_conv_taps > 0) {
      kind = "a short convolution of " + n(s.short_conv_taps) + " taps";
    } else {
      kind = "a gated delta net";
    }
    const std::string beside = s.attends_beside_mamba2 ? " beside attention" : "";
    out.push_back(n(k) + " of " + n(s.n_layer) + " layers " + kind + beside);
  }
  if (!any_attention(s)) out.emplace_back("no attention");
  if (s.no_rope && any_attention(s)) out.emplace_back("no RoPE");
  if (s.altup.n_streams > 0) {
    out.push_back("AltUp: " + n(s.altup.n_streams) + " streams, LAuReL of rank " + n(s.altup.laurel_rank) +
                  ", sparse FFN gates in layers 0-" + n(s.altup.n_sparse_layers - 1));
  }
  if (s.n_embd_per_layer > 0) out.push_back("per-layer inputs of " + n(s.n_embd_per_layer));
  if (s.architecture->bidirectional) out.emplace_back("bidirectional attention (an encoder: embeddings only)");
  if (s.rope_sections[0] + s.rope_sections[1] + s.rope_sections[2] + s.rope_sections[3] > 0) {
    out.push_back("multimodal RoPE sections " + n(s.rope_sections[0]) + ", " + n(s.rope_sections[1]) + ", " +
                  n(s.rope_sections[2]) + ", " + n(s.rope_sections[3]) + " (text: plain)");
  }
  if (!s.expert_layers.empty() && s.has_experts()) {
    int64_t k = 0;
    for (const bool b : s.expert_layers) k += b ? 1 : 0;
    out.push_back("experts on " + n(k) + " of " + n(s.n_layer) + " layers");
  }
}

std::vector<std::string> layer_features(const model::ModelSpec& s, const gguf::GgufFile& f) {
  const model::Architecture& a = *s.architecture;
  std::vector<std::string> out;
  char buf[64];
  auto has = [&f](const std::string& name) { return f.find_tensor(name) != nullptr; };
  if (a.norm == model::NormKind::Layer) out.emplace_back("LayerNorm with biases");
  if (a.norm == model::NormKind::LayerNoBias) out.emplace_back("LayerNorm without biases");
  if (a.bert_layers != model::BertLayers::None) {
    out.emplace_back("BERT's LayerNorms after each residual add and of the embeddings, token type 0 added");
    if (a.bert_layers == model::BertLayers::Absolute) out.emplace_back("learned positions");
    if (a.bert_layers == model::BertLayers::Alibi) {  // jina-bert-v2, with its optional norms where present
      std::snprintf(buf, sizeof buf, "ALiBi (max bias %g), no positions", static_cast<double>(s.alibi_max_bias));
      out.emplace_back(buf);
      if (has(model::layer_tensor_name(0, "attn_q_norm"))) out.emplace_back("q/k LayerNorms over whole rows");
      if (has(model::layer_tensor_name(0, "attn_norm_2"))) out.emplace_back("attn_norm_2 after attn_output_norm");
    }
  } else if (!a.pre_norms) {
    out.emplace_back("no pre-norms");
  }
  if (s.n_cls_out > 0) {  // BERT's, ModernBERT's or Qwen3-Reranker's
    const std::string scores = s.n_cls_out == 1 ? "one score" : std::to_string(s.n_cls_out) + " scores";
    out.push_back("a reranker's classification head (" + scores + (s.rank_by_last_token ? ", last token" : "") + ")");
  }
  if (a.modern_bert_layers) {
    out.emplace_back(has(model::layer_tensor_name(0, "attn_norm"))
                         ? "ModernBERT's LayerNorm of the embeddings"
                         : "ModernBERT's LayerNorm of the embeddings, none before layer 0's attention");
  }
  if (a.rope_mode == kernels::RopeMode::Neox) out.emplace_back("NeoX RoPE");
  if (has("rope_freqs.weight")) out.emplace_back("RoPE frequency factors");
  if (s.rope_scaling == model::RopeScaling::LongRope) {
    out.push_back("LongRoPE (original context " + std::to_string(s.n_ctx_orig) + ")");
  }
  if (s.rope_scaling == model::RopeScaling::Yarn) {
    std::ostringstream yarn;
    yarn << "YaRN x" << 1.0 / s.rope_freq_scale << " (original context " << s.n_ctx_orig << ")";
    out.push_back(yarn.str());
  }
  if (has(model::layer_tensor_name(0, "attn_qkv"))) out.emplace_back("fused attn_qkv");
  if (has("blk.0.attn_q.bias") || has("blk.0.attn_qkv.bias")) out.emplace_back("q/k/v biases");
  if (has("blk.0.attn_output.bias")) out.emplace_back("output projection bias");
  if (a.attn_sinks) out.emplace_back("attention sinks");
  if (a.qk_norm && (!a.qk_norm_optional || has(model::layer_tensor_name(0, "attn_q_norm")))) {
    out.emplace_back(a.qk_norm_whole ? "q/k norms over whole rows" : "q/k norms");
  }
  if (a.post_norms) out.emplace_back("post-norms");
  if (a.expert_biases && s.has_experts()) out.emplace_back("router and expert biases");
  if (s.expert_gating == model::ExpertGating::SoftmaxOfChosen && s.has_experts()) {
    out.emplace_back("softmax over the chosen experts");
  }
  if (s.has_experts() && s.expert_gating != model::ExpertGating::SoftmaxOfChosen) {
    const bool biased = has("blk." + std::to_string(s.n_layer - 1) + ".exp_probs_b.bias");
    const bool sigmoid = s.expert_gating == model::ExpertGating::Sigmoid;
    if (sigmoid || biased) {
      out.push_back(std::string(sigmoid ? "sigmoid" : "softmax") + " routing" + (biased ? " with a selection bias" : ""));
    }
  }
  if (s.has_experts() && s.expert_groups > 1) {
    out.push_back("experts chosen within " + std::to_string(s.expert_groups_used) + " of " +
                  std::to_string(s.expert_groups) + " groups");
  }
  if (s.is_mla()) {
    out.push_back("latent attention (MLA: a cached latent of " + std::to_string(s.kv_lora_rank) + " + " +
                  std::to_string(s.n_rot) + " rotated values; heads of " + std::to_string(s.head_dim_k_mla) + " / " +
                  std::to_string(s.head_dim_v_mla) +
                  (s.q_lora_rank > 0 ? "; a compressed query of " + std::to_string(s.q_lora_rank) : "") + ")");
  }
  if (s.expert_weights_scale != 0.0f && s.expert_weights_scale != 1.0f && s.has_experts()) {
    std::snprintf(buf, sizeof buf, "expert weights x %g", static_cast<double>(s.expert_weights_scale));
    out.emplace_back(buf);
  }
  if (s.n_layer_dense_lead > 0 && s.has_experts()) {
    out.push_back(std::to_string(s.n_layer_dense_lead) + " leading dense layer" +
                  (s.n_layer_dense_lead == 1 ? "" : "s") + " (n_ff " + std::to_string(s.n_ff_dense) + ")");
  }
  if (s.n_ff_shared > 0 && s.has_experts()) {
    out.push_back(std::string(a.shared_expert ? "a gated" : "an ungated") + " shared expert (n_ff " +
                  std::to_string(s.n_ff_shared) + ")");
  }
  if (a.layer_form == model::LayerForm::Parallel) out.emplace_back("attention and FFN in parallel");
  if (a.ffn_layout == model::FfnLayout::FusedGateUp) out.emplace_back("fused gate-up");
  if (!s.swa_layers.empty()) {
    int64_t n = 0;
    for (bool b : s.swa_layers) n += b;
    out.push_back("sliding window " + std::to_string(s.n_swa) + " on " + std::to_string(n) + " of " +
                  std::to_string(s.n_layer) + " layers");
    if (a.bidirectional) out.push_back("symmetric: " + std::to_string(s.n_swa / 2) + " positions either side");
    if (s.rope_freq_base_swa != s.rope_freq_base) {
      std::snprintf(buf, sizeof buf, "windowed layers' RoPE base %g", s.rope_freq_base_swa);
      out.emplace_back(buf);
    }
  }
  if (s.attn_softcap > 0) {
    std::snprintf(buf, sizeof buf, "scores capped at %g", static_cast<double>(s.attn_softcap));
    out.emplace_back(buf);
  }
  if (s.final_softcap > 0) {
    std::snprintf(buf, sizeof buf, "logits capped at %g", static_cast<double>(s.final_softcap));
    out.emplace_back(buf);
  }
  if (a.rope_windowed_only) out.emplace_back("RoPE in the windowed layers only");
  if (s.logit_multiplier != 0.0f) {
    std::snprintf(buf, sizeof buf, "logits x %g", static_cast<double>(s.logit_multiplier));
    out.emplace_back(buf);
  }
  if (s.embd_scale != 1.0f) {
    std::snprintf(buf, sizeof buf, "embeddings x %g", static_cast<double>(s.embd_scale));
    out.emplace_back(buf);
  }
  append_layer_kinds(s, out);
  return out;
}

json spec_to_json(const model::ModelSpec& s) {
  return {{"architecture", s.arch},       {"name", s.name},
          {"n_vocab", s.n_vocab},         {"n_embd", s.n_embd},
          {"n_layer", s.n_layer},         {"n_ff", s.n_ff},
          {"n_expert", s.n_expert},       {"n_expert_used", s.n_expert_used},
          {"n_head", s.n_head},           {"n_head_kv", s.n_head_kv},
          {"head_dim", s.head_dim},       {"n_rot", s.n_rot},
          {"n_ctx_train", s.n_ctx_train}, {"rope_freq_base", s.rope_freq_base},
          {"rope_freq_scale", s.rope_freq_scale}, {"rms_eps", s.rms_eps},
          {"ffn_form", model::ffn_form_name(s.ffn_form)},
          {"tied_embeddings", s.tied_embeddings}, {"sparse_layout", s.sparse_layout},
          {"sliding_window", s.n_swa},    {"attn_softcap", s.attn_softcap},
          {"final_softcap", s.final_softcap},
          // An f16 cache's bytes per position over every layer that caches
          // its own keys and values, and the recurrent layers' state per slot.
          {"kv_bytes_per_position",
           runtime::KvCache::bytes_for(s, 1, 2, {}) - runtime::KvCache::bytes_for(s, 1, 1, {})},
          {"recurrent_state_bytes",
           2 * runtime::KvCache::bytes_for(s, 1, 1, {}) - runtime::KvCache::bytes_for(s, 1, 2, {})}};
}

json to_json(const Report& r, const InspectOptions& o) {
  const auto& f = r.file;
  json j;
  j["file"] = f.path();
  j["magic"] = gguf::magic_name(f.magic());
  j["version"] = f.version();
  j["alignment"] = f.alignment();
  j["file_size"] = f.file_size();
  j["data_offset"] = f.data_offset();
  if (f.shard_count() > 1) {  // a split model: offsets are from the start of the tensor's shard's data
    json shards = json::array();
    for (int i = 0; i < f.shard_count(); ++i) shards.push_back(f.shard_path(i));
    j["shards"] = std::move(shards);
  }
  j["model"] = r.spec ? spec_to_json(*r.spec) : json{{"error", r.spec_error}};
  if (r.spec) j["model"]["layer_features"] = layer_features(*r.spec, f);
  json unsupported = json::array();
  for (const auto& u : f.unsupported_tensors()) {
    unsupported.push_back({{"name", u.name}, {"dtype", u.type_name}, {"type_id", u.type_id}, {"shape", u.ne}});
  }
  j["support"] = {{"runnable", blockers(r).empty()},
                  {"blockers", blockers(r)},
                  {"unsupported_tensors", std::move(unsupported)},
                  {"dtypes", r.dtype_counts}};
  if (r.vocab) {
    const auto& v = *r.vocab;
    j["tokenizer"] = {{"model", std::string(text::tokenizer_model_name(v.kind))},
                      {"pre", v.pre},
                      {"n_vocab", v.n_vocab()},
                      {"n_merges", v.merges.size()},
                      {"bos_token_id", v.bos_id},
                      {"eos_token_id", v.eos_id},
                      {"unknown_token_id", v.unk_id},
                      {"padding_token_id", v.pad_id},
                      {"add_bos", v.add_bos},
                      {"add_eos", v.add_eos}};
    j["chat_template"] = v.chat_template ? json(*v.chat_template) : json(nullptr);
  } else {
    j["tokenizer"] = {{"error", r.vocab_error}};
  }
  json meta = json::object();
  for (const auto& [key, value] : f.metadata()) {
    meta[key] = {{"type", gguf::value_type_name(value.type())}, {"value", value_to_json(value, o.max_array_items)}};
  }
  j["metadata"] = std::move(meta);
  json tensors = json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"dtype", kernels::dtype_name(t.dtype)},
                       {"shape", t.ne},
                       {"bytes", t.n_bytes},
                       {"offset", t.offset},
                       {"shard", t.shard}});
  }
  j["tensors"] = std::move(tensors);
  j["totals"] = {{"n_tensors", f.tensors().size()},
                 {"tensor_bytes", r.total_tensor_bytes},
                 {"n_elements", r.total_elements}};
  return j;
}

// A vision projector (general.architecture "clip"): what it is for, or why
// it cannot serve.
std::string projector_summary(const gguf::GgufFile& f) {
  try {
    const auto projector = vision::VisionModel::load(f.path());
    const vision::VisionSpec& v = projector->spec();
    std::ostringstream out;
    out << "as a vision projector (--mmproj) beside a model of n_embd " << v.n_embd_text << ": " << v.projector
        << ", images fitted into " << v.image_size << " px in patches of " << v.patch_size << ", " << v.n_layer
        << " layers of width " << v.n_embd << ", " << v.n_image_tokens() << " embeddings per image";
    return out.str();
  } catch (const std::exception& e) {
    return std::string("no: not a vision projector Thermocline reads: ") + e.what();
  }
}

std::string to_text(const Report& r, const InspectOptions& o) {
  const auto& f = r.file;
  std::ostringstream out;
  out << "file:          " << f.path() << "\n"
      << "container:     " << gguf::magic_name(f.magic()) << " v" << f.version() << ", alignment " << f.alignment()
      << ", " << human_bytes(f.file_size()) << ", data at offset " << f.data_offset() << "\n";
  if (f.shard_count() > 1) {
    out << "split:         " << f.shard_count() << " shards (tensor offsets are within each shard's data):";
    for (int i = 0; i < f.shard_count(); ++i) out << (i == 0 ? " " : ", ") << f.shard_path(i);
    out << "\n";
  }
  out << "\n";

  out << "== support ==\n";
  const auto why_not = blockers(r);
  if (f.get_string("general.architecture", "") == "clip") {
    out << "runs:          " << projector_summary(f) << "\n\n";
  } else if (why_not.empty()) {
    out << "runs:          yes (every tensor's dtype is supported: " << dtype_summary(r) << ")\n\n";
  } else {
    out << "runs:          no; dtypes " << dtype_summary(r) << "\n";
    for (const auto& line : why_not) out << "  " << line << "\n";
    out << "\n";
  }

  out << "== model ==\n";
  if (r.spec) {
    const auto& s = *r.spec;
    const bool a_bert = s.architecture->bert_layers != model::BertLayers::None ||
                        s.architecture->modern_bert_layers;  // an encoder without a head
    out << "architecture:  " << s.arch << (s.name.empty() ? "" : " (" + s.name + ")") << "\n"
        << "n_vocab " << s.n_vocab << ", n_embd " << s.n_embd << ", n_layer " << s.n_layer
        << (any_ffn(s) ? ", n_ff " + std::to_string(s.n_ff) : std::string(", no FFN"))
        << (s.has_experts() ? " per expert, " + std::to_string(s.n_expert) + " experts (" +
                                  std::to_string(s.n_expert_used) + " per token)"
                            : "")
        << "\n"
        << (any_attention(s) ? "n_head " + std::to_string(s.n_head) + ", n_head_kv " + std::to_string(s.n_head_kv) +
                                   ", head_dim " + std::to_string(s.head_dim) + ", n_rot " + std::to_string(s.n_rot) +
                                   ", "
                             : std::string("no attention heads, "))
        << "n_ctx_train " << s.n_ctx_train << "\n"
        << "rope_freq_base " << s.rope_freq_base << ", rope_freq_scale " << s.rope_freq_scale << ", rms_eps "
        << s.rms_eps << "\n"
        << "ffn form:      " << model::ffn_form_name(s.ffn_form) << (s.sparse_layout ? ", PowerInfer layout (ffn_down_t)" : "")
        << (a_bert ? ", no output head" : s.tied_embeddings ? ", tied embeddings" : "") << "\n";
    std::string features;
    for (const auto& x : layer_features(s, f)) features += (features.empty() ? "" : ", ") + x;
    if (!features.empty()) out << "layers:        " << features << "\n";
    out << "\n";
  } else if (f.get_string("general.architecture", "") == "clip") {
    out << "a vision projector (general.architecture clip), not a language model\n\n";
  } else {
    out << "not a runnable model: " << r.spec_error << "\n\n";
  }

  out << "== tokenizer ==\n";
  if (r.vocab) {
    const auto& v = *r.vocab;
    out << "model:         " << kind_name(v.kind) << (v.pre.empty() ? "" : ", pre '" + v.pre + "'") << "\n"
        << "n_vocab " << v.n_vocab() << ", merges " << v.merges.size() << ", add_bos " << v.add_bos << ", add_eos "
        << v.add_eos << "\n"
        << "bos " << token_text(v, v.bos_id) << ", eos " << token_text(v, v.eos_id) << ", unk "
        << token_text(v, v.unk_id) << ", pad " << token_text(v, v.pad_id)
        << (v.kind == text::TokenizerKind::Wpm ? ", sep " + token_text(v, v.sep_id) : std::string()) << "\n\n";
    out << "== chat template ==\n" << (v.chat_template ? *v.chat_template : std::string("(none)")) << "\n\n";
  } else {
    out << "none: " << r.vocab_error << "\n\n";
  }

  out << "== metadata (" << f.metadata().size() << " keys) ==\n";
  for (const auto& [key, value] : f.metadata()) {
    out << key << " [" << gguf::value_type_name(value.type()) << "] = "
        << value.to_display_string(o.max_array_items) << "\n";
  }

  out << "\n== tensors (" << f.tensors().size() << ", " << human_bytes(r.total_tensor_bytes) << ", "
      << r.total_elements << " elements) ==\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-6s %-22s %14s %14s\n", "name", "dtype", "shape", "bytes", "offset");
  out << line;
  for (const auto& t : f.tensors()) {
    std::snprintf(line, sizeof line, "%-36s %-6s %-22s %14llu %14llu\n", t.name.c_str(),
                  std::string(kernels::dtype_name(t.dtype)).c_str(), t.shape_string().c_str(),
                  static_cast<unsigned long long>(t.n_bytes), static_cast<unsigned long long>(t.offset));
    out << line;
  }
  for (const auto& u : f.unsupported_tensors()) {
    std::snprintf(line, sizeof line, "%-36s %-6s %-22s %14s %14s\n", u.name.c_str(),
                  (u.type_name.empty() ? "id " + std::to_string(u.type_id) : u.type_name).c_str(),
                  gguf::TensorInfo{u.name, kernels::DType::F32, u.ne}.shape_string().c_str(), "unsupported", "-");
    out << line;
  }
  return out.str();
}

}  // namespace

std::string inspect_file(const std::filesystem::path& path, const InspectOptions& options) {
  const auto file = gguf::GgufFile::open(path, gguf::UnsupportedDtypes::kList);
  Report r{file, std::nullopt, "", std::nullopt, "", 0, 0, {}};
  try {
    auto spec = model::read_model_spec(file);
    // The tensors of unsupported dtypes are not in file.tensors(): checking
    // the rest would call them missing. They are the blockers then.
    if (file.unsupported_tensors().empty()) model::validate_model_tensors(file, spec);
    r.spec = std::move(spec);
  } catch (const gguf::ModelLoadError& e) {
    r.spec_error = e.what();
  }
  if (file.has("tokenizer.ggml.model")) {
    try {
      r.vocab = text::read_vocab(file);
    } catch (const gguf::ModelLoadError& e) {
      r.vocab_error = e.what();
    }
  } else {
    r.vocab_error = "the file has no tokenizer.ggml.model key";
  }
  for (const auto& t : file.tensors()) {
    r.total_tensor_bytes += t.n_bytes;
    r.total_elements += t.n_elements();
    ++r.dtype_counts[std::string(kernels::dtype_name(t.dtype))];
  }
  for (const auto& u : file.unsupported_tensors()) {
    ++r.dtype_counts[u.type_name.empty() ? "type id " + std::to_string(u.type_id) : u.type_name];
  }
  return options.json ? to_json(r, options).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
                      : to_text(r, options);
}

}  // namespace tc::profiler
