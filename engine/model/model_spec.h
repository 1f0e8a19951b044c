// ModelSpec: the hyperparameters of a model, read from GGUF metadata (the
// keys llama.cpp writes for architecture `llama`, or PowerInfer for its
// `bamboo`), and the check that the file holds every tensor the spec needs
// with the right dtype and shape. Plain data, immutable after load.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tc::gguf {
class GgufFile;
}

namespace tc::model {

// How an FFN neuron's activation is formed from its gate and up rows.
enum class FfnForm {
  SwiGLU,  // silu(gate) * up          (LLaMA, Mistral)
  ReGLU,   // relu(gate) * up          (ReluLLaMA, ProSparse)
  DReLU,   // relu(gate) * relu(up)    (Bamboo / TurboSparse)
};
std::string_view ffn_form_name(FfnForm form);     // "swiglu", "reglu", "drelu"
bool parse_ffn_form(std::string_view name, FfnForm& out);

// Metadata key (ours) that names the FFN form; llama.cpp has none. Absent:
// SwiGLU for `GGUF` files, ReGLU for PowerInfer `PWRI` files, DReLU for
// architecture `bamboo` (which allows no other form).
inline constexpr std::string_view kFfnFormKey = "thermocline.ffn_form";

// The architectures read (`general.architecture`; hyperparameters under
// "{arch}."): llama.cpp's `llama` (LLaMA-family, ReluLLaMA and ProSparse
// PowerInfer files), and PowerInfer's `bamboo` (Bamboo-7B): the same
// tensors and graph as llama with relu(gate) * relu(up), in dense and
// sparse runs alike.
inline constexpr std::string_view kArchLlama = "llama";
inline constexpr std::string_view kArchBamboo = "bamboo";

// The architecture a model of this FFN form is written under: `bamboo` for
// a dReLU model in PowerInfer's layout (PowerInfer computes relu(gate) *
// relu(up) for bamboo only, and relu(gate) * up for llama), else `llama`.
std::string_view architecture_for(FfnForm form, bool powerinfer_layout);

struct ModelSpec {
  std::string arch;          // `general.architecture`
  std::string name;          // `general.name` (may be empty)
  int64_t n_vocab = 0;       // rows of token_embd
  int64_t n_embd = 0;        // {arch}.embedding_length
  int64_t n_layer = 0;       // {arch}.block_count
  int64_t n_ff = 0;          // {arch}.feed_forward_length
  int64_t n_head = 0;        // {arch}.attention.head_count
  int64_t n_head_kv = 0;     // {arch}.attention.head_count_kv (default n_head)
  int64_t head_dim = 0;      // n_embd / n_head
  int64_t n_rot = 0;         // {arch}.rope.dimension_count (default head_dim)
  int64_t n_ctx_train = 0;   // {arch}.context_length
  double rope_freq_base = 10000.0;   // {arch}.rope.freq_base
  double rope_freq_scale = 1.0;      // 1 / {arch}.rope.scaling.factor when type is linear
  double rms_eps = 1e-5;             // {arch}.attention.layer_norm_rms_epsilon
  FfnForm ffn_form = FfnForm::SwiGLU;
  bool tied_embeddings = false;      // no output.weight: the head reuses token_embd
  bool sparse_layout = false;        // PWRI: ffn_down_t (neuron-major) instead of ffn_down

  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
  int64_t n_gqa() const { return n_head / n_head_kv; }
};

// Reads and validates the spec. Throws ModelLoadError naming the key when a
// required key is missing, has the wrong type, or is inconsistent (n_embd
// not divisible by n_head, n_head not a multiple of n_head_kv, ...).
ModelSpec read_model_spec(const gguf::GgufFile& file);

// Checks that every tensor the spec needs is present with the expected shape
// and a supported weight dtype (norms f32). Throws ModelLoadError naming the
// first tensor at fault and the expected shape.
void validate_model_tensors(const gguf::GgufFile& file, const ModelSpec& spec);

// Names of the per-layer tensors, as llama.cpp spells them.
std::string layer_tensor_name(int64_t layer, std::string_view tensor);  // "blk.3.attn_q.weight"

}  // namespace tc::model
