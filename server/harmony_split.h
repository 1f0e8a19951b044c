// Harmony replies (gpt-oss): OpenAI's "harmony" format writes a reply as
// messages, each a header and a body, the markers being tokens the
// vocabulary renders (engine/text/vocab_harmony.h):
//   <|channel|>analysis<|message|>REASONING<|end|>
//   <|start|>assistant<|channel|>final<|message|>ANSWER
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{ARGS}
// (the first message's `<|start|>assistant` is the prompt's; <|return|>
// and <|call|> end the generation unrendered; a call's recipient may also
// sit in the role part: `assistant to=functions.NAME<|channel|>commentary
// json<|message|>`). Read as llama.cpp's server reads them:
//   - analysis: the reasoning; with reasoning_format none it stays in the
//     content as written, markers included;
//   - final, commentary without a recipient (a preamble before calls), a
//     message of another or no channel: the content (body only);
//   - a message to functions.NAME, NAME a declared function, whose body is
//     a JSON object: a tool call (channel commentary or analysis);
//   - a message to any other recipient (an undeclared function, gpt-oss's
//     built-in browser or python tools, all calls when no tools are
//     declared): dropped, as llama.cpp drops such "unsolicited" calls.
// What is not harmony stays content as written, nothing lost: text between
// messages, a header that never ends or holds what no header holds (a
// character outside [A-Za-z0-9 _.:=/-], a marker other than <|channel|>
// and <|constrain|>, more than 256 bytes), a call whose arguments are not a
// JSON object (cut by max_tokens, say). A body ends at <|end|>, <|return|>,
// <|call|>, or a <|start|> that opens the next message; a reply that stops
// inside one (the final answer always does) ends it there.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call_parser.h"

namespace tc::server {

struct HarmonyParts {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;  // in the order written; ids not set
};

// The rendered prompt from its last <|start|> on (empty when it has none):
// where the template left the reply, "<|start|>assistant" for gpt-oss's.
std::string harmony_prompt_tail(std::string_view prompt);

// The reply parsed as it arrives in pieces: each push returns what can be
// told apart so far (a possible marker start, a header and a call's body
// are held back); finish() returns the rest. The pieces' concatenation
// equals split_harmony of the whole reply, however it was cut.
class HarmonyStream {
 public:
  // `prompt_tail`: harmony_prompt_tail of the prompt (the reply continues
  // it); `split_reasoning`: analysis to `reasoning` (else to the content as
  // written); `names`: the declared functions, sorted (empty: no calls).
  HarmonyStream(std::string_view prompt_tail, bool split_reasoning, std::vector<std::string> names);

  HarmonyParts push(std::string_view text);
  HarmonyParts finish();

 private:
  enum class State { Between, Header, Body };
  enum class Kind { Reasoning, Content, Call, Dropped };
  void run(HarmonyParts& out, bool at_end);
  void open_body(HarmonyParts& out);
  void emit(HarmonyParts& out, std::string_view text);
  void close_message(HarmonyParts& out, std::string_view terminator);

  bool split_reasoning_;
  std::vector<std::string> names_;
  State state_ = State::Between;
  Kind kind_ = Kind::Content;
  std::string buf_;        // received, not yet read
  std::string header_;     // Header: the header so far, the prompt's part included
  std::string raw_;        // the reply's text of this message: its header (Header, Call), as written
  std::string body_;       // Call: the arguments so far
  std::string call_name_;  // Call: the function
};

// A whole reply.
HarmonyParts split_harmony(std::string_view reply, std::string_view prompt_tail, bool split_reasoning,
                           const std::vector<std::string>& names);

}  // namespace tc::server
