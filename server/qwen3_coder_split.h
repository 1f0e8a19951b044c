// Qwen3-Coder replies (Qwen3-Coder, Qwen 3.5, Nemotron Nano 3, StepFun 3.5
// Flash): a chat template whose source writes <tool_call>, <function= and
// <parameter= (llama.cpp's detection of its qwen3_coder format) has the
// model write its calls as XML (the call: qwen3_coder_call_reader.h):
//   <think>REASONING</think>ANSWER<tool_call>\n<function=NAME>...</function>\n</tool_call>
// Read as llama.cpp's server reads them (common/chat.cpp,
// common_chat_params_init_qwen3_coder):
//   - reasoning as reasoning_split.h's rule (a <think> block opening the
//     reply, or the reply from its start when the prompt opened it; blanks
//     after </think> dropped; one that never closes is reasoning to the
//     end), except that a <tool_call> also ends it (llama.cpp's
//     thinking_end_tags) and is then read as a call; with reasoning_format
//     none it is all content as written;
//   - with tools, a call after <tool_call>, or after a <function= the
//     model wrote without it (for a declared name, as llama.cpp's triggers
//     take <function=NAME>), is a tool call, its arguments as JSON; the
//     blanks after a call are dropped; without tools calls are content.
// The rest is content as written, nothing lost: a call to an undeclared
// function, one whose syntax breaks or that is cut, text after the calls.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/qwen3_coder_call_reader.h"
#include "server/tool_call_parser.h"

namespace tc::server {

// Whether a chat template writes Qwen3-Coder's XML calls: its source holds
// <tool_call>, <function= and <parameter=.
bool is_qwen3_coder_template(std::string_view template_source);

struct Qwen3CoderParts {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;  // in the order written; ids not set
};

// The reply parsed as it arrives in pieces: each push returns what can be
// told apart so far (a possible tag start, and a call until it is whole
// or broken, are held back); finish() returns the rest. The pieces'
// concatenation equals split_qwen3_coder of the whole reply, however it
// was cut.
class Qwen3CoderStream {
 public:
  // `opens_reasoning`: the prompt opened a <think> (prompt_opens_reasoning);
  // `split_reasoning`: reasoning to `reasoning` (else all is content);
  // `tools`: the declared functions (no names: no calls).
  Qwen3CoderStream(bool opens_reasoning, bool split_reasoning, Qwen3CoderTools tools);

  Qwen3CoderParts push(std::string_view text);
  Qwen3CoderParts finish();

 private:
  enum class State { Start, Reasoning, AfterReasoning, Content, Call, AfterCall };
  void run(Qwen3CoderParts& out, bool at_end);
  // The call being read is over (Done or Invalid): into `out`, its bytes
  // after it (or, Invalid, all of them after its marker) read again.
  void end_call(Qwen3CoderParts& out);

  Qwen3CoderTools tools_;
  State state_;
  std::string buf_;     // received, not yet read
  std::string raw_;     // Call: the bytes pushed to the reader
  std::string marker_;  // Call: the marker it came after (<tool_call> or <function=)
  Qwen3CoderCallReader call_;
};

// A whole reply.
Qwen3CoderParts split_qwen3_coder(std::string_view reply, bool opens_reasoning, bool split_reasoning,
                                  const Qwen3CoderTools& tools);

}  // namespace tc::server
