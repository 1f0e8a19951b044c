// convert --to-f32: a copy of a GGUF or PWRI file with every quantized
// tensor dequantized to F32 (the exact values dequantize_row gives, so the
// copy holds the same weights), the float tensors (f32, f16, bf16) and the
// metadata kept. What it is for: running a quantized file's weights through
// the float kernels, which take the activations unquantized, to separate a
// kernel's weight handling from the activation rounding of the quantized
// CPU paths (docs/cuda.md: the GPU/CPU agreement check).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string_view>

namespace tc::profiler {

// str metadata key written to the output: the file it was made from.
inline constexpr std::string_view kDequantizedFromKey = "thermocline.convert.dequantized_from";

struct ConvertF32Options {
  std::filesystem::path input;   // GGUF or PWRI file
  std::filesystem::path output;  // written atomically (same magic as the input)
  int n_threads = 0;             // dequantization threads; 0: physical cores
};

struct ConvertF32Result {
  int64_t n_tensors = 0;      // tensors written
  int64_t n_dequantized = 0;  // of them, the quantized ones now F32
  uint64_t file_bytes = 0;    // size of the output
};

// Converts `o.input` to `o.output`: the input's metadata in order (with
// general.file_type set to 0, llama.cpp's "all F32", where the input has the
// key, and kDequantizedFromKey added), every tensor in order with its name
// and shape; quantized ones as F32, the others byte for byte. Throws
// gguf::ModelLoadError naming the input for an unreadable file,
// std::invalid_argument when the output is the input file (nothing is
// written), and std::runtime_error naming the output when it cannot be
// written.
// progress(done, total): bytes written.
ConvertF32Result convert_to_f32(const ConvertF32Options& o,
                                const std::function<void(uint64_t done, uint64_t total)>& progress = {});

}  // namespace tc::profiler
