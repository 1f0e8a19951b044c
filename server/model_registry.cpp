// ModelRegistry: construction and start, name resolution, leases (requests
// waiting for a load), one-model publishing and shutdown. Loads, room
// making and unloads are in model_registry_loads.cpp, the folder scan in
// model_registry_folder.cpp, listings and metrics in model_registry_reports.cpp.
#include "server/model_registry.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/byte_size.h"
#include "engine/sparse/vram_budget.h"
#include "kernels/device_info.h"
#include "server/model_loader.h"
#include "server/model_registry_entry.h"
#include "server/process_memory.h"
#include "server/server_context.h"

namespace tc::server {

namespace fs = std::filesystem;

const char* model_state_name(ModelState s) {
  switch (s) {
    case ModelState::Unloaded: return "unloaded";
    case ModelState::Loading: return "loading";
    case ModelState::Loaded: return "loaded";
    case ModelState::Failed: return "failed";
  }
  return "unknown";
}

ModelLease::~ModelLease() {
  if (registry_) registry_->release(name_);
}

ModelRegistry::ModelRegistry(RegistryOptions options) : options_(std::move(options)) {
  if (!options_.load) options_.load = default_model_loader();
  if (!options_.probes.rss) options_.probes.rss = rss_bytes;
  if (!options_.probes.gpu_free) options_.probes.gpu_free = gpu_free_bytes;
  const auto& o = options_.serve;
  folder_mode_ = !o.models_dir.empty();
  default_keep_alive_ = !o.keep_alive.empty()   ? config::parse_keep_alive(o.keep_alive)
                        : folder_mode_          ? config::KeepAlive{false, std::chrono::minutes(5)}
                                                : config::KeepAlive::never_unload();
  ram_budget_ = !o.models_ram_budget.empty() ? config::parse_byte_size(o.models_ram_budget) : mem_total_bytes() / 10 * 9;
  if (!o.models_vram_budget.empty()) {
    vram_budget_ = config::parse_byte_size(o.models_vram_budget);
  } else if (o.device != "cpu") {
    const auto gpus = kernels::query_gpus();
    if (!gpus.devices.empty()) {
      const auto& d = gpus.devices.front();
      const uint64_t margin = sparse::vram_margin(d.total_bytes);
      vram_budget_ = d.free_bytes > margin ? d.free_bytes - margin : 0;
    }
  }
  if (!folder_mode_) {
    auto e = std::make_unique<Entry>();
    e->path = o.model;
    const ModelFiles files = model_files(o.model);
    e->name = !o.model_alias.empty() ? o.model_alias : files.name;
    e->options = o;
    e->state = ModelState::Loading;
    e->preloading = true;
    e->file_bytes = files.bytes;
    e->file_mtime_ns = mtime_ns(o.model);
    e->fingerprint = model_fingerprint(o.model, false);
    entries_[e->name] = std::move(e);
  }
}

ModelRegistry::~ModelRegistry() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    draining_ = true;
  }
  changed_.notify_all();
  if (housekeeper_.joinable()) housekeeper_.join();
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return active_loaders_ == 0; });
  }
  std::vector<std::shared_ptr<const ServingModel>> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, e] : entries_) {
      if (e->serving) all.push_back(std::move(e->serving));
    }
  }
  for (auto& s : all) s->engine->shutdown(std::chrono::milliseconds(0));
}

bool ModelRegistry::start() {
  if (folder_mode_) {
    std::error_code ec;
    if (!fs::is_directory(options_.serve.models_dir, ec)) {
      spdlog::warn("models_dir {} is not a folder (yet); no models until it is", options_.serve.models_dir.string());
    }
    scan_folder();
    {
      std::lock_guard lock(mutex_);
      std::string names;
      for (const auto& [name, e] : entries_) names += (names.empty() ? "" : ", ") + name;
      spdlog::info("models folder {}: {} model(s){}{}; loaded on demand, at most {} at once, keep_alive {}",
                   options_.serve.models_dir.string(), entries_.size(), names.empty() ? "" : ": ", names,
                   options_.serve.max_loaded_models, config::keep_alive_text(default_keep_alive_));
    }
    housekeeper_ = std::thread([this] { housekeeping(); });
    return true;
  }
  std::string name;
  {
    std::lock_guard lock(mutex_);
    name = entries_.begin()->first;
  }
  load_entry(name);
  bool ok = false;
  {
    std::lock_guard lock(mutex_);
    auto* e = find(name);
    if (e) {
      e->preloading = false;
      ok = e->state == ModelState::Loaded;
    }
  }
  housekeeper_ = std::thread([this] { housekeeping(); });
  return ok;
}

ModelRegistry::Entry* ModelRegistry::find(const std::string& name) {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.get();
}
const ModelRegistry::Entry* ModelRegistry::find(const std::string& name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : it->second.get();
}

config::KeepAlive ModelRegistry::effective_keep_alive(const Entry& e) const {
  if (e.request_keep_alive) return *e.request_keep_alive;
  if (auto k = e.sidecar_keep_alive()) return *k;
  return default_keep_alive_;
}

std::string ModelRegistry::resolve(const std::string& requested, std::optional<ApiError>& error) const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, e] : entries_) {
    if (!e->removed) names.push_back(name);
  }
  if (requested.empty()) {
    if (names.size() == 1) return names.front();
    if (!folder_mode_ && !entries_.empty()) return entries_.begin()->first;
    std::string listed;
    for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
    error = ApiError{400, "invalid_request_error",
                     names.empty() ? "no model to serve: the models folder holds no .gguf file"
                                   : "'model' is required: this server serves " + std::to_string(names.size()) +
                                         " models (" + listed + ")",
                     "", "model"};
    return {};
  }
  auto match = [&](const std::string& wanted) -> std::string {
    if (const Entry* e = find(wanted); e && !e->removed) return wanted;
    for (const auto& [name, e] : entries_) {
      if (e->removed) continue;
      for (const auto& a : e->aliases) {
        if (a == wanted) return name;
      }
    }
    return {};
  };
  std::string found = match(requested);
  if (found.empty() && requested.ends_with(":latest")) found = match(requested.substr(0, requested.size() - 7));
  if (!found.empty()) return found;
  if (!folder_mode_ && !entries_.empty()) {
    error = ApiError{404, "invalid_request_error",
                     "the model '" + requested + "' does not exist; this server serves '" + entries_.begin()->first + "'",
                     "model_not_found", "model"};
    return {};
  }
  std::string listed;
  for (const auto& n : names) listed += (listed.empty() ? "" : ", ") + n;
  error = ApiError{404, "invalid_request_error",
                   "the model '" + requested + "' does not exist; this server serves " +
                       (names.empty() ? std::string("none (the models folder holds no .gguf file)") : listed),
                   "model_not_found", "model"};
  return {};
}

std::shared_ptr<ModelLease> ModelRegistry::try_acquire_locked(const std::string& name,
                                                              const std::optional<config::KeepAlive>& keep_alive,
                                                              std::optional<ApiError>& error) {
  Entry* e = find(name);
  if (e == nullptr || e->removed) {
    error = ApiError{404, "invalid_request_error", "the model '" + name + "' is no longer served (its file was removed)",
                     "model_not_found", "model"};
    return nullptr;
  }
  if (draining_) {
    error = ApiError{503, "unavailable_error", "the server is shutting down", "", ""};
    return nullptr;
  }
  if (e->preloading) {
    error = ApiError{503, "unavailable_error", "the model is loading", "", ""};
    return nullptr;
  }
  switch (e->state) {
    case ModelState::Failed:
      error = ApiError{500, "server_error", "the model '" + name + "' failed to load: " + e->failure,
                       "model_load_failed", "model"};
      return nullptr;
    case ModelState::Loaded:
      if (e->giving_way) break;  // new requests wait: it unloads for a waiting model, then loads again
      ++e->in_flight;
      e->last_used = ++use_tick_;
      e->request_keep_alive = keep_alive;
      e->expires.reset();
      e->expires_wall.reset();
      e->unload_requested = false;
      return std::shared_ptr<ModelLease>(new ModelLease(this, name, e->serving));
    case ModelState::Unloaded:
      e->state = ModelState::Loading;
      e->request_keep_alive = keep_alive;
      e->room_ticket = e->wait_ticket != 0 ? e->wait_ticket : ++arrival_tick_;
      ++active_loaders_;
      std::thread([this, name] {
        load_entry(name);
        std::lock_guard lock(mutex_);
        --active_loaders_;
        changed_.notify_all();
      }).detach();
      break;
    case ModelState::Loading:
      break;
  }
  return nullptr;
}

std::shared_ptr<ModelLease> ModelRegistry::try_acquire(const std::string& name,
                                                       const std::optional<config::KeepAlive>& keep_alive,
                                                       std::optional<ApiError>& error) {
  std::lock_guard lock(mutex_);
  return try_acquire_locked(name, keep_alive, error);
}

std::shared_ptr<ModelLease> ModelRegistry::acquire(const std::string& name,
                                                   const std::optional<config::KeepAlive>& keep_alive,
                                                   std::optional<ApiError>& error, const std::function<bool()>& tick,
                                                   std::chrono::milliseconds interval) {
  std::unique_lock lock(mutex_);
  auto lease = try_acquire_locked(name, keep_alive, error);
  if (lease || error) return lease;
  // A waiter keeps the model from being unloaded between its load and its
  // lease; the oldest one's arrival is the model's place in line for room.
  auto start_waiting = [&] {
    if (Entry* e = find(name)) {
      ++e->waiters;
      if (e->wait_ticket == 0) e->wait_ticket = ++arrival_tick_;
    }
  };
  auto stop_waiting = [&] {
    if (Entry* e = find(name)) {
      --e->waiters;
      if (e->waiters == 0) e->wait_ticket = 0;
    }
  };
  start_waiting();
  const auto started = SteadyClock::now();
  const double limit_s = options_.serve.load_timeout_s;
  const auto deadline = limit_s > 0 ? started + std::chrono::duration_cast<SteadyClock::duration>(
                                                    std::chrono::duration<double>(limit_s))
                                    : SteadyClock::time_point::max();
  auto last_tick = started;
  for (;;) {
    auto slice = std::min(interval, std::chrono::milliseconds(kWaitSlice));
    if (deadline != SteadyClock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
      slice = std::clamp(left, std::chrono::milliseconds(1), slice);
    }
    changed_.wait_for(lock, slice);
    lease = try_acquire_locked(name, keep_alive, error);
    if (lease || error) {
      stop_waiting();
      return lease;
    }
    if (SteadyClock::now() >= deadline) {
      stop_waiting();
      if (Entry* e = find(name)) {
        ++e->load_timeouts;
        error = load_timeout_error(*e);
        spdlog::warn("model {}: a request gave up waiting: {}", name, error->message);
      }
      return nullptr;
    }
    if (SteadyClock::now() - last_tick >= interval) {
      last_tick = SteadyClock::now();
      lock.unlock();
      const bool go_on = !tick || tick();
      lock.lock();
      if (!go_on) {
        stop_waiting();
        return nullptr;
      }
    }
  }
}

ApiError ModelRegistry::load_timeout_error(const Entry& e) const {
  const std::string limit = fmt::format("{:g} s (load_timeout_s)", options_.serve.load_timeout_s);
  std::string what;
  if (e.state == ModelState::Loaded && e.giving_way) {
    what = "is giving way to another model and has not loaded again within " + limit;
  } else if (e.state == ModelState::Loading && e.waiting_for_room) {
    int busy = 0;
    for (const auto& [n, other] : entries_) {
      if (other.get() != &e && other->state == ModelState::Loaded && !other->idle()) ++busy;
    }
    what = fmt::format("is still waiting for room to load after {}: {} loaded model(s) busy", limit, busy);
  } else {
    what = "is still loading after " + limit;
  }
  return ApiError{503, "unavailable_error", "the model '" + e.name + "' " + what + "; try again later",
                  "model_load_timeout", "model"};
}

void ModelRegistry::release(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    Entry* e = find(name);
    if (e == nullptr) return;
    --e->in_flight;
    e->last_used = ++use_tick_;
    if (e->in_flight == 0) {
      const auto k = effective_keep_alive(*e);
      if (!k.forever) {
        e->expires = SteadyClock::now() + k.duration;
        e->expires_wall = std::chrono::system_clock::now() + k.duration;
      }
    }
  }
  changed_.notify_all();
}

bool ModelRegistry::request_unload(const std::string& name) {
  {
    std::lock_guard lock(mutex_);
    Entry* e = find(name);
    if (e == nullptr) return false;
    e->request_keep_alive = config::KeepAlive{false, std::chrono::milliseconds(0)};
    e->unload_requested = true;
  }
  changed_.notify_all();
  return true;
}

void ModelRegistry::publish(std::shared_ptr<const ServingModel> serving) {
  {
    std::lock_guard lock(mutex_);
    std::unique_ptr<Entry> e;
    if (!entries_.empty()) {
      e = std::move(entries_.begin()->second);
      entries_.clear();
    } else {
      e = std::make_unique<Entry>();
    }
    e->name = serving->model_id;
    e->serving = std::move(serving);
    e->state = ModelState::Loaded;
    e->preloading = false;
    e->failure.clear();
    e->last_used = ++use_tick_;
    entries_[e->name] = std::move(e);
  }
  changed_.notify_all();
}

void ModelRegistry::set_load_error(std::string message) {
  {
    std::lock_guard lock(mutex_);
    if (entries_.empty()) entries_[""] = std::make_unique<Entry>();
    Entry& e = *entries_.begin()->second;
    e.state = ModelState::Failed;
    e.failure = std::move(message);
    e.preloading = false;
  }
  changed_.notify_all();
}

void ModelRegistry::shutdown(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<const ServingModel>> all;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    for (auto& [name, e] : entries_) {
      if (e->serving) all.push_back(e->serving);
    }
  }
  changed_.notify_all();
  std::vector<std::thread> threads;
  for (auto& s : all) threads.emplace_back([s, grace] { s->engine->shutdown(grace); });
  for (auto& t : threads) t.join();
}

}  // namespace tc::server
