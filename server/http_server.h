// HttpServer: the OpenAI- and Ollama-compatible HTTP front door
// (cpp-httplib stays inside server/). It listens before any model is loaded
// (one model: /health says 503 "loading" until it is; a models folder:
// models load on demand), checks API keys and CORS on every route but
// /health, and maps every failure to an OpenAI (or Ollama) error body.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/serve_options.h"

namespace tc::model {
struct LoadedModel;
}
namespace tc::runtime {
class Engine;
}
namespace tc::text {
class ChatTemplate;
}

namespace tc::server {

class HttpServer {
 public:
  explicit HttpServer(config::ServeOptions options);
  ~HttpServer();

  // Thread-safe: the model is loaded and its engine starting; routes answer
  // once the engine is Ready. `model_id` is what /v1/models lists. A null
  // `chat_template` makes chat requests a 400 carrying `chat_template_error`.
  void publish(std::shared_ptr<const model::LoadedModel> model, std::shared_ptr<runtime::Engine> engine,
               std::shared_ptr<const text::ChatTemplate> chat_template, std::string chat_template_error,
               std::string model_id);
  // Thread-safe: loading failed; /health answers 503 with `message`.
  void set_load_error(std::string message);

  // Loads the models: the one model of options.model (blocking until its
  // engine is Ready; false when that failed, the reason logged and served
  // in errors), or scans options.models_dir and starts watching it (models
  // load on demand). Call once, from any thread, after run() is listening.
  bool load_models();
  // The ids served (names of the folder's models, or the one model's id).
  std::vector<std::string> model_ids() const;
  // Thread-safe: stops loading, shuts every engine down within `grace`
  // (finishing or cancelling their requests), in parallel.
  void shutdown_models(std::chrono::milliseconds grace);

  // Binds and serves until stop(); calls on_ready once listening. Returns
  // false (with a message in error()) when the address cannot be bound.
  // Port 0 binds any free port; bound_port() tells which.
  bool run(const std::function<void()>& on_ready = {});
  // The port run() bound (valid from on_ready on; -1 before).
  int bound_port() const { return bound_port_; }
  // Thread-safe: new generation requests get 503 "shutting down"; requests
  // in flight go on.
  void begin_drain();
  // Thread-safe; stops listening and makes run() return once the handlers
  // in flight are done.
  void stop();
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
  std::atomic<int> bound_port_{-1};
};

}  // namespace tc::server
