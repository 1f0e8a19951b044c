// convert --to-f32 (see convert_f32.h): streams the mapped input through
// GgufWriter fillers, each quantized tensor dequantized row by row on the
// pool's threads straight into the output buffer.
#include "profiler/convert_f32.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::profiler {
namespace {

using gguf::GgufFile;
using gguf::ModelLoadError;
using kernels::DType;

// Rows per parallel_for grain: enough work per task to hide the pool's
// hand-off, few enough that the threads share a small tensor.
constexpr int64_t kRowsPerGrain = 64;

}  // namespace

ConvertF32Result convert_to_f32(const ConvertF32Options& o,
                                const std::function<void(uint64_t done, uint64_t total)>& progress) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(o.input, ec)) throw ModelLoadError(o.input.string(), "", "no such file");
  if (std::filesystem::equivalent(o.input, o.output, ec)) {
    throw std::invalid_argument("convert --to-f32: the output " + o.output.string() +
                                " is the input file; write the copy elsewhere");
  }
  auto in = std::make_shared<const GgufFile>(GgufFile::open(o.input));
  auto pool = std::make_shared<kernels::ThreadPool>(o.n_threads);

  gguf::GgufWriter w(in->magic(), static_cast<uint32_t>(in->alignment()));
  for (const auto& [key, value] : in->metadata()) {
    if (key == "general.alignment") continue;  // the writer's own
    if (key == "general.file_type") {
      w.set(key, gguf::Value(uint32_t{0}));  // llama_ftype ALL_F32
      continue;
    }
    w.set(key, value);
  }
  w.set(std::string(kDequantizedFromKey), gguf::Value(o.input.filename().string()));

  ConvertF32Result result;
  for (const gguf::TensorInfo& info : in->tensors()) {
    ++result.n_tensors;
    if (!kernels::dtype_traits(info.dtype).is_quantized) {
      w.add_tensor(info.name, info.dtype, info.ne, [in, info](std::span<std::byte> out) {
        const auto data = in->tensor_data(info);
        std::memcpy(out.data(), data.data(), data.size());
      });
      continue;
    }
    ++result.n_dequantized;
    w.add_tensor(info.name, DType::F32, info.ne, [in, info, pool](std::span<std::byte> out) {
      const auto data = in->tensor_data(info);
      const int64_t n_cols = info.ne[0];
      const int64_t row_bytes = kernels::row_bytes(info.dtype, n_cols);
      auto* dst = reinterpret_cast<float*>(out.data());
      pool->parallel_for(info.n_rows(), kRowsPerGrain, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          kernels::dequantize_row(info.dtype, data.data() + r * row_bytes, dst + r * n_cols, n_cols);
        }
      });
    });
  }
  w.write(o.output, progress);
  result.file_bytes = std::filesystem::file_size(o.output);
  return result;
}

}  // namespace tc::profiler
