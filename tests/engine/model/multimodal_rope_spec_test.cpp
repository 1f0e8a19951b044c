// Multimodal RoPE sections (rope.dimension_sections) on small make-model
// files: the text models of Qwen's vision-language files (qwen2vl, qwen3vl,
// qwen3vlmoe) require them, GLM-4.1V's glm4 and GLM-4.5V's glm4moe may have
// them, and where they have a height part glm4 pairs its dims as NeoX does
// (llama.cpp's use_mrope()). The logits against llama.cpp are in
// tests/oracle/arch_oracle_test.cpp.
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "profiler/make_model.h"
#include "tests/engine/model/spec_test_util.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::gguf::Value;
using tc::kernels::RopeMode;
using tc::test::load_error;

// A 3-layer f16 model of `arch` (head_dim 16, 8 rotated pairs).
GgufFile make(const std::string& arch, bool mrope) {
  static int n = 0;
  tc::profiler::MakeModelOptions o = tc::test::small_model_options(arch, 5);
  o.mrope_sections = mrope;
  if (arch.ends_with("moe")) {
    o.n_expert = 4;
    o.n_expert_used = 2;
  }
  o.output = tc::test::scratch_dir("mrope_spec_" + std::to_string(n++)) / "m.gguf";
  tc::profiler::make_model(o);
  return GgufFile::open(o.output);
}

// `f` with rope.dimension_sections set to `sections` (or without it).
GgufFile with_sections(const GgufFile& f, const std::string& arch, const std::vector<int32_t>& sections) {
  const std::string key = arch + ".rope.dimension_sections";
  if (sections.empty()) return tc::test::copy_gguf(f, "mrope_spec_copy", "", nullptr, key);
  return tc::test::copy_gguf(f, "mrope_spec_copy", "", [&](tc::gguf::GgufWriter& w) {
    w.set(key, Value::i32_array(sections));
  });
}

}  // namespace

TEST_CASE("Qwen's vision-language text models read their sections and rotate as NeoX", "[model][arch][mrope]") {
  for (const char* arch : {"qwen2vl", "qwen3vl", "qwen3vlmoe"}) {
    INFO(arch);
    const auto f = make(arch, false);
    const auto s = tc::model::read_model_spec(f);
    CHECK(s.arch == arch);
    // make-model's split of 8 pairs: time 2, height 3, width 3.
    CHECK(s.rope_sections == std::array<int32_t, 4>{2, 3, 3, 0});
    CHECK(s.rope_mode() == RopeMode::Neox);
    CHECK(load_error(f).empty());
    const auto missing = with_sections(f, arch, {});
    CHECK_THAT(load_error(missing), Catch::Contains(std::string(arch) + ".rope.dimension_sections") &&
                                        Catch::Contains("missing"));
  }
}

TEST_CASE("glm4 with multimodal sections pairs its dims as NeoX, without them as its own", "[model][arch][mrope]") {
  const auto plain = tc::model::read_model_spec(make("glm4", false));
  CHECK(plain.rope_sections == std::array<int32_t, 4>{});
  CHECK(plain.rope_mode() == RopeMode::Normal);

  const auto f = make("glm4", true);
  const auto s = tc::model::read_model_spec(f);
  CHECK(s.rope_sections == std::array<int32_t, 4>{2, 3, 3, 0});
  CHECK(s.rope_mode() == RopeMode::Neox);
  // Without a height part llama.cpp keeps the normal pairs.
  const auto time_only = tc::model::read_model_spec(with_sections(f, "glm4", {8}));
  CHECK(time_only.rope_sections == std::array<int32_t, 4>{8, 0, 0, 0});
  CHECK(time_only.rope_mode() == RopeMode::Normal);

  const auto moe = tc::model::read_model_spec(make("glm4moe", true));
  CHECK(moe.rope_mode() == RopeMode::Neox);
}

TEST_CASE("malformed multimodal sections are refused naming the key", "[model][arch][mrope]") {
  const auto f = make("qwen3vl", false);
  const std::string key = "qwen3vl.rope.dimension_sections";
  CHECK_THAT(load_error(with_sections(f, "qwen3vl", {1, 1, 1, 1, 1})),
             Catch::Contains(key) && Catch::Contains("5 entries"));
  CHECK_THAT(load_error(with_sections(f, "qwen3vl", {4, -1, 4, 0})),
             Catch::Contains(key) && Catch::Contains("entry 1 is negative"));
  CHECK_THAT(load_error(with_sections(f, "qwen3vl", {0, 0, 0, 0})),
             Catch::Contains(key) && Catch::Contains("sums to 0"));
  CHECK_THAT(load_error(with_sections(f, "qwen3vl", {8, 8, 8, 0})),
             Catch::Contains(key) && Catch::Contains("sums to 24"));
  // One entry, as llama.cpp's get_key_or_arr reads it: the rest are 0.
  CHECK(tc::model::read_model_spec(with_sections(f, "qwen3vl", {6})).rope_sections ==
        std::array<int32_t, 4>{6, 0, 0, 0});
}
