// `thermocline inspect` and the model loader on a file written by llama.cpp's
// own GGUF writer (not by ours): every tensor and key must come through.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "engine/model/loaded_model.h"
#include "tests/oracle/ggml_oracle.h"
#include "tests/test_util.h"

TEST_CASE("inspect reads a GGUF file written by llama.cpp", "[oracle][inspect]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto dir = tc::test::scratch_dir("oracle_inspect");
  const auto path = tc::oracle::write_reference_gguf(dir / "llama_cpp_written.gguf");
  const auto spec = tc::oracle::reference_gguf_spec();

  const auto r = tc::test::run_command(tc::test::thermocline_binary().string() + " inspect --json " + path.string());
  INFO(r.output.substr(0, 2000));
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j["magic"] == "GGUF");
  CHECK(j["version"] == 3);
  CHECK_FALSE(j["model"].contains("error"));
  CHECK(j["model"]["n_embd"] == 256);
  CHECK(j["model"]["n_head_kv"] == 2);
  CHECK_FALSE(j["tokenizer"].contains("error"));

  REQUIRE(j["tensors"].size() == spec.tensors.size());
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const auto& want = spec.tensors[i];
    const auto& got = j["tensors"][i];
    CHECK(got["name"] == want.name);
    CHECK(got["dtype"] == std::string(tc::kernels::dtype_name(want.dtype)));
    CHECK(got["shape"] == want.ne);
    CHECK(got["bytes"] == want.data.size());
  }
  REQUIRE(j["metadata"].size() == spec.metadata.size());
  for (const auto& [key, value] : spec.metadata) {
    INFO(key);
    REQUIRE(j["metadata"].contains(key));
    CHECK(j["metadata"][key]["type"] == std::string(tc::gguf::value_type_name(value.type())));
    if (const auto* s = value.as_string()) CHECK(j["metadata"][key]["value"] == *s);
  }

  // The same file loads as a model: spec, tensor shapes and tokenizer.
  const auto model = tc::model::load_model(path);
  CHECK(model->spec.n_layer == 1);
  CHECK(model->file.tensor("blk.0.ffn_down.weight").dtype == tc::kernels::DType::Q6_K);
}
