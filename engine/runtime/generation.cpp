// generate() and run_bench().
#include "engine/runtime/generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>

#include "engine/model/context_shift.h"

namespace tc::runtime {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Prefills `tokens` into `slot` in chunks; returns the last token's logits.
model::StepStatus prefill(model::LlamaModel& model, KvCache& kv, int slot, std::span<const text::TokenId> tokens,
                          int64_t n_batch, std::vector<float>& logits) {
  for (size_t begin = 0; begin < tokens.size(); begin += static_cast<size_t>(n_batch)) {
    const size_t n = std::min(tokens.size() - begin, static_cast<size_t>(n_batch));
    const model::StepSequence step{slot, tokens.subspan(begin, n), false};
    const auto status = model.forward({&step, 1}, kv, logits);
    if (status != model::StepStatus::Ok) return status;
  }
  return model::StepStatus::Ok;
}

}  // namespace

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Length: return "length";
    case StopReason::EndOfSequence: return "eos";
    case StopReason::ContextFull: return "context full";
    case StopReason::NoCandidates: return "no candidates";
    case StopReason::Complete: return "complete";
  }
  return "?";
}

GenerationStats generate(model::LlamaModel& model, KvCache& kv, const text::Tokenizer& tokenizer,
                         std::string_view prompt, const GenerateOptions& options,
                         const std::function<void(std::string_view)>& on_text) {
  GenerationStats stats;
  if (const std::string problem = check_lookup_draft(options.lookup_draft); !problem.empty()) {
    throw std::invalid_argument(problem);
  }
  const auto prompt_tokens = tokenizer.encode(prompt);
  if (prompt_tokens.empty()) throw std::invalid_argument("the prompt is empty");
  if (static_cast<int64_t>(prompt_tokens.size()) >= kv.n_ctx()) {
    throw std::invalid_argument("the prompt has " + std::to_string(prompt_tokens.size()) +
                                " tokens, the context holds " + std::to_string(kv.n_ctx()));
  }
  stats.n_prompt = static_cast<int64_t>(prompt_tokens.size());
  kv.clear(0);
  Sampler sampler(options.sampling, tokenizer.n_vocab());
  if (options.output_form) {
    sampler.constrain(ConstraintTokenTable::from(tokenizer, tokenizer.n_vocab()), *options.output_form);
  }
  if (options.sampling.dry_multiplier > 0.0f) {
    sampler.set_dry_breakers(make_dry_breakers(tokenizer, options.sampling.dry_sequence_breakers));
  }
  sampler.accept_prompt(prompt_tokens);
  text::StreamingDetokenizer detok(tokenizer, false, /*continuation=*/true);

  std::vector<float> logits;
  auto start = Clock::now();
  prefill(model, kv, 0, prompt_tokens, options.n_batch, logits);
  stats.prompt_seconds = seconds_since(start);

  start = Clock::now();
  const text::Vocab& vocab = tokenizer.vocab();
  // Lookup drafts: `fed` holds the last forward's tokens (the token sampled
  // before it, then its draft) and `logits` one row for each; `row` is the
  // row sampled next. `history` is what the drafts are looked up in.
  const auto n_vocab = static_cast<size_t>(model.spec().n_vocab);
  std::vector<text::TokenId> history(prompt_tokens);
  std::vector<text::TokenId> fed;
  size_t row = 0;
  DraftLength draft_length(options.lookup_draft.n_max);
  while (stats.n_generated < options.n_predict) {
    const auto result = sampler.sample(std::span(logits).subspan(row * n_vocab, n_vocab));
    if (result.status != SampleStatus::Ok) {
      stats.stop = StopReason::NoCandidates;
      break;
    }
    // EOS and the other end-of-generation tokens (EOT, ChatML's <|im_end|>), as the server stops.
    if (options.stop_at_eos && vocab.is_end_of_generation(result.token)) {
      stats.stop = StopReason::EndOfSequence;
      break;
    }
    sampler.accept(result.token);
    stats.tokens.push_back(result.token);
    ++stats.n_generated;
    const std::string piece = detok.push(result.token);
    if (!piece.empty()) on_text(piece);
    if (sampler.constraint_complete()) {
      stats.stop = StopReason::Complete;
      break;
    }
    if (stats.n_generated == options.n_predict) break;
    history.push_back(result.token);
    if (row + 1 < fed.size()) {
      // The next row holds the logits after the drafted token here: valid
      // when the sample drew it; otherwise the rest of the draft is another
      // continuation's, and the cache is cut back to what was kept.
      if (fed[row + 1] == result.token) {
        ++row;
        ++stats.n_draft_kept;
        continue;
      }
      kv.set_used(0, kv.n_used(0) - static_cast<int64_t>(fed.size() - row - 1));
    }
    if (fed.size() > 1) draft_length.update(static_cast<int32_t>(fed.size() - 1), static_cast<int32_t>(row));
    fed.assign(1, result.token);
    row = 0;
    if (options.context_shift && kv.n_used(0) + 1 > kv.n_ctx()) {
      const model::ContextShiftPlan plan = model::plan_context_shift(kv.n_used(0), kv.n_ctx(), options.n_keep);
      if (plan.n_discard > 0) {
        model.shift_context(kv, 0, plan.n_keep, plan.n_discard);
        ++stats.n_context_shifts;
      }
    }
    // No drafts where a recurrent state cannot drop the rejected ones.
    const int64_t limit = !kv.keeps_prefixes() ? 0
                          : std::min<int64_t>({draft_length.current(), options.n_predict - stats.n_generated - 1,
                                               kv.n_ctx() - kv.n_used(0) - 1});
    if (limit > 0) {
      const auto draft = lookup_draft(history, options.lookup_draft.ngram_min, options.lookup_draft.ngram_max,
                                      static_cast<int32_t>(limit));
      fed.insert(fed.end(), draft.begin(), draft.end());
      stats.n_drafted += static_cast<int64_t>(draft.size());
    }
    const model::StepSequence step{0, std::span(fed), fed.size() > 1, true};
    if (model.forward({&step, 1}, kv, logits) != model::StepStatus::Ok) {
      stats.stop = StopReason::ContextFull;
      break;
    }
  }
  stats.decode_seconds = seconds_since(start);
  const std::string rest = detok.flush();
  if (!rest.empty()) on_text(rest);
  return stats;
}

double BenchSeries::mean() const {
  if (tokens_per_second.empty()) return 0;
  return std::accumulate(tokens_per_second.begin(), tokens_per_second.end(), 0.0) /
         static_cast<double>(tokens_per_second.size());
}

double BenchSeries::stddev() const {
  if (tokens_per_second.size() < 2) return 0;
  const double m = mean();
  double ss = 0;
  for (double v : tokens_per_second) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(tokens_per_second.size() - 1));
}

std::vector<BenchSeries> run_bench(model::LlamaModel& model, KvCache& kv, const BenchOptions& options) {
  std::mt19937_64 rng(options.seed);
  const auto n_vocab = static_cast<uint64_t>(model.spec().n_vocab);
  auto random_tokens = [&](int64_t n) {
    std::vector<text::TokenId> t(static_cast<size_t>(n));
    for (auto& id : t) id = static_cast<text::TokenId>(rng() % n_vocab);
    return t;
  };
  std::vector<float> logits;
  std::vector<BenchSeries> out;
  const std::string depth = options.n_depth > 0 ? "@d" + std::to_string(options.n_depth) : "";
  const auto context = random_tokens(options.n_depth);
  // Empties `slot` and prefills the depth context into it (untimed).
  auto reset = [&](int slot) {
    kv.clear(slot);
    if (prefill(model, kv, slot, context, options.n_batch, logits) != model::StepStatus::Ok) {
      throw std::invalid_argument("the depth context (-d) does not fit the context");
    }
  };

  if (options.n_prompt > 0) {
    BenchSeries s{"pp" + std::to_string(options.n_prompt) + depth, {}};
    const auto tokens = random_tokens(options.n_prompt);
    for (int r = -1; r < options.repetitions; ++r) {  // r = -1: warm-up
      reset(0);
      const auto start = Clock::now();
      if (prefill(model, kv, 0, tokens, options.n_batch, logits) != model::StepStatus::Ok) {
        throw std::invalid_argument("pp test does not fit the context");
      }
      if (r >= 0) s.tokens_per_second.push_back(static_cast<double>(options.n_prompt) / seconds_since(start));
    }
    out.push_back(std::move(s));
  }
  if (options.n_gen > 0) {
    BenchSeries s{"tg" + std::to_string(options.n_gen) + depth, {}};
    const auto tokens = random_tokens(options.n_gen);
    for (int r = -1; r < options.repetitions; ++r) {
      reset(0);
      const auto start = Clock::now();
      for (const auto& token : tokens) {
        const model::StepSequence step{0, std::span(&token, 1), false, true};
        if (model.forward({&step, 1}, kv, logits) != model::StepStatus::Ok) {
          throw std::invalid_argument("tg test does not fit the context");
        }
      }
      if (r >= 0) s.tokens_per_second.push_back(static_cast<double>(options.n_gen) / seconds_since(start));
    }
    out.push_back(std::move(s));
  }
  if (options.n_gen > 0 && options.n_parallel > 1) {
    const int64_t n_seq = options.n_parallel;
    BenchSeries s{"tg" + std::to_string(options.n_gen) + "x" + std::to_string(n_seq) + depth, {}};
    std::vector<std::vector<text::TokenId>> tokens;
    for (int64_t q = 0; q < n_seq; ++q) tokens.push_back(random_tokens(options.n_gen));
    std::vector<model::StepSequence> step(static_cast<size_t>(n_seq));
    for (int r = -1; r < options.repetitions; ++r) {
      for (int64_t q = 0; q < n_seq; ++q) reset(static_cast<int>(q));
      const auto start = Clock::now();
      for (int64_t i = 0; i < options.n_gen; ++i) {
        for (int64_t q = 0; q < n_seq; ++q) {
          step[static_cast<size_t>(q)] = {static_cast<int>(q), std::span(&tokens[static_cast<size_t>(q)][static_cast<size_t>(i)], 1), false, true};
        }
        if (model.forward(step, kv, logits) != model::StepStatus::Ok) {
          throw std::invalid_argument("the parallel tg test does not fit the context");
        }
      }
      if (r >= 0) {
        s.tokens_per_second.push_back(static_cast<double>(n_seq * options.n_gen) / seconds_since(start));
      }
    }
    out.push_back(std::move(s));
  }
  for (int64_t q = 0; q < std::max<int64_t>(options.n_parallel, 1); ++q) kv.clear(static_cast<int>(q));
  return out;
}

}  // namespace tc::runtime
