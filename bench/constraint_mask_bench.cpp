// constraint_mask_bench: what constrained output costs per generated token:
// OutputConstraint::mask over a real-size vocabulary (Qwen2-like, 151,936
// tokens, or Gemma3-like, 262,144; profiler/family_vocab.h) in the states a
// reply spends its tokens in (inside a string, at an object key, after a
// value), for JSON mode, a JSON Schema and a forced tool call, with the
// plain-text fast path and without it (every token tried); and for GBNF
// grammars (llama.cpp's JSON grammar, free text) the trie walk on a state's
// first visit and from the cache of states. Medians of ROUNDS masks, in
// ms, one thread.
//   constraint_mask_bench [--family qwen2,gemma3] [-r ROUNDS]
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_args.h"
#include "bench/bench_timing.h"
#include "engine/runtime/output_constraint.h"
#include "engine/text/gbnf_grammar.h"
#include "engine/text/json_schema.h"
#include "engine/text/tokenizer.h"
#include "profiler/family_vocab.h"

namespace {

constexpr const char* kUsage =
    "usage: constraint_mask_bench [--family qwen2,gemma3] [-r ROUNDS]\n"
    "  times OutputConstraint::mask per token state (medians, ms)\n";

using tc::runtime::OutputConstraint;
using tc::runtime::OutputForm;

struct Case {
  const char* form;
  const char* state;
  OutputForm output;
  std::string prefix;  // the reply so far
};

// The median time of one mask after `prefix` (fed as the tokenizer splits
// it); `fresh`: a new constraint each round (a grammar state's first visit).
double time_mask(const tc::text::Tokenizer& tokenizer, std::shared_ptr<const tc::runtime::ConstraintTokenTable> table,
                 const Case& c, int rounds, bool fresh = false) {
  std::optional<OutputConstraint> constraint;
  std::vector<float> logits(table->bytes.size());
  std::vector<double> times;
  for (int r = 0; r < rounds; ++r) {
    if (fresh || !constraint) {
      constraint.emplace(table, c.output);
      for (auto id : tokenizer.encode(c.prefix, {})) constraint->accept(id);
    }
    std::fill(logits.begin(), logits.end(), 0.0f);
    const auto t0 = tc::bench::Clock::now();
    constraint->mask(logits);
    times.push_back(tc::bench::seconds_since(t0) * 1e3);
  }
  return tc::bench::median(times);
}

// llama.cpp's grammars/json.gbnf.
constexpr const char* kJsonGrammar = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20})";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> families = {"qwen2"};
  int rounds = 15;
  tc::bench::ArgReader args(argc, argv, kUsage);
  while (args.next()) {
    if (args.flag() == "--family") families = tc::bench::split_list(args.value());
    else if (args.flag() == "-r") rounds = args.int_value();
    else args.usage();
  }
  const auto schema = tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
      R"({"type": "object", "properties": {"answer": {"type": "string"}, "score": {"type": "number"},
          "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["answer", "score"]})"));
  const auto call = std::make_shared<const tc::text::ToolCallGrammar>(
      std::vector<std::string>{"get_time", "get_weather"},
      std::vector<std::shared_ptr<const tc::text::JsonSchema>>{
          nullptr, tc::text::JsonSchema::compile(nlohmann::ordered_json::parse(
                       R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"))});
  const std::vector<Case> cases = {
      {"json", "string", OutputForm::json_object(), R"({"answer": "The )"},
      {"json", "key", OutputForm::json_object(), R"({"answer": 1, ")"},
      {"json", "after value", OutputForm::json_object(), R"({"answer": 1)"},
      {"schema", "string", OutputForm::json_schema(schema), R"({"answer": "The )"},
      {"schema", "key", OutputForm::json_schema(schema), R"({"answer": "x", ")"},
      {"schema", "after value", OutputForm::json_schema(schema), R"({"answer": "x")"},
      {"tool call", "string", OutputForm::call(call), R"({"name": "get_weather", "arguments": {"city": "Par)"},
  };
  std::printf("| vocab | form | state | fast path ms | every token tried ms |\n| --- | --- | --- | ---: | ---: |\n");
  for (const auto& name : families) {
    const auto family = tc::profiler::vocab_family_from_name(name);
    if (!family) args.usage();
    const auto tokenizer = tc::text::Tokenizer::create(tc::profiler::make_family_vocab(*family));
    const auto n_vocab = tokenizer->n_vocab();
    const auto fast = tc::runtime::ConstraintTokenTable::from(*tokenizer, n_vocab);
    auto slow = std::make_shared<tc::runtime::ConstraintTokenTable>(*fast);
    std::fill(slow->plain.begin(), slow->plain.end(), 0);
    for (const auto& c : cases) {
      std::printf("| %s (%d) | %s | %s | %.2f | %.2f |\n", name.c_str(), n_vocab, c.form, c.state,
                  time_mask(*tokenizer, fast, c, rounds), time_mask(*tokenizer, slow, c, rounds));
      std::fflush(stdout);
    }
  }
  const auto json_grammar = tc::text::GbnfGrammar::parse(kJsonGrammar);
  const auto free_text = tc::text::GbnfGrammar::parse(R"(root ::= "Answer: " [^\n]+ "\n")");
  const std::vector<Case> grammar_cases = {
      {"json.gbnf", "string", OutputForm::grammar(json_grammar), R"({"answer": "The )"},
      {"json.gbnf", "key", OutputForm::grammar(json_grammar), R"({"answer": 1, ")"},
      {"json.gbnf", "after value", OutputForm::grammar(json_grammar), R"({"answer": 1)"},
      {"free text", "text", OutputForm::grammar(free_text), "Answer: The"},
  };
  std::printf("\n| vocab | grammar | state | first visit ms | cached ms |\n| --- | --- | --- | ---: | ---: |\n");
  for (const auto& name : families) {
    const auto family = tc::profiler::vocab_family_from_name(name);
    const auto tokenizer = tc::text::Tokenizer::create(tc::profiler::make_family_vocab(*family));
    const auto table = tc::runtime::ConstraintTokenTable::from(*tokenizer, tokenizer->n_vocab());
    for (const auto& c : grammar_cases) {
      std::printf("| %s (%d) | %s | %s | %.2f | %.2f |\n", name.c_str(), tokenizer->n_vocab(), c.form, c.state,
                  time_mask(*tokenizer, table, c, rounds, /*fresh=*/true), time_mask(*tokenizer, table, c, rounds));
      std::fflush(stdout);
    }
  }
  return 0;
}
