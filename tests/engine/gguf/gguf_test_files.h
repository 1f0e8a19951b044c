// Test fixtures for the GGUF reader: a small valid writer-made file and the
// malformed cases derived from it by patching bytes (the committed corpus in
// tests/data/gguf_malformed/ is regenerated from these and compared).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace tc::test::gguf {

// Names and shapes inside the base file.
inline constexpr const char* kTensorA = "tensor.a";  // q8_0 ne = [32, 2], 68 bytes
inline constexpr const char* kTensorB = "tensor.b";  // f32 ne = [16, 4], 256 bytes, last
inline constexpr int kBaseAlignment = 64;

// The valid base file: GGUF v3, alignment 64, a few metadata keys (strings,
// a bool, a string array, arrays nested 16 deep) and two tensors with random
// data. The last tensor ends exactly at the end of the file, so every proper
// prefix of it is truncated. Deterministic (fixed seeds).
std::string base_file_bytes();
// The byte offset just past the tensor infos (before the alignment padding).
size_t base_header_end(const std::string& base);

struct MalformedCase {
  std::string name;         // corpus file is <name>.gguf
  std::string description;  // what was broken (for the README)
  std::string item;         // "key 'x'" / "tensor 'x'" as the message shows it, or ""
  std::string item_name;    // ModelLoadError::item(): the bare key or tensor name, or ""
  std::vector<std::string> words;  // must all appear in the message
  std::function<std::string(const std::string& base)> make;
};

const std::vector<MalformedCase>& malformed_cases();

std::filesystem::path malformed_corpus_dir();  // tests/data/gguf_malformed

}  // namespace tc::test::gguf
