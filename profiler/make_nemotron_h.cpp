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

// Nemotron-H's pattern; every layer Mamba-2 in a mamba2 file.
Block block_of(const MakeModelOptions& o, int64_t layer) {
  if (o.arch == "mamba2") return Block::Mamba2;
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
  write_mamba2_keys(o, w);
  if (o.arch == "mamba2") {  // as its converter writes them: no attention, no FFN
    for (const char* key : {"attention.head_count", "attention.head_count_kv", "feed_forward_length"}) {
      w.set(p + key, gguf::Value(uint32_t{0}));
    }
  } else {
    std::vector<int32_t> ff, kv;
    for (int64_t l = 0; l < o.n_layer; ++l) {
      ff.push_back(block_of(o, l) == Block::Ffn ? static_cast<int32_t>(o.n_ff) : 0);
      kv.push_back(block_of(o, l) == Block::Attention ? static_cast<int32_t>(o.n_head_kv) : 0);
    }
    w.set(p + "feed_forward_length", gguf::Value::i32_array(ff));
    w.set(p + "attention.head_count_kv", gguf::Value::i32_array(kv));
    // llama.cpp's loader requires it (the multi-token prediction head's norm) beside the RMS one.
    w.set(p + "attention.layer_norm_epsilon", gguf::Value(static_cast<float>(o.rms_eps)));
  }
  if (o.n_expert > 0) {  // nemotron_h_moe: Nemotron Nano 3's routing, every FFN layer a mixture
    w.set(p + "leading_dense_block_count", gguf::Value(uint32_t{0}));
    w.set(p + "expert_feed_forward_length", gguf::Value(static_cast<uint32_t>(o.n_ff)));
    w.set(p + "expert_shared_count", gguf::Value(uint32_t{1}));
    w.set(p + "expert_shared_feed_forward_length", gguf::Value(static_cast<uint32_t>(2 * o.n_ff)));
    w.set(p + "expert_weights_norm", gguf::Value(true));
    w.set(p + "expert_weights_scale", gguf::Value(2.5f));
  }

  const LayerTensorWriter t(o, add);
  const int64_t head_dim = o.head_dim > 0 ? o.head_dim : o.n_embd / o.n_head;
  const int64_t n_q = o.n_head * head_dim, n_kv = o.n_head_kv * head_dim;
  for (int64_t l = 0; l < o.n_layer; ++l) {
    auto name = [l](std::string_view t) { return model::layer_tensor_name(l, t); };
    t.norm(name("attn_norm"), o.n_embd);  // every block's one norm
    switch (block_of(o, l)) {
      case Block::Mamba2:
        add_mamba2_tensors(o, l, base, heavy, add);
        break;
      case Block::Attention:
        t.attention(l, base, heavy, n_q, n_kv);
        break;
      case Block::Ffn:
        if (o.n_expert == 0) {
          t.matrix(name("ffn_up"), base, o.n_embd, o.n_ff);
          t.matrix(name("ffn_down"), heavy, o.n_ff, o.n_embd);
          break;
        }
        // The router (f32), its selection bias, ungated experts and a shared expert twice as wide.
        t.matrix(name("ffn_gate_inp"), DType::F32, o.n_embd, o.n_expert);
        add("blk." + std::to_string(l) + ".exp_probs_b.bias", DType::F32, {o.n_expert}, 0.0f, 0.1f);
        t.experts(name("ffn_up_exps"), base, o.n_embd, o.n_ff, o.n_expert);
        t.experts(name("ffn_down_exps"), heavy, o.n_ff, o.n_embd, o.n_expert);
        t.matrix(name("ffn_up_shexp"), base, o.n_embd, 2 * o.n_ff);
        t.matrix(name("ffn_down_shexp"), heavy, 2 * o.n_ff, o.n_embd);
        break;
    }
  }
}

}  // namespace tc::profiler
