// `thermocline serve` as a user runs it: starts on a generated model, answers
// its routes with the right bodies and OpenAI errors, stops on SIGTERM with
// exit status 0.
#include <catch2/catch.hpp>

#include <httplib.h>

#include <chrono>
#include <csignal>
#include <nlohmann/json.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "tests/test_util.h"

using nlohmann::json;

namespace {

// A free TCP port on loopback: bind port 0, read the port, close the socket.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

struct ServerProcess {
  pid_t pid = -1;
  ~ServerProcess() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

}  // namespace

TEST_CASE("serve answers health, models, props, tokenize and detokenize", "[integration][serve]") {
  const auto dir = tc::test::scratch_dir("serve");
  const auto model = (dir / "tiny.gguf").string();
  const std::string bin = tc::test::thermocline_binary().string();
  REQUIRE(tc::test::run_command(bin + " make-model -o " + model +
                                " --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024")
              .exit_code == 0);
  const int port = free_port();
  REQUIRE(port > 0);

  ServerProcess server;
  server.pid = fork();
  REQUIRE(server.pid >= 0);
  if (server.pid == 0) {
    const std::string log = (dir / "serve.log").string();
    freopen(log.c_str(), "w", stderr);
    execl(bin.c_str(), bin.c_str(), "serve", "--model", model.c_str(), "--port", std::to_string(port).c_str(),
          "--alias", "tiny", static_cast<char*>(nullptr));
    _exit(127);
  }

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(2));
  auto health = client.Get("/health");
  for (int i = 0; i < 100 && !health; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    health = client.Get("/health");
  }
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(json::parse(health->body)["status"] == "ok");

  auto models = client.Get("/v1/models");
  REQUIRE(models);
  const auto mj = json::parse(models->body);
  CHECK(mj["object"] == "list");
  CHECK(mj["data"][0]["id"] == "tiny");
  CHECK(mj["data"][0]["object"] == "model");

  auto props = client.Get("/props");
  REQUIRE(props);
  CHECK(json::parse(props->body)["n_vocab"] == 1024);

  auto tok = client.Post("/tokenize", R"({"content":"Hello world","add_special":true})", "application/json");
  REQUIRE(tok);
  REQUIRE(tok->status == 200);
  const auto ids = json::parse(tok->body)["tokens"];
  REQUIRE(ids.size() >= 2);
  CHECK(ids[0] == 1);  // <s>

  auto detok = client.Post("/v1/detokenize", json{{"tokens", ids}}.dump(), "application/json");
  REQUIRE(detok);
  CHECK(json::parse(detok->body)["content"] == "Hello world");

  SECTION("errors are OpenAI error bodies") {
    auto bad_json = client.Post("/tokenize", "{not json", "application/json");
    REQUIRE(bad_json);
    CHECK(bad_json->status == 400);
    CHECK(json::parse(bad_json->body)["error"]["type"] == "invalid_request_error");
    auto wrong_type = client.Post("/tokenize", R"({"content":123})", "application/json");
    REQUIRE(wrong_type);
    CHECK(wrong_type->status == 400);
    CHECK(json::parse(wrong_type->body)["error"]["param"] == "content");
    auto bad_ids = client.Post("/detokenize", R"({"tokens":[1, 99999999]})", "application/json");
    REQUIRE(bad_ids);
    CHECK(bad_ids->status == 400);
    auto missing = client.Get("/v1/nothing-here");
    REQUIRE(missing);
    CHECK(missing->status == 404);
    CHECK(json::parse(missing->body)["error"]["message"].get<std::string>().find("/v1/nothing-here") !=
          std::string::npos);
    auto invalid_utf8 = client.Post("/tokenize", "{\"content\":\"a\xff\xfe b\"}", "application/json");
    REQUIRE(invalid_utf8);
    CHECK(invalid_utf8->status == 400);  // JSON text must be UTF-8
  }

  kill(server.pid, SIGTERM);
  int status = 0;
  waitpid(server.pid, &status, 0);
  server.pid = -1;
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
