// HttpServer: the OpenAI-compatible HTTP front door (cpp-httplib stays
// inside server/). Today it serves the model's facts and its tokenizer;
// completions arrive with the engine. Handlers never throw: every failure is
// an OpenAI error body.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/serve_options.h"

namespace tc::model {
struct LoadedModel;
}

namespace tc::server {

class HttpServer {
 public:
  HttpServer(config::ServeOptions options, std::shared_ptr<const model::LoadedModel> model);
  ~HttpServer();

  // Binds and serves until stop(); calls on_ready once listening. Returns
  // false (with a message in error()) when the address cannot be bound.
  bool run(const std::function<void()>& on_ready = {});
  // Thread-safe; makes run() return.
  void stop();
  const std::string& error() const { return error_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string error_;
};

}  // namespace tc::server
