// inspect: the table and the JSON describe the same file, completely, and
// say whether it runs and which tensor or dtype stops it.
#include <catch2/catch.hpp>

#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/gguf/gguf_file.h"
#include "profiler/inspect.h"
#include "profiler/make_mmproj.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"
#include "tests/tiny_projector.h"

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
  CHECK_FALSE(j.contains("shards"));

  // The same model split in two: every tensor, each with its shard, and the shards' files.
  o.output = dir / "split.gguf";
  o.split_shards = 2;
  tc::profiler::make_model(o);
  const auto shards = tc::profiler::make_model_outputs(o);
  const auto s = nlohmann::json::parse(tc::profiler::inspect_file(shards.front(), {.json = true}));
  CHECK(s["shards"] == nlohmann::json({shards[0].string(), shards[1].string()}));
  REQUIRE(s["tensors"].size() == file.tensors().size());
  CHECK(s["tensors"].front()["shard"] == 0);
  CHECK(s["tensors"].back()["shard"] == 1);
  CHECK_THAT(tc::profiler::inspect_file(shards.front(), {}), Catch::Contains("split:         2 shards"));
}

namespace {

// Overwrites the stored ggml type id of 2-D tensor `name` in GGUF bytes.
void set_type_id(std::string& bytes, const std::string& name, uint32_t type_id) {
  const auto at = bytes.find(name);
  REQUIRE(at != std::string::npos);
  // name, then n_dims (u32), ne[0..1] (i64), then the type id.
  const size_t type_pos = at + name.size() + 4 + 2 * 8;
  std::memcpy(bytes.data() + type_pos, &type_id, sizeof type_id);
}

}  // namespace

TEST_CASE("inspect says whether a file runs and names each tensor whose dtype stops it", "[profiler][inspect]") {
  const auto dir = tc::test::scratch_dir("inspect_support");
  tc::profiler::MakeModelOptions o;
  o.output = dir / "m.gguf";
  o.n_vocab = 512;
  o.n_embd = 256;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "q5_k_m";
  tc::profiler::make_model(o);

  const std::string ok = tc::profiler::inspect_file(o.output, {});
  CHECK_THAT(ok, Catch::Contains("runs:          yes"));
  CHECK_THAT(ok, Catch::Contains("q5_K x ") && Catch::Contains("q6_K x "));
  const auto ok_json = nlohmann::json::parse(tc::profiler::inspect_file(o.output, {.json = true}));
  CHECK(ok_json["support"]["runnable"] == true);
  CHECK(ok_json["support"]["blockers"].empty());

  std::string bytes = tc::test::read_file(o.output);
  set_type_id(bytes, "blk.1.ffn_up.weight", 16);  // iq2_xxs: known to ggml, not supported here
  set_type_id(bytes, "blk.0.attn_k.weight", 1000);  // no ggml type at all
  const auto patched = dir / "patched.gguf";
  tc::test::write_file(patched, bytes);
  // Loading refuses the file, naming the first such tensor.
  CHECK_THROWS_WITH(tc::gguf::GgufFile::open(patched), Catch::Contains("blk.0.attn_k.weight"));

  const std::string table = tc::profiler::inspect_file(patched, {});
  CHECK_THAT(table, Catch::Contains("runs:          no"));
  CHECK_THAT(table, Catch::Contains("tensor 'blk.1.ffn_up.weight': dtype iq2_xxs (ggml type id 16) is not supported"));
  CHECK_THAT(table, Catch::Contains("tensor 'blk.0.attn_k.weight': unknown dtype id 1000"));
  CHECK_THAT(table, Catch::Contains("n_head 4, n_head_kv 2"));  // the rest is still read
  const auto j = nlohmann::json::parse(tc::profiler::inspect_file(patched, {.json = true}));
  CHECK(j["support"]["runnable"] == false);
  REQUIRE(j["support"]["unsupported_tensors"].size() == 2);
  CHECK(j["support"]["unsupported_tensors"][0]["name"] == "blk.0.attn_k.weight");
  CHECK(j["support"]["unsupported_tensors"][1]["name"] == "blk.1.ffn_up.weight");
  CHECK(j["support"]["unsupported_tensors"][1]["dtype"] == "iq2_xxs");
  CHECK(j["support"]["dtypes"]["iq2_xxs"] == 1);
  CHECK(j["tensors"].size() == ok_json["tensors"].size() - 2);
}

TEST_CASE("inspect says what a vision projector is for, or why it cannot serve", "[profiler][inspect][vision]") {
  const auto dir = tc::test::scratch_dir("inspect_mmproj");
  const tc::profiler::MakeMmprojOptions o = tc::test::tiny_projector(48);
  const auto path = dir / "mmproj.gguf";
  tc::profiler::make_mmproj(path, o);
  const std::string table = tc::profiler::inspect_file(path, {});
  CHECK_THAT(table, Catch::Contains("as a vision projector (--mmproj) beside a model of n_embd 48: gemma3, images "
                                    "fitted into 8 px in patches of 4, 1 layers of width 8"));
  CHECK_THAT(table, Catch::Contains("1 embeddings per image"));
  CHECK_THAT(table, Catch::Contains("not a language model"));
  // A projector of a type Thermocline does not read: the reason, naming the key.
  std::string bytes = tc::test::read_file(path);
  const auto at = bytes.find("gemma3", bytes.find("clip.projector_type"));
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 6, "llava6");
  const auto other = dir / "other.gguf";
  tc::test::write_file(other, bytes);
  CHECK_THAT(tc::profiler::inspect_file(other, {}), Catch::Contains("not a vision projector Thermocline reads") &&
                                                      Catch::Contains("clip.projector_type"));
}

TEST_CASE("inspect names the layers' kinds: recurrent mixers, AltUp, an encoder, experts on some layers",
          "[profiler][inspect]") {
  struct Case {
    const char* arch;
    int64_t n_layer;
    int64_t n_expert;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"mamba", 2, 0, {"2 of 2 layers Mamba-1 (d_inner 128, 16 states, dt_rank 4)", "no attention heads", "no FFN"}},
      {"jamba", 4, 4, {"3 of 4 layers Mamba-1", "no RoPE", "experts on 2 of 4 layers", "n_head 4"}},
      {"gemma3n", 22, 0,
       {"AltUp: 4 streams, LAuReL of rank 64, sparse FFN gates in layers 0-9", "per-layer inputs of 256"}},
      {"gemma-embedding", 2, 0, {"bidirectional attention (an encoder: embeddings only)"}},
      {"qwen3vl", 2, 0, {"multimodal RoPE sections 2, 3, 3, 0"}},
      {"bert", 2, 0, {"BERT's LayerNorms after each residual add", "learned positions", "no RoPE", "no output head"}},
      {"nomic-bert", 2, 0, {"BERT's LayerNorms after each residual add", "NeoX RoPE", "no output head"}},
      {"jina-bert-v2", 2, 0,
       {"BERT's LayerNorms after each residual add", "ALiBi (max bias 8), no positions", "no RoPE"}},
      {"bert-reranker", 2, 0, {"a reranker's classification head (one score)"}},
      {"jina-bert-v2-reranker", 2, 0, {"a reranker's classification head (one score)", "ALiBi (max bias 8)"}},
      {"qwen3-reranker", 2, 0, {"a reranker's classification head (2 scores, last token)"}},
      {"modern-bert", 4, 0,
       {"LayerNorm without biases", "ModernBERT's LayerNorm of the embeddings, none before layer 0's attention",
        "sliding window 128 on 2 of 4 layers", "symmetric: 64 positions either side",
        "windowed layers' RoPE base 10000", "fused gate-up", "ffn form:      geglu, no output head"}},
  };
  for (const Case& c : cases) {
    INFO(c.arch);
    tc::profiler::MakeModelOptions o;
    const std::string_view arch = c.arch;
    o.reranker = arch.ends_with("-reranker");
    o.arch = o.reranker ? std::string(arch.substr(0, arch.size() - 9)) : std::string(arch);
    o.output = tc::test::scratch_dir(std::string("inspect_kinds_") + c.arch) / "m.gguf";
    o.n_vocab = 1024;
    o.n_embd = 64;
    o.n_layer = c.n_layer;
    o.n_ff = 128;
    o.n_head = 4;
    o.n_head_kv = std::string_view(c.arch) == "modern-bert" ? 4 : 2;  // (its one attn_qkv: 3 n_embd rows)
    o.n_expert = c.n_expert;
    o.n_expert_used = c.n_expert > 0 ? 2 : 0;
    o.weight_type = "f16";
    tc::profiler::make_model(o);
    const std::string table = tc::profiler::inspect_file(o.output, {});
    for (const auto& s : c.says) CHECK_THAT(table, Catch::Contains(s));
  }
}
