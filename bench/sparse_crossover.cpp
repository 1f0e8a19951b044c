// sparse_crossover: the batch size above which the dense FFN decodes faster
// than the predicted sparse one, at the engine level. B sequences decode one
// token each per step (as the server batches them); the union of their
// predicted sets grows with B until gathering stops paying. Dense runs a
// dense file (ffn_down), sparse runs the sparse file (PWRI or with
// predictors); both the same model. Rounds interleave the two; medians.
//   sparse_crossover --dense FILE --sparse FILE [-t T] [-r ROUNDS] [--batch LIST] [--steps N]
// Prints a markdown table of step time and tokens/s per batch size and the
// crossover: the smallest batch where dense is faster (the value for
// --sparse-max-tokens).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/backend.h"

namespace {

using tc::bench::Clock;
using tc::bench::median;
using tc::model::LlamaModel;

struct Options {
  std::string dense_path, sparse_path;
  int threads = 2;
  int rounds = 5;
  int steps = 16;  // timed decode steps per measurement (after 4 warm-up steps)
  std::vector<int64_t> batches = {1, 2, 4, 8, 16, 32};
};

constexpr const char* kUsage =
    "usage: sparse_crossover --dense FILE --sparse FILE [-t T] [-r ROUNDS] [--batch LIST] [--steps N]\n";

Options parse(int argc, char** argv) {
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "--dense") o.dense_path = args.value();
    else if (a == "--sparse") o.sparse_path = args.value();
    else if (a == "-t") o.threads = args.int_value();
    else if (a == "-r") o.rounds = args.int_value();
    else if (a == "--steps") o.steps = args.int_value();
    else if (a == "--batch") {
      o.batches.clear();
      for (const auto& s : tc::bench::split_list(args.value())) o.batches.push_back(std::atoll(s.c_str()));
    } else args.usage();
  }
  if (o.dense_path.empty() || o.sparse_path.empty() || o.threads < 1 || o.rounds < 1 || o.steps < 1) args.usage();
  return o;
}

// Seconds per decode step of `batch` sequences (one token each), median-free:
// one measurement of o.steps steps after 4 warm-up steps.
double seconds_per_step(LlamaModel& m, tc::kernels::Backend& backend, int64_t batch, int steps, uint64_t seed) {
  const int warmup = 4;
  tc::runtime::KvCache kv(backend, m.spec(), static_cast<int>(batch), warmup + steps + 1);
  std::mt19937_64 rng(seed);
  std::vector<tc::text::TokenId> ids(static_cast<size_t>(batch));
  std::vector<tc::model::StepSequence> seqs(static_cast<size_t>(batch));
  std::vector<float> logits;
  Clock::time_point start;
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) start = Clock::now();
    for (int64_t b = 0; b < batch; ++b) {
      ids[static_cast<size_t>(b)] = static_cast<tc::text::TokenId>(rng() % static_cast<uint64_t>(m.spec().n_vocab));
      seqs[static_cast<size_t>(b)] = {static_cast<int>(b), std::span(&ids[static_cast<size_t>(b)], 1), false, true};
    }
    if (m.forward(seqs, kv, logits) != tc::model::StepStatus::Ok) {
      std::fprintf(stderr, "sparse_crossover: forward failed\n");
      std::exit(1);
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count() / steps;
}


}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int64_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = o.threads});
  const auto dense_model = tc::model::load_model(o.dense_path);
  const auto sparse_model = tc::model::load_model(o.sparse_path);
  LlamaModel dense(*dense_model, *backend);
  LlamaModel sparse(*sparse_model, *backend,
                    {.ffn_mode = tc::model::FfnMode::Sparse, .sparse_max_tokens = max_batch});
  std::printf("sparse_crossover: dense %s, sparse %s, %s, %d rounds of %d steps\n\n", o.dense_path.c_str(),
              o.sparse_path.c_str(), backend->name().c_str(), o.rounds, o.steps);
  std::printf("| batch | dense ms/step | sparse ms/step | dense tok/s | sparse tok/s | sparse vs dense |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: | ---: |\n");
  int64_t crossover = 0;
  for (const int64_t b : o.batches) {
    std::vector<double> d, s;
    for (int r = 0; r < o.rounds; ++r) {
      d.push_back(seconds_per_step(dense, *backend, b, o.steps, 100 + static_cast<uint64_t>(r)));
      s.push_back(seconds_per_step(sparse, *backend, b, o.steps, 100 + static_cast<uint64_t>(r)));
    }
    const double dm = median(d), sm = median(s);
    std::printf("| %lld | %.2f | %.2f | %.2f | %.2f | %.2fx |\n", static_cast<long long>(b), dm * 1e3, sm * 1e3,
                static_cast<double>(b) / dm, static_cast<double>(b) / sm, dm / sm);
    std::fflush(stdout);
    if (crossover == 0 && dm < sm) crossover = b;
  }
  if (crossover == 0) {
    std::printf("\ncrossover: sparse is faster at every batch measured (up to %lld)\n",
                static_cast<long long>(max_batch));
  } else {
    std::printf("\ncrossover: dense is faster from batch %lld\n", static_cast<long long>(crossover));
  }
  return 0;
}
