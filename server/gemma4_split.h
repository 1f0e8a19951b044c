// Gemma 4 replies: a chat template of Gemma 4's (its source writes
// <|tool_call> or <|channel>) has the model write its reasoning and its
// calls with markers of its own (tokens its vocabulary renders):
//   <|channel>thought\nREASONING<channel|>ANSWER
//   <|tool_call>call:NAME{key:<|"|>text<|"|>,n:1,on:true,obj:{...},arr:[...]}<tool_call|>
// (the call syntax: gemma4_call_reader.h). Read as llama.cpp's server reads
// them (common/chat.cpp's gemma4 format):
//   - a thought block is the reasoning, the blanks after `thought` left
//     out; <|channel> markers right before one are dropped; with
//     reasoning_format none it stays in the content as written, markers
//     included; a thought that never closes (cut by max_tokens, or opened
//     by the prompt and never closed) is reasoning to the end;
//   - with tools, a call to a declared function whose arguments read is a
//     tool call, its arguments as JSON; without tools calls are content;
//   - a `<|turn>model\n` that opens the reply, and a <channel|> outside a
//     thought (Gemma 4 may end its answer with one), are dropped.
// The rest is content as written, nothing lost: text, a <|channel> that
// opens no thought, a call to an undeclared function, one whose syntax
// breaks or that is cut. (llama.cpp stops reading at a stray <channel|>
// and after the calls, dropping what follows; here it stays content.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/gemma4_call_reader.h"
#include "server/tool_call_parser.h"

namespace tc::server {

inline constexpr std::string_view kGemma4ChannelOpen = "<|channel>";
inline constexpr std::string_view kGemma4ChannelClose = "<channel|>";
inline constexpr std::string_view kGemma4Thought = "thought";
inline constexpr std::string_view kGemma4CallOpen = "<|tool_call>";
inline constexpr std::string_view kGemma4TurnModel = "<|turn>model\n";

// Whether a chat template writes Gemma 4's format: its source holds
// <|tool_call> or <|channel> (neither is harmony's <|channel|>).
bool is_gemma4_template(std::string_view template_source);

// Whether a rendered prompt ends inside an opened thought: its last
// non-blank text is <|channel>thought (a template whose thinking switch
// opens the block for the model).
bool prompt_opens_gemma4_thought(std::string_view prompt);

// The ids of Gemma 4's reply markers among a vocabulary's pieces
// (<|channel>, <channel|>, <|tool_call>, <tool_call|>, <|"|>, <|turn>),
// ascending: a converted file has the first five user-defined (rendered
// anyway), <|turn> control; all of them are rendered for the parser
// (GenerationRequest::rendered_tokens), as llama.cpp preserves them.
std::vector<int32_t> gemma4_marker_ids(const std::vector<std::string>& pieces);

struct Gemma4Parts {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> calls;  // in the order written; ids not set
};

// The reply parsed as it arrives in pieces: each push returns what can be
// told apart so far (a possible marker start, and a call until it is whole
// or broken, are held back); finish() returns the rest. The pieces'
// concatenation equals split_gemma4 of the whole reply, however it was cut.
class Gemma4Stream {
 public:
  // `opens_thought`: the prompt opened a thought (prompt_opens_gemma4_thought);
  // `split_reasoning`: thoughts to `reasoning` (else to the content as
  // written); `names`: the declared functions, sorted (empty: no calls).
  Gemma4Stream(bool opens_thought, bool split_reasoning, std::vector<std::string> names);

  Gemma4Parts push(std::string_view text);
  Gemma4Parts finish();

 private:
  enum class State { Start, Content, Channel, Blank, Thought, Call };
  void run(Gemma4Parts& out, bool at_end);

  bool split_reasoning_;
  std::vector<std::string> names_;
  State state_;
  std::string buf_;  // received, not yet read
  std::string raw_;  // Channel: the <|channel> markers read; Call: the call's bytes after <|tool_call>
  Gemma4CallReader call_;
};

// A whole reply.
Gemma4Parts split_gemma4(std::string_view reply, bool opens_thought, bool split_reasoning,
                         const std::vector<std::string>& names);

}  // namespace tc::server
