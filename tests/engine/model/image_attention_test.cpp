// A bidirectional image's rows attend to each other (Gemma 3's images, as
// llama.cpp decodes them non-causally), every other token causally. On a
// one-layer model a row's logits depend only on what its attention sees of
// the embeddings, so: the rows before the image, its last row and the rows
// after it are the same bits as with a causal image; its other rows differ;
// and the image cut across two steps still sees what each step holds.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

namespace {

using tc::model::PromptImage;
using tc::text::TokenId;

struct OneLayer {
  std::unique_ptr<tc::model::LoadedModel> loaded;
  std::unique_ptr<tc::kernels::Backend> backend;
  std::unique_ptr<tc::model::LlamaModel> model;
};

OneLayer one_layer_gemma() {
  tc::profiler::MakeModelOptions o;
  o.arch = "gemma3";
  o.output = tc::test::scratch_dir("image_attention") / "g.gguf";
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 1;
  o.n_ff = 128;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f32";
  o.seed = 5;
  tc::profiler::make_model(o);
  OneLayer m;
  m.loaded = tc::model::load_model(o.output);
  m.backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  m.model = std::make_unique<tc::model::LlamaModel>(*m.loaded, *m.backend);
  return m;
}

// Every position's logits, the tokens fed in steps of the given sizes.
std::vector<float> logits_in_steps(OneLayer& m, const std::vector<TokenId>& tokens, const PromptImage& image,
                                   const std::vector<size_t>& steps) {
  tc::runtime::KvCache kv(*m.backend, m.model->spec(), 1, 64);
  std::vector<float> all, logits;
  size_t at = 0;
  for (const size_t n : steps) {
    tc::model::StepSequence step{0, std::span(tokens).subspan(at, n), true};
    step.images = std::span(&image, 1);
    REQUIRE(m.model->forward({&step, 1}, kv, logits) == tc::model::StepStatus::Ok);
    all.insert(all.end(), logits.begin(), logits.end());
    at += n;
  }
  return all;
}

}  // namespace

TEST_CASE("a bidirectional image's rows see the whole image, the other tokens stay causal", "[model][vision]") {
  OneLayer m = one_layer_gemma();
  const int64_t n_vocab = m.model->spec().n_vocab;
  const int64_t n_embd = m.model->spec().n_embd;
  PromptImage causal{tc::model::image_token_block(1), 4,
                     std::make_shared<std::vector<float>>(tc::test::random_floats(static_cast<size_t>(4 * n_embd), 9))};
  PromptImage bidirectional = causal;
  bidirectional.bidirectional = true;
  // BOS, a word, the image's 4 rows (positions 2..5), two words.
  std::vector<TokenId> tokens = {2, 40};
  for (TokenId t = 0; t < 4; ++t) tokens.push_back(causal.first_id + t);
  tokens.insert(tokens.end(), {41, 42});
  const auto base = logits_in_steps(m, tokens, causal, {tokens.size()});
  const auto both = logits_in_steps(m, tokens, bidirectional, {tokens.size()});
  auto row = [&](const std::vector<float>& l, size_t p) {
    return std::vector<float>(l.begin() + static_cast<std::ptrdiff_t>(p * n_vocab),
                              l.begin() + static_cast<std::ptrdiff_t>((p + 1) * n_vocab));
  };
  for (const size_t p : {0, 1, 5, 6, 7}) {
    INFO("position " << p);
    CHECK(row(both, p) == row(base, p));
  }
  for (const size_t p : {2, 3, 4}) {
    INFO("position " << p);
    CHECK(row(both, p) != row(base, p));
  }
  // Cut after its second row: the first two rows see only those two, then
  // the last two see all four (and everything before).
  const auto cut = logits_in_steps(m, tokens, bidirectional, {4, 4});
  for (const size_t p : {0, 1, 4, 5, 6, 7}) {
    INFO("position " << p);
    CHECK(row(cut, p) == row(both, p));
  }
  CHECK(row(cut, 3) == row(base, 3));  // the step's last row: causal and bidirectional agree there
  CHECK(row(cut, 2) != row(both, 2));
}
