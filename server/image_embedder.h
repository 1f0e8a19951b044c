// ImageEmbedder: a served model's vision projector (--mmproj) and the cache
// of the images it encoded lately. A chat that sends its history again each
// turn (as every chat frontend does) encodes each image once; the same
// bytes give the same embeddings and the same placeholder ids, so the
// engine reuses the cached prompt prefix too. Thread-safe: one image is
// encoded at a time, beside the engine's steps.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/vision/vision_encoder.h"

namespace tc::server {

class ImageEmbedder {
 public:
  ImageEmbedder(std::shared_ptr<const vision::VisionModel> model, int n_threads);

  const vision::VisionSpec& spec() const { return model_->spec(); }
  const vision::VisionModel& model() const { return *model_; }

  struct Embedded {
    uint64_t hash = 0;                               // content_hash of the encoded bytes
    std::shared_ptr<const std::vector<float>> rows;  // f32 [n_image_tokens, n_embd_text]
  };
  // Decodes and encodes an image (or takes it from the cache). Throws
  // vision::ImageError for bytes that are not a readable image.
  Embedded embed(const std::string& bytes);

  // FNV-1a over the bytes.
  static uint64_t content_hash(const std::string& bytes);

  int64_t encoded() const;  // images encoded (not taken from the cache) since start

 private:
  static constexpr size_t kCacheEntries = 16;
  std::shared_ptr<const vision::VisionModel> model_;
  mutable std::mutex mutex_;
  vision::VisionEncoder encoder_;
  std::list<std::pair<uint64_t, std::shared_ptr<const std::vector<float>>>> cache_;  // most recent first
  int64_t encoded_ = 0;
};

}  // namespace tc::server
