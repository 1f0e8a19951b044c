// The registry's record of one model, and what the model_registry*.cpp
// files share; internal to them (model_registry.h is the interface). Every
// field is guarded by ModelRegistry::mutex_.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/keep_alive.h"
#include "config/serve_options.h"
#include "engine/runtime/engine.h"
#include "server/model_registry.h"

namespace tc::server {

using SteadyClock = std::chrono::steady_clock;

// The longest a waiting thread sleeps before looking again (loads waiting
// for room, requests waiting for a load, housekeeping).
inline constexpr auto kWaitSlice = std::chrono::milliseconds(200);

// A file's modification time in nanoseconds since the file clock's epoch; 0 if unreadable.
int64_t mtime_ns(const std::filesystem::path& p);

// A model's files: the file, or every shard of a split model named by its
// first shard (gguf_split.h; missing ones too, so that the load names
// them), with their bytes together and a fingerprint of each one's size and
// mtime (-1 for a missing one). No files for a split model's later shard.
struct ModelFiles {
  std::vector<std::filesystem::path> files;
  uint64_t bytes = 0;
  std::string fingerprint;
  std::string name;  // the model's name: the file's stem, a split model's without "-00001-of-0000N"
  // Beside the file, that name without an extension: its sidecars are
  // base + ".toml" and base + ".stats.gguf".
  std::filesystem::path base;
};
ModelFiles model_files(const std::filesystem::path& p);
// What tells that a model's files changed: model_files' fingerprint and, in
// a models folder (`in_folder`), the mtimes of its NAME.toml,
// NAME.stats.gguf and .generated.gpuidx sidecars.
std::string model_fingerprint(const std::filesystem::path& p, bool in_folder);

struct ModelRegistry::Entry {
  std::string name;
  std::vector<std::string> aliases;
  std::filesystem::path path;       // empty: a published model without a file
  config::ServeOptions options;     // server-wide + NAME.toml + sidecar files
  std::string config_error;         // NAME.toml's problem: loading fails with it
  std::string fingerprint;          // file size and mtimes of the model and its sidecars
  uint64_t file_bytes = 0;
  int64_t file_mtime_ns = 0;

  ModelState state = ModelState::Unloaded;
  std::string failure;
  bool preloading = false;          // one-model mode before start() finished
  bool reserved = false;            // a load that made room: counts against the limits
  bool removed = false;             // the file left the folder
  bool stale = false;               // the file changed while loaded: unload when idle
  bool unload_requested = false;
  bool giving_way = false;          // loaded, busy, asked to make room for a waiting load: new requests wait
  bool waiting_for_room = false;    // a load in make_room
  uint64_t room_ticket = 0;         // that load's place in line (arrival_tick_ of its first request)
  uint64_t wait_ticket = 0;         // arrival_tick_ of the oldest request waiting for this model; 0: none
  std::shared_ptr<const ServingModel> serving;
  int in_flight = 0;
  int waiters = 0;
  uint64_t last_used = 0;
  std::optional<config::KeepAlive> request_keep_alive;  // the last request's
  std::optional<SteadyClock::time_point> expires;
  std::optional<std::chrono::system_clock::time_point> expires_wall;
  uint64_t host_bytes = 0, gpu_bytes = 0;
  uint64_t predicted_host = 0, predicted_gpu = 0;

  uint64_t loads = 0, load_failures = 0;
  uint64_t load_timeouts = 0;               // requests that waited load_timeout_s in vain
  std::map<std::string, uint64_t> unloads;  // by reason
  double last_load_seconds = 0;
  runtime::EngineStats retired;             // counters of engines already unloaded

  std::string facts_fingerprint;            // cached facts of this file version
  std::shared_ptr<const ModelFacts> facts;

  bool idle() const { return in_flight == 0 && waiters == 0; }
  std::optional<config::KeepAlive> sidecar_keep_alive() const {
    if (options.keep_alive.empty()) return std::nullopt;
    return config::parse_keep_alive(options.keep_alive);  // validated when read
  }
};

}  // namespace tc::server
