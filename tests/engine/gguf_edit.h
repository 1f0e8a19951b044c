// Test helpers for readers of GGUF-container files (activation stats,
// .generated.gpuidx, TEAL sections): a file's metadata and tensors read into
// an editable form and written back with GgufWriter, so a test can break one
// key or tensor at a time; and the check that a reader rejects a file with a
// ModelLoadError naming the file, the item and the problem.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"

namespace tc::test {

struct GgufEdit {
  struct Tensor {
    std::string name;
    kernels::DType dtype;
    std::vector<int64_t> ne;
    std::vector<std::byte> bytes;
  };
  gguf::Magic magic = gguf::Magic::GGUF;
  std::vector<std::pair<std::string, gguf::Value>> metadata;  // general.alignment left out: the writer sets it
  std::vector<Tensor> tensors;

  static GgufEdit from(const std::filesystem::path& path, gguf::Magic magic = gguf::Magic::GGUF) {
    const auto f = gguf::GgufFile::open(path);
    GgufEdit r;
    r.magic = magic;
    for (const auto& kv : f.metadata()) {
      if (kv.first != "general.alignment") r.metadata.push_back(kv);
    }
    for (const auto& t : f.tensors()) {
      const auto d = f.tensor_data(t);
      r.tensors.push_back({t.name, t.dtype, t.ne, std::vector<std::byte>(d.begin(), d.end())});
    }
    return r;
  }
  void set(const std::string& key, gguf::Value v) {
    for (auto& kv : metadata) {
      if (kv.first == key) {
        kv.second = std::move(v);
        return;
      }
    }
    metadata.emplace_back(key, std::move(v));
  }
  void erase_key(const std::string& key) {
    std::erase_if(metadata, [&](const auto& kv) { return kv.first == key; });
  }
  void erase_tensor(const std::string& name) {
    std::erase_if(tensors, [&](const Tensor& t) { return t.name == name; });
  }
  Tensor& tensor(const std::string& name) {
    for (auto& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::logic_error("no tensor " + name);
  }
  // A tensor's data as values of T (i32 counts and indices, f32 values).
  template <class T>
  std::span<T> values(const std::string& name) {
    auto& b = tensor(name).bytes;
    return {reinterpret_cast<T*>(b.data()), b.size() / sizeof(T)};
  }
  // Replaces a tensor's values and gives it the 1-D shape [v.size()].
  template <class T>
  void replace(const std::string& name, const std::vector<T>& v) {
    auto& t = tensor(name);
    t.ne = {static_cast<int64_t>(v.size())};
    t.bytes.resize(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  }
  void write(const std::filesystem::path& path) const {
    gguf::GgufWriter w(magic);
    for (const auto& [k, v] : metadata) w.set(k, v);
    for (const auto& t : tensors) w.add_tensor(t.name, t.dtype, t.ne, t.bytes);
    w.write(path);
  }
};

// Expects read() to throw a ModelLoadError whose message names `path` and
// `item` and says `problem`.
inline void expect_load_error(const std::function<void()>& read, const std::filesystem::path& path,
                              const std::string& item, const std::string& problem) {
  try {
    read();
    FAIL("accepted: expected an error about " << item);
  } catch (const gguf::ModelLoadError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find(path.string()) != std::string::npos);
    CHECK(what.find(item) != std::string::npos);
    CHECK(what.find(problem) != std::string::npos);
  }
}

}  // namespace tc::test
