// The .generated.gpuidx file: writer and validating reader.
#include "engine/sparse/gpu_index.h"

#include <cstring>
#include <set>
#include <stdexcept>

#include "engine/gguf/gguf_writer.h"

namespace tc::sparse {
namespace {

using gguf::ModelLoadError;
using kernels::DType;

constexpr std::string_view kNotePrefix = "thermocline.placement.";

std::vector<std::byte> i32_bytes(const std::vector<int32_t>& v) {
  std::vector<std::byte> bytes(v.size() * sizeof(int32_t));
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// The tensor as i32 values, after checking dtype and rank; `n` is the
// required length (-1: any).
std::vector<int32_t> read_i32_vector(const gguf::GgufFile& f, const std::string& name, int64_t n,
                                     int64_t n_layer) {
  const auto* info = f.find_tensor(name);
  if (info == nullptr) {
    throw ModelLoadError::for_tensor(f.path(), name,
                                     "is missing (the model has n_layer = " + std::to_string(n_layer) +
                                         "; a gpuidx file has blk.N.gpu_idx and blk.N.gpu_bucket for each layer)");
  }
  if (info->dtype != DType::I32 || info->ne.size() != 1 || (n >= 0 && info->ne[0] != n)) {
    throw ModelLoadError::for_tensor(f.path(), name,
                                     "is " + std::string(kernels::dtype_name(info->dtype)) + " " +
                                         info->shape_string() + ", expected i32 [" +
                                         (n >= 0 ? std::to_string(n) + "] (n_ff)" : std::string("k]")));
  }
  std::vector<int32_t> values(static_cast<size_t>(info->ne[0]));
  const auto data = f.tensor_data(*info);
  if (!values.empty()) std::memcpy(values.data(), data.data(), values.size() * sizeof(int32_t));
  return values;
}

// The layer's GPU neurons from its mask and bucket, which must agree.
std::vector<int32_t> read_layer(const gguf::GgufFile& f, int64_t layer, int64_t n_layer, int64_t n_ff) {
  const std::string mask_name = gpu_idx_tensor_name(layer);
  const std::string bucket_name = gpu_bucket_tensor_name(layer);
  const auto mask = read_i32_vector(f, mask_name, n_ff, n_layer);
  const auto bucket = read_i32_vector(f, bucket_name, -1, n_layer);
  int64_t n_on = 0;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i] != 0 && mask[i] != 1) {
      throw ModelLoadError::for_tensor(f.path(), mask_name,
                                       "neuron " + std::to_string(i) + " has " + std::to_string(mask[i]) +
                                           ", expected 0 (CPU) or 1 (GPU)");
    }
    n_on += mask[i];
  }
  for (size_t j = 0; j < bucket.size(); ++j) {
    const int32_t idx = bucket[j];
    if (idx < 0 || idx >= n_ff) {
      throw ModelLoadError::for_tensor(f.path(), bucket_name,
                                       "entry " + std::to_string(j) + " is " + std::to_string(idx) +
                                           ", outside [0, n_ff = " + std::to_string(n_ff) + ")");
    }
    if (j > 0 && idx <= bucket[j - 1]) {
      throw ModelLoadError::for_tensor(f.path(), bucket_name,
                                       "entry " + std::to_string(j) + " (" + std::to_string(idx) +
                                           ") is not above the one before (" + std::to_string(bucket[j - 1]) +
                                           "); expected strictly ascending neuron indices");
    }
    if (mask[static_cast<size_t>(idx)] != 1) {
      throw ModelLoadError::for_tensor(f.path(), bucket_name,
                                       "lists neuron " + std::to_string(idx) + " but " + mask_name +
                                           " marks it 0 (CPU); the two tensors disagree");
    }
  }
  if (static_cast<int64_t>(bucket.size()) != n_on) {
    throw ModelLoadError::for_tensor(f.path(), bucket_name,
                                     "lists " + std::to_string(bucket.size()) + " neurons but " + mask_name +
                                         " marks " + std::to_string(n_on) + " as GPU; the two tensors disagree");
  }
  return bucket;
}

}  // namespace

std::string gpu_idx_tensor_name(int64_t layer) { return "blk." + std::to_string(layer) + ".gpu_idx"; }
std::string gpu_bucket_tensor_name(int64_t layer) { return "blk." + std::to_string(layer) + ".gpu_bucket"; }

void write_gpu_index(const GpuIndex& index, const std::filesystem::path& path) {
  if (index.n_ff < 1 || index.hot.empty()) throw std::invalid_argument("gpu index: no layers or no neurons");
  gguf::GgufWriter w(gguf::Magic::PWRI);
  w.set("general.architecture", gguf::Value(std::string(kGpuIndexArchitecture)));
  w.set(std::string(kGpuIndexBlockCountKey), gguf::Value(static_cast<uint32_t>(index.n_layer())));
  w.set(std::string(kVramCapacityKey), gguf::Value(index.vram_capacity));
  if (index.model_tensor_hash) w.set(std::string(kGpuIndexModelHashKey), gguf::Value(*index.model_tensor_hash));
  for (const auto& [name, value] : index.notes) w.set(std::string(kNotePrefix) + name, gguf::Value(value));
  for (int64_t l = 0; l < index.n_layer(); ++l) {
    const auto& hot = index.hot[static_cast<size_t>(l)];
    std::vector<int32_t> mask(static_cast<size_t>(index.n_ff), 0);
    for (size_t j = 0; j < hot.size(); ++j) {
      if (hot[j] < 0 || hot[j] >= index.n_ff || (j > 0 && hot[j] <= hot[j - 1])) {
        throw std::invalid_argument("gpu index: layer " + std::to_string(l) +
                                    " neuron list is not ascending within [0, n_ff)");
      }
      mask[static_cast<size_t>(hot[j])] = 1;
    }
    // i32 [n_ff] 0/1 mask, then i32 [k] ascending indices, as PowerInfer orders them.
    w.add_tensor(gpu_idx_tensor_name(l), DType::I32, {index.n_ff}, i32_bytes(mask));
    w.add_tensor(gpu_bucket_tensor_name(l), DType::I32, {static_cast<int64_t>(hot.size())}, i32_bytes(hot));
  }
  w.write(path);
}

GpuIndex read_gpu_index(const std::filesystem::path& path, int64_t n_layer, int64_t n_ff,
                        std::optional<uint64_t> expected_hash) {
  return read_gpu_index(gguf::GgufFile::open(path), n_layer, n_ff, expected_hash);
}

GpuIndex read_gpu_index(const gguf::GgufFile& f, int64_t n_layer, int64_t n_ff, std::optional<uint64_t> expected_hash) {
  const std::string arch = f.get_string("general.architecture");
  if (arch != kGpuIndexArchitecture) {
    throw ModelLoadError::for_key(f.path(), "general.architecture",
                                  "is '" + gguf::printable(arch) + "', expected '" +
                                      std::string(kGpuIndexArchitecture) + "' (not a gpuidx placement file)");
  }
  GpuIndex index;
  index.n_ff = n_ff;
  index.vram_capacity = f.get_u64(kVramCapacityKey);
  if (f.has(kGpuIndexBlockCountKey)) {
    const uint64_t blocks = f.get_u64(kGpuIndexBlockCountKey);
    if (blocks != static_cast<uint64_t>(n_layer)) {
      throw ModelLoadError::for_key(f.path(), std::string(kGpuIndexBlockCountKey),
                                    "is " + std::to_string(blocks) + " but the model has n_layer = " +
                                        std::to_string(n_layer));
    }
  }
  if (f.has(kGpuIndexModelHashKey)) {
    index.model_tensor_hash = f.get_u64(kGpuIndexModelHashKey);
    if (expected_hash && *index.model_tensor_hash != *expected_hash) {
      throw ModelLoadError::for_key(f.path(), std::string(kGpuIndexModelHashKey),
                                    "does not match the model's fingerprint: this placement was made for "
                                    "another model; run `thermocline place` on this one");
    }
  }
  std::set<std::string> expected;
  for (int64_t l = 0; l < n_layer; ++l) {
    index.hot.push_back(read_layer(f, l, n_layer, n_ff));
    expected.insert(gpu_idx_tensor_name(l));
    expected.insert(gpu_bucket_tensor_name(l));
  }
  for (const auto& t : f.tensors()) {
    if (!expected.contains(t.name)) {
      throw ModelLoadError::for_tensor(f.path(), t.name,
                                       "is not expected in a gpuidx file for a model with n_layer = " +
                                           std::to_string(n_layer));
    }
  }
  return index;
}

}  // namespace tc::sparse
