// ImageEmbedder's cache: the same bytes are encoded once and keep their
// placeholder block; other bytes get another block; an evicted image comes
// back with a new block (its old prefix could be another's by then).
#include <catch2/catch.hpp>

#include <vector>

#include "profiler/make_mmproj.h"
#include "server/image_embedder.h"
#include "tests/image_encode.h"
#include "tests/test_util.h"
#include "tests/tiny_projector.h"

namespace {

std::string picture(int seed) { return tc::test::test_png(9, 7, seed); }

}  // namespace

TEST_CASE("the image cache encodes each image once and gives each its own block", "[server][images]") {
  const tc::profiler::MakeMmprojOptions o = tc::test::tiny_projector(16);
  const auto path = tc::test::scratch_dir("image_embedder") / "mmproj.gguf";
  tc::profiler::make_mmproj(path, o);
  tc::server::ImageEmbedder embedder(tc::vision::VisionModel::load(path), 1);
  const auto a = embedder.embed(picture(1));
  const auto again = embedder.embed(picture(1));
  CHECK(embedder.encoded() == 1);
  CHECK(again.block == a.block);
  CHECK(again.rows == a.rows);
  REQUIRE(a.rows->size() == 1 * 16);
  const auto b = embedder.embed(picture(2));
  CHECK(embedder.encoded() == 2);
  CHECK(b.block != a.block);
  CHECK(*b.rows != *a.rows);
  CHECK_THROWS_AS(embedder.embed("not an image"), tc::vision::ImageError);
  // Past the cache's entries the least recently used goes; back, it is encoded again with a new block.
  for (int seed = 3; seed < 3 + static_cast<int>(tc::server::ImageEmbedder::kCacheEntries); ++seed) {
    embedder.embed(picture(seed));
  }
  const int64_t before = embedder.encoded();
  const auto a_back = embedder.embed(picture(1));
  CHECK(embedder.encoded() == before + 1);
  CHECK(a_back.block != a.block);
  CHECK(*a_back.rows == *a.rows);
}
