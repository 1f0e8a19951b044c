// Images in prompts (model/prompt_image.h): placeholder ids whose rows are
// an image's embeddings. A prompt whose image rows are exactly some tokens'
// scaled embeddings must generate exactly what those tokens do; the cached
// prefix is reused for the same image and never for another.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "kernels/cpu/quantize.h"
#include "tests/engine/runtime/engine_test_util.h"

using namespace engine_test;

namespace {

// A Gemma 3 model: its token embeddings are scaled by sqrt(n_embd), image rows are not.
const std::filesystem::path& gemma_path() {
  static const std::filesystem::path path = [] {
    tc::profiler::MakeModelOptions o;
    o.arch = "gemma3";
    o.output = tc::test::scratch_dir("engine_image_model") / "g.gguf";
    o.n_vocab = kVocab;
    o.n_embd = 64;
    o.n_layer = 2;
    o.n_ff = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    o.n_ctx = kCtxTrain;
    o.weight_type = "q8_0";
    o.seed = 31;
    o.n_threads = 2;
    tc::profiler::make_model(o);
    return o.output;
  }();
  return path;
}

// The rows the forward pass computes for `ids` as tokens: the dequantized
// embedding times the model's scale, in f32 as the backend does it.
std::shared_ptr<const std::vector<float>> embedding_rows(const std::vector<TokenId>& ids, float scale) {
  const auto file = tc::gguf::GgufFile::open(gemma_path());
  const auto& info = file.tensor("token_embd.weight");
  const int64_t n = info.ne[0];
  const auto row_bytes = static_cast<size_t>(tc::kernels::row_bytes(info.dtype, n));
  auto rows = std::make_shared<std::vector<float>>(ids.size() * static_cast<size_t>(n));
  for (size_t i = 0; i < ids.size(); ++i) {
    float* dst = rows->data() + i * static_cast<size_t>(n);
    tc::kernels::dequantize_row(info.dtype, file.tensor_data(info).data() + static_cast<size_t>(ids[i]) * row_bytes,
                                dst, n);
    for (int64_t k = 0; k < n; ++k) dst[k] *= scale;
  }
  return rows;
}

tc::model::PromptImage image_of(uint64_t block, std::shared_ptr<const std::vector<float>> rows, int64_t n_tokens) {
  return {tc::model::image_token_block(block), n_tokens, std::move(rows)};
}

// prompt[0, at) + the image's placeholders + prompt[at, end).
std::vector<TokenId> with_placeholders(const std::vector<TokenId>& prompt, size_t at,
                                       const tc::model::PromptImage& image) {
  std::vector<TokenId> out(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(at));
  for (int64_t t = 0; t < image.n_tokens; ++t) out.push_back(image.first_id + static_cast<TokenId>(t));
  out.insert(out.end(), prompt.begin() + static_cast<std::ptrdiff_t>(at), prompt.end());
  return out;
}

}  // namespace

TEST_CASE("engine: image rows equal to tokens' embeddings generate what the tokens do", "[engine][vision]") {
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(gemma_path());
  REQUIRE(model->spec.embd_scale != 1.0f);
  const std::vector<TokenId> stand_ins = {17, 300, 42, 42, 9};
  const auto rows = embedding_rows(stand_ins, model->spec.embd_scale);
  const auto image = image_of(77, rows, static_cast<int64_t>(stand_ins.size()));
  const auto text = random_prompt(12, 5);
  auto as_tokens = text;
  as_tokens.insert(as_tokens.begin() + 4, stand_ins.begin(), stand_ins.end());
  GenerationRequest with_image = request(with_placeholders(text, 4, image), 12);
  with_image.images = {image};
  // Also across prefill chunks that cut the image (n_batch 7).
  const auto n_batch = GENERATE(int64_t{512}, int64_t{7});
  const Outcome want = alone(request(as_tokens, 12), n_batch, model);
  const Outcome got = alone(with_image, n_batch, model);
  check_finished(got, FinishReason::Length);
  CHECK(got.tokens == want.tokens);
  REQUIRE(got.infos.size() == want.infos.size());
  for (size_t i = 0; i < got.infos.size(); ++i) CHECK(got.infos[i].logprob == want.infos[i].logprob);
  // Rows that are not those embeddings change the outcome.
  GenerationRequest other = with_image;
  other.images[0].rows = embedding_rows({5, 6, 7, 8, 9}, model->spec.embd_scale);
  CHECK(alone(other, n_batch, model).infos.front().logprob != want.infos.front().logprob);
}

TEST_CASE("engine: the same image reuses the cached prefix, another image does not", "[engine][vision]") {
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(gemma_path());
  Engine engine(model, options(1));
  const auto text = random_prompt(10, 8);
  const auto first_image = image_of(5, embedding_rows({11, 12, 13}, 2.0f), 3);
  GenerationRequest first = request(with_placeholders(text, 3, first_image), 4);
  first.images = {first_image};
  check_finished(collect(*submit(engine, first)), FinishReason::Length);
  const Outcome again = collect(*submit(engine, first));
  CHECK(again.last.usage.cached_tokens == static_cast<int64_t>(first.prompt.size()) - 1);
  // Another image has other ids (its content's block): only the text before it is reused.
  const auto second_image = image_of(6, embedding_rows({14, 15, 16}, 2.0f), 3);
  GenerationRequest second = request(with_placeholders(text, 3, second_image), 4);
  second.images = {second_image};
  CHECK(collect(*submit(engine, second)).last.usage.cached_tokens == 3);
}

TEST_CASE("engine: placeholders without their image, or an image of the wrong width, are refused",
          "[engine][vision]") {
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(gemma_path());
  Engine engine(model, options(1));
  const auto image = image_of(9, embedding_rows({1, 2}, 1.0f), 2);
  GenerationRequest orphan = request(with_placeholders(random_prompt(5, 1), 2, image), 2);
  auto result = engine.submit(orphan);
  CHECK(result.status == SubmitStatus::InvalidRequest);
  CHECK_THAT(result.message, Catch::Contains("out of range"));
  GenerationRequest narrow = orphan;
  narrow.images = {image_of(9, std::make_shared<std::vector<float>>(2 * 10, 0.0f), 2)};
  result = engine.submit(narrow);
  CHECK(result.status == SubmitStatus::InvalidRequest);
  CHECK_THAT(result.message, Catch::Contains("does not fit"));
}

TEST_CASE("engine: lookup drafts never propose an image's placeholders", "[engine][vision]") {
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(gemma_path());
  EngineOptions o = options(1);
  o.lookup_draft.n_max = 4;
  Engine engine(model, o);
  const auto image = image_of(3, embedding_rows({20, 21, 22}, 1.0f), 3);
  // "a b <image> c ... a b": the n-gram "a b" was followed by the image before.
  std::vector<TokenId> prompt = {1, 50, 51};
  for (int64_t t = 0; t < 3; ++t) prompt.push_back(image.first_id + static_cast<TokenId>(t));
  for (TokenId t : {60, 61, 62, 50, 51}) prompt.push_back(t);
  GenerationRequest r = request(prompt, 8);
  r.images = {image};
  const Outcome out = collect(*submit(engine, r));
  check_finished(out, FinishReason::Length);
  CHECK(out.tokens.size() == 8);
}

TEST_CASE("engine: a bidirectional image is never cut across prefill steps", "[engine][vision]") {
  const std::shared_ptr<const tc::model::LoadedModel> model = tc::model::load_model(gemma_path());
  auto image = image_of(12, embedding_rows({30, 31, 32, 33, 34}, 3.0f), 5);
  image.bidirectional = true;
  GenerationRequest r = request(with_placeholders(random_prompt(12, 6), 4, image), 6);
  r.images = {image};
  const Outcome whole = alone(r, 512, model);
  check_finished(whole, FinishReason::Length);
  // Budgets of 7 (the image would start at 4 and be cut at 7) and 3 (shorter than the image).
  for (const int64_t n_batch : {int64_t{7}, int64_t{3}}) {
    INFO("n_batch " << n_batch);
    const Outcome chunked = alone(r, n_batch, model);
    CHECK(chunked.tokens == whole.tokens);
    REQUIRE(chunked.infos.size() == whole.infos.size());
    for (size_t i = 0; i < whole.infos.size(); ++i) CHECK(chunked.infos[i].logprob == whole.infos[i].logprob);
  }
  GenerationRequest causal = r;
  causal.images[0].bidirectional = false;
  CHECK(alone(causal, 512, model).infos.front().logprob != whole.infos.front().logprob);
}
