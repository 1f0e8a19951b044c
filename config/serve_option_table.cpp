// The serve option table and the per-kind parsing, formatting and checks
// that every source (flags, env, TOML) and --print-config share.
#include "config/serve_option_table.h"

#include <array>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "config/byte_size.h"
#include "config/device_setting.h"
#include "config/gpu_split_setting.h"
#include "config/keep_alive.h"
#include "config/sparsity_setting.h"
#include "config/text_util.h"

namespace tc::config {
namespace {

constexpr std::array<std::string_view, 6> kLogLevels = {"trace", "debug", "info", "warn", "error", "off"};
constexpr std::array<std::string_view, 2> kLogFormats = {"text", "json"};
constexpr std::array<std::string_view, 3> kPrefetchChoices = {kPrefetchValues[0], kPrefetchValues[1],
                                                              kPrefetchValues[2]};
constexpr std::array<std::string_view, 2> kRepackChoices = {"auto", "off"};
constexpr std::array<std::string_view, 2> kCacheTypeChoices = {"f16", "q8_0"};
constexpr std::array<std::string_view, 4> kPoolingChoices = {"auto", "last", "mean", "cls"};
constexpr std::array<std::string_view, 3> kReasoningFormatChoices = {"auto", "deepseek", "none"};
constexpr std::array<std::string_view, 1> kPlacementKeywords = {kPlacementAuto};

bool has_space_or_control(std::string_view s) {
  for (unsigned char c : s) {
    if (std::isspace(c) || std::iscntrl(c)) return true;
  }
  return false;
}

std::optional<std::string> check_host(const ServeOptions& o) {
  if (o.host.empty()) return "must not be empty";
  if (has_space_or_control(o.host)) return "must not contain whitespace, got \"" + o.host + "\"";
  return std::nullopt;
}

std::optional<std::string> check_sparsity(const ServeOptions& o) {
  try {
    parse_sparsity_setting(o.sparsity);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return std::nullopt;
}

std::optional<std::string> check_device(const ServeOptions& o) {
  try {
    parse_device_setting(o.device);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return std::nullopt;
}

// The GPU split's problem that belongs to `option`'s key. One parse checks
// the four keys together; each key reports the problems about itself, so
// whichever is found first is named under the right key.
std::optional<std::string> gpu_split_problem(const ServeOptions& o, GpuSplitOption option) {
  DeviceSetting device;
  try {
    device = parse_device_setting(o.device);
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the device key reports it
  }
  try {
    parse_gpu_split_setting(device, o.placement.string(), o.offload_layers, o.vram_budget, o.prefetch);
  } catch (const GpuSplitError& e) {
    if (e.option() == option) return e.what();
  }
  return std::nullopt;
}

std::optional<std::string> check_placement(const ServeOptions& o) {
  return gpu_split_problem(o, GpuSplitOption::Placement);
}
std::optional<std::string> check_offload_layers(const ServeOptions& o) {
  return gpu_split_problem(o, GpuSplitOption::OffloadLayers);
}
std::optional<std::string> check_vram_budget(const ServeOptions& o) {
  return gpu_split_problem(o, GpuSplitOption::VramBudget);
}
std::optional<std::string> check_prefetch(const ServeOptions& o) {
  return gpu_split_problem(o, GpuSplitOption::Prefetch);
}

std::optional<std::string> check_api_keys(const ServeOptions& o) {
  const size_t n = o.api_keys.size();
  for (size_t i = 0; i < n; ++i) {
    if (auto problem = api_key_problem(o.api_keys[i])) {
      return "key " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + *problem;
    }
  }
  return std::nullopt;
}

// An Origin header is scheme://host[:port], no path, no trailing slash.
std::optional<std::string> check_cors_origins(const ServeOptions& o) {
  for (const std::string& origin : o.cors_origins) {
    if (origin == "*") continue;
    const size_t scheme_end = origin.find("://");
    const bool ok = scheme_end != std::string::npos && scheme_end > 0 && scheme_end + 3 < origin.size() &&
                    origin.find('/', scheme_end + 3) == std::string::npos && !has_space_or_control(origin) &&
                    origin.find(',') == std::string::npos;
    if (!ok) {
      return "\"" + origin +
             "\" is not \"*\" or an origin like \"https://example.com\" (scheme://host[:port], no path)";
    }
  }
  return std::nullopt;
}

std::optional<std::string> check_models_dir(const ServeOptions& o) {
  if (!o.models_dir.empty() && !o.model.empty()) {
    return "cannot be used together with model (serve one file with model, or a folder of them with models_dir)";
  }
  return std::nullopt;
}

std::optional<std::string> check_keep_alive(const ServeOptions& o) {
  if (o.keep_alive.empty()) return std::nullopt;
  try {
    parse_keep_alive(o.keep_alive);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return std::nullopt;
}

std::optional<std::string> byte_size_problem(const std::string& text) {
  if (text.empty()) return std::nullopt;
  try {
    if (parse_byte_size(text) == 0) return "must be more than 0 bytes";
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return std::nullopt;
}
std::optional<std::string> check_models_ram_budget(const ServeOptions& o) { return byte_size_problem(o.models_ram_budget); }
std::optional<std::string> check_models_vram_budget(const ServeOptions& o) {
  return byte_size_problem(o.models_vram_budget);
}

const OptionDescriptor kTable[] = {
    // Listening and the model.
    {.key = "host", .flags = "--host", .help = "Bind address (IP address or host name)",
     .field = &ServeOptions::host, .check = check_host},
    {.key = "port", .flags = "--port", .help = "TCP port (0: any free port, printed at start)", .field = &ServeOptions::port, .min = 0, .max = 65535},
    {.key = "model", .flags = "-m,--model", .help = "GGUF model file; empty: the bundled default model",
     .field = &ServeOptions::model},
    {.key = "model_alias", .flags = "--alias,--model-alias",
     .help = "Model id shown in /v1/models; empty: the model file's stem", .field = &ServeOptions::model_alias},
    {.key = "chat_template_file", .flags = "--chat-template,--chat-template-file",
     .help = "Jinja chat template file used instead of the model's own", .field = &ServeOptions::chat_template_file},
    {.key = "mmproj", .flags = "--mmproj",
     .help = "Vision projector GGUF (llama.cpp's mmproj file) for the model: chat messages may carry images",
     .field = &ServeOptions::mmproj},
    {.key = "http_threads", .flags = "--http-threads", .help = "HTTP worker threads",
     .field = &ServeOptions::http_threads, .min = 1, .max = 1024},
    {.key = "models_dir", .flags = "--models-dir",
     .help = "Folder of GGUF models (subfolders three deep too) served by their path from it without .gguf, "
             "loaded on demand; NAME.toml beside a model holds its own options",
     .field = &ServeOptions::models_dir, .check = check_models_dir},
    {.key = "max_loaded_models", .flags = "--max-loaded-models",
     .help = "Models loaded at once at most; loading one more unloads the least recently used idle model, or "
             "has the least recently used busy one give way (its new requests wait until it has loaded again)",
     .field = &ServeOptions::max_loaded_models, .min = 1, .max = 1024},
    {.key = "keep_alive", .flags = "--keep-alive",
     .help = "How long an idle model stays loaded: a duration (5m, 1h, 30s), 0: unload when idle, -1: never; "
             "empty: 5m with models_dir, -1 with one model",
     .field = &ServeOptions::keep_alive, .check = check_keep_alive},
    {.key = "models_ram_budget", .flags = "--models-ram-budget",
     .help = "Host memory the loaded models may take together (mapped file + KV cache, measured), e.g. 24GiB; "
             "empty: 90% of physical memory",
     .field = &ServeOptions::models_ram_budget, .check = check_models_ram_budget},
    {.key = "models_vram_budget", .flags = "--models-vram-budget",
     .help = "GPU memory the loaded models may take together (measured around each load), e.g. 20GiB; empty: "
             "free VRAM at start minus a margin",
     .field = &ServeOptions::models_vram_budget, .check = check_models_vram_budget},
    {.key = "load_timeout_s", .flags = "--load-timeout-s",
     .help = "Seconds a request waits for its model to load (room to load it included) before a 503; 0: no limit",
     .field = &ServeOptions::load_timeout_s, .min = 0, .max = 86400},
    // Engine.
    {.key = "parallel", .flags = "--parallel", .help = "Sequence slots decoded together (continuous batching)",
     .field = &ServeOptions::parallel, .min = 1, .max = 256},
    {.key = "ctx_size", .flags = "-c,--ctx-size", .help = "Context per slot in tokens, capped at the model's",
     .field = &ServeOptions::ctx_size, .min = 16, .max = 1 << 20},
    {.key = "batch_size", .flags = "--batch-size", .help = "Tokens per engine step at most",
     .field = &ServeOptions::batch_size, .min = 1, .max = 1 << 20},
    {.key = "lookup_draft", .flags = "--lookup-draft",
     .help = "Speculative decoding without a draft model: each decode step also runs up to N tokens that followed "
             "the reply's latest 3-5 tokens earlier in its context, and keeps those sampling draws (the same "
             "tokens, fewer steps where replies repeat their context); 0: off; requests may set `draft_max`",
     .field = &ServeOptions::lookup_draft, .min = 0, .max = 256},
    {.key = "queue_size", .flags = "--queue-size", .help = "Requests waiting for a slot before new ones get 503",
     .field = &ServeOptions::queue_size, .min = 0, .max = 100000},
    {.key = "threads", .flags = "-t,--threads", .help = "CPU worker threads; 0: one per physical core",
     .field = &ServeOptions::threads, .min = 0, .max = 1024},
    {.key = "device", .flags = "--device",
     .help = "cpu | cuda | cuda:N: the backend that runs the model (CUDA: the dense FFN, or the GPU split of "
             "placement, offload_layers or vram_budget)",
     .field = &ServeOptions::device, .check = check_device},
    {.key = "stats", .flags = "--stats",
     .help = "Stats file from `thermocline profile` recorded on this model (predictors, TEAL thresholds)",
     .field = &ServeOptions::stats},
    {.key = "sparsity", .flags = "--sparsity",
     .help = "dense | auto (sparse FFN when predictors exist) | relu (sparse FFN, required) | teal:X (TEAL at "
             "target sparsity X, thresholds from stats)",
     .field = &ServeOptions::sparsity, .check = check_sparsity},
    {.key = "sparse_max_tokens", .flags = "--sparse-max-tokens",
     .help = "Sparse mode: prompt chunks of at most this many tokens run the sparse FFN too (generated tokens "
             "always do); 0: prompts run dense",
     .field = &ServeOptions::sparse_max_tokens, .min = 0, .max = 65536},
    {.key = "repack", .flags = "--repack",
     .help = "CPU: Q4_0, Q4_1, Q8_0, Q3_K, Q4_K, Q5_K and Q6_K matrices (and Q5_0, Q5_1, IQ4_XS and IQ4_NL "
             "on AVX2) repacked at load into the matmul's lane layouts (auto: on x86 with AVX2 or AVX-512) or kept "
             "in the file's row layout (off, for comparisons)",
     .field = &ServeOptions::repack, .choices = kRepackChoices},
    {.key = "cache_type_k", .flags = "--cache-type-k",
     .help = "The KV cache's keys: f16, or q8_0 (8-bit blocks as llama.cpp's: about half the memory and the bytes "
             "a long context's decode reads; CPU backend only)",
     .field = &ServeOptions::cache_type_k, .choices = kCacheTypeChoices},
    {.key = "cache_type_v", .flags = "--cache-type-v",
     .help = "The KV cache's values: f16 or q8_0, as cache_type_k",
     .field = &ServeOptions::cache_type_v, .choices = kCacheTypeChoices},
    {.key = "pooling", .flags = "--pooling",
     .help = "Embeddings (/v1/embeddings, /api/embed): how a text's token states are pooled: last token, mean "
             "or first token (cls); auto: the model file's pooling_type, else last",
     .field = &ServeOptions::pooling, .choices = kPoolingChoices},
    {.key = "reasoning_format", .flags = "--reasoning-format",
     .help = "Chat: a thinking model's leading <think>...</think> goes to the message's reasoning_content "
             "(auto, deepseek) or stays in its content (none); a request's reasoning_format overrides it",
     .field = &ServeOptions::reasoning_format, .choices = kReasoningFormatChoices},
    {.key = "placement", .flags = "--placement",
     .help = "Hybrid mode (device cuda): the hot neurons of this .gpuidx (from `thermocline place`) on the GPU, "
             "the cold ones on the CPU; auto: solve the placement at start from stats within vram_budget",
     .field = &ServeOptions::placement, .keywords = kPlacementKeywords, .check = check_placement},
    {.key = "prefetch", .flags = "--prefetch",
     .help = "Hybrid mode: copy the cold neurons the next layer is predicted to use into a VRAM cache while the "
             "GPU computes: on | off | auto (a per-layer cost model on measured bandwidths decides)",
     .field = &ServeOptions::prefetch, .choices = kPrefetchChoices, .check = check_prefetch},
    {.key = "time_split", .flags = "--time-split,!--no-time-split",
     .help = "Hybrid mode: time each decode step's GPU, CPU and waits for the engine view (timing events on the "
             "GPU's stream, a small cost per layer)",
     .field = &ServeOptions::time_split},
    {.key = "offload_layers", .flags = "--offload-layers",
     .help = "Layer offload (device cuda, dense FFN): the first K layers on the GPU, the rest on the CPU; -1: off",
     .field = &ServeOptions::offload_layers, .min = -1, .max = 1 << 20, .check = check_offload_layers},
    {.key = "vram_budget", .flags = "--vram-budget",
     .help = "VRAM bytes (12GiB, 800MiB): with placement auto the solver's budget (default: free VRAM minus a "
             "margin); alone, layer offload with the largest K that fits",
     .field = &ServeOptions::vram_budget, .check = check_vram_budget},
    // Per-request limits.
    {.key = "max_tokens_cap", .flags = "--max-tokens-cap",
     .help = "Largest max_tokens a request may ask for (larger is a 400); 0: the context size",
     .field = &ServeOptions::max_tokens_cap, .min = 0},
    {.key = "context_shift", .flags = "--context-shift,!--no-context-shift",
     .help = "OpenAI routes: by default, a reply that fills the context drops the context's oldest half (after "
             "n_keep tokens) and goes on; requests say `context_shift` themselves; Ollama's routes default on",
     .field = &ServeOptions::context_shift},
    {.key = "max_n", .flags = "--max-n", .help = "Most choices (`n`) per request", .field = &ServeOptions::max_n,
     .min = 1, .max = 128},
    {.key = "max_stop", .flags = "--max-stop", .help = "Most stop strings per request",
     .field = &ServeOptions::max_stop, .min = 0, .max = 1024},
    {.key = "max_stop_bytes", .flags = "--max-stop-bytes", .help = "Longest stop string in bytes",
     .field = &ServeOptions::max_stop_bytes, .min = 1, .max = 65536},
    {.key = "max_top_logprobs", .flags = "--max-top-logprobs", .help = "Most top_logprobs / logprobs per token",
     .field = &ServeOptions::max_top_logprobs, .min = 0, .max = 20},
    {.key = "request_timeout_s", .flags = "--request-timeout-s",
     .help = "Generation time limit per request in seconds; 0: none", .field = &ServeOptions::request_timeout_s,
     .min = 0},
    {.key = "max_body_bytes", .flags = "--max-body-bytes", .help = "Request body limit in bytes (larger is a 413)",
     .field = &ServeOptions::max_body_bytes, .min = 1024},
    // HTTP connections.
    {.key = "http_request_timeout_s", .flags = "--http-request-timeout-s",
     .help = "Seconds from a request's first byte within which its head and body must have arrived (else 408 and "
             "the connection closes)",
     .field = &ServeOptions::http_request_timeout_s, .min = 0.1, .max = 86400},
    {.key = "http_keep_alive_s", .flags = "--http-keep-alive-s",
     .help = "Seconds an idle keep-alive connection stays open; 0: one request per connection",
     .field = &ServeOptions::http_keep_alive_s, .min = 0, .max = 86400},
    {.key = "http_write_timeout_s", .flags = "--http-write-timeout-s",
     .help = "Seconds a response write may wait for a client that reads nothing before it is dropped",
     .field = &ServeOptions::http_write_timeout_s, .min = 0.1, .max = 86400},
    {.key = "http_max_header_bytes", .flags = "--http-max-header-bytes",
     .help = "Request line and headers in bytes at most (larger is a 431; a request line over 8 KiB a 414)",
     .field = &ServeOptions::http_max_header_bytes, .min = 1024, .max = 1 << 20},
    {.key = "http_max_headers", .flags = "--http-max-headers", .help = "Header fields per request at most (more is a 431)",
     .field = &ServeOptions::http_max_headers, .min = 1, .max = 10000},
    {.key = "http_max_connections", .flags = "--http-max-connections",
     .help = "Open client connections at most; more are answered 503 and closed",
     .field = &ServeOptions::http_max_connections, .min = 16, .max = 1000000},
    // Security.
    {.key = "api_keys", .flags = "--api-key,--api-keys",
     .help = "Accepted API key (repeatable, or comma-separated; env THERMOCLINE_API_KEY adds one); none: auth off",
     .field = &ServeOptions::api_keys, .check = check_api_keys},
    {.key = "api_key_file", .flags = "--api-key-file",
     .help = "File of API keys, one per line, '#' comments; added to api_keys", .field = &ServeOptions::api_key_file},
    {.key = "cors_origins", .flags = "--cors-origin,--cors-origins",
     .help = "Allowed CORS origin (repeatable, or comma-separated); \"*\": any; none: CORS off",
     .field = &ServeOptions::cors_origins, .check = check_cors_origins},
    // Operations.
    {.key = "shutdown_grace_s", .flags = "--shutdown-grace-s",
     .help = "Seconds to finish in-flight requests after SIGTERM/SIGINT", .field = &ServeOptions::shutdown_grace_s,
     .min = 0},
    {.key = "sse_ping_s", .flags = "--sse-ping-s",
     .help = "Seconds of silence after which a stream gets an SSE ': ping' comment (queued or in a long prefill)",
     .field = &ServeOptions::sse_ping_s, .min = 0},
    {.key = "log_level", .flags = "--log-level", .help = "Log level", .field = &ServeOptions::log_level,
     .choices = kLogLevels},
    {.key = "log_format", .flags = "--log-format", .help = "Log line format (one line per request either way)",
     .field = &ServeOptions::log_format, .choices = kLogFormats},
    {.key = "webui", .flags = "--webui,!--no-webui",
     .help = "Serve the built-in web page (chat and engine view) at GET /; --no-webui: a 404 there",
     .field = &ServeOptions::webui},
};

std::string format_number(double v) {
  std::array<char, 64> buf{};
  const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), res.ptr);
}

}  // namespace

// Keys are secrets: the problem never quotes the key.
std::optional<std::string> api_key_problem(std::string_view key) {
  if (key.empty()) return "is empty";
  if (has_space_or_control(key)) return "contains whitespace or a control character";
  if (key.find(',') != std::string_view::npos) return "contains ',' (lists in env and flags split at commas)";
  return std::nullopt;
}

std::span<const OptionDescriptor> serve_option_table() { return kTable; }

const OptionDescriptor* find_serve_option(std::string_view key) {
  for (const auto& d : kTable) {
    if (d.key == key) return &d;
  }
  return nullptr;
}

std::string OptionDescriptor::env_name() const {
  std::string name = "THERMOCLINE_";
  for (char c : key) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

std::string OptionDescriptor::long_flag() const {
  std::string flag = "--";
  for (char c : key) flag += c == '_' ? '-' : c;
  return flag;
}

std::string OptionDescriptor::range_text() const {
  if (numeric()) {
    if (max) return format_number(min) + ".." + format_number(*max);
    return ">= " + format_number(min);
  }
  std::string out;
  for (auto c : choices) {
    if (!out.empty()) out += '|';
    out += c;
  }
  return out;
}

void OptionDescriptor::set_from_text(ServeOptions& o, std::string_view text, const std::string& source) const {
  const std::string_view t = trim(text);
  const auto bad = [&](const std::string& problem) { throw ConfigError(std::string(key), problem, source); };
  switch (kind()) {
    case OptionKind::String:
      o.*std::get<std::string ServeOptions::*>(field) = std::string(t);
      return;
    case OptionKind::Path:
      o.*std::get<std::filesystem::path ServeOptions::*>(field) = std::filesystem::path(std::string(t));
      return;
    case OptionKind::Int:
    case OptionKind::Int64: {
      int64_t v = 0;
      const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
      if (res.ec == std::errc::result_out_of_range ||
          (res.ec == std::errc() && res.ptr == t.data() + t.size() && kind() == OptionKind::Int &&
           (v < INT_MIN || v > INT_MAX))) {
        bad("must be in " + range_text() + ", got " + std::string(t));
      }
      if (res.ec != std::errc() || res.ptr != t.data() + t.size() || t.empty()) {
        bad("cannot parse \"" + std::string(text) + "\" as an integer");
      }
      if (kind() == OptionKind::Int) {
        o.*std::get<int ServeOptions::*>(field) = static_cast<int>(v);
      } else {
        o.*std::get<int64_t ServeOptions::*>(field) = v;
      }
      return;
    }
    case OptionKind::Double: {
      double v = 0;
      const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
      if (res.ec != std::errc() || res.ptr != t.data() + t.size() || t.empty()) {
        bad("cannot parse \"" + std::string(text) + "\" as a number");
      }
      o.*std::get<double ServeOptions::*>(field) = v;
      return;
    }
    case OptionKind::StringList:
      o.*std::get<std::vector<std::string> ServeOptions::*>(field) = split_list(text);
      return;
    case OptionKind::Bool: {
      std::string lower(t);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      bool v = false;
      if (lower == "true" || lower == "1" || lower == "on" || lower == "yes") {
        v = true;
      } else if (!(lower == "false" || lower == "0" || lower == "off" || lower == "no")) {
        bad("cannot parse \"" + std::string(text) + "\" as a boolean (true|false|1|0|on|off|yes|no)");
      }
      o.*std::get<bool ServeOptions::*>(field) = v;
      return;
    }
  }
}

void OptionDescriptor::set_list(ServeOptions& o, const std::vector<std::string>& items) const {
  if (kind() != OptionKind::StringList) throw std::logic_error("set_list on non-list key " + std::string(key));
  std::vector<std::string> out;
  for (const auto& item : items) {
    for (auto& part : split_list(item)) out.push_back(std::move(part));
  }
  o.*std::get<std::vector<std::string> ServeOptions::*>(field) = std::move(out);
}

std::string OptionDescriptor::toml_value(const ServeOptions& o, bool mask) const {
  switch (kind()) {
    case OptionKind::String:
      return toml_quote(o.*std::get<std::string ServeOptions::*>(field));
    case OptionKind::Path:
      return toml_quote((o.*std::get<std::filesystem::path ServeOptions::*>(field)).string());
    case OptionKind::Int:
      return std::to_string(o.*std::get<int ServeOptions::*>(field));
    case OptionKind::Int64:
      return std::to_string(o.*std::get<int64_t ServeOptions::*>(field));
    case OptionKind::Double: {
      std::string s = format_number(o.*std::get<double ServeOptions::*>(field));
      // TOML needs a '.' or an exponent to read a float back as a float.
      if (s.find_first_of(".eIn") == std::string::npos) s += ".0";
      return s;
    }
    case OptionKind::StringList: {
      const bool secret = mask && key == "api_keys";
      std::string out = "[";
      for (const auto& item : o.*std::get<std::vector<std::string> ServeOptions::*>(field)) {
        if (out.size() > 1) out += ", ";
        out += toml_quote(secret ? "***" : item);
      }
      return out + "]";
    }
    case OptionKind::Bool:
      return o.*std::get<bool ServeOptions::*>(field) ? "true" : "false";
  }
  return "";
}

std::optional<std::string> OptionDescriptor::problem(const ServeOptions& o) const {
  if (numeric()) {
    double v = 0;
    std::string shown;
    switch (kind()) {
      case OptionKind::Int:
        v = o.*std::get<int ServeOptions::*>(field);
        shown = std::to_string(o.*std::get<int ServeOptions::*>(field));
        break;
      case OptionKind::Int64:
        v = static_cast<double>(o.*std::get<int64_t ServeOptions::*>(field));
        shown = std::to_string(o.*std::get<int64_t ServeOptions::*>(field));
        break;
      default:
        v = o.*std::get<double ServeOptions::*>(field);
        shown = format_number(v);
        if (!std::isfinite(v)) return "must be a finite number, got " + shown;
        break;
    }
    if (!(v >= min) || (max && v > *max)) {
      return "must be " + (max ? "in " : std::string()) + range_text() + ", got " + shown;
    }
  }
  if (!choices.empty()) {
    const std::string& v = o.*std::get<std::string ServeOptions::*>(field);
    bool found = false;
    for (auto c : choices) found = found || c == v;
    if (!found) return "must be one of " + range_text() + ", got \"" + v + "\"";
  }
  if (check) return check(o);
  return std::nullopt;
}

}  // namespace tc::config
