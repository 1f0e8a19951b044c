// Images in requests (image_input.h): data: URLs and bare base64 decoded to
// the exact bytes (padding optional, newlines ignored, a seeded round trip),
// what cannot be read a 400 naming the field; and each API's image parts
// (OpenAI chat, Ollama chat and generate, Anthropic Messages, Responses)
// becoming kImageMarker in the message text and ChatRequest::images in order.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "server/anthropic_schema.h"
#include "server/field_error.h"
#include "server/image_input.h"
#include "server/ollama_schema.h"
#include "server/openai_schema.h"
#include "server/responses_schema.h"

using nlohmann::json;
using nlohmann::ordered_json;
using namespace tc::server;

namespace {

// Small fixed "images": a PNG signature and bytes 0 and 255.
const std::string kCat("\x89PNG\r\n\x1a\n\x00\x01\xfe\xff", 12);
const std::string kDog("GIF89a\x00\x7f", 8);

std::string base64(const std::string& bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = 0;
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    for (size_t k = 0; k < 3; ++k) {
      group = (group << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string data_url(const std::string& bytes) { return "data:image/png;base64," + base64(bytes); }

// The 400 `fn` throws (its param and message), or status 0.
template <class Fn>
ApiError thrown(Fn&& fn) {
  try {
    fn();
  } catch (const BadField& e) {
    return e.error;
  }
  return {0, "", "", "", ""};
}

RequestLimits limits() {
  RequestLimits l;
  l.n_vocab = 100;
  return l;
}

json user_parts(json parts) { return {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", parts}}}}}; }

json image_url_part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

ChatRequest parsed_chat(const json& body) {
  auto p = parse_chat_request(body, limits());
  if (p.error) FAIL(p.error->message);
  return *p.request;
}

}  // namespace

TEST_CASE("images: base64 decodes with and without padding and across newlines", "[server][images]") {
  CHECK(image_bytes_from_base64(base64(kCat), "images[0]") == kCat);
  // 11 and 10 bytes: one and two '=' of padding, or none.
  for (const std::string& bytes : {kCat.substr(0, 11), kCat.substr(0, 10), kDog}) {
    const std::string padded = base64(bytes);
    std::string bare = padded;
    while (!bare.empty() && bare.back() == '=') bare.pop_back();
    CHECK(image_bytes_from_base64(padded, "images[0]") == bytes);
    CHECK(image_bytes_from_base64(bare, "images[0]") == bytes);
  }
  // CRLF line breaks, spaces and tabs, a trailing newline.
  const std::string b64 = base64(kCat);
  const std::string wrapped =
      b64.substr(0, 4).append(" \t").append(b64.substr(4, 4)).append("\r\n").append(b64.substr(8));
  CHECK(image_bytes_from_base64(wrapped + "\n", "images[0]") == kCat);
  CHECK(image_bytes_from_url("data:image/png;base64," + wrapped, "x") == kCat);
  // Any media type, none, and the scheme and ;base64 in any case.
  CHECK(image_bytes_from_url("data:;base64," + base64(kDog), "x") == kDog);
  CHECK(image_bytes_from_url("DATA:image/webp;BASE64," + base64(kDog), "x") == kDog);
}

TEST_CASE("images: random bytes round-trip through base64", "[server][images]") {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> length(1, 100);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(length(rng), '\0');
    for (auto& c : bytes) c = static_cast<char>(byte(rng));
    std::string b64 = base64(bytes);
    if (trial % 2 == 1) {
      while (b64.back() == '=') b64.pop_back();
    }
    std::string lines;  // a newline after every 8 symbols
    for (size_t i = 0; i < b64.size(); ++i) lines.append(i % 8 == 7 ? std::string(1, b64[i]) + "\n" : b64.substr(i, 1));
    REQUIRE(image_bytes_from_base64(lines, "images[0]") == bytes);
  }
}

TEST_CASE("images: bad base64, empty data, other URLs are 400s naming the field", "[server][images]") {
  for (const char* bad : {"QUJD$", "QUJ-", "Q", "QUJDR", "QQ=", "QQ===", "====", "QUJD=QUJD", "QU=JD", "QQ==QQ=="}) {
    const ApiError e = thrown([&] { image_bytes_from_base64(bad, "messages[1].images[0]"); });
    CHECK(e.status == 400);
    CHECK(e.param == "messages");
    CHECK(e.message.find("'messages[1].images[0]' is not valid base64") == 0);
  }
  ApiError e = thrown([] { image_bytes_from_base64(" \n", "images[2]"); });
  CHECK(e.param == "images");
  CHECK(e.message == "'images[2]' holds no image data");
  e = thrown([] { image_bytes_from_url("https://example.com/cat.png", "input[0].content[1].image_url"); });
  CHECK(e.status == 400);
  CHECK(e.param == "input");
  CHECK(e.message ==
        "'input[0].content[1].image_url': image URLs are not fetched; send the image inline as a data: URL "
        "(data:image/png;base64,...)");
  CHECK(thrown([] { image_bytes_from_url("http://x/y.png", "messages[0]"); }).message.find("not fetched") !=
        std::string::npos);
  CHECK(thrown([] { image_bytes_from_url("data:image/png,rawbytes", "messages[0]"); }).message.find("base64 data:") !=
        std::string::npos);
  CHECK(thrown([] { image_bytes_from_url("data:image/png;base64,", "messages[0]"); }).message.find("no image") !=
        std::string::npos);
  // One byte over the cap.
  const std::string big(kMaxImageBytes + 1, 'x');
  e = thrown([&] { image_bytes_from_base64(base64(big), "images[0]"); });
  CHECK(e.param == "images");
  CHECK(e.message.find("at most " + std::to_string(kMaxImageBytes)) != std::string::npos);
}

TEST_CASE("images: OpenAI chat image_url parts become markers and bytes in order", "[server][images]") {
  ChatRequest r = parsed_chat(user_parts({{{"type", "text"}, {"text", "What is"}},
                                          image_url_part(data_url(kCat)),
                                          {{"type", "text"}, {"text", "and this?"}},
                                          {{"type", "image_url"}, {"image_url", data_url(kDog)}}}));
  CHECK(r.messages[0]["content"] == "What is\n<__media__>\nand this?\n<__media__>");
  REQUIRE(r.images.size() == 2);
  CHECK(r.images[0] == kCat);
  CHECK(r.images[1] == kDog);
  // Across messages, in the messages' order; `detail` is ignored.
  json body = user_parts({image_url_part(data_url(kDog))});
  json second = image_url_part(data_url(kCat));
  second["image_url"]["detail"] = "low";
  body["messages"].push_back({{"role", "assistant"}, {"content", "A dog."}});
  body["messages"].push_back({{"role", "user"}, {"content", {second, {{"type", "text"}, {"text", "And?"}}}}});
  r = parsed_chat(body);
  CHECK(r.messages[0]["content"] == "<__media__>");
  CHECK(r.messages[2]["content"] == "<__media__>\nAnd?");
  CHECK(r.images == std::vector<std::string>{kDog, kCat});
  // Text only: no images.
  CHECK(parsed_chat(user_parts({{{"type", "text"}, {"text", "hi"}}})).images.empty());
}

TEST_CASE("images: OpenAI chat image parts that cannot be read are 400s", "[server][images]") {
  auto error_of = [](const json& body) {
    auto p = parse_chat_request(body, limits());
    REQUIRE(p.error);
    CHECK(p.error->status == 400);
    CHECK(p.error->param == "messages");
    return p.error->message;
  };
  CHECK(error_of(user_parts({image_url_part("data:image/png;base64,QUJ$")})) ==
        "'messages[0].content[0].image_url.url' is not valid base64 (RFC 4648: A-Z, a-z, 0-9, '+' and '/', "
        "optional '=' padding)");
  CHECK(error_of(user_parts({{{"type", "text"}, {"text", "x"}}, image_url_part("https://example.com/a.png")})) ==
        "'messages[0].content[1].image_url.url': image URLs are not fetched; send the image inline as a data: URL "
        "(data:image/png;base64,...)");
  CHECK(error_of(user_parts({{{"type", "image_url"}}})).find("string 'url'") != std::string::npos);
  CHECK(error_of(user_parts({{{"type", "image_url"}, {"image_url", {{"url", 3}}}}})).find("string 'url'") !=
        std::string::npos);
  CHECK(error_of(user_parts({{{"type", "input_audio"}}})).find("not supported") != std::string::npos);
  json parts = json::array();
  for (size_t i = 0; i < kMaxRequestImages; ++i) parts.push_back(image_url_part(data_url(kCat)));
  CHECK(parsed_chat(user_parts(parts)).images.size() == kMaxRequestImages);
  parts.push_back(image_url_part(data_url(kDog)));
  CHECK(error_of(user_parts(parts)) == "a request may carry at most 16 images");
}

TEST_CASE("images: Ollama chat and generate put markers before the text", "[server][images]") {
  json body = {{"model", "m"},
               {"stream", false},
               {"messages", {{{"role", "user"}, {"content", "What is this?"}, {"images", {base64(kCat), base64(kDog)}}},
                             {{"role", "assistant"}, {"content", "Pets."}, {"images", json::array()}}}}};
  OllamaRequest o = translate_ollama_chat(body);
  REQUIRE_FALSE(o.error);
  ChatRequest r = parsed_chat(o.openai);
  CHECK(r.messages[0]["content"] == "<__media__>\n<__media__>\nWhat is this?");
  CHECK_FALSE(r.messages[0].contains("images"));
  CHECK(r.messages[1]["content"] == "Pets.");
  CHECK(r.images == std::vector<std::string>{kCat, kDog});
  // Text only: the body as before.
  body["messages"][0].erase("images");
  o = translate_ollama_chat(body);
  REQUIRE_FALSE(o.error);
  CHECK(o.openai["messages"] == body["messages"]);

  body["messages"][0]["images"] = {base64(kCat), "not base64!"};
  o = translate_ollama_chat(body);
  REQUIRE(o.error);
  CHECK(o.error->status == 400);
  CHECK(o.error->param == "messages");
  CHECK(o.error->message.find("'messages[0].images[1]' is not valid base64") == 0);
  body["messages"][0]["images"] = base64(kCat);
  CHECK(translate_ollama_chat(body).error->param == "messages");
  body["messages"][0].erase("images");
  body["images"] = {base64(kCat)};  // beside the messages: not where /api/chat takes them
  CHECK(translate_ollama_chat(body).error->param == "images");

  // /api/generate: through the chat template, or raw.
  json gen = {{"model", "m"}, {"prompt", "Describe."}, {"images", {base64(kDog), base64(kCat)}}};
  o = translate_ollama_generate(gen);
  REQUIRE_FALSE(o.error);
  REQUIRE_FALSE(o.completion);
  r = parsed_chat(o.openai);
  CHECK(r.messages[0]["content"] == "<__media__>\n<__media__>\nDescribe.");
  CHECK(r.images == std::vector<std::string>{kDog, kCat});
  CHECK(o.images.empty());
  gen["raw"] = true;
  o = translate_ollama_generate(gen);
  REQUIRE_FALSE(o.error);
  REQUIRE(o.completion);
  CHECK(o.openai["prompt"] == "<__media__>\n<__media__>\nDescribe.");
  CHECK(o.images == std::vector<std::string>{kDog, kCat});
  gen["suffix"] = "}";
  CHECK(translate_ollama_generate(gen).error->param == "images");
  gen.erase("suffix");
  gen["images"] = json::array();
  for (size_t i = 0; i <= kMaxRequestImages; ++i) gen["images"].push_back(base64(kCat));
  o = translate_ollama_generate(gen);
  REQUIRE(o.error);
  CHECK(o.error->param == "images");
  CHECK(o.error->message == "a request may carry at most 16 images");
}

TEST_CASE("images: Anthropic image blocks become image parts of the user's turn", "[server][images]") {
  ordered_json body = ordered_json::parse(R"({"model": "m", "max_tokens": 8, "messages": [{"role": "user",
      "content": [{"type": "text", "text": "What"}, {"type": "text", "text": " is"},
                  {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}},
                  {"type": "text", "text": "this?"}]}]})");
  body["messages"][0]["content"][2]["source"]["data"] = base64(kCat);
  const auto a = translate_anthropic_request(body);
  REQUIRE_FALSE(a.error);
  const ChatRequest r = parsed_chat(json::parse(a.chat.dump()));
  CHECK(r.messages[0]["content"] == "What is\n<__media__>\nthis?");
  CHECK(r.images == std::vector<std::string>{kCat});
  // A media_type that is no media type does not matter: the bytes do.
  body["messages"][0]["content"][2]["source"]["media_type"] = 5;
  CHECK_FALSE(translate_anthropic_request(body).error);

  auto error_of = [](ordered_json source, const char* role = "user") {
    ordered_json b = {{"max_tokens", 8},
                      {"messages", {{{"role", role}, {"content", {{{"type", "image"}, {"source", source}}}}}}}};
    const auto t = translate_anthropic_request(b);
    REQUIRE(t.error);
    CHECK(t.error->status == 400);
    CHECK(t.error->param == "messages");
    return t.error->message;
  };
  CHECK(error_of({{"type", "base64"}, {"media_type", "image/png"}, {"data", "QUJ$"}})
            .find("'messages[0].content[0].source.data' is not valid base64") == 0);
  CHECK(error_of({{"type", "url"}, {"url", "https://example.com/a.png"}}) ==
        "'messages[0].content[0].source.url': image URLs are not fetched; send the image inline as a data: URL "
        "(data:image/png;base64,...)");
  CHECK(error_of({{"type", "file"}, {"file_id", "f"}}).find("files are not supported") != std::string::npos);
  CHECK(error_of({{"type", "base64"}, {"data", base64(kCat)}}, "assistant").find("user messages only") !=
        std::string::npos);
}

TEST_CASE("images: Responses input_image parts become image parts", "[server][images]") {
  ordered_json body = {{"model", "m"},
                       {"input", {{{"role", "user"},
                                   {"content", {{{"type", "input_image"}, {"image_url", data_url(kDog)}},
                                                {{"type", "input_text"}, {"text", "Who?"}}}}}}}};
  const auto t = translate_responses_request(body);
  REQUIRE_FALSE(t.error);
  const ChatRequest r = parsed_chat(json::parse(t.chat.dump()));
  CHECK(r.messages[0]["content"] == "<__media__>\nWho?");
  CHECK(r.images == std::vector<std::string>{kDog});

  auto error_of = [](ordered_json part) {
    ordered_json b = {{"input", {{{"role", "user"}, {"content", {part}}}}}};
    const auto e = translate_responses_request(b);
    REQUIRE(e.error);
    CHECK(e.error->status == 400);
    CHECK(e.error->param == "input");
    return e.error->message;
  };
  CHECK(error_of({{"type", "input_image"}, {"file_id", "file-1"}}).find("files are not supported") !=
        std::string::npos);
  CHECK(error_of({{"type", "input_image"}, {"image_url", "https://example.com/a.png"}}) ==
        "'input[0].content[0].image_url': image URLs are not fetched; send the image inline as a data: URL "
        "(data:image/png;base64,...)");
  CHECK(error_of({{"type", "input_image"}, {"image_url", "data:image/png;base64,@@"}}).find("not valid base64") !=
        std::string::npos);
}
