// Layer offload's byte accounting (per-layer weights, KV cache, head,
// workspace) against a hand computation on a generated model, and the
// choice of k at, just below and around each step of the budget.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include "engine/model/loaded_model.h"
#include "engine/sparse/layer_offload_plan.h"
#include "engine/sparse/placement_costs.h"
#include "kernels/dtype.h"
#include "tests/engine/sparse/placement_fixtures.h"
#include "tests/test_util.h"

namespace fx = tc::test::placement;
using tc::sparse::LayerOffloadCosts;
using tc::sparse::plan_layer_offload;

TEST_CASE("layer offload: costs match a hand computation", "[sparse][offload]") {
  const auto dir = tc::test::scratch_dir("layer_offload_costs");
  const auto base = fx::make_model_file(fx::tiny_sparse_options(dir / "m.gguf"));
  // Layer 1's FFN in f32, so the two layers cost differently.
  fx::rewrite_layer_ffn(base, dir / "mixed.gguf", 1, tc::kernels::DType::F32);
  const auto loaded = tc::model::load_model(dir / "mixed.gguf");
  const tc::sparse::PlacementShape shape{.n_ctx = 128, .n_parallel = 3, .n_batch = 16};
  const LayerOffloadCosts c = tc::sparse::layer_offload_costs(loaded->file, loaded->spec, shape);

  // n_embd 64, n_embd_kv 32, n_ff 256, n_vocab 512. Attention and norms
  // (f16 matrices, f32 norms) 25088 per layer (placement_costs_test); the
  // FFN's three [64 x 256] matrices: f16 3 * 32768, f32 3 * 65536. The
  // predictors fc1/fc2 in the file are not part of a layer.
  REQUIRE(c.layer_weights.size() == 2);
  CHECK(c.layer_weights[0] == 25088 + 3 * 32768);
  CHECK(c.layer_weights[1] == 25088 + 3 * 65536);
  // K and V, f16: 2 * n_parallel 3 * n_ctx 128 * 32 * 2 bytes.
  CHECK(c.kv_per_layer == 2 * 3 * 128 * 32 * 2);
  // output [64, 512] f16 + output_norm [64] f32.
  CHECK(c.output_head == 64 * 512 * 2 + 64 * 4);
  // T = 16, R = 3: f32 16*(4*64 + 2*32 + 2*256) + i32 16*3 (ids, positions,
  // horizons); the head's f32 3*(64 + 512).
  CHECK(c.workspace.buffers == (13312 + 48) * 4);
  CHECK(c.workspace.head_buffers == 1728 * 4);
  // cuBLAS over 16 tokens: layer 0's f16 matrices need their f16
  // activations, the largest ffn_down's 16*256*2 (layer 1's f32 ones
  // nothing); the head's 3 rows take the GEMV.
  CHECK(c.workspace.scratch == 16 * 256 * 2);
  CHECK(c.workspace.head_scratch == 0);
  CHECK(c.workspace.blas == 32 << 20);  // cuBLAS's workspace (kCublasWorkspaceBytes)
  const uint64_t step = 53440 + 8192 + (32 << 20);

  CHECK(c.device_bytes(0) == 0);
  CHECK(c.device_bytes(1) == step + c.kv_per_layer + c.layer_weights[0]);
  CHECK(c.device_bytes(2) ==
        step + 6912 + 2 * c.kv_per_layer + c.layer_weights[0] + c.layer_weights[1] + c.output_head);
  CHECK_THROWS(c.device_bytes(3));
  CHECK_THROWS(c.device_bytes(-1));
}

TEST_CASE("layer offload: the largest k that fits the budget", "[sparse][offload]") {
  LayerOffloadCosts c;
  c.layer_weights = {1000, 2000, 1500, 1000};
  c.kv_per_layer = 100;
  c.output_head = 700;
  c.workspace.buffers = 50;
  // device_bytes: k=1 1150, k=2 3250, k=3 4850, k=4 5950 + 700 = 6650.
  CHECK(c.device_bytes(4) == 6650);
  for (int64_t k = 1; k <= 4; ++k) {
    INFO("k = " << k);
    CHECK(plan_layer_offload(c, c.device_bytes(k)).n_device_layers == k);
    CHECK(plan_layer_offload(c, c.device_bytes(k)).device_bytes == c.device_bytes(k));
    CHECK(plan_layer_offload(c, c.device_bytes(k) - 1).n_device_layers == k - 1);
  }
  CHECK(plan_layer_offload(c, 0).n_device_layers == 0);
  CHECK(plan_layer_offload(c, 0).device_bytes == 0);
  CHECK(plan_layer_offload(c, std::numeric_limits<uint64_t>::max()).n_device_layers == 4);
  // All four layers without the head (5950) are not a plan: the head comes with the last layer.
  CHECK(plan_layer_offload(c, 6000).n_device_layers == 3);
  CHECK_THAT(plan_layer_offload(c, 6000).summary, Catch::Contains("3 of 4 layers") && Catch::Contains("4 would need"));
  CHECK_THAT(plan_layer_offload(c, 7000).summary, Catch::Contains("4 of 4 layers on the GPU with the output head"));
}
