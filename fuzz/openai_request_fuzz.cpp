// libFuzzer target for what a client controls on /v1/completions,
// /v1/chat/completions and the embedding routes before any token is
// generated: the body bytes go through parse_json_body (as the routes call
// it), then parse_completion_request, parse_chat_request, the llama.cpp,
// Ollama generate, Responses API and Messages API translations
// (llamacpp_schema.h, ollama_schema.h, responses_schema.h,
// anthropic_schema.h) and the three embedding parsers
// (embedding_schema.h); a chat request that
// parses is rendered by the bundled chat templates of the common model
// families (tests/data/chat_templates/templates) with the server's own
// variables (chat_prompt_variables). An ApiError or a ChatTemplateError is
// an expected outcome; any other exception, a sanitizer report or a broken
// invariant below is a bug. Tokenization is left out: it needs a model.
// The same bytes, read as a model's reply, go through the reasoning split
// (reasoning_split.h), the harmony parser (harmony_split.h), the Gemma 4
// parser (gemma4_split.h) and the Qwen3-Coder parser (qwen3_coder_split.h)
// whole and cut into pieces, which must agree. A chat request with images
// must be seen as one by chat_body_has_images.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/chat_template.h"
#include "server/anthropic_schema.h"
#include "server/chat_prompt_variables.h"
#include "server/embedding_schema.h"
#include "server/gemma4_split.h"
#include "server/harmony_split.h"
#include "server/qwen3_coder_split.h"
#include "server/llamacpp_schema.h"
#include "server/ollama_schema.h"
#include "server/openai_schema.h"
#include "server/reasoning_split.h"
#include "server/request_body.h"
#include "server/responses_schema.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "openai_request_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// The templates, parsed once (THERMOCLINE_CHAT_TEMPLATE_DIR: set by fuzz/CMakeLists.txt).
std::vector<tc::text::ChatTemplate> load_templates() {
  std::vector<tc::text::ChatTemplate> out;
  for (const auto& entry : std::filesystem::directory_iterator(THERMOCLINE_CHAT_TEMPLATE_DIR)) {
    if (entry.path().extension() != ".jinja") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    out.emplace_back(text.str());
  }
  require(!out.empty(), "the bundled chat templates were found");
  return out;
}

const std::vector<tc::text::ChatTemplate>& templates() {
  static const std::vector<tc::text::ChatTemplate> all = load_templates();
  return all;
}

template <class T>
void check_parsed(const tc::server::Parsed<T>& p) {
  require(p.request.has_value() != p.error.has_value(), "exactly one of request / error");
  if (p.error) {
    require(p.error->status >= 400 && p.error->status < 500, "a parse error is a 4xx");
    require(!p.error->message.empty(), "an error has a message");
  }
}

void check_embedding(const tc::server::EmbeddingParse& p, bool openai) {
  require(p.request.has_value() != p.error.has_value(), "embeddings: exactly one of request / error");
  if (p.error) {
    require(p.error->status == 400 && !p.error->message.empty(), "embeddings: a 400 with a message");
    return;
  }
  require(p.request->inputs.size() <= tc::server::kMaxEmbeddingInputs, "embeddings: inputs within the limit");
  require(!openai || !p.request->inputs.empty(), "embeddings: OpenAI's input is required");
  for (const auto& input : p.request->inputs) {
    const auto* text = std::get_if<std::string>(&input);
    require(text ? !text->empty() : !std::get<std::vector<int32_t>>(input).empty(), "embeddings: no empty input");
  }
  require(!p.request->dimensions || *p.request->dimensions >= 1, "embeddings: dimensions >= 1");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  templates();
  return 0;
}

// The reply split whole, and streamed in pieces whose lengths come from
// its own bytes, must give the same reasoning and content.
void check_reasoning_split(std::string_view reply) {
  for (const bool opened : {false, true}) {
    const auto whole = tc::server::split_reasoning(reply, opened);
    tc::server::ReasoningStream stream(opened);
    tc::server::ReasoningParts pieces;
    for (size_t at = 0, i = 0; at < reply.size(); ++i) {
      const size_t n = 1 + static_cast<unsigned char>(reply[i % reply.size()]) % 9;
      const auto p = stream.push(reply.substr(at, n));
      pieces.reasoning += p.reasoning;
      pieces.content += p.content;
      at += n;
    }
    const auto rest = stream.finish();
    pieces.reasoning += rest.reasoning;
    pieces.content += rest.content;
    require(pieces.reasoning == whole.reasoning && pieces.content == whole.content,
            "the streamed reasoning split equals the whole one");
    require(whole.reasoning.size() + whole.content.size() <= reply.size(), "the split adds nothing");
  }
}

// A reply streamed in pieces whose lengths come from its own bytes: its
// reasoning, content and calls, joined.
template <class Parts, class Stream>
Parts stream_in_pieces(Stream& stream, std::string_view reply) {
  Parts pieces;
  const auto add = [&pieces](Parts p) {
    pieces.reasoning += p.reasoning;
    pieces.content += p.content;
    pieces.calls.insert(pieces.calls.end(), p.calls.begin(), p.calls.end());
  };
  for (size_t at = 0, i = 0; at < reply.size(); ++i) {
    const size_t n = 1 + static_cast<unsigned char>(reply[i % reply.size()]) % 9;
    add(stream.push(reply.substr(at, n)));
    at += n;
  }
  add(stream.finish());
  return pieces;
}

// The streamed split equals the whole one (`equal`), which adds nothing
// (`adds_nothing`), leaves no reasoning when not split and no calls without tools.
template <class Parts>
void check_streamed_split(const Parts& pieces, const Parts& whole, std::string_view reply, bool split, bool tools,
                          const char* equal, const char* adds_nothing) {
  bool same_calls = pieces.calls.size() == whole.calls.size();
  for (size_t k = 0; same_calls && k < whole.calls.size(); ++k) {
    same_calls = pieces.calls[k].name == whole.calls[k].name && pieces.calls[k].arguments == whole.calls[k].arguments;
  }
  require(pieces.reasoning == whole.reasoning && pieces.content == whole.content && same_calls, equal);
  require(whole.reasoning.size() + whole.content.size() <= reply.size(), adds_nothing);
  require(split || whole.reasoning.empty(), "reasoning_format none leaves no reasoning");
  require(tools || whole.calls.empty(), "no calls without tools");
}

// The same for a harmony reply (gpt-oss), from each prompt tail, with the
// reasoning split off or left in the content, with and without tools: the
// calls too must agree, and no reply byte lands in two places.
void check_harmony_split(std::string_view reply) {
  const std::vector<std::string> names = {"f", "get_weather"};
  for (const char* tail : {"<|start|>assistant", "", "<|start|>assistant<|channel|>analysis<|message|>"}) {
    for (const bool split : {true, false}) {
      for (const bool tools : {true, false}) {
        const std::vector<std::string>& declared = tools ? names : std::vector<std::string>();
        const auto whole = tc::server::split_harmony(reply, tail, split, declared);
        tc::server::HarmonyStream stream(tail, split, declared);
        const auto pieces = stream_in_pieces<tc::server::HarmonyParts>(stream, reply);
        check_streamed_split(pieces, whole, reply, split, tools, "the streamed harmony split equals the whole one",
                             "the harmony split adds nothing");
      }
    }
  }
}

// The same for a Gemma 4 reply, the prompt's thought open or not.
void check_gemma4_split(std::string_view reply) {
  const std::vector<std::string> names = {"f", "get_weather"};
  for (const bool opens : {false, true}) {
    for (const bool split : {true, false}) {
      for (const bool tools : {true, false}) {
        const std::vector<std::string>& declared = tools ? names : std::vector<std::string>();
        const auto whole = tc::server::split_gemma4(reply, opens, split, declared);
        tc::server::Gemma4Stream stream(opens, split, declared);
        const auto pieces = stream_in_pieces<tc::server::Gemma4Parts>(stream, reply);
        check_streamed_split(pieces, whole, reply, split, tools, "the streamed Gemma 4 split equals the whole one",
                             "the Gemma 4 split adds nothing");
      }
    }
  }
}

// The same for a Qwen3-Coder reply, the prompt's <think> open or not: no
// reply byte lands in two places, calls only with tools, and each call's
// arguments an object.
void check_qwen3_coder_split(std::string_view reply) {
  const tc::server::Qwen3CoderTools tools = {{"f", "get_weather"}, {{}, {"location"}}};
  for (const bool opens : {false, true}) {
    for (const bool split : {true, false}) {
      for (const bool with_tools : {true, false}) {
        const tc::server::Qwen3CoderTools& declared = with_tools ? tools : tc::server::Qwen3CoderTools();
        const auto whole = tc::server::split_qwen3_coder(reply, opens, split, declared);
        tc::server::Qwen3CoderStream stream(opens, split, declared);
        const auto pieces = stream_in_pieces<tc::server::Qwen3CoderParts>(stream, reply);
        check_streamed_split(pieces, whole, reply, split, with_tools,
                             "the streamed Qwen3-Coder split equals the whole one",
                             "the Qwen3-Coder split adds nothing");
        for (const auto& call : whole.calls) {
          require(nlohmann::json::parse(call.arguments, nullptr, false).is_object(), "arguments are an object");
        }
      }
    }
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_reasoning_split({reinterpret_cast<const char*>(data), size});
  check_harmony_split({reinterpret_cast<const char*>(data), size});
  check_gemma4_split({reinterpret_cast<const char*>(data), size});
  check_qwen3_coder_split({reinterpret_cast<const char*>(data), size});
  const auto parsed = tc::server::parse_json_body({reinterpret_cast<const char*>(data), size}, 1 << 20);
  if (parsed.error) return 0;  // the routes answer 413 or 400 before any of the below
  const nlohmann::json& body = parsed.json;
  tc::server::RequestLimits limits;
  limits.n_vocab = 32000;
  check_parsed(tc::server::parse_completion_request(body, limits));
  // llama.cpp's /completion and /infill and Ollama's /api/generate: a 400
  // or a body the completion parser then judges.
  for (const auto& translated :
       {tc::server::translate_llamacpp_completion(body), tc::server::translate_llamacpp_infill(body)}) {
    if (translated.error) {
      require(translated.error->status == 400 && !translated.error->message.empty(), "llama.cpp: a 400 with a message");
    } else {
      check_parsed(tc::server::parse_completion_request(translated.openai, limits));
    }
  }
  const auto ollama = tc::server::translate_ollama_generate(body);
  if (!ollama.error && ollama.completion) check_parsed(tc::server::parse_completion_request(ollama.openai, limits));
  // OpenAI's Responses API: a 400, or a chat body the chat parser then judges.
  const auto ordered = nlohmann::ordered_json::parse(std::string_view(reinterpret_cast<const char*>(data), size),
                                                     nullptr, /*allow_exceptions=*/false);
  const auto responses = tc::server::translate_responses_request(ordered);
  if (responses.error) {
    require(responses.error->status == 400 && !responses.error->message.empty(), "responses: a 400 with a message");
  } else {
    check_parsed(tc::server::parse_chat_request(nlohmann::json::parse(responses.chat.dump()), limits));
  }
  // Anthropic's Messages API: the same.
  const auto messages = tc::server::translate_anthropic_request(ordered);
  if (messages.error) {
    require(messages.error->status == 400 && !messages.error->message.empty(), "messages: a 400 with a message");
  } else {
    check_parsed(tc::server::parse_chat_request(nlohmann::json::parse(messages.chat.dump()), limits));
  }
  check_embedding(tc::server::parse_openai_embedding(body), true);
  check_embedding(tc::server::parse_ollama_embed(body), false);
  check_embedding(tc::server::parse_ollama_embeddings(body), false);
  const auto chat = tc::server::parse_chat_request(body, limits);
  check_parsed(chat);
  if (!chat.request) return 0;
  // A stream with images plans on its own thread (generation_job.cpp): the
  // routes' look for image parts must see every image the parser reads.
  require(chat.request->images.empty() || tc::server::chat_body_has_images(body),
          "chat_body_has_images sees the parsed images");
  size_t sink = 0;
  for (const auto& t : templates()) {
    const nlohmann::json vars = tc::server::chat_prompt_variables(
        *chat.request, "<s>", "</s>", tc::server::TemplateToolSupport::of(t.source()));
    try {
      sink += t.render(vars).size();
    } catch (const tc::text::ChatTemplateError& e) {
      require(e.what()[0] != '\0', "a template error has a message");
    }
  }
  volatile size_t keep = sink;
  (void)keep;
  return 0;
}
