// GenerationJob: one accepted generation request being answered -- its
// leased model, engine handles, the text so far, and the bookkeeping for the
// log line and the metrics -- and serve_generation(), which leases the model
// a request names (waiting for its load, with SSE pings when streaming),
// plans, submits and answers, in OpenAI's wire format (SSE / JSON),
// OpenAI's Responses API (semantic SSE events / a response object),
// Anthropic's Messages API (its SSE events / a message), Ollama's (NDJSON /
// JSON) or llama.cpp's native one (/completion, /infill: SSE / JSON).
// Shared by routes_generate.cpp, routes_ollama.cpp and routes_llamacpp.cpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/anthropic_schema.h"
#include "server/anthropic_stream.h"
#include "server/gemma4_split.h"
#include "server/harmony_split.h"
#include "server/native_responses.h"
#include "server/model_registry.h"
#include "server/ollama_responses.h"
#include "server/openai_responses.h"
#include "server/prompt_builder.h"
#include "server/qwen3_coder_split.h"
#include "server/reasoning_split.h"
#include "server/request_body.h"
#include "server/request_log.h"
#include "server/responses_stream.h"
#include "server/server_context.h"
#include "server/tool_call_parser.h"
#include "server/tool_request.h"

namespace tc::server {

enum class Wire { OpenAI, Ollama, LlamaCpp, Responses, Anthropic };

using runtime::StreamEvent;

inline constexpr auto kAliveCheckInterval = std::chrono::milliseconds(50);

// 24 hex digits: unique within the process, unpredictable across processes.
std::string random_id(ServerContext& ctx);

// One accepted request being answered: its handles, what was produced so far
// and the bookkeeping for the log line and the metrics.
struct GenerationJob {
  ServerContext* ctx = nullptr;
  std::shared_ptr<ModelLease> lease;            // keeps the model loaded and its engine alive
  Wire wire = Wire::OpenAI;
  OllamaMeta ollama;                            // wire Ollama: its fields
  NativeMeta native;                            // wire LlamaCpp: its fields
  ResponsesMeta responses_meta;                 // wire Responses: its fields (the model is meta.model)
  std::optional<ResponsesBuilder> responses;    // wire Responses: the output items (responses_builder())
  std::optional<AnthropicBuilder> anthropic;    // wire Anthropic: the content blocks (anthropic_builder())
  ResponseMeta meta;
  std::string route;
  bool stream = false;
  // The plan may take seconds (images to encode): a stream whose plan is
  // not done within a ping interval gets its 200 and pings meanwhile.
  bool slow_plan = false;
  bool include_usage = false;
  bool logprobs = false;
  ToolRequest tools;                            // chat: the request's tools (active: replies searched for calls)
  // Chat: replies split into reasoning and content (reasoning_split.h);
  // opens_reasoning: the prompt opened the reasoning block.
  bool split_reasoning = false;
  bool opens_reasoning = false;
  // Chat of a harmony model: replies parsed by HarmonyStream (reasoning,
  // content and tool calls), instead of the reasoning split and the
  // tool-call filter; the prompt's tail says where the reply starts.
  bool harmony = false;
  std::string harmony_prompt_tail;
  // Chat with a Gemma 4 template: the same, by Gemma4Stream
  // (opens_reasoning: the prompt opened a thought).
  bool gemma4 = false;
  // Chat with a Qwen3-Coder template: the same, by Qwen3CoderStream.
  bool qwen3_coder = false;
  std::vector<PlannedChoice> planned;
  std::vector<std::shared_ptr<runtime::RequestHandle>> handles;
  std::vector<ChoiceResult> results;
  std::vector<size_t> text_bytes;  // per choice, for legacy logprobs text_offset
  runtime::Usage usage;
  RequestRecord record;
  int status = 200;
  std::string error;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

  bool reported = false;

  ~GenerationJob() {
    for (auto& h : handles) h->cancel();  // no-op for finished ones
    report();
  }

  // Counts the request in the metrics and writes its log line, once. run()
  // calls it before its last write: a client that has the whole response
  // then finds the request in /metrics and the log (the job itself is freed
  // only after httplib has sent the response). Requests that end otherwise
  // (rejected, client gone) are reported when the job is freed.
  void report() {
    if (reported) return;
    reported = true;
    record.route = route;
    record.status = status;
    record.model = meta.model;
    ctx->metrics.record(record);
    RequestLogLine line;
    line.id = meta.id;
    line.method = "POST";
    line.route = route;
    line.status = status;
    line.model = meta.model;
    line.prompt_tokens = usage.prompt_tokens;
    line.completion_tokens = usage.completion_tokens;
    line.cached_tokens = usage.cached_tokens;
    if (record.generated) {
      line.queue_s = record.queue_seconds;
      line.ttft_s = record.queue_seconds + record.first_token_seconds;
    }
    // Engine timings for a request that ran; handler time for one rejected before.
    line.total_s = record.generated
                       ? record.total_seconds
                       : std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
    line.error = error;
    log_request(line);
  }

  // Answers `e` before the 200, in the job's wire format, as the job's outcome.
  void reject(httplib::Response& res, const ApiError& e);
  // Before anything else: the 503 of a server shutting down, or the 400 of
  // a body that could not be read, answered; false when there was none.
  bool refused_early(httplib::Response& res, const ParsedBody& body);

  // A chat plan's reply format (reasoning split, harmony, Gemma 4, Qwen3-Coder).
  void take_reply_format(Plan& p) {
    split_reasoning = p.split_reasoning;
    opens_reasoning = p.opens_reasoning;
    harmony = p.harmony;
    harmony_prompt_tail = std::move(p.harmony_prompt_tail);
    gemma4 = p.gemma4;
    qwen3_coder = p.qwen3_coder;
  }

  // The tools a Qwen3-Coder reply's calls may use (no names: no calls).
  Qwen3CoderTools qwen3_coder_tools() const {
    Qwen3CoderTools t;
    if (!tools.active()) return t;
    t.names = tools.names;
    if (tools.grammar && tools.grammar->names == t.names) t.text_parameters = tools.grammar->text_parameters;
    return t;
  }

  void cancel_all() {
    for (auto& h : handles) h->cancel();
  }

  // Wire Responses: the builder of the output items, made on first use
  // (the model's name is known by then).
  ResponsesBuilder& responses_builder() {
    if (!responses) {
      ResponsesMeta m = responses_meta;
      m.model = meta.model;
      responses.emplace(std::move(m), [this](const char* prefix) { return prefix + random_id(*ctx); });
    }
    return *responses;
  }
  AnthropicBuilder& anthropic_builder() {
    if (!anthropic) anthropic.emplace(meta.id, meta.model);
    return *anthropic;
  }

  // The client went away: cancel, and log 499 (nginx's "client closed request").
  void client_gone() {
    cancel_all();
    if (status == 200) {
      status = 499;
      error = "client disconnected";
    }
  }

  // Folds a finished choice's usage and timings in (prompt tokens once per prompt).
  void account(size_t choice, const StreamEvent& ev, std::vector<bool>& group_counted) {
    const int group = planned[choice].prompt_group;
    if (!group_counted[static_cast<size_t>(group)]) {
      group_counted[static_cast<size_t>(group)] = true;
      usage.prompt_tokens += ev.usage.prompt_tokens;
      usage.cached_tokens += ev.usage.cached_tokens;
    }
    usage.completion_tokens += ev.usage.completion_tokens;
    record.generated = true;
    record.completion_tokens += ev.usage.completion_tokens;
    record.queue_seconds = std::max(record.queue_seconds, ev.queue_seconds);
    if (record.first_token_seconds == 0 || ev.first_token_seconds < record.first_token_seconds) {
      record.first_token_seconds = ev.first_token_seconds;
    }
    record.total_seconds = std::max(record.total_seconds, ev.total_seconds);
  }

  nlohmann::json logprobs_of(size_t choice, const std::vector<runtime::TokenInfo>& tokens) const {
    if (!logprobs) return nullptr;
    if (meta.endpoint == Endpoint::Chat) return chat_logprobs_json(tokens);
    return completion_logprobs_json(tokens, text_bytes[choice]);
  }

  // Runs until every choice finished, the client left or an error. Writes
  // through `write`; `alive` says whether the client is still there.
  template <class Write, class Alive>
  void run(Write&& write, Alive&& alive) {
    const size_t n = handles.size();
    results.assign(n, {});
    text_bytes.assign(n, 0);
    std::vector<bool> done(n, false);
    std::vector<bool> group_counted(n, false);
    size_t n_done = 0;
    // Chat with tools: per choice, the stream filter (streaming only) and
    // the tokens of the text it holds.
    const bool own_format = harmony || gemma4 || qwen3_coder;  // replies with a parser of their own
    std::vector<ToolCallStream> tool_streams;
    if (tools.active() && stream && !own_format) tool_streams.assign(n, ToolCallStream(tools.forced()));
    std::vector<std::vector<runtime::TokenInfo>> held_tokens(n);
    // Chat of a thinking model: per choice, the reasoning split.
    std::vector<ReasoningStream> reasoning_streams;
    if (split_reasoning && !own_format) reasoning_streams.assign(n, ReasoningStream(opens_reasoning));
    // Chat of a harmony model or with a Gemma 4 or Qwen3-Coder template:
    // per choice, its parser and the calls it found.
    std::vector<HarmonyStream> harmony_streams;
    std::vector<Gemma4Stream> gemma4_streams;
    std::vector<Qwen3CoderStream> qwen3_coder_streams;
    std::vector<std::vector<ToolCall>> parsed_calls(n);
    const std::vector<std::string> names = tools.active() ? tools.names : std::vector<std::string>();
    if (harmony) harmony_streams.assign(n, HarmonyStream(harmony_prompt_tail, split_reasoning, names));
    if (gemma4) gemma4_streams.assign(n, Gemma4Stream(opens_reasoning, split_reasoning, names));
    if (qwen3_coder) {
      qwen3_coder_streams.assign(n, Qwen3CoderStream(opens_reasoning, split_reasoning, qwen3_coder_tools()));
    }
    // The parsed parts' calls kept for the end; the text taken as a split reply's.
    auto parsed_text = [&parsed_calls](size_t i, auto h) {
      parsed_calls[i].insert(parsed_calls[i].end(), h.calls.begin(), h.calls.end());
      return ReasoningParts{std::move(h.reasoning), std::move(h.content)};
    };
    if (stream && wire == Wire::Responses && !write(responses_builder().start())) return;
    if (stream && wire == Wire::Anthropic &&
        !write(anthropic_builder().start(static_cast<int64_t>(planned[0].request.prompt.size())))) {
      return;
    }
    if (stream && wire == Wire::OpenAI) {
      for (size_t i = 0; i < n; ++i) {
        if (meta.endpoint == Endpoint::Chat && !write(sse_event(chat_role_chunk(meta, static_cast<int>(i))))) return;
        if (!planned[i].echo_text.empty() &&
            !write(sse_event(content_chunk(meta, static_cast<int>(i), planned[i].echo_text, nullptr)))) {
          return;
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      results[i].text = planned[i].echo_text;
      text_bytes[i] = planned[i].echo_text.size();
    }
    const auto wait = n == 1 ? std::chrono::milliseconds(50) : std::chrono::milliseconds(5);
    auto last_write = runtime::Clock::now();
    const auto ping_interval = std::chrono::duration<double>(ctx->options.sse_ping_s);
    StreamEvent ev;
    auto last_alive_check = runtime::Clock::now();
    while (n_done < n) {
      // Polled whether or not events flow: a non-streamed response writes
      // nothing until the end, so only this notices a client that left.
      if (runtime::Clock::now() - last_alive_check >= kAliveCheckInterval) {
        if (!alive()) {
          client_gone();
          return;
        }
        last_alive_check = runtime::Clock::now();
      }
      bool any = false;
      for (size_t i = 0; i < n; ++i) {
        if (done[i] || !handles[i]->next(ev, wait)) continue;
        any = true;
        if (ev.kind == StreamEvent::Kind::Error) {
          fail(ev.error, write);
          return;
        }
        auto& r = results[i];
        if (!ev.text.empty() || !ev.tokens.empty()) {
          ReasoningParts parts{{}, ev.text};
          if (!harmony_streams.empty()) parts = parsed_text(i, harmony_streams[i].push(ev.text));
          else if (!gemma4_streams.empty()) parts = parsed_text(i, gemma4_streams[i].push(ev.text));
          else if (!qwen3_coder_streams.empty()) parts = parsed_text(i, qwen3_coder_streams[i].push(ev.text));
          else if (!reasoning_streams.empty()) parts = reasoning_streams[i].push(ev.text);
          if (!take_text(i, parts, ev.tokens, tool_streams, held_tokens[i], write)) return;
          if (stream) last_write = runtime::Clock::now();
          if (logprobs) r.tokens.insert(r.tokens.end(), ev.tokens.begin(), ev.tokens.end());
        }
        if (ev.kind == StreamEvent::Kind::Finished && !reasoning_streams.empty() &&
            !take_text(i, reasoning_streams[i].finish(), {}, tool_streams, held_tokens[i], write)) {
          return;
        }
        if (ev.kind == StreamEvent::Kind::Finished && !harmony_streams.empty() &&
            !take_text(i, parsed_text(i, harmony_streams[i].finish()), {}, tool_streams, held_tokens[i], write)) {
          return;
        }
        if (ev.kind == StreamEvent::Kind::Finished && !gemma4_streams.empty() &&
            !take_text(i, parsed_text(i, gemma4_streams[i].finish()), {}, tool_streams, held_tokens[i], write)) {
          return;
        }
        if (ev.kind == StreamEvent::Kind::Finished && !qwen3_coder_streams.empty() &&
            !take_text(i, parsed_text(i, qwen3_coder_streams[i].finish()), {}, tool_streams, held_tokens[i],
                       write)) {
          return;
        }
        if (ev.kind == StreamEvent::Kind::Finished) {
          if (ev.finish == runtime::FinishReason::Cancelled || ev.finish == runtime::FinishReason::Error) {
            // The tokens generated before the cut still count (log line, usage).
            account(i, ev, group_counted);
            fail(ev.finish == runtime::FinishReason::Cancelled ? "the request was cancelled (server shutting down)"
                                                               : ev.error,
                 write);
            return;
          }
          r.finish = ev.finish;
          r.stop_word = ev.stop_word;
          account(i, ev, group_counted);
          done[i] = true;
          ++n_done;
          if (own_format) {
            if (!finish_parsed_calls(i, std::move(parsed_calls[i]), write)) return;
          } else if (tools.active() && !finish_tool_calls(i, tool_streams, held_tokens[i], write)) {
            return;
          }
          if (stream && wire == Wire::OpenAI &&
              !write(sse_event(finish_chunk(meta, static_cast<int>(i), ev.finish, !r.tool_calls.empty())))) {
            return;
          }
        }
      }
      if (any) continue;
      if (stream && wire != Wire::Ollama && runtime::Clock::now() - last_write >= ping_interval) {
        if (!write(std::string(kSsePing))) return;
        last_write = runtime::Clock::now();
      }
    }
    report();
    if (wire == Wire::Ollama) {
      const auto done = ollama_done(ollama, stream ? std::string() : results[0].text, results[0].finish, usage,
                                    record, arrived, stream ? std::vector<ToolCall>() : results[0].tool_calls,
                                    stream ? std::string() : results[0].reasoning);
      write(stream ? ndjson_line(done) : dump_json(done));
    } else if (wire == Wire::LlamaCpp) {
      const auto last = native_final(native, results[0], stream, usage, record, logprobs);
      write(stream ? sse_event(last) : dump_json(last));
    } else if (wire == Wire::Responses) {
      ResponsesBuilder& b = responses_builder();
      if (!stream) {
        b.reasoning(results[0].reasoning);
        b.text(results[0].text);
        b.calls(results[0].tool_calls);
      }
      const std::string last = b.finish(results[0].finish, usage);
      if (responses_meta.store) {
        nlohmann::json conversation = responses_meta.conversation;
        conversation.push_back(assistant_message(results[0].text, results[0].tool_calls));
        ctx->responses.put(meta.id, {std::move(conversation), b.object()});
      }
      write(stream ? last : dump_json(b.object()));
    } else if (wire == Wire::Anthropic) {
      AnthropicBuilder& b = anthropic_builder();
      if (!stream) {
        b.thinking(results[0].reasoning);
        b.text(results[0].text);
        b.calls(results[0].tool_calls);
      }
      const std::string last = b.finish(results[0].finish, results[0].stop_word, usage);
      write(stream ? last : dump_json(b.object()));
    } else if (stream) {
      if (include_usage && !write(sse_event(usage_chunk(meta, usage)))) return;
      write(std::string(kSseDone));
    } else {
      write(dump_json(response_body(meta, results, usage, logprobs)));
    }
  }

  // A piece of choice i's reply, split into reasoning and content: kept in
  // results[i], and when streaming written (the reasoning at once; the
  // content through the tool-call filter when tools are active, which may
  // hold it back with its tokens). False when the client went away.
  template <class Write>
  bool take_text(size_t i, const ReasoningParts& parts, const std::vector<runtime::TokenInfo>& tokens,
                 std::vector<ToolCallStream>& tool_streams, std::vector<runtime::TokenInfo>& held, Write&& write) {
    auto& r = results[i];
    r.reasoning += parts.reasoning;
    r.text += parts.content;
    text_bytes[i] += parts.content.size();
    if (!stream) return true;
    const auto index = static_cast<int>(i);
    if (!parts.reasoning.empty()) {
      const std::string chunk = wire == Wire::Ollama ? ndjson_line(ollama_thinking_chunk(ollama, parts.reasoning))
                                : wire == Wire::Responses ? responses_builder().reasoning(parts.reasoning)
                                : wire == Wire::Anthropic ? anthropic_builder().thinking(parts.reasoning)
                                                          : sse_event(reasoning_chunk(meta, index, parts.reasoning));
      if (!write(chunk)) return false;
    }
    // With tools, what may be a call is held back (and its tokens' logprobs with it).
    std::string shown = parts.content;
    std::vector<runtime::TokenInfo> shown_tokens = tokens;
    if (!tool_streams.empty()) {
      shown = tool_streams[i].push(parts.content);
      held.insert(held.end(), tokens.begin(), tokens.end());
      shown_tokens.clear();
      if (!shown.empty()) shown_tokens.swap(held);
    }
    if (shown.empty() && shown_tokens.empty()) return true;
    return write(content_piece(i, shown, shown_tokens));
  }

  // A streamed piece of choice i's content in the job's wire format.
  std::string content_piece(size_t i, const std::string& text, const std::vector<runtime::TokenInfo>& tokens) {
    switch (wire) {
      case Wire::Ollama:
        return ndjson_line(ollama_chunk(ollama, text));
      case Wire::LlamaCpp:
        return sse_event(native_chunk(text, logprobs ? tokens : std::vector<runtime::TokenInfo>()));
      case Wire::Responses:
        return responses_builder().text(text);
      case Wire::Anthropic:
        return anthropic_builder().text(text);
      case Wire::OpenAI:
        break;
    }
    return sse_event(content_chunk(meta, static_cast<int>(i), text, logprobs_of(i, tokens)));
  }

  // A finished chat choice with tools: finds its calls (results[i]'s
  // tool_calls, ids given; text becomes the content around them) and, when
  // streaming, writes the content held back and then the calls. False when
  // the client went away.
  template <class Write>
  bool finish_tool_calls(size_t i, std::vector<ToolCallStream>& tool_streams,
                         std::vector<runtime::TokenInfo>& held, Write&& write) {
    auto& r = results[i];
    ToolCallReply reply = stream ? tool_streams[i].finish(tools.names) : parse_tool_calls(r.text, tools.names);
    settle_calls(reply.calls);
    if (!stream) {
      if (!reply.calls.empty()) r.text = std::move(reply.content);
      r.tool_calls = std::move(reply.calls);
      return true;
    }
    r.tool_calls = reply.calls;
    if (!reply.content.empty()) {
      const std::string chunk = content_piece(i, reply.content, held);
      held.clear();
      if (!write(chunk)) return false;
    }
    return write_calls(i, reply.calls, held, write);
  }

  // A finished harmony, Gemma 4 or Qwen3-Coder choice's calls (its content was taken
  // already): kept in results[i] with ids given and, when streaming,
  // written; beside calls, content of blanks only is no content. False
  // when the client went away.
  template <class Write>
  bool finish_parsed_calls(size_t i, std::vector<ToolCall> calls, Write&& write) {
    settle_calls(calls);
    results[i].tool_calls = std::move(calls);
    if (!results[i].tool_calls.empty() && results[i].text.find_first_not_of(" \t\r\n") == std::string::npos) {
      results[i].text.clear();
    }
    if (!stream) return true;
    std::vector<runtime::TokenInfo> none;
    return write_calls(i, results[i].tool_calls, none, write);
  }

  // The first call only unless parallel_tool_calls; each given its id.
  void settle_calls(std::vector<ToolCall>& calls) {
    if (!tools.parallel && calls.size() > 1) calls.resize(1);
    for (auto& call : calls) call.id = "call_" + random_id(*ctx);
  }

  // Streaming: choice i's calls as one chunk (none: nothing), with the
  // logprobs of the tokens held for them. False when the client went away.
  template <class Write>
  bool write_calls(size_t i, const std::vector<ToolCall>& calls, std::vector<runtime::TokenInfo>& held,
                   Write&& write) {
    if (calls.empty()) return true;
    const std::string chunk =
        wire == Wire::Ollama      ? ndjson_line(ollama_chunk(ollama, "", calls))
        : wire == Wire::Responses ? responses_builder().calls(calls)
        : wire == Wire::Anthropic ? anthropic_builder().calls(calls)
                                  : sse_event(tool_calls_chunk(meta, static_cast<int>(i), calls, logprobs_of(i, held)));
    held.clear();
    return write(chunk);
  }

  // An error after the 200: an SSE error event then [DONE], an NDJSON
  // {"error"} line, or an error body.
  template <class Write>
  void fail(const std::string& message, Write&& write) {
    fail(ApiError{500, "server_error", message, "", ""}, write);
  }
  template <class Write>
  void fail(const ApiError& e, Write&& write) {
    status = e.status;
    error = e.message;
    cancel_all();
    report();
    if (wire == Wire::Ollama) {
      const std::string body = ollama_error_body(e.message);
      write(stream ? body + "\n" : body);
      return;
    }
    if (stream && wire == Wire::Responses) {
      write(responses_builder().error(e));
      return;
    }
    if (wire == Wire::Anthropic) {
      write(stream ? anthropic_builder().error(e) : dump_json(anthropic_error_body(e)));
      return;
    }
    const std::string body = error_body(e);
    if (stream) {
      // llama.cpp's native streams end without [DONE].
      if (write("data: " + body + "\n\n") && wire == Wire::OpenAI) write(std::string(kSseDone));
    } else {
      write(body);
    }
  }
};


// A job for a request to `req`'s route: its wire format, endpoint and an
// id of `id_prefix` and random_id.
std::shared_ptr<GenerationJob> new_generation_job(ServerContext& ctx, const httplib::Request& req, Wire wire,
                                                  Endpoint endpoint, const std::string& id_prefix);

// The 4xx/5xx of an engine's refusal (queue full: 503, context: 400
// context_length_exceeded, ...).
ApiError submit_error(const runtime::SubmitResult& r);
// The registry's error for a request, as the route answers it (one-model
// mode: a load failure is a 500 "the model failed to load: ...").
ApiError registry_error(const ServerContext& ctx, const ApiError& e);

// An error answered before the 200, in the job's wire format.
void send_job_error(const GenerationJob& job, httplib::Response& res, const ApiError& error);

// Plans the request on the leased model: fills job.planned (and stream,
// include_usage, logprobs) or returns the 4xx.
using PlanFunction = std::function<std::optional<ApiError>(GenerationJob& job, const ServingModel& serving)>;

// Leases `requested` (resolved by the registry; empty: the only model),
// then plans with `plan`, submits and answers. `stream` says how to wait
// for a load: a stream answers 200 at once and pings (SSE) while the model
// loads, errors after that being stream events; otherwise the handler
// waits. A model already loaded is planned before the 200 either way.
void serve_generation(ServerContext& ctx, const std::shared_ptr<GenerationJob>& job, const std::string& requested,
                      const std::optional<config::KeepAlive>& keep_alive, bool stream, PlanFunction plan,
                      httplib::Response& res);

}  // namespace tc::server
