// ImageEmbedder: a served model's vision projector (--mmproj) and the cache
// of the images it encoded lately. A chat that sends its history again each
// turn (as every chat frontend does) encodes each image once; the same
// bytes give the same embeddings and the same placeholder block, so the
// engine reuses the cached prompt prefix too. An image is known by its
// bytes, compared whole (a hash alone could be made to collide, and hand
// one client another's image), so different bytes never share a block.
// Thread-safe: one image is encoded at a time, beside the engine's steps.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/vision/vision_encoder.h"

namespace tc::server {

class ImageEmbedder {
 public:
  ImageEmbedder(std::shared_ptr<const vision::VisionModel> model, int n_threads);

  const vision::VisionSpec& spec() const { return encoder_.model().spec(); }

  struct Embedded {
    // The image's placeholder block (model::image_token_block): one per
    // distinct image while it is cached; a new one once it was evicted.
    uint64_t block = 0;
    std::shared_ptr<const std::vector<float>> rows;  // f32 [n_image_tokens, n_embd_text]
  };
  // Decodes and encodes an image (or takes it from the cache). Throws
  // vision::ImageError for bytes that are not a readable image.
  Embedded embed(const std::string& bytes);

  // FNV-1a over the bytes: where the cache looks first.
  static uint64_t content_hash(const std::string& bytes);

  int64_t encoded() const;          // images encoded (not taken from the cache) since the model loaded
  double encode_seconds() const;    // their encoding's wall time, decoding included

  // The cache's bounds: entries, and the encoded images' bytes kept for the comparison.
  static constexpr size_t kCacheEntries = 16;
  static constexpr size_t kCacheBytes = 64u << 20;

 private:
  struct Entry {
    uint64_t hash = 0;
    std::string bytes;
    Embedded embedded;
  };
  mutable std::mutex mutex_;
  vision::VisionEncoder encoder_;
  std::list<Entry> cache_;  // most recent first
  size_t cache_bytes_ = 0;
  uint64_t next_block_ = 0;
  int64_t encoded_ = 0;
  double encode_seconds_ = 0.0;
};

}  // namespace tc::server
