// ImageEmbedder: encoding images with the model's projector, behind a small LRU cache.
#include "server/image_embedder.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <span>

namespace tc::server {

ImageEmbedder::ImageEmbedder(std::shared_ptr<const vision::VisionModel> model, int n_threads)
    : model_(model), encoder_(std::move(model), n_threads) {}

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

ImageEmbedder::Embedded ImageEmbedder::embed(const std::string& bytes) {
  const uint64_t hash = content_hash(bytes);
  std::lock_guard lock(mutex_);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->first != hash) continue;
    cache_.splice(cache_.begin(), cache_, it);
    return {hash, cache_.front().second};
  }
  const vision::RgbImage image = vision::decode_image(std::as_bytes(std::span(bytes.data(), bytes.size())));
  const auto start = std::chrono::steady_clock::now();
  auto rows = std::make_shared<const std::vector<float>>(encoder_.encode(image));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("vision: encoded a {}x{} image into {} embeddings in {:.2f} s", image.width, image.height,
               spec().n_image_tokens(), seconds);
  ++encoded_;
  cache_.emplace_front(hash, rows);
  if (cache_.size() > kCacheEntries) cache_.pop_back();
  return {hash, std::move(rows)};
}

}  // namespace tc::server
