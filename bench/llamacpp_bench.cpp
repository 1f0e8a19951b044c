// llama.cpp's side of bench/compare_llamacpp.sh: runs the prebuilt libllama
// of npm @node-llama-cpp/linux-x64 3.22.1 (dlopened through
// tests/oracle/llama_context_oracle.h, no JavaScript in the timed loop) the
// way llama-bench does, and prints JSON.
//
//   llamacpp_bench bench  -m FILE [-p 512] [-n 128] [-r 5] [-t 2] [--flash-attn off|on|auto]
//                         [--cache-type f16|q8_0] [-b 2048] [--ubatch 512] [--lib libllama.so]
//   llamacpp_bench greedy -m FILE --prompt TEXT [-n 32] [-t 2] [--lib libllama.so]
//
// bench: llama-bench's method (tools/llama-bench/llama-bench.cpp of the same
// release): default model params (mmap, CPU weight repacking), one context
// per test with n_ctx = the test's tokens, a persistent ggml threadpool, one
// warm-up run, then R timed runs each from a cleared memory. pp: n_prompt
// random tokens (BOS first when the vocab adds one) decoded in n_batch-sized
// llama_decode calls; tg: n_gen single-token decodes, each synchronized.
// Prints the same JSON records as `thermocline bench -o json`.
// greedy: {"prompt_tokens": [...], "tokens": [...]}: the prompt tokenized as
// llama-cli does (BOS per the vocab, special tokens parsed), decoded in one
// batch, then N argmax tokens (llama.cpp's greedy sampler; no penalties, no
// other sampler, EOS does not stop).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/oracle/llama_context_oracle.h"

namespace {

namespace lc = tc::oracle::llamacpp;

struct Args {
  std::string mode;
  std::string model;
  std::string lib;
  std::string prompt;
  int n_prompt = 512;
  int n_gen = 128;
  int n_depth = 0;  // tokens in the memory before the tg test (llama-bench's -d)
  int reps = 5;
  int threads = 2;
  int n_batch = 2048;
  int n_ubatch = 512;
  lc::FlashAttn flash_attn = lc::FlashAttn::Off;
  int32_t cache_type = 1;  // ggml_type of K and V (-ctk/-ctv): 1 F16, 8 Q8_0
  bool n_gen_given = false;
  bool threadpool = true;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "llamacpp_bench: %s\n"
               "usage: llamacpp_bench bench -m FILE [-p N] [-n N] [-d N] [-r R] [-t T] [--flash-attn off|on|auto]\n"
               "                            [--cache-type f16|q8_0] [-b N] [--ubatch N] [--no-threadpool] [--lib PATH]\n"
               "       llamacpp_bench greedy -m FILE --prompt TEXT [-n N] [-t T] [--lib PATH]\n",
               why.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  if (argc < 2) usage("no mode");
  a.mode = argv[1];
  if (a.mode != "bench" && a.mode != "greedy") usage("unknown mode " + a.mode);
  for (int i = 2; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(k + " needs a value");
      return argv[++i];
    };
    auto next_int = [&](int lo) {
      const std::string v = next();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < lo || n > (1 << 24)) usage("bad value for " + k + ": " + v);
      return static_cast<int>(n);
    };
    if (k == "-m" || k == "--model") a.model = next();
    else if (k == "--lib") a.lib = next();
    else if (k == "--prompt") a.prompt = next();
    else if (k == "-p" || k == "--n-prompt") a.n_prompt = next_int(0);
    else if (k == "-n" || k == "--n-gen") a.n_gen = next_int(0), a.n_gen_given = true;
    else if (k == "-d" || k == "--n-depth") a.n_depth = next_int(0);
    else if (k == "-r" || k == "--repetitions") a.reps = next_int(1);
    else if (k == "-t" || k == "--threads") a.threads = next_int(1);
    else if (k == "-b" || k == "--batch-size") a.n_batch = next_int(1);
    else if (k == "--ubatch") a.n_ubatch = next_int(1);
    else if (k == "--no-threadpool") a.threadpool = false;
    else if (k == "--flash-attn") {
      const std::string v = next();
      if (v == "off") a.flash_attn = lc::FlashAttn::Off;
      else if (v == "on") a.flash_attn = lc::FlashAttn::On;
      else if (v == "auto") a.flash_attn = lc::FlashAttn::Auto;
      else usage("--flash-attn takes off, on or auto");
    } else if (k == "--cache-type") {
      const std::string v = next();
      if (v == "f16") a.cache_type = 1;
      else if (v == "q8_0") a.cache_type = 8;
      else usage("--cache-type takes f16 or q8_0");
    } else usage("unknown option " + k);
  }
  if (a.model.empty()) usage("-m FILE is required");
  if (a.mode == "greedy" && !a.n_gen_given) a.n_gen = 32;
  return a;
}

std::filesystem::path default_lib(const char* argv0) {
  if (const char* env = std::getenv("THERMOCLINE_LLAMA_LIB"); env != nullptr && *env != '\0') return env;
  // The repo root is found from the source tree this was built in.
#ifdef THERMOCLINE_SOURCE_DIR
  const std::filesystem::path root = THERMOCLINE_SOURCE_DIR;
#else
  const std::filesystem::path root = std::filesystem::current_path();
#endif
  (void)argv0;
  return root / ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so";
}

std::string json_ints(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else out += c;
  }
  return out + "\"";
}

using Clock = std::chrono::steady_clock;

// n random tokens (the first BOS where the model adds one) decoded into an
// emptied memory in n_batch-sized batches; `what` names the test in errors.
void decode_random(lc::LlamaCppContext& ctx, const lc::LlamaCppModel& model, int n_tokens, int n_batch,
                   std::mt19937& rng, const char* what) {
  const int32_t n_vocab = model.n_vocab();
  std::vector<int32_t> tokens(static_cast<size_t>(std::min(std::max(n_tokens, 1), n_batch)));
  for (int done = 0; done < n_tokens;) {
    const int n = std::min(n_tokens - done, n_batch);
    for (int i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
    if (done == 0 && model.add_bos()) tokens[0] = model.bos();
    if (ctx.decode(tokens.data(), n) != 0) throw std::runtime_error(std::string("llama_decode failed in ") + what);
    done += n;
  }
}

// llama-bench's test_prompt: n_prompt tokens in n_batch-sized decodes.
double run_pp(lc::LlamaCppContext& ctx, const lc::LlamaCppModel& model, int n_prompt, int n_batch,
              std::mt19937& rng) {
  ctx.clear();
  const auto start = Clock::now();
  decode_random(ctx, model, n_prompt, n_batch, rng, "the pp test");
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// llama-bench's test_gen: n_gen single-token decodes, after n_depth tokens
// decoded untimed into an emptied memory (-d).
double run_tg(lc::LlamaCppContext& ctx, const lc::LlamaCppModel& model, int n_gen, int n_depth, int n_batch,
              std::mt19937& rng) {
  const int32_t n_vocab = model.n_vocab();
  ctx.clear();
  decode_random(ctx, model, n_depth, n_batch, rng, "filling the depth");
  int32_t token = model.add_bos() && n_depth == 0 ? model.bos() : static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  const auto start = Clock::now();
  for (int i = 0; i < n_gen; ++i) {
    if (ctx.decode(&token, 1) != 0) throw std::runtime_error("llama_decode failed in the tg test");
    token = static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab));
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string bench_record(const Args& a, const std::string& test, const std::vector<double>& tps,
                         const std::vector<double>& seconds) {
  double mean = 0;
  for (double v : tps) mean += v;
  mean /= static_cast<double>(tps.size());
  double var = 0;
  for (double v : tps) var += (v - mean) * (v - mean);
  const double sd = tps.size() > 1 ? std::sqrt(var / static_cast<double>(tps.size() - 1)) : 0.0;
  std::string s = "  {\"model\": " + json_string(std::filesystem::path(a.model).filename().string()) +
                  ", \"backend\": \"llama.cpp (npm @node-llama-cpp/linux-x64 3.22.1, cpu)\"" +
                  ", \"threads\": " + std::to_string(a.threads) + ", \"test\": \"" + test + "\"" +
                  ", \"avg_ts\": " + std::to_string(mean) + ", \"stddev_ts\": " + std::to_string(sd) +
                  ", \"samples_ts\": [";
  for (size_t i = 0; i < tps.size(); ++i) s += (i ? ", " : "") + std::to_string(tps[i]);
  s += "], \"samples_s\": [";
  for (size_t i = 0; i < seconds.size(); ++i) s += (i ? ", " : "") + std::to_string(seconds[i]);
  return s + "]}";
}

int run_bench(const Args& a, const lc::LlamaCppModel& model) {
  std::mt19937 rng(1);
  std::vector<std::string> records;
  lc::ContextOptions base;
  base.n_threads = a.threads;
  base.n_batch = static_cast<uint32_t>(a.n_batch);
  base.n_ubatch = static_cast<uint32_t>(a.n_ubatch);
  base.flash_attn = a.flash_attn;
  base.type_k = base.type_v = a.cache_type;
  base.threadpool = a.threadpool;
  if (a.n_prompt > 0) {
    lc::ContextOptions o = base;
    o.n_ctx = static_cast<uint32_t>(a.n_prompt);
    lc::LlamaCppContext ctx(model, o);
    run_pp(ctx, model, a.n_prompt, a.n_batch, rng);  // warm-up
    std::vector<double> tps, secs;
    for (int r = 0; r < a.reps; ++r) {
      const double s = run_pp(ctx, model, a.n_prompt, a.n_batch, rng);
      secs.push_back(s);
      tps.push_back(a.n_prompt / s);
    }
    records.push_back(bench_record(a, "pp" + std::to_string(a.n_prompt), tps, secs));
  }
  if (a.n_gen > 0) {
    lc::ContextOptions o = base;
    o.n_ctx = static_cast<uint32_t>(a.n_depth + a.n_gen);
    lc::LlamaCppContext ctx(model, o);
    run_tg(ctx, model, 1, 0, a.n_batch, rng);  // warm-up, as llama-bench: one token
    std::vector<double> tps, secs;
    for (int r = 0; r < a.reps; ++r) {
      const double s = run_tg(ctx, model, a.n_gen, a.n_depth, a.n_batch, rng);
      secs.push_back(s);
      tps.push_back(a.n_gen / s);
    }
    const std::string depth = a.n_depth > 0 ? "@d" + std::to_string(a.n_depth) : "";
    records.push_back(bench_record(a, "tg" + std::to_string(a.n_gen) + depth, tps, secs));
  }
  std::printf("[\n");
  for (size_t i = 0; i < records.size(); ++i) std::printf("%s%s\n", records[i].c_str(), i + 1 < records.size() ? "," : "");
  std::printf("]\n");
  return 0;
}

int run_greedy(const Args& a, const lc::LlamaCppModel& model) {
  const auto prompt_tokens = model.tokenize(a.prompt);
  if (prompt_tokens.empty()) throw std::runtime_error("the prompt has no tokens");
  lc::ContextOptions o;
  o.n_threads = a.threads;
  o.n_ctx = static_cast<uint32_t>(prompt_tokens.size() + static_cast<size_t>(a.n_gen) + 1);
  lc::LlamaCppContext ctx(model, o);
  const auto r = lc::greedy(ctx, model.n_vocab(), prompt_tokens, a.n_gen);
  std::printf("{\"prompt_tokens\": %s, \"tokens\": %s}\n", json_ints(prompt_tokens).c_str(),
              json_ints(r.tokens).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const std::filesystem::path lib_path = a.lib.empty() ? default_lib(argv[0]) : std::filesystem::path(a.lib);
  const auto& lib = lc::LlamaCppLibrary::instance(lib_path);
  if (!lib.ok()) {
    std::fprintf(stderr, "llamacpp_bench: llama.cpp unavailable: %s\n", lib.reason().c_str());
    return 3;
  }
  try {
    std::fprintf(stderr, "llamacpp_bench: %s\n%sllamacpp_bench: %s\n", lib.path().c_str(), lib.backend_log().c_str(),
                 lib.system_info().c_str());
    const lc::LlamaCppModel model(lib, a.model);
    return a.mode == "bench" ? run_bench(a, model) : run_greedy(a, model);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llamacpp_bench: %s\n", e.what());
    return 1;
  }
}
