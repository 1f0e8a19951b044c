// ModelRegistry: entries, leases, loads within the budgets, LRU eviction,
// keep_alive and the folder rescans (see model_registry.h).
#include "server/model_registry.h"

#include <fmt/format.h>
#include <malloc.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "config/byte_size.h"
#include "config/serve_config.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/vram_budget.h"
#include "kernels/device_info.h"
#include "server/model_loader.h"
#include "server/server_context.h"

namespace tc::server {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr auto kWaitSlice = std::chrono::milliseconds(200);

// Physical memory (MemTotal), 0 if unknown.
uint64_t mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return 0;
}

// This process's resident set (/proc/self/statm), bytes; 0 if unknown.
uint64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages_total = 0, pages_resident = 0;
  if (!(in >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Free bytes of GPU `index`, nullopt without one.
std::optional<uint64_t> gpu_free_bytes(int index) {
  const auto gpus = kernels::query_gpus();
  for (const auto& d : gpus.devices) {
    if (d.index == index) return d.free_bytes;
  }
  return std::nullopt;
}

int64_t mtime_ns(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

int64_t to_unix_seconds(int64_t file_ns) {
  // file_clock and system_clock differ by a fixed offset in libstdc++.
  const auto file_tp = fs::file_time_type(std::chrono::duration_cast<fs::file_time_type::duration>(std::chrono::nanoseconds(file_ns)));
  const auto sys = std::chrono::file_clock::to_sys(file_tp);
  return std::chrono::duration_cast<std::chrono::seconds>(sys.time_since_epoch()).count();
}

std::string hex_digest(const std::string& text) {
  std::string out;
  for (uint64_t seed : {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x9e3779b97f4a7c15ull, 0x1f83d9abfb41bd6bull}) {
    uint64_t h = seed;
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ull;
    }
    out += fmt::format("{:016x}", h);
  }
  return out;
}

bool is_model_file(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name.empty() || name.front() == '.') return false;
  if (p.extension() != ".gguf") return false;
  // `thermocline profile` writes NAME.stats.gguf beside the model: a sidecar, not a model.
  return !name.ends_with(".stats.gguf");
}

nlohmann::json value_json(const gguf::Value& v) {
  if (const auto* s = v.as_string()) return *s;
  if (const auto* b = v.as_bool()) return *b;
  if (const auto* a = v.as_array()) return nlohmann::json{{"array_length", a->size()}};
  int64_t i = 0;
  if (v.is_integer() && v.to_i64(i)) return i;
  uint64_t u = 0;
  if (v.is_integer() && v.to_u64(u)) return u;
  double d = 0;
  if (v.to_f64(d)) return d;
  return nullptr;
}

}  // namespace

const char* model_state_name(ModelState s) {
  switch (s) {
    case ModelState::Unloaded: return "unloaded";
    case ModelState::Loading: return "loading";
    case ModelState::Loaded: return "loaded";
    case ModelState::Failed: return "failed";
  }
  return "unknown";
}

struct ModelRegistry::Entry {
  std::string name;
  std::vector<std::string> aliases;
  fs::path path;                    // empty: a published model without a file
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

ModelLease::~ModelLease() {
  if (registry_) registry_->release(name_);
}

ModelRegistry::ModelRegistry(RegistryOptions options) : options_(std::move(options)) {
  if (!options_.load) options_.load = load_serving_model;
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
    e->name = !o.model_alias.empty() ? o.model_alias : o.model.stem().string();
    e->options = o;
    e->state = ModelState::Loading;
    e->preloading = true;
    std::error_code ec;
    e->file_bytes = o.model.empty() ? 0 : static_cast<uint64_t>(fs::file_size(o.model, ec));
    e->file_mtime_ns = mtime_ns(o.model);
    e->fingerprint = std::to_string(e->file_bytes) + ":" + std::to_string(e->file_mtime_ns);
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
  // A waiter keeps the model from being unloaded between its load and this lease.
  auto adjust_waiters = [&](int delta) {
    if (Entry* e = find(name)) e->waiters += delta;
  };
  adjust_waiters(+1);
  auto last_tick = SteadyClock::now();
  for (;;) {
    changed_.wait_for(lock, std::min(interval, std::chrono::milliseconds(kWaitSlice)));
    adjust_waiters(-1);
    lease = try_acquire_locked(name, keep_alive, error);
    if (lease || error) return lease;
    adjust_waiters(+1);
    if (SteadyClock::now() - last_tick >= interval) {
      last_tick = SteadyClock::now();
      lock.unlock();
      const bool go_on = !tick || tick();
      lock.lock();
      if (!go_on) {
        adjust_waiters(-1);
        return nullptr;
      }
    }
  }
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

bool ModelRegistry::make_room(std::unique_lock<std::mutex>& lock, Entry& entry, std::string& why) {
  const auto& o = options_.serve;
  const std::string name = entry.name;
  for (;;) {
    if (draining_) {
      why = "the server is shutting down";
      return false;
    }
    Entry* self = find(name);
    if (self == nullptr) {
      why = "the model was removed";
      return false;
    }
    int n_other = 0;
    uint64_t host_used = 0, gpu_used = 0;
    bool others_can_free = false;
    Entry* victim = nullptr;
    for (auto& [n, e] : entries_) {
      if (e.get() == self) continue;
      if (e->state == ModelState::Loaded || (e->state == ModelState::Loading && e->reserved)) {
        ++n_other;
        host_used += e->state == ModelState::Loaded ? e->host_bytes : e->predicted_host;
        gpu_used += e->state == ModelState::Loaded ? e->gpu_bytes : e->predicted_gpu;
        others_can_free = true;
        if (e->state == ModelState::Loaded && e->idle() && (victim == nullptr || e->last_used < victim->last_used)) {
          victim = e.get();
        }
      }
    }
    const bool count_ok = n_other < o.max_loaded_models;
    const bool ram_ok = ram_budget_ == 0 || host_used + self->predicted_host <= ram_budget_;
    const bool vram_ok = vram_budget_ == 0 || gpu_used + self->predicted_gpu <= vram_budget_;
    if (count_ok && ram_ok && vram_ok) {
      self->reserved = true;
      return true;
    }
    if (!others_can_free) {
      why = !ram_ok ? "needs about " + sparse::describe_bytes(self->predicted_host) +
                          " of host memory (mapped file + KV cache), more than models_ram_budget " +
                          sparse::describe_bytes(ram_budget_)
                    : "needs about " + sparse::describe_bytes(self->predicted_gpu) +
                          " of GPU memory, more than models_vram_budget " + sparse::describe_bytes(vram_budget_);
      return false;
    }
    if (victim != nullptr) {
      spdlog::info("model {}: unloading {} (least recently used, idle) to make room ({} loaded, host {} of {})", name,
                   victim->name, n_other, sparse::human_bytes(host_used), ram_budget_ ? sparse::human_bytes(ram_budget_) : "unlimited");
      auto s = take_unload(*victim, "evicted");
      lock.unlock();
      finish_unload(std::move(s));
      lock.lock();
      continue;
    }
    // Every other model is busy: wait for one to go idle.
    changed_.wait_for(lock, kWaitSlice);
  }
}

std::shared_ptr<const ServingModel> ModelRegistry::take_unload(Entry& e, const char* reason) {
  auto s = std::move(e.serving);
  e.serving.reset();
  if (s) {
    const auto stats = s->engine->stats();
    e.retired.prompt_tokens_total += stats.prompt_tokens_total;
    e.retired.cached_tokens_total += stats.cached_tokens_total;
    e.retired.generated_tokens_total += stats.generated_tokens_total;
    e.retired.steps_total += stats.steps_total;
  }
  e.state = ModelState::Unloaded;
  e.host_bytes = 0;
  e.gpu_bytes = 0;
  e.expires.reset();
  e.expires_wall.reset();
  e.unload_requested = false;
  e.stale = false;
  ++e.unloads[reason];
  spdlog::info("model {}: unloaded ({})", e.name, reason);
  changed_.notify_all();
  return s;
}

void ModelRegistry::finish_unload(std::shared_ptr<const ServingModel> serving) {
  if (!serving) return;
  std::lock_guard load(load_mutex_);
  serving->engine->shutdown(std::chrono::milliseconds(0));
  serving.reset();  // the last reference: engine thread joined, buffers and the mapping freed
  // Hand freed heap pages back to the system so RSS follows the models loaded.
  malloc_trim(0);
}

void ModelRegistry::load_entry(std::string name) {
  fs::path path;
  config::ServeOptions opts;
  std::string config_error;
  {
    std::lock_guard lock(mutex_);
    Entry* e = find(name);
    if (e == nullptr) return;
    path = e->path;
    opts = e->options;
    config_error = e->config_error;
  }
  // What the load will take, before it runs: the mapped file and a KV cache
  // of the model's shape; GPU bytes as measured last time.
  uint64_t predicted_host = 0;
  try {
    const auto file = gguf::GgufFile::open(path);
    const auto spec = model::read_model_spec(file);
    const int64_t n_ctx = std::min<int64_t>(opts.ctx_size, spec.n_ctx_train > 0 ? spec.n_ctx_train : opts.ctx_size);
    const uint64_t kv = static_cast<uint64_t>(opts.parallel) * static_cast<uint64_t>(spec.n_layer) * 2 *
                        static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(spec.n_head_kv * spec.head_dim) * 2;
    predicted_host = file.file_size() + (opts.device == "cpu" ? kv : 0);
  } catch (const std::exception&) {
    // Unreadable: the load says why.
  }
  const auto t0 = SteadyClock::now();
  std::shared_ptr<ServingModel> loaded;
  std::string failure = config_error;
  bool made_room = false;
  bool counted_failure = true;
  if (failure.empty()) {
    std::unique_lock lock(mutex_);
    Entry* e = find(name);
    if (e == nullptr) return;
    e->predicted_host = predicted_host;
    e->predicted_gpu = opts.device == "cpu" ? 0 : e->predicted_gpu;
    made_room = e->preloading || make_room(lock, *e, failure);
    if (!made_room && draining_) counted_failure = false;
    // Placement solved at load shares what the other models leave of the VRAM budget.
    if (made_room && vram_budget_ > 0 && opts.device != "cpu" && opts.placement == "auto" && opts.vram_budget.empty()) {
      uint64_t used = 0;
      for (auto& [n, other] : entries_) {
        if (other.get() != e && other->state == ModelState::Loaded) used += other->gpu_bytes;
      }
      opts.vram_budget = std::to_string(vram_budget_ > used ? vram_budget_ - used : 0);
    }
  }
  uint64_t gpu_bytes = 0, rss_growth = 0;
  if (failure.empty()) {
    std::lock_guard load(load_mutex_);
    const int gpu_index = opts.device == "cpu" ? -1 : (opts.device.size() > 5 ? std::atoi(opts.device.c_str() + 5) : 0);
    // GPU free bytes before and after the load (0: no GPU measured).
    const uint64_t before = gpu_index >= 0 ? gpu_free_bytes(gpu_index).value_or(0) : 0;
    const uint64_t rss_before = rss_bytes();
    try {
      spdlog::info("model {}: loading {}", name, path.string());
      loaded = options_.load(path, opts, name);
    } catch (const std::exception& ex) {
      failure = ex.what();
    }
    // Host bytes as measured: the resident set's growth over the load (loads
    // are serialised; requests of other models running meanwhile add noise).
    const uint64_t rss_after = rss_bytes();
    rss_growth = rss_after > rss_before ? rss_after - rss_before : 0;
    if (before > 0) {
      const uint64_t after = gpu_free_bytes(gpu_index).value_or(before);
      if (before > after) gpu_bytes = before - after;
    }
  }
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  {
    std::lock_guard lock(mutex_);
    Entry* e = find(name);
    if (e == nullptr) return;
    e->reserved = false;
    if (loaded) {
      e->serving = loaded;
      e->state = ModelState::Loaded;
      const auto stats = loaded->engine->stats();
      // At least the mapped file and the host KV cache; more when the
      // resident set grew more (the backend's own buffers, scratch).
      e->host_bytes = std::max<uint64_t>(
          loaded->model ? loaded->model->file.file_size() + stats.kv_cache_host_bytes : predicted_host, rss_growth);
      e->predicted_host = e->host_bytes;
      e->gpu_bytes = gpu_bytes;
      e->predicted_gpu = gpu_bytes;
      e->last_load_seconds = seconds;
      ++e->loads;
      e->last_used = ++use_tick_;
      if (e->idle()) {
        const auto k = effective_keep_alive(*e);
        if (!k.forever) {
          e->expires = SteadyClock::now() + k.duration;
          e->expires_wall = std::chrono::system_clock::now() + k.duration;
        }
      }
      spdlog::info("model {}: loaded in {:.2f} s (host {}, gpu {})", name, seconds, sparse::human_bytes(e->host_bytes),
                   sparse::human_bytes(e->gpu_bytes));
      for (const auto& line : loaded->engine->setup_summary()) spdlog::info("model {}: {}", name, line);
    } else if (!counted_failure) {
      e->state = ModelState::Unloaded;
    } else {
      e->state = ModelState::Failed;
      e->failure = failure;
      ++e->load_failures;
      if (folder_mode_) {
        spdlog::error("model {}: cannot load: {}", name, failure);
      } else {
        // One model: the failure as it always read ("engine failed to start: ...").
        const std::string prefix = path.string() + ": ";
        spdlog::error("{}", failure.starts_with(prefix) && failure.find("engine failed") == prefix.size()
                                ? failure.substr(prefix.size())
                                : "cannot load the model: " + failure);
      }
    }
  }
  changed_.notify_all();
}

void ModelRegistry::scan_folder() {
  struct Found {
    std::string name;
    fs::path path;
    std::string fingerprint;
    uint64_t bytes = 0;
    int64_t mtime = 0;
  };
  std::vector<Found> found;
  std::error_code ec;
  const fs::path& dir = options_.serve.models_dir;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path p = it->path();
    std::error_code fec;
    if (!is_model_file(p) || !fs::is_regular_file(p, fec)) continue;
    Found f;
    f.path = p;
    f.name = p.stem().string();
    f.bytes = fs::file_size(p, fec);
    f.mtime = mtime_ns(p);
    f.fingerprint = std::to_string(f.bytes) + ":" + std::to_string(f.mtime);
    for (const fs::path& side : {dir / (f.name + ".toml"), dir / (f.name + ".stats.gguf"),
                                fs::path(p.string() + ".generated.gpuidx")}) {
      f.fingerprint += ":" + std::to_string(fs::exists(side, fec) ? mtime_ns(side) : -1);
    }
    found.push_back(std::move(f));
  }
  std::set<std::string> present;
  for (const auto& f : found) present.insert(f.name);

  // Entries to (re)configure: new ones and changed ones; their NAME.toml is read outside the lock.
  std::vector<const Found*> changed;
  {
    std::lock_guard lock(mutex_);
    for (const auto& f : found) {
      const Entry* e = find(f.name);
      if (e == nullptr || e->fingerprint != f.fingerprint || e->removed) changed.push_back(&f);
    }
  }
  struct Configured {
    config::ServeOptions options;
    std::vector<std::string> aliases;
    std::string error;
  };
  std::vector<Configured> configured;
  for (const Found* f : changed) {
    Configured c{options_.serve, {}, {}};
    const fs::path toml = dir / (f->name + ".toml");
    if (fs::exists(toml, ec)) {
      try {
        auto side = config::read_model_sidecar(toml, c.options);
        c.options = std::move(side.options);
        c.aliases = std::move(side.aliases);
      } catch (const std::exception& ex) {
        c.error = ex.what();
      }
    }
    c.options.model = f->path;
    const fs::path stats = dir / (f->name + ".stats.gguf");
    if (c.options.stats.empty() && fs::exists(stats, ec)) c.options.stats = stats;
    const fs::path gpuidx = f->path.string() + ".generated.gpuidx";
    if (c.options.placement.empty() && c.options.device != "cpu" && c.options.offload_layers < 0 &&
        fs::exists(gpuidx, ec)) {
      c.options.placement = gpuidx;
    }
    configured.push_back(std::move(c));
  }

  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < changed.size(); ++i) {
      const Found& f = *changed[i];
      Entry* e = find(f.name);
      if (e == nullptr) {
        auto fresh = std::make_unique<Entry>();
        fresh->name = f.name;
        e = fresh.get();
        entries_[f.name] = std::move(fresh);
        spdlog::info("model {}: found {}", f.name, f.path.string());
      } else if (e->state == ModelState::Failed) {
        spdlog::info("model {}: its files changed; the next request loads it again", f.name);
        e->state = ModelState::Unloaded;
        e->failure.clear();
      } else if (e->state == ModelState::Loaded || e->state == ModelState::Loading) {
        if (!e->removed) {
          spdlog::info("model {}: its files changed; it reloads once idle", f.name);
          e->stale = true;
        }
      }
      e->removed = false;
      e->path = f.path;
      e->fingerprint = f.fingerprint;
      e->file_bytes = f.bytes;
      e->file_mtime_ns = f.mtime;
      e->options = std::move(configured[i].options);
      e->aliases = std::move(configured[i].aliases);
      e->config_error = std::move(configured[i].error);
    }
    for (auto& [name, e] : entries_) {
      if (!present.count(name) && !e->removed) {
        spdlog::info("model {}: its file was removed", name);
        e->removed = true;
      }
    }
  }
  changed_.notify_all();
}

void ModelRegistry::housekeeping() {
  auto next_scan = SteadyClock::now() + options_.scan_interval;
  for (;;) {
    std::vector<std::shared_ptr<const ServingModel>> unload;
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, kWaitSlice);
      if (stopping_) return;
      const auto now = SteadyClock::now();
      for (auto it = entries_.begin(); it != entries_.end();) {
        Entry& e = *it->second;
        if (e.state == ModelState::Loaded && e.idle() && !e.preloading) {
          const char* reason = e.removed                            ? "removed"
                               : e.stale                            ? "changed"
                               : e.unload_requested                 ? "requested"
                               : (e.expires && now >= *e.expires)   ? "keep_alive"
                                                                    : nullptr;
          if (reason) unload.push_back(take_unload(e, reason));
        }
        if (e.removed && e.idle() && e.state != ModelState::Loaded && e.state != ModelState::Loading) {
          it = entries_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& s : unload) finish_unload(std::move(s));
    if (SteadyClock::now() >= next_scan) {
      if (folder_mode_) {
        scan_folder();
      } else {
        // One model: a failed file that changed is tried again.
        std::lock_guard lock(mutex_);
        for (auto& [name, e] : entries_) {
          if (e->path.empty()) continue;
          std::error_code ec;
          const auto bytes = fs::file_size(e->path, ec);
          const std::string fp = std::to_string(ec ? 0 : bytes) + ":" + std::to_string(mtime_ns(e->path));
          if (fp != e->fingerprint) {
            e->fingerprint = fp;
            if (e->state == ModelState::Failed) {
              spdlog::info("model {}: its file changed; the next request loads it again", name);
              e->state = ModelState::Unloaded;
              e->failure.clear();
            }
          }
        }
      }
      next_scan = SteadyClock::now() + options_.scan_interval;
    }
  }
}

std::vector<ModelInfo> ModelRegistry::list() const {
  std::vector<ModelInfo> out;
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) {
    if (e->removed) continue;
    ModelInfo m;
    m.name = name;
    m.aliases = e->aliases;
    m.path = e->path;
    m.file_bytes = e->file_bytes;
    m.modified = e->file_mtime_ns ? to_unix_seconds(e->file_mtime_ns) : 0;
    m.state = e->state;
    m.failure = e->failure;
    m.host_bytes = e->host_bytes;
    m.gpu_bytes = e->gpu_bytes;
    m.in_flight = e->in_flight;
    m.expires_at = e->expires_wall;
    m.serving = e->serving;
    m.digest = hex_digest(e->path.string() + "\n" + e->fingerprint);
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<ModelInfo> ModelRegistry::info(const std::string& name) const {
  for (auto& m : list()) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

ModelFacts ModelRegistry::facts(const std::string& name) const {
  fs::path path;
  std::string fingerprint;
  {
    std::lock_guard lock(mutex_);
    const Entry* e = find(name);
    if (e == nullptr) {
      ModelFacts none;
      none.error = "no such model";
      return none;
    }
    if (e->facts && e->facts_fingerprint == e->fingerprint) return *e->facts;
    path = e->path;
    fingerprint = e->fingerprint;
  }
  auto facts = std::make_shared<ModelFacts>();
  try {
    const auto file = gguf::GgufFile::open(path);
    facts->arch = file.get_string("general.architecture", "");
    std::map<std::string, uint64_t> bytes_by_dtype;
    for (const auto& t : file.tensors()) {
      facts->n_params += t.n_elements();
      if (t.ne.size() >= 2) bytes_by_dtype[std::string(kernels::dtype_name(t.dtype))] += t.n_bytes;
    }
    uint64_t best = 0;
    for (const auto& [dtype, b] : bytes_by_dtype) {
      if (b > best) {
        best = b;
        facts->quantization = dtype;
      }
    }
    facts->n_ctx_train = file.get_i64(facts->arch + ".context_length", 0);
    facts->chat_template = file.get_string("tokenizer.chat_template", "");
    facts->metadata = nlohmann::json::object();
    for (const auto& [key, value] : file.metadata()) {
      if (key == "tokenizer.chat_template") continue;
      facts->metadata[key] = value_json(value);
    }
  } catch (const std::exception& ex) {
    *facts = ModelFacts{};
    facts->error = ex.what();
  }
  std::lock_guard lock(mutex_);
  if (Entry* e = const_cast<ModelRegistry*>(this)->find(name); e && e->fingerprint == fingerprint) {
    e->facts = facts;
    e->facts_fingerprint = fingerprint;
  }
  return *facts;
}

std::shared_ptr<const ServingModel> ModelRegistry::peek(const std::string& name) const {
  std::lock_guard lock(mutex_);
  if (!name.empty()) {
    const Entry* e = find(name);
    if (e == nullptr) {
      for (const auto& [n, other] : entries_) {
        for (const auto& a : other->aliases) {
          if (a == name) e = other.get();
        }
      }
    }
    return e ? e->serving : nullptr;
  }
  const Entry* best = nullptr;
  for (const auto& [n, e] : entries_) {
    if (e->serving && (best == nullptr || e->last_used > best->last_used)) best = e.get();
  }
  return best ? best->serving : nullptr;
}

bool ModelRegistry::starting() const {
  std::lock_guard lock(mutex_);
  for (const auto& [n, e] : entries_) {
    if (e->preloading) return true;
  }
  return false;
}

std::string ModelRegistry::single_failure() const {
  std::lock_guard lock(mutex_);
  if (folder_mode_ || entries_.empty()) return {};
  const Entry& e = *entries_.begin()->second;
  return e.state == ModelState::Failed ? e.failure : std::string();
}

std::string ModelRegistry::unservable_reason() const {
  std::lock_guard lock(mutex_);
  if (draining_) return "the server is shutting down";
  std::string failures;
  size_t n = 0;
  for (const auto& [name, e] : entries_) {
    if (e->removed) continue;
    ++n;
    if (e->preloading) return "the model is loading";
    if (e->state != ModelState::Failed) return {};
    failures += (failures.empty() ? "" : "; ") + name + ": " + e->failure;
  }
  if (n == 0) return "the models folder " + options_.serve.models_dir.string() + " holds no .gguf model";
  return "no model can be served: " + failures;
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

std::string ModelRegistry::render_metrics(ModelTotals& totals) const {
  std::string gauges_state, gauges_host, gauges_gpu, loads, failures, unloads, running, waiting, generated, prompt,
      in_flight;
  std::lock_guard lock(mutex_);
  for (const auto& [name, e] : entries_) {
    if (e->removed && !e->serving) continue;
    const std::string label = "model=\"" + name + "\"";
    for (const ModelState s : {ModelState::Unloaded, ModelState::Loading, ModelState::Loaded, ModelState::Failed}) {
      gauges_state += fmt::format("thermocline_model_state{{{},state=\"{}\"}} {}\n", label, model_state_name(s),
                                  e->state == s ? 1 : 0);
    }
    gauges_host += fmt::format("thermocline_model_host_bytes{{{}}} {}\n", label, e->host_bytes);
    gauges_gpu += fmt::format("thermocline_model_gpu_bytes{{{}}} {}\n", label, e->gpu_bytes);
    loads += fmt::format("thermocline_model_loads_total{{{}}} {}\n", label, e->loads);
    failures += fmt::format("thermocline_model_load_failures_total{{{}}} {}\n", label, e->load_failures);
    for (const auto& [reason, n] : e->unloads) {
      unloads += fmt::format("thermocline_model_unloads_total{{{},reason=\"{}\"}} {}\n", label, reason, n);
    }
    in_flight += fmt::format("thermocline_model_requests_in_flight{{{}}} {}\n", label, e->in_flight);
    runtime::EngineStats s;
    if (e->serving) s = e->serving->engine->stats();
    running += fmt::format("thermocline_model_requests_running{{{}}} {}\n", label, s.requests_running);
    waiting += fmt::format("thermocline_model_requests_waiting{{{}}} {}\n", label, s.requests_waiting);
    const int64_t gen = s.generated_tokens_total + e->retired.generated_tokens_total;
    const int64_t pr = s.prompt_tokens_total + e->retired.prompt_tokens_total;
    generated += fmt::format("thermocline_model_generation_tokens_total{{{}}} {}\n", label, gen);
    prompt += fmt::format("thermocline_model_prompt_tokens_total{{{}}} {}\n", label, pr);
    if (e->serving) {
      ++totals.n_loaded;
      if (s.state == runtime::EngineState::Ready) ++totals.n_ready;
    }
    totals.requests_running += s.requests_running;
    totals.requests_waiting += s.requests_waiting;
    totals.prompt_tokens_total += pr;
    totals.cached_tokens_total += s.cached_tokens_total + e->retired.cached_tokens_total;
    totals.generated_tokens_total += gen;
    totals.steps_total += s.steps_total + e->retired.steps_total;
    totals.kv_tokens_used += s.kv_tokens_used;
    totals.kv_tokens_capacity += s.kv_tokens_capacity;
  }
  std::string out;
  auto family = [&out](const char* name, const char* help, const char* type, const std::string& lines) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
    out += lines;
  };
  family("thermocline_model_state", "1 for each model's current state (unloaded, loading, loaded, failed)", "gauge",
         gauges_state);
  family("thermocline_model_host_bytes", "Host bytes of a loaded model: mapped file + host KV cache", "gauge",
         gauges_host);
  family("thermocline_model_gpu_bytes", "GPU bytes of a loaded model, measured around its load", "gauge", gauges_gpu);
  family("thermocline_model_loads_total", "Models loaded", "counter", loads);
  family("thermocline_model_load_failures_total", "Model loads that failed", "counter", failures);
  family("thermocline_model_unloads_total", "Models unloaded, by reason", "counter", unloads);
  family("thermocline_model_requests_in_flight", "Requests holding the model", "gauge", in_flight);
  family("thermocline_model_requests_running", "Requests holding a sequence slot, per model", "gauge", running);
  family("thermocline_model_requests_waiting", "Requests queued for a slot, per model", "gauge", waiting);
  family("thermocline_model_generation_tokens_total", "Tokens generated, per model", "counter", generated);
  family("thermocline_model_prompt_tokens_total", "Prompt tokens processed, per model", "counter", prompt);
  out += fmt::format("# HELP thermocline_models_ram_budget_bytes Host bytes the loaded models may take\n"
                     "# TYPE thermocline_models_ram_budget_bytes gauge\nthermocline_models_ram_budget_bytes {}\n",
                     ram_budget_);
  out += fmt::format("# HELP thermocline_models_vram_budget_bytes GPU bytes the loaded models may take (0: none)\n"
                     "# TYPE thermocline_models_vram_budget_bytes gauge\nthermocline_models_vram_budget_bytes {}\n",
                     vram_budget_);
  return out;
}

}  // namespace tc::server
