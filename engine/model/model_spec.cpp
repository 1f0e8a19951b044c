// Reading ModelSpec from GGUF metadata and checking the tensors against it.
#include "engine/model/model_spec.h"

#include <array>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace tc::model {
namespace {

using gguf::GgufFile;
using kernels::DType;

// A positive integer hyperparameter `{arch}.<suffix>`.
int64_t positive_key(const GgufFile& file, const std::string& key) {
  const int64_t v = file.get_i64(key);
  if (v <= 0) throw file.error(key, "must be a positive integer, got " + std::to_string(v));
  return v;
}

int64_t positive_key(const GgufFile& file, const std::string& key, int64_t fallback) {
  if (!file.has(key)) return fallback;
  return positive_key(file, key);
}

void expect_weight(const GgufFile& file, const std::string& name, std::initializer_list<int64_t> ne) {
  const auto& info = file.tensor(name, ne);
  if (!is_weight_dtype(info.dtype)) {
    throw file.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                               ", expected a weight dtype (f32, f16, bf16 or a block format)");
  }
}

void expect_norm(const GgufFile& file, const std::string& name, int64_t n) {
  const auto& info = file.tensor(name, {n});
  if (info.dtype != DType::F32) {
    throw file.error(name, "has dtype " + std::string(kernels::dtype_name(info.dtype)) +
                               ", expected f32 for a norm weight");
  }
}

}  // namespace

std::string_view ffn_form_name(FfnForm form) {
  switch (form) {
    case FfnForm::SwiGLU: return "swiglu";
    case FfnForm::ReGLU: return "reglu";
    case FfnForm::DReLU: return "drelu";
  }
  return "?";
}

bool parse_ffn_form(std::string_view name, FfnForm& out) {
  for (FfnForm f : {FfnForm::SwiGLU, FfnForm::ReGLU, FfnForm::DReLU}) {
    if (name == ffn_form_name(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

std::string_view architecture_for(FfnForm form, bool powerinfer_layout) {
  return powerinfer_layout && form == FfnForm::DReLU ? kArchBamboo : kArchLlama;
}

std::string layer_tensor_name(int64_t layer, std::string_view tensor) {
  return "blk." + std::to_string(layer) + "." + std::string(tensor) + ".weight";
}

ModelSpec read_model_spec(const GgufFile& file) {
  ModelSpec s;
  s.arch = file.get_string("general.architecture");
  const bool bamboo = s.arch == kArchBamboo;
  if (s.arch != kArchLlama && !bamboo) {
    throw file.error("general.architecture", "is '" + gguf::printable(s.arch) +
                                                 "', expected 'llama' or 'bamboo' (the architectures supported)");
  }
  s.name = file.get_string("general.name", "");
  const std::string p = s.arch + ".";
  s.n_embd = positive_key(file, p + "embedding_length");
  s.n_layer = positive_key(file, p + "block_count");
  s.n_ff = positive_key(file, p + "feed_forward_length");
  s.n_head = positive_key(file, p + "attention.head_count");
  s.n_head_kv = positive_key(file, p + "attention.head_count_kv", s.n_head);
  s.n_ctx_train = positive_key(file, p + "context_length");
  if (s.n_embd % s.n_head != 0) {
    throw file.error(p + "attention.head_count", std::to_string(s.n_head) + " does not divide " +
                                                     p + "embedding_length " + std::to_string(s.n_embd));
  }
  if (s.n_head % s.n_head_kv != 0) {
    throw file.error(p + "attention.head_count_kv",
                     std::to_string(s.n_head_kv) + " does not divide head_count " + std::to_string(s.n_head));
  }
  s.head_dim = s.n_embd / s.n_head;
  s.n_rot = positive_key(file, p + "rope.dimension_count", s.head_dim);
  if (s.n_rot > s.head_dim || s.n_rot % 2 != 0) {
    throw file.error(p + "rope.dimension_count", "is " + std::to_string(s.n_rot) +
                                                     ", expected an even number <= head_dim " +
                                                     std::to_string(s.head_dim));
  }
  s.rope_freq_base = file.get_f64(p + "rope.freq_base", 10000.0);
  if (!(s.rope_freq_base > 0.0)) throw file.error(p + "rope.freq_base", "must be > 0");
  const std::string scaling_type = file.get_string(p + "rope.scaling.type", "none");
  if (scaling_type == "linear") {
    const double factor = file.get_f64(p + "rope.scaling.factor", 1.0);
    if (!(factor > 0.0)) throw file.error(p + "rope.scaling.factor", "must be > 0");
    s.rope_freq_scale = 1.0 / factor;
  } else if (scaling_type != "none") {
    throw file.error(p + "rope.scaling.type", "is '" + scaling_type + "', expected 'none' or 'linear'");
  }
  s.rms_eps = file.get_f64(p + "attention.layer_norm_rms_epsilon", 1e-5);
  if (!(s.rms_eps > 0.0 && s.rms_eps < 1.0)) {
    throw file.error(p + "attention.layer_norm_rms_epsilon", "must be in (0, 1)");
  }

  s.sparse_layout = file.magic() == gguf::Magic::PWRI;
  s.ffn_form = bamboo ? FfnForm::DReLU : s.sparse_layout ? FfnForm::ReGLU : FfnForm::SwiGLU;
  if (file.has(kFfnFormKey)) {
    const std::string form = file.get_string(kFfnFormKey);
    if (!parse_ffn_form(form, s.ffn_form)) {
      throw file.error(std::string(kFfnFormKey), "is '" + gguf::printable(form) + "', expected swiglu, reglu or drelu");
    }
    if (bamboo && s.ffn_form != FfnForm::DReLU) {
      throw file.error(std::string(kFfnFormKey),
                       "is '" + form + "', but architecture 'bamboo' is drelu (relu(gate) * relu(up))");
    }
  }

  const auto& embd = file.tensor("token_embd.weight");
  if (embd.ne.size() != 2 || embd.ne[0] != s.n_embd) {
    throw file.error("token_embd.weight", "has shape " + embd.shape_string() + ", expected [" +
                                              std::to_string(s.n_embd) + ", n_vocab]");
  }
  s.n_vocab = embd.ne[1];
  s.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  return s;
}

void validate_model_tensors(const GgufFile& file, const ModelSpec& s) {
  expect_weight(file, "token_embd.weight", {s.n_embd, s.n_vocab});
  expect_norm(file, "output_norm.weight", s.n_embd);
  if (!s.tied_embeddings) expect_weight(file, "output.weight", {s.n_embd, s.n_vocab});
  for (int64_t l = 0; l < s.n_layer; ++l) {
    auto name = [l](std::string_view t) { return layer_tensor_name(l, t); };
    expect_norm(file, name("attn_norm"), s.n_embd);
    expect_weight(file, name("attn_q"), {s.n_embd, s.n_embd});
    expect_weight(file, name("attn_k"), {s.n_embd, s.n_embd_kv()});
    expect_weight(file, name("attn_v"), {s.n_embd, s.n_embd_kv()});
    expect_weight(file, name("attn_output"), {s.n_embd, s.n_embd});
    expect_norm(file, name("ffn_norm"), s.n_embd);
    expect_weight(file, name("ffn_gate"), {s.n_embd, s.n_ff});
    expect_weight(file, name("ffn_up"), {s.n_embd, s.n_ff});
    if (s.sparse_layout) {
      expect_weight(file, name("ffn_down_t"), {s.n_embd, s.n_ff});
    } else {
      expect_weight(file, name("ffn_down"), {s.n_ff, s.n_embd});
    }
  }
}

}  // namespace tc::model
