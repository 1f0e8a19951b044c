// Chat template rendering, tokenization, max_tokens and the context check
// (see prompt_builder.h).
#include "server/prompt_builder.h"

#include <chrono>
#include <mutex>

#include "engine/text/gbnf_grammar.h"
#include "server/chat_prompt_variables.h"
#include "server/gemma4_split.h"
#include "server/harmony_split.h"
#include "server/prompt_images.h"
#include "server/qwen3_coder_split.h"
#include "server/reasoning_split.h"

namespace tc::server {
namespace {

// A fresh seed for requests that send none (thread-safe).
uint64_t random_seed() {
  static std::mutex mutex;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock(mutex);
  return rng();
}

ApiError context_exceeded(std::string message) {
  return {400, "invalid_request_error", std::move(message), "context_length_exceeded", "messages"};
}

// The request's GBNF grammar compiled for the model's vocabulary, or
// plan.error set.
std::shared_ptr<const text::GbnfGrammar> compile_grammar(Plan& plan, const CommonRequest& common,
                                                        const ServingModel& serving) {
  if (common.grammar.empty()) return nullptr;
  try {
    auto grammar = text::GbnfGrammar::parse(common.grammar, text::gbnf_token_lookup(*serving.model->tokenizer));
    const auto n_vocab = static_cast<uint32_t>(serving.model->spec.n_vocab);
    for (uint32_t id : grammar->token_ids()) {
      if (id >= n_vocab) {
        plan.error = invalid_request("'grammar' names token <[" + std::to_string(id) + "]>; this model's ids are 0.." +
                                         std::to_string(n_vocab - 1),
                                     "grammar");
        return nullptr;
      }
    }
    return grammar;
  } catch (const text::GbnfError& e) {
    plan.error = invalid_request("'grammar' is not a valid GBNF grammar: " + std::string(e.what()), "grammar");
    return nullptr;
  }
}

// Fills `plan` with n choices for one tokenized prompt, or sets plan.error.
void add_choices(Plan& plan, std::vector<text::TokenId> prompt, std::string echo_text, int prompt_group,
                 const CommonRequest& common, int64_t default_max_tokens, const ServingModel& serving,
                 const config::ServeOptions& options) {
  const int64_t n_ctx = serving.engine->n_ctx();
  const auto n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) {
    plan.error = invalid_request("the prompt is empty", "prompt");
    return;
  }
  int64_t max_tokens = common.max_tokens.value_or(default_max_tokens);
  if (!common.max_tokens) {
    // Defaults shrink to what is left of the context (shifting: to one
    // context's length); explicit values never do.
    max_tokens = std::min(max_tokens, common.context_shift ? n_ctx : n_ctx - n_prompt);
    if (options.max_tokens_cap > 0) max_tokens = std::min(max_tokens, options.max_tokens_cap);
  }
  if (n_prompt >= n_ctx) {
    // The prompt alone fills the context (a default max_tokens would be <= 0 here).
    plan.error = context_exceeded("this model's context is " + std::to_string(n_ctx) + " tokens; the prompt has " +
                                  std::to_string(n_prompt) + " tokens, leaving no room to generate; shorten the prompt");
    return;
  }
  if (!common.context_shift && n_prompt + max_tokens > n_ctx) {
    plan.error = context_exceeded("this model's context is " + std::to_string(n_ctx) + " tokens; the prompt has " +
                                  std::to_string(n_prompt) + " tokens and " + std::to_string(max_tokens) +
                                  " more were asked for (max_tokens); shorten the prompt or lower max_tokens");
    return;
  }
  std::optional<runtime::Clock::time_point> deadline;
  if (options.request_timeout_s > 0) {
    deadline = runtime::Clock::now() + std::chrono::duration_cast<runtime::Clock::duration>(
                                           std::chrono::duration<double>(options.request_timeout_s));
  }
  if (!common.grammar.empty() && !plan.grammar) {
    plan.grammar = compile_grammar(plan, common, serving);
    if (plan.error) return;
  }
  for (int i = 0; i < common.n; ++i) {
    PlannedChoice c;
    c.request.prompt = prompt;
    c.request.max_tokens = static_cast<int32_t>(max_tokens);
    c.request.sampling = common.sampling;
    // Choices of one request differ; a seeded request stays reproducible.
    c.request.sampling.seed = common.has_seed ? common.sampling.seed + static_cast<uint64_t>(i) : random_seed();
    c.request.stop = common.stop;
    c.request.ignore_eos = common.ignore_eos;
    c.request.context_shift = common.context_shift;
    c.request.n_keep = common.n_keep < 0 ? static_cast<int32_t>(n_prompt) : common.n_keep;
    c.request.draft_max = common.draft_max;
    c.request.json_object = common.json_object;
    c.request.json_schema = common.schema;
    c.request.grammar = plan.grammar;
    c.request.return_tokens = common.logprobs;
    c.request.deadline = deadline;
    c.echo_text = echo_text;
    c.prompt_group = prompt_group;
    plan.choices.push_back(std::move(c));
  }
}

int64_t max_tokens_limit(const ServingModel& serving, const config::ServeOptions& options) {
  return options.max_tokens_cap > 0 ? options.max_tokens_cap : serving.engine->n_ctx();
}

}  // namespace

int64_t fim_prompt_room(const CommonRequest& common, int64_t default_max_tokens, const ServingModel& serving) {
  const int64_t n_ctx = serving.engine->n_ctx();
  int64_t reply = common.max_tokens.value_or(default_max_tokens);
  // A reply whose length the request leaves open (or that may shift the
  // context) keeps at most half the context from the code.
  if (!common.max_tokens || common.context_shift) reply = std::min(reply, n_ctx / 2);
  return std::max<int64_t>(0, n_ctx - reply);
}

std::string render_chat_prompt(const ChatRequest& request, const ServingModel& serving) {
  const auto& tokenizer = *serving.model->tokenizer;
  const auto& vocab = tokenizer.vocab();
  const TemplateToolSupport support = TemplateToolSupport::of(serving.chat_template->source());
  std::string prompt = serving.chat_template->render(
      chat_prompt_variables(request, vocab.bos_id >= 0 ? tokenizer.token_to_piece(vocab.bos_id, true) : "",
                            vocab.eos_id >= 0 ? tokenizer.token_to_piece(vocab.eos_id, true) : "", support));
  if (support.gemma4 && request.add_generation_prompt && prompt.ends_with("<turn|>\n")) prompt += kGemma4TurnModel;
  return prompt;
}

ChatTokens tokenize_chat(const ChatRequest& request, const ServingModel& serving, bool image_rows) {
  ChatTokens out;
  if (!serving.chat_template) {
    out.error = invalid_request(serving.chat_template_error, "messages");
    return out;
  }
  std::string prompt_text;
  try {
    prompt_text = render_chat_prompt(request, serving);
  } catch (const text::ChatTemplateError& e) {
    out.error = invalid_request(e.what(), "messages");
    return out;
  }
  const auto& tokenizer = *serving.model->tokenizer;
  const auto& vocab = tokenizer.vocab();
  // Templates that write the BOS text themselves must not get a second one.
  const std::string bos_text = vocab.bos_id >= 0 ? tokenizer.token_to_piece(vocab.bos_id, true) : "";
  text::EncodeOptions encode;
  encode.parse_special = true;
  encode.add_special = bos_text.empty() || prompt_text.compare(0, bos_text.size(), bos_text) != 0;
  auto laid_out = tokenize_with_images(prompt_text, request.images, serving, encode, image_rows);
  if (laid_out.error) {
    out.error = std::move(laid_out.error);
    return out;
  }
  out.ids = std::move(laid_out.ids);
  out.images = std::move(laid_out.images);
  out.opens_reasoning = is_gemma4_template(serving.chat_template->source()) ? prompt_opens_gemma4_thought(prompt_text)
                                                                           : prompt_opens_reasoning(prompt_text);
  if (serving.harmony) out.harmony_prompt_tail = harmony_prompt_tail(prompt_text);
  return out;
}

RequestLimits request_limits(const config::ServeOptions& options, const ServingModel& serving) {
  RequestLimits limits;
  limits.max_tokens_cap = max_tokens_limit(serving, options);
  limits.max_n = options.max_n;
  limits.max_stop = options.max_stop;
  limits.max_stop_bytes = options.max_stop_bytes;
  limits.max_top_logprobs = options.max_top_logprobs;
  limits.n_vocab = static_cast<int32_t>(serving.model->spec.n_vocab);
  limits.context_shift = options.context_shift;
  limits.context_shift_refusal = serving.engine->context_shift_refusal();
  limits.max_tokens_cap_shifting =
      options.max_tokens_cap > 0 ? options.max_tokens_cap : std::numeric_limits<int32_t>::max();
  return limits;
}

Plan plan_chat(const ChatRequest& request, const ServingModel& serving, const config::ServeOptions& options) {
  Plan plan;
  auto tokens = tokenize_chat(request, serving);
  if (tokens.error) {
    plan.error = std::move(tokens.error);
    return plan;
  }
  const std::string& format = request.reasoning_format.empty() ? options.reasoning_format : request.reasoning_format;
  plan.split_reasoning = format != "none";
  plan.opens_reasoning = tokens.opens_reasoning;
  // A forced call is sampled as the call's JSON (tool_call_prefix.h), not as harmony.
  plan.harmony = serving.harmony && !request.tools.forced();
  plan.harmony_prompt_tail = std::move(tokens.harmony_prompt_tail);
  const bool gemma4 = !plan.harmony && is_gemma4_template(serving.chat_template->source());
  plan.gemma4 = gemma4 && !request.tools.forced();
  const bool qwen3_coder = !plan.harmony && !gemma4 && is_qwen3_coder_template(serving.chat_template->source());
  plan.qwen3_coder = qwen3_coder && !request.tools.forced();
  // A reply held to a form (JSON, a schema, a forced call) after a prompt
  // that opened the reasoning (R1 and its distills, Qwen 3.5 thinking):
  // the model reasons first, free up to its </think>, and the form holds
  // the answer after it, as llama.cpp's parser reads such replies. Without
  // the split, with a grammar, or in Gemma 4's thought (closed otherwise),
  // the form holds from the first token and none of the reply is reasoning.
  const auto& common = request.common;
  const bool held = common.json_object || common.schema || request.tools.forced();
  const bool reasons_first = plan.opens_reasoning && plan.split_reasoning && held && common.grammar.empty() &&
                             !plan.harmony && !gemma4;
  if (plan.opens_reasoning && !plan.harmony && (held || !common.grammar.empty()) && !reasons_first) {
    plan.opens_reasoning = false;
  }
  add_choices(plan, std::move(tokens.ids), "", 0, common, max_tokens_limit(serving, options), serving, options);
  for (auto& choice : plan.choices) {
    choice.request.images = tokens.images;
    choice.request.reasoning_before_form = reasons_first;
    if (plan.gemma4) choice.request.rendered_tokens = serving.gemma4_marker_ids;
  }
  if (!request.tools.active()) return plan;
  // The calls' grammar, shared by the choices.
  const auto grammar = request.tools.grammar
                           ? request.tools.grammar
                           : std::make_shared<const text::ToolCallGrammar>(request.tools.forced_names());
  if (request.tools.forced()) {
    for (auto& choice : plan.choices) choice.request.tool_call = grammar;
  } else if (!plan.harmony) {
    // The model may call tools: its own calls, once it opens one, are held
    // to a declared function with arguments that fit its parameters (a
    // lazy form), unless the reply has another form to keep.
    const LazyToolCall lazy = lazy_tool_call(serving.chat_template->source());
    // Mistral's markers: control tokens of the vocabulary (ServingModel::tool_marker_ids).
    text::TokenId calls_token = -1, args_token = -1;
    if (lazy.mistral) {
      const auto& pieces = serving.model->tokenizer->vocab().tokens;
      for (const int32_t id : serving.tool_marker_ids) {
        if (pieces[static_cast<size_t>(id)] == "[TOOL_CALLS]") calls_token = id;
        if (pieces[static_cast<size_t>(id)] == "[ARGS]") args_token = id;
      }
    }
    const bool mistral = calls_token >= 0 && args_token >= 0;
    for (auto& choice : plan.choices) {
      auto& r = choice.request;
      if (!(lazy.any() || mistral) || r.json_object || r.json_schema || r.grammar) continue;
      r.tool_call = grammar;
      r.tool_call_trigger = lazy.trigger;
      r.tool_call_at_start = lazy.at_start;
      // A thinking model's calls come after its reasoning (llama.cpp
      // triggers after </think> too): "<tool_call>" inside it is thought.
      r.tool_call_skip_reasoning = true;
      r.tool_call_reasoning_open = plan.opens_reasoning;
      r.tool_call_gemma4 = lazy.gemma4;
      r.tool_call_qwen3_coder = lazy.qwen3_coder;
      if (mistral) r.tool_call_trigger_token = calls_token, r.tool_call_args_token = args_token;
    }
  }
  return plan;
}

LazyToolCall lazy_tool_call(std::string_view template_source) {
  constexpr std::string_view kHermes = "<tool_call>";
  // Llama 3.1-3.3's templates ask for a reply that is the call.
  constexpr std::string_view kLlama3 = "{\"name\": function name, \"parameters\": dictionary of argument name";
  auto has = [&](std::string_view s) { return template_source.find(s) != std::string_view::npos; };
  if (is_gemma4_template(template_source)) return {std::string(kGemma4CallOpen), false, false, true};
  if (is_qwen3_coder_template(template_source)) return {std::string(kHermes), false, false, false, true};
  // A template that renders no tools gets them from the server, which asks
  // for <tool_call> blocks (chat_prompt_variables.h).
  if (has(kHermes) || !TemplateToolSupport::of(template_source).tools) return {std::string(kHermes), false, false};
  if (has("[TOOL_CALLS]") && has("[ARGS]")) return {"", false, true};
  if (has(kLlama3)) return {"", true, false};
  return {};
}

Plan plan_completion(const CompletionRequest& request, const ServingModel& serving,
                     const config::ServeOptions& options, int64_t default_max_tokens) {
  Plan plan;
  const auto& tokenizer = *serving.model->tokenizer;
  const bool fill_in_middle = !request.suffix.empty();
  if (fill_in_middle) {
    if (std::string why = fim_refusal(tokenizer.vocab()); !why.empty()) {
      plan.error = invalid_request("'suffix' (fill in the middle): " + why, "suffix");
      return plan;
    }
  }
  int group = 0;
  for (const auto& prompt : request.prompts) {
    std::vector<text::TokenId> ids;
    std::vector<model::PromptImage> images;
    std::string echo;
    if (const auto* text = std::get_if<std::string>(&prompt); text && fill_in_middle) {
      FimInput input;
      input.prefix = *text;
      input.suffix = request.suffix;
      ids = build_fim_prompt(tokenizer, input, fim_prompt_room(request.common, default_max_tokens, serving)).ids;
    } else if (fill_in_middle) {
      plan.error = invalid_request("'suffix' needs text prompts, not token ids", "prompt");
      return plan;
    } else if (text) {
      text::EncodeOptions encode;
      encode.parse_special = true;
      auto laid_out = tokenize_with_images(*text, request.images, serving, encode, /*encode=*/true);
      if (laid_out.error) {
        plan.error = std::move(laid_out.error);
        return plan;
      }
      ids = std::move(laid_out.ids);
      images = std::move(laid_out.images);
      if (request.echo) echo = *text;
    } else {
      const auto& tokens = std::get<std::vector<int32_t>>(prompt);
      ids.assign(tokens.begin(), tokens.end());
      if (request.echo) echo = tokenizer.decode(ids);
    }
    const size_t first_choice = plan.choices.size();
    add_choices(plan, std::move(ids), std::move(echo), group++, request.common, default_max_tokens, serving, options);
    if (plan.error) return plan;
    for (size_t c = first_choice; c < plan.choices.size(); ++c) plan.choices[c].request.images = images;
  }
  return plan;
}

Plan plan_infill(const CommonRequest& common, const FimInput& input, const ServingModel& serving,
                 const config::ServeOptions& options, int64_t default_max_tokens, bool& truncated) {
  Plan plan;
  const auto& tokenizer = *serving.model->tokenizer;
  if (std::string why = fim_refusal(tokenizer.vocab()); !why.empty()) {
    plan.error = {501, "not_supported_error", "infill is not supported: " + why, "", ""};
    return plan;
  }
  FimPrompt prompt = build_fim_prompt(tokenizer, input, fim_prompt_room(common, default_max_tokens, serving));
  truncated = prompt.truncated;
  add_choices(plan, std::move(prompt.ids), "", 0, common, default_max_tokens, serving, options);
  return plan;
}

}  // namespace tc::server
