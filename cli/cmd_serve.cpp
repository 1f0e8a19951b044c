// `thermocline serve`: load the model, start the HTTP server, stop cleanly
// on SIGINT/SIGTERM.
#include <atomic>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/runners.h"
#include "config/serve_options.h"
#include "engine/model/loaded_model.h"
#include "kernels/device_info.h"
#include "server/http_server.h"

namespace tc::cli {
namespace {

// The bundled default model: next to the binary's install prefix, or in the
// source tree's models/ for a build-tree binary.
std::filesystem::path find_default_model() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path candidates[] = {
      exe.parent_path().parent_path() / "share/thermocline/models/default.gguf",
      exe.parent_path().parent_path() / "models/default.gguf",
      "models/default.gguf",
  };
  for (const auto& c : candidates) {
    if (std::filesystem::is_regular_file(c, ec)) return c;
  }
  return {};
}

}  // namespace

void register_serve(CLI::App& app) {
  auto o = std::make_shared<config::ServeOptions>();
  auto* sub = app.add_subcommand("serve", "Run the OpenAI-compatible HTTP server");
  sub->add_option("-m,--model", o->model, "GGUF model file (default: the bundled model)");
  sub->add_option("--host", o->host, "Bind address");
  sub->add_option("--port", o->port, "TCP port");
  sub->add_option("--alias", o->model_alias, "Model id shown to clients (default: file name)");
  sub->add_option("--http-threads", o->http_threads, "HTTP worker threads");
  runners()["serve"] = [o] {
    config::validate(*o);
    if (o->model.empty()) {
      o->model = find_default_model();
      if (o->model.empty()) {
        throw config::ConfigError("model", "no --model given and no bundled default model (models/default.gguf) found");
      }
    }
    // Block the stop signals in every thread; one thread waits for them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::fprintf(stderr, "loading %s\n", o->model.string().c_str());
    std::shared_ptr<const model::LoadedModel> loaded = model::load_model(o->model);
    const auto gpus = kernels::query_gpus();
    std::fprintf(stderr, "gpu: %s\n", gpus.status.c_str());

    server::HttpServer http(*o, loaded);
    std::atomic<bool> server_done{false};
    std::thread signal_waiter([&http, &server_done, stop_signals] {
      const timespec poll_interval{0, 200'000'000};
      while (!server_done.load()) {
        const int sig = sigtimedwait(&stop_signals, nullptr, &poll_interval);
        if (sig == SIGINT || sig == SIGTERM) {
          std::fprintf(stderr, "received %s, shutting down\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
          http.stop();
          return;
        }
      }
    });
    const bool ok = http.run([&] {
      std::fprintf(stderr, "thermocline listening on http://%s:%d (model %s)\n", o->host.c_str(), o->port,
                   o->model.filename().string().c_str());
      std::fprintf(stderr, "try: curl http://%s:%d/v1/models\n", o->host.c_str(), o->port);
    });
    if (!ok && !http.error().empty()) {
      std::fprintf(stderr, "error: %s\n", http.error().c_str());
    }
    server_done.store(true);
    signal_waiter.join();
    return ok || http.error().empty() ? 0 : 1;
  };
}

}  // namespace tc::cli
