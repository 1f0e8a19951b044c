// The engine thread's step loop: admission with prefix reuse, continuous
// batching of decodes and prefill chunks, sampling and the request events.
#include <algorithm>
#include <exception>
#include <span>
#include <stdexcept>
#include <utility>

#include "engine/model/context_shift.h"
#include "engine/runtime/engine_impl.h"
#include "engine/sparse/bandwidth_probe.h"

namespace tc::runtime {

namespace {

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
  if (std::string problem = check_lookup_draft(o.lookup_draft); !problem.empty()) return problem;
  if (o.model.threads < 0) {
    return "threads must be >= 0 (0 = physical cores), got " + std::to_string(o.model.threads);
  }
  return {};
}

// The prefill chunk [done, done + n) of the request's prompt, moved so
// that it cuts no bidirectional image (model/prompt_image.h): it ends
// before the image, or, when the image starts the chunk, takes all of it
// (past the step's budget if need be).
int64_t whole_images_chunk(const GenerationRequest& r, int64_t done, int64_t n) {
  const auto end = static_cast<size_t>(done + n);
  if (r.images.empty() || end >= r.prompt.size()) return n;
  const model::PromptImage* image = model::find_prompt_image(r.images, r.prompt[end]);
  if (image == nullptr || !image->bidirectional || !image->holds(r.prompt[end - 1])) return n;
  const int64_t image_start = done + n - 1 - (r.prompt[end - 1] - image->first_id);
  if (image_start > done) return image_start - done;
  return std::min(image_start + image->n_tokens, static_cast<int64_t>(r.prompt.size())) - done;
}

}  // namespace

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
  // Drafting steps add logit rows (one per draft token): reserved up front
  // where drafts are on by default; a request asking for them on its own
  // grows the buffers once.
  const int64_t draft_rows = options.lookup_draft.n_max > 0 ? options.lookup_draft.step_tokens() : 0;
  runnable = set_up_model(loaded, options.model,
                          {.n_ctx = options.n_ctx, .n_parallel = options.n_parallel, .n_batch = options.n_batch,
                           .n_logit_rows = options.n_parallel + draft_rows});
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
  stats.draft_tokens_total += delta_drafted;
  stats.draft_tokens_accepted_total += delta_draft_kept;
  stats.kv_tokens_used = used;
  stats.kv_tokens_cached = cached;
  delta_prompt = delta_cached = delta_generated = delta_steps = delta_shifts = 0;
  delta_drafted = delta_draft_kept = 0;
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
  // every row: they reuse nothing; nor does an encoder, whose rows see the
  // tokens after them.
  const auto& prompt = pending.request.prompt;
  const auto& embedding = pending.request.embedding;
  const bool reuse =
      (!embedding || *embedding == model::Pooling::Last) && !llama->spec().architecture->bidirectional;
  int best = -1;
  size_t best_lcp = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].seq) continue;
    size_t lcp = reuse ? std::min(common_prefix(slots[i].cached, prompt), prompt.size() - 1) : 0;
    // A recurrent state sums every position it holds: kept whole, or back to
    // its checkpoint where the prompt shares that much, or not at all.
    if (!kv->keeps_prefixes() && lcp < slots[i].cached.size()) {
      const int64_t at = kv->checkpoint_at(static_cast<int>(i));
      lcp = at > 0 && lcp >= static_cast<size_t>(at) ? static_cast<size_t>(at) : 0;
    }
    if (best < 0 || lcp > best_lcp ||
        (lcp == best_lcp && slots[i].last_used < slots[static_cast<size_t>(best)].last_used)) {
      best = static_cast<int>(i);
      best_lcp = lcp;
    }
  }
  if (best < 0) throw std::logic_error("admit: no free slot");
  Slot& slot = slots[static_cast<size_t>(best)];
  if (!kv->keeps_prefixes() && best_lcp > 0 && best_lcp < slot.cached.size()) {
    kv->restore_checkpoint(best);
  } else {
    kv->set_used(best, static_cast<int64_t>(best_lcp));
  }
  slot.cached.resize(best_lcp);

  auto seq = std::make_unique<Sequence>(std::move(pending), tokenizer(), static_cast<int32_t>(llama->spec().n_vocab));
  if (!seq->embedding() &&
      (seq->request.json_object || seq->request.json_schema || seq->request.tool_call || seq->request.grammar)) {
    if (!constraint_tokens) {
      constraint_tokens = ConstraintTokenTable::from(tokenizer(), static_cast<int32_t>(llama->spec().n_vocab));
    }
    const auto& r = seq->request;
    OutputForm form = r.tool_call && r.tool_call_trigger_token >= 0
                          ? OutputForm::mistral_call(r.tool_call, r.tool_call_trigger_token, r.tool_call_args_token)
                      : r.tool_call   ? OutputForm::call(r.tool_call, r.tool_call_trigger, r.tool_call_at_start)
                      : r.grammar     ? OutputForm::grammar(r.grammar)
                      : r.json_schema ? OutputForm::json_schema(r.json_schema)
                                      : OutputForm::json_object();
    const bool lazy = !form.trigger.empty() || form.at_start || form.trigger_token >= 0;
    form.skip_reasoning = (r.tool_call_skip_reasoning && !form.trigger.empty()) ||
                          (r.reasoning_before_form && !lazy && !r.grammar);
    form.gemma4 = r.tool_call_gemma4 && !form.trigger.empty() && r.tool_call_trigger_token < 0;
    form.qwen3_coder = r.tool_call_qwen3_coder && !form.trigger.empty() && r.tool_call_trigger_token < 0 &&
                       !form.gemma4;
    form.reasoning_open = lazy ? r.tool_call_reasoning_open : form.skip_reasoning;
    seq->sampler.constrain(constraint_tokens, std::move(form));
  }
  if (seq->request.sampling.dry_multiplier > 0.0f) {
    const auto& key = seq->request.sampling.dry_sequence_breakers;
    auto it = dry_breakers.find(key);
    if (it == dry_breakers.end()) {
      if (dry_breakers.size() >= 16) dry_breakers.clear();  // bounded, whatever sets clients send
      it = dry_breakers.emplace(key, make_dry_breakers(tokenizer(), key)).first;
    }
    seq->sampler.set_dry_breakers(it->second);
  }
  if (seq->request.embedding) {
    // Rank pools the model's rank rows (ModelSpec::rank_rows), then its head classifies them.
    model::Pooling rows = *seq->request.embedding;
    if (rows == model::Pooling::Rank) rows = llama->spec().rank_rows();
    seq->pool.emplace(rows, llama->spec().n_embd);
  } else {
    const int32_t draft_max = seq->request.draft_max;
    seq->draft_length = DraftLength(draft_max >= 0 ? draft_max : options.lookup_draft.n_max);
  }
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

  // Decodes first: one token per running stream, whatever the budget, and
  // its lookup draft where it has one and the budget allows.
  bool drafted = false;
  int64_t drafts_left = options.lookup_draft.step_tokens();
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
    const int32_t n_draft = propose_draft(slot_idx, draft_limit(*seq, slot_idx, std::min(budget, 1 + drafts_left)));
    drafts_left -= n_draft;
    if (n_draft > 0) {
      drafted = true;
      step.push_back({slot_idx, std::span(seq->verify), /*all_logits=*/true, /*generated=*/true});
    } else {
      step.push_back({slot_idx, std::span(&seq->next_token, 1), false, true});
    }
    budget -= 1 + n_draft;
  }
  // Then prefill chunks, oldest admission first, while the budget lasts.
  std::sort(prefill_order.begin(), prefill_order.end(), [&](int a, int b) {
    return slots[static_cast<size_t>(a)].seq->admit_index < slots[static_cast<size_t>(b)].seq->admit_index;
  });
  for (const int slot_idx : prefill_order) {
    if (budget <= 0) break;
    auto& seq = *slots[static_cast<size_t>(slot_idx)].seq;
    int64_t limit = std::min(seq.n_prompt() - seq.n_prompt_done, budget);
    if (llama->spec().architecture->bidirectional) {
      // An encoder's prompt is one step, past the budget if need be (its
      // tokens attend to one another): alone, or beside what fits.
      if (seq.n_prompt() > budget && !step.empty()) continue;
      limit = seq.n_prompt() - seq.n_prompt_done;
    }
    // A recurrent model's chunk stops at its checkpoint (checkpoint_mark).
    if (const int64_t mark = checkpoint_mark(seq); mark > seq.n_prompt_done) {
      limit = std::min(limit, mark - seq.n_prompt_done);
    }
    const int64_t n = whole_images_chunk(seq.request, seq.n_prompt_done, limit);
    const auto chunk =
        std::span(seq.request.prompt).subspan(static_cast<size_t>(seq.n_prompt_done), static_cast<size_t>(n));
    // submit() checked the ids; checked again so one bad request can never
    // fail a whole step.
    const auto& images = seq.request.images;
    if (std::any_of(chunk.begin(), chunk.end(), [&](text::TokenId id) {
          return (id < 0 || id >= n_vocab) && model::find_prompt_image(images, id) == nullptr;
        })) {
      error(slot_idx, "a prompt token id is out of range [0, " + std::to_string(n_vocab) + ")");
      continue;
    }
    if (seq.embedding()) {
      step.push_back({slot_idx, chunk, seq.pool->wants_all_rows(seq.n_prompt_done), /*generated=*/false,
                      /*embeddings=*/true});
    } else {
      step.push_back({slot_idx, chunk, false, false, false, images});
    }
    budget -= n;
  }
  if (step.empty()) return;

  // A decode step (every sequence one generated token) is timed for the
  // engine view; prefill chunks and drafts would blur the time per token.
  const bool decode_step = prefill_order.empty() && !drafted;
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
    const size_t row = logit_row;
    logit_row += step[i].all_logits ? static_cast<size_t>(n_chunk) : 1;
    if (!seq.decoding()) {
      seq.n_prompt_done += static_cast<int64_t>(step[i].tokens.size());
      delta_prompt += static_cast<int64_t>(step[i].tokens.size());
      if (seq.n_prompt_done == checkpoint_mark(seq)) kv->save_checkpoint(slot_idx);
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
  for (size_t k = 0; k < to_sample.size(); ++k) {
    const auto& [slot_idx, row] = to_sample[k];
    const Sequence* seq = slots[static_cast<size_t>(slot_idx)].seq.get();
    const bool has_draft = !seq->verify.empty();  // read first: emit() may end the sequence
    emit(slot_idx, sampled[k]);
    if (has_draft) check_draft(slot_idx, seq, row, row_size);
  }
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
    error(slot_idx, seq.request.grammar
                        ? "no token can be sampled: none fits the grammar here (a grammar that reads the text in "
                          "more than " + std::to_string(text::GbnfPrefix::kMaxStacks) +
                              " ways at once stops there), or all were banned by logit_bias"
                        : "no token can be sampled: every logit is NaN or -inf after logit_bias and penalties "
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
  if (seq.stop.found_index() >= 0) ev.stop_word = seq.request.stop[static_cast<size_t>(seq.stop.found_index())];
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
  if (seq.request.embedding == model::Pooling::Rank) {
    llama->classify(ev.embedding);  // a reranker's scores
  } else {
    llama->project_pooled(ev.embedding);  // an encoder's dense head, where it has one
  }
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

int64_t Engine::Impl::checkpoint_mark(const Sequence& seq) const {
  // A chat's next turn shares this prompt up to where the reply began, which
  // its template may render otherwise (thinking dropped): the recurrent
  // state is saved a few positions before the prompt's end.
  constexpr int64_t kCheckpointBack = 16;
  if (kv->keeps_prefixes() || seq.embedding()) return -1;
  return seq.n_prompt() - kCheckpointBack;
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

}  // namespace tc::runtime
