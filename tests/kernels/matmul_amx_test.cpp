// The amx matmul variant alongside other AMX code in the process: a thread
// whose tiles another library configured (llama.cpp configures them once
// per thread) finds that configuration again after a matmul, and a thread
// with none finds its tiles released. Runs where the CPU and OS grant AMX.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/dtype.h"
#include "tests/kernels/weight_fixtures.h"
#include "tests/test_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

namespace {

using namespace tc;
using namespace tc::kernels;

struct alignas(64) TileConfig {
  uint8_t palette = 0, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

__attribute__((target("amx-tile"))) void load_config(const TileConfig& c) { _tile_loadconfig(&c); }
__attribute__((target("amx-tile"))) TileConfig stored_config() {
  TileConfig c;
  _tile_storeconfig(&c);
  return c;
}
__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

bool same(const TileConfig& a, const TileConfig& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST_CASE("amx: a matmul gives the thread back the tile configuration it found", "[kernels][matmul][amx]") {
  if (!detail::isa_supported("amx")) {
    WARN("this CPU (or OS) has no AMX int8 tiles: not checked");
    return;
  }
  // Q8_0 with 32 tokens: on the tiles (single-threaded, so on this thread).
  for (DType dtype : {DType::Q8_0}) {
    INFO(dtype_name(dtype));
    const tc::test::Weights w = tc::test::make_weights(dtype, 512, 32, 4100);
    const auto x = tc::test::random_floats(32 * 512, 4101);
    std::vector<float> y(32 * 32);
    TileConfig theirs;
    theirs.palette = 1;
    theirs.rows[0] = 4;
    theirs.colsb[0] = 8;
    theirs.rows[7] = 2;
    theirs.colsb[7] = 64;
    load_config(theirs);
    detail::matmul_with(*detail::isa_amx(), w.tensor(), x.data(), 32, y.data(), nullptr);
    CHECK(same(stored_config(), theirs));
    release_tiles();
    detail::matmul_with(*detail::isa_amx(), w.tensor(), x.data(), 32, y.data(), nullptr);
    CHECK(same(stored_config(), TileConfig{}));
  }
}

}  // namespace
#endif
