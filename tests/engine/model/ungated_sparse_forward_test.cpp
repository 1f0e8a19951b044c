// The sparse FFN on an ungated relu(up)^2 FFN (Arcee's graph) against the
// float64 reference. The predictors are exact by construction: neuron i
// fires iff up_i · rms_norm(x) > 0, and RMSNorm only scales x by a positive
// number, so the sign of (up_i ⊙ ffn_norm) · x decides it. fc1 holds those
// rows and their negations, fc2 [I, -I] turns the pair back into the
// pre-activation (relu(a) - relu(-a) = a), threshold 0. The sparse pass then
// computes only the firing neurons, and its logits must be the dense
// reference's: what is left out is exactly the zeros.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/engine/model/step_logits.h"
#include "tests/test_util.h"

namespace {

using tc::model::FfnMode;
using tc::model::LlamaModel;

constexpr int64_t kVocab = 512;
constexpr int64_t kEmbd = 128;
constexpr int64_t kFf = 512;
constexpr int64_t kLayers = 2;

// f32 bytes of a row-major [rows][cols] table (GGUF ne = {cols, rows}).
std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A copy of the arcee file `f` with exact predictors for every layer:
// fc1 {n_embd, 2 n_ff}: rows k and n_ff + k are (up_k ⊙ ffn_norm) and its
// negation; fc2 {2 n_ff, n_ff}: row i is +1 at i and -1 at n_ff + i.
tc::gguf::GgufFile with_exact_predictors(const tc::gguf::GgufFile& f) {
  return tc::test::copy_gguf(f, "ungated_sparse_exact", "", [&f](tc::gguf::GgufWriter& w) {
    for (int64_t l = 0; l < kLayers; ++l) {
      const auto up = tc::test::load_matrix(f, tc::model::layer_tensor_name(l, "ffn_up"));
      const auto norm = tc::test::load_matrix(f, tc::model::layer_tensor_name(l, "ffn_norm"))[0];
      std::vector<float> fc1(static_cast<size_t>(2 * kFf * kEmbd));
      for (int64_t k = 0; k < kFf; ++k) {
        for (int64_t c = 0; c < kEmbd; ++c) {
          const auto v = static_cast<float>(up[static_cast<size_t>(k)][static_cast<size_t>(c)] *
                                            norm[static_cast<size_t>(c)]);
          fc1[static_cast<size_t>(k * kEmbd + c)] = v;
          fc1[static_cast<size_t>((kFf + k) * kEmbd + c)] = -v;
        }
      }
      std::vector<float> fc2(static_cast<size_t>(kFf * 2 * kFf), 0.0f);
      for (int64_t i = 0; i < kFf; ++i) {
        fc2[static_cast<size_t>(i * 2 * kFf + i)] = 1.0f;
        fc2[static_cast<size_t>(i * 2 * kFf + kFf + i)] = -1.0f;
      }
      w.add_tensor(tc::model::layer_tensor_name(l, "fc1"), tc::kernels::DType::F32, {kEmbd, 2 * kFf}, f32_bytes(fc1));
      w.add_tensor(tc::model::layer_tensor_name(l, "fc2"), tc::kernels::DType::F32, {2 * kFf, kFf}, f32_bytes(fc2));
    }
  });
}

}  // namespace

TEST_CASE("the sparse FFN of an ungated relu(up)^2 model matches the float64 reference with exact predictors",
          "[model][sparse]") {
  tc::profiler::MakeModelOptions o;
  o.arch = "arcee";
  o.output = tc::test::scratch_dir("ungated_sparse_forward") / "arcee.gguf";
  o.n_vocab = kVocab;
  o.n_embd = kEmbd;
  o.n_layer = kLayers;
  o.n_ff = kFf;
  o.n_head = 4;
  o.n_head_kv = 1;
  o.n_ctx = 128;
  o.weight_type = "f32";
  o.seed = 31;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  const auto plain = tc::gguf::GgufFile::open(o.output);
  const auto exact = with_exact_predictors(plain);
  const auto loaded = tc::model::load_model(exact.path());
  REQUIRE(loaded->spec.ffn_form == tc::model::FfnForm::ReluSquared);
  REQUIRE_FALSE(loaded->predictors.empty());

  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  LlamaModel sparse(*loaded, *backend, {.ffn_mode = FfnMode::Sparse});
  const auto tokens = tc::test::random_tokens(12, 5, kVocab);
  const auto all = tc::test::decode_each_logits(sparse, *backend, tokens);
  const auto ref = tc::test::reference_logits(loaded->file, loaded->spec, tokens);
  for (size_t p = 0; p < tokens.size(); ++p) {
    INFO("position " << p);
    CHECK(tc::test::relative_error(all.data() + p * kVocab, ref[p]) < 1e-4);
  }
  // It ran sparse on every step, over the firing neurons only: about half
  // of relu(up) fires on random weights.
  const auto& c = *sparse.sparse_counters();
  CHECK(c.sparse_steps == 12);
  CHECK(c.dense_steps == 0);
  for (int64_t l = 0; l < kLayers; ++l) {
    const auto i = static_cast<size_t>(l);
    const double computed = static_cast<double>(c.computed[i]) / (12.0 * static_cast<double>(kFf));
    INFO("layer " << l << " computed " << computed);
    CHECK(computed > 0.2);
    CHECK(computed < 0.8);
  }
}
