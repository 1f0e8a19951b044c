// make-model: synthetic llama-architecture GGUF files with seeded random
// weights. Each row of each tensor draws from its own RNG stream, seeded by
// (seed, tensor index, row), so the bytes do not depend on the thread count.
// Sparse models (planted activations, predictors) are built by
// sparse_planting.cpp; this file writes their shared metadata and vocab.
#include "profiler/make_model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numbers>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/text/tokenizer_trainer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "profiler/sparse_planting.h"
#include "profiler/splitmix64.h"
#include "profiler/tokenizer_corpus.h"

namespace tc::profiler {
namespace {

using kernels::DType;

// xoshiro256+ with Box-Muller: a fast source of standard normal floats.
class NormalStream {
 public:
  NormalStream(uint64_t seed, uint64_t tensor_idx, uint64_t row_idx) {
    uint64_t x = seed ^ (tensor_idx * 0xD1B54A32D192ED03ull) ^ (row_idx * 0x8CB92BA72F3D8DD7ull);
    for (auto& s : s_) s = splitmix64(x);
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
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = (s_[3] << 45) | (s_[3] >> 19);
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
    default:
      throw std::invalid_argument("weight type '" + name + "' is not a weight format (" +
                                  std::string(kMakeModelTypeList) + ")");
  }
}

void check_options(const MakeModelOptions& o, const WeightTypes& types) {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  require(o.n_embd > 0 && o.n_layer > 0 && o.n_ff > 0 && o.n_head > 0 && o.n_head_kv > 0 && o.n_ctx > 0,
          "dimensions must be positive");
  require(o.n_embd % o.n_head == 0, "n_head must divide n_embd");
  require(o.n_head % o.n_head_kv == 0, "n_head_kv must divide n_head");
  require((o.n_embd / o.n_head) % 2 == 0, "head_dim (n_embd / n_head) must be even for RoPE");
  for (DType t : {types.base, types.heavy}) {
    const int64_t block = kernels::dtype_traits(t).block_size;
    require(o.n_embd % block == 0, "n_embd " + std::to_string(o.n_embd) + " is not a multiple of " +
                                       std::to_string(block) + ", the block size of " +
                                       std::string(kernels::dtype_name(t)));
  }
  const int64_t down_block = kernels::dtype_traits(types.heavy).block_size;
  require(o.n_ff % down_block == 0, "n_ff " + std::to_string(o.n_ff) + " is not a multiple of " +
                                        std::to_string(down_block) + ", the block size of " +
                                        std::string(kernels::dtype_name(types.heavy)) + " (ffn_down rows)");
  require(o.n_vocab >= 512, "n_vocab must be at least 512");
}

std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read vocabulary text " + path.string());
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
  const int64_t n_rows = ne.size() > 1 ? ne[1] : 1;
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

// ChatML, the simplest widely used template; tokens are plain text here.
constexpr const char* kChatTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}";

}  // namespace

void make_model(const MakeModelOptions& o, const MakeModelProgress& progress) {
  const WeightTypes types = parse_weight_type(o.weight_type);
  check_options(o, types);
  SparseTensorTypes sparse_types{types.base, types.heavy, types.base};
  if (o.sparse.enabled) {
    sparse_types.predictor = sparse_predictor_type(o, types.base);
    check_sparse_options(o, sparse_types);
  }
  const int n_threads =
      o.n_threads > 0 ? o.n_threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  std::string corpus_storage;
  std::string_view corpus = tokenizer_corpus();
  if (!o.vocab_text.empty()) {
    corpus_storage = read_text_file(o.vocab_text);
    corpus = corpus_storage;
  }
  text::Vocab vocab = text::train_vocab(corpus, {.kind = o.tokenizer, .vocab_size = static_cast<int32_t>(o.n_vocab)});
  vocab.chat_template = kChatTemplate;

  const bool pwri = o.sparse.enabled && o.sparse.layout == SparseLayout::PowerInfer;
  gguf::GgufWriter w(pwri ? gguf::Magic::PWRI : gguf::Magic::GGUF);
  const std::string arch(model::architecture_for(o.ffn_form, pwri));
  const std::string p = arch + ".";
  w.set("general.architecture", gguf::Value(arch));
  w.set("general.name", gguf::Value(o.name));
  w.set("general.file_type", gguf::Value(types.file_type));
  if (kernels::dtype_traits(types.base).is_quantized) w.set("general.quantization_version", gguf::Value(uint32_t{2}));
  w.set(p + "vocab_size", gguf::Value(static_cast<uint32_t>(o.n_vocab)));
  w.set(p + "context_length", gguf::Value(static_cast<uint32_t>(o.n_ctx)));
  w.set(p + "embedding_length", gguf::Value(static_cast<uint32_t>(o.n_embd)));
  w.set(p + "block_count", gguf::Value(static_cast<uint32_t>(o.n_layer)));
  w.set(p + "feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
  w.set(p + "rope.dimension_count", gguf::Value(static_cast<uint32_t>(o.n_embd / o.n_head)));
  w.set(p + "attention.head_count", gguf::Value(static_cast<uint32_t>(o.n_head)));
  w.set(p + "attention.head_count_kv", gguf::Value(static_cast<uint32_t>(o.n_head_kv)));
  w.set(p + "attention.layer_norm_rms_epsilon", gguf::Value(static_cast<float>(o.rms_eps)));
  w.set(p + "rope.freq_base", gguf::Value(static_cast<float>(o.rope_freq_base)));
  w.set(std::string(model::kFfnFormKey), gguf::Value(std::string(model::ffn_form_name(o.ffn_form))));
  w.set("thermocline.make_model.seed", gguf::Value(o.seed));
  text::write_vocab(vocab, w);
  if (o.sparse.enabled) {
    add_sparse_model(o, sparse_types, w, n_threads);
    w.write(o.output, progress);
    return;
  }

  const int64_t n_embd_kv = o.n_embd / o.n_head * o.n_head_kv;
  auto sd_for = [&](int64_t fan_in) {
    return o.weight_scale > 0.0f ? o.weight_scale : 1.0f / std::sqrt(static_cast<float>(fan_in));
  };
  uint64_t tensor_idx = 0;
  auto matrix = [&](const std::string& name, DType t, int64_t n_cols, int64_t n_rows, float sd) {
    add_random_tensor(w, name, t, {n_cols, n_rows}, 0.0f, sd, o.seed, tensor_idx++, n_threads);
  };
  auto norm = [&](const std::string& name) {
    add_random_tensor(w, name, DType::F32, {o.n_embd}, 1.0f, 0.1f, o.seed, tensor_idx++, n_threads);
  };

  // Embeddings are looked up, not multiplied: unit-scale rows.
  matrix("token_embd.weight", types.base, o.n_embd, o.n_vocab, o.weight_scale > 0.0f ? o.weight_scale : 1.0f);
  norm("output_norm.weight");
  if (!o.tied_embeddings) matrix("output.weight", types.heavy, o.n_embd, o.n_vocab, sd_for(o.n_embd));
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    norm(name("attn_norm"));
    matrix(name("attn_q"), types.base, o.n_embd, o.n_embd, sd_for(o.n_embd));
    matrix(name("attn_k"), types.base, o.n_embd, n_embd_kv, sd_for(o.n_embd));
    matrix(name("attn_v"), types.heavy, o.n_embd, n_embd_kv, sd_for(o.n_embd));
    matrix(name("attn_output"), types.base, o.n_embd, o.n_embd, sd_for(o.n_embd));
    norm(name("ffn_norm"));
    matrix(name("ffn_gate"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
    matrix(name("ffn_up"), types.base, o.n_embd, o.n_ff, sd_for(o.n_embd));
    matrix(name("ffn_down"), types.heavy, o.n_ff, o.n_embd, sd_for(o.n_ff));
  }
  w.write(o.output, progress);
}

}  // namespace tc::profiler
