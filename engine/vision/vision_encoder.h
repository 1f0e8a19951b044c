// VisionEncoder: an image into the language model's input embeddings with a
// VisionModel, on the CPU (its own thread pool, so that encoding an image
// runs beside the engine's steps instead of inside them). gemma3: fitted
// into image_size^2, cut into patch_size^2 patches, the SigLIP encoder
// (pre-norm layers, full attention between patches), the post-norm, a
// n_merge x n_merge average pool, RMSNorm and the projection.
// Not thread-safe: one image at a time per encoder.
#pragma once

#include <memory>
#include <vector>

#include "engine/vision/image_pixels.h"
#include "engine/vision/vision_model.h"
#include "kernels/backend.h"

namespace tc::vision {

class VisionEncoder {
 public:
  VisionEncoder(std::shared_ptr<const VisionModel> model, int n_threads);
  ~VisionEncoder();

  const VisionModel& model() const { return *model_; }

  // f32 [n_image_tokens, n_embd_text], in pooled-grid order (row by row).
  std::vector<float> encode(const RgbImage& image);
  // The same from the normalised pixels: f32 [image_size, image_size, 3].
  std::vector<float> encode_pixels(const std::vector<float>& pixels);

 private:
  std::shared_ptr<const VisionModel> model_;
  std::unique_ptr<kernels::Backend> cpu_;
};

}  // namespace tc::vision
