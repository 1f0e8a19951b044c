// Mixture-of-experts models (llama with experts, as Mixtral; qwen3moe):
// the routing against float64, the forward pass against the float64
// reference, batch and repack invariance, the file checks and the modes
// that refuse experts. llama.cpp's own forward pass on the same files is
// tests/oracle/arch_oracle_test.cpp's.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/gguf/gguf_writer.h"
#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "engine/model/moe_ffn_block.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/reference_forward.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/test_util.h"

using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::runtime::KvCache;
using tc::text::TokenId;
using tc::test::random_tokens;

namespace {

constexpr int64_t kVocab = 512;

tc::profiler::MakeModelOptions moe_options(const std::string& name, const std::string& type) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("moe_" + name) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 96;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_expert = 6;
  o.n_expert_used = 2;
  o.weight_type = type;
  o.rope_freq_base = 10000.0;
  o.seed = 21;
  o.n_threads = 2;
  if (type == "q4_0" || type == "q8_0") o.n_ff = 128;  // whole 32-blocks in ffn_down's rows
  return o;
}

struct MoeModel {
  std::unique_ptr<tc::model::LoadedModel> loaded;
  std::unique_ptr<tc::kernels::Backend> backend;
  std::unique_ptr<LlamaModel> model;
};

MoeModel load(const tc::profiler::MakeModelOptions& o, tc::model::ForwardOptions options = {}) {
  tc::profiler::make_model(o);
  MoeModel m;
  m.loaded = tc::model::load_model(o.output);
  m.backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  m.model = std::make_unique<LlamaModel>(*m.loaded, *m.backend, options);
  return m;
}

std::vector<float> one_pass(LlamaModel& model, tc::kernels::Backend& backend, const std::vector<TokenId>& tokens) {
  KvCache kv(backend, model.spec(), 1, 64);
  std::vector<float> logits;
  const StepSequence seq{0, tokens, true};
  REQUIRE(model.forward({&seq, 1}, kv, logits) == StepStatus::Ok);
  return logits;
}

// route_experts on fresh logits (normal, sd 2) and a fresh selection bias
// (uniform in +-bias_range) for n_tokens tokens.
struct RandomRouting {
  std::vector<float> logits;   // [n_tokens, n_expert]
  std::vector<float> bias;     // [n_expert]
  std::vector<int32_t> experts;  // [n_tokens, k]
  std::vector<float> weights;    // [n_tokens, k]
};
RandomRouting route_random(std::mt19937& rng, float bias_range, int64_t n_tokens, int64_t n_expert, int64_t k,
                           tc::model::Routing routing) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_real_distribution<float> uniform(-bias_range, bias_range);
  RandomRouting r;
  r.logits.resize(static_cast<size_t>(n_tokens * n_expert));
  for (float& l : r.logits) l = normal(rng);
  r.bias.resize(static_cast<size_t>(n_expert));
  for (float& b : r.bias) b = uniform(rng);
  r.experts.resize(static_cast<size_t>(n_tokens * k));
  r.weights.resize(r.experts.size());
  routing.selection_bias = r.bias.data();
  tc::model::route_experts(r.logits.data(), n_tokens, n_expert, k, r.experts.data(), r.weights.data(), routing);
  return r;
}

}  // namespace

TEST_CASE("expert routing picks the most probable experts and renormalises their probabilities", "[model][moe]") {
  // Softmax gating renormalised, and gpt-oss's softmax over the chosen
  // logits: the same weights in exact arithmetic.
  const auto gating = GENERATE(tc::model::ExpertGating::Softmax, tc::model::ExpertGating::SoftmaxOfChosen);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const auto& [n_expert, k] : {std::pair<int64_t, int64_t>{8, 2}, {128, 8}, {5, 5}, {3, 1}, {32, 4}}) {
    INFO(n_expert << " experts, " << k << " used, gating " << static_cast<int>(gating));
    const int64_t n_tokens = 9;
    std::vector<float> logits(static_cast<size_t>(n_tokens * n_expert));
    for (float& l : logits) l = normal(rng);
    std::vector<int32_t> experts(static_cast<size_t>(n_tokens * k));
    std::vector<float> weights(experts.size());
    tc::model::route_experts(logits.data(), n_tokens, n_expert, k, experts.data(), weights.data(),
                             {.normalize = true, .gating = gating});
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* l = logits.data() + t * n_expert;
      std::vector<int32_t> order(static_cast<size_t>(n_expert));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return l[a] > l[b]; });
      // The renormalised softmax of the chosen ones is a softmax over them alone.
      double sum = 0;
      for (int64_t s = 0; s < k; ++s) sum += std::exp(static_cast<double>(l[order[static_cast<size_t>(s)]]));
      double total = 0;
      for (int64_t s = 0; s < k; ++s) {
        const size_t i = static_cast<size_t>(t * k + s);
        CHECK(experts[i] == order[static_cast<size_t>(s)]);
        const double want = std::exp(static_cast<double>(l[experts[i]])) / sum;
        CHECK(std::abs(weights[i] - want) <= 1e-6 * std::max(1.0, want));
        total += weights[i];
      }
      CHECK(std::abs(total - 1.0) < 1e-6);
    }
  }
}

TEST_CASE("sigmoid routing chooses by the biased sigmoids and weighs by the unbiased ones", "[model][moe]") {
  // DeepSeek V3's and GLM-4.5's routing against float64: sigmoid(l_e) +
  // bias_e ranks the experts, the chosen ones weigh sigmoid(l_e),
  // renormalised or not, then times the scale.
  std::mt19937 rng(11);
  for (const bool normalize : {true, false}) {
    for (const float scale : {0.0f, 2.5f}) {
      for (const auto& [n_expert, k] : {std::pair<int64_t, int64_t>{8, 2}, {128, 8}, {16, 16}}) {
        INFO(n_expert << " experts, " << k << " used, normalize " << normalize << ", scale " << scale);
        const int64_t n_tokens = 7;
        const auto [logits, bias, experts, weights] = route_random(
            rng, 0.5f, n_tokens, n_expert, k,
            {.normalize = normalize, .gating = tc::model::ExpertGating::Sigmoid, .scale = scale});
        for (int64_t t = 0; t < n_tokens; ++t) {
          const float* l = logits.data() + t * n_expert;
          auto sigmoid = [&](int32_t e) { return 1.0 / (1.0 + std::exp(-static_cast<double>(l[e]))); };
          std::vector<int32_t> order(static_cast<size_t>(n_expert));
          std::iota(order.begin(), order.end(), 0);
          std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
            return sigmoid(a) + bias[static_cast<size_t>(a)] > sigmoid(b) + bias[static_cast<size_t>(b)];
          });
          double sum = 0;
          for (int64_t s = 0; s < k; ++s) sum += sigmoid(order[static_cast<size_t>(s)]);
          for (int64_t s = 0; s < k; ++s) {
            const size_t i = static_cast<size_t>(t * k + s);
            CHECK(experts[i] == order[static_cast<size_t>(s)]);
            double want = sigmoid(order[static_cast<size_t>(s)]) / (normalize ? sum : 1.0);
            if (scale != 0.0f) want *= scale;
            CHECK(std::abs(weights[i] - want) <= 1e-6 * std::max(1.0, want));
          }
        }
      }
    }
  }
}

TEST_CASE("a mixture of experts' logits match the float64 reference", "[model][moe][forward]") {
  // The reference dequantizes the same weights; f32 differs only in the
  // order of sums, the quantized types by the int8 activations as well.
  // Those roundings move the router's probabilities too: a position where
  // the last chosen expert and the next are nearly tied may route the other
  // way here, and change every later position through attention. The
  // positions before the first near-tie (a gap under `min_gap`) are compared.
  struct Case {
    const char* type;
    double tolerance;
    double min_gap;
    uint64_t token_seed;  // prompts with no near-tie in their first 6 positions
  };
  const Case cases[] = {{"f32", 1e-4, 1e-5, 5}, {"f16", 1e-3, 1e-4, 5}, {"q8_0", 3e-2, 5e-3, 5},
                        {"q4_0", 3e-2, 5e-3, 7}};
  for (const auto& [type, tolerance, min_gap, token_seed] : cases) {
    INFO(type);
    auto m = load(moe_options(std::string("ref_") + type, type));
    REQUIRE(m.loaded->spec.n_expert == 6);
    REQUIRE(m.loaded->spec.n_expert_used == 2);
    const auto tokens = random_tokens(12, token_seed, kVocab);
    const auto logits = one_pass(*m.model, *m.backend, tokens);
    std::vector<double> gaps;
    const auto ref = tc::test::reference_logits(m.loaded->file, m.loaded->spec, tokens, {}, {}, &gaps);
    size_t compared = 0;
    while (compared < tokens.size() && gaps[compared] > min_gap) ++compared;
    WARN(type << ": " << compared << " positions before a near-tie");
    REQUIRE(compared >= 6);
    for (size_t p = 0; p < compared; ++p) {
      INFO("position " << p);
      CHECK(tc::test::relative_error(logits.data() + p * kVocab, ref[p]) < tolerance);
    }
    // Every (token, chosen expert) pair ran once per layer, over several experts.
    const auto& counts = m.model->moe_ffn()->expert_tokens();
    for (const auto& layer : counts) {
      CHECK(std::accumulate(layer.begin(), layer.end(), int64_t{0}) == 12 * 2);
      CHECK(std::count_if(layer.begin(), layer.end(), [](int64_t c) { return c > 0; }) >= 3);
    }
  }
}

TEST_CASE("routing within groups keeps the experts of the best groups", "[model][moe]") {
  // DeepSeek V3's: a group scores the sum of its two best selection values
  // (probability plus bias); the experts come from the `used` best groups.
  // Softmax with a selection bias (ERNIE 4.5) and sigmoid (V3) alike.
  std::mt19937 rng(13);
  for (const auto gating : {tc::model::ExpertGating::Softmax, tc::model::ExpertGating::Sigmoid}) {
    for (const auto& [n_expert, groups, used, k] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{16, 4, 2, 4},
                                                     {64, 8, 4, 8}, {8, 4, 1, 2}, {12, 3, 3, 3}}) {
      INFO(n_expert << " experts in " << groups << " groups, " << used << " used, k " << k);
      const int64_t n_tokens = 9;
      const auto [logits, bias, experts, weights] = route_random(
          rng, 0.2f, n_tokens, n_expert, k,
          {.normalize = true, .gating = gating, .groups = groups, .groups_used = used});
      const int64_t per_group = n_expert / groups;
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* l = logits.data() + t * n_expert;
        std::vector<double> p(static_cast<size_t>(n_expert));
        double total = 0;
        for (size_t e = 0; e < p.size(); ++e) {
          p[e] = gating == tc::model::ExpertGating::Sigmoid ? 1.0 / (1.0 + std::exp(-static_cast<double>(l[e])))
                                                             : std::exp(static_cast<double>(l[e]));
          total += p[e];
        }
        if (gating == tc::model::ExpertGating::Softmax) {
          for (double& v : p) v /= total;
        }
        std::vector<double> sel(p.size());
        for (size_t e = 0; e < sel.size(); ++e) sel[e] = p[e] + bias[e];
        // Brute force: every group's two best, the best groups, then the best experts in them.
        std::vector<std::pair<double, int64_t>> group_score;
        for (int64_t g = 0; g < groups; ++g) {
          std::vector<double> v(sel.begin() + g * per_group, sel.begin() + (g + 1) * per_group);
          std::sort(v.rbegin(), v.rend());
          group_score.emplace_back(v[0] + v[1], g);
        }
        std::stable_sort(group_score.begin(), group_score.end(),
                         [](const auto& a, const auto& b) { return a.first > b.first; });
        std::vector<int32_t> allowed;
        for (int64_t i = 0; i < used; ++i) {
          for (int64_t e = 0; e < per_group; ++e) allowed.push_back(static_cast<int32_t>(group_score[i].second * per_group + e));
        }
        std::stable_sort(allowed.begin(), allowed.end(), [&](int32_t a, int32_t b) { return sel[a] > sel[b]; });
        double chosen = 0;
        for (int64_t s = 0; s < k; ++s) chosen += p[static_cast<size_t>(allowed[static_cast<size_t>(s)])];
        for (int64_t s = 0; s < k; ++s) {
          const size_t i = static_cast<size_t>(t * k + s);
          CHECK(experts[i] == allowed[static_cast<size_t>(s)]);
          const double want = p[static_cast<size_t>(allowed[static_cast<size_t>(s)])] / chosen;
          CHECK(std::abs(weights[i] - want) <= 1e-6 * std::max(1.0, want));
        }
      }
    }
  }
}

TEST_CASE("DeepSeek's form of a mixture matches float64 on fresh rows", "[model][moe]") {
  // GLM-4.5's block (glm4moe, f32): sigmoid routing chosen with the
  // selection bias, renormalised, times 2.5, plus the ungated shared
  // expert, for random input rows, against float64 from the file's tensors.
  auto o = moe_options("deepseek", "f32");
  o.arch = "glm4moe";
  tc::profiler::make_model(o);
  const auto loaded = tc::model::load_model(o.output);
  const auto& spec = loaded->spec;
  REQUIRE(spec.layer_has_experts(1));
  const auto weights = tc::model::map_llama_weights(loaded->file, spec);
  auto backend = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
  tc::model::MoeFfnBlock block(spec, *backend);
  auto layer = [](const char* t) { return tc::model::layer_tensor_name(1, t); };
  const auto& f = loaded->file;
  const auto router = tc::test::load_matrix(f, layer("ffn_gate_inp"));
  const auto gate = tc::test::load_matrix(f, layer("ffn_gate_exps"));
  const auto up = tc::test::load_matrix(f, layer("ffn_up_exps"));
  const auto down = tc::test::load_matrix(f, layer("ffn_down_exps"));
  const auto bias = tc::test::load_matrix(f, "blk.1.exp_probs_b.bias")[0];
  const auto sh_gate = tc::test::load_matrix(f, layer("ffn_gate_shexp"));
  const auto sh_up = tc::test::load_matrix(f, layer("ffn_up_shexp"));
  const auto sh_down = tc::test::load_matrix(f, layer("ffn_down_shexp"));
  const auto n_embd = static_cast<size_t>(spec.n_embd), n_ff = static_cast<size_t>(spec.n_ff);
  const auto k = static_cast<size_t>(spec.n_expert_used);
  // down · silu(gate · h) * (up · h) over rows [first, first + width) of the stacks.
  auto swiglu = [&](const auto& g, const auto& u, const auto& d, size_t ff_first, size_t embd_first, size_t width,
                    const std::vector<double>& h) {
    std::vector<double> a(width), y(n_embd, 0.0);
    for (size_t j = 0; j < width; ++j) {
      double gv = 0, uv = 0;
      for (size_t c = 0; c < n_embd; ++c) {
        gv += g[ff_first + j][c] * h[c];
        uv += u[ff_first + j][c] * h[c];
      }
      a[j] = gv / (1.0 + std::exp(-gv)) * uv;
    }
    for (size_t r = 0; r < n_embd; ++r) {
      for (size_t j = 0; j < width; ++j) y[r] += d[embd_first + r][j] * a[j];
    }
    return y;
  };
  std::mt19937 rng(31);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  size_t compared = 0;
  for (const int64_t n_tokens : {int64_t{1}, int64_t{7}}) {
    std::vector<float> in(static_cast<size_t>(n_tokens) * n_embd), out(in.size());
    for (float& x : in) x = normal(rng);
    block.run(1, weights.layers[1], in.data(), n_tokens, out.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      const std::vector<double> h(in.begin() + static_cast<std::ptrdiff_t>(t * spec.n_embd),
                                  in.begin() + static_cast<std::ptrdiff_t>((t + 1) * spec.n_embd));
      const auto logits = tc::test::matvec(router, h);
      std::vector<double> p(logits.size()), sel(logits.size());
      for (size_t e = 0; e < p.size(); ++e) sel[e] = (p[e] = 1.0 / (1.0 + std::exp(-logits[e]))) + bias[e];
      std::vector<size_t> order(p.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sel[a] > sel[b]; });
      if (sel[order[k - 1]] - sel[order[k]] < 1e-5) continue;  // a near-tie f32 may break the other way
      double chosen = 0;
      for (size_t i = 0; i < k; ++i) chosen += p[order[i]];
      auto y = swiglu(sh_gate, sh_up, sh_down, 0, 0, n_ff, h);
      for (size_t i = 0; i < k; ++i) {
        const size_t e = order[i];
        const auto d = swiglu(gate, up, down, e * n_ff, e * n_embd, n_ff, h);
        for (size_t r = 0; r < n_embd; ++r) y[r] += 2.5 * p[e] / chosen * d[r];
      }
      CHECK(tc::test::relative_error(out.data() + t * spec.n_embd, y) < 1e-5);
      ++compared;
    }
  }
  CHECK(compared >= 6);
}

TEST_CASE("a mixture of experts gives each sequence of a step the logits it has alone", "[model][moe][forward]") {
  auto m = load(moe_options("batch", "q8_0"));
  const auto a = random_tokens(6, 8, kVocab);
  const auto b = random_tokens(9, 9, kVocab);
  const auto la = one_pass(*m.model, *m.backend, a);
  const auto lb = one_pass(*m.model, *m.backend, b);
  KvCache kv(*m.backend, m.model->spec(), 2, 64);
  std::vector<float> logits;
  const StepSequence batch[] = {{1, b, false}, {0, a, true}};
  REQUIRE(m.model->forward(batch, kv, logits) == StepStatus::Ok);
  auto row = [](const std::vector<float>& l, size_t r) {
    return std::vector<double>(l.begin() + static_cast<long>(r * kVocab), l.begin() + static_cast<long>((r + 1) * kVocab));
  };
  CHECK(tc::test::relative_error(logits.data(), row(lb, 8)) < 1e-5);
  for (size_t p = 0; p < 6; ++p) CHECK(tc::test::relative_error(logits.data() + (1 + p) * kVocab, row(la, p)) < 1e-5);

  // Token by token through the cache equals the one pass.
  KvCache kv1(*m.backend, m.model->spec(), 1, 64);
  for (size_t p = 0; p < a.size(); ++p) {
    const std::vector<TokenId> one = {a[p]};
    const StepSequence s{0, one, false};
    REQUIRE(m.model->forward({&s, 1}, kv1, logits) == StepStatus::Ok);
    CHECK(tc::test::relative_error(logits.data(), row(la, p)) < 1e-5);
  }
}

TEST_CASE("Q4_0 and Q8_0 experts give the same logits bits repacked for the CPU or not",
          "[model][moe][q4_lanes16]") {
  for (const char* type : {"q4_0", "q8_0"}) {
    INFO(type);
    const auto o = moe_options(std::string("repack_") + type, type);
    auto repacked = load(o);
    tc::model::ForwardOptions plain_options;
    plain_options.cpu_repack = tc::kernels::CpuRepack::Off;
    LlamaModel plain(*repacked.loaded, *repacked.backend, plain_options);
    if (repacked.model->repacked_weight_bytes() == 0) {
      WARN("this CPU's matmul variant does not read the " << type << " lane layout: repacked vs plain not compared");
      continue;
    }
    const auto tokens = random_tokens(7, 3, kVocab);
    CHECK(one_pass(*repacked.model, *repacked.backend, tokens) == one_pass(plain, *repacked.backend, tokens));
  }
}

TEST_CASE("qwen3moe files load with their expert width and run", "[model][moe]") {
  auto o = moe_options("qwen3moe", "f32");
  o.arch = "qwen3moe";
  o.n_expert = 0;  // qwen3moe's default: 8 experts
  o.n_ff = 32;
  auto m = load(o);
  const auto& s = m.loaded->spec;
  CHECK(s.n_expert == 8);
  CHECK(s.n_expert_used == 2);
  CHECK(s.n_ff == 32);  // qwen3moe.expert_feed_forward_length
  const auto tokens = random_tokens(5, 4, kVocab);
  const auto logits = one_pass(*m.model, *m.backend, tokens);
  CHECK(std::all_of(logits.begin(), logits.end(), [](float v) { return std::isfinite(v); }));
}

namespace {

// `in` rewritten with key `key` set to `value` (nothing set when key is
// empty) and tensor `drop` left out.
tc::gguf::GgufFile rewritten(const std::filesystem::path& in, const std::string& key, const tc::gguf::Value& value,
                             const std::string& drop = "") {
  const auto f = tc::gguf::GgufFile::open(in);
  return tc::test::copy_gguf(f, "moe_rewritten", drop, [&](tc::gguf::GgufWriter& w) {
    if (!key.empty()) w.set(key, value);
  });
}

}  // namespace

TEST_CASE("mixture-of-experts file errors name the key or tensor", "[model][moe]") {
  using tc::gguf::Value;
  auto o = moe_options("errors", "f32");
  o.n_layer = 1;
  tc::profiler::make_model(o);
  CHECK(tc::test::load_error(rewritten(o.output, "", Value(uint32_t{0}))).empty());
  const auto more_used = tc::test::load_error(rewritten(o.output, "llama.expert_used_count", Value(uint32_t{7})));
  CHECK_THAT(more_used, Catch::Contains("llama.expert_used_count") && Catch::Contains("more than"));
  const auto too_many = tc::test::load_error(rewritten(o.output, "llama.expert_count", Value(uint32_t{5000})));
  CHECK_THAT(too_many, Catch::Contains("llama.expert_count"));
  const auto no_used = tc::test::load_error(
      tc::test::copy_gguf(tc::gguf::GgufFile::open(o.output), "moe_no_used", "", {}, "llama.expert_used_count"));
  CHECK_THAT(no_used, Catch::Contains("llama.expert_used_count"));
  // More experts declared than the tensors hold: the shape check names the tensor.
  const auto shape = tc::test::load_error(rewritten(o.output, "llama.expert_count", Value(uint32_t{7})));
  CHECK_THAT(shape, Catch::Contains("blk.0.ffn_gate_inp.weight"));
  const auto missing = tc::test::load_error(rewritten(o.output, "", Value(uint32_t{0}), "blk.0.ffn_down_exps.weight"));
  CHECK_THAT(missing, Catch::Contains("blk.0.ffn_down_exps.weight"));
  const auto form = tc::test::load_error(rewritten(o.output, std::string(tc::model::kFfnFormKey), Value("reglu")));
  CHECK_THAT(form, Catch::Contains("llama's experts are swiglu only"));
}

TEST_CASE("modes that read a dense FFN refuse a mixture of experts, saying so", "[model][moe]") {
  auto m = load(moe_options("refusals", "f32"));
  tc::model::ForwardOptions sparse;
  sparse.ffn_mode = tc::model::FfnMode::Sparse;
  try {
    LlamaModel model(*m.loaded, *m.backend, sparse);
    FAIL("the sparse FFN accepted a mixture of experts");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains("mixture of experts") && Catch::Contains("--sparsity dense"));
  }
  struct NullObserver : tc::model::ForwardObserver {
    void on_ffn(int64_t, int64_t, const float*, const float*, const float*) override {}
  } observer;
  CHECK_THROWS_WITH(m.model->set_observer(&observer), Catch::Contains("mixture of experts"));
}
