// Writing a Nemotron-H file (llama.cpp's nemotron_h keys and tensor names).
#include "profiler/make_nemotron_h.h"

#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model_spec.h"
#include "profiler/layer_tensor_writer.h"
#include "profiler/make_granite_hybrid.h"

namespace tc::profiler {
namespace {

using kernels::DType;

enum class Block { Mamba2, Ffn, Attention };

Block block_of(int64_t layer) {
  switch (layer % 4) {
    case 1: return Block::Ffn;
    case 3: return Block::Attention;
    default: return Block::Mamba2;
  }
}

}  // namespace

void write_nemotron_h_model(const MakeModelOptions& o, DType base, DType heavy, gguf::GgufWriter& w,
                            const RandomTensorAdder& add) {
  const std::string p = o.arch + ".";
  std::vector<int32_t> ff, kv;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    ff.push_back(block_of(l) == Block::Ffn ? static_cast<int32_t>(o.n_ff) : 0);
    kv.push_back(block_of(l) == Block::Attention ? static_cast<int32_t>(o.n_head_kv) : 0);
  }
  w.set(p + "feed_forward_length", gguf::Value::i32_array(ff));
  w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv));
  write_mamba2_keys(o, w);
  // llama.cpp's loader requires it (the multi-token prediction head's norm) beside the RMS one.
  w.set(p + "attention.layer_norm_epsilon", gguf::Value(static_cast<float>(o.rms_eps)));

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    t.norm(name("attn_norm"), o.n_embd);  // every block's one norm
    switch (block_of(l)) {
      case Block::Mamba2:
        add_mamba2_tensors(o, l, base, heavy, add);
        break;
      case Block::Attention:
        t.attention(l, base, heavy, n_q, n_kv);
        break;
      case Block::Ffn:
        t.matrix(name("ffn_up"), base, o.n_embd, o.n_ff);
        t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
        break;
    }
  }
}

}  // namespace tc::profiler
