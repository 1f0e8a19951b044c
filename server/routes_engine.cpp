// The engine view's routes (docs/api.md): GET /v1/engine/stats (slots, queue,
// KV cache, the FFN's per-layer work over the last sparse steps, bytes and
// time per token against the modelled limit) and GET /v1/engine/firing_curve (the loaded stats file's curve).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "engine/model/hybrid_ffn_block.h"
#include "engine/model/hybrid_time_split.h"
#include "engine/model/sparse_ffn_block.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/decode_bytes.h"
#include "server/openai_responses.h"
#include "server/request_log.h"
#include "server/route_paths.h"
#include "server/server_context.h"

namespace tc::server {
namespace {

using nlohmann::json;

// Points per layer of the firing curve: log-spaced ranks.
constexpr int kCurvePoints = 48;

const char* state_name(runtime::EngineState s) {
  switch (s) {
    case runtime::EngineState::Loading: return "loading";
    case runtime::EngineState::Ready: return "ready";
    case runtime::EngineState::Failed: return "failed";
    case runtime::EngineState::Stopped: return "stopped";
  }
  return "unknown";
}

// count / (tokens * n_ff) per layer; null where the layer saw no token.
json per_token_fraction(const std::vector<int64_t>& count, const std::vector<int64_t>& tokens, int64_t n_ff) {
  json out = json::array();
  for (size_t l = 0; l < count.size() && l < tokens.size(); ++l) {
    if (tokens[l] <= 0 || n_ff <= 0) {
      out.push_back(nullptr);
    } else {
      out.push_back(static_cast<double>(count[l]) / (static_cast<double>(tokens[l]) * static_cast<double>(n_ff)));
    }
  }
  return out;
}

json ffn_json(const runtime::FfnActivity& a, const model::ModelSpec& spec) {
  json ffn = {{"mode", a.mode}, {"n_layer", spec.n_layer}, {"n_ff", spec.n_ff}};
  if (a.mode == "dense") {
    ffn["layers"] = nullptr;
    return ffn;
  }
  int64_t window_tokens = 0;
  for (const int64_t t : a.tokens) window_tokens = std::max(window_tokens, t);
  ffn["window_steps"] = a.window_steps;
  ffn["window_tokens"] = window_tokens;
  ffn["sparse_steps_total"] = a.sparse_steps_total;
  ffn["dense_steps_total"] = a.dense_steps_total;
  json layers = {{"active", per_token_fraction(a.computed, a.tokens, a.n_ff)},
                 {"predicted", per_token_fraction(a.predicted, a.tokens, a.n_ff)}};
  if (a.mode == "hybrid") {
    layers["hot"] = per_token_fraction(a.hot, a.tokens, a.n_ff);
    layers["cached"] = per_token_fraction(a.cached, a.tokens, a.n_ff);
    layers["cold"] = per_token_fraction(a.cold, a.tokens, a.n_ff);
  }
  ffn["layers"] = std::move(layers);
  return ffn;
}

// What a decode token reads from VRAM, host memory and over PCIe, modelled
// from the tensor sizes and the window's neuron counts; null where unknown.
json bytes_json(const ServingModel& serving, const runtime::FfnActivity& a, const runtime::EngineStats& stats,
                const runtime::DecodeTimes& times) {
  const model::LoadedModel& m = *serving.model;
  const auto& setup = serving.engine->options().model;
  const double mean_context = stats.requests_running > 0
                                  ? static_cast<double>(stats.kv_tokens_used) / stats.requests_running
                                  : 0.0;
  json out = {{"vram", nullptr}, {"host", nullptr}, {"pcie", nullptr}, {"mean_context", mean_context}};
  int64_t window_tokens = 0;
  for (const int64_t t : a.tokens) window_tokens = std::max(window_tokens, t);
  if (a.mode != "dense" && window_tokens == 0) return out;  // no sparse token yet: nothing measured

  model::SparseFfnCounters counters;
  counters.token_layers = a.tokens;
  counters.predicted = a.predicted;
  counters.computed = a.computed;
  if (a.mode == "hybrid") {
    model::HybridSplitCounters sides;
    sides.hot = a.hot;
    sides.cached = a.cached;
    sides.cold = a.cold;
    // Without a time split the stream's copies are not counted, so the bus
    // stays unknown.
    const auto b = model::hybrid_bytes_per_token(m, counters, sides, nullptr, model::HybridTimeSplit{}, mean_context);
    out["vram"] = b.gpu;
    out["host"] = b.cpu;
    // With the time split the decode steps' stream copies are counted.
    if (times.split_timed && times.tokens > 0) {
      out["pcie"] = static_cast<double>(times.bus_bytes) / static_cast<double>(times.tokens);
    }
    return out;
  }
  const auto total =
      sparse::decode_bytes_per_token(m, a.mode == "sparse" ? &counters : nullptr, mean_context, setup.kv_types).total();
  if (!setup.device.cuda) {
    out["host"] = total;
  } else if (setup.gpu_split.mode == config::GpuSplitMode::None) {
    out["vram"] = total;
  }  // layer offload: split by layer, not modelled here
  return out;
}

// A figure in milliseconds, null when not measured.
json ms_or_null(bool known, double seconds, double per) {
  return known && per > 0 ? json(1e3 * seconds / per) : json(nullptr);
}

// The time of the last decode steps against the modelled limit: the bytes a
// token reads from each memory over that memory's measured bandwidth, the
// slowest side bounding the step (hybrid mode's sides run concurrently).
// The limit is one sequence's step; null where a side's bytes or bandwidth
// is unknown.
json time_json(const runtime::DecodeTimes& t, const json& bytes, const runtime::EngineBandwidths& bw) {
  const auto steps = static_cast<double>(t.window_steps);
  json out = {{"window_steps", t.window_steps},
              {"tokens", t.tokens},
              {"decode_steps_total", t.decode_steps_total},
              {"sequences_per_step", steps > 0 ? json(static_cast<double>(t.tokens) / steps) : json(nullptr)},
              {"step_ms", ms_or_null(true, t.wall_s, steps)},
              {"wall_ms", ms_or_null(true, t.wall_s, static_cast<double>(t.tokens))},
              {"split_timed", t.split_timed},
              {"gpu_ms", ms_or_null(t.gpu_timed, t.gpu_s, steps)},
              {"cpu_ms", ms_or_null(t.split_timed, t.cpu_s, steps)},
              {"wait_ms", ms_or_null(t.split_timed, t.wait_s, steps)},
              {"bandwidths_gbs", {{"host", bw.host > 0 ? json(bw.host * 1e-9) : json(nullptr)},
                                  {"device", bw.device > 0 ? json(bw.device * 1e-9) : json(nullptr)},
                                  {"pcie", bw.pcie > 0 ? json(bw.pcie * 1e-9) : json(nullptr)}}}};
  // Each known side's seconds; a side with bytes but no bandwidth leaves the limit unknown.
  double limit_s = 0;
  bool any = false, unknown = false;
  for (const auto& [key, rate] : {std::pair{"vram", bw.device}, std::pair{"host", bw.host}, std::pair{"pcie", bw.pcie}}) {
    if (!bytes.contains(key) || bytes[key].is_null()) continue;
    if (rate <= 0) {
      unknown = true;
      continue;
    }
    limit_s = std::max(limit_s, bytes[key].get<double>() / rate);
    any = true;
  }
  out["limit_ms"] = any && !unknown ? json(1e3 * limit_s) : json(nullptr);
  return out;
}

json stats_json(const ServerContext& ctx, const ServingModel& serving) {
  const runtime::EngineStats stats = serving.engine->stats();
  const runtime::FfnActivity activity = serving.engine->ffn_activity();
  const runtime::DecodeTimes times = serving.engine->decode_times();
  const json bytes = bytes_json(serving, activity, stats, times);
  const auto& engine_options = serving.engine->options();
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return {{"object", "engine.stats"},
          {"model", serving.model_id},
          {"state", state_name(stats.state)},
          {"uptime_s", now - ctx.created},
          {"device", config::device_setting_string(engine_options.model.device)},
          {"setup", serving.engine->setup_summary()},
          {"slots", {{"busy", stats.requests_running}, {"total", engine_options.n_parallel}}},
          {"queue", {{"waiting", stats.requests_waiting}, {"size", engine_options.queue_size}}},
          {"kv", {{"used", stats.kv_tokens_used}, {"cached", stats.kv_tokens_cached},
                  {"capacity", stats.kv_tokens_capacity}}},
          {"tokens", {{"prompt_total", stats.prompt_tokens_total},
                      {"cached_total", stats.cached_tokens_total},
                      {"generated_total", stats.generated_tokens_total},
                      {"steps_total", stats.steps_total},
                      {"drafted_total", stats.draft_tokens_total},
                      {"draft_kept_total", stats.draft_tokens_accepted_total}}},
          {"ffn", ffn_json(activity, serving.model->spec)},
          {"bytes_per_token", bytes},
          {"time_per_token", time_json(times, bytes, serving.engine->bandwidths())},
          {"firing_curve", serving.model->stats_file.has_value()}};
}

// Per layer: ranks 1..n (the neurons that fired, hottest first) at about
// kCurvePoints log-spaced points, with firings per token.
json firing_curve_json(const sparse::ActivationStats& stats) {
  json layers = json::array();
  const double n_tokens = static_cast<double>(std::max<uint64_t>(stats.n_tokens, 1));
  for (const auto& counts : stats.fire_counts) {
    std::vector<int32_t> sorted(counts);
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    const auto n_fired = static_cast<int64_t>(std::count_if(sorted.begin(), sorted.end(), [](int32_t c) { return c > 0; }));
    json rank = json::array(), freq = json::array();
    int64_t last = 0;
    for (int i = 0; i < kCurvePoints && n_fired > 0; ++i) {
      const double x = kCurvePoints == 1 ? 0.0 : static_cast<double>(i) / (kCurvePoints - 1);
      const auto r = static_cast<int64_t>(std::llround(std::pow(static_cast<double>(n_fired), x)));
      if (r <= last) continue;
      last = r;
      rank.push_back(r);
      freq.push_back(static_cast<double>(sorted[static_cast<size_t>(r - 1)]) / n_tokens);
    }
    layers.push_back({{"rank", std::move(rank)}, {"freq", std::move(freq)}});
  }
  return {{"object", "engine.firing_curve"},
          {"model", stats.model.name},
          {"rule", std::string(sparse::firing_rule_name(stats.rule))},
          {"n_tokens", stats.n_tokens},
          {"n_ff", stats.n_ff()},
          {"layers", std::move(layers)}};
}

// The firing curve of one served model, computed on first use.
struct FiringCurveCache {
  std::mutex mutex;
  // Weak: an unloaded model is not kept mapped by its cached curve (and a
  // new model at the same address is not mistaken for it).
  std::weak_ptr<const model::LoadedModel> model;
  std::string body;   // the JSON
  std::optional<ApiError> error;
};

void log_handled(ServerContext& ctx, const httplib::Request& req, const httplib::Response& res,
                 std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string route = route_label(req.path);
  ctx.metrics.record({route, res.status});
  log_request(plain_request_line(req.method, route, res.status, seconds));
}

}  // namespace

void install_engine_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get(route_pattern("engine/stats"), [&ctx](const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    // ?model=NAME: that model's engine (if loaded); else the one used last.
    const auto serving = ctx.serving(req.get_param_value("model"));
    if (!serving) {
      send_error(res, *unavailable(ctx, nullptr));
    } else {
      // A failed or stopping engine still has stats to show; `state` says which.
      send_json(res, 200, stats_json(ctx, *serving));
      res.set_header("Cache-Control", "no-store");
    }
    log_handled(ctx, req, res, start);
  });
  auto cache = std::make_shared<FiringCurveCache>();
  http.Get(route_pattern("engine/firing_curve"), [&ctx, cache](const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    const auto serving = ctx.serving(req.get_param_value("model"));
    if (!serving) {
      send_error(res, *unavailable(ctx, nullptr));
    } else if (!serving->model->stats_file) {
      send_error(res, {404, "invalid_request_error",
                       "no activation stats file is loaded (serve --stats FILE from `thermocline profile`)",
                       "no_stats_file", ""});
    } else {
      std::lock_guard lock(cache->mutex);
      if (cache->model.lock() != serving->model) {
        cache->model = serving->model;
        cache->error.reset();
        try {
          cache->body = dump_json(firing_curve_json(sparse::read_activation_stats(*serving->model->stats_file)));
        } catch (const std::exception& e) {
          cache->error = ApiError{500, "server_error", std::string("cannot read the stats file: ") + e.what(), "", ""};
        }
      }
      if (cache->error) {
        send_error(res, *cache->error);
      } else {
        res.status = 200;
        res.set_content(cache->body, "application/json");
      }
    }
    log_handled(ctx, req, res, start);
  });
}

}  // namespace tc::server
