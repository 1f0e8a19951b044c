// Exact byte accounting on generated models against hand computations
// (f16 GGUF with predictors, q4_k_m PWRI, tied embeddings, no predictors),
// and place_model end to end: a model whose layers have different FFN
// dtypes, stats of another model, a budget below the fixed cost.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "engine/gguf/model_load_error.h"
#include "engine/model/loaded_model.h"
#include "engine/sparse/place_model.h"
#include "engine/sparse/placement_costs.h"
#include "tests/engine/sparse/placement_fixtures.h"
#include "tests/test_util.h"

using tc::kernels::DType;
using tc::sparse::PlacementShape;
namespace fx = tc::test::placement;

namespace {

tc::sparse::PlacementCosts costs_of(const std::filesystem::path& path, const PlacementShape& shape) {
  const auto loaded = tc::model::load_model(path);
  return tc::sparse::placement_costs(loaded->file, loaded->spec, loaded->predictors, shape);
}

}  // namespace

TEST_CASE("placement: costs of an f16 model with predictors match a hand computation", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("placement_costs_f16");
  const auto model = fx::make_model_file(fx::tiny_sparse_options(dir / "m.gguf"));
  const PlacementShape shape{.n_ctx = 128, .n_parallel = 3, .n_batch = 16};
  const auto loaded = tc::model::load_model(model);
  const auto c = tc::sparse::placement_costs(loaded->file, loaded->spec, loaded->predictors, shape);
  // n_embd 64, n_embd_kv 32 (2 KV heads of 16), n_ff 256, n_vocab 512, f16 = 2 bytes.
  // Per layer: attn_norm 64*4 + attn_q 64*64*2 + attn_k 64*32*2 + attn_v 64*32*2
  //            + attn_output 64*64*2 + ffn_norm 64*4 = 25088.
  CHECK(c.fixed.attention == 2 * 25088);
  // fc1 [64, 32] + fc2 [32, 256], f16: 4096 + 16384 per layer.
  CHECK(c.fixed.predictors == 2 * (4096 + 16384));
  // output [64, 512] f16 + output_norm [64] f32.
  CHECK(c.fixed.output_head == 65536 + 256);
  // 2 (K, V) * 2 layers * 3 slots * 128 positions * 32 * 2 bytes.
  CHECK(c.fixed.kv_cache == 98304);
  // T = 16, R = 3, r = 32, n_ff / 32 = 8 bitmask words.
  const auto ws = tc::sparse::hybrid_step_workspace(loaded->file, loaded->spec, loaded->predictors, shape);
  // f32 16*(4*64 + 2*32) + i32 16*3 (ids, positions, horizons), and hybrid mode's FFN: f32 16*(32 + 4*256 + 64)
  // + u32 2*16*8 + i32 256. No streamed steps' stages: no step reaches
  // kStreamMinTokens (32).
  CHECK(ws.buffers == (5120 + 48 + 17920 + 256 + 256) * 4);
  CHECK(ws.head_buffers == 3 * (64 + 512) * 4);  // f32 [R, n_embd + n_vocab]
  // The largest GPU request: the hot down projection over up to 256 rows
  // (4 splits of 64) of 16 tokens, 4*16*64 f32 partials; the f16 cuBLAS
  // matmuls need only their f16 activations (attention: 16*64*2).
  CHECK(ws.scratch == 4 * 16 * 64 * 4);
  CHECK(ws.head_scratch == 0);  // 3 rows: the GEMV
  CHECK(ws.blas == 32 << 20);   // cuBLAS's own workspace, 32 MiB
  CHECK(c.fixed.workspace == 94400 + 6912 + 16384 + (32 << 20));
  CHECK(c.fixed.total() == 50176 + 40960 + 65792 + 98304 + 117696 + (32 << 20));
  // Steps of 32 tokens may stream a dense prompt chunk's FFN: the two
  // stages of gate, up and down_t tiles, every one of the 256 rows of 128
  // bytes fitting one tile, and their row list i32 [256], join the buffers.
  const auto ws32 = tc::sparse::hybrid_step_workspace(loaded->file, loaded->spec, loaded->predictors,
                                                      {.n_ctx = 128, .n_parallel = 3, .n_batch = 32});
  CHECK(ws32.buffers == (10240 + 96 + 35840 + 512 + 256) * 4 + 2 * 3 * 256 * 128 + 256 * 4);
  REQUIRE(c.layers.size() == 2);
  for (const auto& layer : c.layers) {
    CHECK(layer.gate_dtype == DType::F16);
    CHECK(layer.up_dtype == DType::F16);
    CHECK(layer.down_t_dtype == DType::F16);  // ffn_down, transposed at load in its own dtype
    CHECK(layer.bytes() == 3 * 64 * 2);
  }
  CHECK(c.n_ff == 256);
}

TEST_CASE("placement: costs of a q4_k_m PowerInfer model count each tensor at its own dtype", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("placement_costs_q4km");
  auto o = fx::tiny_sparse_options(dir / "m.powerinfer.gguf");
  o.n_embd = 256;
  o.n_ff = 512;
  o.weight_type = "q4_k_m";
  o.sparse.layout = tc::profiler::SparseLayout::PowerInfer;
  o.sparse.predictor_type = "q8_0";
  o.sparse.predictor_rank = 64;
  const auto loaded = tc::model::load_model(fx::make_model_file(o));
  const auto costs_at = [&loaded](const PlacementShape& shape) {
    return tc::sparse::placement_costs(loaded->file, loaded->spec, loaded->predictors, shape);
  };
  const auto c = costs_at({.n_ctx = 64, .n_parallel = 1, .n_batch = 8});
  // A q4_K row of 256 is 144 bytes, q6_K 210, q8_0 8 * 34 = 272; a q8_0 row of 64 is 68.
  // Per layer: attn_norm 1024 + attn_q 256 rows q4_K + attn_k 128 rows q4_K
  //            + attn_v 128 rows q6_K + attn_output 256 rows q4_K + ffn_norm 1024.
  CHECK(c.fixed.attention == 2 * (1024 + 256 * 144 + 128 * 144 + 128 * 210 + 256 * 144 + 1024));
  // fc1 [256, 64]: 64 rows of 272; fc2 [64, 512]: 512 rows of 68.
  CHECK(c.fixed.predictors == 2 * (64 * 272 + 512 * 68));
  // output [256, 512] q6_K: 512 rows of 210, + output_norm.
  CHECK(c.fixed.output_head == 512 * 210 + 1024);
  CHECK(c.fixed.kv_cache == 2 * 2 * 1 * 64 * 128 * 2);
  // T = 8, R = 1, r = 64, 16 bitmask words: f32 8*(4*256 + 2*128) + i32 8*3
  // + f32 8*(64 + 4*512 + 256) + u32 2*8*16 + i32 512, the head's f32 (256 + 512),
  // and the GPU scratch: 8 tokens take the GEMV (no workspace); the hot down
  // projection over up to 512 rows splits 8 ways: f32 8*8*256; cuBLAS's 32 MiB.
  CHECK(c.fixed.workspace == (10240 + 24 + 18944 + 256 + 512) * 4 + 768 * 4 + 8 * 8 * 256 * 4 + (32 << 20));
  // 16 tokens take cuBLAS: f16 activations 16*256*2 = 8192 bytes, then
  // whole matrices dequantized to f16 tiles (each well under 64 MiB); the
  // largest are the hot gate and up rows of a dense step, up to 512 rows of
  // 512 bytes (attn_q: 256 rows).
  const auto ws16 =
      tc::sparse::hybrid_step_workspace(loaded->file, loaded->spec, loaded->predictors, {.n_ctx = 64, .n_parallel = 1, .n_batch = 16});
  CHECK(ws16.scratch == 8192 + 512 * 512);
  for (const auto& layer : c.layers) {
    CHECK(layer.gate_dtype == DType::Q4_K);
    CHECK(layer.up_dtype == DType::Q4_K);
    CHECK(layer.down_t_dtype == DType::Q6_K);  // ffn_down_t as stored in the PWRI file
    CHECK(layer.bytes() == 144 + 144 + 210);
  }
}

TEST_CASE("placement: tied embeddings count token_embd as the head, no predictors",
          "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("placement_costs_tied");
  auto o = fx::tiny_sparse_options(dir / "m.gguf");
  o.tied_embeddings = true;
  o.sparse.write_predictors = false;
  o.weight_type = "q8_0";
  const auto c = costs_of(fx::make_model_file(o), {.n_ctx = 32, .n_parallel = 2, .n_batch = 4});
  CHECK(c.fixed.predictors == 0);
  // token_embd [64, 512] q8_0: 512 rows of 68, + output_norm.
  CHECK(c.fixed.output_head == 512 * 68 + 256);
  // T = 4, R = 2, r = 0: f32 4*(4*64 + 2*32) + i32 4*3 + f32 4*(4*256 + 64) + u32 2*4*8
  // + i32 256, the head's f32 2*(64 + 512), the down projection's 4 splits:
  // f32 4*4*64; cuBLAS's 32 MiB.
  CHECK(c.fixed.workspace == (1280 + 12 + 4352 + 64 + 256) * 4 + 1152 * 4 + 4 * 4 * 64 * 4 + (32 << 20));
  CHECK(c.layers[0].bytes() == 3 * 68);
}

TEST_CASE("placement: shapes out of range are rejected", "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("placement_costs_shape");
  const auto model = fx::make_model_file(fx::tiny_sparse_options(dir / "m.gguf"));
  CHECK_THROWS_WITH(costs_of(model, {.n_ctx = 0, .n_parallel = 1, .n_batch = 1}), Catch::Contains("n_ctx (0)"));
  CHECK_THROWS_WITH(costs_of(model, {.n_ctx = 1, .n_parallel = 0, .n_batch = 1}), Catch::Contains("n_parallel (0)"));
  CHECK_THROWS_WITH(costs_of(model, {.n_ctx = 1, .n_parallel = 1, .n_batch = 1, .n_logit_rows = -1}),
                    Catch::Contains("n_logit_rows (-1)"));
  CHECK_THROWS_WITH(costs_of(model, {.n_ctx = int64_t{1} << 40, .n_parallel = int64_t{1} << 20, .n_batch = 1}),
                    Catch::Contains("overflows"));
}

TEST_CASE("placement: place_model ranks neurons per byte across layers of different dtypes and writes the plan",
          "[sparse][placement]") {
  const auto dir = tc::test::scratch_dir("placement_place_model");
  const auto f16_model = fx::make_model_file(fx::tiny_sparse_options(dir / "f16.gguf"));
  const auto model = dir / "mixed.gguf";
  fx::rewrite_layer_ffn(f16_model, model, 1, DType::Q8_0);  // layer 0: 384 B per neuron, layer 1: 204 B
  std::vector<std::vector<int32_t>> counts(2, std::vector<int32_t>(256, 0));
  // Layer 0 fires more (100 vs 60) but layer 1's neurons are cheaper:
  // 100/384 = 0.26 < 60/204 = 0.29, so every firing layer-1 neuron goes first.
  for (int i = 0; i < 10; ++i) counts[0][static_cast<size_t>(20 + i)] = 100;
  for (int i = 0; i < 10; ++i) counts[1][static_cast<size_t>(100 + i)] = 60;
  counts[0][3] = 7;
  const auto stats = dir / "mixed.stats";
  fx::write_stats(model, counts, stats);

  tc::sparse::PlaceRequest request;
  request.model = model;
  request.stats = stats;
  request.shape = {.n_ctx = 64, .n_parallel = 2, .n_batch = 8};
  request.vram_budget = uint64_t{1} << 40;
  request.prefetch = tc::model::PrefetchMode::Off;  // no caches kept free: the budget is the solver's
  const uint64_t fixed = tc::sparse::place_model(request).plan.costs.fixed.total();
  {
    const auto all = tc::sparse::place_model(request);
    CHECK(all.plan.n_hot() == 512);
    CHECK(all.plan.costs.layers[0].bytes() == 384);
    CHECK(all.plan.costs.layers[1].bytes() == 204);
    CHECK(all.plan.costs.layers[1].gate_dtype == DType::Q8_0);
  }
  // The 10 layer-1 neurons, then 3 of layer 0, then 40 bytes to spare.
  request.vram_budget = fixed + 10 * 204 + 3 * 384 + 40;
  const auto r = tc::sparse::place_model(request);
  std::vector<int32_t> layer1;
  for (int i = 0; i < 10; ++i) layer1.push_back(100 + i);
  CHECK(r.plan.layers[1].hot == layer1);
  CHECK(r.plan.layers[0].hot == std::vector<int32_t>{20, 21, 22});
  CHECK(r.plan.layers[0].hot_bytes == 3 * 384);
  CHECK(r.plan.layers[0].gpu_share() == Approx(300.0 / 1007.0));
  CHECK(r.plan.layers[1].gpu_share() == 1.0);
  CHECK(r.plan.vram_budget - r.plan.used_bytes() == 40);
  CHECK(r.stats_tokens == 100);

  // The file: PowerInfer's keys and the plan, tied to the model.
  const auto out = tc::sparse::default_gpu_index_path(model);
  CHECK(out.string() == model.string() + ".generated.gpuidx");
  tc::sparse::write_gpu_index(tc::sparse::to_gpu_index(r), out);
  const auto back = tc::sparse::read_gpu_index(out, 2, 256, r.model_tensor_hash);
  CHECK(back.hot[0] == r.plan.layers[0].hot);
  CHECK(back.hot[1] == layer1);
  CHECK(back.vram_capacity == 10 * 204 + 3 * 384 + 40);
  const auto f = tc::gguf::GgufFile::open(out);
  CHECK(f.get_u64("thermocline.placement.vram_budget") == fixed + 10 * 204 + 3 * 384 + 40);
  CHECK(f.get_u64("thermocline.placement.fixed_bytes") == fixed);
  CHECK(f.get_u64("thermocline.placement.hot_bytes") == 10 * 204 + 3 * 384);
  CHECK_THROWS_WITH(tc::sparse::read_gpu_index(out, 2, 256, r.model_tensor_hash + 1),
                    Catch::Contains("thermocline.placement.model.tensor_hash") && Catch::Contains("another model"));

  const std::string report = tc::sparse::placement_report(r);
  CHECK_THAT(report, Catch::Contains("| 1 | 10 / 256 | 2040 | 204 | q8_0/q8_0/q8_0 | 100.0% |") &&
                         Catch::Contains("| 0 | 3 / 256 | 1152 | 384 | f16/f16/f16 | 29.8% |") &&
                         Catch::Contains("| **fixed total** | " + std::to_string(fixed) + " |") &&
                         Catch::Contains("| unused | 40 |"));

  // A budget one byte short of the fixed part.
  request.vram_budget = fixed - 1;
  CHECK_THROWS_AS(tc::sparse::place_model(request), tc::sparse::PlacementError);
  // Statistics recorded on another model (the f16 original).
  request.vram_budget = fixed;
  fx::write_stats(f16_model, counts, dir / "f16.stats");
  request.stats = dir / "f16.stats";
  CHECK_THROWS_AS(tc::sparse::place_model(request), tc::gguf::ModelLoadError);
  CHECK_THROWS_WITH(tc::sparse::place_model(request), Catch::Contains("recorded on another model"));
}
