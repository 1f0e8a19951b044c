// Placement test fixtures: generated models, a per-layer dtype rewrite, stats.
#include "tests/engine/sparse/placement_fixtures.h"

#include <algorithm>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/activation_stats.h"
#include "kernels/cpu/quantize.h"

namespace tc::test::placement {

profiler::MakeModelOptions tiny_sparse_options(const std::filesystem::path& path) {
  profiler::MakeModelOptions o;
  o.output = path;
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_ff = 256;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 256;
  o.weight_type = "f16";
  o.ffn_form = model::FfnForm::ReGLU;
  o.seed = 11;
  o.n_threads = 2;
  o.sparse.enabled = true;
  o.sparse.predictor_rank = 32;
  return o;
}

std::filesystem::path make_model_file(const profiler::MakeModelOptions& options) {
  profiler::make_model(options);
  return options.output;
}

void rewrite_layer_ffn(const std::filesystem::path& in, const std::filesystem::path& out, int64_t layer,
                       kernels::DType dtype) {
  const auto f = gguf::GgufFile::open(in);
  gguf::GgufWriter w(f.magic(), static_cast<uint32_t>(f.alignment()));
  for (const auto& [key, value] : f.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  std::vector<std::string> targets;
  for (const char* t : {"ffn_gate", "ffn_up", "ffn_down", "ffn_down_t"}) {
    targets.push_back(model::layer_tensor_name(layer, t));
  }
  for (const auto& t : f.tensors()) {
    const auto data = f.tensor_data(t);
    if (std::find(targets.begin(), targets.end(), t.name) == targets.end()) {
      w.add_tensor(t.name, t.dtype, t.ne, std::vector<std::byte>(data.begin(), data.end()));
      continue;
    }
    const int64_t cols = t.ne[0];
    const int64_t rows = t.n_rows();
    const int64_t in_row = kernels::row_bytes(t.dtype, cols);
    const int64_t out_row = kernels::row_bytes(dtype, cols);
    std::vector<std::byte> bytes(static_cast<size_t>(out_row * rows));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(t.dtype, data.data() + r * in_row, row.data(), cols);
      kernels::quantize_row(dtype, row.data(), bytes.data() + r * out_row, cols);
    }
    w.add_tensor(t.name, dtype, t.ne, std::move(bytes));
  }
  w.write(out);
}

void write_stats(const std::filesystem::path& model_path, const std::vector<std::vector<int32_t>>& counts,
                 const std::filesystem::path& out) {
  const auto file = gguf::GgufFile::open(model_path);
  const auto spec = model::read_model_spec(file);
  sparse::ActivationStats s;
  s.model = sparse::fingerprint_model(file, spec);
  s.rule = sparse::FiringRule::GatePositive;
  int32_t most = 1;
  for (const auto& layer : counts) {
    for (const int32_t c : layer) most = std::max(most, c);
  }
  s.n_tokens = static_cast<uint64_t>(most);
  s.n_ctx = 64;
  s.corpus = "fixture";
  s.thresholds.assign(counts.size(), 0.0f);
  s.fire_counts = counts;
  sparse::write_activation_stats(s, out);
}

}  // namespace tc::test::placement
