// make-model: writes a llama-architecture GGUF with seeded random weights
// (normal, never zeros), any dims, GQA, FFN form, weight dtype, a tokenizer
// learned from a text, and a chat template. The same options give the same
// bytes, whatever the thread count. Every test model in the repo comes from
// here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "engine/model/model_spec.h"
#include "engine/text/vocab.h"

namespace tc::profiler {

struct MakeModelOptions {
  std::filesystem::path output;
  uint64_t seed = 42;
  int64_t n_vocab = 4096;
  int64_t n_embd = 256;
  int64_t n_layer = 4;
  int64_t n_ff = 688;
  int64_t n_head = 8;
  int64_t n_head_kv = 4;
  int64_t n_ctx = 2048;
  double rope_freq_base = 10000.0;
  double rms_eps = 1e-5;
  model::FfnForm ffn_form = model::FfnForm::SwiGLU;
  // Type of the 2-D weights (norms stay f32): f32, f16, bf16, q8_0, q4_0,
  // q4_k, q6_k, or q4_k_m (llama.cpp's mix: q6_k for output, attn_v and
  // ffn_down, q4_k elsewhere).
  std::string weight_type = "f16";
  bool tied_embeddings = false;
  text::TokenizerKind tokenizer = text::TokenizerKind::Spm;
  std::filesystem::path vocab_text;   // empty: the corpus shipped in profiler/data
  float weight_scale = 0.0f;          // sd of weights; 0: 1/sqrt(fan_in)
  std::string name = "thermocline-random";
  int n_threads = 0;                  // 0: hardware concurrency
};

// Progress callback: bytes written so far, total.
using MakeModelProgress = std::function<void(uint64_t done, uint64_t total)>;

// Throws std::invalid_argument for inconsistent options (n_embd % n_head,
// n_head % n_head_kv, a row length not a multiple of the dtype's block...).
void make_model(const MakeModelOptions& options, const MakeModelProgress& progress = {});

}  // namespace tc::profiler
