// Embeddings against llama.cpp's own (libllama of npm @node-llama-cpp/linux-x64
// 3.22.1, a context with embeddings on and the pooling type set): the
// engine's last, mean and cls pools of a prompt's output-normed hidden
// states must equal llama.cpp's llama_get_embeddings_seq within
// kRelativeTolerance (relative L2 distance), on files `thermocline
// make-model` writes with f32 weights (so what differs is the order of sums
// and llama.cpp's f16 rounding of q in attention). Skips with a warning
// without the library (fails with THERMOCLINE_REQUIRE_ORACLE=1).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/model/loaded_model.h"
#include "engine/runtime/engine.h"
#include "tests/oracle/llama_context_oracle.h"
#include "tests/oracle/llama_tokenizer_oracle.h"
#include "tests/test_util.h"

namespace {

namespace fs = std::filesystem;
namespace lc = tc::oracle::llamacpp;
using namespace std::chrono_literals;

constexpr char kPrompt[] =
    "Embeddings place texts in a space where nearby vectors mean similar things: 'café', 'coffee shop', 42.";
// ||ours - theirs|| / ||theirs||. Measured on these f32 models (-s prints
// it): 2e-7 for cls (the first token attends to itself alone), 0.8-1.4e-4
// for mean and last.
constexpr double kRelativeTolerance = 1e-3;

const lc::LlamaCppLibrary& library() { return lc::LlamaCppLibrary::instance(tc::oracle::llama_library_path()); }

// Whether libllama can be the oracle: false after a warning where it is
// absent; a failure where it is broken or THERMOCLINE_REQUIRE_ORACLE is set.
bool oracle_usable() {
  if (library().ok()) return true;
  if (library().broken() || tc::oracle::oracle_required()) FAIL("llama.cpp oracle unusable: " << library().reason());
  WARN("SKIPPED (llama.cpp oracle unavailable): " << library().reason());
  return false;
}

// `thermocline make-model -o path` with `flags`; REQUIREs that it worked.
void write_model(const fs::path& path, const std::string& flags) {
  const std::string cmd = tc::test::shell_quote(tc::test::thermocline_binary().string()) + " make-model -o " +
                          tc::test::shell_quote(path.string()) + flags;
  const auto r = tc::test::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
}

fs::path make_model(const std::string& flags, uint64_t seed) {
  // (append, not "m" + ...: GCC 12 warns there, -Wrestrict, a false positive)
  const fs::path out =
      tc::test::scratch_dir("embedding_oracle") / std::string("m").append(std::to_string(seed)).append(".gguf");
  write_model(out, " --n-embd 256 --n-layer 2 --n-ff 768 --n-head 8 --n-head-kv 2 --type f32 --n-vocab 4096 "
                   "--n-ctx 512 -t 2 --seed " + std::to_string(seed) + " " + flags);
  return out;
}

// ||mine - theirs|| / ||theirs|| over mine.size() values (theirs not all 0).
double relative_distance(const std::vector<float>& mine, const float* theirs) {
  double diff = 0, norm = 0;
  for (size_t j = 0; j < mine.size(); ++j) {
    diff += (static_cast<double>(mine[j]) - theirs[j]) * (static_cast<double>(mine[j]) - theirs[j]);
    norm += static_cast<double>(theirs[j]) * theirs[j];
  }
  REQUIRE(norm > 0);
  return std::sqrt(diff / norm);
}


std::vector<float> ours(const std::shared_ptr<const tc::model::LoadedModel>& model, const std::vector<int32_t>& prompt,
                        tc::model::Pooling pooling) {
  tc::runtime::EngineOptions o;
  o.n_parallel = 1;
  o.n_ctx = 256;
  o.n_batch = 16;  // several chunks
  o.model.threads = 2;
  tc::runtime::Engine engine(model, o);
  tc::runtime::GenerationRequest r;
  r.prompt.assign(prompt.begin(), prompt.end());
  r.embedding = pooling;
  auto submitted = engine.submit(std::move(r));
  REQUIRE(submitted.status == tc::runtime::SubmitStatus::Ok);
  tc::runtime::StreamEvent ev;
  const auto end = tc::runtime::Clock::now() + 60s;
  while (tc::runtime::Clock::now() < end) {
    if (submitted.handle->next(ev, 100ms) && ev.kind != tc::runtime::StreamEvent::Kind::Text) break;
  }
  INFO(ev.error);
  REQUIRE(ev.kind == tc::runtime::StreamEvent::Kind::Finished);
  return ev.embedding;
}

// |ours - llama.cpp| / |llama.cpp| of one prompt's pooled embedding: a
// fresh libllama context with embeddings on and `their_pooling`, ours
// through the engine with `pooling`.
double pooled_distance(const lc::LlamaCppModel& theirs_model,
                       const std::shared_ptr<const tc::model::LoadedModel>& loaded, const std::vector<int32_t>& prompt,
                       tc::model::Pooling pooling, int32_t their_pooling) {
  lc::ContextOptions co;
  co.n_ctx = 256;
  co.embeddings = true;
  co.pooling_type = their_pooling;
  lc::LlamaCppContext ctx(theirs_model, co);
  REQUIRE(ctx.decode(prompt.data(), static_cast<int32_t>(prompt.size())) == 0);
  const float* theirs = ctx.sequence_embedding();
  REQUIRE(theirs != nullptr);
  const std::vector<float> mine = ours(loaded, prompt, pooling);
  REQUIRE(mine.size() == static_cast<size_t>(loaded->spec.n_embd));
  return relative_distance(mine, theirs);
}

// Our pooling and libllama's pooling_type for the same thing.
using PoolingPair = std::pair<tc::model::Pooling, int32_t>;
constexpr PoolingPair kMeanAndCls[] = {{tc::model::Pooling::Mean, lc::kPoolingMean},
                                       {tc::model::Pooling::Cls, lc::kPoolingCls}};

// pooled_distance for each of `poolings`, each under `tolerance`, reported
// (WARN) under `label`.
void check_poolings(const lc::LlamaCppModel& theirs_model, const std::shared_ptr<const tc::model::LoadedModel>& loaded,
                    const std::vector<int32_t>& prompt, std::span<const PoolingPair> poolings, double tolerance,
                    const std::string& label) {
  for (const auto& [pooling, type] : poolings) {
    INFO("pooling " << tc::model::pooling_name(pooling));
    const double relative = pooled_distance(theirs_model, loaded, prompt, pooling, type);
    CHECK(relative < tolerance);
    WARN(label << ", " << tc::model::pooling_name(pooling) << ": " << prompt.size()
               << " tokens, |ours - llama.cpp| / |llama.cpp| = " << relative);
  }
}

}  // namespace

TEST_CASE("Embeddings (last, mean, cls) match llama.cpp's pooled embeddings", "[oracle][embeddings]") {
  if (!oracle_usable()) return;
  struct Case {
    const char* label;
    const char* flags;
    uint64_t seed;
  };
  for (const Case& c : {Case{"llama", "--arch llama", 31}, Case{"qwen2", "--arch qwen2", 32}}) {
    INFO(c.label);
    const fs::path path = make_model(c.flags, c.seed);
    const lc::LlamaCppModel theirs_model(library(), path);
    const std::vector<int32_t> prompt = theirs_model.tokenize(kPrompt);
    REQUIRE(prompt.size() > 20);
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
    constexpr PoolingPair kAll[] = {{tc::model::Pooling::Last, lc::kPoolingLast},
                                    {tc::model::Pooling::Mean, lc::kPoolingMean},
                                    {tc::model::Pooling::Cls, lc::kPoolingCls}};
    check_poolings(theirs_model, loaded, prompt, kAll, kRelativeTolerance, c.label);
  }
}

TEST_CASE("An encoder's embeddings (EmbeddingGemma: bidirectional, windowed, dense head) match llama.cpp's",
          "[oracle][embeddings]") {
  if (!oracle_usable()) return;
  // Six layers: five see 4 positions either side (a window of 8), the last
  // the whole prompt, both ways; mean-pooled, then dense_2 and dense_3.
  const fs::path path = tc::test::scratch_dir("embedding_oracle") / "gemma_embedding.gguf";
  write_model(path, " --arch gemma-embedding --n-embd 256 --n-layer 6 --n-ff 768 --n-head 8 --n-head-kv 2 "
                          "--head-dim 64 --sliding-window 8 --type f32 --n-vocab 4096 --n-ctx 512 -t 2 --seed 33");
  const lc::LlamaCppModel theirs_model(library(), path);
  const std::vector<int32_t> prompt = theirs_model.tokenize(kPrompt);
  REQUIRE(prompt.size() > 20);
  const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
  REQUIRE(loaded->spec.pooling == tc::model::Pooling::Mean);
  // (ours() runs the engine with a step budget of 16 tokens: an encoder's prompt goes in one step anyway.)
  const double relative = pooled_distance(theirs_model, loaded, prompt, tc::model::Pooling::Mean, lc::kPoolingMean);
  CHECK(relative < kRelativeTolerance);
  WARN("gemma-embedding, mean + dense: " << prompt.size() << " tokens, |ours - llama.cpp| / |llama.cpp| = "
                                         << relative);
}

TEST_CASE("BERT encoders' embeddings (bert and nomic-bert) match llama.cpp's", "[oracle][embeddings]") {
  if (!oracle_usable()) return;
  // Three layers each, WordPiece vocab, the prompt tokenized by llama.cpp
  // ([CLS] ... [SEP]); the file's pooling (bert: cls, nomic-bert: mean) and
  // the other one. bert: learned positions, biases, gelu; nomic-bert: NeoX
  // RoPE, fused qkv, SwiGLU.
  struct Case {
    const char* arch;
    const char* type;
    tc::model::Pooling file_pooling;
    double tolerance;
    const char* tokenizer = "bert";  // xlmr: XLM-RoBERTa's Unigram vocab (bge-m3, multilingual-e5)
  };
  // Measured: f32 0.7-2e-4 (bert), 1.1-1.5e-4 (nomic-bert); Q8_0 1.8e-3
  // (mean) and 7.5e-3 (cls): both sides round activations to 8 bits before
  // each matmul, and one token's row carries more of that than a mean.
  for (const Case& c : {Case{"bert", "f32", tc::model::Pooling::Cls, kRelativeTolerance},
                        Case{"nomic-bert", "f32", tc::model::Pooling::Mean, kRelativeTolerance},
                        Case{"bert", "q8_0", tc::model::Pooling::Cls, 2e-2},
                        Case{"bert", "f32", tc::model::Pooling::Cls, kRelativeTolerance, "xlmr"}}) {
    INFO(c.arch << " " << c.type << " " << c.tokenizer);
    const fs::path path = tc::test::scratch_dir("embedding_oracle") /
                          (std::string(c.arch) + "_" + c.type + "_" + c.tokenizer + ".gguf");
    write_model(path, std::string(" --arch ") + c.arch +
                          " --n-embd 256 --n-layer 3 --n-ff 768 --n-head 8 --n-head-kv 8 --n-ctx 512 -t 2 "
                          "--seed 35 --type " + c.type + " --tokenizer " + c.tokenizer);
    const lc::LlamaCppModel theirs_model(library(), path);
    const std::vector<int32_t> prompt = theirs_model.tokenize(kPrompt);
    REQUIRE(prompt.size() > 20);
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
    REQUIRE(loaded->spec.pooling == c.file_pooling);
    CHECK(loaded->tokenizer->encode(kPrompt) == prompt);  // the server's ids are llama.cpp's
    check_poolings(theirs_model, loaded, prompt, kMeanAndCls, c.tolerance,
                   std::string(c.arch) + " " + c.type + " " + c.tokenizer);
  }
}

TEST_CASE("jina-bert-v2 encoders' embeddings (ALiBi and GeGLU) match llama.cpp's", "[oracle][embeddings]") {
  if (!oracle_usable()) return;
  // Three layers, 12 heads (ALiBi's slopes past the first 8 take m1) or 8,
  // WordPiece vocab, mean pooling from the file and cls. The plain form: one
  // ffn_up of gate and up rows with a bias; --attn-norm-2: q and k
  // LayerNorms, attn_norm_2 and a separate ffn_gate.
  struct Case {
    const char* label;
    const char* flags;
    double tolerance;
  };
  // Measured (-s): f32 mean 7.7-8.9e-5, cls 2.5-2.7e-4; Q8_0 mean 2.8e-3,
  // cls 1.1e-2 (the activations' 8-bit rounding, as bert's). Without ALiBi
  // the f32 mean is 4.5e-2 off.
  for (const Case& c : {Case{"fused", "--type f32 --n-head 12 --n-head-kv 12", kRelativeTolerance},
                        Case{"norms", "--type f32 --n-head 8 --n-head-kv 8 --attn-norm-2", kRelativeTolerance},
                        Case{"q8_0", "--type q8_0 --n-head 12 --n-head-kv 12", 2e-2}}) {
    INFO(c.label << ": " << c.flags);
    const fs::path path = tc::test::scratch_dir("embedding_oracle") / (std::string("jina_") + c.label + ".gguf");
    write_model(path, std::string(" --arch jina-bert-v2 --n-embd 384 --n-layer 3 --n-ff 512 --n-ctx 512 -t 2 ") +
                          "--seed 36 --tokenizer bert " + c.flags);
    const lc::LlamaCppModel theirs_model(library(), path);
    const std::vector<int32_t> prompt = theirs_model.tokenize(kPrompt);
    REQUIRE(prompt.size() > 20);
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
    REQUIRE(loaded->spec.pooling == tc::model::Pooling::Mean);
    CHECK(loaded->tokenizer->encode(kPrompt) == prompt);
    check_poolings(theirs_model, loaded, prompt, kMeanAndCls, c.tolerance, std::string("jina-bert-v2 ") + c.label);
  }
}

TEST_CASE("Encoder rerankers' scores (bert, modern-bert, jina-bert-v2) match llama.cpp's rank pooling",
          "[oracle][embeddings][rerank]") {
  if (!oracle_usable()) return;
  // A cross-encoder: [CLS] query [SEP] document (llama-server's pair, no
  // template). bert: the first token's row through cls, tanh and
  // cls.output; modern-bert: the mean row through cls, gelu, cls.norm and
  // cls.output; jina-bert-v2 (jina-reranker-v1): the first token's row
  // through cls and tanh alone. Measured |ours - llama.cpp| on scores of
  // about 0.35: bert f32 7e-5, Q8_0 2.7e-3 (the 8-bit activations, as the
  // embeddings' 7.5e-3 relative); modern-bert f32 2.6e-4; jina-bert-v2 f32 1.1e-4.
  struct Case {
    const char* arch;
    const char* type;
    double tolerance;
  };
  for (const Case& c : {Case{"bert", "f32", 1e-3}, Case{"bert", "q8_0", 1e-2}, Case{"modern-bert", "f32", 1e-3},
                        Case{"jina-bert-v2", "f32", 1e-3}}) {
    const std::string type = c.type;
    const double tolerance = c.tolerance;
    INFO(c.arch << " " << type);
    const fs::path path =
        tc::test::scratch_dir("embedding_oracle") / (std::string("reranker_") + c.arch + "_" + type + ".gguf");
    write_model(path, std::string(" --arch ") + c.arch +
                          " --reranker --tokenizer bert --n-embd 256 --n-layer 3 --n-ff 768 --n-head 8 "
                          "--n-head-kv 8 --n-ctx 512 -t 2 --seed 37 --type " + type);
    const lc::LlamaCppModel theirs_model(library(), path);
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
    REQUIRE(loaded->spec.pooling == tc::model::Pooling::Rank);
    REQUIRE(loaded->spec.n_cls_out == 1);
    const auto& vocab = loaded->tokenizer->vocab();
    tc::text::EncodeOptions plain;
    plain.add_special = false;
    const std::vector<int32_t> query = loaded->tokenizer->encode("what is a panda?", plain);
    double worst = 0;
    for (const char* doc : {"The giant panda is a bear species endemic to China.", "hi",
                            "Paris is the capital of France, on the Seine."}) {
      std::vector<int32_t> pair = {vocab.bos_id};
      pair.insert(pair.end(), query.begin(), query.end());
      pair.push_back(vocab.sep_id);
      const std::vector<int32_t> d = loaded->tokenizer->encode(doc, plain);
      pair.insert(pair.end(), d.begin(), d.end());
      lc::ContextOptions co;
      co.n_ctx = 256;
      co.embeddings = true;
      co.pooling_type = lc::kPoolingRank;
      lc::LlamaCppContext ctx(theirs_model, co);
      REQUIRE(ctx.decode(pair.data(), static_cast<int32_t>(pair.size())) == 0);
      const float* theirs = ctx.sequence_embedding();
      REQUIRE(theirs != nullptr);
      const std::vector<float> mine = ours(loaded, pair, tc::model::Pooling::Rank);
      REQUIRE(mine.size() == 1);
      INFO(doc << ": ours " << mine[0] << ", llama.cpp " << theirs[0]);
      const double diff = std::fabs(static_cast<double>(mine[0]) - theirs[0]);
      CHECK(diff < tolerance * std::max(1.0, std::fabs(static_cast<double>(theirs[0]))));
      worst = std::max(worst, diff);
    }
    WARN(c.arch << " reranker " << type << ": worst |ours - llama.cpp| over 3 pairs = " << worst);
  }
}

TEST_CASE("ModernBERT encoders' embeddings (modern-bert: windowed and global layers) match llama.cpp's",
          "[oracle][embeddings]") {
  if (!oracle_usable()) return;
  // A window of 8 (4 positions either side) on a prompt of 30-odd tokens:
  // with the default pattern layers 0 and 3 see the whole prompt (RoPE base
  // 160000), 1, 2 and 4 the window (base 10000); --swa-pattern 2 makes 0, 2
  // and 4 global. gelu is GeGLU, silu (granite-embedding-small-r2's)
  // SwiGLU; gpt2: a BPE vocab with the converter's add_bos/add_eos.
  struct Case {
    const char* label;
    const char* flags;
    double tolerance;
  };
  // Measured |ours - llama.cpp| / |llama.cpp| (mean, cls): geglu 2.9e-4,
  // 4.2e-4; swiglu 2.2e-4, 2.5e-4; bpe 3.2e-4, 5.4e-4; q8_0 1.0e-2, 1.7e-2
  // (1.1-1.75e-2 over seeds 39-41). More than BERT's: this engine keeps K
  // and V in an f16 cache where llama.cpp's encoder attends over f32 ones,
  // and these random weights make peaked scores (mean: a q8_0 cache gives
  // 5.5e-3; weights of sd 0.03 9.3e-5); llama.cpp reads gelu from an f16
  // table. What a mistake costs: a window of 10 in llama.cpp's file gives
  // 0.11, 0.30; the other pattern 0.21, 0.54; one RoPE base everywhere
  // 0.12, 0.18; ReGLU 0.17, 0.19.
  for (const Case& c : {Case{"geglu", "--type f32 --tokenizer bert", kRelativeTolerance},
                        Case{"swiglu", "--type f32 --tokenizer bert --hidden-act silu --swa-pattern 2",
                             kRelativeTolerance},
                        Case{"bpe", "--type f32 --tokenizer gpt2", kRelativeTolerance},
                        Case{"q8_0", "--type q8_0 --tokenizer bert", 3e-2}}) {
    INFO(c.flags);
    const fs::path path = tc::test::scratch_dir("embedding_oracle") / (std::string("modern_bert_") + c.label + ".gguf");
    write_model(path, std::string(" --arch modern-bert --n-embd 256 --n-layer 5 --n-ff 384 --n-head 8 ") +
                          "--n-head-kv 8 --n-vocab 4096 --n-ctx 512 --sliding-window 8 -t 2 --seed 39 " + c.flags);
    const lc::LlamaCppModel theirs_model(library(), path);
    const std::vector<int32_t> prompt = theirs_model.tokenize(kPrompt);
    REQUIRE(prompt.size() > 20);
    const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
    REQUIRE(loaded->spec.pooling == tc::model::Pooling::Cls);
    REQUIRE(loaded->spec.n_swa == 8);
    CHECK(loaded->tokenizer->encode(kPrompt) == prompt);  // the server's ids are llama.cpp's
    check_poolings(theirs_model, loaded, prompt, kMeanAndCls, c.tolerance, std::string("modern-bert ") + c.flags);
  }
}

TEST_CASE("A Qwen3-Reranker's scores match llama.cpp's rank pooling", "[oracle][embeddings][rerank]") {
  if (!oracle_usable()) return;
  // A decoder reranker: the file's rerank template around the pair, the
  // last token's output-normed row through the "yes" and "no" rows, a
  // softmax. Measured: f32 |ours - llama.cpp| 4.7e-6 on the probabilities.
  const fs::path path = tc::test::scratch_dir("embedding_oracle") / "qwen3_reranker.gguf";
  write_model(path, " --arch qwen3 --reranker --n-embd 256 --n-layer 2 --n-ff 768 --n-head 8 --n-head-kv 2 "
                          "--type f32 --n-vocab 4096 --n-ctx 512 -t 2 --seed 39");
  const lc::LlamaCppModel theirs_model(library(), path);
  const std::shared_ptr<const tc::model::LoadedModel> loaded = tc::model::load_model(path);
  REQUIRE(loaded->spec.pooling == tc::model::Pooling::Rank);
  REQUIRE(loaded->spec.rank_by_last_token);
  REQUIRE(loaded->spec.n_cls_out == 2);
  const std::string tmpl = loaded->file.get_string("tokenizer.chat_template.rerank", "");
  REQUIRE(tmpl.find("{query}") != std::string::npos);
  double worst = 0;
  for (const char* doc : {"The giant panda is a bear species endemic to China.", "Paris is in France."}) {
    std::string prompt = tmpl;
    prompt.replace(prompt.find("{query}"), 7, "what is a panda?");
    prompt.replace(prompt.find("{document}"), 10, doc);
    const std::vector<int32_t> ids = theirs_model.tokenize(prompt, /*add_special=*/false, /*parse_special=*/true);
    tc::text::EncodeOptions o;
    o.add_special = false;
    o.parse_special = true;
    CHECK(loaded->tokenizer->encode(prompt, o) == ids);
    lc::ContextOptions co;
    co.n_ctx = 256;
    co.embeddings = true;
    co.pooling_type = lc::kPoolingRank;
    lc::LlamaCppContext ctx(theirs_model, co);
    REQUIRE(ctx.decode(ids.data(), static_cast<int32_t>(ids.size())) == 0);
    const float* theirs = ctx.sequence_embedding();
    REQUIRE(theirs != nullptr);
    const std::vector<float> mine = ours(loaded, ids, tc::model::Pooling::Rank);
    REQUIRE(mine.size() == 2);
    INFO(doc << ": ours " << mine[0] << ", " << mine[1] << "; llama.cpp " << theirs[0] << ", " << theirs[1]);
    CHECK(std::fabs(mine[0] + mine[1] - 1.0) < 1e-5);
    for (int j = 0; j < 2; ++j) {
      const double diff = std::fabs(static_cast<double>(mine[j]) - theirs[j]);
      CHECK(diff < 1e-4);
      worst = std::max(worst, diff);
    }
  }
  WARN("qwen3 reranker f32: worst |ours - llama.cpp| = " << worst);
}
