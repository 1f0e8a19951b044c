// ModelSpec from metadata and the tensor checks, on small files written here
// with GgufWriter (random data; shapes are what matter).
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "kernels/cpu/quantize.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/test_util.h"

using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::Value;
using tc::test::load_error;
using tc::kernels::DType;
using tc::model::FfnForm;

namespace {

struct Dims {
  int64_t n_vocab = 64, n_embd = 32, n_layer = 2, n_ff = 64, n_head = 4, n_head_kv = 2;
};

std::vector<std::byte> random_tensor(DType t, int64_t n_cols, int64_t n_rows, uint64_t seed) {
  auto values = tc::test::random_floats(static_cast<size_t>(n_cols * n_rows), seed);
  std::vector<std::byte> out(static_cast<size_t>(tc::kernels::row_bytes(t, n_cols) * n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    tc::kernels::quantize_row(t, values.data() + r * n_cols, out.data() + r * tc::kernels::row_bytes(t, n_cols),
                              n_cols);
  }
  return out;
}

// A minimal llama file (or, with arch "bamboo", the same under PowerInfer's
// bamboo keys). `extra_keys` may add or change keys before the tensors;
// `skip` names a tensor to leave out; `reshape` gives one tensor another ne.
struct FileRecipe {
  Dims d;
  std::string arch = "llama";
  tc::gguf::Magic magic = tc::gguf::Magic::GGUF;
  bool tied = false;
  std::string skip;
  std::string reshape;
  std::vector<int64_t> reshape_ne;
  DType norm_type = DType::F32;
  std::function<void(GgufWriter&)> extra_keys;
  bool omit_key_embd = false;
};

GgufFile write_llama(const FileRecipe& r) {
  GgufWriter w(r.magic);
  const auto& d = r.d;
  const std::string p = r.arch + ".";
  w.set("general.architecture", Value(r.arch));
  w.set("general.name", Value("spec-test"));
  if (!r.omit_key_embd) w.set(p + "embedding_length", Value(static_cast<uint32_t>(d.n_embd)));
  w.set(p + "block_count", Value(static_cast<uint32_t>(d.n_layer)));
  w.set(p + "feed_forward_length", Value(static_cast<uint32_t>(d.n_ff)));
  w.set(p + "attention.head_count", Value(static_cast<uint32_t>(d.n_head)));
  w.set(p + "attention.head_count_kv", Value(static_cast<uint32_t>(d.n_head_kv)));
  w.set(p + "context_length", Value(uint32_t{512}));
  w.set(p + "rope.freq_base", Value(500000.0f));
  w.set(p + "attention.layer_norm_rms_epsilon", Value(1e-6f));
  if (r.extra_keys) r.extra_keys(w);
  uint64_t seed = 1;
  const int64_t n_embd_kv = d.n_embd / d.n_head * d.n_head_kv;
  auto add = [&](const std::string& name, DType t, std::vector<int64_t> ne) {
    if (name == r.skip) return;
    if (name == r.reshape) ne = r.reshape_ne;
    const int64_t rows = ne.size() > 1 ? ne[1] : 1;
    w.add_tensor(name, t, ne, random_tensor(t, ne[0], rows, seed++));
  };
  auto layer = [](int64_t l, const char* t) { return tc::model::layer_tensor_name(l, t); };
  add("token_embd.weight", DType::Q8_0, {d.n_embd, d.n_vocab});
  add("output_norm.weight", r.norm_type, {d.n_embd});
  if (!r.tied) add("output.weight", DType::F16, {d.n_embd, d.n_vocab});
  for (int64_t l = 0; l < d.n_layer; ++l) {
    add(layer(l, "attn_norm"), r.norm_type, {d.n_embd});
    add(layer(l, "attn_q"), DType::F16, {d.n_embd, d.n_embd});
    add(layer(l, "attn_k"), DType::F16, {d.n_embd, n_embd_kv});
    add(layer(l, "attn_v"), DType::F16, {d.n_embd, n_embd_kv});
    add(layer(l, "attn_output"), DType::F16, {d.n_embd, d.n_embd});
    add(layer(l, "ffn_norm"), DType::F32, {d.n_embd});
    add(layer(l, "ffn_gate"), DType::Q4_0, {d.n_embd, d.n_ff});
    add(layer(l, "ffn_up"), DType::Q4_0, {d.n_embd, d.n_ff});
    if (r.magic == tc::gguf::Magic::PWRI) {
      add(layer(l, "ffn_down_t"), DType::F16, {d.n_embd, d.n_ff});
    } else {
      add(layer(l, "ffn_down"), DType::F16, {d.n_ff, d.n_embd});
    }
  }
  return tc::test::write_fresh(w, "model_spec");
}


}  // namespace

TEST_CASE("model spec reads llama hyperparameters", "[model]") {
  const auto f = write_llama({});
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.arch == "llama");
  CHECK(s.name == "spec-test");
  CHECK(s.n_vocab == 64);
  CHECK(s.n_embd == 32);
  CHECK(s.n_layer == 2);
  CHECK(s.n_ff == 64);
  CHECK(s.n_head == 4);
  CHECK(s.n_head_kv == 2);
  CHECK(s.head_dim == 8);
  CHECK(s.n_rot == 8);
  CHECK(s.n_embd_kv() == 16);
  CHECK(s.n_gqa() == 2);
  CHECK(s.n_ctx_train == 512);
  CHECK(s.rope_freq_base == Approx(500000.0));
  CHECK(s.rope_freq_scale == 1.0);
  CHECK(s.rms_eps == Approx(1e-6));
  CHECK(s.ffn_form == FfnForm::SwiGLU);
  CHECK_FALSE(s.tied_embeddings);
  CHECK_FALSE(s.sparse_layout);
  CHECK(load_error(f).empty());
}

TEST_CASE("model spec: tied embeddings, FFN forms, PWRI layout, rope scaling", "[model]") {
  SECTION("no output.weight means tied embeddings") {
    FileRecipe r;
    r.tied = true;
    const auto f = write_llama(r);
    CHECK(tc::model::read_model_spec(f).tied_embeddings);
    CHECK(load_error(f).empty());
  }
  SECTION("ffn form key") {
    for (auto [name, form] : {std::pair{"reglu", FfnForm::ReGLU}, std::pair{"drelu", FfnForm::DReLU},
                              std::pair{"swiglu", FfnForm::SwiGLU}}) {
      FileRecipe r;
      r.extra_keys = [name = std::string(name)](GgufWriter& w) {
        w.set(std::string(tc::model::kFfnFormKey), Value(name));
      };
      CHECK(tc::model::read_model_spec(write_llama(r)).ffn_form == form);
    }
  }
  SECTION("PWRI files default to ReGLU and use ffn_down_t") {
    FileRecipe r;
    r.magic = tc::gguf::Magic::PWRI;
    const auto f = write_llama(r);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.sparse_layout);
    CHECK(s.ffn_form == FfnForm::ReGLU);
    CHECK(load_error(f).empty());
  }
  SECTION("architecture bamboo: its own keys, dReLU in either layout") {
    for (auto magic : {tc::gguf::Magic::GGUF, tc::gguf::Magic::PWRI}) {
      FileRecipe r;
      r.arch = "bamboo";
      r.magic = magic;
      const auto f = write_llama(r);
      const auto s = tc::model::read_model_spec(f);
      CHECK(s.arch == "bamboo");
      CHECK(s.n_embd == 32);
      CHECK(s.n_head_kv == 2);
      CHECK(s.rms_eps == Approx(1e-6));
      CHECK(s.rope_freq_base == Approx(500000.0));
      CHECK(s.ffn_form == FfnForm::DReLU);
      CHECK(s.sparse_layout == (magic == tc::gguf::Magic::PWRI));
      CHECK(load_error(f).empty());
    }
    FileRecipe r;
    r.arch = "bamboo";
    r.extra_keys = [](GgufWriter& w) { w.set(std::string(tc::model::kFfnFormKey), Value("drelu")); };
    CHECK(tc::model::read_model_spec(write_llama(r)).ffn_form == FfnForm::DReLU);
  }
  SECTION("the architecture a writer names") {
    using tc::model::architecture_for;
    CHECK(architecture_for(FfnForm::DReLU, true) == "bamboo");
    CHECK(architecture_for(FfnForm::DReLU, false) == "llama");
    CHECK(architecture_for(FfnForm::ReGLU, true) == "llama");
    CHECK(architecture_for(FfnForm::SwiGLU, false) == "llama");
  }
  SECTION("linear rope scaling") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) {
      w.set("llama.rope.scaling.type", Value("linear"));
      w.set("llama.rope.scaling.factor", Value(4.0f));
    };
    CHECK(tc::model::read_model_spec(write_llama(r)).rope_freq_scale == Approx(0.25));
  }
}

TEST_CASE("model spec errors name the key", "[model]") {
  SECTION("missing embedding length") {
    FileRecipe r;
    r.omit_key_embd = true;
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("llama.embedding_length"));
    CHECK_THAT(msg, Catch::Contains("m.gguf"));
  }
  SECTION("head count not dividing n_embd") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set("llama.attention.head_count", Value(uint32_t{5})); };
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("llama.attention.head_count"));
  }
  SECTION("kv heads not dividing heads") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set("llama.attention.head_count_kv", Value(uint32_t{3})); };
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("head_count_kv"));
  }
  SECTION("unknown ffn form") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set(std::string(tc::model::kFfnFormKey), Value("gelu")); };
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("thermocline.ffn_form"));
    CHECK_THAT(msg, Catch::Contains("gelu"));
  }
  SECTION("wrong architecture") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set("general.architecture", Value("rwkv6")); };
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("general.architecture"));
    CHECK_THAT(msg, Catch::Contains("rwkv6"));
    CHECK_THAT(msg, Catch::Contains("llama, bamboo, qwen2"));
  }
  SECTION("bamboo reads bamboo.* keys, not llama.* ones") {
    FileRecipe r;
    r.omit_key_embd = true;
    r.arch = "bamboo";
    r.extra_keys = [](GgufWriter& w) { w.set("llama.embedding_length", Value(uint32_t{32})); };
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("bamboo.embedding_length"));
  }
  SECTION("bamboo with another ffn form") {
    for (const char* form : {"reglu", "swiglu"}) {
      FileRecipe r;
      r.arch = "bamboo";
      r.extra_keys = [form](GgufWriter& w) { w.set(std::string(tc::model::kFfnFormKey), Value(form)); };
      const auto msg = load_error(write_llama(r));
      CHECK_THAT(msg, Catch::Contains("thermocline.ffn_form"));
      CHECK_THAT(msg, Catch::Contains(form));
      CHECK_THAT(msg, Catch::Contains("'bamboo' is drelu"));
    }
  }
  SECTION("wrong type for a key") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set("llama.block_count", Value("two")); };
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("llama.block_count"));
  }
  SECTION("a block count beyond the file's tensors (found by model_load_fuzz: it sized the layer table)") {
    FileRecipe r;
    r.extra_keys = [](GgufWriter& w) { w.set("llama.block_count", Value(uint32_t{3'000'000'000u})); };
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("llama.block_count") && Catch::Contains("3000000000") &&
                        Catch::Contains("tensors"));
  }
}

TEST_CASE("model tensor checks name the tensor", "[model]") {
  SECTION("missing tensor") {
    FileRecipe r;
    r.skip = "blk.1.ffn_up.weight";
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("blk.1.ffn_up.weight"));
  }
  SECTION("wrong shape") {
    FileRecipe r;
    r.reshape = "blk.0.attn_k.weight";
    r.reshape_ne = {32, 32};
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("blk.0.attn_k.weight"));
    CHECK_THAT(msg, Catch::Contains("16"));
  }
  SECTION("norm weights must be f32") {
    FileRecipe r;
    r.norm_type = DType::F16;
    const auto msg = load_error(write_llama(r));
    CHECK_THAT(msg, Catch::Contains("norm"));
    CHECK_THAT(msg, Catch::Contains("f32"));
  }
  SECTION("a dense file without ffn_down") {
    FileRecipe r;
    r.skip = "blk.0.ffn_down.weight";
    CHECK_THAT(load_error(write_llama(r)), Catch::Contains("blk.0.ffn_down.weight"));
  }
}
