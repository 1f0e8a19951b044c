// embedding_bench: an encoder's embedding throughput (what a RAG ingest or a
// search query costs), ours against llama.cpp's libllama (npm
// @node-llama-cpp/linux-x64 3.22.1, dlopened) on the same file, in one
// process, alternating. Each text is [CLS], random ids of the vocab's body,
// [SEP] (the file's bos and sep ids; -p tokens in all), the same ids on both
// sides. Ours: the engine (runtime::Engine, one slot, one request at a time,
// as the server runs a single /v1/embeddings input). llama.cpp's: one
// context with embeddings on and the file's pooling, memory cleared, one
// llama_decode per text (llama-server's path for one input), 2 threads
// both. Each round times --texts texts on each side; the figures are medians
// over rounds of texts/s and of the paired ratio. Each round also checks the
// two sides' embeddings agree (relative L2 distance).
//
//   embedding_bench -m FILE [-p 128] [--texts 16] [-r 5] [-t 2] [--lib libllama.so] [--json FILE] [--label NAME]
//
// --json adds the run to FILE ({"runs": [...]}; a run of the same machine,
// label and -p replaces the old one).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/oracle/llama_context_oracle.h"

namespace {

namespace lc = tc::oracle::llamacpp;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model, lib, json, label;
  int n_tokens = 128;
  int n_texts = 16;
  int rounds = 5;
  int threads = 2;
};

constexpr const char* kUsage =
    "usage: embedding_bench -m FILE [-p TOKENS (>= 3)] [--texts N] [-r ROUNDS] [-t THREADS] [--lib libllama.so]\n"
    "                       [--json FILE] [--label NAME]\n";

Args parse(int argc, char** argv) {
  Args a;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& k = args.flag();
    if (k == "-m") a.model = args.value();
    else if (k == "-p") a.n_tokens = args.int_value();
    else if (k == "--texts") a.n_texts = args.int_value();
    else if (k == "-r") a.rounds = args.int_value();
    else if (k == "-t") a.threads = args.int_value();
    else if (k == "--lib") a.lib = args.value();
    else if (k == "--json") a.json = args.value();
    else if (k == "--label") a.label = args.value();
    else args.usage();
  }
  if (a.model.empty() || a.n_tokens < 3 || a.n_texts < 1 || a.rounds < 1 || a.threads < 1) args.usage();
  return a;
}

std::filesystem::path default_lib() {
  if (const char* env = std::getenv("THERMOCLINE_LLAMA_LIB"); env != nullptr && *env != '\0') return env;
#ifdef THERMOCLINE_SOURCE_DIR
  const std::filesystem::path root = THERMOCLINE_SOURCE_DIR;
#else
  const std::filesystem::path root = std::filesystem::current_path();
#endif
  return root / ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string machine_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  return model + ", " + std::to_string(tc::kernels::ThreadPool::physical_cores()) + " cores";
}

// Our engine's pooled embedding of each text, one request at a time.
class Ours {
 public:
  Ours(std::shared_ptr<const tc::model::LoadedModel> model, int n_ctx, int threads) {
    tc::runtime::EngineOptions o;
    o.n_parallel = 1;
    o.n_ctx = n_ctx;
    o.n_batch = n_ctx;
    o.model.threads = threads;
    engine_ = std::make_unique<tc::runtime::Engine>(std::move(model), o);
  }
  std::vector<float> embed(const std::vector<int32_t>& ids, tc::model::Pooling pooling) {
    tc::runtime::GenerationRequest r;
    r.prompt.assign(ids.begin(), ids.end());
    r.embedding = pooling;
    auto submitted = engine_->submit(std::move(r));
    if (submitted.status != tc::runtime::SubmitStatus::Ok) throw std::runtime_error("the engine refused a text");
    tc::runtime::StreamEvent ev;
    while (!submitted.handle->next(ev, std::chrono::seconds(60)) || ev.kind == tc::runtime::StreamEvent::Kind::Text) {
    }
    if (ev.kind != tc::runtime::StreamEvent::Kind::Finished) throw std::runtime_error("embedding failed: " + ev.error);
    return ev.embedding;
  }

 private:
  std::unique_ptr<tc::runtime::Engine> engine_;
};

double relative_distance(const std::vector<float>& mine, const float* theirs) {
  double diff = 0, norm = 0;
  for (size_t j = 0; j < mine.size(); ++j) {
    diff += (static_cast<double>(mine[j]) - theirs[j]) * (static_cast<double>(mine[j]) - theirs[j]);
    norm += static_cast<double>(theirs[j]) * theirs[j];
  }
  return norm > 0 ? std::sqrt(diff / norm) : INFINITY;
}

void add_run(const std::string& path, const nlohmann::json& run) {
  nlohmann::json doc = {{"runs", nlohmann::json::array()}};
  if (std::ifstream in(path); in) {
    try {
      doc = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
      throw std::runtime_error(path + " is not a JSON object with \"runs\"; not overwriting it");
    }
  }
  if (!doc.is_object() || !doc.contains("runs") || !doc["runs"].is_array()) {
    throw std::runtime_error(path + " is not a JSON object with \"runs\"; not overwriting it");
  }
  auto& runs = doc["runs"];
  runs.erase(std::remove_if(runs.begin(), runs.end(),
                            [&](const nlohmann::json& r) {
                              return r.value("machine", "") == run["machine"] && r.value("label", "") == run["label"] &&
                                     r.value("tokens", 0) == run["tokens"];
                            }),
             runs.end());
  runs.push_back(run);
  std::ofstream(path) << doc.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(a.model);
    const auto& spec = loaded->spec;
    const tc::model::Pooling pooling = spec.pooling;
    if (!spec.architecture->bidirectional) throw std::runtime_error(a.model + " is not an encoder");
    const auto& vocab = loaded->tokenizer->vocab();
    if (vocab.bos_id < 0 || vocab.sep_id < 0) throw std::runtime_error(a.model + ": no [CLS]/[SEP] ids in its vocab");
    // The texts: [CLS], ids drawn from the vocab's body (past its first 1000), [SEP].
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<int32_t> body(std::min<int32_t>(1000, vocab.n_vocab() / 2), vocab.n_vocab() - 1);
    std::vector<std::vector<int32_t>> texts(static_cast<size_t>(a.n_texts));
    for (auto& t : texts) {
      t.push_back(vocab.bos_id);
      for (int i = 0; i < a.n_tokens - 2; ++i) t.push_back(body(rng));
      t.push_back(vocab.sep_id);
    }

    const lc::LlamaCppLibrary& lib = lc::LlamaCppLibrary::instance(a.lib.empty() ? default_lib() : std::filesystem::path(a.lib));
    if (!lib.ok()) throw std::runtime_error("libllama unusable: " + lib.reason());
    const lc::LlamaCppModel theirs_model(lib, a.model);
    lc::ContextOptions co;
    co.n_ctx = static_cast<uint32_t>(a.n_tokens);
    co.n_batch = co.n_ubatch = static_cast<uint32_t>(a.n_tokens);
    co.n_threads = a.threads;
    co.embeddings = true;
    lc::LlamaCppContext theirs(theirs_model, co);
    Ours ours(loaded, a.n_tokens, a.threads);

    auto time_ours = [&](std::vector<float>* first) {
      const auto t0 = Clock::now();
      for (size_t i = 0; i < texts.size(); ++i) {
        auto e = ours.embed(texts[i], pooling);
        if (i == 0 && first != nullptr) *first = std::move(e);
      }
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    auto time_theirs = [&](std::vector<float>* first) {
      const auto t0 = Clock::now();
      for (size_t i = 0; i < texts.size(); ++i) {
        theirs.clear();
        if (theirs.decode(texts[i].data(), static_cast<int32_t>(texts[i].size())) != 0) {
          throw std::runtime_error("llama_decode failed");
        }
        if (i == 0 && first != nullptr) {
          const float* e = theirs.sequence_embedding();
          first->assign(e, e + spec.n_embd);
        }
      }
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    time_ours(nullptr);  // warm-up: pages mapped, buffers grown
    time_theirs(nullptr);
    std::vector<double> ours_tps, theirs_tps, ratios, distances;
    for (int r = 0; r < a.rounds; ++r) {
      std::vector<float> mine, their;
      const double t_ours = r % 2 == 0 ? time_ours(&mine) : 0;
      const double t_theirs = time_theirs(&their);
      const double t_ours2 = r % 2 == 1 ? time_ours(&mine) : t_ours;
      distances.push_back(relative_distance(mine, their.data()));
      ours_tps.push_back(static_cast<double>(a.n_texts) / t_ours2);
      theirs_tps.push_back(static_cast<double>(a.n_texts) / t_theirs);
      ratios.push_back(ours_tps.back() / theirs_tps.back());
      std::fprintf(stderr, "round %d/%d: ours %.2f texts/s, llama.cpp %.2f texts/s, ratio %.3f\n", r + 1, a.rounds,
                   ours_tps.back(), theirs_tps.back(), ratios.back());
    }
    const double worst = *std::max_element(distances.begin(), distances.end());
    std::printf("%s (%s, %lld layers, n_embd %lld), %d tokens per text, %d texts per round, %d threads\n",
                a.model.c_str(), spec.arch.c_str(), static_cast<long long>(spec.n_layer),
                static_cast<long long>(spec.n_embd), a.n_tokens, a.n_texts, a.threads);
    std::printf("texts/s, median of %d: ours %.2f, llama.cpp %.2f; paired ratio %.3f; embeddings agree to %.2g\n",
                a.rounds, median(ours_tps), median(theirs_tps), median(ratios), worst);
    if (!a.json.empty()) {
      add_run(a.json, {{"machine", machine_name()},
                       {"label", a.label.empty() ? spec.arch : a.label},
                       {"arch", spec.arch},
                       {"n_layer", spec.n_layer},
                       {"n_embd", spec.n_embd},
                       {"tokens", a.n_tokens},
                       {"threads", a.threads},
                       {"ours_texts_per_s", median(ours_tps)},
                       {"llamacpp_texts_per_s", median(theirs_tps)},
                       {"ratio", median(ratios)},
                       {"relative_distance", worst}});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embedding_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
