// `thermocline generate -m FILE -p TEXT -n N [sampling flags, --samplers
// ORDER] [--json | --json-schema FILE | --grammar-file FILE]`: streams the continuation to stdout, then prompt and
// decode speed to stderr.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/model_setup.h"
#include "cli/runners.h"
#include "engine/model/context_shift.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/runtime/generation.h"
#include "engine/text/gbnf_grammar.h"
#include "engine/text/json_schema.h"
#include "kernels/backend.h"

namespace tc::cli {
namespace {

// The JSON Schema in `path`, compiled (properties in the file's order); an
// error naming the file and what is wrong.
std::shared_ptr<const text::JsonSchema> read_schema_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::invalid_argument(path + ": cannot read the file");
  const auto schema = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) throw std::invalid_argument(path + ": not JSON");
  try {
    return text::JsonSchema::compile(schema);
  } catch (const text::SchemaError& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

// The GBNF grammar in `path`, parsed for `tokenizer`'s tokens; an error
// naming the file, the line and what is wrong.
std::shared_ptr<const text::GbnfGrammar> read_grammar_file(const std::string& path, const text::Tokenizer& tokenizer) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw std::invalid_argument(path + ": cannot read the file");
  try {
    return text::GbnfGrammar::parse(text.str(), text::gbnf_token_lookup(tokenizer));
  } catch (const text::GbnfError& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
}

}  // namespace

void register_generate(CLI::App& app) {
  struct Options {
    std::string model;
    std::string prompt;
    int threads = 0;
    ModelCliOptions sparsity;
    int64_t n_ctx = 0;
    runtime::GenerateOptions gen;
    bool json = false;
    std::string json_schema;
    std::string grammar_file;
    std::string samplers;      // llama.cpp's --samplers: names separated by ';'
    std::string sampling_seq;  // llama.cpp's --sampling-seq: one character each
  };
  auto o = std::make_shared<Options>();
  auto* sub = app.add_subcommand("generate", "Generate text from a prompt on the CPU");
  sub->add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  sub->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
  sub->add_option("-n,--n-predict", o->gen.n_predict, "Tokens to generate")->check(CLI::Range(0, 1 << 20));
  sub->add_option("-t,--threads", o->threads, "CPU threads (default: physical cores)")->check(CLI::Range(0, 1024));
  add_model_options(sub, o->sparsity);
  sub->add_option("-c,--ctx-size", o->n_ctx, "Context size (default: prompt + n-predict, at most the model's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  sub->add_option("-b,--batch-size", o->gen.n_batch, "Prompt tokens per prefill step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  auto& s = o->gen.sampling;
  sub->add_option("--temp", s.temperature, "Temperature (0: greedy)");
  sub->add_option("--top-k", s.top_k, "Top-k (0: off)");
  sub->add_option("--top-p", s.top_p, "Top-p (1: off)");
  sub->add_option("--min-p", s.min_p, "Min-p (0: off)");
  sub->add_option("--top-nsigma", s.top_n_sigma, "Top-n-sigma: keep logits within n sd of the largest (<= 0: off)");
  sub->add_option("--dynatemp-range", s.dynatemp_range, "Dynamic temperature: temperature +- this by entropy (0: off)");
  sub->add_option("--dynatemp-exp", s.dynatemp_exponent, "Dynamic temperature: the entropy's exponent");
  sub->add_option("--typical", s.typical_p, "Locally typical sampling, p (1: off)");
  sub->add_option("--mirostat", s.mirostat, "Mirostat 1 or 2 (0: off): replaces top-k, typical, top-p, min-p and XTC");
  sub->add_option("--mirostat-ent", s.mirostat_tau, "Mirostat: the target surprise per token, tau (bits)");
  sub->add_option("--mirostat-lr", s.mirostat_eta, "Mirostat: the learning rate, eta");
  sub->add_option("--xtc-probability", s.xtc_probability, "XTC: chance per token of dropping the top choices (0: off)");
  sub->add_option("--xtc-threshold", s.xtc_threshold, "XTC: the probability a top choice must reach to be dropped");
  sub->add_option("--dry-multiplier", s.dry_multiplier, "DRY: penalty of a token continuing a repetition (0: off)");
  sub->add_option("--dry-base", s.dry_base, "DRY: growth of the penalty per repeated token beyond the allowed length");
  sub->add_option("--dry-allowed-length", s.dry_allowed_length, "DRY: repetitions up to this length are free");
  sub->add_option("--dry-penalty-last-n", s.dry_penalty_last_n, "DRY: tokens looked back over (-1: all)");
  sub->add_option("--dry-sequence-breaker", s.dry_sequence_breakers,
                  "DRY: a text no repetition spans, taken as is (bash: $'\\n' for a newline); repeat the option for "
                  "more; replaces the defaults (newline, colon, double quote, asterisk)");
  sub->add_option("--repeat-penalty", s.repeat_penalty, "Repetition penalty (1: off)");
  sub->add_option("--repeat-last-n", s.repeat_last_n, "Repetition penalty window");
  sub->add_option("--presence-penalty", s.presence_penalty, "Presence penalty");
  sub->add_option("--frequency-penalty", s.frequency_penalty, "Frequency penalty");
  sub->add_option("-s,--seed", s.seed, "Sampling seed");
  auto* samplers =
      sub->add_option("--samplers", o->samplers,
                      "The stages in order, names separated by ';' (llama.cpp's: penalties;dry;top_n_sigma;top_k;"
                      "typ_p;top_p;min_p;xtc;temperature, the default); one left out is off");
  sub->add_option("--sampling-seq", o->sampling_seq, "The same as --samplers, one character each (default edskypmxt)")
      ->excludes(samplers);
  sub->add_flag("--ignore-eos", [o](int64_t) { o->gen.stop_at_eos = false; }, "Keep generating after EOS");
  sub->add_flag("--context-shift", o->gen.context_shift,
                "When the context is full, drop the oldest half of it (after --keep) and go on");
  sub->add_option("--keep", o->gen.n_keep, "Context shift: the first tokens that always stay (at most half the context)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  sub->add_option("--lookup-draft", o->gen.lookup_draft.n_max,
                  "Speculative decoding without a draft model: each step also runs up to N tokens that followed the "
                  "text's latest 3-5 tokens earlier on, keeping those sampling draws (the same text, fewer steps "
                  "where it repeats itself); 0: off")
      ->check(CLI::Range(0, 256));
  auto* json = sub->add_flag("--json", o->json, "Constrain the continuation to one JSON object (stops when it closes)");
  sub->add_option("--json-schema", o->json_schema,
                  "Constrain the continuation to an instance of the JSON Schema in this file (docs/api.md says "
                  "which keywords are enforced)")
      ->check(CLI::ExistingFile)
      ->excludes(json);
  sub->add_option("--grammar-file", o->grammar_file,
                  "Constrain the continuation to a text the GBNF grammar in this file generates (llama.cpp's format)")
      ->check(CLI::ExistingFile)
      ->excludes(json)
      ->excludes("--json-schema");
  runners()["generate"] = [o] {
    const int64_t prompt_estimate = static_cast<int64_t>(o->prompt.size()) + 2;
    const auto shape_of = [o, prompt_estimate](const model::ModelSpec& spec) {
      const int64_t n_ctx =
          o->n_ctx > 0 ? o->n_ctx : std::min(spec.n_ctx_train, prompt_estimate + o->gen.n_predict);
      return sparse::PlacementShape{.n_ctx = n_ctx, .n_parallel = 1, .n_batch = std::min(o->gen.n_batch, n_ctx)};
    };
    runtime::RunnableModel m = open_cli_model(o->model, o->threads, o->sparsity, shape_of);
    const auto& loaded = m.loaded;
    const auto& backend = m.backend;
    model::LlamaModel& llama = *m.llama;
    if (const std::string err = runtime::validate(o->gen.sampling, static_cast<int32_t>(loaded->spec.n_vocab));
        !err.empty()) {
      throw std::invalid_argument(err);
    }
    if (o->gen.context_shift) {
      if (const std::string why = model::context_shift_refusal(loaded->spec); !why.empty()) {
        throw std::invalid_argument("--context-shift: " + why);
      }
    }
    if (!o->samplers.empty() || !o->sampling_seq.empty()) {
      std::vector<std::string> names;
      for (size_t at = 0; at <= o->samplers.size();) {
        const size_t end = std::min(o->samplers.find(';', at), o->samplers.size());
        names.push_back(o->samplers.substr(at, end - at));
        at = end + 1;
      }
      const std::vector<std::string_view> views(names.begin(), names.end());
      runtime::use_sampler_list(o->samplers.empty() ? runtime::sampler_list_from_chars(o->sampling_seq)
                                                    : runtime::sampler_list_from_names(views),
                                o->gen.sampling);
    }
    if (o->json) o->gen.output_form = runtime::OutputForm::json_object();
    if (!o->json_schema.empty()) {
      o->gen.output_form = runtime::OutputForm::json_schema(read_schema_file(o->json_schema));
    }
    if (!o->grammar_file.empty()) {
      auto grammar = read_grammar_file(o->grammar_file, *loaded->tokenizer);
      for (uint32_t id : grammar->token_ids()) {
        if (id >= static_cast<uint32_t>(loaded->spec.n_vocab)) {
          throw std::invalid_argument(o->grammar_file + ": token <[" + std::to_string(id) + "]> is out of range");
        }
      }
      o->gen.output_form = runtime::OutputForm::grammar(std::move(grammar));
    }
    const int64_t n_ctx = m.shape.n_ctx;
    runtime::KvCache kv = m.make_kv_cache();
    std::fprintf(stderr, "model %s, %s, context %lld, KV cache %s\n", o->model.c_str(), backend->name().c_str(),
                 static_cast<long long>(n_ctx), kv.describe().c_str());
    std::cout << o->prompt << std::flush;
    const auto stats = runtime::generate(llama, kv, *loaded->tokenizer, o->prompt, o->gen,
                                         [](std::string_view piece) { std::cout << piece << std::flush; });
    std::cout << "\n";
    std::fprintf(stderr, "prompt: %lld tokens, %.2f tokens/s | decode: %lld tokens, %.2f tokens/s | stop: %s\n",
                 static_cast<long long>(stats.n_prompt), stats.prompt_tokens_per_second(),
                 static_cast<long long>(stats.n_generated), stats.decode_tokens_per_second(),
                 std::string(runtime::stop_reason_name(stats.stop)).c_str());
    if (stats.n_drafted > 0) {
      std::fprintf(stderr, "lookup drafts: %lld tokens drafted, %lld kept\n", static_cast<long long>(stats.n_drafted),
                   static_cast<long long>(stats.n_draft_kept));
    }
    if (stats.n_context_shifts > 0) {
      std::fprintf(stderr, "context shifts: %lld\n", static_cast<long long>(stats.n_context_shifts));
    } else if (stats.stop == runtime::StopReason::ContextFull && !o->gen.context_shift) {
      std::fprintf(stderr, "the context of %lld tokens is full: a larger -c, or --context-shift to go on past it\n",
                   static_cast<long long>(n_ctx));
    }
    return 0;
  };
}

}  // namespace tc::cli
