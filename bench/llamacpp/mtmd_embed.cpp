// mtmd_embed: llama.cpp's side of bench/peers.py vision, built there against
// the peers' llama.cpp (libmtmd, libllama, ggml; not part of this repo's
// build). Encodes one image with llama.cpp's vision projector code, times
// it, prints JSON like vision_bench's and writes the embeddings (f32
// [n_tokens, n_embd]) for the comparison, and the token layout of the
// prompt "<__media__>" (text chunks' ids, the image's token count).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>
#include <algorithm>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: mtmd_embed TEXT_MODEL MMPROJ IMAGE THREADS REPEATS OUT.f32 [auto|on|off]\n");
    return 2;
  }
  // Flash attention in the encoder: llama.cpp's default is auto (on where the backend has it).
  const std::string fa = argc > 7 ? argv[7] : "auto";
  const int threads = std::atoi(argv[4]), repeats = std::atoi(argv[5]);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (model == nullptr) return std::fprintf(stderr, "mtmd_embed: cannot load %s\n", argv[1]), 1;
  mtmd_context_params cp = mtmd_context_params_default();
  cp.use_gpu = false;
  cp.n_threads = threads;
  cp.print_timings = false;
  cp.warmup = false;
  cp.flash_attn_type = fa == "on"    ? LLAMA_FLASH_ATTN_TYPE_ENABLED
                       : fa == "off" ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                     : LLAMA_FLASH_ATTN_TYPE_AUTO;
  mtmd_context* ctx = mtmd_init_from_file(argv[2], model, cp);
  if (ctx == nullptr) return std::fprintf(stderr, "mtmd_embed: cannot load %s\n", argv[2]), 1;
  mtmd_helper_bitmap_wrapper image = mtmd_helper_bitmap_init_from_file(ctx, argv[3], false);
  if (image.bitmap == nullptr) return std::fprintf(stderr, "mtmd_embed: cannot read %s\n", argv[3]), 1;
  const std::string prompt = mtmd_default_marker();
  mtmd_input_text text{prompt.c_str(), prompt.size(), false, true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[] = {image.bitmap};
  if (mtmd_tokenize(ctx, chunks, &text, bitmaps, 1) != 0)
    return std::fprintf(stderr, "mtmd_embed: tokenize failed\n"), 1;
  std::string layout;
  const mtmd_input_chunk* image_chunk = nullptr;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (!layout.empty()) layout += ", ";
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* ids = mtmd_input_chunk_get_tokens_text(c, &n);
      layout += "[";
      for (size_t k = 0; k < n; ++k) layout += (k ? "," : "") + std::to_string(ids[k]);
      layout += "]";
    } else {
      image_chunk = c;
      layout += "{\"image\": " + std::to_string(mtmd_input_chunk_get_n_tokens(c)) + "}";
    }
  }
  if (image_chunk == nullptr) return std::fprintf(stderr, "mtmd_embed: no image chunk\n"), 1;
  const size_t n_tokens = mtmd_input_chunk_get_n_tokens(image_chunk);
  const int n_embd = llama_model_n_embd(model);
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (mtmd_encode_chunk(ctx, image_chunk) != 0) return std::fprintf(stderr, "mtmd_embed: encode failed\n"), 1;
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fprintf(stderr, "mtmd_embed: encode %d of %d: %.3f s\n", r + 1, repeats, seconds.back());
  }
  const float* embd = mtmd_get_output_embd(ctx);
  std::ofstream out(argv[6], std::ios::binary);
  out.write(reinterpret_cast<const char*>(embd), static_cast<std::streamsize>(n_tokens * n_embd * sizeof(float)));
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  std::printf("{\"engine\": \"llama.cpp\", \"flash_attn\": \"%s\", \"seconds\": [", fa.c_str());
  for (size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.4f", i ? ", " : "", seconds[i]);
  std::printf("], \"median_s\": %.4f, \"n_tokens\": %zu, \"n_embd\": %d, \"layout\": [%s]}\n",
              sorted[sorted.size() / 2], n_tokens, n_embd, layout.c_str());
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(image.bitmap);
  mtmd_free(ctx);
  llama_model_free(model);
  return 0;
}
