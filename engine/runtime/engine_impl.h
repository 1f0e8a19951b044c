// Engine internals shared by its source files: the queued request, the
// running sequence, the KV slot, and Engine::Impl (the engine thread's state).
// engine.cpp runs the step loop, engine_draft.cpp the lookup drafts' part of
// a step, engine_api.cpp the thread-safe facade.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/embedding_pool.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/lookup_draft.h"
#include "engine/runtime/stop_text.h"
#include "engine/text/tokenizer.h"

namespace tc::runtime {

inline double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// A submitted request waiting for a slot.
struct Pending {
  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  Clock::time_point queued_at;
};

// A request in a slot: prefilling until n_prompt_done reaches the prompt's
// length, then decoding one token per step.
struct Sequence {
  Sequence(Pending p, const text::Tokenizer& tokenizer, int32_t n_vocab)
      : request(std::move(p.request)),
        handle(std::move(p.handle)),
        queued_at(p.queued_at),
        sampler(request.sampling, n_vocab),
        detok(tokenizer, false, /*continuation=*/true),
        stop(request.stop) {}

  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  Clock::time_point queued_at;
  Sampler sampler;
  text::StreamingDetokenizer detok;
  StopTextFilter stop;

  uint64_t admit_index = 0;      // FIFO order of admission, for prefill priority
  int64_t n_cached = 0;          // prompt tokens whose KV entries were reused
  int64_t n_prompt_done = 0;     // prompt tokens in the KV cache (cached ones included)
  int32_t n_generated = 0;       // tokens accepted into the output
  // After a context shift: the slot's first positions that still hold what
  // a fresh prefill of their tokens would (the rest were shifted), for
  // prefix reuse once the request is done; -1: never shifted.
  int64_t n_exact = -1;
  text::TokenId next_token = -1; // sampled, fed by the next decode step
  // Lookup drafts (lookup_draft.h): this step's decode tokens (next_token,
  // then the draft) when it drafted, and the draft length for the next.
  std::vector<text::TokenId> verify;
  DraftLength draft_length{0};
  std::vector<TokenInfo> tokens; // sampled since the last event (return_tokens only)
  Clock::time_point admitted_at{};
  Clock::time_point first_token_at{};
  bool has_first_token = false;
  std::optional<EmbeddingPool> pool;  // embedding requests: their rows so far

  int64_t n_prompt() const { return static_cast<int64_t>(request.prompt.size()); }
  bool decoding() const { return n_prompt_done == n_prompt(); }
  bool embedding() const { return pool.has_value(); }
};

// A KV cache slot and what it holds.
struct Slot {
  std::vector<text::TokenId> cached;  // ids whose entries positions [0, kv.n_used) hold
  std::unique_ptr<Sequence> seq;      // the running request, if any
  uint64_t last_used = 0;             // for choosing among equally good free slots (LRU)
};

struct Engine::Impl {
  Impl(std::shared_ptr<const model::LoadedModel> m, EngineOptions o) : loaded(std::move(m)), options(o) {}

  // Immutable after construction.
  const std::shared_ptr<const model::LoadedModel> loaded;
  const EngineOptions options;

  // Shared state, guarded by `mutex`.
  mutable std::mutex mutex;
  std::condition_variable wake;  // the loop waits here when idle
  std::deque<Pending> queue;
  EngineStats stats;
  bool stopping = false;         // shutdown() called: no more submits
  Clock::time_point grace_end{};
  std::thread thread;
  std::mutex join_mutex;         // serialises shutdown()'s join

  std::vector<std::string> setup_summary;  // set once, before Ready; guarded by `mutex`
  const FfnActivityRing* activity = nullptr;  // activity_ring once Ready; guarded by `mutex`
  const DecodeTimeRing* decode_times = nullptr;  // decode_ring once Ready; guarded by `mutex`
  EngineBandwidths bandwidths;                   // set before Ready; guarded by `mutex`

  // Engine thread only.
  RunnableModel runnable;                  // backends and forward pass; outlives kv
  model::LlamaModel* llama = nullptr;      // runnable.llama
  std::unique_ptr<KvCache> kv;
  // The sparse FFN's counters after each step (thread-safe itself; readers
  // reach it through `activity`).
  std::unique_ptr<FfnActivityRing> activity_ring;
  std::unique_ptr<DecodeTimeRing> decode_ring;  // decode steps' wall time (and split)
  model::HybridStepTimer* timer = nullptr;      // hybrid with options.time_split; owned by llama
  // Constrained output's token bytes, made by the first such request.
  std::shared_ptr<const ConstraintTokenTable> constraint_tokens;
  // DRY's breakers per breaker set, made on first use (a scan of the vocabulary).
  std::map<std::vector<std::string>, std::shared_ptr<const DryBreakers>> dry_breakers;
  EngineBandwidths measured;                    // build()'s probe, published as `bandwidths`
  std::vector<Slot> slots;
  uint64_t tick = 0;                         // admissions and slot releases, in order
  std::vector<model::StepSequence> step;     // this step's sequences (decodes, then prefill chunks)
  std::vector<int> prefill_order;            // scratch: prefilling slots by admission
  std::vector<Pending> admitted;             // scratch: popped from the queue this step
  std::vector<Pending> dropped;              // scratch: cancelled or expired while queued
  std::vector<FinishReason> dropped_reason;
  std::vector<float> logits;
  std::vector<float> embeddings;  // this step's embedding rows, f32 [rows, n_embd]
  // This step's sequences that sample a token: (slot, logits row), and what
  // their samplers drew (scratch, sized once).
  std::vector<std::pair<int, const float*>> to_sample;
  std::vector<SampleResult> sampled;
  kernels::Backend* host = nullptr;  // the backend whose CPU threads sample (runnable's CPU one where it has two)
  // Counters since the last publish.
  int64_t delta_prompt = 0, delta_cached = 0, delta_generated = 0, delta_steps = 0, delta_shifts = 0;
  int64_t delta_drafted = 0, delta_draft_kept = 0;

  void run();
  void build();
  bool loop_once();  // false: the loop is over
  void fail(const std::string& message);
  void publish_stats();         // copies the loop's counters into `stats`
  void publish_stats_locked();  // the same, `mutex` held

  EngineBandwidths probe_bandwidths();
  void admit(Pending pending);
  void run_step();
  // Makes room for one more position in a full slot whose request asked for
  // a context shift; false: it did not (the request did not ask, or nothing
  // can be dropped).
  bool shift_context(int slot_idx);
  // Lookup drafts (engine_draft.cpp). The draft length a decoding sequence
  // gets (0: none) given what the step's budget and its slot leave.
  int32_t draft_limit(const Sequence& seq, int slot_idx, int64_t budget) const;
  // Fills seq.verify with next_token and a draft of at most `limit` tokens
  // from its own history; returns the draft's length (0: plain decode).
  int32_t propose_draft(int slot_idx, int32_t limit);
  // After the sequence's first row was sampled and emitted: samples the
  // drafted positions' rows (`rows` f32 [1 + draft, n_vocab]) in order while
  // each draws the drafted token, then cuts the slot back to what was kept.
  void check_draft(int slot_idx, const Sequence* seq, const float* rows, size_t row_size);
  void emit(int slot_idx, const SampleResult& result);
  void finish(int slot_idx, FinishReason reason, std::string text = {});
  // An embedding sequence's chunk came back: `rows` f32 [n_rows, n_embd] go
  // into its pool; at the end of its prompt it finishes with the embedding.
  void pool_embedding_rows(int slot_idx, const float* rows, int64_t n_rows, int64_t n_chunk);
  void error(int slot_idx, const std::string& message);
  void release(int slot_idx);
  // Recurrent caches: the prompt position after which the slot's state is
  // saved as its checkpoint (KvCache::save_checkpoint); -1: none.
  int64_t checkpoint_mark(const Sequence& seq) const;

  const text::Tokenizer& tokenizer() const { return *loaded->tokenizer; }
};

}  // namespace tc::runtime
