// A constrained sampler's walk on random logits, shared by the tests of the
// constrained-output forms (JSON mode, JSON Schema, forced tool calls).
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/runtime/output_constraint.h"
#include "engine/text/json_schema.h"
#include "engine/text/vocab.h"

namespace tc::text::test {

struct ConstrainedWalk {
  std::string text;     // the bytes of the tokens drawn (the end token not included)
  bool closed = false;  // the end token came, with the text whole
};

// Draws up to max_steps tokens with `form`'s constraint: logits N(0, 2) from
// `rng`, the end token's at 8 (it is the most likely wherever it may come).
// REQUIREs after every draw that the sampler found a token, that the end
// token comes only when the text is whole and nothing else then, that
// `is_prefix(text)` holds, and that the top-3 alternatives the sampler
// reports fit too (it reports the constrained distribution).
ConstrainedWalk constrained_walk(const std::shared_ptr<const runtime::ConstraintTokenTable>& table,
                                 const runtime::OutputForm& form, TokenId eos, uint64_t seed, std::mt19937& rng,
                                 const std::function<bool(const std::string&)>& is_prefix, int max_steps = 3000);

// The texts that closed of `n_walks` such walks (seeds 1..n_walks) with
// `schema`'s constraint, on the trained `kind` tokenizer of 600 tokens;
// REQUIREs that at least two thirds of them closed.
std::vector<std::string> closed_schema_walks(const std::shared_ptr<const JsonSchema>& schema, TokenizerKind kind,
                                             int n_walks, uint32_t rng_seed);

}  // namespace tc::text::test
