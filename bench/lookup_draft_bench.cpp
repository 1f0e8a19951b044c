// lookup_draft_bench: decode speed with lookup drafts (speculative decoding
// from the sequence's own history, engine/runtime/lookup_draft.h) against
// plain decoding, through the Engine as the server runs it: one slot, greedy
// replies, ignore_eos. Each repetition runs every draft setting in turn
// (plain first), so the ratios are side by side; medians over repetitions.
//   lookup_draft_bench -m MODEL [--workloads echo,free,repeat] [--draft-max 0,4,8,16]
//                      [-n 128] [-r 3] [-t 2] [--ngram 3,5] [--json FILE]
// Workloads (prompts made here from the model itself, seeded):
//   echo    the model's own greedy continuation of --seed-text (n tokens),
//           then a blank line and that passage's first 8 tokens: replies
//           that quote their context (edits, extraction, summaries)
//   free    --seed-text alone: replies that draft only from their own
//           repetitions
//   repeat  a random 24-token phrase said four times (for generated models
//           whose text is noise; their greedy replies loop)
// Reported per workload and setting: decode tokens/s (first token to last,
// so prefill is left out), the speedup over plain (median of the paired
// ratios), drafted and kept tokens per generated token, and whether the
// tokens equal plain decoding's.
#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_args.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "engine/text/tokenizer.h"

namespace {

using tc::runtime::Clock;
using tc::text::TokenId;

struct Options {
  std::string model, json, seed_text = "In the beginning God created the heaven and the earth.";
  std::vector<std::string> workloads = {"echo", "free", "repeat"};
  std::vector<int> draft_max = {0, 4, 8, 16};
  int32_t n_gen = 128;
  int32_t ngram_min = 3, ngram_max = 5;
  int repetitions = 3;
  int threads = 2;
};

constexpr const char* kUsage =
    "usage: lookup_draft_bench -m MODEL [--workloads echo,free,repeat] [--draft-max 0,4,8,16] [-n N]\n"
    "                          [-r R] [-t T] [--seed-text TEXT] [--ngram MIN,MAX] [--json FILE]\n";

Options parse(int argc, char** argv) {
  Options o;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    const std::string& a = args.flag();
    if (a == "-m") o.model = args.value();
    else if (a == "--workloads") o.workloads = tc::bench::split_list(args.value());
    else if (a == "--draft-max") {
      o.draft_max.clear();
      for (const auto& v : tc::bench::split_list(args.value())) o.draft_max.push_back(std::atoi(v.c_str()));
    } else if (a == "-n") o.n_gen = args.int_value();
    else if (a == "-r") o.repetitions = args.int_value();
    else if (a == "-t") o.threads = args.int_value();
    else if (a == "--seed-text") o.seed_text = args.value();
    else if (a == "--ngram") {
      const auto v = tc::bench::split_list(args.value());
      if (v.size() != 2) args.usage();
      o.ngram_min = std::atoi(v[0].c_str());
      o.ngram_max = std::atoi(v[1].c_str());
    }
    else if (a == "--json") o.json = args.value();
    else args.usage();
  }
  if (o.model.empty() || o.n_gen < 2 || o.repetitions < 1 || o.draft_max.empty()) args.usage();
  if (std::find(o.draft_max.begin(), o.draft_max.end(), 0) == o.draft_max.end()) o.draft_max.insert(o.draft_max.begin(), 0);
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Run {
  std::vector<TokenId> tokens;
  double decode_tps = 0;
  int64_t drafted = 0, kept = 0;
};

// One greedy request of n tokens; decode time from its first token to its end.
Run run(tc::runtime::Engine& engine, const std::vector<TokenId>& prompt, int32_t n, int32_t draft_max) {
  tc::runtime::GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = n;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  r.return_tokens = true;
  r.draft_max = draft_max;
  const auto before = engine.stats();
  auto submitted = engine.submit(std::move(r));
  if (submitted.status != tc::runtime::SubmitStatus::Ok) {
    std::fprintf(stderr, "lookup_draft_bench: request refused: %s\n", submitted.message.c_str());
    std::exit(1);
  }
  Run out;
  Clock::time_point first{};
  for (;;) {
    tc::runtime::StreamEvent ev;
    if (!submitted.handle->next(ev, std::chrono::milliseconds(1000))) continue;
    if (first == Clock::time_point{} && !ev.tokens.empty()) first = Clock::now();
    for (const auto& t : ev.tokens) out.tokens.push_back(t.id);
    if (ev.kind == tc::runtime::StreamEvent::Kind::Error) {
      std::fprintf(stderr, "lookup_draft_bench: %s\n", ev.error.c_str());
      std::exit(1);
    }
    if (ev.kind == tc::runtime::StreamEvent::Kind::Finished) break;
  }
  const double s = std::chrono::duration<double>(Clock::now() - first).count();
  // The first event may carry several tokens (a kept draft): count them all
  // after the first.
  out.decode_tps = s > 0 ? static_cast<double>(out.tokens.size() - 1) / s : 0.0;
  // The counters are published after the step that finished the request.
  for (int i = 0; i < 1000; ++i) {
    const auto after = engine.stats();
    if (after.generated_tokens_total - before.generated_tokens_total >= static_cast<int64_t>(out.tokens.size())) {
      out.drafted = after.draft_tokens_total - before.draft_tokens_total;
      out.kept = after.draft_tokens_accepted_total - before.draft_tokens_accepted_total;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return out;
}

std::vector<TokenId> make_prompt(const std::string& workload, const Options& o, const tc::text::Tokenizer& tok,
                                 tc::runtime::Engine& engine) {
  const std::vector<TokenId> seed = tok.encode(o.seed_text);                          // with BOS where the vocab adds one
  const std::vector<TokenId> body = tok.encode(o.seed_text, {.add_special = false});  // without
  if (workload == "free") return seed;
  if (workload == "repeat") {
    std::mt19937_64 rng(7);
    std::vector<TokenId> phrase;
    for (int i = 0; i < 24; ++i) phrase.push_back(static_cast<TokenId>(3 + rng() % (tok.n_vocab() - 3)));
    std::vector<TokenId> out(seed.begin(), seed.end() - static_cast<ptrdiff_t>(body.size()));
    for (int i = 0; i < 4; ++i) out.insert(out.end(), phrase.begin(), phrase.end());
    return out;
  }
  if (workload == "echo") {
    const Run passage = run(engine, seed, o.n_gen, 0);
    std::vector<TokenId> out = seed;
    out.insert(out.end(), passage.tokens.begin(), passage.tokens.end());
    const auto blank = tok.encode("\n\n", {.add_special = false});
    out.insert(out.end(), blank.begin(), blank.end());
    out.insert(out.end(), body.begin(), body.end());
    out.insert(out.end(), passage.tokens.begin(), passage.tokens.begin() + std::min<size_t>(8, passage.tokens.size()));
    return out;
  }
  std::fprintf(stderr, "lookup_draft_bench: unknown workload %s (echo, free, repeat)\n", workload.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(o.model);
  tc::runtime::EngineOptions eo;
  eo.n_parallel = 1;
  eo.n_ctx = std::min<int64_t>(model->spec.n_ctx_train > 0 ? model->spec.n_ctx_train : 4096, 4096);
  eo.model.threads = o.threads;
  eo.lookup_draft = {.n_max = 0, .ngram_min = o.ngram_min, .ngram_max = o.ngram_max};
  tc::runtime::Engine engine(model, eo);
  const auto& tok = *model->tokenizer;

  nlohmann::json rows = nlohmann::json::array();
  std::printf("| workload | prompt | draft_max | decode t/s | speedup | drafted / token | kept / token | same tokens |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
  for (const auto& workload : o.workloads) {
    const auto prompt = make_prompt(workload, o, tok, engine);
    const int32_t n = static_cast<int32_t>(std::min<int64_t>(o.n_gen, eo.n_ctx - static_cast<int64_t>(prompt.size())));
    if (n < 2) {
      std::fprintf(stderr, "lookup_draft_bench: the %s prompt (%zu tokens) leaves no room in the context\n",
                   workload.c_str(), prompt.size());
      return 1;
    }
    std::vector<std::vector<Run>> runs(o.draft_max.size());
    for (int rep = 0; rep < o.repetitions; ++rep) {
      for (size_t d = 0; d < o.draft_max.size(); ++d) runs[d].push_back(run(engine, prompt, n, o.draft_max[d]));
    }
    for (size_t d = 0; d < o.draft_max.size(); ++d) {
      std::vector<double> tps, ratio;
      bool same = true;
      int64_t drafted = 0, kept = 0, generated = 0;
      for (int rep = 0; rep < o.repetitions; ++rep) {
        const Run& r = runs[d][static_cast<size_t>(rep)];
        tps.push_back(r.decode_tps);
        ratio.push_back(r.decode_tps / runs[0][static_cast<size_t>(rep)].decode_tps);
        same = same && r.tokens == runs[0][static_cast<size_t>(rep)].tokens;
        drafted += r.drafted;
        kept += r.kept;
        generated += static_cast<int64_t>(r.tokens.size());
      }
      const double per_drafted = static_cast<double>(drafted) / static_cast<double>(generated);
      const double per_kept = static_cast<double>(kept) / static_cast<double>(generated);
      std::printf("| %s | %zu | %d | %.2f | %.2fx | %.2f | %.2f | %s |\n", workload.c_str(), prompt.size(),
                  o.draft_max[d], median(tps), median(ratio), per_drafted, per_kept, same ? "yes" : "no");
      std::fflush(stdout);
      rows.push_back({{"workload", workload}, {"prompt_tokens", prompt.size()}, {"draft_max", o.draft_max[d]},
                      {"tps", median(tps)}, {"speedup", median(ratio)}, {"drafted_per_token", per_drafted},
                      {"kept_per_token", per_kept}, {"same_tokens", same}});
    }
  }
  if (!o.json.empty()) {
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%MZ", std::gmtime(&now));
    const nlohmann::json doc = {{"model", o.model},     {"date", date},    {"threads", o.threads},
                                {"n_gen", o.n_gen},     {"repetitions", o.repetitions}, {"rows", rows}};
    std::ofstream(o.json) << doc.dump(2) << "\n";
    std::printf("wrote %s\n", o.json.c_str());
  }
  engine.shutdown(std::chrono::milliseconds(0));
  return 0;
}
