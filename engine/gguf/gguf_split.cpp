// Split models: shard names, opening the other shards of a split model
// (GgufFile::open_shards, as llama.cpp's loader reads them) and writing one
// (see gguf_split.h).
#include "engine/gguf/gguf_split.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"

namespace tc::gguf {
namespace {

// The five digits at name[at, at + 5) as a number, or -1.
int five_digits(const std::string& name, size_t at) {
  int v = 0;
  for (size_t i = at; i < at + 5; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::string str(uint64_t v) { return std::to_string(v); }

}  // namespace

std::optional<SplitName> parse_split_name(const std::filesystem::path& path) {
  // "-NNNNN-of-MMMMM.gguf": 20 characters after the prefix.
  static constexpr std::string_view kTail = "-00000-of-00000.gguf";
  const std::string name = path.filename().string();
  if (name.size() <= kTail.size()) return std::nullopt;
  const size_t at = name.size() - kTail.size();
  if (name[at] != '-' || name.compare(at + 6, 4, "-of-") != 0 || name.compare(at + 15, 5, ".gguf") != 0) {
    return std::nullopt;
  }
  SplitName out;
  out.no = five_digits(name, at + 1);
  out.count = five_digits(name, at + 10);
  if (out.no < 1 || out.count < out.no) return std::nullopt;
  out.prefix = path.parent_path() / name.substr(0, at);
  return out;
}

std::filesystem::path split_shard_path(const std::filesystem::path& prefix, int no, int count) {
  char tail[32];
  std::snprintf(tail, sizeof tail, "-%05d-of-%05d.gguf", no, count);
  return prefix.parent_path() / (prefix.filename().string() + tail);
}

void GgufFile::open_shards(UnsupportedDtypes unsupported) {
  const std::string count_key(kSplitCount), no_key(kSplitNo);
  const uint64_t count = get_u64(count_key, 1);
  if (count <= 1) return;
  if (count > kMaxShards) throw error(count_key, "is " + str(count) + "; at most " + str(kMaxShards) + " shards");
  const uint64_t no = get_u64(no_key);
  const auto name = parse_split_name(path_);
  if (no != 0) {
    const std::string first =
        name ? split_shard_path(name->prefix, 1, static_cast<int>(count)).filename().string() : "its first shard";
    throw error(no_key, "this is shard " + str(no + 1) + " of " + str(count) +
                            " of a split model; open the first shard, " + first);
  }
  if (!name || name->count != static_cast<int>(count) || name->no != 1) {
    throw error(count_key, "the first shard of " + str(count) + " is not named " +
                               split_shard_path("PREFIX", 1, static_cast<int>(count)).string() +
                               ", so its other shards cannot be found");
  }
  for (int i = 1; i < static_cast<int>(count); ++i) {
    const auto shard_path = split_shard_path(name->prefix, i + 1, static_cast<int>(count));
    std::error_code ec;
    if (!std::filesystem::exists(shard_path, ec)) {
      throw error(count_key, "shard " + str(i + 1) + " of " + str(count) + " is missing: expected " +
                                 shard_path.string());
    }
    GgufFile shard = open_file(shard_path, unsupported);
    if (!shard.has(no_key)) throw shard.error(no_key, "missing in a shard of a split model");
    if (shard.get_u64(no_key) != static_cast<uint64_t>(i)) {
      throw shard.error(no_key, "is " + str(shard.get_u64(no_key)) + ", expected " + str(i) + " (shard " +
                                    str(i + 1) + " of " + str(count) + ")");
    }
    for (TensorInfo t : shard.tensors_) {
      if (tensor_index_.count(t.name) != 0 ||
          std::any_of(unsupported_.begin(), unsupported_.end(),
                      [&](const UnsupportedTensor& u) { return u.name == t.name; })) {
        throw ModelLoadError::for_tensor(shard.path_, t.name, "is also in an earlier shard of the split model");
      }
      t.shard = static_cast<uint32_t>(i);
      tensor_index_.emplace(t.name, tensors_.size());
      tensors_.push_back(std::move(t));
    }
    unsupported_.insert(unsupported_.end(), shard.unsupported_.begin(), shard.unsupported_.end());
    shards_.push_back(std::move(shard));
  }
  const std::string tensors_key(kSplitTensorsCount);
  const uint64_t expected = get_u64(tensors_key);
  const uint64_t found = tensors_.size() + unsupported_.size();
  if (expected != found) {
    throw error(tensors_key, "is " + str(expected) + ", but the " + str(count) + " shards hold " + str(found) +
                                 " tensors");
  }
}

std::vector<std::filesystem::path> write_split(const GgufFile& in, const std::filesystem::path& prefix, int n_shards) {
  const auto& tensors = in.tensors();
  if (in.shard_count() > 1 || in.get_u64(std::string(kSplitCount), 1) > 1) {
    throw std::invalid_argument(in.path() + " is already split");
  }
  if (n_shards < 2 || n_shards > kMaxShards || static_cast<size_t>(n_shards) > tensors.size()) {
    throw std::invalid_argument("cannot split " + str(tensors.size()) + " tensors into " +
                                std::to_string(n_shards) + " shards");
  }
  uint64_t total = 0;
  for (const auto& t : tensors) total += t.n_bytes;
  // Shard s takes tensors while the bytes so far are below (s + 1) / n of
  // the total, leaving at least one tensor for each shard after it.
  std::vector<size_t> first(static_cast<size_t>(n_shards) + 1, tensors.size());
  first[0] = 0;
  uint64_t bytes = 0;
  size_t next = 0;
  for (int s = 0; s < n_shards; ++s) {
    first[static_cast<size_t>(s)] = next;
    const uint64_t goal = total / static_cast<uint64_t>(n_shards) * static_cast<uint64_t>(s + 1);
    const size_t last_allowed = tensors.size() - static_cast<size_t>(n_shards - 1 - s);
    do {
      bytes += tensors[next].n_bytes;
      ++next;
    } while (next < last_allowed && (bytes < goal || s == n_shards - 1));
  }
  std::vector<std::filesystem::path> paths;
  for (int s = 0; s < n_shards; ++s) {
    GgufWriter w(in.magic(), static_cast<uint32_t>(in.alignment()));
    if (s == 0) {
      for (const auto& [key, value] : in.metadata()) {
        if (key != "general.alignment") w.set(key, value);
      }
    }
    w.set(std::string(kSplitNo), Value(static_cast<uint16_t>(s)));
    w.set(std::string(kSplitCount), Value(static_cast<uint16_t>(n_shards)));
    w.set(std::string(kSplitTensorsCount), Value(static_cast<int32_t>(tensors.size())));
    for (size_t i = first[static_cast<size_t>(s)]; i < first[static_cast<size_t>(s) + 1]; ++i) {
      const TensorInfo& t = tensors[i];
      w.add_tensor(t.name, t.dtype, t.ne, [&in, &t](std::span<std::byte> out) {
        const auto data = in.tensor_data(t);
        std::copy(data.begin(), data.end(), out.begin());
      });
    }
    paths.push_back(split_shard_path(prefix, s + 1, n_shards));
    w.write(paths.back());
  }
  return paths;
}

}  // namespace tc::gguf
