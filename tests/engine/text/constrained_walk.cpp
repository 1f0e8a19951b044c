// constrained_walk (see constrained_walk.h).
#include "tests/engine/text/constrained_walk.h"

#include <catch2/catch.hpp>

#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/text/json_schema_prefix.h"
#include "tests/engine/text/text_test_util.h"

namespace tc::text::test {

ConstrainedWalk constrained_walk(const std::shared_ptr<const runtime::ConstraintTokenTable>& table,
                                 const runtime::OutputForm& form, TokenId eos, uint64_t seed, std::mt19937& rng,
                                 const std::function<bool(const std::string&)>& is_prefix, int max_steps) {
  runtime::SamplingParams params;
  params.seed = seed;
  params.n_probs = 3;
  const auto n_vocab = static_cast<int32_t>(table->bytes.size());
  runtime::Sampler sampler(params, n_vocab);
  sampler.constrain(table, form);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  ConstrainedWalk walk;
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (int step = 0; step < max_steps; ++step) {
    for (float& v : logits) v = normal(rng);
    logits[static_cast<size_t>(eos)] = 8.0f;
    const auto r = sampler.sample(logits);
    CAPTURE(walk.text);
    REQUIRE(r.status == runtime::SampleStatus::Ok);
    for (const auto& alt : r.top_logprobs()) {
      if (alt.token == eos) {
        REQUIRE(sampler.constraint_complete());
      } else {
        REQUIRE(is_prefix(walk.text + table->bytes[static_cast<size_t>(alt.token)]));
      }
    }
    if (r.token == eos) {
      REQUIRE(sampler.constraint_complete());
      walk.closed = true;
      return walk;
    }
    REQUIRE_FALSE(sampler.constraint_complete());  // once whole only the end may come
    walk.text += table->bytes[static_cast<size_t>(r.token)];
    sampler.accept(r.token);
    REQUIRE(is_prefix(walk.text));
  }
  return walk;
}

std::vector<std::string> closed_schema_walks(const std::shared_ptr<const JsonSchema>& schema, TokenizerKind kind,
                                             int n_walks, uint32_t rng_seed) {
  const auto& tokenizer = trained_tokenizer(kind, 600);
  const auto table = runtime::ConstraintTokenTable::from(tokenizer, tokenizer.n_vocab());
  std::mt19937 rng(rng_seed);
  std::vector<std::string> closed;
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(n_walks); ++seed) {
    const auto walk = constrained_walk(table, runtime::OutputForm::json_schema(schema), tokenizer.vocab().eos_id, seed,
                                       rng, [&](const std::string& text) {
                                         return JsonSchemaPrefix(schema.get()).accepts(text);
                                       });
    if (walk.closed) closed.push_back(walk.text);
  }
  REQUIRE(closed.size() * 3 >= static_cast<size_t>(n_walks) * 2);
  return closed;
}

}  // namespace tc::text::test
