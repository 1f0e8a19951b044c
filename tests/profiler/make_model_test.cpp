// make-model: files load as models, are deterministic whatever the thread
// count, hold random (never zero) weights of the requested scale and types.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/loaded_model.h"
#include "kernels/cpu/quantize.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

using tc::kernels::DType;
using tc::profiler::MakeModelOptions;

namespace {

MakeModelOptions small_options(const std::filesystem::path& out) {
  MakeModelOptions o;
  o.output = out;
  o.n_vocab = 1024;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 128;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "q8_0";
  o.seed = 7;
  return o;
}

// Mean and sd of a tensor's values after dequantization.
std::pair<double, double> tensor_stats(const tc::gguf::GgufFile& f, const std::string& name) {
  const auto& info = f.tensor(name);
  const auto data = f.tensor_data(info);
  std::vector<float> row(static_cast<size_t>(info.ne[0]));
  const int64_t row_bytes = tc::kernels::row_bytes(info.dtype, info.ne[0]);
  double sum = 0, sum2 = 0;
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    tc::kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, row.data(), info.ne[0]);
    for (float v : row) {
      sum += v;
      sum2 += static_cast<double>(v) * v;
    }
  }
  const double n = static_cast<double>(info.n_elements());
  const double mean = sum / n;
  return {mean, std::sqrt(sum2 / n - mean * mean)};
}

}  // namespace

TEST_CASE("make-model writes a loadable llama model", "[profiler][make_model]") {
  const auto dir = tc::test::scratch_dir("make_model_load");
  auto o = small_options(dir / "m.gguf");
  o.ffn_form = tc::model::FfnForm::ReGLU;
  tc::profiler::make_model(o);
  const auto model = tc::model::load_model(o.output);
  CHECK(model->spec.n_vocab == 1024);
  CHECK(model->spec.n_embd == 64);
  CHECK(model->spec.n_head_kv == 2);
  CHECK(model->spec.ffn_form == tc::model::FfnForm::ReGLU);
  CHECK(model->tokenizer->n_vocab() == 1024);
  CHECK(model->tokenizer->vocab().chat_template.has_value());
  const auto ids = model->tokenizer->encode("the light of the world");
  CHECK(ids.size() >= 2);
  CHECK(model->tokenizer->decode(ids) == "the light of the world");
  CHECK(model->file.tensor("blk.1.ffn_gate.weight").dtype == DType::Q8_0);
  CHECK(model->file.tensor("output_norm.weight").dtype == DType::F32);
}

TEST_CASE("make-model is deterministic and thread-count independent", "[profiler][make_model]") {
  const auto dir = tc::test::scratch_dir("make_model_determinism");
  auto a = small_options(dir / "a.gguf");
  a.n_threads = 1;
  auto b = small_options(dir / "b.gguf");
  b.n_threads = 2;
  auto c = small_options(dir / "c.gguf");
  c.seed = 8;
  tc::profiler::make_model(a);
  tc::profiler::make_model(b);
  tc::profiler::make_model(c);
  const auto bytes_a = tc::test::read_file(a.output);
  CHECK(bytes_a == tc::test::read_file(b.output));
  CHECK(bytes_a != tc::test::read_file(c.output));
}

TEST_CASE("make-model weights are random with the requested scale", "[profiler][make_model]") {
  const auto dir = tc::test::scratch_dir("make_model_stats");
  auto o = small_options(dir / "m.gguf");
  o.weight_type = "f32";
  o.n_embd = 256;
  o.n_ff = 512;
  tc::profiler::make_model(o);
  const auto f = tc::gguf::GgufFile::open(o.output);
  // Matrices: N(0, 1/sqrt(fan_in)); norms: N(1, 0.1); embeddings N(0, 1).
  const auto [q_mean, q_sd] = tensor_stats(f, "blk.0.attn_q.weight");
  CHECK(std::abs(q_mean) < 0.01);
  CHECK(q_sd == Approx(1.0 / 16.0).epsilon(0.03));
  const auto [down_mean, down_sd] = tensor_stats(f, "blk.1.ffn_down.weight");
  CHECK(std::abs(down_mean) < 0.01);
  CHECK(down_sd == Approx(1.0 / std::sqrt(512.0)).epsilon(0.03));
  const auto [norm_mean, norm_sd] = tensor_stats(f, "blk.0.attn_norm.weight");
  CHECK(norm_mean == Approx(1.0).epsilon(0.05));
  CHECK(norm_sd == Approx(0.1).epsilon(0.3));
  const auto [e_mean, e_sd] = tensor_stats(f, "token_embd.weight");
  CHECK(std::abs(e_mean) < 0.01);
  CHECK(e_sd == Approx(1.0).epsilon(0.02));
}

TEST_CASE("make-model weight types, GQA, tied embeddings and the gpt2 tokenizer", "[profiler][make_model]") {
  const auto dir = tc::test::scratch_dir("make_model_types");
  SECTION("q4_k_m mixes q4_K and q6_K") {
    auto o = small_options(dir / "k.gguf");
    o.n_embd = 256;
    o.n_ff = 512;
    o.weight_type = "q4_k_m";
    tc::profiler::make_model(o);
    const auto f = tc::gguf::GgufFile::open(o.output);
    CHECK(f.tensor("blk.0.ffn_gate.weight").dtype == DType::Q4_K);
    CHECK(f.tensor("blk.0.ffn_down.weight").dtype == DType::Q6_K);
    CHECK(f.tensor("blk.0.attn_v.weight").dtype == DType::Q6_K);
    CHECK(f.tensor("output.weight").dtype == DType::Q6_K);
    CHECK(f.get_u64("general.file_type") == 15);
    CHECK_NOTHROW(tc::model::load_model(o.output));
  }
  SECTION("every plain weight type loads") {
    for (const char* t : {"f32", "f16", "bf16", "q4_0", "mxfp4"}) {
      auto o = small_options(dir / (std::string(t) + ".gguf"));
      o.weight_type = t;
      tc::profiler::make_model(o);
      const auto m = tc::model::load_model(o.output);
      CHECK(tc::kernels::dtype_name(m->file.tensor("blk.0.attn_q.weight").dtype) == t);
    }
  }
  SECTION("tied embeddings and gpt2 vocab") {
    auto o = small_options(dir / "tied.gguf");
    o.tied_embeddings = true;
    o.tokenizer = tc::text::TokenizerKind::Bpe;
    tc::profiler::make_model(o);
    const auto m = tc::model::load_model(o.output);
    CHECK(m->spec.tied_embeddings);
    CHECK(m->tokenizer->vocab().kind == tc::text::TokenizerKind::Bpe);
    CHECK(m->tokenizer->decode(m->tokenizer->encode("Hello, world!", {.add_special = false})) == "Hello, world!");
  }
  SECTION("inconsistent options are rejected") {
    auto o = small_options(dir / "bad.gguf");
    o.weight_type = "q4_k";  // n_embd 64 is not a multiple of 256
    CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("n_embd"));
    o.weight_type = "q8_0";
    o.n_head_kv = 3;
    CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("n_head_kv"));
    o.n_head_kv = 2;
    o.weight_type = "iq2_xxs";
    CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("iq2_xxs"));
  }
}

TEST_CASE("make-model writes a given chat template file, ChatML without one", "[profiler][make_model]") {
  const auto dir = tc::test::scratch_dir("make_model_template");
  MakeModelOptions o = small_options(dir / "chatml.gguf");
  tc::profiler::make_model(o);
  const auto chatml = tc::model::load_model(o.output);
  CHECK(chatml->tokenizer->vocab().chat_template.value_or("").find("<|im_start|>") != std::string::npos);

  const auto source = tc::test::source_dir() / "tests" / "data" / "chat_templates" / "templates" / "gemma3.jinja";
  o.output = dir / "gemma3_template.gguf";
  o.chat_template_file = source;
  tc::profiler::make_model(o);
  const auto model = tc::model::load_model(o.output);
  CHECK(model->tokenizer->vocab().chat_template == tc::test::read_file(source));

  o.chat_template_file = dir / "missing.jinja";
  CHECK_THROWS_WITH(tc::profiler::make_model(o), Catch::Contains("chat template") && Catch::Contains("missing.jinja"));
}
