// The stored responses (see response_store.h).
#include "server/response_store.h"

#include <utility>

namespace tc::server {

void ResponseStore::put(const std::string& id, Entry entry) {
  const size_t bytes = entry.conversation.dump().size() + entry.response.dump().size() + id.size();
  std::lock_guard lock(mutex_);
  if (auto it = slots_.find(id); it != slots_.end()) {
    bytes_ -= it->second.bytes;
    lru_.erase(it->second.lru);
    slots_.erase(it);
  }
  lru_.push_front(id);
  slots_[id] = Slot{std::move(entry), bytes, lru_.begin()};
  bytes_ += bytes;
  evict();
}

std::optional<ResponseStore::Entry> ResponseStore::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.entry;
}

std::optional<nlohmann::json> ResponseStore::conversation(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.entry.conversation;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(id);
  if (it == slots_.end()) return false;
  bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  slots_.erase(it);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return slots_.size();
}

void ResponseStore::evict() {
  // The newest stays even when it alone is over the byte bound.
  while (slots_.size() > 1 && (slots_.size() > kMaxEntries || bytes_ > kMaxBytes)) {
    auto it = slots_.find(lru_.back());
    bytes_ -= it->second.bytes;
    slots_.erase(it);
    lru_.pop_back();
  }
}

}  // namespace tc::server
