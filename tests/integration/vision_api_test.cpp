// Images over HTTP: a Gemma 3 model served with a vision projector
// (make-mmproj's random gemma3 projector) reads images sent inline on the
// chat routes of every API; the image's embeddings sit between the
// projector's opening and closing text; the same image gives the same reply
// and reuses the cached prompt, another image changes the reply; bad images,
// image URLs and models without a projector are 400s; a projector of
// another model's width fails the model's load, naming both, where one
// only found beside the model (a Qwen-VL download's) leaves it text only; a
// stream whose image takes long to encode gets its 200 and SSE pings meanwhile.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/engine/model/spec_test_util.h"
#include "tests/integration/image_fixtures.h"
#include "tests/integration/server_fixture.h"
#include "tests/test_util.h"

using nlohmann::json;

namespace {

using tc::test::base64;

std::string png(int w, int h, int seed) { return tc::test::test_png(w, h, seed); }

std::string data_url(const std::string& bytes) { return "data:image/png;base64," + base64(bytes); }

json image_chat(const std::string& url, const std::string& text = "What is in this picture?") {
  return {
      {"messages", json::array({{{"role", "user"},
                                 {"content", json::array({{{"type", "text"}, {"text", text}},
                                                          {{"type", "image_url"}, {"image_url", {{"url", url}}}}})}}})},
      {"max_tokens", 6},
      {"temperature", 0},
      {"logprobs", true}};
}

}  // namespace

TEST_CASE("images over HTTP: a gemma3 model with a vision projector reads inline images", "[integration][vision]") {
  const auto dir = tc::test::scratch_dir("vision_api");
  const auto model = tc::test::make_test_model(
      dir, "g", "--arch gemma3 --n-embd 64 --n-layer 2 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 8");
  const auto mmproj = dir / "mmproj-g.gguf";
  const std::string make = tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-mmproj -o " +
                           tc::test::shell_quote(mmproj.string()) +
                           " --n-embd-text 64 --image-size 56 --patch-size 14 --n-embd 32 --n-ff 64 --n-layer 2"
                           " --n-head 2 --pool 2 --seed 3";
  const auto made = tc::test::run_command(make);
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  tc::test::ServerProcess server(model, {"--ctx-size", "512", "--threads", "2", "--mmproj", mmproj.string()}, dir);
  auto client = server.client();
  const std::string first = png(40, 30, 1), second = png(40, 30, 2);

  // Clients learn that the model reads images: /v1/models, /props (llama.cpp's), /api/show (Ollama's).
  const auto models = client.Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body)["data"][0]["vision"] == true);
  const auto props = client.Get("/props");
  REQUIRE(props);
  CHECK(json::parse(props->body)["modalities"]["vision"] == true);
  const auto show = tc::test::post_json(client, "/api/show", {{"model", "g"}});
  CHECK(show.body["capabilities"].dump().find("vision") != std::string::npos);

  // 4x4 patches pooled 2x2: 4 embeddings, between the opening and closing text.
  const auto tokens = tc::test::post_json(client, "/tokenize", image_chat(data_url(first)));
  REQUIRE(tokens.status == 200);
  std::vector<int64_t> placeholders;
  for (const auto& id : tokens.body["tokens"]) {
    if (id.get<int64_t>() >= (int64_t{1} << 30)) placeholders.push_back(id.get<int64_t>());
  }
  REQUIRE(placeholders.size() == 4);
  for (size_t i = 1; i < placeholders.size(); ++i) CHECK(placeholders[i] == placeholders[0] + static_cast<int64_t>(i));

  const auto text_only = tc::test::post_json(
      client, "/v1/chat/completions",
      {{"messages", json::array({{{"role", "user"}, {"content", "What is in this picture?"}}})}, {"max_tokens", 1}});
  REQUIRE(text_only.status == 200);
  const auto a = tc::test::post_json(client, "/v1/chat/completions", image_chat(data_url(first)));
  INFO(a.raw);
  REQUIRE(a.status == 200);
  CHECK(a.body["usage"]["prompt_tokens"].get<int64_t>() >= text_only.body["usage"]["prompt_tokens"].get<int64_t>() + 4);

  // The same image again: the same reply, the prompt taken from the cache.
  const auto again = tc::test::post_json(client, "/v1/chat/completions", image_chat(data_url(first)));
  REQUIRE(again.status == 200);
  CHECK(again.body["choices"][0]["message"]["content"] == a.body["choices"][0]["message"]["content"]);
  CHECK(again.body["choices"][0]["logprobs"] == a.body["choices"][0]["logprobs"]);
  CHECK(again.body["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>() ==
        a.body["usage"]["prompt_tokens"].get<int64_t>() - 1);
  CHECK_THAT(server.log(), Catch::Contains("vision: encoded a 40x30 image into 4 embeddings"));
  const auto metrics = client.Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("thermocline_model_images_encoded_total{model=\"g\"} 1\n"));

  // Another image: other logits from its first token on.
  const auto b = tc::test::post_json(client, "/v1/chat/completions", image_chat(data_url(second)));
  REQUIRE(b.status == 200);
  CHECK(b.body["choices"][0]["logprobs"]["content"][0]["logprob"] !=
        a.body["choices"][0]["logprobs"]["content"][0]["logprob"]);

  SECTION("Ollama, Anthropic and Responses carry images too") {
    const auto ollama = tc::test::post_json(
        client, "/api/chat",
        {{"model", "g"},
         {"stream", false},
         {"messages", json::array({{{"role", "user"}, {"content", "What is this?"}, {"images", {base64(first)}}}})},
         {"options", {{"num_predict", 4}, {"temperature", 0}}}});
    INFO(ollama.raw);
    CHECK(ollama.status == 200);
    CHECK(ollama.body["prompt_eval_count"].get<int64_t>() >= 4);
    const auto raw = tc::test::post_json(client, "/api/generate",
                                         {{"model", "g"},
                                          {"stream", false},
                                          {"raw", true},
                                          {"prompt", "Look:"},
                                          {"images", {base64(second)}},
                                          {"options", {{"num_predict", 3}, {"temperature", 0}}}});
    INFO(raw.raw);
    CHECK(raw.status == 200);
    CHECK(raw.body["prompt_eval_count"].get<int64_t>() >= 4);
    const auto anthropic = tc::test::post_json(
        client, "/v1/messages",
        {{"model", "g"},
         {"max_tokens", 4},
         {"messages",
          json::array(
              {{{"role", "user"},
                {"content",
                 json::array({{{"type", "image"},
                               {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", base64(first)}}}},
                              {{"type", "text"}, {"text", "What is this?"}}})}}})}});
    INFO(anthropic.raw);
    CHECK(anthropic.status == 200);
    CHECK(anthropic.body["usage"]["input_tokens"].get<int64_t>() +
              anthropic.body["usage"]["cache_read_input_tokens"].get<int64_t>() >=
          4);
    const auto responses = tc::test::post_json(
        client, "/v1/responses",
        {{"model", "g"},
         {"max_output_tokens", 4},
         {"input",
          json::array({{{"role", "user"},
                        {"content", json::array({{{"type", "input_text"}, {"text", "What is this?"}},
                                                 {{"type", "input_image"}, {"image_url", data_url(first)}}})}}})}});
    INFO(responses.raw);
    CHECK(responses.status == 200);
    CHECK(responses.body["usage"]["input_tokens"].get<int64_t>() >= 4);
  }

  SECTION("llama.cpp's /completion reads a prompt object's multimodal_data") {
    auto completion = [&](const json& prompt) {
      return tc::test::post_json(client, "/completion", {{"prompt", prompt}, {"n_predict", 2}, {"temperature", 0}});
    };
    const auto plain = completion("Look:  What is it?");
    REQUIRE(plain.status == 200);
    const auto with_image =
        completion({{"prompt_string", "Look: <__media__> What is it?"}, {"multimodal_data", {base64(png(40, 30, 3))}}});
    INFO(with_image.raw);
    REQUIRE(with_image.status == 200);
    CHECK(with_image.body["tokens_evaluated"].get<int64_t>() >= plain.body["tokens_evaluated"].get<int64_t>() + 4);
    // The image was read and encoded (a new one: the third), not taken as text.
    const auto encoded = client.Get("/metrics");
    REQUIRE(encoded);
    CHECK_THAT(encoded->body, Catch::Contains("thermocline_model_images_encoded_total{model=\"g\"} 3\n"));
    const auto in_array =
        completion(json::array({{{"prompt_string", "<__media__>"}, {"multimodal_data", {base64(second)}}}}));
    CHECK(in_array.status == 200);
    const auto bad = completion({{"prompt_string", "<__media__>"}, {"multimodal_data", {"not base64!"}}});
    CHECK(bad.status == 400);
    CHECK_THAT(bad.raw, Catch::Contains("prompt.multimodal_data[0]"));
    const auto unmatched = completion({{"prompt_string", "no marker"}, {"multimodal_data", {base64(first)}}});
    CHECK(unmatched.status == 400);
    CHECK_THAT(unmatched.raw, Catch::Contains("1 images but"));
  }

  SECTION("unreadable images and image URLs are 400s naming what is wrong") {
    const auto junk = tc::test::post_json(client, "/v1/chat/completions",
                                          image_chat("data:image/png;base64," + base64("not an image")));
    CHECK(junk.status == 400);
    CHECK_THAT(junk.raw, Catch::Contains("image 1") && Catch::Contains("not PNG, JPEG, WebP or GIF"));
    const auto url = tc::test::post_json(client, "/v1/chat/completions", image_chat("https://example.com/cat.png"));
    CHECK(url.status == 400);
    CHECK_THAT(url.raw, Catch::Contains("data:"));
  }
}

TEST_CASE("images over HTTP: no projector is a 400, a projector of another width fails the load",
          "[integration][vision]") {
  const auto dir = tc::test::scratch_dir("vision_api_refusals");
  const auto model = tc::test::make_test_model(
      dir, "g", "--arch gemma3 --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 8");
  {
    tc::test::ServerProcess server(model, {"--ctx-size", "256", "--threads", "2"}, dir);
    auto client = server.client();
    const auto models = client.Get("/v1/models");
    REQUIRE(models);
    CHECK(json::parse(models->body)["data"][0]["vision"] == false);
    const auto r = tc::test::post_json(client, "/v1/chat/completions", image_chat(data_url(png(8, 8, 1))));
    CHECK(r.status == 400);
    CHECK_THAT(r.raw, Catch::Contains("--mmproj"));
  }
  const auto mmproj = dir / "mmproj-48.gguf";
  const auto made = tc::test::run_command(
      tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-mmproj -o " +
      tc::test::shell_quote(mmproj.string()) +
      " --n-embd-text 48 --image-size 28 --patch-size 14 --n-embd 16 --n-ff 32 --n-layer 1 --n-head 2 --pool 2");
  REQUIRE(made.exit_code == 0);
  tc::test::ServerLaunch launch;
  launch.require_ready = false;
  tc::test::ServerProcess server(launch, model, {"--ctx-size", "256", "--mmproj", mmproj.string()}, dir);
  auto client = server.client();
  const auto health = tc::test::wait_until_loaded(client);
  CHECK(health.status == 503);
  CHECK_THAT(health.body, Catch::Contains("48") && Catch::Contains("64") && Catch::Contains("mmproj-48.gguf"));
}

TEST_CASE("images over HTTP: in a models folder a model's projector is the one beside it or its NAME.toml's",
          "[integration][vision]") {
  namespace fs = std::filesystem;
  const auto dir = tc::test::scratch_dir("vision_models_dir");
  const auto model = tc::test::make_test_model(
      dir, "g", "--arch gemma3 --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 8");
  const auto models = dir / "models";
  fs::create_directories(models / "gem");
  fs::copy_file(model, models / "gem" / "g.gguf");  // alone in its folder with one projector: paired
  fs::copy_file(model, models / "flat-a.gguf");     // two models and a projector in one folder: not paired...
  fs::copy_file(model, models / "flat-b.gguf");     // ...unless NAME.toml names it
  const std::string make = tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-mmproj -o ";
  const std::string shape =
      " --n-embd-text 64 --image-size 28 --patch-size 14 --n-embd 16 --n-ff 32 --n-layer 1 --n-head 2 --pool 2";
  REQUIRE(tc::test::run_command(make + tc::test::shell_quote((models / "gem" / "mmproj-g.gguf").string()) + shape)
              .exit_code == 0);
  REQUIRE(
      tc::test::run_command(make + tc::test::shell_quote((models / "mmproj-flat.gguf").string()) + shape).exit_code ==
      0);
  std::ofstream(models / "flat-b.toml") << "mmproj = \"mmproj-flat.gguf\"\n";
  tc::test::ServerProcess server({}, {"--models-dir", models.string(), "--ctx-size", "256", "--threads", "2"}, dir);
  auto client = server.client();
  auto ask = [&](const std::string& name) {
    json body = image_chat(data_url(png(20, 20, 4)));
    body["model"] = name;
    body["max_tokens"] = 2;
    return tc::test::post_json(client, "/v1/chat/completions", body);
  };
  const auto paired = ask("gem/g");
  INFO(paired.raw);
  CHECK(paired.status == 200);
  const auto unpaired = ask("flat-a");
  CHECK(unpaired.status == 400);
  CHECK_THAT(unpaired.raw, Catch::Contains("--mmproj"));
  // A stream to a model still to load, with an image: pings while it loads
  // and encodes, then the reply.
  json streamed_body = image_chat(data_url(png(20, 20, 4)));
  streamed_body["model"] = "flat-b";
  streamed_body["max_tokens"] = 2;
  streamed_body["stream"] = true;
  streamed_body.erase("logprobs");
  const auto streamed = tc::test::post_stream(client, "/v1/chat/completions", streamed_body);
  INFO(streamed.raw.substr(0, 300));
  CHECK(streamed.status == 200);
  CHECK((!streamed.data.empty() && streamed.data.back() == "[DONE]"));
  CHECK(streamed.raw.find("\"error\"") == std::string::npos);
  CHECK(ask("flat-b").status == 200);
  // A loaded model's host memory counts its projector's file too (the RAM budget's share).
  const auto ps = client.Get("/api/ps");
  REQUIRE(ps);
  INFO(ps->body);
  bool counted = false;
  const json loaded = json::parse(ps->body);
  for (const auto& m : loaded["models"]) {
    if (m["name"] != "gem/g" && m["name"] != "gem/g:latest") continue;
    counted = m["size"].get<uint64_t>() >=
              fs::file_size(models / "gem" / "g.gguf") + fs::file_size(models / "gem" / "mmproj-g.gguf");
  }
  CHECK(counted);
  // The projectors are no models of their own.
  const auto list = httplib::Client(server.url()).Get("/v1/models");
  REQUIRE(list);
  CHECK(list->body.find("mmproj") == std::string::npos);
}

TEST_CASE("images over HTTP: a projector beside a model that cannot serve leaves the model text only",
          "[integration][vision]") {
  namespace fs = std::filesystem;
  const auto dir = tc::test::scratch_dir("vision_beside_unsupported");
  const auto model = tc::test::make_test_model(
      dir, "q", "--arch gemma3 --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 9");
  const auto made = dir / "mmproj-made.gguf";
  REQUIRE(tc::test::run_command(tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-mmproj -o " +
                                tc::test::shell_quote(made.string()) +
                                " --n-embd-text 64 --image-size 28 --patch-size 14 --n-embd 16 --n-ff 32 --n-layer 1 "
                                "--n-head 2 --pool 2")
              .exit_code == 0);
  // Qwen3-VL's projector type, which this server does not run.
  const auto qwen_vl =
      tc::test::copy_gguf(tc::gguf::GgufFile::open(made), "vision_beside_copy", "", [](tc::gguf::GgufWriter& w) {
        w.set("clip.projector_type", tc::gguf::Value(std::string("qwen3vl_merger")));
      });
  const auto models = dir / "models";
  fs::create_directories(models / "qvl");
  fs::copy_file(model, models / "qvl" / "q.gguf");
  fs::copy_file(qwen_vl.path(), models / "qvl" / "mmproj-q.gguf");
  // Named in a NAME.toml, the same projector fails the load.
  fs::copy_file(model, models / "asked.gguf");
  fs::copy_file(qwen_vl.path(), models / "mmproj-asked.gguf");
  std::ofstream(models / "asked.toml") << "mmproj = \"mmproj-asked.gguf\"\n";
  tc::test::ServerProcess server({}, {"--models-dir", models.string(), "--ctx-size", "256", "--threads", "2"}, dir);
  auto client = server.client();
  json text = {{"model", "qvl/q"}, {"messages", json::array({{{"role", "user"}, {"content", "Hello"}}})},
               {"max_tokens", 2}};
  const auto served = tc::test::post_json(client, "/v1/chat/completions", text);
  INFO(served.raw);
  CHECK(served.status == 200);
  json with_image = image_chat(data_url(png(20, 20, 4)));
  with_image["model"] = "qvl/q";
  const auto refused = tc::test::post_json(client, "/v1/chat/completions", with_image);
  CHECK(refused.status == 400);
  const auto list = client.Get("/v1/models");
  REQUIRE(list);
  INFO(list->body);
  bool listed = false;
  const json listing = json::parse(list->body);
  for (const auto& m : listing["data"]) {
    if (m["id"] != "qvl/q") continue;
    listed = true;
    CHECK(m.dump().find("\"vision\":true") == std::string::npos);
  }
  CHECK(listed);
  text["model"] = "asked";
  const auto failed = tc::test::post_json(client, "/v1/chat/completions", text);
  CHECK(failed.status >= 400);
  CHECK_THAT(failed.raw, Catch::Contains("qwen3vl_merger"));
}

TEST_CASE("images over HTTP: a stream whose image takes long to encode gets its 200 and pings first",
          "[integration][vision]") {
  // A projector of 4096 patches (896-pixel images) and 4 layers of width 256:
  // seconds' worth of attention on 2 threads, against a ping every 0.25 s.
  const auto dir = tc::test::scratch_dir("vision_stream");
  const auto model = tc::test::make_test_model(
      dir, "g", "--arch gemma3 --n-embd 64 --n-layer 1 --n-ff 128 --n-head 4 --n-head-kv 2 --n-vocab 1024 --seed 8");
  const auto mmproj = dir / "mmproj-g.gguf";
  const auto made = tc::test::run_command(
      tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-mmproj -o " +
      tc::test::shell_quote(mmproj.string()) +
      " --n-embd-text 64 --image-size 896 --patch-size 14 --n-embd 256 --n-ff 256 --n-layer 4 --n-head 4 --pool 4");
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  tc::test::ServerProcess server(
      model, {"--ctx-size", "512", "--threads", "2", "--mmproj", mmproj.string(), "--sse-ping-s", "0.25"}, dir);
  auto client = server.client();
  json body = image_chat(data_url(png(40, 30, 5)));
  body["stream"] = true;
  body.erase("logprobs");

  // Encoding: the 200 and pings, then the reply's events.
  const auto streamed = tc::test::post_stream(client, "/v1/chat/completions", body);
  INFO(streamed.raw.substr(0, 400));
  REQUIRE(streamed.status == 200);
  CHECK(streamed.raw.rfind(": ping\n\n", 0) == 0);
  REQUIRE(!streamed.data.empty());
  CHECK(streamed.data.back() == "[DONE]");
  std::string content;
  for (const auto& ev : streamed.events) {
    const auto& delta = ev["choices"][0]["delta"];
    if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
  }
  // The same request without streaming (the image now cached): the same text.
  body["stream"] = false;
  const auto whole = tc::test::post_json(client, "/v1/chat/completions", body);
  REQUIRE(whole.status == 200);
  CHECK(whole.body["choices"][0]["message"]["content"] == content);

  // A cached image and a bad one are quick: answered as any stream (the bad
  // image a 400 before any 200).
  body["stream"] = true;
  const auto cached = tc::test::post_stream(client, "/v1/chat/completions", body);
  REQUIRE(cached.status == 200);
  // (A ping could still come if the first token took a ping interval: a
  // loaded machine's prefill, not an encode. The log counts encodes.)
  CHECK(cached.data.back() == "[DONE]");
  const std::string log = server.log();
  size_t encodes = 0;
  for (size_t at = log.find("vision: encoded"); at != std::string::npos; at = log.find("vision: encoded", at + 1)) {
    ++encodes;
  }
  CHECK(encodes == 1);  // the stream's, once: the whole reply and this one took it from the cache
  const auto bad = tc::test::post_stream(client, "/v1/chat/completions",
                                         [&] {
                                           json b = image_chat("data:image/png;base64," + base64("not an image"));
                                           b["stream"] = true;
                                           return b;
                                         }());
  CHECK(bad.status == 400);
  CHECK_THAT(bad.raw, Catch::Contains("not PNG, JPEG, WebP or GIF"));

  // Ollama's NDJSON has no comments: silent while it encodes, then its lines.
  const auto ollama = tc::test::post_json(
      client, "/api/chat",
      {{"model", "g"},
       {"messages",
        json::array({{{"role", "user"}, {"content", "What is this?"}, {"images", {base64(png(30, 40, 6))}}}})},
       {"options", {{"num_predict", 3}, {"temperature", 0}}}});
  INFO(ollama.raw);
  CHECK(ollama.status == 200);
  CHECK(ollama.raw.rfind("{", 0) == 0);
  CHECK_THAT(ollama.raw, Catch::Contains("\"done\":true"));
}
