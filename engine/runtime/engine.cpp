// The Engine facade: request validation and the bounded queue (any thread),
// and the engine thread's step loop (continuous batching with prefix reuse).
#include "engine/runtime/engine.h"

#include <algorithm>
#include <exception>
#include <span>
#include <stdexcept>
#include <utility>

#include "engine/model/context_shift.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/embedding_pool.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/request_check.h"
#include "engine/sparse/bandwidth_probe.h"
#include "engine/runtime/stop_text.h"
#include "engine/text/tokenizer.h"

namespace tc::runtime {

namespace {

double seconds_between(Clock::time_point from, Clock::time_point to) {
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

size_t common_prefix(std::span<const text::TokenId> a, std::span<const text::TokenId> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

std::string check_options(const EngineOptions& o) {
  if (o.n_parallel < 1) return "n_parallel must be >= 1, got " + std::to_string(o.n_parallel);
  if (o.n_ctx < 1) return "n_ctx must be >= 1, got " + std::to_string(o.n_ctx);
  if (o.n_batch < 1) return "n_batch must be >= 1, got " + std::to_string(o.n_batch);
  if (o.queue_size < 1) return "queue_size must be >= 1, got " + std::to_string(o.queue_size);
  if (o.model.threads < 0) {
    return "threads must be >= 0 (0 = physical cores), got " + std::to_string(o.model.threads);
  }
  return {};
}

}  // namespace

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
  void emit(int slot_idx, const SampleResult& result);
  void finish(int slot_idx, FinishReason reason, std::string text = {});
  // An embedding sequence's chunk came back: `rows` f32 [n_rows, n_embd] go
  // into its pool; at the end of its prompt it finishes with the embedding.
  void pool_embedding_rows(int slot_idx, const float* rows, int64_t n_rows, int64_t n_chunk);
  void error(int slot_idx, const std::string& message);
  void release(int slot_idx);

  const text::Tokenizer& tokenizer() const { return *loaded->tokenizer; }
};

void Engine::Impl::run() {
  try {
    build();
  } catch (const std::exception& e) {
    fail(std::string("engine failed to start: ") + e.what());
    return;
  }
  {
    std::lock_guard lock(mutex);
    setup_summary = runnable.summary;
    activity = activity_ring.get();
    decode_times = decode_ring.get();
    bandwidths = measured;
    const bool first_on_host = runnable.backend->device() == kernels::DeviceKind::Cpu;
    stats.kv_cache_host_bytes = (first_on_host ? kv->first_bytes() : 0) + (kv->bytes() - kv->first_bytes());
    stats.kv_cache_device_bytes = first_on_host ? 0 : kv->first_bytes();
    stats.state = EngineState::Ready;
  }
  try {
    while (loop_once()) {
    }
  } catch (const std::exception& e) {
    fail(std::string("engine step failed: ") + e.what());
    return;
  }
  std::lock_guard lock(mutex);
  stats.state = EngineState::Stopped;
  stats.requests_running = 0;
  stats.requests_waiting = 0;
}

void Engine::Impl::build() {
  if (!loaded) throw std::invalid_argument("no model");
  if (!loaded->tokenizer) throw std::invalid_argument("the model has no tokenizer");
  if (const std::string problem = check_options(options); !problem.empty()) throw std::invalid_argument(problem);
  runnable = set_up_model(loaded, options.model,
                          {.n_ctx = options.n_ctx, .n_parallel = options.n_parallel, .n_batch = options.n_batch});
  llama = runnable.llama.get();
  host = runnable.cpu_backend ? runnable.cpu_backend.get() : runnable.backend.get();
  kv = std::make_unique<KvCache>(runnable.make_kv_cache());
  runnable.summary.push_back("KV cache: " + kv->describe());
  if (llama->sparse_counters() != nullptr) {
    activity_ring = std::make_unique<FfnActivityRing>(llama->hybrid() ? "hybrid" : "sparse", loaded->spec.n_layer,
                                                      loaded->spec.n_ff);
  } else {
    activity_ring = std::make_unique<FfnActivityRing>();
  }
  if (options.time_split && llama->hybrid()) timer = &llama->enable_time_split();
  decode_ring = std::make_unique<DecodeTimeRing>(timer != nullptr);
  if (options.probe_bandwidth) measured = probe_bandwidths();
  slots.resize(static_cast<size_t>(options.n_parallel));
  step.reserve(slots.size());
  to_sample.reserve(slots.size());
  sampled.resize(slots.size());
  prefill_order.reserve(slots.size());
  admitted.reserve(slots.size());
}

// The memories the engine reads, each probed over 64 MiB; a probe that
// fails (no room left on the GPU, say) leaves its figure unknown.
EngineBandwidths Engine::Impl::probe_bandwidths() {
  constexpr size_t kProbeBytes = size_t{64} << 20;
  EngineBandwidths bw;
  auto probe = [this](auto&& measure) {
    try {
      return measure();
    } catch (const std::exception& e) {
      runnable.summary.push_back(std::string("bandwidth probe failed: ") + e.what());
      return 0.0;
    }
  };
  bw.host = probe([&] { return sparse::measure_memory_bandwidth(*host, kProbeBytes); });
  kernels::Backend& main = *runnable.backend;
  if (main.device() != kernels::DeviceKind::Cpu) {
    bw.device = probe([&] { return sparse::measure_memory_bandwidth(main, kProbeBytes); });
    if (timer != nullptr && runnable.cpu_backend) {
      bw.pcie = probe([&] { return sparse::measure_bandwidths(main, *runnable.cpu_backend, kProbeBytes).pcie_h2d; });
    }
  }
  return bw;
}

void Engine::Impl::fail(const std::string& message) {
  std::deque<Pending> queued;
  {
    std::lock_guard lock(mutex);
    stats.state = EngineState::Failed;
    stats.failure = message;
    stats.requests_running = 0;
    stats.requests_waiting = 0;
    queued.swap(queue);
  }
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Error;
  ev.error = message;
  for (auto& slot : slots) {
    if (slot.seq) slot.seq->handle->push(ev);
    slot.seq.reset();
  }
  // Requests caught between the queue and a slot when a step threw.
  for (auto* list : {&admitted, &dropped}) {
    for (auto& p : *list) {
      if (p.handle) p.handle->push(ev);
    }
    list->clear();
  }
  for (auto& p : queued) p.handle->push(ev);
}

void Engine::Impl::publish_stats() {
  std::lock_guard lock(mutex);
  publish_stats_locked();
}

void Engine::Impl::publish_stats_locked() {
  int running = 0;
  int64_t used = 0, cached = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    const int64_t n = kv->n_used(static_cast<int>(i));
    if (slots[i].seq) {
      ++running;
      used += n;
    } else {
      cached += n;
    }
  }
  stats.requests_running = running;
  stats.requests_waiting = static_cast<int>(queue.size());
  stats.prompt_tokens_total += delta_prompt;
  stats.cached_tokens_total += delta_cached;
  stats.generated_tokens_total += delta_generated;
  stats.steps_total += delta_steps;
  stats.context_shifts_total += delta_shifts;
  stats.kv_tokens_used = used;
  stats.kv_tokens_cached = cached;
  delta_prompt = delta_cached = delta_generated = delta_steps = delta_shifts = 0;
}

bool Engine::Impl::loop_once() {
  const auto now = Clock::now();
  bool cancel_all = false;
  {
    std::lock_guard lock(mutex);
    cancel_all = stopping && now >= grace_end;
  }

  // Running requests: cancelled, past their deadline, or cut by shutdown.
  int n_active = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    auto& seq = slots[i].seq;
    if (!seq) continue;
    if (cancel_all || seq->handle->cancelled()) {
      finish(static_cast<int>(i), FinishReason::Cancelled);
    } else if (seq->request.deadline && now >= *seq->request.deadline) {
      finish(static_cast<int>(i), FinishReason::Length);
    } else {
      ++n_active;
    }
  }

  // Queued requests: drop the dead ones, admit FIFO into free slots, or
  // sleep until there is something to do.
  admitted.clear();
  dropped.clear();
  dropped_reason.clear();
  {
    std::unique_lock lock(mutex);
    for (auto it = queue.begin(); it != queue.end();) {
      const bool cancelled = cancel_all || it->handle->cancelled();
      const bool expired = it->request.deadline && now >= *it->request.deadline;
      if (cancelled || expired) {
        dropped_reason.push_back(cancelled ? FinishReason::Cancelled : FinishReason::Length);
        dropped.push_back(std::move(*it));
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
    const int n_free = static_cast<int>(slots.size()) - n_active;
    while (!queue.empty() && static_cast<int>(admitted.size()) < n_free) {
      admitted.push_back(std::move(queue.front()));
      queue.pop_front();
    }
    stats.requests_waiting = static_cast<int>(queue.size());
    if (n_active == 0 && admitted.empty() && dropped.empty()) {
      if (stopping) return false;
      // Idle: a submit or shutdown() wakes us.
      publish_stats_locked();
      wake.wait(lock, [&] { return !queue.empty() || stopping; });
      return true;
    }
  }

  for (size_t i = 0; i < dropped.size(); ++i) {
    const auto t = Clock::now();
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::Finished;
    ev.finish = dropped_reason[i];
    ev.usage.prompt_tokens = static_cast<int64_t>(dropped[i].request.prompt.size());
    ev.queue_seconds = seconds_between(dropped[i].queued_at, t);
    ev.total_seconds = ev.queue_seconds;
    dropped[i].handle->push(std::move(ev));
  }
  dropped.clear();
  for (auto& p : admitted) admit(std::move(p));
  admitted.clear();

  run_step();
  if (const auto* counters = llama->sparse_counters()) activity_ring->record(*counters, llama->hybrid_counters());
  publish_stats();
  return true;
}

void Engine::Impl::admit(Pending pending) {
  // The free slot holding the longest prefix of the prompt; at least one
  // prompt token is always computed, for the logits. Ties go to the slot
  // idle the longest, so fresh caches survive.
  // Embeddings pooled over every row (mean) or the first (cls) compute
  // every row: they reuse nothing.
  const auto& prompt = pending.request.prompt;
  const auto& embedding = pending.request.embedding;
  const bool reuse = !embedding || *embedding == model::Pooling::Last;
  int best = -1;
  size_t best_lcp = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].seq) continue;
    const size_t lcp = reuse ? std::min(common_prefix(slots[i].cached, prompt), prompt.size() - 1) : 0;
    if (best < 0 || lcp > best_lcp ||
        (lcp == best_lcp && slots[i].last_used < slots[static_cast<size_t>(best)].last_used)) {
      best = static_cast<int>(i);
      best_lcp = lcp;
    }
  }
  if (best < 0) throw std::logic_error("admit: no free slot");
  Slot& slot = slots[static_cast<size_t>(best)];
  slot.cached.resize(best_lcp);
  kv->set_used(best, static_cast<int64_t>(best_lcp));

  auto seq = std::make_unique<Sequence>(std::move(pending), tokenizer(), static_cast<int32_t>(llama->spec().n_vocab));
  if (!seq->embedding() && (seq->request.json_object || seq->request.json_schema || seq->request.tool_call)) {
    if (!constraint_tokens) {
      constraint_tokens = ConstraintTokenTable::from(tokenizer(), static_cast<int32_t>(llama->spec().n_vocab));
    }
    const auto& r = seq->request;
    seq->sampler.constrain(constraint_tokens, r.tool_call     ? OutputForm::call(r.tool_call)
                                              : r.json_schema   ? OutputForm::json_schema(r.json_schema)
                                                                : OutputForm::json_object());
  }
  if (seq->request.embedding) seq->pool.emplace(*seq->request.embedding, llama->spec().n_embd);
  seq->admit_index = ++tick;
  seq->admitted_at = Clock::now();
  seq->n_cached = static_cast<int64_t>(best_lcp);
  seq->n_prompt_done = seq->n_cached;
  seq->sampler.accept_prompt(seq->request.prompt);
  delta_cached += seq->n_cached;
  slot.seq = std::move(seq);
  slot.last_used = tick;
}

void Engine::Impl::run_step() {
  step.clear();
  prefill_order.clear();
  int64_t budget = options.n_batch;
  const int32_t n_vocab = static_cast<int32_t>(llama->spec().n_vocab);

  // Decodes first: one token per running stream, whatever the budget.
  for (size_t i = 0; i < slots.size(); ++i) {
    auto& seq = slots[i].seq;
    if (!seq) continue;
    if (!seq->decoding()) {
      prefill_order.push_back(static_cast<int>(i));
      continue;
    }
    const int slot_idx = static_cast<int>(i);
    if (kv->n_used(slot_idx) + 1 > kv->n_ctx() && !shift_context(slot_idx)) {
      // ContextFull: submit()'s check rules it out unless the request asked
      // for a context shift; kept so that a bookkeeping bug ends one request,
      // not the step.
      finish(slot_idx, FinishReason::Length);
      continue;
    }
    if (seq->next_token < 0 || seq->next_token >= n_vocab) {
      error(slot_idx, "sampled token id " + std::to_string(seq->next_token) + " is out of range");
      continue;
    }
    step.push_back({slot_idx, std::span(&seq->next_token, 1), false, true});
    --budget;
  }
  // Then prefill chunks, oldest admission first, while the budget lasts.
  std::sort(prefill_order.begin(), prefill_order.end(), [&](int a, int b) {
    return slots[static_cast<size_t>(a)].seq->admit_index < slots[static_cast<size_t>(b)].seq->admit_index;
  });
  for (const int slot_idx : prefill_order) {
    if (budget <= 0) break;
    auto& seq = *slots[static_cast<size_t>(slot_idx)].seq;
    const int64_t n = std::min(seq.n_prompt() - seq.n_prompt_done, budget);
    const auto chunk =
        std::span(seq.request.prompt).subspan(static_cast<size_t>(seq.n_prompt_done), static_cast<size_t>(n));
    // submit() checked the ids; checked again so one bad request can never
    // fail a whole step.
    if (std::any_of(chunk.begin(), chunk.end(), [&](text::TokenId id) { return id < 0 || id >= n_vocab; })) {
      error(slot_idx, "a prompt token id is out of range [0, " + std::to_string(n_vocab) + ")");
      continue;
    }
    if (seq.embedding()) {
      step.push_back({slot_idx, chunk, seq.pool->wants_all_rows(seq.n_prompt_done), /*generated=*/false,
                      /*embeddings=*/true});
    } else {
      step.push_back({slot_idx, chunk, false});
    }
    budget -= n;
  }
  if (step.empty()) return;

  // A decode step (every sequence one generated token) is timed for the
  // engine view; prefill chunks would blur the time per token.
  const bool decode_step = prefill_order.empty();
  const model::HybridTimeSplit split_before = timer != nullptr ? timer->split() : model::HybridTimeSplit{};
  const double forward_start = model::host_seconds();
  const auto status = llama->forward(step, *kv, logits, &embeddings);
  if (decode_step && status == model::StepStatus::Ok) {
    const double wall_s = model::host_seconds() - forward_start;
    if (timer != nullptr) {
      const model::HybridTimeSplit split = split_difference(timer->split(), split_before);
      decode_ring->record(static_cast<int64_t>(step.size()), wall_s, &split);
    } else {
      decode_ring->record(static_cast<int64_t>(step.size()), wall_s, nullptr);
    }
  }
  ++delta_steps;
  if (status != model::StepStatus::Ok) {
    // Each sequence was checked above, so this is a bookkeeping bug; the
    // model changed nothing, so end these requests and keep serving.
    const std::string message = status == model::StepStatus::ContextFull ? "internal error: KV cache slot full"
                                                                         : "internal error: invalid token id";
    for (const auto& s : step) error(s.slot, message);
    return;
  }

  const auto row_size = static_cast<size_t>(n_vocab);
  const int64_t n_embd = llama->spec().n_embd;
  to_sample.clear();
  size_t logit_row = 0;
  int64_t embedding_row = 0;
  for (size_t i = 0; i < step.size(); ++i) {
    const int slot_idx = step[i].slot;
    Slot& slot = slots[static_cast<size_t>(slot_idx)];
    auto& seq = *slot.seq;
    slot.cached.insert(slot.cached.end(), step[i].tokens.begin(), step[i].tokens.end());
    const auto n_chunk = static_cast<int64_t>(step[i].tokens.size());
    if (step[i].embeddings) {
      const int64_t n_rows = step[i].all_logits ? n_chunk : 1;
      pool_embedding_rows(slot_idx, embeddings.data() + embedding_row * n_embd, n_rows, n_chunk);
      embedding_row += n_rows;
      continue;
    }
    const size_t row = logit_row++;
    if (!seq.decoding()) {
      seq.n_prompt_done += static_cast<int64_t>(step[i].tokens.size());
      delta_prompt += static_cast<int64_t>(step[i].tokens.size());
      if (!seq.decoding()) continue;  // more prompt to go
    }
    to_sample.emplace_back(slot_idx, logits.data() + row * row_size);
  }
  // Each sequence's sampler is its own (RNG, penalties, scratch), so the
  // step's draws run on the CPU threads side by side (a full-vocabulary
  // softmax each); what they drew is then emitted in step order.
  host->host_parallel(static_cast<int64_t>(to_sample.size()), [this, row_size](int64_t k) {
    const auto& [slot_idx, row] = to_sample[static_cast<size_t>(k)];
    sampled[static_cast<size_t>(k)] = slots[static_cast<size_t>(slot_idx)].seq->sampler.sample(std::span(row, row_size));
  });
  for (size_t k = 0; k < to_sample.size(); ++k) emit(to_sample[k].first, sampled[k]);
}

bool Engine::Impl::shift_context(int slot_idx) {
  Slot& slot = slots[static_cast<size_t>(slot_idx)];
  Sequence& seq = *slot.seq;
  if (!seq.request.context_shift) return false;
  const model::ContextShiftPlan plan = model::plan_context_shift(kv->n_used(slot_idx), kv->n_ctx(), seq.request.n_keep);
  if (plan.n_discard < 1) return false;
  try {
    llama->shift_context(*kv, slot_idx, plan.n_keep, plan.n_discard);
  } catch (const std::invalid_argument&) {
    return false;  // submit() checked what it refuses: a bookkeeping bug ends this request (Length), not the engine
  }
  const auto first = slot.cached.begin() + static_cast<ptrdiff_t>(plan.n_keep);
  slot.cached.erase(first, first + static_cast<ptrdiff_t>(plan.n_discard));
  seq.n_exact = seq.n_exact < 0 ? plan.n_keep : std::min(seq.n_exact, plan.n_keep);
  ++delta_shifts;
  return true;
}

void Engine::Impl::emit(int slot_idx, const SampleResult& result) {
  auto& seq = *slots[static_cast<size_t>(slot_idx)].seq;
  if (!seq.has_first_token) {
    seq.has_first_token = true;
    seq.first_token_at = Clock::now();
  }
  if (result.status != SampleStatus::Ok) {
    error(slot_idx,
          "no token can be sampled: every logit is NaN or -inf after logit_bias and penalties "
          "(were all tokens banned?)");
    return;
  }
  const text::TokenId token = result.token;
  if (!seq.request.ignore_eos && tokenizer().vocab().is_end_of_generation(token)) {
    finish(slot_idx, FinishReason::Stop);
    return;
  }
  seq.sampler.accept(token);
  ++seq.n_generated;
  ++delta_generated;
  if (seq.request.return_tokens) {
    TokenInfo info;
    info.id = token;
    info.piece = tokenizer().token_to_piece(token, /*render_special=*/true);
    info.logprob = result.logprob;
    for (const auto& alt : result.top_logprobs()) {
      info.top.emplace_back(tokenizer().token_to_piece(alt.token, true), alt.logprob);
    }
    seq.tokens.push_back(std::move(info));
  }
  const auto& rendered = seq.request.rendered_tokens;
  const bool render = !rendered.empty() && std::binary_search(rendered.begin(), rendered.end(), token);
  std::string text = seq.stop.push(seq.detok.push(token, render));
  if (seq.stop.found() || seq.sampler.constraint_complete()) {
    finish(slot_idx, FinishReason::Stop, std::move(text));
    return;
  }
  if (seq.n_generated >= seq.request.max_tokens) {
    finish(slot_idx, FinishReason::Length, std::move(text));
    return;
  }
  seq.next_token = token;
  if (!text.empty() || !seq.tokens.empty()) {
    StreamEvent ev;
    ev.kind = StreamEvent::Kind::Text;
    ev.text = std::move(text);
    ev.tokens = std::move(seq.tokens);
    seq.tokens.clear();
    seq.handle->push(std::move(ev));
  }
}

void Engine::Impl::finish(int slot_idx, FinishReason reason, std::string text) {
  auto& seq = *slots[static_cast<size_t>(slot_idx)].seq;
  const auto now = Clock::now();
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Finished;
  // What the detokenizer and the stop filter still hold ends the text; a
  // stop string completed by that tail still cuts it.
  if (!seq.stop.found()) {
    text += seq.stop.push(seq.detok.flush());
    if (seq.stop.found() && reason == FinishReason::Length) reason = FinishReason::Stop;
    text += seq.stop.flush();
  }
  ev.text = std::move(text);
  ev.tokens = std::move(seq.tokens);
  ev.finish = reason;
  ev.usage.prompt_tokens = seq.n_prompt();
  ev.usage.completion_tokens = seq.n_generated;
  ev.usage.cached_tokens = seq.n_cached;
  ev.queue_seconds = seconds_between(seq.queued_at, seq.admitted_at);
  ev.first_token_seconds = seq.has_first_token ? seconds_between(seq.admitted_at, seq.first_token_at) : 0.0;
  ev.total_seconds = seconds_between(seq.queued_at, now);
  seq.handle->push(std::move(ev));
  release(slot_idx);
}

void Engine::Impl::pool_embedding_rows(int slot_idx, const float* rows, int64_t n_rows, int64_t n_chunk) {
  auto& seq = *slots[static_cast<size_t>(slot_idx)].seq;
  seq.pool->add(rows, n_rows, seq.n_prompt_done);
  seq.n_prompt_done += n_chunk;
  delta_prompt += n_chunk;
  if (!seq.decoding()) return;  // more prompt to go
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Finished;
  ev.finish = FinishReason::Stop;
  ev.embedding = seq.pool->result(seq.n_prompt());
  const auto now = Clock::now();
  ev.usage.prompt_tokens = seq.n_prompt();
  ev.usage.cached_tokens = seq.n_cached;
  ev.queue_seconds = seconds_between(seq.queued_at, seq.admitted_at);
  ev.first_token_seconds = seconds_between(seq.admitted_at, now);
  ev.total_seconds = seconds_between(seq.queued_at, now);
  seq.handle->push(std::move(ev));
  release(slot_idx);
}

void Engine::Impl::error(int slot_idx, const std::string& message) {
  StreamEvent ev;
  ev.kind = StreamEvent::Kind::Error;
  ev.error = message;
  slots[static_cast<size_t>(slot_idx)].seq->handle->push(std::move(ev));
  release(slot_idx);
}

void Engine::Impl::release(int slot_idx) {
  Slot& slot = slots[static_cast<size_t>(slot_idx)];
  if (slot.seq && slot.seq->n_exact >= 0) {
    // Shifted entries are not what a later prompt's prefill would compute: only the kept prefix is reused.
    const int64_t n = std::min(slot.seq->n_exact, kv->n_used(slot_idx));
    slot.cached.resize(static_cast<size_t>(n));
    kv->set_used(slot_idx, n);
  }
  slot.seq.reset();
  slot.last_used = ++tick;
}

Engine::Engine(std::shared_ptr<const model::LoadedModel> model, EngineOptions options) : options_(options) {
  if (model && model->spec.n_ctx_train > 0) options_.n_ctx = std::min(options_.n_ctx, model->spec.n_ctx_train);
  context_shift_refusal_ = model ? model::context_shift_refusal(model->spec) : "no model";
  impl_ = std::make_unique<Impl>(std::move(model), options_);
  impl_->stats.kv_tokens_capacity = static_cast<int64_t>(std::max(options_.n_parallel, 0)) * options_.n_ctx;
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

Engine::~Engine() { shutdown(std::chrono::milliseconds(0)); }

SubmitResult Engine::submit(GenerationRequest request) {
  SubmitResult result;
  auto refuse = [&](SubmitStatus status, std::string message) {
    result.status = status;
    result.message = std::move(message);
    return result;
  };
  const auto& loaded = impl_->loaded;
  if (!loaded) return refuse(SubmitStatus::NotReady, "the engine has no model");
  if (request.context_shift && !context_shift_refusal_.empty()) {
    return refuse(SubmitStatus::InvalidRequest, "context shift is not possible on this model: " + context_shift_refusal_);
  }
  if (auto refusal = check_request(request, static_cast<int32_t>(loaded->spec.n_vocab), options_.n_ctx)) {
    return refuse(refusal->status, std::move(refusal->message));
  }
  auto handle = std::make_shared<RequestHandle>();
  {
    std::lock_guard lock(impl_->mutex);
    const EngineState state = impl_->stats.state;
    if (state == EngineState::Failed) {
      return refuse(SubmitStatus::NotReady, "the engine failed: " + impl_->stats.failure);
    }
    if (impl_->stopping || state == EngineState::Stopped) {
      return refuse(SubmitStatus::NotReady, "the engine is shutting down");
    }
    if (static_cast<int64_t>(impl_->queue.size()) >= options_.queue_size) {
      return refuse(SubmitStatus::QueueFull,
                    "the queue is full (" + std::to_string(options_.queue_size) + " requests waiting)");
    }
    impl_->queue.push_back(Pending{std::move(request), handle, Clock::now()});
    impl_->stats.requests_waiting = static_cast<int>(impl_->queue.size());
  }
  impl_->wake.notify_one();
  result.handle = std::move(handle);
  return result;
}

void Engine::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(impl_->mutex);
    const auto end = Clock::now() + grace;
    if (!impl_->stopping || end < impl_->grace_end) impl_->grace_end = end;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  std::lock_guard join_lock(impl_->join_mutex);
  if (impl_->thread.joinable()) impl_->thread.join();
}

FfnActivity Engine::ffn_activity() const {
  const FfnActivityRing* ring = nullptr;
  {
    std::lock_guard lock(impl_->mutex);
    ring = impl_->activity;
  }
  return ring != nullptr ? ring->window() : FfnActivity{};
}

DecodeTimes Engine::decode_times() const {
  const DecodeTimeRing* ring = nullptr;
  {
    std::lock_guard lock(impl_->mutex);
    ring = impl_->decode_times;
  }
  return ring != nullptr ? ring->window() : DecodeTimes{};
}

EngineBandwidths Engine::bandwidths() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->bandwidths;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

EngineState Engine::state() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats.state;
}

std::vector<std::string> Engine::setup_summary() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->setup_summary;
}

}  // namespace tc::runtime
