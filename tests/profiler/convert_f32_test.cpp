// convert --to-f32: every quantized tensor of a K-quant mix and a PWRI file
// becomes F32 holding exactly dequantize_row's values; float tensors and
// metadata are kept; the errors name the file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/model_load_error.h"
#include "engine/model/loaded_model.h"
#include "kernels/cpu/quantize.h"
#include "profiler/convert_f32.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

using tc::gguf::GgufFile;
using tc::kernels::DType;

namespace {

tc::profiler::MakeModelOptions tiny(const std::filesystem::path& out, const std::string& type, bool pwri) {
  tc::profiler::MakeModelOptions o;
  o.output = out;
  o.n_vocab = 512;
  o.n_embd = 256;  // a multiple of the K-quants' 256
  o.n_layer = 2;
  o.n_ff = 512;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 64;
  o.weight_type = type;
  o.seed = 11;
  o.n_threads = 2;
  if (pwri) {
    o.ffn_form = tc::model::FfnForm::ReGLU;
    o.sparse.enabled = true;
    o.sparse.predictor_rank = 32;
    o.sparse.calib_tokens = 64;
    o.sparse.layout = tc::profiler::SparseLayout::PowerInfer;
  }
  return o;
}

}  // namespace

TEST_CASE("convert --to-f32: quantized tensors become their exact f32 values, the rest is kept",
          "[profiler][convert]") {
  const bool pwri = GENERATE(false, true);
  const std::string type = pwri ? "q4_0" : "q4_k_m";  // q4_k_m: Q4_K and Q6_K matrices, f32 norms
  const auto dir = tc::test::scratch_dir(std::string("convert_f32_") + (pwri ? "pwri" : "gguf"));
  const auto m = tiny(dir / "m.gguf", type, pwri);
  tc::profiler::make_model(m);

  tc::profiler::ConvertF32Options o;
  o.input = m.output;
  o.output = dir / "m.f32.gguf";
  o.n_threads = 2;
  uint64_t last_done = 0, last_total = 0;
  const auto r = tc::profiler::convert_to_f32(o, [&](uint64_t done, uint64_t total) {
    CHECK(done >= last_done);
    last_done = done;
    last_total = total;
  });
  CHECK(last_total > 0);
  CHECK(last_done == last_total);

  const auto in = GgufFile::open(m.output);
  const auto out = GgufFile::open(o.output);
  CHECK(out.magic() == in.magic());
  CHECK(r.file_bytes == out.file_size());
  REQUIRE(out.tensors().size() == in.tensors().size());
  CHECK(r.n_tensors == static_cast<int64_t>(in.tensors().size()));
  int64_t quantized = 0;
  std::vector<DType> seen;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const auto& a = in.tensors()[i];
    const auto& b = out.tensors()[i];
    INFO(a.name << " " << tc::kernels::dtype_name(a.dtype));
    CHECK(b.name == a.name);
    CHECK(b.ne == a.ne);
    const auto da = in.tensor_data(a);
    const auto db = out.tensor_data(b);
    if (!tc::kernels::dtype_traits(a.dtype).is_quantized) {
      CHECK(b.dtype == a.dtype);
      CHECK((da.size() == db.size() && std::memcmp(da.data(), db.data(), da.size()) == 0));
      continue;
    }
    ++quantized;
    seen.push_back(a.dtype);
    REQUIRE(b.dtype == DType::F32);
    const int64_t n = a.ne[0];
    std::vector<float> want(static_cast<size_t>(n));
    bool same = true;
    for (int64_t row = 0; row < a.n_rows(); ++row) {
      tc::kernels::dequantize_row(a.dtype, da.data() + row * tc::kernels::row_bytes(a.dtype, n), want.data(), n);
      same = same && std::memcmp(want.data(), db.data() + row * n * 4, static_cast<size_t>(n) * 4) == 0;
    }
    CHECK(same);
  }
  CHECK(r.n_dequantized == quantized);
  CHECK(quantized > 0);
  if (!pwri) {
    // The mix carries both K-quant types; both went through.
    CHECK(std::find(seen.begin(), seen.end(), DType::Q4_K) != seen.end());
    CHECK(std::find(seen.begin(), seen.end(), DType::Q6_K) != seen.end());
  }

  // Every key kept with its value and place; general.file_type says all F32;
  // one key added at the end, naming the input.
  for (const auto& [key, value] : in.metadata()) {
    INFO(key);
    REQUIRE(out.find(key) != nullptr);
    if (key == "general.file_type") {
      CHECK(out.get_u64(key) == 0);
    } else if (key != "general.alignment") {
      CHECK(*out.find(key) == value);
    }
  }
  CHECK(out.get_string(tc::profiler::kDequantizedFromKey) == "m.gguf");
  CHECK(out.metadata().back().first == tc::profiler::kDequantizedFromKey);

  // The engine loads it as the same model (the sparse layout kept).
  const auto loaded = tc::model::load_model(o.output);
  CHECK(loaded->spec.sparse_layout == pwri);
  CHECK(loaded->spec.n_layer == 2);
}

TEST_CASE("convert --to-f32 names the file it cannot read or write, and never replaces its input",
          "[profiler][convert]") {
  const auto dir = tc::test::scratch_dir("convert_f32_errors");
  tc::profiler::ConvertF32Options o;
  o.n_threads = 1;

  o.input = dir / "absent.gguf";
  o.output = dir / "out.gguf";
  CHECK_THROWS_WITH(tc::profiler::convert_to_f32(o), Catch::Contains("absent.gguf") && Catch::Contains("no such file"));

  // A truncated model: the parser's error, naming the file.
  const auto m = tiny(dir / "m.gguf", "q8_0", false);
  tc::profiler::make_model(m);
  const std::string bytes = tc::test::read_file(m.output);
  tc::test::write_file(dir / "cut.gguf", bytes.substr(0, bytes.size() / 2));
  o.input = dir / "cut.gguf";
  CHECK_THROWS_AS(tc::profiler::convert_to_f32(o), tc::gguf::ModelLoadError);
  CHECK_THROWS_WITH(tc::profiler::convert_to_f32(o), Catch::Contains("cut.gguf"));
  CHECK_FALSE(std::filesystem::exists(o.output));

  // An output that cannot be written: the error names it.
  o.input = m.output;
  o.output = dir / "no_such_dir" / "out.gguf";
  CHECK_THROWS_WITH(tc::profiler::convert_to_f32(o), Catch::Contains("no_such_dir"));

  // The input as the output (also through another spelling of its path) is
  // refused before anything is written: the quantized file stays as it was.
  for (const auto& same : {m.output, dir / "." / "m.gguf"}) {
    o.output = same;
    CHECK_THROWS_AS(tc::profiler::convert_to_f32(o), std::invalid_argument);
    CHECK_THROWS_WITH(tc::profiler::convert_to_f32(o), Catch::Contains("m.gguf") && Catch::Contains("input"));
    CHECK(tc::test::read_file(m.output) == bytes);
  }
}
