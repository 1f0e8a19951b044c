// Evaluator of the chat template engine: walks a parsed template with the
// request's variables as the global context and returns the rendered text.
// Scoping follows jinja2: `for` bodies (per iteration) and macros get their
// own scope, `if` does not; namespaces are shared by reference.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/text/jinja_parser.h"

namespace tc::text::jinja {

// Pure function of its inputs (apart from strftime_now's clock); safe to
// call concurrently on the same program. Throws JinjaError with a line.
std::string render(const Body& program, const nlohmann::json& variables);

}  // namespace tc::text::jinja
