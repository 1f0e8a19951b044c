// ImageEmbedder: encoding images with the model's projector, behind a small LRU cache.
#include "server/image_embedder.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <span>

namespace tc::server {

ImageEmbedder::ImageEmbedder(std::shared_ptr<const vision::VisionModel> model, int n_threads)
    : encoder_(std::move(model), n_threads) {}

uint64_t ImageEmbedder::content_hash(const std::string& bytes) {
  uint64_t h = 14695981039346656037ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

int64_t ImageEmbedder::encoded() const {
  std::lock_guard lock(mutex_);
  return encoded_;
}

double ImageEmbedder::encode_seconds() const {
  std::lock_guard lock(mutex_);
  return encode_seconds_;
}

ImageEmbedder::Embedded ImageEmbedder::embed(const std::string& bytes) {
  const uint64_t hash = content_hash(bytes);
  std::lock_guard lock(mutex_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->hash != hash || it->bytes != bytes) continue;
    cache_.splice(cache_.begin(), cache_, it);
    return cache_.front().embedded;
  }
  const auto start = std::chrono::steady_clock::now();
  const vision::RgbImage image = vision::decode_image(std::as_bytes(std::span(bytes.data(), bytes.size())));
  Embedded embedded{next_block_++, std::make_shared<const std::vector<float>>(encoder_.encode(image))};
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("vision: encoded a {}x{} image into {} embeddings in {:.2f} s", image.width, image.height,
               spec().n_image_tokens(), seconds);
  ++encoded_;
  encode_seconds_ += seconds;
  cache_.push_front({hash, bytes, embedded});
  cache_bytes_ += bytes.size();
  // The newest entry stays even alone over the byte bound: it is in use.
  while (cache_.size() > 1 && (cache_.size() > kCacheEntries || cache_bytes_ > kCacheBytes)) {
    cache_bytes_ -= cache_.back().bytes.size();
    cache_.pop_back();
  }
  return embedded;
}

}  // namespace tc::server
