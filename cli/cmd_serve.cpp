// `thermocline serve`: listen at once (/health says 503 while loading), load
// the model and start the engine in the background (or scan the models
// folder, whose models load on demand), print the curl line when ready; SIGINT/SIGTERM stop accepting, finish or cancel in-flight
// requests within the grace period, exit 0.
#include <spdlog/spdlog.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <pthread.h>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/runners.h"
#include "config/serve_config.h"
#include "config/serve_options.h"
#include "engine/text/chat_template.h"
#include "kernels/device_info.h"
#include "server/http_server.h"
#include "server/request_log.h"

namespace tc::cli {
namespace {

// The bundled default model (models/default.gguf in the source tree): first
// where `cmake --install` puts it (<prefix>/share/thermocline/models, found
// from the binary's own path, as in the Docker images), then the source tree
// of a build-tree binary (THERMOCLINE_SOURCE_MODELS_DIR, set by CMake), then
// models/ under the working directory.
std::filesystem::path find_default_model() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path candidates[] = {
      exe.parent_path().parent_path() / "share/thermocline/models/default.gguf",
      std::filesystem::path(THERMOCLINE_SOURCE_MODELS_DIR) / "default.gguf",
      "models/default.gguf",
  };
  for (const auto& c : candidates) {
    if (std::filesystem::is_regular_file(c, ec)) return c;
  }
  return {};
}

std::string read_text_file(const std::filesystem::path& path, const char* key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config::ConfigError(key, "cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// {"time":..., "level":..., "msg":...} per line, the message escaped by
// nlohmann/json. A message that is itself a JSON object (the per-request
// line, server/request_log.h) has its fields merged in instead of "msg".
class JsonLogFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto seconds = std::chrono::duration<double>(msg.time.time_since_epoch()).count();
    const auto level = spdlog::level::to_string_view(msg.level);
    const std::string payload(msg.payload.data(), msg.payload.size());
    nlohmann::json line = {{"time", seconds}, {"level", std::string(level.data(), level.size())}};
    nlohmann::json fields = payload.starts_with('{') ? nlohmann::json::parse(payload, nullptr, false) : nlohmann::json();
    if (fields.is_object()) {
      for (auto& [key, value] : fields.items()) {
        if (!line.contains(key)) line[key] = std::move(value);
      }
    } else {
      line["msg"] = payload;
    }
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    dest.append(text.data(), text.data() + text.size());
  }
  std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonLogFormatter>(); }
};

// log_level; log_format json writes each line as one JSON object.
void configure_logging(const config::ServeOptions& o) {
  // Logs go to stderr; stdout stays for what a command prints (--print-config).
  spdlog::set_default_logger(spdlog::stderr_color_mt("thermocline"));
  spdlog::set_level(spdlog::level::from_str(o.log_level));
  server::set_request_log_json(o.log_format == "json");
  if (o.log_format == "json") {
    spdlog::set_formatter(std::make_unique<JsonLogFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
}

// Everything `serve` keeps alive while it runs.
struct ServeSession {
  config::ServeOptions options;
  server::HttpServer http;

  explicit ServeSession(config::ServeOptions o) : options(o), http(o) {}

  // The loader thread: the one model (blocking until its engine is ready),
  // or the models folder's scan; then how to talk to the server.
  void load() {
    spdlog::info("gpu: {}", kernels::query_gpus().status);
    if (!http.load_models()) return;  // the reason is logged and served in errors
    const auto ids = http.model_ids();
    // A wildcard bind address is reachable on loopback; IPv6 goes in brackets.
    const bool wildcard = options.host == "0.0.0.0" || options.host == "::";
    const std::string url_host = wildcard                                       ? std::string("127.0.0.1")
                                 : options.host.find(':') != std::string::npos ? "[" + options.host + "]"
                                                                               : options.host;
    if (!options.models_dir.empty()) {
      spdlog::info("ready: {} model(s) in {}, each loaded on first use", ids.size(), options.models_dir.string());
      std::fprintf(stderr, "try: curl http://%s:%d/v1/models (OpenAI) or http://%s:%d/api/tags (Ollama)\n",
                   url_host.c_str(), http.bound_port(), url_host.c_str(), http.bound_port());
      return;
    }
    spdlog::info("ready: model {} ({} slots x {} tokens of context)", ids.empty() ? "" : ids.front(),
                 options.parallel, options.ctx_size);
    std::fprintf(stderr,
                 "try: curl http://%s:%d/v1/chat/completions -H 'Content-Type: application/json' "
                 "-d '{\"messages\":[{\"role\":\"user\",\"content\":\"In the beginning God created the heaven and "
                 "the earth.\"}],\"max_tokens\":48}'\n",
                 url_host.c_str(), http.bound_port());
  }

  void shut_down() {
    http.begin_drain();
    const auto grace = std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_s * 1000));
    http.shutdown_models(grace);
    http.stop();
  }
};

}  // namespace

void register_serve(CLI::App& app) {
  auto* sub = app.add_subcommand("serve", "Run the OpenAI-compatible HTTP server");
  auto flags = config::add_serve_flags(*sub);
  runners()["serve"] = [flags] {
    auto o = std::make_shared<config::ServeOptions>(config::resolve_serve_options(*flags));
    if (o->model.empty() && o->models_dir.empty()) o->model = find_default_model();
    if (config::print_config_requested(*flags)) {
      std::fputs(config::to_toml(*o).c_str(), stdout);
      return 0;
    }
    if (o->model.empty() && o->models_dir.empty()) {
      throw config::ConfigError("model", "no --model given and no bundled default model (models/default.gguf) found");
    }
    configure_logging(*o);
    ServeSession session(*o);
    if (!o->chat_template_file.empty()) {
      const std::string chat_template = read_text_file(o->chat_template_file, "chat_template_file");
      try {
        text::ChatTemplate check(chat_template);  // a broken file fails at start
      } catch (const text::ChatTemplateError& e) {
        throw config::ConfigError("chat_template_file", o->chat_template_file.string() + ": " + e.what());
      }
    }
    // Block the stop signals in every thread; one thread waits for them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::atomic<bool> server_done{false};
    std::thread signal_waiter([&session, &server_done, stop_signals] {
      const timespec poll_interval{0, 200'000'000};
      while (!server_done.load()) {
        const int sig = sigtimedwait(&stop_signals, nullptr, &poll_interval);
        if (sig == SIGINT || sig == SIGTERM) {
          spdlog::info("received {}, shutting down (grace {} s)", sig == SIGINT ? "SIGINT" : "SIGTERM",
                       session.options.shutdown_grace_s);
          session.shut_down();
          return;
        }
      }
    });
    std::thread loader;
    const bool ok = session.http.run([&] {
      spdlog::info("thermocline listening on http://{}:{}", o->host, session.http.bound_port());
      loader = std::thread([&session] { session.load(); });
    });
    if (!ok && !session.http.error().empty()) spdlog::error("{}", session.http.error());
    server_done.store(true);
    signal_waiter.join();
    if (loader.joinable()) loader.join();
    return ok || session.http.error().empty() ? 0 : 1;
  };
}

}  // namespace tc::cli
