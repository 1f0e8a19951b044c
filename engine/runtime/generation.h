// Single-sequence generation and the llama-bench style benchmark, on top of
// LlamaModel + KvCache + Sampler: what `thermocline generate` and
// `thermocline bench` run. The server's continuous batching is separate.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/lookup_draft.h"
#include "engine/runtime/sampler.h"
#include "engine/text/tokenizer.h"

namespace tc::runtime {

struct GenerateOptions {
  int32_t n_predict = 128;     // tokens to generate at most
  int64_t n_batch = 512;       // prompt tokens per prefill step
  bool stop_at_eos = true;
  SamplingParams sampling;
  // Constrained output (JSON mode, a JSON Schema): the text generated takes
  // this form, and generation stops when it is whole (output_constraint.h).
  std::optional<OutputForm> output_form;
  // Context shift (model/context_shift.h): when the cache is full, keep
  // the first n_keep positions, drop the oldest half of the rest and go on;
  // off: generation stops there (StopReason::ContextFull).
  bool context_shift = false;
  int64_t n_keep = 4;
  // Lookup drafts (lookup_draft.h; n_max 0: off): the same tokens in fewer
  // forward passes where the text repeats its context.
  LookupDraftOptions lookup_draft;
};

// Complete: the constrained output is whole.
enum class StopReason { Length, EndOfSequence, ContextFull, NoCandidates, Complete };
std::string_view stop_reason_name(StopReason reason);

struct GenerationStats {
  int64_t n_prompt = 0;
  int64_t n_generated = 0;
  int64_t n_context_shifts = 0;
  int64_t n_drafted = 0;     // lookup-drafted tokens run through the model
  int64_t n_draft_kept = 0;  // of those, the ones sampling drew (each a forward pass saved)
  double prompt_seconds = 0;
  double decode_seconds = 0;
  StopReason stop = StopReason::Length;
  std::vector<text::TokenId> tokens;  // the generated ids

  double prompt_tokens_per_second() const { return prompt_seconds > 0 ? n_prompt / prompt_seconds : 0; }
  double decode_tokens_per_second() const { return decode_seconds > 0 ? n_generated / decode_seconds : 0; }
};

// Tokenizes `prompt` (with BOS as the vocab asks), prefills slot 0 of `kv`
// from position 0 and generates; `on_text` receives each piece of whole
// UTF-8 text as it becomes available. Throws std::invalid_argument when the
// prompt alone does not fit the cache.
GenerationStats generate(model::LlamaModel& model, KvCache& kv, const text::Tokenizer& tokenizer,
                         std::string_view prompt, const GenerateOptions& options,
                         const std::function<void(std::string_view)>& on_text);

struct BenchOptions {
  int64_t n_prompt = 512;  // pp test: one prefill of this many tokens (0: skip)
  int64_t n_gen = 128;     // tg test: this many single-token decodes from an empty cache (0: skip)
  int64_t n_batch = 512;   // prefill chunk
  // > 0: every test starts after this many tokens of context, prefilled
  // (untimed) before each run; the tests are named "pp512@d4096" etc., as
  // llama-bench's -d names them.
  int64_t n_depth = 0;
  // > 1: also a tg test of this many sequences decoding together, one token
  // each per step from their own KV slots (the server's batched decode);
  // the KvCache needs that many slots.
  int64_t n_parallel = 1;
  int repetitions = 5;
  uint64_t seed = 1;       // for the random token ids
};

struct BenchSeries {
  std::string test;                 // "pp512", "tg128", "tg128x8" (8 sequences, tokens/s summed over them), "tg128@d4096"
  std::vector<double> tokens_per_second;  // one per repetition
  double mean() const;
  double stddev() const;
};

// llama-bench's method: a warm-up run, then `repetitions` timed runs of each
// test on random tokens, each from an empty cache (or one holding n_depth
// tokens of context).
std::vector<BenchSeries> run_bench(model::LlamaModel& model, KvCache& kv, const BenchOptions& options);

}  // namespace tc::runtime
