// Loading one model for serving: the GGUF (with its stats file), the chat
// template (a template file, the model's own, or ChatML), and an Engine set
// up from the serve options; returns once the engine is Ready. Used by the
// ModelRegistry for every model it loads. Blocking; call it off the HTTP
// threads.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "config/serve_options.h"
#include "engine/runtime/engine.h"
#include "server/server_context.h"

namespace tc::server {

// The engine's options as `o` says (validated options: the parses here do not throw).
runtime::EngineOptions engine_options(const config::ServeOptions& o);

// Why a model could not be loaded; what() names the file and the reason.
class ModelLoadFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads `path` as `model_id` with the options of `o` (stats, chat_template_file,
// engine and device settings). Throws ModelLoadFailure naming the file and
// the reason (a bad GGUF, a stats file that does not match, a chat template
// file that cannot be read, an engine that fails to start). A chat template
// that does not parse is no failure: chat requests get a 400 saying why.
std::shared_ptr<ServingModel> load_serving_model(const std::filesystem::path& path, const config::ServeOptions& o,
                                                 const std::string& model_id);

// The loader a server's ModelRegistry uses: load_serving_model, each load
// first pausing THERMOCLINE_TEST_LOAD_DELAY_MS milliseconds when that
// variable is set -- a test hook, for the end-to-end tests of requests that
// wait for a load (a test model loads too quickly to watch one wait).
ModelLoadFunction default_model_loader();

}  // namespace tc::server
