// Split models, as llama.cpp's gguf-split writes them: a model's tensors
// spread over files named PREFIX-00001-of-00003.gguf, PREFIX-00002-of-...
// Each shard is a GGUF file with the keys split.no (u16, 0-based),
// split.count (u16) and split.tensors.count (i32, the tensors of all
// shards); the first shard also holds the model's metadata. Large models
// on Hugging Face come this way. GgufFile::open of the first shard opens
// the others (gguf_file.h); write_split writes one.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tc::gguf {

class GgufFile;

inline constexpr std::string_view kSplitNo = "split.no";
inline constexpr std::string_view kSplitCount = "split.count";
inline constexpr std::string_view kSplitTensorsCount = "split.tensors.count";
// The name's five-digit fields bound the count.
inline constexpr int kMaxShards = 99999;

// A shard's file name taken apart: PREFIX-NNNNN-of-MMMMM.gguf.
struct SplitName {
  std::filesystem::path prefix;  // the path up to "-NNNNN-of-MMMMM.gguf"
  int no = 1;                    // 1-based, as in the name
  int count = 1;
};

// nullopt unless the file name ends in "-NNNNN-of-MMMMM.gguf" with five
// digits each and 1 <= NNNNN <= MMMMM.
std::optional<SplitName> parse_split_name(const std::filesystem::path& path);
// PREFIX-NNNNN-of-MMMMM.gguf (no 1-based).
std::filesystem::path split_shard_path(const std::filesystem::path& prefix, int no, int count);

// Writes `in` as `n_shards` files PREFIX-00001-of-NNNNN.gguf ... (the layout
// of llama.cpp's gguf-split): the first has `in`'s metadata, every one the
// three split keys, and the tensors are dealt out in file order, about the
// same number of bytes to each. Returns the paths in order. Throws
// std::invalid_argument for a shard count outside [2, min(kMaxShards,
// tensors)] or an input that is itself split, std::runtime_error on I/O.
std::vector<std::filesystem::path> write_split(const GgufFile& in, const std::filesystem::path& prefix, int n_shards);

}  // namespace tc::gguf
