// ModelRegistry's loads and unloads: making room within max_loaded_models
// and the RAM / VRAM budgets, loading off the request threads with the
// bytes measured around each load, unloading, and the housekeeping thread
// (keep_alive, removed and changed files, rescans).
#include "server/model_registry.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "config/byte_size.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "engine/model/model_spec.h"
#include "engine/runtime/kv_cache.h"
#include "engine/sparse/vram_budget.h"
#include "server/model_registry_entry.h"
#include "server/process_memory.h"
#include "server/server_context.h"

namespace tc::server {

namespace fs = std::filesystem;

namespace {

// Bytes of a file's FFN weight matrices (gate, up, down, down_t; not the
// predictors): what a hybrid placement may leave on the host.
uint64_t ffn_weight_bytes(const gguf::GgufFile& file) {
  uint64_t bytes = 0;
  for (const auto& t : file.tensors()) {
    for (const char* part : {".ffn_gate", ".ffn_up", ".ffn_down"}) {
      if (t.name.find(part) != std::string::npos) {
        bytes += t.n_bytes;
        break;
      }
    }
  }
  return bytes;
}

// The vision projector's file (0 without one, or unreadable): every page of
// it is read by an image's encoding, so it counts as resident.
uint64_t projector_bytes(const config::ServeOptions& opts) {
  if (opts.mmproj.empty()) return 0;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(opts.mmproj, ec);
  return ec ? 0 : static_cast<uint64_t>(bytes);
}

// GPU bytes a model's first load is expected to take (later loads use the
// bytes measured last time). `whole` is the file plus its KV cache, `ffn`
// the bytes of its FFN matrices (0 if unknown).
uint64_t first_gpu_estimate_bytes(const config::ServeOptions& opts, uint64_t whole, uint64_t ffn, int64_t n_layer,
                                  uint64_t vram_budget) {
  // Placement "auto" without a budget of its own solves within what the
  // other models leave (load_entry): it needs room for what is not FFN
  // (attention, norms, head, KV cache, predictors) at least, and spends the
  // rest of its share on hot neurons.
  if (opts.placement == "auto" && opts.vram_budget.empty()) return whole > ffn ? whole - ffn : 0;
  if (!opts.vram_budget.empty()) {
    try {
      return config::parse_byte_size(opts.vram_budget);
    } catch (const std::exception&) {
      return 0;  // the load says why
    }
  }
  if (opts.offload_layers >= 0 && n_layer > 0) {
    return whole / static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(std::min(opts.offload_layers, n_layer));
  }
  // A placement file: at most all of it, never more than the whole budget.
  if (!opts.placement.empty()) return vram_budget > 0 ? std::min(whole, vram_budget) : whole;
  return whole;  // the dense model and its KV cache on the GPU
}

}  // namespace

bool ModelRegistry::make_room(std::unique_lock<std::mutex>& lock, Entry& entry, std::string& why) {
  const auto& o = options_.serve;
  const std::string name = entry.name;
  auto too_big = [&](bool host) {
    return host ? "needs about " + sparse::describe_bytes(entry.predicted_host) +
                      " of host memory (mapped file + KV cache), more than models_ram_budget " +
                      sparse::describe_bytes(ram_budget_)
                : "needs about " + sparse::describe_bytes(entry.predicted_gpu) +
                      " of GPU memory, more than models_vram_budget " + sparse::describe_bytes(vram_budget_);
  };
  // Larger than a whole budget: no model is unloaded for it.
  if (ram_budget_ > 0 && entry.predicted_host > ram_budget_) {
    why = too_big(true);
    return false;
  }
  if (vram_budget_ > 0 && entry.predicted_gpu > vram_budget_) {
    why = too_big(false);
    return false;
  }
  entry.waiting_for_room = true;
  // Leaves the line on every way out (the lock is held at each).
  struct InLine {
    ModelRegistry& registry;
    const std::string& name;
    ~InLine() {
      if (Entry* e = registry.find(name)) registry.stop_waiting_for_room(*e);
    }
  } in_line{*this, name};
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
    if (!first_in_line_for_room(*self)) {
      changed_.wait_for(lock, kWaitSlice);
      continue;
    }
    int n_other = 0;
    uint64_t host_used = 0, gpu_used = 0;
    bool others_can_free = false;
    Entry* victim = nullptr;    // the least recently used idle model
    Entry* gave_way = nullptr;  // a model that gave way, its requests ended (its waiters load it again)
    for (auto& [n, e] : entries_) {
      if (e.get() == self) continue;
      if (e->state == ModelState::Loaded || (e->state == ModelState::Loading && e->reserved)) {
        ++n_other;
        host_used += e->state == ModelState::Loaded ? e->host_bytes : e->predicted_host;
        gpu_used += e->state == ModelState::Loaded ? e->gpu_bytes : e->predicted_gpu;
        others_can_free = true;
        if (e->state == ModelState::Loaded && e->idle() && (victim == nullptr || e->last_used < victim->last_used)) {
          victim = e.get();
        } else if (e->state == ModelState::Loaded && e->giving_way && e->in_flight == 0) {
          gave_way = e.get();
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
      why = too_big(!ram_ok);
      return false;
    }
    if (victim == nullptr) victim = gave_way;
    if (victim != nullptr) {
      const bool yielded = victim->giving_way;
      spdlog::info("model {}: unloading {} ({}) to make room ({} loaded, host {} of {})", name, victim->name,
                   yielded ? "it gave way, its requests ended" : "least recently used, idle", n_other,
                   sparse::human_bytes(host_used), ram_budget_ ? sparse::human_bytes(ram_budget_) : "unlimited");
      if (yielded) last_gave_way_ = victim->name;
      auto s = take_unload(*victim, yielded ? "gave_way" : "evicted");
      lock.unlock();
      finish_unload(std::move(s));
      lock.lock();
      continue;
    }
    // Every other model is busy: one gives way, so that steady traffic on
    // the loaded models cannot keep this one waiting for ever.
    ask_to_give_way(*self);
    changed_.wait_for(lock, kWaitSlice);
  }
}

bool ModelRegistry::first_in_line_for_room(const Entry& entry) const {
  for (const auto& [n, e] : entries_) {
    if (e.get() == &entry || !e->waiting_for_room) continue;
    if (e->room_ticket < entry.room_ticket || (e->room_ticket == entry.room_ticket && n < entry.name)) return false;
  }
  return true;
}

void ModelRegistry::ask_to_give_way(const Entry& waiting) {
  for (const auto& [n, e] : entries_) {
    if (e->giving_way) return;  // one at a time: its requests are ending
  }
  // The least recently used busy model, preferably not the one that gave
  // way last; none that requests wait for (one just loaded serves them first).
  Entry* chosen = nullptr;
  Entry* gave_way_last = nullptr;
  for (auto& [n, e] : entries_) {
    if (e.get() == &waiting || e->state != ModelState::Loaded || e->preloading || e->waiters > 0) continue;
    Entry*& pick = n == last_gave_way_ ? gave_way_last : chosen;
    if (pick == nullptr || e->last_used < pick->last_used) pick = e.get();
  }
  if (chosen == nullptr) chosen = gave_way_last;
  if (chosen == nullptr) return;
  chosen->giving_way = true;
  spdlog::info("model {}: gives way to {} (no loaded model is idle): its requests in flight finish, new ones wait "
               "for it to load again",
               chosen->name, waiting.name);
}

void ModelRegistry::stop_waiting_for_room(Entry& entry) {
  const bool first = entry.waiting_for_room && first_in_line_for_room(entry);
  entry.waiting_for_room = false;
  // Those the first in line asked to give way, it asked for itself: they
  // serve again, and the next in line asks anew if it must.
  if (first) {
    for (auto& [n, e] : entries_) e->giving_way = false;
  }
  changed_.notify_all();
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
    e.retired.context_shifts_total += stats.context_shifts_total;
    e.retired.draft_tokens_total += stats.draft_tokens_total;
    e.retired.draft_tokens_accepted_total += stats.draft_tokens_accepted_total;
  }
  e.state = ModelState::Unloaded;
  e.host_bytes = 0;
  e.gpu_bytes = 0;
  e.expires.reset();
  e.expires_wall.reset();
  e.unload_requested = false;
  e.stale = false;
  e.giving_way = false;
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
  // What the load will take, before it runs: on the host the mapped file,
  // its vision projector's file (read whole by an image's encoding) and a
  // KV cache of the model's shape, or what its last load measured if more;
  // on the GPU what its last load measured, else first_gpu_estimate_bytes().
  uint64_t predicted_host = 0, first_gpu_estimate = 0;
  {
    std::error_code ec;
    predicted_host = static_cast<uint64_t>(fs::file_size(path, ec));  // unreadable headers: the file, at least
    if (ec) predicted_host = 0;
    // Unreadable: what placement "auto" needs is unknown (the load fails and says why).
    first_gpu_estimate = opts.placement == "auto" && opts.vram_budget.empty()
                             ? 0
                             : first_gpu_estimate_bytes(opts, predicted_host, 0, 0, vram_budget_);
  }
  try {
    const auto file = gguf::GgufFile::open(path);
    const auto spec = model::read_model_spec(file);
    const int64_t n_ctx = std::min<int64_t>(opts.ctx_size, spec.n_ctx_train > 0 ? spec.n_ctx_train : opts.ctx_size);
    const kernels::KvCacheTypes kv_types{kernels::dtype_from_name(opts.cache_type_k).value_or(kernels::DType::F16),
                                         kernels::dtype_from_name(opts.cache_type_v).value_or(kernels::DType::F16)};
    const bool kv_fits = runtime::KvCache::unsupported_reason(spec, kv_types, nullptr).empty();
    const uint64_t kv = runtime::KvCache::bytes_for(spec, opts.parallel, n_ctx, kv_fits ? kv_types : kernels::KvCacheTypes{});
    predicted_host = file.file_size() + (opts.device == "cpu" ? kv : 0) + projector_bytes(opts);
    first_gpu_estimate =
        first_gpu_estimate_bytes(opts, file.file_size() + kv, ffn_weight_bytes(file), spec.n_layer, vram_budget_);
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
    e->predicted_host = std::max(predicted_host, e->loads > 0 ? e->predicted_host : 0);
    e->predicted_gpu = opts.device == "cpu" ? 0
                       : e->loads > 0   ? e->predicted_gpu
                                        : first_gpu_estimate;
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
    const uint64_t before = gpu_index >= 0 ? options_.probes.gpu_free(gpu_index).value_or(0) : 0;
    const uint64_t rss_before = options_.probes.rss();
    try {
      spdlog::info("model {}: loading {}", name, path.string());
      loaded = options_.load(path, opts, name);
    } catch (const std::exception& ex) {
      failure = ex.what();
    }
    // Host bytes as measured: the resident set's growth over the load (loads
    // are serialised; requests of other models running meanwhile add noise).
    const uint64_t rss_after = options_.probes.rss();
    rss_growth = rss_after > rss_before ? rss_after - rss_before : 0;
    if (before > 0) {
      const uint64_t after = options_.probes.gpu_free(gpu_index).value_or(before);
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
          loaded->model ? loaded->model->file.file_size() + stats.kv_cache_host_bytes + projector_bytes(opts)
                        : predicted_host,
          rss_growth);
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
      // The entry holds the model now. This thread lets go before the lock
      // does: a model evicted right after it is seen loaded must free its
      // memory in that eviction, not whenever this thread gets to return
      // (a later free would land in the next load's GPU measurement).
      loaded.reset();
    } else if (!counted_failure) {
      e->state = ModelState::Unloaded;
    } else {
      e->state = ModelState::Failed;
      e->failure = failure;
      // As the files were when the load failed (a shard missing, say), so
      // that putting them right is seen as a change even if no rescan saw
      // them wrong.
      e->fingerprint = model_fingerprint(path, folder_mode_);
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
        recheck_model_file();
      }
      next_scan = SteadyClock::now() + options_.scan_interval;
    }
  }
}

}  // namespace tc::server
