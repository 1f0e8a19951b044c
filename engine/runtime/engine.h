// Engine: the facade the server talks to. One engine thread owns the model,
// the backend, the KV cache and the step loop (continuous batching over
// `n_parallel` sequence slots); HTTP threads submit requests into a bounded
// queue and read each request's events from its own RequestHandle.
//
// Per step the loop: drops cancelled / timed-out requests, admits queued
// requests into free slots (reusing the longest cached token prefix of a
// free slot), runs one forward over all active sequences (one decode token
// per decoding sequence, then prefill chunks up to `n_batch` tokens in all),
// samples, turns tokens into text (whole UTF-8, stop strings cut exactly,
// possible stop-string prefixes held back) and pushes events.
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

#include "engine/runtime/sampler.h"
#include "engine/text/vocab.h"

namespace tc::model {
struct LoadedModel;
}

namespace tc::runtime {

using Clock = std::chrono::steady_clock;

struct EngineOptions {
  int n_parallel = 4;          // sequence slots (each its own KV cache of n_ctx)
  int64_t n_ctx = 4096;        // context per slot, tokens; capped at the model's n_ctx_train
  int64_t n_batch = 512;       // tokens per step at most (prefill chunks + decodes)
  int queue_size = 64;         // queued (not yet admitted) requests at most
  int threads = 0;             // CPU worker threads; 0 = physical cores
};

enum class FinishReason { Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "cancelled", "error"

struct GenerationRequest {
  std::vector<text::TokenId> prompt;  // non-empty; prompt.size() + max_tokens <= n_ctx (checked by submit)
  int32_t max_tokens = 16;            // >= 1
  SamplingParams sampling;            // valid for the model's vocab
  std::vector<std::string> stop;      // stop strings, none empty; the text is cut before the first match
  bool ignore_eos = false;            // keep going past end-of-generation tokens
  bool return_tokens = false;         // fill StreamEvent::tokens (logprobs; top list per sampling.n_probs)
  // Wall-clock limit; reaching it finishes the request with Length.
  std::optional<Clock::time_point> deadline;
};

// One generated token, for logprobs.
struct TokenInfo {
  text::TokenId id = -1;
  std::string piece;          // the token's bytes as text (may be partial UTF-8)
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
// text/tokens, usage and timings) or Error.
struct StreamEvent {
  enum class Kind { Text, Finished, Error } kind = Kind::Text;
  std::string text;
  std::vector<TokenInfo> tokens;  // filled only when the request set return_tokens
  FinishReason finish = FinishReason::Stop;  // Finished only
  Usage usage;                               // Finished only
  std::string error;                         // Error only: the message
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
  // Finished event with FinishReason::Cancelled follows.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }

  // Engine side.
  void push(StreamEvent event);

 private:
  std::mutex mutex_;
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
  int64_t kv_tokens_used = 0;           // over all slots
  int64_t kv_tokens_capacity = 0;       // n_parallel * n_ctx
  std::string failure;                  // Failed: why
};

enum class SubmitStatus { Ok, QueueFull, InvalidRequest, ContextExceeded, NotReady };

struct SubmitResult {
  SubmitStatus status = SubmitStatus::Ok;
  std::string message;                     // when not Ok
  std::shared_ptr<RequestHandle> handle;   // when Ok
};

class Engine {
 public:
  // Starts the engine thread, which builds the backend, the model and the KV
  // cache (state Loading until done, then Ready; Failed if that throws).
  Engine(std::shared_ptr<const model::LoadedModel> model, EngineOptions options);
  // Cancels everything still queued or running and joins the thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Validates (prompt non-empty, tokens in range, sampling
  // params, context: prompt + max_tokens <= n_ctx -> ContextExceeded) and
  // queues. Never blocks on the engine step.
  SubmitResult submit(GenerationRequest request);

  // Stops admitting; waits up to `grace` for running and queued requests to
  // finish, then cancels the rest. Thread-safe; returns when the loop ended.
  void shutdown(std::chrono::milliseconds grace);

  EngineStats stats() const;
  EngineState state() const;
  int64_t n_ctx() const { return options_.n_ctx; }
  const EngineOptions& options() const { return options_; }

 private:
  struct Impl;
  EngineOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tc::runtime
