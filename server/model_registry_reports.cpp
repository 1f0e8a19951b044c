// ModelRegistry's reports: the listing (/v1/models, /api/tags, /api/ps),
// a model file's header facts (/api/show), the model to show without a
// lease, /health's reason, and the per-model Prometheus series.
#include "server/model_registry.h"

#include <fmt/format.h>

#include <map>

#include "engine/gguf/gguf_file.h"
#include "engine/text/vocab.h"
#include "server/model_registry_entry.h"
#include "server/server_context.h"

namespace tc::server {
namespace {

namespace fs = std::filesystem;

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
    m.giving_way = e->giving_way;
    m.expires_at = e->expires_wall;
    m.serving = e->serving;
    m.digest = hex_digest(e->path.string() + "\n" + e->fingerprint);
    // Once loaded, whether its projector serves (a paired one may not: model_loader).
    m.vision = e->serving ? e->serving->vision != nullptr : !e->options.mmproj.empty();
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
    try {
      text::Vocab vocab = text::read_vocab(file);
      text::resolve_fim_tokens(vocab);
      facts->fill_in_middle = vocab.fim.can_infill();
    } catch (const std::exception&) {
      // A tokenizer the engine cannot read: the load reports it.
    }
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

std::string ModelRegistry::render_metrics(ModelTotals& totals) const {
  std::string gauges_state, gauges_host, gauges_gpu, loads, failures, unloads, running, waiting, generated, prompt,
      in_flight, load_waiters, load_timeouts, images, image_seconds;
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
    load_waiters += fmt::format("thermocline_model_load_waiters{{{}}} {}\n", label, e->waiters);
    load_timeouts += fmt::format("thermocline_model_load_timeouts_total{{{}}} {}\n", label, e->load_timeouts);
    runtime::EngineStats s;
    if (e->serving) s = e->serving->engine->stats();
    running += fmt::format("thermocline_model_requests_running{{{}}} {}\n", label, s.requests_running);
    waiting += fmt::format("thermocline_model_requests_waiting{{{}}} {}\n", label, s.requests_waiting);
    const int64_t gen = s.generated_tokens_total + e->retired.generated_tokens_total;
    const int64_t pr = s.prompt_tokens_total + e->retired.prompt_tokens_total;
    generated += fmt::format("thermocline_model_generation_tokens_total{{{}}} {}\n", label, gen);
    prompt += fmt::format("thermocline_model_prompt_tokens_total{{{}}} {}\n", label, pr);
    if (e->serving && e->serving->vision) {
      images += fmt::format("thermocline_model_images_encoded_total{{{}}} {}\n", label, e->serving->vision->encoded());
      image_seconds += fmt::format("thermocline_model_image_encode_seconds_total{{{}}} {:.3f}\n", label,
                                   e->serving->vision->encode_seconds());
    }
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
    totals.context_shifts_total += s.context_shifts_total + e->retired.context_shifts_total;
    totals.draft_tokens_total += s.draft_tokens_total + e->retired.draft_tokens_total;
    totals.draft_tokens_accepted_total += s.draft_tokens_accepted_total + e->retired.draft_tokens_accepted_total;
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
  family("thermocline_model_load_waiters", "Requests waiting for the model to load (or to load again)", "gauge",
         load_waiters);
  family("thermocline_model_load_timeouts_total", "Requests that gave up waiting for the model to load (load_timeout_s)",
         "counter", load_timeouts);
  family("thermocline_model_requests_running", "Requests holding a sequence slot, per model", "gauge", running);
  family("thermocline_model_requests_waiting", "Requests queued for a slot, per model", "gauge", waiting);
  family("thermocline_model_generation_tokens_total", "Tokens generated, per model", "counter", generated);
  family("thermocline_model_prompt_tokens_total", "Prompt tokens processed, per model", "counter", prompt);
  family("thermocline_model_images_encoded_total",
         "Images a loaded model's vision projector encoded (not taken from its cache) since it loaded", "counter",
         images);
  family("thermocline_model_image_encode_seconds_total", "Seconds those images took to decode and encode", "counter",
         image_seconds);
  out += fmt::format("# HELP thermocline_models_ram_budget_bytes Host bytes the loaded models may take\n"
                     "# TYPE thermocline_models_ram_budget_bytes gauge\nthermocline_models_ram_budget_bytes {}\n",
                     ram_budget_);
  out += fmt::format("# HELP thermocline_models_vram_budget_bytes GPU bytes the loaded models may take (0: none)\n"
                     "# TYPE thermocline_models_vram_budget_bytes gauge\nthermocline_models_vram_budget_bytes {}\n",
                     vram_budget_);
  return out;
}

}  // namespace tc::server
