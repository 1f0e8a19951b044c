// ModelRegistry: the models one server serves -- the one `--model` file, or
// every .gguf of `--models-dir` (rescanned each second: files added,
// removed or changed show up without a restart) -- and their lifecycle:
// unloaded -> loading -> loaded, or failed (with the reason, until the
// file or its NAME.toml changes). Requests lease a model; a lease of a model
// that is not loaded starts its load and waits, while other models keep
// serving. Loads stay within max_loaded_models and the RAM / VRAM budgets,
// made room for by unloading the least recently used idle model. When no
// loaded model is idle, loads take room in the order their first waiting
// request arrived, and the first in line has the least recently used busy
// model give way (another than the one that gave way last, where there is
// one): new requests for it wait instead of starting on it, it unloads once
// its requests in flight have ended, the waiting model loads, and the
// requests that waited for the one that gave way load it again in their
// turn. A model is not asked to give way while requests that waited for it
// have yet to start on it (one just loaded serves those first). Apart from
// that, a model with leases (requests in flight) or waiters is never
// unloaded. Waits end with the client (the caller's tick: a stream's ping, a
// look at the connection) or after load_timeout_s; nothing waits on a
// request that itself waits. An idle model unloads when its keep_alive runs
// out.
//
// Thread-safe. One housekeeping thread (rescans, keep_alive); each load runs
// on its own thread; loads and unloads are serialised among themselves so
// the GPU bytes measured around a load are that load's.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/keep_alive.h"
#include "config/serve_options.h"
#include "server/openai_errors.h"

namespace tc::server {

struct ServingModel;
class ModelRegistry;

// How often a request waiting for its model's load looks whether its
// client is still there (acquire's tick interval for non-streamed requests).
inline constexpr std::chrono::milliseconds kClientCheckInterval{250};

enum class ModelState { Unloaded, Loading, Loaded, Failed };
const char* model_state_name(ModelState s);  // "unloaded", "loading", "loaded", "failed"

// Facts read from a model file's header (no weights read), for listings.
struct ModelFacts {
  std::string arch;                // general.architecture
  int64_t n_params = 0;            // elements of every tensor
  std::string quantization;        // the most common weight dtype by bytes ("q4_0", "f16")
  int64_t n_ctx_train = 0;
  nlohmann::json metadata;         // scalar metadata keys (arrays as their length), for /api/show
  std::string chat_template;       // tokenizer.chat_template, empty if none
  bool fill_in_middle = false;     // the vocabulary has FIM prefix, suffix and middle tokens (fim_tokens.h)
  std::string error;               // the header could not be read: why (the other fields empty)
};

// Engine counters summed over every model (loaded now or before).
struct ModelTotals {
  int n_loaded = 0;
  int n_ready = 0;
  int requests_running = 0;
  int requests_waiting = 0;
  int64_t prompt_tokens_total = 0;
  int64_t cached_tokens_total = 0;
  int64_t generated_tokens_total = 0;
  int64_t steps_total = 0;
  int64_t context_shifts_total = 0;
  int64_t draft_tokens_total = 0;
  int64_t draft_tokens_accepted_total = 0;
  int64_t kv_tokens_used = 0;
  int64_t kv_tokens_capacity = 0;
};

// One model as listed (a snapshot).
struct ModelInfo {
  std::string name;
  std::vector<std::string> aliases;
  std::filesystem::path path;
  uint64_t file_bytes = 0;
  int64_t modified = 0;            // file mtime, unix seconds
  ModelState state = ModelState::Unloaded;
  std::string failure;             // state Failed: the file and the reason
  uint64_t host_bytes = 0;         // loaded: mapped file + host KV cache, or the RSS growth over its load if more
  uint64_t gpu_bytes = 0;          // loaded: measured device bytes
  int in_flight = 0;
  bool giving_way = false;         // loaded, unloading once its requests in flight end, for a model waiting to load
  std::optional<std::chrono::system_clock::time_point> expires_at;  // loaded and idle with a finite keep_alive
  std::shared_ptr<const ServingModel> serving;                      // loaded
  std::string digest;              // 64 hex digits identifying path, size and mtime (not a content hash)
  bool vision = false;             // served with a vision projector (its options' mmproj)
};

// A model held for one request: it stays loaded while the lease lives.
class ModelLease {
 public:
  ~ModelLease();
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  const ServingModel& model() const { return *serving_; }
  const std::shared_ptr<const ServingModel>& serving() const { return serving_; }
  const std::string& name() const { return name_; }

 private:
  friend class ModelRegistry;
  ModelLease(ModelRegistry* registry, std::string name, std::shared_ptr<const ServingModel> serving)
      : registry_(registry), name_(std::move(name)), serving_(std::move(serving)) {}
  ModelRegistry* registry_;
  std::string name_;
  std::shared_ptr<const ServingModel> serving_;
};

// How a model is loaded; the default loads it for real (server/model_loader.h).
// Tests pass fakes. Throws with the reason on failure.
using ModelLoadFunction = std::function<std::shared_ptr<ServingModel>(
    const std::filesystem::path& path, const config::ServeOptions& options, const std::string& name)>;

// What the registry measures memory with (server/process_memory.h); tests
// pass fakes.
struct MemoryProbes {
  std::function<uint64_t()> rss;                                 // this process's resident bytes
  std::function<std::optional<uint64_t>(int gpu_index)> gpu_free;  // a GPU's free bytes, nullopt without it
};

struct RegistryOptions {
  config::ServeOptions serve;                          // the server's options (models_dir or model)
  ModelLoadFunction load;                              // empty: default_model_loader()
  MemoryProbes probes;                                 // empty members: the real probes
  std::chrono::milliseconds scan_interval{1000};       // folder rescans
};

class ModelRegistry {
 public:
  explicit ModelRegistry(RegistryOptions options);
  ~ModelRegistry();  // stops housekeeping, waits for loads, unloads everything
  ModelRegistry(const ModelRegistry&) = delete;
  ModelRegistry& operator=(const ModelRegistry&) = delete;

  // Starts: with models_dir, scans it and starts housekeeping; with one
  // model, loads it now (blocking; the entry is "loading" meanwhile and
  // requests get 503 until it is done). Returns false when that load failed.
  bool start();
  // true: serving a folder; false: one model (options.model or publish()).
  bool folder_mode() const { return folder_mode_; }

  // The model a request names: its name, an alias, or NAME:latest; an empty
  // `requested` is the only model (one-model mode, or a folder of one).
  // Returns the registry name, or the error to send (404 model_not_found
  // listing what is served; 400 when a folder serves several and none is named).
  std::string resolve(const std::string& requested, std::optional<ApiError>& error) const;

  // Leases `name` (a resolved name) if it is loaded; otherwise starts its
  // load unless one runs, and returns null with no error. Errors: the
  // model failed (500 naming the file and the reason), is gone (404), the
  // server is draining (503), or one-model mode is still starting (503).
  // `keep_alive`: this request's, else the model's or the server default.
  std::shared_ptr<ModelLease> try_acquire(const std::string& name, const std::optional<config::KeepAlive>& keep_alive,
                                          std::optional<ApiError>& error);
  // try_acquire, waiting for the load: calls `tick` every `interval` while
  // waiting (a stream's ping, or a look at the client's connection; false
  // gives up, e.g. the client left, and returns null with no error). After
  // load_timeout_s of waiting it gives up with a 503 that says what the
  // model was waiting for (the load itself goes on).
  std::shared_ptr<ModelLease> acquire(const std::string& name, const std::optional<config::KeepAlive>& keep_alive,
                                      std::optional<ApiError>& error, const std::function<bool()>& tick,
                                      std::chrono::milliseconds interval);
  // Ollama's keep_alive 0 without a prompt: unload now if idle, else as soon
  // as it is. Returns false if `name` is unknown.
  bool request_unload(const std::string& name);

  // Every model, sorted by name.
  std::vector<ModelInfo> list() const;
  std::optional<ModelInfo> info(const std::string& name) const;
  // Header facts of a model file (cached per file version).
  ModelFacts facts(const std::string& name) const;
  // A loaded model to show without leasing it (engine view, /props
  // without a model): `name` if given and loaded, else the most recently
  // used loaded one; null if none.
  std::shared_ptr<const ServingModel> peek(const std::string& name = {}) const;
  // One-model mode: the model is still loading (start() or publish() not done).
  bool starting() const;
  // /health: empty when some model can be served (loaded, or loadable and
  // not failed), else why not.
  std::string unservable_reason() const;
  // One-model mode's failure (empty if none), for the errors of routes that
  // need the model.
  std::string single_failure() const;

  // One-model mode, used by tests and by start(): the model is loaded (or
  // failed to load); publish() replaces the entry's model.
  void publish(std::shared_ptr<const ServingModel> serving);
  void set_load_error(std::string message);

  // Stops loading new models (draining), then shuts every engine down
  // within `grace`, in parallel.
  void shutdown(std::chrono::milliseconds grace);

  // Prometheus series per model: thermocline_model_* (state, bytes, loads,
  // unloads, failures, engine counters); `totals` gets the engine stats
  // summed over loaded and unloaded engines, for the unlabelled gauges.
  std::string render_metrics(ModelTotals& totals) const;

  // Budgets in bytes as resolved at construction (0: none).
  uint64_t ram_budget() const { return ram_budget_; }
  uint64_t vram_budget() const { return vram_budget_; }

 private:
  friend class ModelLease;
  struct Entry;
  void release(const std::string& name);
  std::shared_ptr<ModelLease> try_acquire_locked(const std::string& name,
                                                 const std::optional<config::KeepAlive>& keep_alive,
                                                 std::optional<ApiError>& error);
  void housekeeping();
  void scan_folder();
  void recheck_model_file();  // one model: its file changed since it failed
  void load_entry(std::string name);
  bool make_room(std::unique_lock<std::mutex>& lock, Entry& entry, std::string& why);
  bool first_in_line_for_room(const Entry& entry) const;
  void ask_to_give_way(const Entry& waiting);
  void stop_waiting_for_room(Entry& entry);
  std::shared_ptr<const ServingModel> take_unload(Entry& e, const char* reason);
  void finish_unload(std::shared_ptr<const ServingModel> serving);
  Entry* find(const std::string& name);
  const Entry* find(const std::string& name) const;
  config::KeepAlive effective_keep_alive(const Entry& e) const;
  ApiError load_timeout_error(const Entry& e) const;

  RegistryOptions options_;
  bool folder_mode_ = false;
  config::KeepAlive default_keep_alive_;
  uint64_t ram_budget_ = 0;
  uint64_t vram_budget_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;   // a load finished, a model went idle, an unload
  std::map<std::string, std::unique_ptr<Entry>> entries_;
  bool stopping_ = false;
  bool draining_ = false;
  uint64_t use_tick_ = 0;             // LRU clock
  uint64_t arrival_tick_ = 0;         // numbers requests as they start waiting: loads take room in that order
  std::string last_gave_way_;         // the model that gave way last: not asked again next while another can be
  std::mutex load_mutex_;             // serialises loads and unloads (GPU bytes measured around each)
  int active_loaders_ = 0;            // load threads running (detached; waited for at destruction)
  std::thread housekeeper_;
};

}  // namespace tc::server
