// make-model: synthetic GGUF files of any supported architecture with
// seeded random weights. Each row of each tensor draws from its own RNG
// stream, seeded by (seed, tensor index, row), so the bytes do not depend on
// the thread count. Sparse models (planted activations, predictors) are
// built by sparse_planting.cpp; this file writes their shared metadata and
// vocab.
#include "profiler/make_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_split.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer_trainer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "profiler/make_bert.h"
#include "profiler/make_falcon_h1.h"
#include "profiler/make_gemma3n.h"
#include "profiler/make_jamba.h"
#include "profiler/make_gemma4.h"
#include "profiler/make_granite_hybrid.h"
#include "profiler/make_lfm2.h"
#include "profiler/make_modern_bert.h"
#include "profiler/make_nemotron_h.h"
#include "profiler/make_qwen35.h"
#include "profiler/sparse_planting.h"
#include "engine/runtime/rng.h"
#include "profiler/tokenizer_corpus.h"

namespace tc::profiler {
namespace {

using kernels::DType;

// xoshiro256+ with Box-Muller: a fast source of standard normal floats.
class NormalStream {
 public:
  NormalStream(uint64_t seed, uint64_t tensor_idx, uint64_t row_idx) {
    uint64_t x = seed ^ (tensor_idx * 0xD1B54A32D192ED03ull) ^ (row_idx * 0x8CB92BA72F3D8DD7ull);
    for (auto& s : s_) s = runtime::splitmix64(x);
  }
  void fill(float* out, int64_t n, float scale, float mean) {
    int64_t i = 0;
    for (; i + 1 < n; i += 2) {
      const auto [a, b] = pair();
      out[i] = mean + scale * a;
      out[i + 1] = mean + scale * b;
    }
    if (i < n) out[i] = mean + scale * pair().first;
  }

 private:
  uint64_t next() {
    const uint64_t result = s_[0] + s_[3];
    runtime::xoshiro256_step(s_);
    return result;
  }
  // Uniform in (0, 1], never 0, so log() is finite.
  float uniform() { return (static_cast<float>(next() >> 40) + 1.0f) * (1.0f / 16777216.0f); }
  std::pair<float, float> pair() {
    const float r = std::sqrt(-2.0f * std::log(uniform()));
    const float theta = 2.0f * std::numbers::pi_v<float> * uniform();
    return {r * std::cos(theta), r * std::sin(theta)};
  }
  uint64_t s_[4];
};

struct WeightTypes {
  DType base;       // most 2-D weights
  DType heavy;      // output, attn_v, ffn_down (differs only for the _m mixes)
  uint32_t file_type;  // llama.cpp's general.file_type
};

WeightTypes parse_weight_type(const std::string& name) {
  if (name == "q4_k_m") return {DType::Q4_K, DType::Q6_K, 15};
  if (name == "q5_k_m") return {DType::Q5_K, DType::Q6_K, 17};
  const auto t = kernels::dtype_from_name(name);
  if (!t) throw std::invalid_argument("unknown weight type '" + name + "'");
  // general.file_type: llama.cpp's llama_ftype for a file of that type.
  switch (*t) {
    case DType::F32: return {*t, *t, 0};
    case DType::F16: return {*t, *t, 1};
    case DType::Q4_0: return {*t, *t, 2};
    case DType::Q4_1: return {*t, *t, 3};
    case DType::Q8_0: return {*t, *t, 7};
    case DType::Q5_0: return {*t, *t, 8};
    case DType::Q5_1: return {*t, *t, 9};
    case DType::Q2_K: return {*t, *t, 10};
    case DType::Q3_K: return {*t, *t, 11};  // as Q3_K_S
    case DType::Q4_K: return {*t, *t, 14};  // as Q4_K_S
    case DType::Q5_K: return {*t, *t, 16};  // as Q5_K_S
    case DType::Q6_K: return {*t, *t, 18};
    case DType::IQ4_NL: return {*t, *t, 25};
    case DType::IQ4_XS: return {*t, *t, 30};
    case DType::BF16: return {*t, *t, 32};
    // llama.cpp's MXFP4_MOE puts only the experts in MXFP4; a file of
    // MXFP4 throughout says the same type.
    case DType::MXFP4: return {*t, *t, 38};
    default:
      throw std::invalid_argument("weight type '" + name + "' is not a weight format (" +
                                  std::string(kMakeModelTypeList) + ")");
  }
}

int64_t head_dim_of(const MakeModelOptions& o) { return o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head; }

// DeepSeek's form of experts whose llama.cpp graph routes by softmax and
// reads no gating key nor selection bias (DeepSeek V1, Ling 1.0,
// Hunyuan-A13B): their files carry only what their converters write.
bool fixed_softmax_experts(const model::Architecture& a) {
  return a.name == "deepseek" || a.name == "bailingmoe" || a.name == "hunyuan-moe";
}

void check_options(const MakeModelOptions& o, const WeightTypes& types, const model::Architecture& a) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  require(o.n_embd > 0 && o.n_layer > 0 && o.n_ff > 0 && o.n_head > 0 && o.n_head_kv > 0 && o.n_ctx > 0,
          "dimensions must be positive");
  require(o.head_dim > 0 || o.n_embd % o.n_head == 0, "n_head must divide n_embd (or give head_dim)");
  require(o.n_head % o.n_head_kv == 0, "n_head_kv must divide n_head");
  require(!o.fim_tokens || !o.vocab_family, "--fim adds its tokens to a learned vocab, not to a family's");
  require(head_dim_of(o) % 2 == 0, "head_dim must be even for RoPE");
  require(o.n_rot == 0 || (o.n_rot % 2 == 0 && o.n_rot <= head_dim_of(o)), "--rope-dims must be even and <= head_dim");
  const int64_t n_embd_q = o.n_head * head_dim_of(o);
  for (DType t : {types.base, types.heavy}) {
    const int64_t block = kernels::dtype_traits(t).block_size;
    require(o.n_embd % block == 0, "n_embd " + std::to_string(o.n_embd) + " is not a multiple of " +
                                       std::to_string(block) + ", the block size of " +
                                       std::string(kernels::dtype_name(t)));
    require(n_embd_q % block == 0, "n_head * head_dim " + std::to_string(n_embd_q) + " is not a multiple of " +
                                       std::to_string(block) + ", the block size of " +
                                       std::string(kernels::dtype_name(t)) + " (attn_output rows)");
  }
  const std::string arch(a.name);
  auto only = [&](bool set, bool allowed, const std::string& what) {
    require(!set || allowed, what + " is not an option of architecture " + arch);
  };
  only(o.fused_qkv, !a.name.starts_with("gemma") && a.name != "bamboo", "a fused attn_qkv");
  only(o.sliding_window > 0 || o.swa_pattern > 0, a.sliding_window.enabled, "a sliding window");
  only(o.rope_freqs, a.rope_freqs, "rope_freqs");
  only(o.mrope_sections, a.multimodal_rope != model::MultimodalRope::Refused, "multimodal RoPE sections");
  only(o.longrope_orig_ctx > 0, a.longrope, "LongRoPE");
  only(o.attn_softcap > 0, a.attn_softcap > 0, "an attention soft-cap");
  only(o.final_softcap > 0, a.reads_final_softcap, "a final logit soft-cap");
  only(o.attn_norm_2, a.norm == model::NormKind::Layer, "attn_norm_2");  // jina-bert-v2: its optional norms
  only(o.sparse.enabled, a.name == "llama", "a sparse (planted) model");
  only(o.n_expert > 0, a.experts != model::Experts::None, "a mixture of experts");
  only(o.expert_gating_func != 0, a.reads_expert_gating_func || (a.deepseek_experts && !fixed_softmax_experts(a)),
       "--expert-gating");
  require(o.expert_gating_func >= 0 && o.expert_gating_func <= 2, "--expert-gating is 1 (softmax) or 2 (sigmoid)");
  only(o.no_scale_keys, a.minicpm_scale_defaults, "--no-scale-keys");
  only(o.shared_kv_layers > 0 || o.n_embd_per_layer > 0, a.gemma4_layers, "--shared-kv-layers and --n-embd-per-layer");
  only(o.ssm_state > 0, a.mamba2_layers || a.mamba1_layers, "--ssm-state");
  only(o.ssm_dt_b_c_rms, a.mamba1_layers, "--ssm-dt-b-c-rms");
  only(o.reranker,
       a.bert_layers == model::BertLayers::Absolute || a.bert_layers == model::BertLayers::Alibi ||
           a.modern_bert_layers || a.name == "qwen3",
       "--reranker");
  only(o.no_ssm_norm, a.parallel_mamba2, "--no-ssm-norm");
  if (a.gemma4_layers) check_gemma4_options(o, types.base, types.heavy);
  if (a.qwen35_layers) check_qwen35_options(o, types.base, types.heavy);
  if (a.mamba2_layers) check_granite_hybrid_options(o, types.base, types.heavy);  // Mamba-2's widths
  if (a.short_conv_layers) check_lfm2_options(o);
  if (a.bert_layers != model::BertLayers::None) check_bert_options(o);
  if (a.modern_bert_layers) check_modern_bert_options(o);
  only(!o.hidden_act.empty(), a.modern_bert_layers, "--hidden-act");
  only(o.kv_lora_rank > 0 || o.q_lora_rank > 0, a.mla, "--kv-lora-rank and --q-lora-rank (latent attention)");
  only(o.mla_unsplit, a.mla, "--mla-unsplit");
  const bool unsplit = o.mla_unsplit || a.name == "minicpm3";
  require(!a.mla || unsplit || o.n_head_kv == 1, "latent attention caches one KV head: --n-head-kv 1");
  require(!unsplit || o.n_head_kv == o.n_head,
          "files with one attn_kv_b (--mla-unsplit, minicpm3) have multi-head keys: --n-head-kv = --n-head");
  require(o.kv_lora_rank >= 0 && o.q_lora_rank >= 0, "--kv-lora-rank and --q-lora-rank must be >= 0");
  require(int(o.rope_scale_linear > 0) + int(o.rope_scale_yarn > 0) + int(o.longrope_orig_ctx > 0) <= 1,
          "--rope-scale-linear, --rope-scale-yarn and --longrope are different rope.scaling.types: pick one");
  require(o.n_expert == 0 || (o.n_expert_used >= 1 && o.n_expert_used <= o.n_expert),
          "--experts-used must be between 1 and --experts");
  require(o.n_expert == 0 || !o.sparse.enabled, "a sparse (planted) model has one dense FFN, not experts");
  require(o.n_expert == 0 || o.ffn_form == a.ffn_forms.front(),
          "architecture " + arch + "'s experts are " + std::string(model::ffn_form_name(a.ffn_forms.front())) +
              " only");
  bool form_ok = false;
  for (const model::FfnForm f : a.ffn_forms) form_ok |= f == o.ffn_form;
  require(form_ok || o.sparse.enabled, "FFN form " + std::string(model::ffn_form_name(o.ffn_form)) +
                                          " is not one of architecture " + arch + "'s");
  const int64_t down_block = kernels::dtype_traits(types.heavy).block_size;
  require(o.n_ff % down_block == 0, "n_ff " + std::to_string(o.n_ff) + " is not a multiple of " +
                                        std::to_string(down_block) + ", the block size of " +
                                        std::string(kernels::dtype_name(types.heavy)) + " (ffn_down rows)");
  require(o.n_vocab >= 512, "n_vocab must be at least 512");
}

std::string read_text_file(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(std::string("cannot read ") + what + " " + path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Adds a tensor of shape `ne` (GGUF order) of random values N(mean, sd)
// stored as `dtype`, filled row by row in parallel at write time.
void add_random_tensor(gguf::GgufWriter& writer, const std::string& name, DType dtype,
                       std::vector<int64_t> ne, float mean, float sd, uint64_t seed, uint64_t tensor_idx,
                       int n_threads) {
  const int64_t n_cols = ne[0];
  int64_t n_rows = 1;
  for (size_t d = 1; d < ne.size(); ++d) n_rows *= ne[d];
  const int64_t bytes_per_row = kernels::row_bytes(dtype, n_cols);
  writer.add_tensor(name, dtype, ne, [=](std::span<std::byte> out) {
    auto work = [&](int64_t row_begin, int64_t row_end) {
      std::vector<float> row(static_cast<size_t>(n_cols));
      for (int64_t r = row_begin; r < row_end; ++r) {
        NormalStream(seed, tensor_idx, static_cast<uint64_t>(r)).fill(row.data(), n_cols, sd, mean);
        kernels::quantize_row(dtype, row.data(), out.data() + r * bytes_per_row, n_cols);
      }
    };
    const int64_t n_workers = std::clamp<int64_t>(n_rows / 16, 1, n_threads);
    std::vector<std::jthread> workers;
    for (int64_t w = 1; w < n_workers; ++w) {
      workers.emplace_back(work, n_rows * w / n_workers, n_rows * (w + 1) / n_workers);
    }
    work(0, n_rows / n_workers);
  });
}

// The RoPE base a real model of the architecture has.
double default_rope_base(std::string_view arch) {
  if (arch == "gpt-oss") return 150000.0;
  if (arch == "modern-bert") return 160000.0;  // ModernBERT's global_rope_theta
  return arch.starts_with("qwen") || arch.starts_with("gemma3") || arch == "gemma4" || arch == "gemma-embedding"
             ? 1000000.0 : 10000.0;  // qwen35 too
}

// Frequency factors rising linearly from `first` to `last` over n pairs
// (Llama 3.1's rope_freqs rise from 1 to 8 the same way, in steps).
std::vector<float> ramp(int64_t n, float first, float last) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = first + (last - first) * static_cast<float>(i) / static_cast<float>(std::max<int64_t>(1, n - 1));
  }
  return v;
}

void add_f32_vector(gguf::GgufWriter& w, const std::string& name, std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  w.add_tensor(name, DType::F32, {n}, [values = std::move(values)](std::span<std::byte> out) {
    std::memcpy(out.data(), values.data(), values.size() * sizeof(float));
  });
}

// The keys of architecture `a` beyond the shared ones, as llama.cpp reads them.
void set_arch_keys(const MakeModelOptions& o, const model::Architecture& a, gguf::GgufWriter& w) {
  const std::string p = std::string(a.name) + ".";
  if (a.parallel_ffn_norm) w.set(p + "use_parallel_residual", gguf::Value(true));  // GPT-NeoX's (required)
  if (a.rope_alpha) w.set(p + "rope.scaling.alpha", gguf::Value(1000.0f));  // Hunyuan-7B's NTK alpha
  if (o.head_dim > 0 && !a.mla) {  // latent attention writes its own (make_model)
    w.set(p + "attention.key_length", gguf::Value(static_cast<uint32_t>(o.head_dim)));
    w.set(p + "attention.value_length", gguf::Value(static_cast<uint32_t>(o.head_dim)));
  }
  // gpt-oss and Cohere 2 files always carry their window (llama.cpp
  // requires the key): gpt-oss's default, Command R7B's 4096.
  int64_t window = o.sliding_window;
  if (window <= 0 && a.name == "gpt-oss") window = a.sliding_window.default_window;
  if (window <= 0 && a.rope_windowed_only && !a.rope_everywhere_without_window) window = 4096;
  const bool embedding_gemma = a.bidirectional && a.bert_layers == model::BertLayers::None && !a.modern_bert_layers;
  if (window <= 0 && embedding_gemma) window = 512;  // EmbeddingGemma's (llama.cpp requires the key)
  if (embedding_gemma) {  // mean pooling and the dense head's widths, as its converter writes them
    w.set(p + "pooling_type", gguf::Value(uint32_t{1}));
    w.set(p + "rope.freq_base_swa", gguf::Value(10000.0f));
    w.set(p + "dense_2_feat_in", gguf::Value(static_cast<uint32_t>(o.n_embd)));
    w.set(p + "dense_2_feat_out", gguf::Value(static_cast<uint32_t>(4 * o.n_embd)));
    w.set(p + "dense_3_feat_in", gguf::Value(static_cast<uint32_t>(4 * o.n_embd)));
    w.set(p + "dense_3_feat_out", gguf::Value(static_cast<uint32_t>(o.n_embd)));
  }
  if (window > 0) w.set(p + "attention.sliding_window", gguf::Value(static_cast<uint32_t>(window)));
  if (o.swa_pattern > 0) {
    w.set(p + "attention.sliding_window_pattern", gguf::Value(static_cast<uint32_t>(o.swa_pattern)));
  }
  if (o.rope_scale_linear > 0) {
    w.set(p + "rope.scaling.type", gguf::Value(std::string("linear")));
    w.set(p + "rope.scaling.factor", gguf::Value(static_cast<float>(o.rope_scale_linear)));
  }
  if (o.rope_scale_yarn > 0) {
    w.set(p + "rope.scaling.type", gguf::Value(std::string("yarn")));
    w.set(p + "rope.scaling.factor", gguf::Value(static_cast<float>(o.rope_scale_yarn)));
    const auto orig = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(o.n_ctx) / o.rope_scale_yarn));
    w.set(p + "rope.scaling.original_context_length", gguf::Value(static_cast<uint32_t>(orig)));
    if (a.yarn_log_mul_and_temperature) {  // Ministral 3's values
      w.set(p + "rope.scaling.yarn_log_multiplier", gguf::Value(1.0f));
      w.set(p + "attention.temperature_scale", gguf::Value(0.1f));
    }
    // DeepSeek-V2-Lite's mscale_all_dim 0.707, times 0.1 as its converter writes it.
    if (a.mla) w.set(p + "rope.scaling.yarn_log_multiplier", gguf::Value(0.0707f));
  }
  if (o.longrope_orig_ctx > 0) {
    w.set(p + "rope.scaling.type", gguf::Value(std::string("longrope")));
    w.set(p + "rope.scaling.original_context_length", gguf::Value(static_cast<uint32_t>(o.longrope_orig_ctx)));
    // sqrt(1 + ln(n_ctx / orig) / ln(orig)), as Phi-3's converter writes it.
    const double scale = static_cast<double>(o.n_ctx) / static_cast<double>(o.longrope_orig_ctx);
    const double attn_factor =
        scale <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(o.longrope_orig_ctx)));
    w.set(p + "rope.scaling.attn_factor", gguf::Value(static_cast<float>(attn_factor)));
  }
  if (a.granite_scales && a.minicpm_scale_defaults && (o.no_scale_keys || a.name == "minicpm3")) {
    // none: MiniCPM's constants (MiniCPM3's files never name them)
  } else if (a.granite_scales && a.minicpm_scale_defaults) {  // MiniCPM-2B's, as its converter writes them
    w.set(p + "embedding_scale", gguf::Value(12.0f));
    w.set(p + "residual_scale", gguf::Value(static_cast<float>(1.4 / std::sqrt(40.0))));
    w.set(p + "logit_scale", gguf::Value(9.0f));
  } else if (a.granite_scales) {  // Granite 3.x 2B's multipliers
    w.set(p + "embedding_scale", gguf::Value(12.0f));
    w.set(p + "residual_scale", gguf::Value(0.22f));
    w.set(p + "attention.scale", gguf::Value(0.0078125f));
    w.set(p + "logit_scale", gguf::Value(8.0f));
  }
  if (a.logit_scale_multiplies) w.set(p + "logit_scale", gguf::Value(0.125f));  // Aya Expanse 8B's
  if (o.reranker && a.name == "qwen3") {  // Qwen3-Reranker's, as llama.cpp's converter writes them
    w.set(p + "pooling_type", gguf::Value(uint32_t{4}));
    w.set(p + "classifier.output_labels", gguf::Value::string_array({"yes", "no"}));
  }
  if (o.attn_softcap > 0) w.set(p + "attn_logit_softcapping", gguf::Value(o.attn_softcap));
  if (o.final_softcap > 0) w.set(p + "final_logit_softcapping", gguf::Value(o.final_softcap));
}

// ChatML, the simplest widely used template; tokens are plain text here.
constexpr const char* kChatTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";


// Qwen3-Reranker's prompt ({query}, {document} filled in), as its converter writes it.
constexpr const char* kRerankTemplate =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a "
    "web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: "
    "{document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n";

// make_model's one file, at o.output.
void write_model(const MakeModelOptions& options, const MakeModelProgress& progress) {
  MakeModelOptions o = options;
  const model::Architecture* arch_desc = model::find_architecture(o.arch);
  if (arch_desc == nullptr || o.arch == model::kArchBamboo) {
    throw std::invalid_argument("unknown architecture '" + o.arch + "' (make-model writes " +
                                model::supported_architecture_names() +
                                " but bamboo, which comes from a dReLU --sparse model in the PWRI layout)");
  }
  const model::Architecture& a = *arch_desc;
  if (o.rope_freq_base <= 0) o.rope_freq_base = default_rope_base(a.name);
  if (o.ffn_form == model::FfnForm::SwiGLU && a.ffn_forms.front() != model::FfnForm::SwiGLU && !o.sparse.enabled) {
    o.ffn_form = a.ffn_forms.front();  // the default stands for the architecture's own form
  }
  if (a.experts == model::Experts::Required && o.n_expert == 0) o.n_expert = 8;
  const WeightTypes types = parse_weight_type(o.weight_type);
  check_options(o, types, a);
  SparseTensorTypes sparse_types{types.base, types.heavy, types.base};
  if (o.sparse.enabled) {
    sparse_types.predictor = sparse_predictor_type(o, types.base);
    check_sparse_options(o, sparse_types);
  }
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  text::Vocab vocab;
  if (o.vocab_family) {
    vocab = make_family_vocab(*o.vocab_family);
    o.n_vocab = vocab.n_vocab();
  } else {
    std::string corpus_storage;
    std::string_view corpus = tokenizer_corpus();
    if (!o.vocab_text.empty()) {
      corpus_storage = read_text_file(o.vocab_text, "vocabulary text");
      corpus = corpus_storage;
    }
    static const std::vector<std::string> kFimTexts = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"};
    const auto n_fim = static_cast<int32_t>(o.fim_tokens ? kFimTexts.size() : 0);
    vocab = text::train_vocab(corpus, {.kind = o.tokenizer,
                                       .vocab_size = static_cast<int32_t>(o.n_vocab) - n_fim,
                                       .reserved = o.fim_tokens ? kFimTexts : std::vector<std::string>{}});
    for (int32_t i = 0; i < n_fim; ++i) {
      vocab.tokens.push_back(kFimTexts[static_cast<size_t>(i)]);
      vocab.types.push_back(text::TokenType::Control);
      if (!vocab.scores.empty()) vocab.scores.push_back(0.0f);
    }
    if (o.fim_tokens) {
      vocab.fim.pre = vocab.n_vocab() - 3;
      vocab.fim.suf = vocab.n_vocab() - 2;
      vocab.fim.mid = vocab.n_vocab() - 1;
    }
  }
  vocab.chat_template = o.chat_template_file.empty() ? std::string(kChatTemplate)
                                                     : read_text_file(o.chat_template_file, "chat template");
  if (a.bidirectional && o.chat_template_file.empty()) vocab.chat_template.reset();  // an encoder does not chat

  const bool pwri = o.sparse.enabled && o.sparse.layout == SparseLayout::PowerInfer;
  gguf::GgufWriter w(pwri ? gguf::Magic::PWRI : gguf::Magic::GGUF);
  const std::string arch = o.sparse.enabled ? std::string(model::architecture_for(o.ffn_form, pwri)) : o.arch;
  const std::string p = arch + ".";
  const bool layer_norm = a.norm != model::NormKind::Rms;
  const bool norm_bias = a.norm == model::NormKind::Layer;
  const int64_t head_dim = head_dim_of(o);
  // Latent attention rotates half of each head by default (DeepSeek's 64 of 192).
  const int64_t n_rot = o.n_rot > 0 ? o.n_rot : (a.mla ? head_dim / 2 : head_dim);  // rotated dimensions per head
  const int64_t kv_lora = a.mla ? (o.kv_lora_rank > 0 ? o.kv_lora_rank : 2 * head_dim) : 0;
  // MiniCPM3: always a compressed query and one attn_kv_b, a head's value
  // n_embd / n_head wide (its files name no value_length).
  const bool minicpm3 = a.name == "minicpm3";
  const bool mla_unsplit = o.mla_unsplit || minicpm3;
  const int64_t q_lora = o.q_lora_rank > 0 ? o.q_lora_rank : (minicpm3 ? 3 * head_dim : 0);
  const int64_t head_v = minicpm3 ? o.n_embd / o.n_head : head_dim;
  w.set("general.architecture", gguf::Value(arch));
  w.set("general.name", gguf::Value(o.name));
  w.set("general.file_type", gguf::Value(types.file_type));
  if (kernels::dtype_traits(types.base).is_quantized) w.set("general.quantization_version", gguf::Value(uint32_t{2}));
  w.set(p + "vocab_size", gguf::Value(static_cast<uint32_t>(o.n_vocab)));
  w.set(p + "context_length", gguf::Value(static_cast<uint32_t>(o.n_ctx)));
  w.set(p + "embedding_length", gguf::Value(static_cast<uint32_t>(o.n_embd)));
  // DeepSeek's form of experts (GLM-4.5): a leading dense layer twice an
  // expert's width, and GLM's multi-token prediction block after the rest.
  const bool deepseek = a.deepseek_experts && o.n_expert > 0;
  // Hunyuan-A13B's converter writes a shared expert's count and width only:
  // experts in every layer, softmax routing renormalised, no selection bias.
  const bool hunyuan_moe = deepseek && a.name == "hunyuan-moe";
  // DeepSeek V1's converter: the dense lead, the experts' scale and the
  // shared count; softmax routing not renormalised, no selection bias.
  const bool deepseek_v1 = deepseek && a.name == "deepseek";
  // Ling 1.0's converter: the same, with norm_topk_prob and experts in
  // every layer.
  const bool ling_v1 = deepseek && a.name == "bailingmoe";
  const int64_t n_dense_lead = deepseek && o.n_layer > 1 && !hunyuan_moe && !ling_v1 ? 1 : 0;
  // (Hunyuan-A13B's feed_forward_length equals its experts' width, and
  // llama.cpp releases read the experts' width from either key.)
  const int64_t n_ff_dense = deepseek && !hunyuan_moe ? 2 * o.n_ff : o.n_ff;
  const int64_t n_nextn = deepseek && a.name == "glm4moe" ? 1 : 0;
  w.set(p + "block_count", gguf::Value(static_cast<uint32_t>(o.n_layer + n_nextn)));
  w.set(p + "feed_forward_length", gguf::Value(static_cast<uint32_t>(n_ff_dense)));
  w.set(p + "rope.dimension_count", gguf::Value(static_cast<uint32_t>(n_rot)));
  if (o.mrope_sections || a.multimodal_rope == model::MultimodalRope::Required) {
    // Time, height and width over the rotated pairs, as Qwen2-VL's 16, 24, 24 of 64.
    const auto pairs = static_cast<int32_t>(n_rot / 2);
    const int32_t time = pairs / 4, height = (pairs - time) / 2;
    w.set(p + "rope.dimension_sections", gguf::Value::i32_array({time, height, pairs - time - height, 0}));
  }
  w.set(p + "attention.head_count", gguf::Value(static_cast<uint32_t>(o.n_head)));
  w.set(p + "attention.head_count_kv", gguf::Value(static_cast<uint32_t>(o.n_head_kv)));
  if (a.mla && mla_unsplit) {  // as converters before the split wrote them: a head's widths only
    w.set(p + "attention.kv_lora_rank", gguf::Value(static_cast<uint32_t>(kv_lora)));
    if (q_lora > 0) w.set(p + "attention.q_lora_rank", gguf::Value(static_cast<uint32_t>(q_lora)));
    w.set(p + "attention.key_length", gguf::Value(static_cast<uint32_t>(head_dim)));
    if (!minicpm3) w.set(p + "attention.value_length", gguf::Value(static_cast<uint32_t>(head_v)));
  } else if (a.mla) {  // as llama.cpp's converter writes them: the cached row's widths, then a head's
    w.set(p + "attention.kv_lora_rank", gguf::Value(static_cast<uint32_t>(kv_lora)));
    if (q_lora > 0) w.set(p + "attention.q_lora_rank", gguf::Value(static_cast<uint32_t>(q_lora)));
    w.set(p + "attention.key_length", gguf::Value(static_cast<uint32_t>(kv_lora + n_rot)));
    w.set(p + "attention.value_length", gguf::Value(static_cast<uint32_t>(kv_lora)));
    w.set(p + "attention.key_length_mla", gguf::Value(static_cast<uint32_t>(head_dim)));
    w.set(p + "attention.value_length_mla", gguf::Value(static_cast<uint32_t>(head_dim)));
  }
  w.set(p + (layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"),
        gguf::Value(static_cast<float>(o.rms_eps)));
  w.set(p + "rope.freq_base", gguf::Value(static_cast<float>(o.rope_freq_base)));
  set_arch_keys(o, a, w);
  if (o.n_expert > 0) {
    w.set(p + "expert_count", gguf::Value(static_cast<uint32_t>(o.n_expert)));
    w.set(p + "expert_used_count", gguf::Value(static_cast<uint32_t>(o.n_expert_used)));
    if (a.experts == model::Experts::Required || a.deepseek_experts) {
      w.set(p + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
    }
    if (a.shared_expert) {  // twice an expert's width, as Qwen1.5-MoE's 5632 to 1408 is four times
      w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(2 * o.n_ff)));
    }
    if (a.reads_expert_gating_func && !deepseek) {  // SmallThinker's converter writes softmax or sigmoid
      const int gating = o.expert_gating_func > 0 ? o.expert_gating_func : 1;
      w.set(p + "expert_gating_func", gguf::Value(static_cast<uint32_t>(gating)));
    }
    if (deepseek && a.name == "ernie4_5-moe") {  // ERNIE 4.5's: softmax, renormalised; the shared expert by width
      w.set(p + "leading_dense_block_count", gguf::Value(static_cast<uint32_t>(n_dense_lead)));
      w.set(p + "interleave_moe_layer_step", gguf::Value(uint32_t{1}));
      w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
      if (o.expert_gating_func > 0) {
        w.set(p + "expert_gating_func", gguf::Value(static_cast<uint32_t>(o.expert_gating_func)));
      }
    } else if (deepseek_v1 || ling_v1) {
      w.set(p + "leading_dense_block_count", gguf::Value(static_cast<uint32_t>(n_dense_lead)));
      w.set(p + "expert_weights_scale", gguf::Value(1.5f));
      w.set(p + "expert_shared_count", gguf::Value(uint32_t{1}));
      if (ling_v1) w.set(p + "expert_weights_norm", gguf::Value(true));
    } else if (hunyuan_moe) {
      w.set(p + "expert_shared_count", gguf::Value(uint32_t{1}));
      w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
    } else if (deepseek) {  // GLM-4.5's routing: sigmoid, renormalised, scaled by 2.5; one shared expert
      w.set(p + "leading_dense_block_count", gguf::Value(static_cast<uint32_t>(n_dense_lead)));
      w.set(p + "expert_shared_count", gguf::Value(uint32_t{1}));
      w.set(p + "expert_weights_norm", gguf::Value(true));
      w.set(p + "expert_weights_scale", gguf::Value(2.5f));
      const int gating = o.expert_gating_func > 0 ? o.expert_gating_func : 2;
      w.set(p + "expert_gating_func", gguf::Value(static_cast<uint32_t>(gating)));
      if (n_nextn > 0) w.set(p + "nextn_predict_layers", gguf::Value(static_cast<uint32_t>(n_nextn)));
      if (a.mla && o.n_expert >= 8 && o.n_expert % 4 == 0) {  // DeepSeek V3's routing within groups
        w.set(p + "expert_group_count", gguf::Value(uint32_t{4}));
        w.set(p + "expert_group_used_count", gguf::Value(uint32_t{2}));
      }
    }
  }
  w.set(std::string(model::kFfnFormKey), gguf::Value(std::string(model::ffn_form_name(o.ffn_form))));
  w.set("thermocline.make_model.seed", gguf::Value(o.seed));
  text::write_vocab(vocab, w);
  if (o.reranker && a.name == "qwen3") w.set("tokenizer.chat_template.rerank", gguf::Value(std::string(kRerankTemplate)));
  if (o.sparse.enabled) {
    add_sparse_model(o, sparse_types, w, n_threads);
    w.write(o.output, progress);
    return;
  }

  const int64_t n_embd_q = o.n_head * head_dim;
  const int64_t n_embd_kv = head_dim * o.n_head_kv;
  auto sd_for = [&](int64_t fan_in) {
    return o.weight_scale > 0.0f ? o.weight_scale : 1.0f / std::sqrt(static_cast<float>(fan_in));
  };
  uint64_t tensor_idx = 0;
  auto matrix = [&](const std::string& name, DType t, int64_t n_cols, int64_t n_rows, float sd) {
    add_random_tensor(w, name, t, {n_cols, n_rows}, 0.0f, sd, o.seed, tensor_idx++, n_threads);
  };
  auto expert_tensor = [&](const std::string& name, DType t, int64_t n_cols, int64_t n_rows, float sd) {
    add_random_tensor(w, name, t, {n_cols, n_rows, o.n_expert}, 0.0f, sd, o.seed, tensor_idx++, n_threads);
  };
  auto vector = [&](const std::string& name, int64_t n, float mean, float sd) {
    add_random_tensor(w, name, DType::F32, {n}, mean, sd, o.seed, tensor_idx++, n_threads);
  };
  auto norm = [&](const std::string& name, int64_t n = 0) { vector(name, n > 0 ? n : o.n_embd, 1.0f, 0.1f); };
  auto bias = [&](int64_t l, std::string_view t, int64_t n) {
    vector("blk." + std::to_string(l) + "." + std::string(t) + ".bias", n, 0.0f, 0.5f);
  };
  // A LayerNorm's bias right after its weight (the name's .weight -> .bias).
  auto norm_with_bias = [&](const std::string& name) {
    norm(name);
    if (norm_bias) vector(name.substr(0, name.size() - 6) + "bias", o.n_embd, 0.0f, 0.1f);
  };

  // Embeddings are looked up, not multiplied: unit-scale rows.
  matrix("token_embd.weight", types.base, o.n_embd, o.n_vocab, o.weight_scale > 0.0f ? o.weight_scale : 1.0f);
  const bool bert = a.bert_layers != model::BertLayers::None;
  if (!a.short_conv_layers && !bert) norm_with_bias("output_norm.weight");  // LFM2's: make_lfm2.h
  if (!o.tied_embeddings && !a.head_is_token_embd) {
    matrix("output.weight", types.heavy, o.n_embd, o.n_vocab, sd_for(o.n_embd));
    if (a.name == "phi2") vector("output.bias", o.n_vocab, 0.0f, 0.5f);
  }
  // Qwen3-Reranker: the head's "yes" and "no" rows.
  if (o.reranker && a.name == "qwen3") matrix("cls.output.weight", types.heavy, o.n_embd, 2, sd_for(o.n_embd));
  if (a.gemma4_layers || a.altup_layers || a.qwen35_layers || a.mamba2_layers || a.mamba1_layers ||
      a.short_conv_layers || bert || a.modern_bert_layers) {
    const RandomTensorAdder add = [&](const std::string& name, DType t, std::vector<int64_t> ne, float mean,
                                      float sd) {
      add_random_tensor(w, name, t, std::move(ne), mean, sd, o.seed, tensor_idx++, n_threads);
    };
    if (bert) {
      write_bert_model(o, types.base, types.heavy, w, add);
    } else if (a.modern_bert_layers) {
      write_modern_bert_model(o, types.base, types.heavy, w, add);
    } else if (a.gemma4_layers) {
      write_gemma4_model(o, types.base, types.heavy, w, add);
    } else if (a.altup_layers) {
      write_gemma3n_model(o, types.base, types.heavy, w, add);
    } else if (a.single_block_layers) {
      write_nemotron_h_model(o, types.base, types.heavy, w, add);
    } else if (a.mamba1_layers) {
      write_jamba_model(o, types.base, types.heavy, w, add);
    } else if (a.parallel_mamba2) {
      write_falcon_h1_model(o, types.base, types.heavy, w, add);
    } else if (a.mamba2_layers) {
      write_granite_hybrid_model(o, types.base, types.heavy, w, add);
    } else if (a.short_conv_layers) {
      write_lfm2_model(o, types.base, types.heavy, w, add);
    } else {
      write_qwen35_model(o, types.base, types.heavy, w, add);
    }
    w.write(o.output, progress);
    return;
  }
  const bool fused_qkv = o.fused_qkv || a.fused_qkv_only || a.name == "phi3";
  // Biases on every linear layer, required by llama.cpp (phi2's head too).
  const bool all_biases = a.name == "starcoder2" || a.name == "phi2" || a.name == "gptneox";
  const bool qkv_bias = o.attn_bias || a.name == "qwen2" || a.name == "qwen2vl" || a.name == "qwen2moe" ||
                        a.name == "gpt-oss" || a.name == "glm4moe" || all_biases;
  const bool output_bias = a.name == "gpt-oss" || all_biases;
  // Latent attention's tensors of layer l (llama.cpp's deepseek2 names):
  // attn_k_b and attn_v_b hold one slice per head; a slice narrower than the
  // weight type's block stays f16, as llama.cpp's quantizer leaves it.
  auto add_mla_tensors = [&](int64_t l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    if (q_lora > 0) {
      matrix(name("attn_q_a"), types.base, o.n_embd, q_lora, sd_for(o.n_embd));
      norm(name("attn_q_a_norm"), q_lora);
      matrix(name("attn_q_b"), types.base, q_lora, n_embd_q, sd_for(q_lora));
    } else {
      matrix(name("attn_q"), types.base, o.n_embd, n_embd_q, sd_for(o.n_embd));
    }
    matrix(name("attn_kv_a_mqa"), types.base, o.n_embd, kv_lora + n_rot, sd_for(o.n_embd));
    norm(name("attn_kv_a_norm"), kv_lora);
    const int64_t nope = head_dim - n_rot;
    if (mla_unsplit) {  // per head: its k rows, then its v rows
      matrix(name("attn_kv_b"), types.base, kv_lora, o.n_head * (nope + head_v), sd_for(kv_lora));
      return;
    }
    const DType k_b_type = nope % kernels::dtype_traits(types.base).block_size == 0 ? types.base : DType::F16;
    add_random_tensor(w, name("attn_k_b"), k_b_type, {nope, kv_lora, o.n_head}, 0.0f, sd_for(nope), o.seed,
                      tensor_idx++, n_threads);
    add_random_tensor(w, name("attn_v_b"), types.heavy, {kv_lora, head_dim, o.n_head}, 0.0f, sd_for(kv_lora), o.seed,
                      tensor_idx++, n_threads);
  };
  // GLM-4.5-Air has no q/k norms (the optional ones stay out).
  const bool qk_norm = a.qk_norm && !a.qk_norm_optional;
  for (int64_t l = 0; l < o.n_layer + n_nextn; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    if (a.pre_norms) norm_with_bias(name("attn_norm"));
    if (o.attn_norm_2) norm_with_bias(name("attn_norm_2"));
    if (a.mla) {
      add_mla_tensors(l);
    } else if (fused_qkv) {
      matrix(name("attn_qkv"), types.base, o.n_embd, n_embd_q + 2 * n_embd_kv, sd_for(o.n_embd));
      if (qkv_bias) bias(l, "attn_qkv", n_embd_q + 2 * n_embd_kv);
    } else {
      matrix(name("attn_q"), types.base, o.n_embd, n_embd_q, sd_for(o.n_embd));
      matrix(name("attn_k"), types.base, o.n_embd, n_embd_kv, sd_for(o.n_embd));
      matrix(name("attn_v"), types.heavy, o.n_embd, n_embd_kv, sd_for(o.n_embd));
      if (qkv_bias) {
        bias(l, "attn_q", n_embd_q);
        bias(l, "attn_k", n_embd_kv);
        bias(l, "attn_v", n_embd_kv);
      }
    }
    // Under latent attention the heads' values (head_v each) enter attn_output.
    const int64_t n_attn_out = a.mla ? o.n_head * head_v : n_embd_q;
    matrix(name("attn_output"), types.base, n_attn_out, o.n_embd, sd_for(n_attn_out));
    if (output_bias) bias(l, "attn_output", o.n_embd);
    if (a.attn_sinks) vector(name("attn_sinks"), o.n_head, 0.0f, 2.0f);
    if (a.attn_output_gate) matrix(name("attn_gate"), types.base, o.n_embd, n_embd_q, sd_for(o.n_embd));
    if (qk_norm) {
      norm(name("attn_q_norm"), a.qk_norm_whole ? n_embd_q : head_dim);
      norm(name("attn_k_norm"), a.qk_norm_whole ? n_embd_kv : head_dim);
    }
    if (a.post_norms) norm(name("post_attention_norm"));
    if ((a.layer_form == model::LayerForm::Sequential && a.pre_norms) || a.parallel_ffn_norm) {
      norm_with_bias(name(a.ffn_norm_name));
    }
    if (l >= o.n_layer) {  // the multi-token prediction block's own tensors
      matrix(name("nextn.eh_proj"), types.base, 2 * o.n_embd, o.n_embd, sd_for(2 * o.n_embd));
      norm(name("nextn.enorm"));
      norm(name("nextn.hnorm"));
    }
    if (o.n_expert > 0 && l >= n_dense_lead) {
      // The router in f32, as llama.cpp's quantizer leaves it; then the experts, stacked.
      matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert, sd_for(o.n_embd));
      expert_tensor(name("ffn_gate_exps"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
      expert_tensor(name("ffn_up_exps"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
      expert_tensor(name("ffn_down_exps"), types.heavy, o.n_ff, o.n_embd, sd_for(o.n_ff));
      if (a.expert_biases) {  // f32 {width, n_expert}: one bias row per expert
        bias(l, "ffn_gate_inp", o.n_expert);
        add_random_tensor(w, "blk." + std::to_string(l) + ".ffn_gate_exps.bias", DType::F32, {o.n_ff, o.n_expert},
                          0.0f, 0.5f, o.seed, tensor_idx++, n_threads);
        add_random_tensor(w, "blk." + std::to_string(l) + ".ffn_up_exps.bias", DType::F32, {o.n_ff, o.n_expert}, 0.0f,
                          0.5f, o.seed, tensor_idx++, n_threads);
        add_random_tensor(w, "blk." + std::to_string(l) + ".ffn_down_exps.bias", DType::F32,
                          {o.n_embd, o.n_expert}, 0.0f, 0.5f, o.seed, tensor_idx++, n_threads);
      }
      if (deepseek) {  // the selection bias; the ungated shared expert, an expert's width
        if (!fixed_softmax_experts(a)) vector("blk." + std::to_string(l) + ".exp_probs_b.bias", o.n_expert, 0.0f, 0.1f);
        matrix(name("ffn_gate_shexp"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
        matrix(name("ffn_up_shexp"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
        matrix(name("ffn_down_shexp"), types.heavy, o.n_ff, o.n_embd, sd_for(o.n_ff));
      }
      if (a.shared_expert) {
        vector(name("ffn_gate_inp_shexp"), o.n_embd, 0.0f, sd_for(o.n_embd));
        matrix(name("ffn_gate_shexp"), types.base, o.n_embd, 2 * o.n_ff, sd_for(o.n_embd));
        matrix(name("ffn_up_shexp"), types.base, o.n_embd, 2 * o.n_ff, sd_for(o.n_embd));
        matrix(name("ffn_down_shexp"), types.heavy, 2 * o.n_ff, o.n_embd, sd_for(2 * o.n_ff));
      }
      if (a.post_norms) norm(name("post_ffw_norm"));
      continue;
    }
    if (deepseek) {  // the leading dense layer
      matrix(name("ffn_gate"), types.base, o.n_embd, n_ff_dense, sd_for(o.n_embd));
      matrix(name("ffn_up"), types.base, o.n_embd, n_ff_dense, sd_for(o.n_embd));
      matrix(name("ffn_down"), types.heavy, n_ff_dense, o.n_embd, sd_for(n_ff_dense));
      if (a.post_norms) norm(name("post_ffw_norm"));
      continue;
    }
    switch (a.ffn_layout) {
      case model::FfnLayout::GateUp:
        matrix(name("ffn_gate"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
        matrix(name("ffn_up"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
        break;
      case model::FfnLayout::FusedGateUp:
        matrix(name("ffn_up"), types.base, o.n_embd, 2 * o.n_ff, sd_for(o.n_embd));
        break;
      case model::FfnLayout::UpOnly:
        matrix(name("ffn_up"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
        break;
    }
    matrix(name("ffn_down"), types.heavy, o.n_ff, o.n_embd, sd_for(o.n_ff));
    if (all_biases) {
      bias(l, "ffn_up", o.n_ff);
      bias(l, "ffn_down", o.n_embd);
    }
    if (a.post_norms) norm(name("post_ffw_norm"));
  }
  if (a.bidirectional) {  // EmbeddingGemma's dense head: n_embd -> 4 n_embd -> n_embd
    matrix("dense_2.weight", types.base, o.n_embd, 4 * o.n_embd, sd_for(o.n_embd));
    matrix("dense_3.weight", types.base, 4 * o.n_embd, o.n_embd, sd_for(4 * o.n_embd));
  }
  if (o.rope_freqs) add_f32_vector(w, "rope_freqs.weight", ramp(n_rot / 2, 1.0f, 8.0f));
  if (o.longrope_orig_ctx > 0) {
    add_f32_vector(w, "rope_factors_short.weight", ramp(n_rot / 2, 1.0f, 1.5f));
    add_f32_vector(w, "rope_factors_long.weight", ramp(n_rot / 2, 1.0f, 20.0f));
  }
  w.write(o.output, progress);
}

// The shards' common prefix: the output path without ".gguf".
std::filesystem::path split_prefix(const std::filesystem::path& output) {
  return output.extension() == ".gguf" ? output.parent_path() / output.stem() : output;
}

}  // namespace

std::vector<std::filesystem::path> make_model_outputs(const MakeModelOptions& options) {
  if (options.split_shards <= 1) return {options.output};
  std::vector<std::filesystem::path> out;
  for (int i = 1; i <= options.split_shards; ++i) {
    out.push_back(gguf::split_shard_path(split_prefix(options.output), i, options.split_shards));
  }
  return out;
}

void make_model(const MakeModelOptions& options, const MakeModelProgress& progress) {
  if (options.split_shards <= 1) return write_model(options, progress);
  if (options.split_shards > gguf::kMaxShards) throw std::invalid_argument("--split must be at most 99999");
  MakeModelOptions whole = options;
  whole.output = options.output.string() + ".unsplit.tmp";
  write_model(whole, progress);
  try {
    gguf::write_split(gguf::GgufFile::open(whole.output), split_prefix(options.output), options.split_shards);
  } catch (...) {
    std::filesystem::remove(whole.output);
    throw;
  }
  std::filesystem::remove(whole.output);
}

}  // namespace tc::profiler
