// convert --to-pwri: a make-model --sparse file in GGUF layout plus a stats
// file holding its own predictors converts to the bytes make-model writes in
// the PWRI layout; quantized ffn_down is re-rounded within quantization
// error; thresholds and predictor dtypes; every refusal names file and key.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/activation_stats.h"
#include "engine/sparse/predictors.h"
#include "kernels/cpu/quantize.h"
#include "profiler/convert_pwri.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

using tc::gguf::GgufFile;
using tc::gguf::ModelLoadError;
using tc::kernels::DType;
using tc::profiler::ConvertPwriOptions;
using tc::profiler::MakeModelOptions;

namespace {

MakeModelOptions tiny_sparse(const std::filesystem::path& out, uint64_t seed = 5) {
  MakeModelOptions o;
  o.output = out;
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = "f16";
  o.ffn_form = tc::model::FfnForm::ReGLU;
  o.seed = seed;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.predictor_rank = 32;
  o.sparse.calib_tokens = 64;
  return o;
}

// A stats file recorded (in name) on `model_path`: fingerprint, counts, and,
// with `with_predictors`, the model's own fc1/fc2 as the trained predictors.
void write_own_stats(const std::filesystem::path& model_path, const std::filesystem::path& stats_path,
                     bool with_predictors = true, const std::vector<float>& layer_thresholds = {}) {
  const auto f = GgufFile::open(model_path);
  const auto spec = tc::model::read_model_spec(f);
  tc::sparse::ActivationStats s;
  s.model = tc::sparse::fingerprint_model(f, spec);
  s.rule = tc::sparse::firing_rule_for(spec.ffn_form);
  s.n_tokens = 16;
  s.n_ctx = 16;
  s.corpus = "test";
  s.thresholds.assign(static_cast<size_t>(spec.n_layer), 0.0f);
  for (int64_t l = 0; l < spec.n_layer; ++l) {
    std::vector<int32_t> counts(static_cast<size_t>(spec.n_ff));
    for (size_t i = 0; i < counts.size(); ++i) counts[i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(l)) % 17);
    s.fire_counts.push_back(std::move(counts));
  }
  tc::sparse::StatsSections sections;
  if (with_predictors) {
    sections = [&](tc::gguf::GgufWriter& w) {
      w.set(std::string(tc::sparse::kSparseThresholdKey), tc::gguf::Value(0.0f));
      if (!layer_thresholds.empty()) {
        w.set(std::string(tc::sparse::kLayerThresholdsKey), tc::gguf::Value::f32_array(layer_thresholds));
      }
      for (int64_t l = 0; l < spec.n_layer; ++l) {
        for (const char* which : {"fc1", "fc2"}) {
          const auto& info = f.tensor(tc::model::layer_tensor_name(l, which));
          const auto data = f.tensor_data(info);
          w.add_tensor(info.name, info.dtype, info.ne, std::vector<std::byte>(data.begin(), data.end()));
        }
      }
    };
  }
  tc::sparse::write_activation_stats(s, stats_path, sections);
}

ConvertPwriOptions convert_options(const std::filesystem::path& in, const std::filesystem::path& stats,
                                   const std::filesystem::path& out) {
  ConvertPwriOptions c;
  c.input = in;
  c.stats = stats;
  c.output = out;
  c.n_threads = 2;
  return c;
}

std::vector<std::vector<float>> dequantized_rows(const GgufFile& f, const tc::gguf::TensorInfo& info) {
  const auto data = f.tensor_data(info);
  const int64_t row_bytes = tc::kernels::row_bytes(info.dtype, info.ne[0]);
  std::vector<std::vector<float>> rows(static_cast<size_t>(info.n_rows()), std::vector<float>(static_cast<size_t>(info.ne[0])));
  for (int64_t r = 0; r < info.n_rows(); ++r) {
    tc::kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, rows[static_cast<size_t>(r)].data(), info.ne[0]);
  }
  return rows;
}

// Runs convert_to_pwri expecting a ModelLoadError whose message holds every
// one of `needles`; no output may be left behind.
void check_refused(const ConvertPwriOptions& c, const std::vector<std::string>& needles) {
  try {
    tc::profiler::convert_to_pwri(c);
    FAIL("converted " << c.input << " with " << c.stats);
  } catch (const ModelLoadError& e) {
    const std::string what = e.what();
    INFO(what);
    for (const auto& n : needles) CHECK(what.find(n) != std::string::npos);
  }
  CHECK_FALSE(std::filesystem::exists(c.output));
}

}  // namespace

TEST_CASE("convert --to-pwri: an f16 model gives the bytes make-model writes in the PWRI layout",
          "[profiler][convert]") {
  // A dReLU model becomes architecture bamboo in both (PowerInfer runs
  // dReLU for bamboo only), its llama.* keys renamed bamboo.*.
  const auto form = GENERATE(tc::model::FfnForm::ReGLU, tc::model::FfnForm::DReLU);
  const std::string arch = form == tc::model::FfnForm::DReLU ? "bamboo" : "llama";
  const auto dir = tc::test::scratch_dir("convert_pwri_f16_" + std::string(tc::model::ffn_form_name(form)));
  auto g = tiny_sparse(dir / "m.gguf");
  auto p = tiny_sparse(dir / "m.powerinfer.gguf");
  g.ffn_form = p.ffn_form = form;
  p.sparse.layout = tc::profiler::SparseLayout::PowerInfer;
  tc::profiler::make_model(g);
  tc::profiler::make_model(p);
  write_own_stats(g.output, dir / "m.stats.gguf");

  const auto c = convert_options(g.output, dir / "m.stats.gguf", dir / "converted.gguf");
  const auto r = tc::profiler::convert_to_pwri(c);
  const auto fc = GgufFile::open(c.output);
  const auto fp = GgufFile::open(p.output);
  CHECK(tc::test::read_file(c.output).substr(0, 4) == "PWRI");
  CHECK(fc.version() == 3);
  CHECK(r.down_dtype == DType::F16);
  CHECK_FALSE(r.down_requantized);
  CHECK(r.threshold == 0.0f);
  CHECK(r.architecture == arch);
  CHECK(fc.get_string("general.architecture") == arch);
  CHECK(GgufFile::open(g.output).get_string("general.architecture") == "llama");
  std::string notes;  // nothing PowerInfer would misread (the model's own fc1/fc2 are replaced, a note too)
  for (const auto& n : r.notes) notes += n + "; ";
  CHECK_THAT(notes, !Catch::Contains("architecture") && !Catch::Contains("drelu"));

  // The same tensors in the same order, dtypes, shapes, offsets and bytes
  // (ffn_down_t and fc1/fc2 included).
  REQUIRE(fc.tensors().size() == fp.tensors().size());
  CHECK(r.n_tensors == static_cast<int64_t>(fp.tensors().size()));
  for (size_t i = 0; i < fp.tensors().size(); ++i) {
    const auto& a = fc.tensors()[i];
    const auto& b = fp.tensors()[i];
    INFO(b.name);
    CHECK(a.name == b.name);
    CHECK(a.dtype == b.dtype);
    CHECK(a.ne == b.ne);
    CHECK(a.offset == b.offset);
    const auto da = fc.tensor_data(a);
    const auto db = fp.tensor_data(b);
    CHECK((da.size() == db.size() && std::memcmp(da.data(), db.data(), da.size()) == 0));
  }
  const auto bytes_c = tc::test::read_file(c.output);
  const auto bytes_p = tc::test::read_file(p.output);
  CHECK(bytes_c.substr(fc.data_offset()) == bytes_p.substr(fp.data_offset()));

  // Every key of make-model's PWRI file with its value, in its order; the
  // only extra key is the note of where the file came from.
  for (const auto& [key, value] : fp.metadata()) {
    INFO(key);
    REQUIRE(fc.find(key) != nullptr);
    CHECK(*fc.find(key) == value);
  }
  for (size_t i = 0; i < fc.metadata().size(); ++i) {
    const auto& key = fc.metadata()[i].first;
    if (i < fp.metadata().size()) {
      CHECK(key == fp.metadata()[i].first);
    } else {
      CHECK(key == tc::profiler::kConvertSourceKey);
    }
  }
  CHECK(fc.get_string(tc::profiler::kConvertSourceKey) == "m.gguf + predictors from m.stats.gguf");

  // Thermocline loads it as the sparse layout with its predictors.
  const auto loaded = tc::model::load_model(c.output);
  CHECK(loaded->spec.sparse_layout);
  CHECK(loaded->spec.arch == arch);
  CHECK(loaded->spec.ffn_form == form);
  const auto preds = tc::sparse::map_predictors(loaded->file, loaded->spec);
  CHECK(preds.layers.size() == 2);
  CHECK(preds.layers[0].rank() == 32);
}

TEST_CASE("convert --to-pwri writes the rms epsilon PowerInfer requires where the input leaves it out",
          "[profiler][convert]") {
  const auto dir = tc::test::scratch_dir("convert_pwri_eps");
  auto g = tiny_sparse(dir / "full.gguf");
  g.rms_eps = 1e-5;  // the default Thermocline assumes without the key
  tc::profiler::make_model(g);
  // The same model without llama.attention.layer_norm_rms_epsilon.
  const auto full = GgufFile::open(g.output);
  tc::gguf::GgufWriter w(tc::gguf::Magic::GGUF);
  for (const auto& [key, value] : full.metadata()) {
    if (key != "llama.attention.layer_norm_rms_epsilon") w.set(key, value);
  }
  for (const auto& t : full.tensors()) {
    const auto data = full.tensor_data(t);
    w.add_tensor(t.name, t.dtype, t.ne, std::vector<std::byte>(data.begin(), data.end()));
  }
  w.write(dir / "m.gguf");
  write_own_stats(dir / "m.gguf", dir / "m.stats.gguf");

  const auto c = convert_options(dir / "m.gguf", dir / "m.stats.gguf", dir / "m.powerinfer.gguf");
  tc::profiler::convert_to_pwri(c);
  const auto out = GgufFile::open(c.output);
  CHECK(out.get_f64("llama.attention.layer_norm_rms_epsilon") == Approx(1e-5));
  CHECK(tc::model::read_model_spec(out).rms_eps == Approx(1e-5));
}

TEST_CASE("convert --to-pwri: tied embeddings get output.weight, a copy of token_embd", "[profiler][convert]") {
  const auto dir = tc::test::scratch_dir("convert_pwri_tied");
  auto g = tiny_sparse(dir / "m.gguf");
  g.tied_embeddings = true;
  tc::profiler::make_model(g);
  write_own_stats(g.output, dir / "m.stats.gguf");
  const auto c = convert_options(g.output, dir / "m.stats.gguf", dir / "converted.gguf");
  const auto r = tc::profiler::convert_to_pwri(c);
  const auto fin = GgufFile::open(g.output);
  const auto fc = GgufFile::open(c.output);
  REQUIRE(fin.find_tensor("output.weight") == nullptr);
  const auto& embd = fc.tensor("token_embd.weight");
  const auto& out = fc.tensor("output.weight");
  CHECK(out.dtype == embd.dtype);
  CHECK(out.ne == embd.ne);
  const auto a = fc.tensor_data(embd);
  const auto b = fc.tensor_data(out);
  CHECK((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0));
  CHECK(r.n_tensors == static_cast<int64_t>(fc.tensors().size()));
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.find("output.weight written as a copy") != std::string::npos;
  CHECK(noted);
  // It loads with its own output head (the same bytes as the embeddings).
  const auto lin = tc::model::load_model(g.output);
  const auto lout = tc::model::load_model(c.output);
  CHECK(lin->spec.tied_embeddings);
  CHECK_FALSE(lout->spec.tied_embeddings);
}

TEST_CASE("convert --to-pwri: q4_0 ffn_down is re-quantized onto the nearest grid point", "[profiler][convert]") {
  const auto dir = tc::test::scratch_dir("convert_pwri_q4_0");
  auto g = tiny_sparse(dir / "q.gguf", 7);
  g.weight_type = "q4_0";
  tc::profiler::make_model(g);
  write_own_stats(g.output, dir / "q.stats.gguf", true, {0.5f, -0.25f});

  auto c = convert_options(g.output, dir / "q.stats.gguf", dir / "q.powerinfer.gguf");
  c.predictor_type = "q5_0";
  const auto r = tc::profiler::convert_to_pwri(c);
  CHECK(r.down_dtype == DType::Q4_0);
  CHECK(r.down_requantized);
  bool noted = false;
  for (const auto& n : r.notes) noted = noted || n.find("re-rounds") != std::string::npos;
  CHECK(noted);

  const auto fg = GgufFile::open(g.output);
  const auto fc = GgufFile::open(c.output);
  for (int64_t l = 0; l < 2; ++l) {
    auto name = [l](const char* t) { return tc::model::layer_tensor_name(l, t); };
    INFO("layer " << l);
    const auto down = dequantized_rows(fg, fg.tensor(name("ffn_down"), {256, 64}));      // [n_embd][n_ff]
    const auto& dt_info = fc.tensor(name("ffn_down_t"), {64, 256});
    REQUIRE(dt_info.dtype == DType::Q4_0);
    const auto down_t = dequantized_rows(fc, dt_info);                                      // [n_ff][n_embd]
    const auto dt_bytes = fc.tensor_data(dt_info);
    double sq_err = 0, sq = 0;
    for (int64_t i = 0; i < 256; ++i) {
      for (int64_t b = 0; b < 2; ++b) {  // the two 32-blocks of row i
        // As quantize_test: d32 = (signed max) / -8 over the block of the
        // transposed values; each lands on the nearest point of d32 * {-8..7}.
        double max = 0;
        for (int64_t j = 32 * b; j < 32 * b + 32; ++j) {
          const double v = down[static_cast<size_t>(j)][static_cast<size_t>(i)];
          if (std::fabs(v) > std::fabs(max)) max = v;
        }
        const double d32 = max / -8.0;
        uint16_t h;
        std::memcpy(&h, dt_bytes.data() + (i * 2 + b) * 18, sizeof h);
        const double d16 = tc::kernels::f16_to_f32(h);
        for (int64_t j = 32 * b; j < 32 * b + 32; ++j) {
          const double x = down[static_cast<size_t>(j)][static_cast<size_t>(i)];
          const double y = down_t[static_cast<size_t>(i)][static_cast<size_t>(j)];
          double grid = INFINITY;
          for (int k = -8; k <= 7; ++k) grid = std::min(grid, std::fabs(x - d32 * k));
          INFO("neuron " << i << " channel " << j << " x " << x << " y " << y);
          REQUIRE(std::fabs(y - x) <= grid + 8.0 * std::fabs(d32 - d16) + 1e-6 * std::fabs(d32));
          sq_err += (y - x) * (y - x);
          sq += x * x;
        }
      }
    }
    // The second rounding costs about one q4_0 step's rms (~0.1 of the values').
    CHECK(std::sqrt(sq_err / sq) < 0.15);
    // fc1/fc2 in the requested q5_0, close to the stored q4_0 values.
    for (const char* which : {"fc1", "fc2"}) {
      const auto& out = fc.tensor(name(which));
      CHECK(out.dtype == DType::Q5_0);
      const auto a = dequantized_rows(fg, fg.tensor(name(which)));
      const auto b = dequantized_rows(fc, out);
      double e = 0, s = 0;
      for (size_t row = 0; row < a.size(); ++row) {
        for (size_t col = 0; col < a[row].size(); ++col) {
          e += (a[row][col] - b[row][col]) * (a[row][col] - b[row][col]);
          s += a[row][col] * a[row][col];
        }
      }
      CHECK(std::sqrt(e / s) < 0.05);
    }
  }
  // Every other tensor keeps its bytes.
  for (const auto& t : fg.tensors()) {
    if (t.name.find("ffn_down") != std::string::npos || t.name.find(".fc") != std::string::npos) continue;
    INFO(t.name);
    const auto a = fg.tensor_data(t);
    const auto b = fc.tensor_data(fc.tensor(t.name));
    CHECK((a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0));
  }
  CHECK(fc.get_f32_array(tc::sparse::kLayerThresholdsKey) == std::vector<float>{0.5f, -0.25f});
  // Loadable, the q5_0 predictors mapped as they are, with their thresholds.
  const auto loaded = tc::model::load_model(c.output);
  const auto preds = tc::sparse::map_predictors(loaded->file, loaded->spec);
  CHECK(preds.layers[0].fc1.dtype == DType::Q5_0);
  CHECK(preds.layers[1].threshold == -0.25f);

  // --threshold replaces the global threshold and drops the per-layer ones.
  c.output = dir / "q.t.powerinfer.gguf";
  c.predictor_type.clear();
  c.threshold = 1.5f;
  const auto r2 = tc::profiler::convert_to_pwri(c);
  const auto ft = GgufFile::open(c.output);
  CHECK(r2.threshold == 1.5f);
  CHECK_FALSE(r2.layer_thresholds);
  CHECK(ft.get_f64(tc::sparse::kSparseThresholdKey) == 1.5);
  CHECK_FALSE(ft.has(tc::sparse::kLayerThresholdsKey));
  CHECK(ft.tensor(tc::model::layer_tensor_name(0, "fc1")).dtype == DType::Q4_0);  // as stored
}

TEST_CASE("convert --to-pwri refuses what it cannot convert, naming the file and the key or tensor",
          "[profiler][convert]") {
  const auto dir = tc::test::scratch_dir("convert_pwri_refusals");
  auto a = tiny_sparse(dir / "a.gguf", 5);
  auto b = tiny_sparse(dir / "b.gguf", 6);  // same shapes, other weights
  tc::profiler::make_model(a);
  tc::profiler::make_model(b);
  write_own_stats(a.output, dir / "a.stats.gguf");
  write_own_stats(a.output, dir / "a.plain.stats.gguf", false);
  const auto out = dir / "out.gguf";
  const std::string a_stats = (dir / "a.stats.gguf").string();

  {  // a SwiGLU model
    MakeModelOptions s;
    s.output = dir / "swiglu.gguf";
    s.n_vocab = 512;
    s.n_embd = 64;
    s.n_layer = 1;
    s.n_ff = 128;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_threads = 2;
    tc::profiler::make_model(s);
    check_refused(convert_options(s.output, a_stats, out),
                  {s.output.string(), std::string(tc::model::kFfnFormKey), "swiglu", "reglu, drelu or relu"});
  }
  {  // a file already in the PWRI layout
    auto p = tiny_sparse(dir / "p.gguf");
    p.sparse.layout = tc::profiler::SparseLayout::PowerInfer;
    tc::profiler::make_model(p);
    check_refused(convert_options(p.output, a_stats, out), {p.output.string(), "blk.0.ffn_down_t.weight", "PWRI"});
  }
  {  // stats of another model
    check_refused(convert_options(b.output, a_stats, out),
                  {a_stats, b.output.string(), tc::sparse::stats_key("model.tensor_hash"), "another model"});
  }
  {  // stats without predictors
    check_refused(convert_options(a.output, dir / "a.plain.stats.gguf", out),
                  {(dir / "a.plain.stats.gguf").string(), "blk.0.fc1.weight", "thermocline profile --train-predictors"});
  }
  {  // a missing model or stats file
    check_refused(convert_options(dir / "nope.gguf", a_stats, out), {(dir / "nope.gguf").string(), "no such file"});
    check_refused(convert_options(a.output, dir / "nope.stats.gguf", out),
                  {(dir / "nope.stats.gguf").string(), "no such file", "--stats"});
  }
  {  // a predictor type that is not f16, q8_0, q4_0 or q5_0
    auto c = convert_options(a.output, a_stats, out);
    c.predictor_type = "q6_k";
    CHECK_THROWS_WITH(tc::profiler::convert_to_pwri(c), Catch::Contains("q6_k") && Catch::Contains("q5_0"));
    CHECK_FALSE(std::filesystem::exists(out));
  }
}
