// GGUF interop with llama.cpp in both directions: files written by ggml's
// own GGUF writer are read by tc::gguf::GgufFile with every key, value,
// dtype, shape and byte intact; files written by tc::gguf::GgufWriter are
// accepted by ggml's gguf_init_from_file with the same content and offsets.
// Skips with a warning without the library.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/dtype.h"
#include "tests/oracle/ggml_oracle.h"
#include "tests/test_util.h"

namespace {

using tc::gguf::GgufFile;
using tc::gguf::GgufWriter;
using tc::gguf::Magic;
using tc::gguf::Value;
using tc::gguf::ValueType;
using tc::kernels::DType;
using tc::oracle::GgmlContext;
using tc::oracle::GgufContext;
using tc::oracle::GgufSpec;

std::string show(const Value& v) { return v.to_display_string(1000); }

// Closes ggml handles when a REQUIRE leaves the test early.
struct GgmlFile {
  GgufContext* gguf = nullptr;
  GgmlContext* data = nullptr;
  ~GgmlFile() {
    if (gguf) tc::oracle::ggml()->gguf_free(gguf);
    if (data) tc::oracle::ggml()->ggml_free(data);
  }
};

// Opens `path` with ggml, loading tensor data into a ggml context too.
void open_with_ggml(const std::filesystem::path& path, GgmlFile& out) {
  out.gguf = tc::oracle::ggml()->gguf_init_from_file(path.c_str(), {false, &out.data});
}

int64_t rows_of(const std::vector<int64_t>& ne) {
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  return rows;
}

// Checks that our reader sees exactly `spec` in `path`, and that its data
// offset and tensor offsets agree with ggml's reading of the same file.
void check_our_reader(const std::filesystem::path& path, const GgufSpec& spec, uint64_t alignment) {
  const GgufFile file = GgufFile::open(path);
  CHECK(file.magic() == Magic::GGUF);
  CHECK(file.version() == 3);
  CHECK(file.alignment() == alignment);
  CHECK(file.data_offset() % alignment == 0);

  // Every key in file order, with the same type and value.
  REQUIRE(file.metadata().size() == spec.metadata.size());
  for (size_t i = 0; i < spec.metadata.size(); ++i) {
    const auto& [key, value] = file.metadata()[i];
    const auto& [want_key, want_value] = spec.metadata[i];
    INFO("key " << want_key << ": expected " << show(want_value) << ", read " << show(value));
    CHECK(key == want_key);
    CHECK(value.type() == want_value.type());
    CHECK(value == want_value);
  }

  GgmlFile g;
  open_with_ggml(path, g);
  REQUIRE(g.gguf != nullptr);
  const auto& api = *tc::oracle::ggml();
  CHECK(file.data_offset() == api.gguf_get_data_offset(g.gguf));

  REQUIRE(file.tensors().size() == spec.tensors.size());
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const auto& want = spec.tensors[i];
    INFO("tensor " << want.name);
    CHECK(file.tensors()[i].name == want.name);  // file order kept
    const auto* info = file.find_tensor(want.name);
    REQUIRE(info != nullptr);
    CHECK(info->dtype == want.dtype);
    CHECK(info->ne == want.ne);
    CHECK(info->n_bytes == want.data.size());
    CHECK(info->offset % alignment == 0);
    const int64_t id = api.gguf_find_tensor(g.gguf, want.name.c_str());
    REQUIRE(id >= 0);
    CHECK(info->offset == api.gguf_get_tensor_offset(g.gguf, id));
    const auto bytes = file.tensor_data(*info);
    REQUIRE(bytes.size() == want.data.size());
    CHECK(std::memcmp(bytes.data(), want.data.data(), want.data.size()) == 0);
  }
}

// Tensors of every dtype Thermocline knows, 1 to 4 dimensions, with
// quantized random data (our quantizer) or random bytes (integer types).
std::vector<tc::oracle::GgufTensorSpec> every_dtype_tensors() {
  struct Shape {
    DType dtype;
    std::vector<int64_t> ne;
  };
  const std::vector<Shape> shapes = {
      {DType::F32, {64, 3}},       {DType::F16, {32, 2, 3}},    {DType::BF16, {96}},
      {DType::Q8_0, {64, 5}},      {DType::Q4_0, {32, 3, 2, 2}}, {DType::Q4_K, {512, 3}},
      {DType::Q6_K, {256, 2, 2}},  {DType::I8, {7, 3}},         {DType::I16, {5}},
      {DType::I32, {9, 2}},        {DType::I64, {3, 1, 2}},     {DType::F64, {4, 4}},
  };
  std::vector<tc::oracle::GgufTensorSpec> out;
  std::mt19937_64 rng(31);
  uint64_t seed = 500;
  for (const auto& s : shapes) {
    tc::oracle::GgufTensorSpec t{"t." + std::string(tc::kernels::dtype_name(s.dtype)), s.dtype, s.ne, {}};
    const int64_t rows = rows_of(s.ne);
    const int64_t row = tc::kernels::row_bytes(s.dtype, s.ne[0]);
    t.data.resize(static_cast<size_t>(row * rows));
    if (tc::kernels::dtype_traits(s.dtype).is_quantized || s.dtype == DType::F32 ||
        s.dtype == DType::F16 || s.dtype == DType::BF16) {
      const auto x = tc::test::random_floats(static_cast<size_t>(s.ne[0] * rows), seed++, 0.5f);
      for (int64_t r = 0; r < rows; ++r) {
        tc::kernels::quantize_row(s.dtype, x.data() + r * s.ne[0], t.data.data() + r * row, s.ne[0]);
      }
    } else {
      for (auto& b : t.data) b = static_cast<uint8_t>(rng());
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The metadata of the reference file plus a key that only this file has.
GgufSpec writer_spec() {
  GgufSpec spec = tc::oracle::reference_gguf_spec();
  spec.tensors = every_dtype_tensors();
  spec.metadata.emplace_back("test.writer", Value("thermocline"));
  return spec;
}

}  // namespace

TEST_CASE("oracle: GgufFile reads a llama.cpp-written GGUF exactly (keys, values, tensors)",
          "[oracle][gguf]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto dir = tc::test::scratch_dir("oracle_gguf_from_ggml");
  const auto path = dir / "reference.gguf";
  const GgufSpec spec = tc::oracle::reference_gguf_spec();
  REQUIRE(tc::oracle::write_reference_gguf(path) == path);
  check_our_reader(path, spec, 32);

  // The typed getters a model loader uses, on llama.cpp's spelling of things.
  const GgufFile file = GgufFile::open(path);
  CHECK(file.get_string("general.architecture") == "llama");
  CHECK(file.get_u64("llama.embedding_length") == 256);
  CHECK(file.get_u64("llama.attention.head_count_kv") == 2);
  CHECK(file.get_f64("llama.rope.freq_base") == 10000.0);
  CHECK(file.get_f64("llama.attention.layer_norm_rms_epsilon") == static_cast<double>(1e-5f));
  CHECK(file.get_bool("tokenizer.ggml.add_bos_token", false));
  CHECK(file.get_i64("test.i64") == -0x4000000000000003ll);
  CHECK(file.get_u64("test.u64") == 0x8000000000000005ull);
  const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 32);
  CHECK(tokens[5] == "\xE2\x96\x81the");
  CHECK(file.get_f32_array("tokenizer.ggml.scores").size() == 32);
  CHECK(file.get_i32_array("tokenizer.ggml.token_type")[0] == 2);
  CHECK(file.get_string_array("test.arr.str")[3] == std::string(300, 'x'));
  CHECK(file.tensor("blk.0.ffn_down.weight", {512, 256}).dtype == DType::Q6_K);
}

TEST_CASE("oracle: GgufFile accepts a ggml-written general.alignment = 64 file exactly when ggml does",
          "[oracle][gguf]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  // ggml's writer (3.22.1) takes the alignment key as plain metadata but
  // lays tensors out with the default 32, so odd-sized tensors end up at
  // offsets that the key's 64 forbids and ggml's own reader rejects the
  // file. Whatever ggml does, our reader must agree: read it identically
  // when ggml accepts it, reject it with a ModelLoadError when ggml does.
  const auto dir = tc::test::scratch_dir("oracle_gguf_from_ggml_align64");
  GgufSpec spec = tc::oracle::reference_gguf_spec();
  spec.metadata.insert(spec.metadata.begin() + 1, {"general.alignment", Value(uint32_t{64})});
  // Odd sizes so that alignment padding is actually needed between tensors.
  spec.tensors.push_back({"odd.f32", DType::F32, {3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}});
  spec.tensors.push_back({"odd.q8_0", DType::Q8_0, {32}, std::vector<uint8_t>(34, 0x11)});
  spec.tensors.push_back({"after.odd", DType::F16, {2}, {0x00, 0x3c, 0x00, 0xc0}});
  const auto path = dir / "align64.gguf";
  tc::oracle::write_gguf_with_ggml(spec, path);

  GgmlFile g;
  open_with_ggml(path, g);
  if (g.gguf != nullptr) {
    CHECK(tc::oracle::ggml()->gguf_get_alignment(g.gguf) == 64);
    check_our_reader(path, spec, 64);
  } else {
    CHECK_THROWS_AS(GgufFile::open(path), tc::gguf::ModelLoadError);
  }
}

TEST_CASE("oracle: llama.cpp reads GGUF files written by GgufWriter (alignment 32 and 64)",
          "[oracle][gguf]") {
  TC_ORACLE_REQUIRE_OR_SKIP();
  const auto& api = *tc::oracle::ggml();
  const GgufSpec spec = writer_spec();
  for (uint32_t alignment : {32u, 64u}) {
    INFO("alignment " << alignment);
    const auto dir = tc::test::scratch_dir("oracle_gguf_to_ggml_" + std::to_string(alignment));
    const auto path = dir / "ours.gguf";
    GgufWriter writer(Magic::GGUF, alignment);
    for (const auto& [key, value] : spec.metadata) writer.set(key, value);
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
      const auto& t = spec.tensors[i];
      if (i % 2 == 0) {
        std::vector<std::byte> bytes(t.data.size());
        std::memcpy(bytes.data(), t.data.data(), t.data.size());
        writer.add_tensor(t.name, t.dtype, t.ne, std::move(bytes));
      } else {
        // The lazy path make-model uses.
        writer.add_tensor(t.name, t.dtype, t.ne, [&t](std::span<std::byte> out) {
          REQUIRE(out.size() == t.data.size());
          std::memcpy(out.data(), t.data.data(), t.data.size());
        });
      }
    }
    writer.write(path);

    GgmlFile g;
    open_with_ggml(path, g);
    REQUIRE(g.gguf != nullptr);  // ggml validates offsets, padding and sizes on open
    CHECK(api.gguf_get_version(g.gguf) == 3);
    CHECK(api.gguf_get_alignment(g.gguf) == alignment);

    // Every key with the same type and value; general.alignment is the one
    // key ggml may see beyond ours (required when it is not the default).
    const int64_t align_id = api.gguf_find_key(g.gguf, "general.alignment");
    if (alignment != 32) REQUIRE(align_id >= 0);
    if (align_id >= 0) {
      REQUIRE(api.gguf_get_kv_type(g.gguf, align_id) == static_cast<int>(ValueType::UINT32));
      CHECK(api.gguf_get_val_u32(g.gguf, align_id) == alignment);
    }
    CHECK(api.gguf_get_n_kv(g.gguf) == static_cast<int64_t>(spec.metadata.size()) + (align_id >= 0 ? 1 : 0));
    for (const auto& [key, value] : spec.metadata) {
      const int64_t id = api.gguf_find_key(g.gguf, key.c_str());
      INFO("key " << key);
      REQUIRE(id >= 0);
      const Value read = tc::oracle::ggml_kv_value(g.gguf, id);
      INFO("expected " << show(value) << ", ggml read " << show(read));
      CHECK(read == value);
    }

    // Tensors: type, shape, size, aligned offsets equal to our reader's, and
    // the bytes ggml loaded itself.
    const GgufFile ours = GgufFile::open(path);
    CHECK(ours.data_offset() == api.gguf_get_data_offset(g.gguf));
    REQUIRE(api.gguf_get_n_tensors(g.gguf) == static_cast<int64_t>(spec.tensors.size()));
    for (size_t i = 0; i < spec.tensors.size(); ++i) {
      const auto& t = spec.tensors[i];
      INFO("tensor " << t.name);
      const int64_t id = api.gguf_find_tensor(g.gguf, t.name.c_str());
      REQUIRE(id == static_cast<int64_t>(i));
      CHECK(api.gguf_get_tensor_type(g.gguf, id) == static_cast<int>(t.dtype));
      const int64_t* ne = api.gguf_get_tensor_ne(g.gguf, id);
      for (size_t d = 0; d < 4; ++d) CHECK(ne[d] == (d < t.ne.size() ? t.ne[d] : 1));
      CHECK(api.gguf_get_tensor_size(g.gguf, id) == t.data.size());
      const size_t offset = api.gguf_get_tensor_offset(g.gguf, id);
      CHECK(offset % alignment == 0);
      REQUIRE(ours.find_tensor(t.name) != nullptr);
      CHECK(ours.find_tensor(t.name)->offset == offset);
      const auto* tensor = api.ggml_get_tensor(g.data, t.name.c_str());
      REQUIRE(tensor != nullptr);
      REQUIRE(api.ggml_nbytes(tensor) == t.data.size());
      CHECK(std::memcmp(api.ggml_get_data(tensor), t.data.data(), t.data.size()) == 0);
    }
  }
}
