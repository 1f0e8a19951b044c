// serve_load: a load generator for `thermocline serve` (driven by
// bench/serve_load.sh and bench/soak_asan.sh). Each mode prints `key=value`
// lines on stdout (the driver builds its tables from them) and progress on
// stderr.
//
//   serve_load free-port
//   serve_load wait-health --port P [--timeout-s 120]
//   serve_load decode --port P --clients N [--tokens 128] [--repeats 5] [--warmup 1] [--prompt-tokens 16]
//       N concurrent streamed /v1/completions (random token prompts, ignore_eos), all released together.
//       Per stream: decode rate = (completion_tokens - 1) / (time of its last token - time of its first);
//       a repeat's aggregate rate is the sum over the N streams (they run side by side); the median over
//       repeats is reported. `window` = all decode tokens / (last token of any - first token of any);
//       `steady` = text chunks (about one per token) of all streams received while every stream was
//       decoding (after the last first token, before the first last token) / that time.
//   serve_load ttft --port P [--prompt-tokens 16] [--repeats 20] [--bench-json FILE]
//       One streamed request at a time, max_tokens 1, a fresh random prompt each (no prefix reuse):
//       send -> first token chunk at the client. With FILE[,FILE...] (`thermocline bench -p N -n 0 -o
//       json`), the median bare prefill time of the same prompt length over all their samples is
//       reported beside it.
//   serve_load latency --port P [--requests 100]
//       One client, one request at a time: GET /health and a non-streamed /v1/completions (max_tokens 1)
//       on one reused keep-alive connection and on a fresh connection each; send -> whole response.
//       Reports p50 and p90 per route and connection kind, side by side.
//   serve_load soak --port P --pid PID [--requests 2000] [--warmup 200] [--concurrency 8]
//                   [--abort-fraction 0.3] [--seed 1]
//       A mix of chat and completions, streamed or not, small max_tokens; a fraction of the requests
//       (all streamed) are dropped by the client after a few chunks. Every request that is not dropped
//       must succeed and be well formed. The server's VmRSS (/proc/PID/status) is read after the warm-up
//       requests and after the soak, each time once the server is idle again.
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The q-quantile (0..1) by nearest rank.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::clamp(q * static_cast<double>(v.size()) - 0.5, 0.0,
                                                static_cast<double>(v.size() - 1)));
  return v[i];
}

std::string join(const std::vector<double>& v, int precision) {
  std::string out;
  char buf[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.*f", i ? "," : "", precision, v[i]);
    out += buf;
  }
  return out;
}

// --- options ------------------------------------------------------------------

struct Args {
  std::string mode;
  std::map<std::string, std::string> kv;

  std::string str(const std::string& key, const std::string& def) const {
    auto it = kv.find(key);
    return it == kv.end() ? def : it->second;
  }
  long num(const std::string& key, long def) const {
    auto it = kv.find(key);
    return it == kv.end() ? def : std::stol(it->second);
  }
  double real(const std::string& key, double def) const {
    auto it = kv.find(key);
    return it == kv.end() ? def : std::stod(it->second);
  }
};

[[noreturn]] void usage() {
  std::fputs(
      "usage: serve_load free-port\n"
      "       serve_load wait-health --port P [--timeout-s 120]\n"
      "       serve_load decode --port P --clients N [--tokens 128] [--repeats 5] [--warmup 1] [--prompt-tokens 16]\n"
      "       serve_load ttft --port P [--prompt-tokens 16] [--repeats 20] [--bench-json FILE]\n"
      "       serve_load latency --port P [--requests 100]\n"
      "       serve_load soak --port P --pid PID [--requests 2000] [--warmup 200] [--concurrency 8]\n"
      "                       [--abort-fraction 0.3] [--seed 1]\n"
      "       common: [--host 127.0.0.1]\n",
      stderr);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  if (argc < 2) usage();
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    if (k.rfind("--", 0) != 0 || i + 1 >= argc) usage();
    a.kv[k.substr(2)] = argv[++i];
  }
  return a;
}

// --- HTTP helpers -------------------------------------------------------------

struct Target {
  std::string host = "127.0.0.1";
  int port = 0;
};

httplib::Client make_client(const Target& t) {
  httplib::Client c(t.host, t.port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(300, 0);
  c.set_write_timeout(30, 0);
  return c;
}

// What one streamed request gave, as the client saw it.
struct StreamResult {
  int status = 0;
  httplib::Error transport = httplib::Error::Success;
  bool aborted = false;    // the client dropped it (abort_after reached)
  bool done = false;       // "[DONE]" seen
  int finish_chunks = 0;   // chunks with a non-null finish_reason
  std::string finish_reason;
  std::string problem;     // the first malformed thing seen, if any
  int content_chunks = 0;
  int64_t completion_tokens = -1;  // from the usage chunk
  Clock::time_point sent, first, last;
  std::vector<Clock::time_point> chunk_times;  // every chunk with text, in order
  bool has_first = false;
  std::string raw_error;   // body of a non-200 response
};

// POSTs `body` (stream: true) and reads its SSE events. With abort_after > 0
// the client closes the connection after that many content chunks.
StreamResult post_stream(const Target& t, const std::string& path, const json& body, bool chat, int abort_after) {
  StreamResult r;
  auto client = make_client(t);
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.set_header("Content-Type", "application/json");
  req.body = body.dump();
  std::string buf;
  auto note = [&r](const std::string& what) {
    if (r.problem.empty()) r.problem = what;
  };
  auto on_data = [&](std::string_view payload) -> bool {
    const auto now = Clock::now();
    if (payload == "[DONE]") {
      if (r.done) note("two [DONE]");
      r.done = true;
      return true;
    }
    if (r.done) note("data after [DONE]");
    const json ev = json::parse(payload, nullptr, false);
    if (ev.is_discarded() || !ev.is_object()) {
      note("a data payload is not JSON: " + std::string(payload.substr(0, 200)));
      return true;
    }
    if (ev.contains("error")) {
      note("error event: " + ev["error"].dump());
      return true;
    }
    if (ev.contains("usage") && ev["usage"].is_object()) r.completion_tokens = ev["usage"].value("completion_tokens", -1);
    if (!ev.contains("choices") || !ev["choices"].is_array()) {
      note("a chunk without choices");
      return true;
    }
    for (const auto& c : ev["choices"]) {
      std::string text;
      if (chat) {
        if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string()) {
          text = c["delta"]["content"].get<std::string>();
        }
      } else if (c.contains("text") && c["text"].is_string()) {
        text = c["text"].get<std::string>();
      }
      const bool finished = c.contains("finish_reason") && !c["finish_reason"].is_null();
      if (!text.empty()) {
        ++r.content_chunks;
        r.chunk_times.push_back(now);
      }
      if ((!text.empty() || finished) && !r.has_first) {
        r.has_first = true;
        r.first = now;
      }
      if (finished) {
        ++r.finish_chunks;
        r.finish_reason = c["finish_reason"].get<std::string>();
        r.last = now;
      }
    }
    if (abort_after > 0 && r.content_chunks >= abort_after && r.finish_chunks == 0) {
      r.aborted = true;
      return false;
    }
    return true;
  };
  req.response_handler = [&r](const httplib::Response& res) {
    r.status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) -> bool {
    if (r.status != 200) {
      r.raw_error.append(data, n);
      return true;
    }
    buf.append(data, n);
    size_t pos = 0;
    bool keep = true;
    for (;;) {
      const size_t end = buf.find("\n\n", pos);
      if (end == std::string::npos) break;
      const std::string_view event(buf.data() + pos, end - pos);
      pos = end + 2;
      if (event.rfind("data: ", 0) != 0) continue;  // ": ping" comments
      if (!on_data(event.substr(6))) {
        keep = false;
        break;
      }
    }
    buf.erase(0, pos);
    return keep;
  };
  httplib::Response res;
  r.sent = Clock::now();
  client.send(req, res, r.transport);
  if (r.status == 0) r.status = res.status;
  return r;
}

// The stream's problems when it ran to its end (empty: fine).
std::string check_stream(const StreamResult& r, int max_tokens, bool want_usage) {
  if (r.transport != httplib::Error::Success) return "transport error " + httplib::to_string(r.transport);
  if (r.status != 200) return "status " + std::to_string(r.status) + ": " + r.raw_error.substr(0, 300);
  if (!r.problem.empty()) return r.problem;
  if (!r.done) return "no [DONE]";
  if (r.finish_chunks != 1) return "finish_reason " + std::to_string(r.finish_chunks) + " times";
  if (r.finish_reason != "stop" && r.finish_reason != "length") return "finish_reason " + r.finish_reason;
  if (want_usage && (r.completion_tokens < 0 || r.completion_tokens > max_tokens)) {
    return "usage.completion_tokens " + std::to_string(r.completion_tokens);
  }
  return {};
}

// GET a path; the body, or nothing.
std::optional<std::string> get(const Target& t, const std::string& path) {
  auto c = make_client(t);
  c.set_read_timeout(10, 0);
  auto res = c.Get(path);
  if (!res || res->status != 200) return std::nullopt;
  return res->body;
}

int64_t props_n_vocab(const Target& t) {
  const auto body = get(t, "/props");
  if (!body) {
    std::fprintf(stderr, "serve_load: GET /props failed\n");
    std::exit(1);
  }
  return json::parse(*body).at("n_vocab").get<int64_t>();
}

std::vector<int> random_tokens(std::mt19937_64& rng, int64_t n_vocab, int n) {
  // Ids 0-2 are usually <unk>, <s>, </s>.
  std::uniform_int_distribution<int64_t> pick(3, n_vocab - 1);
  std::vector<int> ids(static_cast<size_t>(n));
  for (auto& id : ids) id = static_cast<int>(pick(rng));
  return ids;
}

// --- free-port, wait-health ----------------------------------------------------

int cmd_free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  if (port <= 0) return 1;
  std::printf("%d\n", port);
  return 0;
}

int cmd_wait_health(const Target& t, const Args& a) {
  const auto deadline = Clock::now() + std::chrono::seconds(a.num("timeout-s", 120));
  while (Clock::now() < deadline) {
    httplib::Client c(t.host, t.port);
    c.set_connection_timeout(1, 0);
    c.set_read_timeout(2, 0);
    auto res = c.Get("/health");
    if (res && res->status == 200) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "serve_load: %s:%d did not become healthy\n", t.host.c_str(), t.port);
  return 1;
}

// --- decode ----------------------------------------------------------------------

int cmd_decode(const Target& t, const Args& a) {
  const int clients = static_cast<int>(a.num("clients", 1));
  const int tokens = static_cast<int>(a.num("tokens", 128));
  const int repeats = static_cast<int>(a.num("repeats", 5));
  const int warmup = static_cast<int>(a.num("warmup", 1));
  const int prompt_tokens = static_cast<int>(a.num("prompt-tokens", 16));
  const int64_t n_vocab = props_n_vocab(t);
  std::mt19937_64 rng(static_cast<uint64_t>(a.num("seed", 7)));

  std::vector<double> aggregate, window, steady, per_stream, spread;
  for (int rep = -warmup; rep < repeats; ++rep) {
    std::vector<json> bodies;
    for (int c = 0; c < clients; ++c) {
      bodies.push_back({{"prompt", random_tokens(rng, n_vocab, prompt_tokens)},
                        {"max_tokens", tokens},
                        {"ignore_eos", true},
                        {"seed", rep * 1000 + c},
                        {"stream", true},
                        {"stream_options", {{"include_usage", true}}}});
    }
    std::vector<StreamResult> results(static_cast<size_t>(clients));
    std::latch go(clients);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        go.arrive_and_wait();
        results[static_cast<size_t>(c)] = post_stream(t, "/v1/completions", bodies[static_cast<size_t>(c)], false, 0);
      });
    }
    for (auto& th : threads) th.join();
    double sum_rate = 0;
    int64_t sum_tokens = 0;
    auto first = Clock::time_point::max(), last = Clock::time_point::min();
    auto first_of_last = Clock::time_point::max(), last_of_first = Clock::time_point::min();
    for (const auto& r : results) {
      if (const std::string p = check_stream(r, tokens, true); !p.empty()) {
        std::fprintf(stderr, "serve_load decode: a stream failed: %s\n", p.c_str());
        return 1;
      }
      if (r.completion_tokens != tokens) {
        std::fprintf(stderr, "serve_load decode: %lld completion tokens, asked for %d (ignore_eos)\n",
                     static_cast<long long>(r.completion_tokens), tokens);
        return 1;
      }
      const double s = seconds(r.last - r.first);
      sum_rate += static_cast<double>(r.completion_tokens - 1) / s;
      if (rep >= 0) per_stream.push_back(static_cast<double>(r.completion_tokens - 1) / s);
      sum_tokens += r.completion_tokens - 1;
      first = std::min(first, r.first);
      last = std::max(last, r.last);
      last_of_first = std::max(last_of_first, r.first);
      first_of_last = std::min(first_of_last, r.last);
    }
    const double win = static_cast<double>(sum_tokens) / seconds(last - first);
    // Steady state: text chunks (about one per token) of all streams while
    // every stream was past its first token and none had finished.
    int64_t steady_chunks = 0;
    for (const auto& r : results) {
      for (const auto& ct : r.chunk_times) steady_chunks += ct > last_of_first && ct <= first_of_last;
    }
    const double steady_s = seconds(first_of_last - last_of_first);
    const double steady_rate = steady_s > 0 ? static_cast<double>(steady_chunks) / steady_s : 0;
    std::fprintf(stderr,
                 "decode clients=%d %s: aggregate %.2f t/s, window %.2f t/s, steady %.2f chunks/s over %.2f s, "
                 "first tokens within %.3f s\n",
                 clients, rep < 0 ? "warm-up" : ("repeat " + std::to_string(rep + 1)).c_str(), sum_rate, win,
                 steady_rate, steady_s, seconds(last_of_first - first));
    if (rep < 0) continue;
    aggregate.push_back(sum_rate);
    window.push_back(win);
    steady.push_back(steady_rate);
    spread.push_back(seconds(last_of_first - first));
  }
  std::printf("clients=%d\ntokens=%d\nrepeats=%d\n", clients, tokens, repeats);
  std::printf("decode_tps_median=%.2f\ndecode_tps_all=%s\n", median(aggregate), join(aggregate, 2).c_str());
  std::printf("window_tps_median=%.2f\n", median(window));
  std::printf("steady_chunks_per_s_median=%.2f\n", median(steady));
  std::printf("per_stream_tps_median=%.2f\n", median(per_stream));
  std::printf("first_token_spread_s_median=%.3f\n", median(spread));
  return 0;
}

// --- ttft ------------------------------------------------------------------------

int cmd_ttft(const Target& t, const Args& a) {
  const int prompt_tokens = static_cast<int>(a.num("prompt-tokens", 16));
  const int repeats = static_cast<int>(a.num("repeats", 20));
  const int64_t n_vocab = props_n_vocab(t);
  std::mt19937_64 rng(static_cast<uint64_t>(a.num("seed", 11)));
  std::vector<double> ttft_ms, total_ms;
  for (int rep = -2; rep < repeats; ++rep) {  // two warm-ups
    const json body = {{"prompt", random_tokens(rng, n_vocab, prompt_tokens)},
                       {"max_tokens", 1},
                       {"ignore_eos", true},
                       {"stream", true}};
    const auto r = post_stream(t, "/v1/completions", body, false, 0);
    if (const std::string p = check_stream(r, 1, false); !p.empty() || !r.has_first) {
      std::fprintf(stderr, "serve_load ttft: the request failed: %s\n", p.empty() ? "no token" : p.c_str());
      return 1;
    }
    if (rep < 0) continue;
    ttft_ms.push_back(1000 * seconds(r.first - r.sent));
    total_ms.push_back(1000 * seconds(Clock::now() - r.sent));
  }
  std::printf("prompt_tokens=%d\nrepeats=%d\n", prompt_tokens, repeats);
  std::printf("ttft_p50_ms=%.2f\nttft_min_ms=%.2f\nttft_p90_ms=%.2f\nttft_all_ms=%s\n", median(ttft_ms),
              quantile(ttft_ms, 0), quantile(ttft_ms, 0.9), join(ttft_ms, 1).c_str());
  std::printf("request_p50_ms=%.2f\n", median(total_ms));
  if (const std::string files = a.str("bench-json", ""); !files.empty()) {
    std::vector<double> prefill_ms;
    std::string test;
    std::istringstream list(files);
    for (std::string file; std::getline(list, file, ',');) {
      std::ifstream in(file);
      const json bench = json::parse(in, nullptr, false);
      if (bench.is_discarded() || !bench.is_array() || bench.empty()) {
        std::fprintf(stderr, "serve_load ttft: %s is not `thermocline bench -o json` output\n", file.c_str());
        return 1;
      }
      test = bench[0].at("test").get<std::string>();
      for (const auto& ts : bench[0].at("samples_ts")) prefill_ms.push_back(1000.0 * prompt_tokens / ts.get<double>());
    }
    std::printf("bench_test=%s\nprefill_p50_ms=%.2f\nprefill_min_ms=%.2f\n", test.c_str(), median(prefill_ms),
                quantile(prefill_ms, 0));
    std::printf("ttft_minus_prefill_ms=%.2f\n", median(ttft_ms) - median(prefill_ms));
  }
  return 0;
}

// --- soak --------------------------------------------------------------------------

long rss_kib(long pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A gauge's value from /metrics, or -1.
double metric(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// Waits until no request runs or waits (aborted ones are cancelled within a
// step); false after `limit`.
bool wait_idle(const Target& t, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (const auto m = get(t, "/metrics")) {
      if (metric(*m, "thermocline_requests_running") == 0 && metric(*m, "thermocline_requests_waiting") == 0) {
        return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

const char* const kWords[] = {"the",   "river", "a",     "small", "cat",    "ran",   "over", "green", "hills",
                               "while", "rain",  "fell",  "on",    "old",    "roofs", "and",  "music", "played",
                               "quiet", "night", "stars", "above", "morning", "bread", "warm", "light", "city",
                               "é",     "日本",  "🙂",    "data",  "model",  "fast",  "slow", "why",   "how"};

struct SoakCounts {
  std::atomic<int> completed{0}, aborted{0}, errors{0}, streamed{0}, chat{0};
  std::mutex mutex;
  std::vector<std::string> first_errors;
  void error(int index, const std::string& what) {
    ++errors;
    std::lock_guard lock(mutex);
    if (first_errors.size() < 10) first_errors.push_back("request " + std::to_string(index) + ": " + what);
  }
};

// Request `index` of the mix, sent and checked.
void soak_one(const Target& t, int index, uint64_t seed, double abort_fraction, SoakCounts& counts) {
  std::mt19937_64 rng(seed * 1000003u + static_cast<uint64_t>(index));
  std::uniform_real_distribution<double> u(0, 1);
  const bool chat = u(rng) < 0.5;
  const bool abort = u(rng) < abort_fraction;
  const bool stream = abort || u(rng) < 0.5;
  const bool ignore_eos = abort || u(rng) < 0.5;
  const bool usage = stream && u(rng) < 0.5;
  const int max_tokens = abort ? 64 : 1 + static_cast<int>(rng() % 24);
  const int abort_after = 1 + static_cast<int>(rng() % 4);
  std::string text;
  const int n_words = 2 + static_cast<int>(rng() % 40);
  for (int i = 0; i < n_words; ++i) {
    text += (i ? " " : "");
    text += kWords[rng() % std::size(kWords)];
  }
  json body = {{"max_tokens", max_tokens}, {"ignore_eos", ignore_eos}, {"seed", index}};
  if (u(rng) < 0.5) body["temperature"] = 0;
  if (chat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", text}}});
  } else {
    body["prompt"] = text;
  }
  const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
  if (chat) ++counts.chat;
  if (stream) {
    ++counts.streamed;
    body["stream"] = true;
    if (usage) body["stream_options"] = {{"include_usage", true}};
    const auto r = post_stream(t, path, body, chat, abort ? abort_after : 0);
    if (r.aborted) {
      // Dropped by us mid-stream: only what came before must have been fine.
      if (!r.problem.empty() || r.status != 200) {
        counts.error(index, "before the abort: status " + std::to_string(r.status) + " " + r.problem);
      } else {
        ++counts.aborted;
      }
      return;
    }
    if (const std::string p = check_stream(r, max_tokens, usage); !p.empty()) return counts.error(index, p);
    ++counts.completed;
    return;
  }
  auto client = make_client(t);
  auto res = client.Post(path, body.dump(), "application/json");
  if (!res) return counts.error(index, "transport error " + httplib::to_string(res.error()));
  if (res->status != 200) return counts.error(index, "status " + std::to_string(res->status) + ": " + res->body);
  const json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].size() != 1) {
    return counts.error(index, "malformed body: " + res->body.substr(0, 300));
  }
  const auto& c = j["choices"][0];
  const json content = chat ? c.value("message", json::object()).value("content", json()) : c.value("text", json());
  const std::string finish = c.value("finish_reason", json()).is_string() ? c["finish_reason"].get<std::string>() : "";
  if (!content.is_string() || (finish != "stop" && finish != "length")) {
    return counts.error(index, "malformed choice: " + c.dump().substr(0, 300));
  }
  const int64_t n = j.value("usage", json::object()).value("completion_tokens", int64_t{-1});
  if (n < 0 || n > max_tokens || (!chat && ignore_eos && n != max_tokens)) {
    return counts.error(index, "usage.completion_tokens " + std::to_string(n) + " for max_tokens " +
                                   std::to_string(max_tokens));
  }
  ++counts.completed;
}

// Runs requests [begin, end) on `concurrency` threads.
void soak_run(const Target& t, int begin, int end, int concurrency, uint64_t seed, double abort_fraction,
              SoakCounts& counts, long pid, std::vector<std::pair<int, long>>& rss_trace) {
  std::atomic<int> next{begin};
  std::mutex trace_mutex;
  std::vector<std::thread> threads;
  for (int w = 0; w < concurrency; ++w) {
    threads.emplace_back([&] {
      for (;;) {
        const int i = next.fetch_add(1);
        if (i >= end) return;
        soak_one(t, i, seed, abort_fraction, counts);
        const int done = i - begin + 1;
        if (done % 250 == 0) {
          std::lock_guard lock(trace_mutex);
          rss_trace.emplace_back(i + 1, rss_kib(pid));
          std::fprintf(stderr, "soak: %d requests sent, server RSS %ld KiB, %d errors\n", i + 1, rss_kib(pid),
                       counts.errors.load());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
}

int cmd_soak(const Target& t, const Args& a) {
  const int requests = static_cast<int>(a.num("requests", 2000));
  const int warmup = static_cast<int>(a.num("warmup", 200));
  const int concurrency = static_cast<int>(a.num("concurrency", 8));
  const double abort_fraction = a.real("abort-fraction", 0.3);
  const auto seed = static_cast<uint64_t>(a.num("seed", 1));
  const long pid = a.num("pid", -1);
  if (pid <= 0 || rss_kib(pid) < 0) {
    std::fprintf(stderr, "serve_load soak: --pid must name the running server\n");
    return 2;
  }
  const auto idle_limit = std::chrono::seconds(a.num("idle-timeout-s", 60));
  std::vector<std::pair<int, long>> trace;

  SoakCounts warm;
  soak_run(t, 0, warmup, concurrency, seed, abort_fraction, warm, pid, trace);
  if (!wait_idle(t, idle_limit)) {
    std::fprintf(stderr, "serve_load soak: the server is not idle after the warm-up\n");
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long rss_warm = rss_kib(pid);
  std::fprintf(stderr, "soak: warm-up done (%d requests, %d errors), RSS %ld KiB\n", warmup, warm.errors.load(),
               rss_warm);

  SoakCounts counts;
  trace.clear();
  const auto start = Clock::now();
  soak_run(t, warmup, warmup + requests, concurrency, seed, abort_fraction, counts, pid, trace);
  const double elapsed = seconds(Clock::now() - start);
  const bool idle = wait_idle(t, idle_limit);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long rss_end = rss_kib(pid);
  long rss_peak = rss_end;
  for (const auto& [n, kib] : trace) rss_peak = std::max(rss_peak, kib);

  // Afterwards a normal request is served promptly.
  const auto probe_start = Clock::now();
  auto client = make_client(t);
  auto probe = client.Post("/v1/completions", json({{"prompt", "still there?"}, {"max_tokens", 8}}).dump(),
                           "application/json");
  const double probe_s = seconds(Clock::now() - probe_start);
  const bool probe_ok = probe && probe->status == 200;

  for (const auto& e : counts.first_errors) std::fprintf(stderr, "soak error: %s\n", e.c_str());
  for (const auto& e : warm.first_errors) std::fprintf(stderr, "soak warm-up error: %s\n", e.c_str());
  std::printf("requests=%d\nwarmup=%d\nconcurrency=%d\n", requests, warmup, concurrency);
  std::printf("completed=%d\naborted=%d\nerrors=%d\nwarmup_errors=%d\n", counts.completed.load(),
              counts.aborted.load(), counts.errors.load(), warm.errors.load());
  std::printf("streamed=%d\nchat=%d\n", counts.streamed.load(), counts.chat.load());
  std::printf("seconds=%.1f\nrequests_per_s=%.1f\n", elapsed, requests / elapsed);
  std::printf("rss_warm_kib=%ld\nrss_end_kib=%ld\nrss_peak_kib=%ld\nrss_growth_kib=%ld\n", rss_warm, rss_end, rss_peak,
              rss_end - rss_warm);
  std::string trace_text;
  for (const auto& [n, kib] : trace) {
    if (!trace_text.empty()) trace_text += ',';
    trace_text += std::to_string(n);
    trace_text += ':';
    trace_text += std::to_string(kib);
  }
  std::printf("rss_trace_kib=%s\n", trace_text.c_str());
  std::printf("idle_after=%d\nprobe_ok=%d\nprobe_s=%.3f\n", idle ? 1 : 0, probe_ok ? 1 : 0, probe_s);
  const bool ok = counts.errors == 0 && warm.errors == 0 && idle && probe_ok;
  return ok ? 0 : 1;
}

// --- latency ---------------------------------------------------------------------

int cmd_latency(const Target& t, const Args& a) {
  const int n = static_cast<int>(a.num("requests", 100));
  const std::string completion = json{{"prompt", "hi"}, {"max_tokens", 1}, {"seed", 1}}.dump();
  struct Route {
    const char* name;
    std::function<httplib::Result(httplib::Client&)> call;
  };
  const Route routes[] = {
      {"health", [](httplib::Client& c) { return c.Get("/health"); }},
      {"completion", [&completion](httplib::Client& c) {
         return c.Post("/v1/completions", completion, "application/json");
       }},
  };
  int errors = 0;
  for (const auto& route : routes) {
    std::vector<double> reused_ms, fresh_ms;
    auto reused = make_client(t);
    reused.set_keep_alive(true);
    for (int i = 0; i < n + 5; ++i) {  // the first 5 warm the connection up
      const auto start = Clock::now();
      const auto res = route.call(reused);
      errors += res && res->status == 200 ? 0 : 1;
      if (i >= 5) reused_ms.push_back(1000 * seconds(Clock::now() - start));
    }
    for (int i = 0; i < n; ++i) {
      const auto start = Clock::now();
      auto fresh = make_client(t);
      const auto res = route.call(fresh);
      errors += res && res->status == 200 ? 0 : 1;
      fresh_ms.push_back(1000 * seconds(Clock::now() - start));
    }
    std::printf("latency_%s_reused_p50_ms=%.3f\nlatency_%s_reused_p90_ms=%.3f\n", route.name, median(reused_ms),
                route.name, quantile(reused_ms, 0.9));
    std::printf("latency_%s_fresh_p50_ms=%.3f\nlatency_%s_fresh_p90_ms=%.3f\n", route.name, median(fresh_ms), route.name,
                quantile(fresh_ms, 0.9));
  }
  std::printf("latency_requests=%d\nlatency_errors=%d\n", n, errors);
  return errors == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  Target t;
  t.host = a.str("host", "127.0.0.1");
  t.port = static_cast<int>(a.num("port", 0));
  try {
    if (a.mode == "free-port") return cmd_free_port();
    if (t.port <= 0) usage();
    if (a.mode == "wait-health") return cmd_wait_health(t, a);
    if (a.mode == "decode") return cmd_decode(t, a);
    if (a.mode == "ttft") return cmd_ttft(t, a);
    if (a.mode == "latency") return cmd_latency(t, a);
    if (a.mode == "soak") return cmd_soak(t, a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_load %s: %s\n", a.mode.c_str(), e.what());
    return 1;
  }
  usage();
}
