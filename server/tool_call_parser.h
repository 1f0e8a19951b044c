// The reply side of function calling: finding the tool calls a model wrote
// in its reply, in the forms open models write them, and holding them back
// from a stream so that a client never sees a call as text.
//
// Forms recognised (the name must be a declared function, the arguments a
// JSON object or a string holding one):
//   - Hermes / Qwen: text, then one or more
//       <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//     (the last closing tag may be missing when the model stopped there);
//   - Mistral, with its control tokens in the text (tool_marker_ids): text,
//     then one or more [TOOL_CALLS]NAME[ARGS]{...} (v11 and later; a
//     [CALL_ID]ID may follow NAME), or [TOOL_CALLS] and JSON as below (v3);
//   - a reply that is JSON (Llama 3.x, Mistral, forced calls, most others),
//     optionally in a ``` fence: one call object, several separated by
//     ';' ',' or whitespace, an array of them, or {"tool_calls": [...]};
//     a call object is {"name", "arguments" | "parameters"} or OpenAI's
//     {"function": {"name", "arguments"}}.
// A reply that looks like a call but is not one (an unknown name, JSON that
// does not parse, a cut-off reply) stays text, whole.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tc::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, serialised
  std::string id;         // "call_...": given by the server when it answers
};

struct ToolCallReply {
  std::string content;          // the text around the calls (all of it when there are none)
  std::vector<ToolCall> calls;  // in the order written
};

// The ids of the tokens whose text marks Mistral's calls ([TOOL_CALLS],
// [ARGS], [CALL_ID]) among a vocabulary's pieces, ascending: control
// tokens, dropped from a reply's text unless the engine is told to render
// them (GenerationRequest::rendered_tokens).
std::vector<int32_t> tool_marker_ids(const std::vector<std::string>& pieces);

// Parses a whole reply. `names`: the declared functions, sorted.
ToolCallReply parse_tool_calls(std::string_view text, const std::vector<std::string>& names);

// Streams a reply's text while holding back what may be a tool call: a
// reply that opens (after blanks) with JSON, a ``` fence or a marker is
// held whole; otherwise text streams until "<tool_call>" or "[TOOL_CALLS]"
// appears (a tail that could begin one waits for the next piece) and is
// held from there. At the
// end, finish() parses everything and returns what was not shown yet.
class ToolCallStream {
 public:
  // `hold_all`: hold the whole reply (a forced call).
  explicit ToolCallStream(bool hold_all = false);

  // The text that can be shown now (possibly empty).
  std::string push(std::string_view text);
  // The reply is over: the calls and the content not shown yet.
  ToolCallReply finish(const std::vector<std::string>& names);

 private:
  enum class Mode { Undecided, Text, Holding };
  std::string release(size_t n);  // shows pending_'s first n bytes

  Mode mode_;
  std::string shown_;    // what push() returned so far
  std::string pending_;  // not shown: leading whitespace, a possible marker start, or the held call
};

}  // namespace tc::server
