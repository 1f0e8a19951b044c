// Engine: the facade the server talks to. One engine thread owns the model,
// the backend, the KV cache and the step loop (continuous batching over
// `n_parallel` sequence slots); HTTP threads submit requests into a bounded
// queue and read each request's events from its own RequestHandle.
//
// Per step the loop: drops cancelled / timed-out requests, admits queued
// requests into free slots (reusing the longest cached token prefix of a
// free slot), runs one forward over all active sequences (one decode token
// per decoding sequence, its slot shifted first when full and its request
// asked for a context shift, with its lookup draft where it has one; then
// prefill chunks up to `n_batch` tokens in all), samples (a drafted
// sequence's positions in order while they draw the draft), turns tokens
// into text (whole UTF-8, stop strings cut exactly, possible stop-string
// prefixes held back) and pushes events.
//
// A request's tokens depend only on its prompt, sampling params and seed,
// never on what else runs in the same step.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/model/prompt_image.h"
#include "engine/runtime/decode_times.h"
#include "engine/runtime/ffn_activity.h"
#include "engine/runtime/lookup_draft.h"
#include "engine/runtime/model_setup.h"
#include "engine/runtime/sampler.h"
#include "engine/text/vocab.h"

namespace tc::runtime {

using Clock = std::chrono::steady_clock;

// Each must be >= 1 (model.threads >= 0); otherwise the engine goes to
// Failed with a message naming the field.
struct EngineOptions {
  int n_parallel = 4;          // sequence slots (each its own KV cache of n_ctx)
  int64_t n_ctx = 4096;        // context per slot, tokens; capped at the model's n_ctx_train
  // Tokens per step at most (prefill chunks + decodes). Every decoding
  // sequence gets its token even when they alone exceed n_batch; prefill
  // chunks fill what is left.
  int64_t n_batch = 512;
  int queue_size = 64;         // queued (not yet admitted) requests at most
  // Hybrid mode: time each step's GPU, CPU and waits (model::HybridStepTimer,
  // DecodeTimes' split), at the cost of timing events on the device's stream.
  bool time_split = false;
  // Measure the memory bandwidths at start (EngineBandwidths: the engine
  // view's modelled limit per token); tens of milliseconds.
  bool probe_bandwidth = false;
  // Lookup drafts (speculative decoding from the sequence's own history,
  // lookup_draft.h): the default of requests that do not set draft_max;
  // n_max 0: off.
  LookupDraftOptions lookup_draft;
  // How the model runs: CPU threads, device, sparsity, hybrid mode or layer
  // offload (set up for n_parallel x n_ctx and n_batch by set_up_model).
  ModelSetup model;
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "cancelled", "error"

struct GenerationRequest {
  std::vector<text::TokenId> prompt;  // non-empty; prompt.size() + max_tokens <= n_ctx (checked by submit)
  // The images whose placeholder ids (model/prompt_image.h) the prompt
  // holds; every other prompt id is a vocabulary id.
  std::vector<model::PromptImage> images;
  int32_t max_tokens = 16;            // >= 1
  SamplingParams sampling;            // valid for the model's vocab
  std::vector<std::string> stop;      // stop strings, none empty; the text is cut before the first match
  bool ignore_eos = false;            // keep going past end-of-generation tokens
  bool return_tokens = false;         // fill StreamEvent::tokens (logprobs; top list per sampling.n_probs)
  // JSON mode: the generated text is constrained to one JSON object and the
  // request finishes (Stop) when it closes (output_constraint.h).
  bool json_object = false;
  // Non-null: the generated text is constrained to an instance of this
  // JSON Schema (text/json_schema.h) and the request finishes (Stop) when
  // it is whole. Takes precedence over json_object.
  std::shared_ptr<const text::JsonSchema> json_schema;
  // A forced tool call: non-null, the generated text is constrained to
  // {"name": "NAME", "arguments": {...}} with NAME one of the grammar's
  // functions and the arguments fitting its schema, and the request
  // finishes (Stop) when it closes. Takes precedence over json_object and
  // json_schema.
  std::shared_ptr<const text::ToolCallGrammar> tool_call;
  // With tool_call: non-empty makes the call lazy (output_constraint.h):
  // the text is free until the model writes this (its call marker, e.g.
  // "<tool_call>"), then held to the call until it closes, free again
  // after; the request does not finish there. tool_call_at_start: lazy
  // too, held once the reply opens with a call's `{"name": "` (Llama 3.x). Not
  // combined with json_object, json_schema or grammar.
  std::string tool_call_trigger;
  bool tool_call_at_start = false;
  // With tool_call_trigger: a thinking model's reasoning triggers nothing
  // (OutputForm::skip_reasoning); _open: the prompt opened it.
  bool tool_call_skip_reasoning = false;
  bool tool_call_reasoning_open = false;
  // With json_object, json_schema or a forced tool_call (not lazy, no
  // grammar): the prompt opened a reasoning block (<think>); the text is
  // free up to its </think> (it may not end before), then held to the form.
  bool reasoning_before_form = false;
  // With tool_call, both >= 0: lazy Mistral calls (output_constraint.h),
  // on after each tool_call_trigger_token ([TOOL_CALLS]), the name ended
  // by tool_call_args_token ([ARGS]).
  text::TokenId tool_call_trigger_token = -1;
  text::TokenId tool_call_args_token = -1;
  // With tool_call and tool_call_trigger ("<|tool_call>"): each call is
  // Gemma 4's call:NAME{...}<tool_call|> (text/gemma4_call_prefix.h), and
  // its reasoning, skipped with tool_call_skip_reasoning, is
  // <|channel>thought...<channel|>.
  bool tool_call_gemma4 = false;
  // With tool_call and tool_call_trigger ("<tool_call>"): each call is
  // Qwen3-Coder's XML <function=NAME><parameter=KEY>...
  // (text/qwen3_coder_call_prefix.h), also begun by a declared function's
  // "<function=NAME>" alone; a "<tool_call>" ends the skipped reasoning.
  bool tool_call_qwen3_coder = false;
  // Non-null: the generated text is one the GBNF grammar generates
  // (text/gbnf_grammar.h); end-of-generation is allowed where the grammar
  // may end, and the request finishes (Stop) where nothing more can follow.
  // Takes precedence over json_object and json_schema; not combined with
  // tool_call.
  std::shared_ptr<const text::GbnfGrammar> grammar;
  // Control tokens whose text goes into the output instead of being
  // dropped (ascending ids): the markers of a model's tool calls
  // (Mistral's [TOOL_CALLS], [ARGS]) for the reply's parser.
  std::vector<text::TokenId> rendered_tokens;
  // Context shift (model/context_shift.h): when the sequence's slot is
  // full, positions [0, n_keep) stay, the oldest half of the rest is dropped
  // and generation goes on, so max_tokens may exceed what the context
  // leaves (the prompt alone must still be shorter than the context).
  // Refused (InvalidRequest) where Engine::context_shift_refusal() says why.
  bool context_shift = false;
  int32_t n_keep = 4;  // >= 0; clamped to half the context
  // Lookup drafts per decode step at most (lookup_draft.h): -1 the engine's
  // default (EngineOptions::lookup_draft.n_max), 0 off. The tokens are
  // the same either way; only the number of forward passes changes.
  int32_t draft_max = -1;
  // Wall-clock limit; reaching it finishes the request with Length (also
  // while it is still queued).
  std::optional<Clock::time_point> deadline;
  // Set: an embedding, not a generation. The prompt runs through the model
  // (in prefill chunks, beside other requests) and the request finishes
  // (Stop) with StreamEvent::embedding, its tokens' output-normed hidden
  // states pooled this way. max_tokens, sampling, stop and the output forms
  // are not used; the prompt alone must fit the context.
  std::optional<model::Pooling> embedding;
};

// One generated token, for logprobs.
struct TokenInfo {
  text::TokenId id = -1;
  // The token's bytes as text (may be partial UTF-8); control tokens are
  // rendered ("</s>"), although they add nothing to the text.
  std::string piece;
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // n_probs alternatives: piece, logprob (descending)
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens whose KV entries were reused from an earlier request
};

// What a RequestHandle yields. Text events carry new text (never empty
// unless `tokens` is non-empty) and the tokens sampled since the previous
// event; the last event of every request is Finished (with the final
// text/tokens, usage and timings) or Error. The texts of all events
// concatenated are the whole completion: whole UTF-8, cut exactly before a
// stop string. An end-of-generation token ends the request with Stop and is
// neither in the text nor in `tokens` nor counted in completion_tokens.
struct StreamEvent {
  enum class Kind { Text, Finished, Error } kind = Kind::Text;
  std::string text;
  std::vector<TokenInfo> tokens;  // filled only when the request set return_tokens
  FinishReason finish = FinishReason::Stop;  // Finished only
  std::string stop_word;                     // Finished only: the stop string that ended the text, if one did
  Usage usage;                               // Finished only
  std::string error;                         // Error only: the message
  std::vector<float> embedding;              // Finished, embedding requests only: f32 [n_embd], not normalised
  // Timings, Finished only: queued -> admitted, admitted -> first token, total.
  double queue_seconds = 0, first_token_seconds = 0, total_seconds = 0;
};

// Shared between the HTTP thread that submitted a request and the engine.
class RequestHandle {
 public:
  // Waits up to `timeout` for the next event. Returns false on timeout (the
  // caller may send a ping and check its client), true with `event` filled
  // otherwise. After the last event, returns true with kind Error
  // ("no more events") — callers stop at Finished/Error.
  bool next(StreamEvent& event, std::chrono::milliseconds timeout);
  // Asks the engine to drop the request; it is gone within one step, and a
  // Finished event with FinishReason::Cancelled follows (unless the request
  // ended on its own first). Thread-safe, never blocks.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  // Whether the last event (Finished or Error) has been pushed.
  bool ended() const;

  // Engine side. Events after the last one are dropped.
  void push(StreamEvent event);

 private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<StreamEvent> events_;
  bool ended_ = false;
  std::atomic<bool> cancelled_{false};
};

enum class EngineState { Loading, Ready, Failed, Stopped };

// Gauges and counters for /metrics and /props; a consistent snapshot.
struct EngineStats {
  EngineState state = EngineState::Loading;
  int requests_running = 0;
  int requests_waiting = 0;
  int64_t prompt_tokens_total = 0;      // prompt tokens processed (excluding cached)
  int64_t cached_tokens_total = 0;      // prompt tokens reused from the KV cache
  int64_t generated_tokens_total = 0;
  int64_t steps_total = 0;
  int64_t context_shifts_total = 0;     // slots shifted to let a sequence go on (GenerationRequest::context_shift)
  int64_t draft_tokens_total = 0;       // lookup-drafted tokens run through the model
  int64_t draft_tokens_accepted_total = 0;  // of those, the ones sampling kept (each saved a decode step)
  int64_t kv_tokens_used = 0;           // held by running requests, over all slots
  int64_t kv_tokens_cached = 0;         // kept by idle slots for prefix reuse (free to overwrite)
  int64_t kv_tokens_capacity = 0;       // n_parallel * n_ctx
  // The KV cache's bytes once Ready: in host memory (a CPU backend, or the
  // host layers of layer offload) and in device memory.
  uint64_t kv_cache_host_bytes = 0;
  uint64_t kv_cache_device_bytes = 0;
  std::string failure;                  // Failed: why
};

// Bytes per second measured at start (EngineOptions::probe_bandwidth); 0:
// not measured (no such memory, the probe off or failed).
struct EngineBandwidths {
  double host = 0;    // the CPU's threads reading host memory (sparse::measure_memory_bandwidth)
  double device = 0;  // the GPU's memory (a device-to-device copy, bytes read + written)
  double pcie = 0;    // host -> device copies (hybrid mode with the time split)
};

enum class SubmitStatus { Ok, QueueFull, InvalidRequest, ContextExceeded, NotReady };

struct SubmitResult {
  SubmitStatus status = SubmitStatus::Ok;
  std::string message;                     // when not Ok
  std::shared_ptr<RequestHandle> handle;   // when Ok
};

class Engine {
 public:
  // Starts the engine thread, which sets up the model (set_up_model: its
  // backends and forward pass) and the KV cache (state Loading until done,
  // then Ready; Failed with the reason if that throws, e.g. the backend's
  // when this build or machine has no such device).
  Engine(std::shared_ptr<const model::LoadedModel> model, EngineOptions options);
  // Cancels everything still queued or running and joins the thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Validates (prompt non-empty, tokens in range, sampling
  // params, max_tokens >= 1, stop strings non-empty -> InvalidRequest;
  // context: prompt + max_tokens <= n_ctx, or prompt < n_ctx with
  // context_shift -> ContextExceeded) and queues
  // (full -> QueueFull). Accepted while Loading (runs once Ready); NotReady
  // once Failed or shutting down. Never blocks on the engine step.
  SubmitResult submit(GenerationRequest request);

  // Stops admitting; waits up to `grace` for running and queued requests to
  // finish, then cancels the rest. Thread-safe; returns when the loop ended
  // (state Stopped, or Failed if it had failed).
  void shutdown(std::chrono::milliseconds grace);

  EngineStats stats() const;
  EngineState state() const;
  // Thread-safe: the FFN's per-layer work over the last sparse steps (mode
  // "dense" with nothing else before Ready and when the FFN runs dense).
  FfnActivity ffn_activity() const;
  // Thread-safe: the time of the last decode steps (empty before Ready).
  DecodeTimes decode_times() const;
  // Thread-safe: measured once Ready (all 0 before, or without the probe).
  EngineBandwidths bandwidths() const;
  // Once Ready (empty before): what the engine set up, one line each for the
  // log ("sparsity: ...", "hybrid: ..." or "layer offload: ..."; see
  // RunnableModel::summary). Thread-safe.
  std::vector<std::string> setup_summary() const;
  int64_t n_ctx() const { return options_.n_ctx; }
  // Why requests may not ask for a context shift on this model, or empty
  // (model::context_shift_refusal). Thread-safe.
  const std::string& context_shift_refusal() const { return context_shift_refusal_; }
  const EngineOptions& options() const { return options_; }

 private:
  struct Impl;
  EngineOptions options_;
  std::string context_shift_refusal_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tc::runtime
