// The request side of function calling: `tools`, `tool_choice` and
// `parallel_tool_calls` of /v1/chat/completions (and /api/chat's `tools`)
// validated into a ToolRequest, and the `tool_calls` of assistant messages
// in the history put in the shape chat templates read (arguments as an
// object). No HTTP here; unit-tested directly.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/tool_call_prefix.h"
#include "server/openai_errors.h"

namespace tc::server {

struct ToolRequest {
  enum class Choice {
    None,      // tools are not offered to the model; the reply is text
    Auto,      // the model may call tools: its reply is searched for calls
    Required,  // the reply is forced to be a call to one of the tools
    Named,     // the reply is forced to be a call to `named`
  };
  static constexpr size_t kMaxTools = 128;
  static constexpr size_t kMaxNameBytes = 64;

  nlohmann::json tools;            // null, or the validated array as sent (what the template sees)
  std::vector<std::string> names;  // the functions' names, sorted
  Choice choice = Choice::None;
  std::string named;               // Named: which function
  bool parallel = true;            // parallel_tool_calls: false keeps only the first call
  // Forced: the grammar of the call (with the functions' parameters), set by
  // the route from the request's text (response_schema.h); when null, the
  // forced names with any-object arguments.
  std::shared_ptr<const text::ToolCallGrammar> grammar;

  // The reply is searched for calls (or forced to be one).
  bool active() const { return !names.empty() && choice != Choice::None; }
  bool forced() const { return choice == Choice::Required || choice == Choice::Named; }
  // The names a forced call may use (sorted).
  std::vector<std::string> forced_names() const;
};

// Reads tools / tool_choice / parallel_tool_calls from a chat request body
// (null fields are absent). A 400 naming the field when one is malformed:
// a tool that is not {"type": "function", "function": {"name", ...}}, a
// name outside [A-Za-z0-9_.:-]{1,64} or declared twice, a tool_choice that
// names an undeclared function, or a tool_choice other than "none" without
// tools. Without tool_choice, tools make it "auto".
std::optional<ApiError> read_tool_request(const nlohmann::json& body, ToolRequest& out);

// Checks the `tool_calls` of message `index` (an object) and rewrites each
// call's `function.arguments` given as a JSON string (OpenAI's form) into
// the object it holds, which is what chat templates iterate and `tojson`.
// A 400 when tool_calls is not an array of {"function": {"name", ...}} or
// an arguments string is not a JSON object.
std::optional<ApiError> normalise_message_tool_calls(nlohmann::json& message, size_t index);

}  // namespace tc::server
