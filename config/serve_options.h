// Options of `thermocline serve` and their validation. Each field's key is
// its TOML key, its THERMOCLINE_<KEY> environment variable and its
// --<key-with-dashes> flag; precedence flags > env > file > defaults.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/sparsity_setting.h"

namespace tc::config {

// A configuration value that cannot be used; the message names the key and,
// when known, where the value came from ("flag --port", "env THERMOCLINE_PORT",
// "file serve.toml:3:1", "default").
class ConfigError : public std::runtime_error {
 public:
  ConfigError(const std::string& key, const std::string& problem, const std::string& source = "")
      : std::runtime_error("config '" + key + "'" + (source.empty() ? "" : " (" + source + ")") + ": " + problem),
        key_(key),
        source_(source) {}
  const std::string& key() const { return key_; }
  const std::string& source() const { return source_; }

 private:
  std::string key_;
  std::string source_;
};

struct ServeOptions {
  // Listening and the model.
  std::string host = "127.0.0.1";   // bind address (key: host)
  int port = 8080;                  // TCP port (key: port)
  std::filesystem::path model;      // GGUF file (key: model); empty: the bundled default model
  std::string model_alias;          // id shown in /v1/models (key: model_alias); empty: file stem
  std::filesystem::path chat_template_file;  // Jinja file overriding the GGUF's template (key: chat_template_file)
  // A vision projector (llama.cpp's mmproj GGUF) for the model: chat
  // messages may carry images (key: mmproj); empty: text only.
  std::filesystem::path mmproj;
  // The models folder paired `mmproj` with the model (the one projector
  // beside it), not the user: one that cannot serve (a projector type not
  // supported, another model's width) leaves the model text only, with a
  // warning, where a projector asked for fails the load.
  bool mmproj_beside = false;
  int http_threads = 8;             // HTTP worker threads (key: http_threads)

  // Many models (server/model_registry.h). A folder whose *.gguf files are
  // served by name (file name without extension), loaded on demand; excludes
  // `model` (key: models_dir).
  std::filesystem::path models_dir;
  int max_loaded_models = 3;        // models loaded at once at most (key: max_loaded_models)
  // How long an idle model stays loaded: a duration ("5m", "1h", "30s"), 0 =
  // unload when idle, -1 = never; empty: 5m with models_dir, -1 with one
  // model (key: keep_alive).
  std::string keep_alive;
  // Bytes ("24GiB") the loaded models may take in host memory together
  // (mapped file + KV cache, measured); empty: 90% of MemTotal (key: models_ram_budget).
  std::string models_ram_budget;
  // Bytes the loaded models may take on the GPU together (measured by
  // cudaMemGetInfo around each load); empty: free VRAM at start minus a
  // margin (key: models_vram_budget).
  std::string models_vram_budget;
  // Seconds a request waits for its model to load, room to load it
  // included, before it gets a 503; 0 = no limit (key: load_timeout_s).
  double load_timeout_s = 300;

  // Engine.
  int parallel = 4;                 // sequence slots batched together (key: parallel)
  int64_t ctx_size = 4096;          // context per slot in tokens (key: ctx_size); capped at the model's
  int64_t batch_size = 512;         // tokens per engine step at most (key: batch_size)
  // Lookup drafts per decode step at most (speculative decoding from the
  // sequence's own context, engine/runtime/lookup_draft.h); 0: off (key: lookup_draft).
  int lookup_draft = 0;
  int queue_size = 64;              // waiting requests before 503 (key: queue_size)
  int threads = 0;                  // CPU worker threads, 0 = physical cores (key: threads)
  std::string device = "cpu";       // cpu|cuda|cuda:N: the backend that runs the model (key: device)
  std::filesystem::path stats;      // `thermocline profile` stats file: predictors, TEAL thresholds (key: stats)
  std::string sparsity = "auto";    // dense|auto|relu|teal:X (key: sparsity)
  // Sparse mode: prompt chunks of at most this many tokens run the sparse FFN
  // too; generated tokens always do (key: sparse_max_tokens).
  int64_t sparse_max_tokens = kDefaultSparseMaxTokens;
  // CPU backend: whether Q4_0, Q4_1, Q8_0, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS matrices are repacked at
  // load for the matmul: auto|off, kernels/cpu/q4_lanes16.h's CpuRepack (key: repack).
  std::string repack = "auto";
  // The KV cache's element types: f16|q8_0 (q8_0: about half the memory,
  // CPU backend only), of its keys (key: cache_type_k) and of its values
  // (key: cache_type_v).
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  // Embeddings: how a text's output-normed token states are pooled:
  // auto|last|mean|cls; auto: the GGUF's {arch}.pooling_type, else last (key: pooling).
  std::string pooling = "auto";
  // Chat replies of thinking models: auto|deepseek put a leading
  // <think>...</think> in `reasoning_content` (Ollama: `thinking`, with
  // think: true), none leaves it in the content (key: reasoning_format).
  std::string reasoning_format = "auto";
  // The GPU split (config/gpu_split_setting.h), device cuda only. Hybrid
  // mode: a .gpuidx placement file, or "auto" to solve it at start from
  // `stats` (key: placement); empty: none.
  std::filesystem::path placement;
  // Hybrid mode's prefetch path into a VRAM neuron cache: on|off|auto (key: prefetch).
  std::string prefetch = "auto";
  // Hybrid mode: time the decode steps' GPU, CPU and waits (key: time_split).
  bool time_split = false;
  int64_t offload_layers = -1;      // layer offload: the first K layers on the GPU; -1: off (key: offload_layers)
  // Bytes ("12GiB"): the solver's budget with placement "auto" (empty: free
  // VRAM minus a margin); alone, layer offload with the largest K that fits (key: vram_budget).
  std::string vram_budget;

  // Per-request limits.
  int64_t max_tokens_cap = 0;       // max_tokens above this is a 400; 0 = the context size (key: max_tokens_cap)
  // The OpenAI routes' default for a request's `context_shift` (a full
  // context drops its oldest half and generation goes on); Ollama's routes
  // default to on, as Ollama's `shift` does (key: context_shift).
  bool context_shift = false;
  int max_n = 8;                    // `n` choices at most (key: max_n)
  int max_stop = 16;                // stop strings at most (key: max_stop)
  int max_stop_bytes = 256;         // bytes per stop string at most (key: max_stop_bytes)
  int max_top_logprobs = 20;        // top_logprobs / logprobs at most, <= 20 (key: max_top_logprobs)
  double request_timeout_s = 600;   // generation time limit per request, 0 = none (key: request_timeout_s)
  int64_t max_body_bytes = 8 << 20; // request body limit, larger is a 413 (key: max_body_bytes)

  // HTTP connections: what a client may take of the server (server/http/).
  double http_request_timeout_s = 30;  // a request's head and body must arrive within this (key: http_request_timeout_s)
  double http_keep_alive_s = 5;        // idle keep-alive connections close after this; 0 = none (key: http_keep_alive_s)
  double http_write_timeout_s = 10;    // a response write stalled this long drops the client (key: http_write_timeout_s)
  int http_max_header_bytes = 16384;   // request line + headers, larger is a 431 (key: http_max_header_bytes)
  int http_max_headers = 100;          // header fields per request, more is a 431 (key: http_max_headers)
  int http_max_connections = 1024;     // open connections, more are answered 503 (key: http_max_connections)

  // Security.
  std::vector<std::string> api_keys;          // accepted keys; empty = auth off (key: api_keys)
  std::filesystem::path api_key_file;         // one key per line, '#' comments (key: api_key_file)
  std::vector<std::string> cors_origins;      // allowed Origins, "*" = any; empty = CORS off (key: cors_origins)

  // Operations.
  double shutdown_grace_s = 10;     // SIGTERM: seconds to finish in-flight work (key: shutdown_grace_s)
  double sse_ping_s = 2;            // a stream silent this long (queued, long prefill) gets ": ping" (key: sse_ping_s)
  std::string log_level = "info";   // trace|debug|info|warn|error|off (key: log_level)
  std::string log_format = "text";  // text|json: one line per request either way (key: log_format)
  bool webui = true;                // the built-in web page at GET / (key: webui)
};

// Throws ConfigError naming the first invalid key (bounds and rules of
// config/serve_option_table.cpp; files are not read here).
void validate(const ServeOptions& options);

}  // namespace tc::config
