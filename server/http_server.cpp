// Routes of the HTTP server: /health, /v1/models, /props, /tokenize,
// /detokenize (each also without the /v1 prefix). JSON in and out through
// nlohmann/json; every error is an OpenAI error body.
#include "server/http_server.h"

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/loaded_model.h"
#include "server/openai_errors.h"

namespace tc::server {
namespace {

using nlohmann::json;
constexpr size_t kMaxBodyBytes = 8u << 20;

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  res.set_content(error_body(e), "application/json");
}

ApiError bad_request(std::string message, std::string param = "") {
  return {400, "invalid_request_error", std::move(message), "", std::move(param)};
}

// Parses the body as a JSON object, or explains why not.
bool parse_object(const httplib::Request& req, httplib::Response& res, json& out) {
  out = json::parse(req.body, nullptr, false);
  if (out.is_discarded()) {
    send_error(res, bad_request("request body is not valid JSON"));
    return false;
  }
  if (!out.is_object()) {
    send_error(res, bad_request("request body must be a JSON object"));
    return false;
  }
  return true;
}

// An optional boolean field; null or absent gives the fallback.
bool optional_bool(const json& body, const char* key, bool fallback, bool& ok, httplib::Response& res) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) {
    send_error(res, bad_request(std::string("'") + key + "' must be a boolean", key));
    ok = false;
    return fallback;
  }
  return it->get<bool>();
}

}  // namespace

struct HttpServer::Impl {
  config::ServeOptions options;
  std::shared_ptr<const model::LoadedModel> model;
  std::string model_id;
  int64_t created = 0;
  httplib::Server http;

  void route_get(const std::string& path, httplib::Server::Handler handler) {
    http.Get("/v1" + path, handler);
    http.Get(path, handler);
  }
  void route_post(const std::string& path, httplib::Server::Handler handler) {
    http.Post("/v1" + path, handler);
    http.Post(path, handler);
  }

  void install_routes() {
    http.set_payload_max_length(kMaxBodyBytes);
    http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (res.status == 413) {
        send_error(res, {413, "invalid_request_error", "request body is larger than the limit", "", ""});
      } else if (res.status == 404) {
        send_error(res, {404, "invalid_request_error", "no route " + req.method + " " + req.path, "", ""});
      } else if (res.body.empty()) {
        send_error(res, {res.status, "invalid_request_error", "request failed", "", ""});
      }
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send_error(res, {500, "server_error", what, "", ""});
    });

    http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200, {{"status", "ok"}});
    });
    route_get("/models", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, 200,
                {{"object", "list"},
                 {"data", json::array({{{"id", model_id},
                                        {"object", "model"},
                                        {"created", created},
                                        {"owned_by", "thermocline"}}})}});
    });
    route_get("/props", [this](const httplib::Request&, httplib::Response& res) {
      const auto& s = model->spec;
      const auto& v = model->tokenizer->vocab();
      send_json(res, 200,
                {{"model", model_id},
                 {"model_path", model->file.path()},
                 {"n_ctx", s.n_ctx_train},
                 {"n_vocab", s.n_vocab},
                 {"n_embd", s.n_embd},
                 {"n_layer", s.n_layer},
                 {"ffn_form", model::ffn_form_name(s.ffn_form)},
                 {"chat_template", v.chat_template ? json(*v.chat_template) : json(nullptr)},
                 {"bos_token", v.bos_id >= 0 ? json(model->tokenizer->token_to_piece(v.bos_id, true)) : json(nullptr)},
                 {"eos_token", v.eos_id >= 0 ? json(model->tokenizer->token_to_piece(v.eos_id, true)) : json(nullptr)}});
    });
    route_post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      json body;
      if (!parse_object(req, res, body)) return;
      auto it = body.find("content");
      if (it == body.end() || !it->is_string()) {
        send_error(res, bad_request("'content' must be a string", "content"));
        return;
      }
      bool ok = true;
      text::EncodeOptions opt;
      opt.add_special = optional_bool(body, "add_special", false, ok, res);
      if (ok) opt.parse_special = optional_bool(body, "parse_special", true, ok, res);
      if (!ok) return;
      send_json(res, 200, {{"tokens", model->tokenizer->encode(it->get_ref<const std::string&>(), opt)}});
    });
    route_post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      json body;
      if (!parse_object(req, res, body)) return;
      auto it = body.find("tokens");
      if (it == body.end() || !it->is_array()) {
        send_error(res, bad_request("'tokens' must be an array of token ids", "tokens"));
        return;
      }
      std::vector<text::TokenId> ids;
      ids.reserve(it->size());
      for (const auto& t : *it) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= model->spec.n_vocab) {
          send_error(res, bad_request("'tokens' must hold integers in [0, " + std::to_string(model->spec.n_vocab) + ")",
                                      "tokens"));
          return;
        }
        ids.push_back(static_cast<text::TokenId>(t.get<int64_t>()));
      }
      send_json(res, 200, {{"content", model->tokenizer->decode(ids)}});
    });
  }
};

HttpServer::HttpServer(config::ServeOptions options, std::shared_ptr<const model::LoadedModel> model)
    : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->model = std::move(model);
  impl_->model_id = impl_->options.model_alias.empty()
                        ? std::filesystem::path(impl_->model->file.path()).stem().string()
                        : impl_->options.model_alias;
  impl_->created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const int n_threads = impl_->options.http_threads;
  impl_->http.new_task_queue = [n_threads] { return new httplib::ThreadPool(static_cast<size_t>(n_threads)); };
  impl_->install_routes();
}

HttpServer::~HttpServer() = default;

bool HttpServer::run(const std::function<void()>& on_ready) {
  auto& http = impl_->http;
  if (!http.bind_to_port(impl_->options.host, impl_->options.port)) {
    error_ = "cannot listen on " + impl_->options.host + ":" + std::to_string(impl_->options.port) +
             " (address in use or not available)";
    return false;
  }
  if (on_ready) on_ready();
  return http.listen_after_bind();
}

void HttpServer::stop() { impl_->http.stop(); }

}  // namespace tc::server
