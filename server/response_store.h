// ResponseStore: the Responses API's stored responses (`store`, true by
// default as OpenAI has it), kept in memory so that a request may go on
// from one with `previous_response_id`, and GET / DELETE /v1/responses/ID
// find them. Each keeps the conversation up to and including its reply (as
// chat messages; `instructions` are not carried over, as OpenAI does not
// carry them) and the response object. Bounded: the least recently used go
// first past kMaxEntries responses or kMaxBytes of them. Lost when the
// server stops. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace tc::server {

class ResponseStore {
 public:
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  struct Entry {
    nlohmann::json conversation;  // chat messages, the reply last
    nlohmann::json response;      // the response object as answered
  };

  void put(const std::string& id, Entry entry);
  // The entry (now the most recently used), or nullopt.
  std::optional<Entry> get(const std::string& id);
  // Its conversation only (what previous_response_id continues).
  std::optional<nlohmann::json> conversation(const std::string& id);
  // False when there was none.
  bool erase(const std::string& id);
  size_t size() const;

 private:
  struct Slot {
    Entry entry;
    size_t bytes = 0;
    std::list<std::string>::iterator lru;  // its place in lru_
  };
  void evict();  // past the bounds: the least recently used go

  mutable std::mutex mutex_;
  std::list<std::string> lru_;  // most recently used first
  std::unordered_map<std::string, Slot> slots_;
  size_t bytes_ = 0;
};

}  // namespace tc::server
