// Loading and checking a gemma3 vision projector (mmproj GGUF).
#include "engine/vision/vision_model.h"

#include <cstring>
#include <string_view>

#include "kernels/cpu/quantize.h"

namespace tc::vision {

namespace {

using kernels::DType;

// Every element of a tensor as f32 (any dtype dequantize_row reads).
std::vector<float> read_f32(const gguf::GgufFile& file, const gguf::TensorInfo& info) {
  std::vector<float> out(static_cast<size_t>(info.n_elements()));
  const auto data = file.tensor_data(info);
  const int64_t cols = info.ne.empty() ? 1 : info.ne[0];
  const int64_t rows = info.n_rows();
  const size_t row_bytes = static_cast<size_t>(kernels::row_bytes(info.dtype, cols));
  for (int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(info.dtype, data.data() + static_cast<size_t>(r) * row_bytes,
                            out.data() + static_cast<size_t>(r * cols), cols);
  }
  return out;
}

int positive_key(const gguf::GgufFile& file, std::string_view key) {
  const uint64_t v = file.get_u64(key);
  if (v == 0 || v > (1u << 20))
    throw gguf::ModelLoadError::for_key(file.path(), std::string(key), "must be in [1, 1048576]");
  return static_cast<int>(v);
}

}  // namespace

std::shared_ptr<const VisionModel> VisionModel::load(const std::filesystem::path& path) {
  std::shared_ptr<VisionModel> model(new VisionModel(gguf::GgufFile::open(path)));
  model->load_tensors();
  return model;
}

VisionModel::VisionModel(gguf::GgufFile file) : file_(std::move(file)) {
  const auto& f = file_;
  if (!f.get_bool("clip.has_vision_encoder", false)) {
    throw gguf::ModelLoadError::for_key(f.path(), "clip.has_vision_encoder",
                                        "is not true: this is not a vision projector (mmproj) file");
  }
  spec_.projector = f.get_string("clip.vision.projector_type", f.get_string("clip.projector_type", ""));
  if (spec_.projector != "gemma3") {
    throw gguf::ModelLoadError::for_key(
        f.path(), "clip.projector_type",
        "projector type '" + spec_.projector + "' is not supported; supported: gemma3 (Gemma 3)");
  }
  spec_.image_size = positive_key(f, "clip.vision.image_size");
  spec_.patch_size = positive_key(f, "clip.vision.patch_size");
  spec_.n_embd = positive_key(f, "clip.vision.embedding_length");
  spec_.n_ff = positive_key(f, "clip.vision.feed_forward_length");
  spec_.n_layer = positive_key(f, "clip.vision.block_count");
  spec_.n_head = positive_key(f, "clip.vision.attention.head_count");
  spec_.eps = static_cast<float>(f.get_f64("clip.vision.attention.layer_norm_epsilon", 1e-6));
  spec_.n_merge = static_cast<int>(f.get_u64("clip.vision.projector.scale_factor", 4));
  if (spec_.image_size % spec_.patch_size != 0) {
    throw gguf::ModelLoadError::for_key(f.path(), "clip.vision.image_size",
                                        "must be a multiple of clip.vision.patch_size");
  }
  if (spec_.n_merge <= 0 || spec_.patches_per_side() % spec_.n_merge != 0) {
    throw gguf::ModelLoadError::for_key(
        f.path(), "clip.vision.projector.scale_factor",
        "must divide the patches per side (" + std::to_string(spec_.patches_per_side()) + ")");
  }
  if (spec_.n_embd % spec_.n_head != 0) {
    throw gguf::ModelLoadError::for_key(f.path(), "clip.vision.attention.head_count",
                                        "must divide clip.vision.embedding_length");
  }
  for (const char* key : {"clip.vision.image_mean", "clip.vision.image_std"}) {
    if (!f.has(key)) continue;
    const auto values = f.get_f32_array(key);
    if (values.size() != 3) throw gguf::ModelLoadError::for_key(f.path(), key, "must hold 3 values (R, G, B)");
    float* dst = std::strcmp(key, "clip.vision.image_mean") == 0 ? spec_.image_mean : spec_.image_std;
    for (int c = 0; c < 3; ++c) dst[c] = values[static_cast<size_t>(c)];
  }
  for (const float s : spec_.image_std) {
    if (!(s > 0.0f)) throw gguf::ModelLoadError::for_key(f.path(), "clip.vision.image_std", "must be positive");
  }
}

void VisionModel::load_tensors() {
  const auto& f = file_;
  const int64_t e = spec_.n_embd;
  const int64_t p = spec_.patch_size;
  auto vec = [&](const std::string& name, int64_t n) { return read_f32(f, f.tensor(name, {n})); };
  auto matrix = [&](const std::string& name, int64_t n_in, int64_t n_out) {
    const auto& info = f.tensor(name, {n_in, n_out});
    if (!kernels::is_weight_dtype(info.dtype)) {
      throw gguf::ModelLoadError::for_tensor(
          f.path(), name, "dtype " + std::string(kernels::dtype_name(info.dtype)) + " is not a weight type");
    }
    return kernels::Tensor::matrix(f.tensor_data(info).data(), info.dtype, n_in, n_out);
  };
  patch_w_ = read_f32(f, f.tensor("v.patch_embd.weight", {p, p, 3, e}));
  patch_b_ =
      f.find_tensor("v.patch_embd.bias") ? vec("v.patch_embd.bias", e) : std::vector<float>(static_cast<size_t>(e));
  position_ = read_f32(f, f.tensor("v.position_embd.weight", {e, spec_.n_patches()}));
  for (int l = 0; l < spec_.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    VisionLayer layer;
    layer.q = matrix(b + "attn_q.weight", e, e);
    layer.k = matrix(b + "attn_k.weight", e, e);
    layer.v = matrix(b + "attn_v.weight", e, e);
    layer.out = matrix(b + "attn_out.weight", e, e);
    layer.up = matrix(b + "ffn_up.weight", e, spec_.n_ff);
    layer.down = matrix(b + "ffn_down.weight", spec_.n_ff, e);
    layer.q_b = vec(b + "attn_q.bias", e);
    layer.k_b = vec(b + "attn_k.bias", e);
    layer.v_b = vec(b + "attn_v.bias", e);
    layer.out_b = vec(b + "attn_out.bias", e);
    layer.up_b = vec(b + "ffn_up.bias", spec_.n_ff);
    layer.down_b = vec(b + "ffn_down.bias", e);
    layer.ln1_w = vec(b + "ln1.weight", e);
    layer.ln1_b = vec(b + "ln1.bias", e);
    layer.ln2_w = vec(b + "ln2.weight", e);
    layer.ln2_b = vec(b + "ln2.bias", e);
    layers_.push_back(std::move(layer));
  }
  post_ln_w_ = vec("v.post_ln.weight", e);
  post_ln_b_ = vec("v.post_ln.bias", e);
  soft_norm_w_ = vec("mm.soft_emb_norm.weight", e);
  const auto* proj = f.find_tensor("mm.input_projection.weight");
  if (proj == nullptr) throw gguf::ModelLoadError::for_tensor(f.path(), "mm.input_projection.weight", "is missing");
  if (proj->ne.size() != 2 || proj->ne[1] != e) {
    throw gguf::ModelLoadError::for_tensor(
        f.path(), "mm.input_projection.weight",
        "has shape " + proj->shape_string() + "; expected [n_embd_text, " + std::to_string(e) + "]");
  }
  spec_.n_embd_text = static_cast<int>(proj->ne[0]);
  const uint64_t projection_dim = f.get_u64("clip.vision.projection_dim", static_cast<uint64_t>(spec_.n_embd_text));
  if (projection_dim != static_cast<uint64_t>(spec_.n_embd_text)) {
    throw gguf::ModelLoadError::for_key(f.path(), "clip.vision.projection_dim",
                                        "is " + std::to_string(projection_dim) +
                                            " but mm.input_projection.weight projects to " +
                                            std::to_string(spec_.n_embd_text));
  }
  // The file's [n_embd rows of n_embd_text] becomes [n_embd_text rows of n_embd].
  const std::vector<float> stored = read_f32(f, *proj);
  const int64_t t = spec_.n_embd_text;
  projection_.resize(stored.size());
  for (int64_t i = 0; i < e; ++i) {
    for (int64_t j = 0; j < t; ++j)
      projection_[static_cast<size_t>(j * e + i)] = stored[static_cast<size_t>(i * t + j)];
  }
  projection_view_ = kernels::Tensor::matrix(projection_.data(), DType::F32, e, t);
}

}  // namespace tc::vision
