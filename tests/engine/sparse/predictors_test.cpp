// map_predictors: per-layer ranks, thresholds (global and per layer), Q5_0
// mapped as stored, and every malformed predictor section rejected naming
// the file and the tensor or key.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/predictors.h"
#include "kernels/cpu/quantize.h"
#include "tests/test_util.h"

using tc::kernels::DType;

namespace {

tc::model::ModelSpec small_spec() {
  tc::model::ModelSpec s;
  s.n_layer = 2;
  s.n_embd = 64;
  s.n_ff = 96;
  return s;
}

// A tensor of random values (fixed seed) stored as `dtype`, ne = {cols, rows}.
void add_random(tc::gguf::GgufWriter& w, const std::string& name, DType dtype, int64_t cols, int64_t rows,
                uint64_t seed) {
  const auto values = tc::test::random_floats(static_cast<size_t>(cols * rows), seed);
  const int64_t rb = tc::kernels::row_bytes(dtype, cols);
  std::vector<std::byte> bytes(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r) tc::kernels::quantize_row(dtype, values.data() + r * cols, bytes.data() + r * rb, cols);
  w.add_tensor(name, dtype, {cols, rows}, std::move(bytes));
}

struct Section {
  std::vector<int64_t> ranks = {32, 64};   // per layer
  DType dtype = DType::F16;
  int64_t fc2_cols_delta = 0;              // layer 1's fc2 has rank + this columns
  bool drop_fc2 = false;                   // layer 1 has no fc2
  std::function<void(tc::gguf::GgufWriter&)> keys;
};

tc::gguf::GgufFile write_section(const std::string& name, const Section& s) {
  const auto spec = small_spec();
  tc::gguf::GgufWriter w;
  w.set("general.architecture", tc::gguf::Value(std::string("thermocline.test")));
  if (s.keys) s.keys(w);
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    const int64_t r = s.ranks[static_cast<size_t>(l)];
    add_random(w, tc::model::layer_tensor_name(l, "fc1"), s.dtype, spec.n_embd, r, 10 + static_cast<uint64_t>(l));
    if (l == 1 && s.drop_fc2) continue;
    add_random(w, tc::model::layer_tensor_name(l, "fc2"), s.dtype, r + (l == 1 ? s.fc2_cols_delta : 0), spec.n_ff,
               20 + static_cast<uint64_t>(l));
  }
  const auto path = tc::test::scratch_dir("predictors_" + name) / "p.gguf";
  w.write(path);
  return tc::gguf::GgufFile::open(path);
}

}  // namespace

TEST_CASE("predictors map with per-layer ranks and thresholds", "[sparse][predictors]") {
  Section s;
  s.keys = [](tc::gguf::GgufWriter& w) {
    w.set(std::string(tc::sparse::kSparseThresholdKey), tc::gguf::Value(-0.5f));
    w.set(std::string(tc::sparse::kLayerThresholdsKey), tc::gguf::Value::f32_array({-0.25f, -0.75f}));
  };
  const auto file = write_section("good", s);
  REQUIRE(tc::sparse::has_predictors(file));
  const auto p = tc::sparse::map_predictors(file, small_spec());
  REQUIRE(p.layers.size() == 2);
  CHECK(p.layers[0].rank() == 32);
  CHECK(p.layers[1].rank() == 64);
  CHECK(p.layers[1].fc2.ne[0] == 64);
  CHECK(p.layers[1].fc2.ne[1] == 96);
  CHECK(p.threshold == -0.5f);
  CHECK(p.layers[0].threshold == -0.25f);
  CHECK(p.layers[1].threshold == -0.75f);
}

TEST_CASE("the global threshold applies when there are no per-layer ones", "[sparse][predictors]") {
  Section s;
  s.keys = [](tc::gguf::GgufWriter& w) { w.set(std::string(tc::sparse::kSparseThresholdKey), tc::gguf::Value(0.125f)); };
  const auto p = tc::sparse::map_predictors(write_section("global", s), small_spec());
  CHECK(p.layers[0].threshold == 0.125f);
  CHECK(p.layers[1].threshold == 0.125f);
}

TEST_CASE("Q5_0 predictors are mapped as they are stored (matmul runs Q5_0)", "[sparse][predictors]") {
  Section s;
  s.dtype = DType::Q5_0;
  const auto file = write_section("q5_0", s);
  const auto p = tc::sparse::map_predictors(file, small_spec());
  REQUIRE(p.layers.size() == 2);
  CHECK(p.layers[0].fc1.dtype == DType::Q5_0);
  CHECK(p.layers[1].fc2.dtype == DType::Q5_0);
  const auto& info = file.tensor("blk.1.fc2.weight");
  CHECK(p.layers[1].fc2.data == static_cast<const void*>(file.tensor_data(info).data()));
}

TEST_CASE("malformed predictor sections name the file and the tensor or key", "[sparse][predictors]") {
  const auto expect = [](const std::string& name, const Section& s, const std::string& item, const std::string& what) {
    const auto file = write_section(name, s);
    INFO(name);
    CHECK_THROWS_WITH(tc::sparse::map_predictors(file, small_spec()),
                      Catch::Contains("p.gguf") && Catch::Contains(item) && Catch::Contains(what));
  };
  Section wrong_rank;
  wrong_rank.fc2_cols_delta = 32;
  expect("wrong_rank", wrong_rank, "blk.1.fc2.weight", "expected [64, 96]");
  Section missing;
  missing.drop_fc2 = true;
  expect("missing", missing, "blk.1.fc2.weight", "");
  Section count;
  count.keys = [](tc::gguf::GgufWriter& w) {
    w.set(std::string(tc::sparse::kLayerThresholdsKey), tc::gguf::Value::f32_array({-0.25f}));
  };
  expect("count", count, "thermocline.predictor.layer_thresholds", "expected n_layer = 2");
  Section nan;
  nan.keys = [](tc::gguf::GgufWriter& w) {
    w.set(std::string(tc::sparse::kLayerThresholdsKey),
          tc::gguf::Value::f32_array({0.0f, std::numeric_limits<float>::quiet_NaN()}));
  };
  expect("nan", nan, "thermocline.predictor.layer_thresholds", "non-finite");
  Section global_nan;
  global_nan.keys = [](tc::gguf::GgufWriter& w) {
    w.set(std::string(tc::sparse::kSparseThresholdKey), tc::gguf::Value(std::numeric_limits<float>::infinity()));
  };
  expect("global_inf", global_nan, "powerinfer.sparse_threshold", "finite");
}
