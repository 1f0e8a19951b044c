// The constrained-output token mask (see output_constraint.h). Per draw,
// the bytes that may come next are found once (256 tries of the prefix),
// which rules out most tokens by their first byte (and those that begin
// with a space or a newline by their second); the rest are tried whole
// on a copy of the prefix, except, inside a string that takes any text,
// tokens of whole characters without quotes or escapes (allowed without a
// try: most of a vocabulary).
#include "engine/runtime/output_constraint.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kernels/check.h"

namespace tc::runtime {
namespace {

// The mask for one prefix type (monomorphic, so the per-token tries inline).
template <class Prefix>
void mask_with(const Prefix& prefix, const ConstraintTokenTable& table, std::span<float> logits) {
  constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
  const bool done = prefix.complete();  // the JSON forms may end only where they are whole
  const bool free_string = prefix.in_free_string();
  std::array<bool, 256> first{};
  for (int b = 0; b < 256; ++b) {
    Prefix copy = prefix;
    first[static_cast<size_t>(b)] = copy.push(static_cast<uint8_t>(b));
  }
  // The bytes that may follow a space and a newline (when those may come):
  // many tokens begin with one, and most of them are ruled out by their
  // second byte.
  std::array<bool, 256> after_space{}, after_newline{};
  for (auto [lead, after] : {std::pair{uint8_t{' '}, &after_space}, std::pair{uint8_t{'\n'}, &after_newline}}) {
    if (!first[lead]) continue;
    Prefix led = prefix;
    led.push(lead);
    for (int b = 0; b < 256; ++b) {
      Prefix copy = led;
      (*after)[static_cast<size_t>(b)] = copy.push(static_cast<uint8_t>(b));
    }
  }
  for (size_t t = 0; t < logits.size(); ++t) {
    if (logits[t] == kMinusInf) continue;
    bool allowed = false;
    switch (table.kind[t]) {
      case ConstraintTokenTable::Kind::EndOfGeneration:
        allowed = done;
        break;
      case ConstraintTokenTable::Kind::Text: {
        if (free_string && table.plain[t] != 0) {
          allowed = true;  // inside a string that takes any text: no need to try it
          break;
        }
        const std::string& bytes = table.bytes[t];
        const auto b0 = static_cast<uint8_t>(bytes[0]);
        if (!first[b0]) break;
        if (bytes.size() > 1) {
          const auto b1 = static_cast<uint8_t>(bytes[1]);
          if ((b0 == ' ' && !after_space[b1]) || (b0 == '\n' && !after_newline[b1])) break;
        }
        allowed = bytes.size() == 1 || prefix.accepts(bytes);
        break;
      }
      case ConstraintTokenTable::Kind::Never:
        break;
    }
    if (!allowed) logits[t] = kMinusInf;
  }
}

// Appends `bytes` to a rolling window of the text and looks for `needles`:
// the index of the one found (the earliest to begin; ties: the first
// listed) and the text after it (the window emptied); until one is found
// nullopt, the window keeping only what could still begin a needle.
struct Found {
  size_t needle = 0;
  std::string after;
};
std::optional<Found> text_after(std::string& window, const std::string& bytes,
                                const std::vector<std::string>& needles) {
  window += bytes;
  size_t best = std::string::npos, which = 0, longest = 0;
  for (size_t i = 0; i < needles.size(); ++i) {
    longest = std::max(longest, needles[i].size());
    const size_t at = window.find(needles[i]);
    if (at < best) best = at, which = i;
  }
  if (best == std::string::npos) {
    if (longest > 0 && window.size() >= longest) window.erase(0, window.size() - (longest - 1));
    return std::nullopt;
  }
  Found found{which, window.substr(best + needles[which].size())};
  window.clear();
  return found;
}

// Whether a text (its leading blanks aside) opens with `opening`: Yes (and
// where the opening starts in `at`), No, or not yet known (the text so
// far is the opening's beginning).
enum class Opens : uint8_t { Yes, No, NotYet };
Opens opens_with(std::string_view text, std::string_view opening, size_t& at) {
  at = text.find_first_not_of(" \t\r\n");
  if (at == std::string_view::npos) return Opens::NotYet;
  const std::string_view rest = text.substr(at);
  const size_t common = std::min(rest.size(), opening.size());
  if (rest.substr(0, common) != opening.substr(0, common)) return Opens::No;
  return rest.size() < opening.size() ? Opens::NotYet : Opens::Yes;
}

}  // namespace

OutputConstraint::OutputConstraint(std::shared_ptr<const ConstraintTokenTable> table, OutputForm form)
    : table_(std::move(table)), form_(std::move(form)), prefix_(start()) {
  TC_CHECK(table_ != nullptr, "OutputConstraint needs a token table");
  TC_CHECK(!lazy() || !form_.gbnf, "OutputConstraint: a grammar cannot be lazy");
  TC_CHECK(!after_reasoning() || (form_.reasoning_open && !form_.gbnf && !form_.gemma4 && !form_.qwen3_coder),
           "OutputConstraint: a form after the reasoning needs the prompt to open it (and no grammar)");
  TC_CHECK(!form_.gemma4 || (form_.tool_call && !form_.trigger.empty()),
           "OutputConstraint: Gemma 4 calls need the grammar and a trigger");
  TC_CHECK(!form_.qwen3_coder || (form_.tool_call && !form_.trigger.empty() && !form_.gemma4),
           "OutputConstraint: Qwen3-Coder calls need the grammar and a trigger");
  if (!form_.trigger.empty()) triggers_.push_back(form_.trigger);
  if (form_.qwen3_coder) {
    for (const auto& name : form_.tool_call->names) {
      triggers_.push_back(std::string(text::Qwen3CoderCallPrefix::kFunction) + name + ">");
    }
  }
  const auto in_vocab = [&](int32_t id) { return id >= 0 && static_cast<size_t>(id) < table_->bytes.size(); };
  TC_CHECK(!mistral() || (form_.tool_call && in_vocab(form_.trigger_token) && in_vocab(form_.args_token)),
           "OutputConstraint: Mistral calls need the grammar and both marker tokens in the vocabulary");
  reset();
}

OutputConstraint::Prefix OutputConstraint::start() const {
  if (form_.tool_call && mistral()) return text::MistralCallPrefix(form_.tool_call.get());
  if (form_.tool_call && form_.gemma4) return text::Gemma4CallPrefix(form_.tool_call.get());
  if (form_.tool_call && form_.qwen3_coder) return text::Qwen3CoderCallPrefix(form_.tool_call.get());
  if (form_.tool_call) return text::ToolCallPrefix(form_.tool_call.get());
  if (form_.gbnf) return text::GbnfPrefix(form_.gbnf.get());
  if (form_.schema) return text::JsonSchemaPrefix(form_.schema.get());
  return text::JsonPrefix();
}

void OutputConstraint::mask(std::span<float> logits) const {
  TC_CHECK(logits.size() == table_->bytes.size(), "OutputConstraint::mask: logits size != n_vocab");
  if (!active_) {
    // Reasoning before the form: anything but the end, which would leave the form unwritten.
    if (!after_reasoning()) return;
    for (size_t t = 0; t < logits.size(); ++t) {
      if (table_->kind[t] == ConstraintTokenTable::Kind::EndOfGeneration) {
        logits[t] = -std::numeric_limits<float>::infinity();
      }
    }
    return;
  }
  if (const auto* grammar = std::get_if<text::GbnfPrefix>(&prefix_)) {
    grammar_mask_.apply(*grammar, *table_, logits);
    return;
  }
  // Mistral's [ARGS] (a control token, which the mask rules out) may end a whole name.
  const auto* call = std::get_if<text::MistralCallPrefix>(&prefix_);
  const auto args = static_cast<size_t>(std::max(form_.args_token, 0));
  const float args_logit = call != nullptr ? logits[args] : 0.0f;
  std::visit(
      [&](const auto& prefix) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(prefix)>, text::GbnfPrefix>) {
          mask_with(prefix, *table_, logits);
        }
      },
      prefix_);
  if (call != nullptr && call->name_complete()) logits[args] = args_logit;
}

bool OutputConstraint::accept_mistral_marker(text::TokenId token) {
  if (!active_ && token == form_.trigger_token) {
    prefix_ = start();
    active_ = true;
    return true;
  }
  auto* call = std::get_if<text::MistralCallPrefix>(&prefix_);
  if (active_ && call != nullptr && token == form_.args_token && call->name_complete()) {
    call->begin_arguments();
    return true;
  }
  return false;
}

void OutputConstraint::accept(text::TokenId token) {
  TC_CHECK(token >= 0 && static_cast<size_t>(token) < table_->bytes.size(),
           "OutputConstraint::accept: bad token id");
  const auto t = static_cast<size_t>(token);
  if (auto* grammar = std::get_if<text::GbnfPrefix>(&prefix_)) {
    if (table_->kind[t] == ConstraintTokenTable::Kind::EndOfGeneration) return;
    grammar->push_token(token, table_->bytes[t], table_->kind[t] == ConstraintTokenTable::Kind::Text);
    return;
  }
  if (mistral() && accept_mistral_marker(token)) return;
  if (table_->kind[t] != ConstraintTokenTable::Kind::Text) return;
  const std::string& bytes = table_->bytes[t];
  if (!active_) {
    if (awaiting_start_) {
      watch_start(bytes);
    } else if (!form_.trigger.empty()) {
      watch_for_trigger(bytes);
    } else if (after_reasoning()) {
      const std::string rest = past_reasoning(bytes);
      if (reasoning_ == Reasoning::Over) begin_form(rest);
    }
    return;
  }
  // A token mask() let through always fits; one it did not (a caller that
  // appends something else) leaves the prefix where the bytes stop fitting.
  std::visit([&](auto& prefix) { prefix.push(bytes); }, prefix_);
  if (lazy() && prefix_complete()) active_ = false;  // free until the next trigger
}

void OutputConstraint::watch_start(const std::string& bytes) {
  // The call's opening text (`{"name": "`, as llama.cpp's trigger for these
  // models) opens the output: held from its first byte (the blanks before
  // it left out: the form allows few). Anything else leaves it free; while
  // the output may still become the opening, nothing is decided.
  opening_text_ += bytes;
  size_t at = 0;
  const Opens opens = opens_with(opening_text_, text::ToolCallPrefix::kHead, at);
  if (opens == Opens::NotYet) return;
  awaiting_start_ = false;
  if (opens == Opens::Yes) begin_form(std::string_view(opening_text_).substr(at));
  opening_text_.clear();
}

std::string OutputConstraint::past_reasoning(const std::string& bytes) {
  const std::string_view kOpen = form_.gemma4 ? "<|channel>thought" : "<think>";
  static const std::vector<std::string> kThinkEnd = {"</think>"}, kGemma4End = {"<channel|>"};
  // Qwen3-Coder's thinking templates: a <tool_call> ends the reasoning too, and is a call.
  static const std::vector<std::string> kQwen3CoderEnds = {"</think>", "<tool_call>"};
  const auto& ends = form_.gemma4 ? kGemma4End : form_.qwen3_coder ? kQwen3CoderEnds : kThinkEnd;
  if (reasoning_ == Reasoning::Undecided) {
    // Reasoning opens the output (after blanks) or not at all.
    reasoning_text_ += bytes;
    size_t at = 0;
    const Opens opens = opens_with(reasoning_text_, kOpen, at);
    if (opens == Opens::NotYet) return {};
    if (opens == Opens::No) {
      reasoning_ = Reasoning::Over;
      return std::exchange(reasoning_text_, {});
    }
    reasoning_ = Reasoning::Inside;
    const std::string inside = reasoning_text_.substr(at + kOpen.size());
    reasoning_text_.clear();
    return past_reasoning(inside);
  }
  auto found = text_after(reasoning_text_, bytes, ends);
  if (!found) return {};
  reasoning_ = Reasoning::Over;
  return found->needle == 1 ? kQwen3CoderEnds[1] + found->after : std::move(found->after);
}

void OutputConstraint::watch_for_trigger(std::string bytes) {
  if (reasoning_ != Reasoning::Over) {
    bytes = past_reasoning(bytes);
    if (reasoning_ != Reasoning::Over) return;
  }
  // The form holds from right after the trigger, the rest of this token
  // included (from the '<' of a Qwen3-Coder "<function=NAME>").
  auto found = text_after(recent_, bytes, triggers_);
  if (!found) return;
  if (found->needle == 0) return begin_form(found->after);
  begin_form(triggers_[found->needle] + found->after);
}

void OutputConstraint::begin_form(std::string_view rest) {
  // A token that runs on past the trigger into something the form does not
  // allow leaves this call free; past the reasoning, the form holds from
  // the next token.
  prefix_ = start();
  const bool fits = std::visit([&](auto& prefix) { return prefix.push(rest); }, prefix_);
  if (!fits) prefix_ = start();
  active_ = after_reasoning() || (fits && !prefix_complete());
}

bool OutputConstraint::prefix_complete() const {
  return std::visit([](const auto& prefix) { return prefix.complete(); }, prefix_);
}

bool OutputConstraint::complete() const { return !lazy() && prefix_complete(); }

void OutputConstraint::reset() {
  prefix_ = start();
  active_ = !lazy() && !after_reasoning();
  awaiting_start_ = form_.at_start;
  opening_text_.clear();
  recent_.clear();
  reasoning_ = !form_.skip_reasoning ? Reasoning::Over
               : form_.reasoning_open ? Reasoning::Inside
                                      : Reasoning::Undecided;
  reasoning_text_.clear();
}

}  // namespace tc::runtime
