// inspect: the table and the JSON describe the same file, completely.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "profiler/inspect.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

TEST_CASE("inspect reports model, tokenizer, template and every tensor", "[profiler][inspect]") {
  const auto dir = tc::test::scratch_dir("inspect");
  tc::profiler::MakeModelOptions o;
  o.output = dir / "m.gguf";
  o.n_vocab = 1024;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 96;
  o.n_head = 4;
  o.n_head_kv = 1;
  o.weight_type = "q4_0";
  tc::profiler::make_model(o);
  const auto file = tc::gguf::GgufFile::open(o.output);

  const std::string table = tc::profiler::inspect_file(o.output, {});
  CHECK_THAT(table, Catch::Contains("n_head 4, n_head_kv 1"));
  CHECK_THAT(table, Catch::Contains("llama (SentencePiece BPE)"));
  CHECK_THAT(table, Catch::Contains("<|im_start|>"));
  for (const auto& t : file.tensors()) CHECK_THAT(table, Catch::Contains(t.name));

  const auto j = nlohmann::json::parse(tc::profiler::inspect_file(o.output, {.json = true}));
  CHECK(j["magic"] == "GGUF");
  CHECK(j["model"]["n_ff"] == 96);
  CHECK(j["model"]["ffn_form"] == "swiglu");
  CHECK(j["tokenizer"]["n_vocab"] == 1024);
  CHECK(j["tokenizer"]["bos_token_id"] == 1);
  REQUIRE(j["tensors"].size() == file.tensors().size());
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const auto& t = file.tensors()[i];
    CHECK(j["tensors"][i]["name"] == t.name);
    CHECK(j["tensors"][i]["bytes"] == t.n_bytes);
    CHECK(j["tensors"][i]["offset"] == t.offset);
    CHECK(j["tensors"][i]["dtype"] == std::string(tc::kernels::dtype_name(t.dtype)));
  }
  CHECK(j["metadata"]["tokenizer.ggml.tokens"]["value"]["count"] == 1024);
}
