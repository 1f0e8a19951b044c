// Models whose files carry a Qwen3-like or Gemma3-like vocab and that
// family's chat template (make-model --tokenizer qwen2|gemma3
// --chat-template): the server serves the file's template (/props), and a
// chat prompt (/tokenize with messages) is the template rendered with the
// model's BOS/EOS texts and tokenized with special texts parsed: one turn
// control token per turn marker, no second BOS where the template writes it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/text/chat_template.h"
#include "engine/text/tokenizer.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

const char* kSmallModel = "--n-embd 64 --n-layer 1 --n-ff 128 --n-head 2 --n-head-kv 1 --tied-embeddings --seed 5";

std::filesystem::path template_path(const std::string& stem) {
  return tc::test::source_dir() / "tests" / "data" / "chat_templates" / "templates" / (stem + ".jinja");
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

void check_family(const std::string& tokenizer, const std::string& template_stem, const std::string& turn_marker) {
  const auto dir = tc::test::scratch_dir("family_chat_template_" + tokenizer);
  const auto model = tc::test::make_test_model(
      dir, tokenizer, std::string(kSmallModel) + " --tokenizer " + tokenizer + " --chat-template " +
                          tc::test::shell_quote(template_path(template_stem).string()));
  const std::string source = tc::test::read_file(template_path(template_stem));

  // Our own reading of the file, for the expected ids.
  const auto file = tc::gguf::GgufFile::open(model);
  const auto tok = tc::text::Tokenizer::create(tc::text::read_vocab(file));
  const auto& vocab = tok->vocab();
  const std::string bos = tok->token_to_piece(vocab.bos_id, true);
  const std::string eos = tok->token_to_piece(vocab.eos_id, true);
  const auto marker = std::find(vocab.tokens.begin(), vocab.tokens.end(), turn_marker) - vocab.tokens.begin();
  REQUIRE(marker < vocab.n_vocab());
  REQUIRE(vocab.types[static_cast<size_t>(marker)] == tc::text::TokenType::Control);

  tc::test::ServerProcess server(model, {}, dir);
  auto client = server.client();
  const auto props = client.Get("/props");
  REQUIRE(props);
  REQUIRE(props->status == 200);
  const json p = json::parse(props->body);
  CHECK(p["chat_template"] == source);
  CHECK(p["bos_token"] == bos);
  CHECK(p["eos_token"] == eos);

  const json messages = json::parse(R"([
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello!"},
    {"role": "assistant", "content": "Hi there, how can I help?"},
    {"role": "user", "content": "What is 2 + 2? \u65e5\u672c\u8a9e"}
  ])");
  const auto r = tc::test::post_json(client, "/tokenize", {{"messages", messages}, {"add_generation_prompt", true}});
  REQUIRE(r.status == 200);
  const auto got = r.body["tokens"].get<std::vector<tc::text::TokenId>>();

  const std::string prompt = tc::text::ChatTemplate(source).render(
      {{"messages", messages}, {"add_generation_prompt", true}, {"bos_token", bos}, {"eos_token", eos}});
  INFO("prompt: " << prompt);
  const bool writes_bos = !bos.empty() && prompt.compare(0, bos.size(), bos) == 0;
  const auto want = tok->encode(prompt, {.add_special = !writes_bos, .parse_special = true});
  CHECK(got == want);
  const auto n_markers = static_cast<size_t>(std::count(got.begin(), got.end(), static_cast<tc::text::TokenId>(marker)));
  CHECK(n_markers == occurrences(prompt, turn_marker));
  CHECK(n_markers >= 3);
  if (vocab.add_bos) CHECK(std::count(got.begin(), got.end(), vocab.bos_id) == 1);
  CHECK(server.stop() == 0);
}

}  // namespace

TEST_CASE("a Qwen3-like model file's chat template is the one served and tokenized", "[integration][chat_template]") {
  check_family("qwen2", "qwen3", "<|im_start|>");
}

TEST_CASE("a Gemma3-like model file's chat template is the one served and tokenized", "[integration][chat_template]") {
  check_family("gemma3", "gemma3", "<start_of_turn>");
}
