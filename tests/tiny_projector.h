// A vision projector small enough for any test: 8-pixel images in 4-pixel
// patches (2 x 2, pooled into one embedding), one layer of width 8, for a
// model of width n_embd_text. Written with profiler/make_mmproj.h.
#pragma once

#include <cstdint>

#include "profiler/make_mmproj.h"

namespace tc::test {

inline profiler::MakeMmprojOptions tiny_projector(int64_t n_embd_text) {
  profiler::MakeMmprojOptions o;
  o.n_embd_text = n_embd_text;
  o.image_size = 8;
  o.patch_size = 4;
  o.n_merge = 2;
  o.n_embd = 8;
  o.n_ff = 8;
  o.n_layer = 1;
  o.n_head = 2;
  return o;
}

}  // namespace tc::test
