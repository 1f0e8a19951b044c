// make_mmproj: a vision projector (mmproj GGUF, llama.cpp's clip.* keys and
// v.* / mm.* tensors) of random weights in a chosen shape, for tests and
// benchmarks of images without downloading a real projector. gemma3 only.
#pragma once

#include <cstdint>
#include <filesystem>

#include "kernels/dtype.h"

namespace tc::profiler {

struct MakeMmprojOptions {
  int64_t n_embd_text = 0;   // the language model's n_embd (the projection's output); required
  int64_t image_size = 896;  // Gemma 3's: 896 = 64 patches of 14 per side, pooled 4x4 into 256 tokens
  int64_t patch_size = 14;
  int64_t n_embd = 1152;
  int64_t n_ff = 4304;
  int64_t n_layer = 27;
  int64_t n_head = 16;
  int64_t n_merge = 4;       // written as clip.vision.projector.scale_factor
  kernels::DType type = kernels::DType::F16;  // the layers' matrices; vectors are f32
  uint64_t seed = 1;
};

// Writes the projector; std::invalid_argument for inconsistent dimensions.
void make_mmproj(const std::filesystem::path& path, const MakeMmprojOptions& options);

}  // namespace tc::profiler
