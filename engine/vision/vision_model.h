// VisionModel: a vision projector file (llama.cpp's mmproj GGUF: keys
// clip.*, tensors v.* and mm.*) opened and checked. Supported projector:
// gemma3 (Gemma 3's SigLIP encoder, a 4x4 average pool, a soft-embedding
// RMSNorm and one projection into the language model's embeddings).
// Immutable after load: one model serves every encoder.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "kernels/tensor.h"

namespace tc::vision {

struct VisionSpec {
  std::string projector;   // clip.projector_type: "gemma3"
  int image_size = 0;      // clip.vision.image_size: the square the image is fitted into (896)
  int patch_size = 0;      // clip.vision.patch_size (14)
  int n_embd = 0;          // clip.vision.embedding_length (1152)
  int n_ff = 0;            // clip.vision.feed_forward_length (4304)
  int n_layer = 0;         // clip.vision.block_count (27)
  int n_head = 0;          // clip.vision.attention.head_count (16)
  float eps = 1e-6f;       // clip.vision.attention.layer_norm_epsilon
  int n_merge = 4;         // clip.vision.projector.scale_factor: pooling kernel per side
  int n_embd_text = 0;     // the language model's n_embd (the projection's output)
  float image_mean[3] = {0.5f, 0.5f, 0.5f};
  float image_std[3] = {0.5f, 0.5f, 0.5f};

  int patches_per_side() const { return image_size / patch_size; }
  int n_patches() const { return patches_per_side() * patches_per_side(); }
  int head_dim() const { return n_embd / n_head; }
  // Embeddings an image becomes in the language model.
  int n_image_tokens() const { return (patches_per_side() / n_merge) * (patches_per_side() / n_merge); }
};

// One encoder layer. Matrices are views into the file (any weight dtype),
// rows of n_in values: q/k/v/out [n_embd, n_embd], up [n_ff, n_embd],
// down [n_embd, n_ff]. Vectors are f32 copies.
struct VisionLayer {
  kernels::Tensor q, k, v, out, up, down;
  std::vector<float> q_b, k_b, v_b, out_b, up_b, down_b;  // f32 [rows of the matrix]
  std::vector<float> ln1_w, ln1_b, ln2_w, ln2_b;          // f32 [n_embd]
};

class VisionModel {
 public:
  // Opens and checks an mmproj file; ModelLoadError naming the file and the
  // key or tensor at fault (an unsupported projector type names it and the
  // supported ones).
  static std::shared_ptr<const VisionModel> load(const std::filesystem::path& path);

  const VisionSpec& spec() const { return spec_; }

  // f32 [n_embd, 3 * patch * patch]: the patch convolution as a matrix, a
  // row per output channel, inputs in (channel, y, x) order.
  const std::vector<float>& patch_w() const { return patch_w_; }
  const std::vector<float>& patch_b() const { return patch_b_; }      // f32 [n_embd], zeros when absent
  const std::vector<float>& position() const { return position_; }    // f32 [n_patches, n_embd]
  const std::vector<VisionLayer>& layers() const { return layers_; }
  const std::vector<float>& post_ln_w() const { return post_ln_w_; }  // f32 [n_embd]
  const std::vector<float>& post_ln_b() const { return post_ln_b_; }  // f32 [n_embd]
  const std::vector<float>& soft_norm_w() const { return soft_norm_w_; }  // f32 [n_embd] (1 + w already)
  // f32 [n_embd_text, n_embd]: mm.input_projection transposed, so that a
  // row is one output of the projection.
  const kernels::Tensor& projection() const { return projection_view_; }

 private:
  explicit VisionModel(gguf::GgufFile file);
  void load_tensors();

  gguf::GgufFile file_;
  VisionSpec spec_;
  std::vector<float> patch_w_, patch_b_, position_, post_ln_w_, post_ln_b_, soft_norm_w_, projection_;
  kernels::Tensor projection_view_;
  std::vector<VisionLayer> layers_;
};

}  // namespace tc::vision
