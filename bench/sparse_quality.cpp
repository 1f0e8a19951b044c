// sparse_quality: what sparsity costs in quality, dense against sparse on the
// same model (issue 6's quality figures, docs/sparsity.md).
//   greedy agreement: for each of P prompts the dense model generates N
//     tokens greedily; the sparse model then reads the same prompt and those
//     tokens one per step (teacher forcing: its decode path) and we count the
//     positions where its greedy choice equals dense's token. Also reported:
//     how many of the P free-running sparse generations equal dense's
//     exactly, and the mean length of the common prefix.
//   perplexity: llama.cpp's method (engine/runtime/perplexity.h) on a text,
//     dense in 512-token steps, sparse one token per step (so every token
//     runs the sparse path with its own predicted set, as in decode).
//   sparse_quality -m MODEL [--stats STATS] --sparsity relu|teal:X -f TEXT
//                  [--prompts 20] [-n 256] [--ctx 256] [--chunks 0] [-t 2] [--random-prompts]
// Prompts: the first 8 words of P lines spread evenly over TEXT, or
// (--random-prompts, for generated models whose text is noise) 8 random
// token ids each, seeded.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "config/sparsity_setting.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/perplexity.h"
#include "engine/sparse/sparsity_plan.h"
#include "kernels/backend.h"

namespace {

using tc::model::LlamaModel;
using tc::text::TokenId;

struct Options {
  std::string model, stats, text, sparsity = "relu";
  int prompts = 20;
  int64_t n_gen = 256;
  int64_t n_ctx = 256;
  int64_t chunks = 0;
  int threads = 2;
  bool random_prompts = false;
};

constexpr const char* kUsage =
    "usage: sparse_quality -m MODEL [--stats STATS] --sparsity relu|teal:X -f TEXT [--prompts P] [-n N]\n"
    "                      [--ctx C] [--chunks K] [-t T] [--random-prompts]\n";

Options parse(int argc, char** argv) {
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-m") o.model = args.value();
    else if (a == "--stats") o.stats = args.value();
    else if (a == "--sparsity") o.sparsity = args.value();
    else if (a == "-f") o.text = args.value();
    else if (a == "--prompts") o.prompts = args.int_value();
    else if (a == "-n") o.n_gen = args.int64_value();
    else if (a == "--ctx") o.n_ctx = args.int64_value();
    else if (a == "--chunks") o.chunks = args.int64_value();
    else if (a == "-t") o.threads = args.int_value();
    else if (a == "--random-prompts") o.random_prompts = true;
    else args.usage();
  }
  if (o.model.empty() || o.text.empty() || o.prompts < 1 || o.n_gen < 1 || o.n_ctx < 8) args.usage();
  return o;
}

int64_t argmax(const float* v, int64_t n) { return std::max_element(v, v + n) - v; }

// Runs `tokens` one per step from an empty slot; the argmax after each.
std::vector<int64_t> teacher_forced(LlamaModel& m, tc::kernels::Backend& backend, const std::vector<TokenId>& tokens) {
  tc::runtime::KvCache kv(backend, m.spec(), 1, static_cast<int64_t>(tokens.size()) + 1);
  std::vector<float> logits;
  std::vector<int64_t> out;
  for (const TokenId t : tokens) {
    const tc::model::StepSequence seq{0, std::span(&t, 1), false};
    if (m.forward({&seq, 1}, kv, logits) != tc::model::StepStatus::Ok) std::exit(1);
    out.push_back(argmax(logits.data(), m.spec().n_vocab));
  }
  return out;
}

// Prompt, then n greedy tokens (one per step).
std::vector<TokenId> generate(LlamaModel& m, tc::kernels::Backend& backend, const std::vector<TokenId>& prompt,
                              int64_t n) {
  std::vector<TokenId> seq = prompt;
  tc::runtime::KvCache kv(backend, m.spec(), 1, static_cast<int64_t>(prompt.size()) + n + 1);
  std::vector<float> logits;
  std::span<const TokenId> step(seq);
  for (int64_t i = 0; i < n; ++i) {
    const tc::model::StepSequence s{0, step, false, i > 0};
    if (m.forward({&s, 1}, kv, logits) != tc::model::StepStatus::Ok) std::exit(1);
    seq.push_back(static_cast<TokenId>(argmax(logits.data(), m.spec().n_vocab)));
    step = std::span(seq).last(1);
  }
  return seq;
}

std::vector<std::vector<TokenId>> make_prompts(const Options& o, const tc::model::LoadedModel& m,
                                               const std::string& text) {
  std::vector<std::vector<TokenId>> prompts;
  const auto& vocab = m.tokenizer->vocab();
  if (o.random_prompts) {
    std::mt19937_64 rng(7);
    for (int p = 0; p < o.prompts; ++p) {
      std::vector<TokenId> t;
      if (vocab.add_bos) t.push_back(vocab.bos_id);
      for (int i = 0; i < 8; ++i) t.push_back(static_cast<TokenId>(rng() % static_cast<uint64_t>(m.spec.n_vocab)));
      prompts.push_back(t);
    }
    return prompts;
  }
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) {
    std::stringstream ws(line);
    std::string word, head;
    int n = 0;
    while (n < 8 && ws >> word) head += (n++ ? " " : "") + word;
    if (n == 8) lines.push_back(head);
  }
  for (int p = 0; p < o.prompts && !lines.empty(); ++p) {
    prompts.push_back(m.tokenizer->encode(lines[static_cast<size_t>(p) * lines.size() / static_cast<size_t>(o.prompts)]));
  }
  return prompts;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const auto setting = tc::config::parse_sparsity_setting(o.sparsity);
  const auto loaded = tc::model::load_model(o.model, {.stats = o.stats});
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = o.threads});
  LlamaModel dense(*loaded, *backend);
  auto plan = tc::sparse::plan_sparsity(*loaded, setting, 1);
  LlamaModel sparse(*loaded, *backend, plan.forward);
  plan.attach(sparse);
  const std::string text = tc::bench::read_file("sparse_quality", o.text);
  std::printf("sparse_quality: %s, %s (%s), %s\n\n", o.model.c_str(), o.sparsity.c_str(), plan.summary.c_str(),
              backend->name().c_str());

  // Greedy agreement.
  const auto prompts = make_prompts(o, *loaded, text);
  int64_t agree = 0, total = 0, identical = 0, prefix_sum = 0;
  for (const auto& prompt : prompts) {
    const auto reference = generate(dense, *backend, prompt, o.n_gen);
    const auto forced = teacher_forced(sparse, *backend, std::vector<TokenId>(reference.begin(), reference.end() - 1));
    for (size_t i = prompt.size() - 1; i + 1 < reference.size(); ++i) {
      agree += forced[i] == reference[i + 1];
      ++total;
    }
    const auto free_run = generate(sparse, *backend, prompt, o.n_gen);
    size_t common = 0;
    while (prompt.size() + common < reference.size() && free_run[prompt.size() + common] == reference[prompt.size() + common]) {
      ++common;
    }
    prefix_sum += static_cast<int64_t>(common);
    identical += common == static_cast<size_t>(o.n_gen);
    std::fprintf(stderr, "prompt %zu/%zu: common prefix %zu\n", &prompt - prompts.data() + 1, prompts.size(), common);
  }
  std::printf("| prompts | tokens each | teacher-forced greedy agreement | identical free-running | mean common prefix |\n");
  std::printf("| ---: | ---: | ---: | ---: | ---: |\n");
  std::printf("| %zu | %lld | %.2f%% (%lld/%lld) | %lld/%zu | %.1f |\n\n", prompts.size(),
              static_cast<long long>(o.n_gen), 100.0 * static_cast<double>(agree) / static_cast<double>(total),
              static_cast<long long>(agree), static_cast<long long>(total), static_cast<long long>(identical),
              prompts.size(), static_cast<double>(prefix_sum) / static_cast<double>(prompts.size()));

  // Perplexity.
  const auto& vocab = loaded->tokenizer->vocab();
  const auto tokens = loaded->tokenizer->encode(text);
  tc::runtime::KvCache kv(*backend, loaded->spec, 1, o.n_ctx);
  const TokenId bos = vocab.add_bos ? vocab.bos_id : -1;
  const auto d = tc::runtime::perplexity(dense, kv, tokens, bos, {o.n_ctx, 512, o.chunks}, {});
  const auto s = tc::runtime::perplexity(sparse, kv, tokens, bos, {o.n_ctx, 1, o.chunks}, {});
  std::printf("| perplexity | dense | sparse | relative change |\n| --- | ---: | ---: | ---: |\n");
  std::printf("| %lld tokens scored, %lld chunks of %lld | %.4f ± %.4f | %.4f ± %.4f | %+.2f%% |\n",
              static_cast<long long>(d.n_scored), static_cast<long long>(d.n_chunks), static_cast<long long>(o.n_ctx),
              d.ppl, d.ppl_error, s.ppl, s.ppl_error, 100.0 * (s.ppl / d.ppl - 1.0));
  if (auto* c = sparse.sparse_counters()) {
    std::printf("\nsparse FFN per layer (neurons of n_ff = %lld, per token): ", static_cast<long long>(loaded->spec.n_ff));
    for (size_t l = 0; l < c->token_layers.size(); ++l) {
      const double t = static_cast<double>(std::max<int64_t>(c->token_layers[l], 1));
      std::printf("%s%.1f%% predicted / %.1f%% computed", l ? ", " : "",
                  100.0 * static_cast<double>(c->predicted[l]) / t / static_cast<double>(loaded->spec.n_ff),
                  100.0 * static_cast<double>(c->computed[l]) / t / static_cast<double>(loaded->spec.n_ff));
    }
    std::printf("\n");
  }
  return 0;
}
