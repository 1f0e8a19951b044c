// libFuzzer target for the GGUF reader: any input must either parse into a
// consistent GgufFile or throw ModelLoadError. Any other exception, a
// sanitizer report or a broken invariant below is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "engine/gguf/gguf_file.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "gguf_reader_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// Runs a getter; ModelLoadError is an expected outcome, anything else escapes.
template <typename Fn>
void attempt(Fn fn) {
  try {
    fn();
  } catch (const tc::gguf::ModelLoadError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tc::gguf::GgufFile;
  try {
    const auto f = GgufFile::from_bytes({reinterpret_cast<const std::byte*>(data), size},
                                        "fuzz.gguf");
    size_t sink = 0;
    for (const auto& [key, value] : f.metadata()) {
      require(f.find(key) == &value, "find() returns the listed value");
      sink += value.to_display_string().size();
    }
    require(f.alignment() > 0 && (f.alignment() & (f.alignment() - 1)) == 0,
            "alignment is a power of two");
    require(f.data_offset() % f.alignment() == 0, "data section is aligned");
    for (const auto& t : f.tensors()) {
      require(f.find_tensor(t.name) == &t, "find_tensor() returns the listed tensor");
      require(t.offset % f.alignment() == 0, "tensor offset is aligned");
      require(!t.ne.empty() && t.ne.size() <= static_cast<size_t>(tc::gguf::kMaxDims),
              "1 to 4 dims");
      require(f.data_offset() + t.offset + t.n_bytes <= f.file_size(), "data inside the file");
      sink += static_cast<size_t>(t.n_elements()) + static_cast<size_t>(t.n_rows()) +
              t.shape_string().size();
      const auto bytes = f.tensor_data(t);
      require(bytes.size() == t.n_bytes, "tensor_data() size");
      if (!bytes.empty()) {
        sink += static_cast<uint8_t>(bytes.front()) + static_cast<uint8_t>(bytes.back());
      }
    }
    // The getters must throw only ModelLoadError on whatever types are there.
    for (const char* key : {"general.architecture", "general.alignment", "tokenizer.ggml.tokens",
                            "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}) {
      attempt([&] { sink += f.get_string(key, "").size(); });
      attempt([&] { sink += f.get_u64(key, 0); });
      attempt([&] { sink += static_cast<size_t>(f.get_i64(key, 0)); });
      attempt([&] { sink += f.get_f64(key, 0.0) != 0.0 ? 1 : 0; });
      attempt([&] { sink += f.get_bool(key, false) ? 1 : 0; });
      if (f.has(key)) {
        attempt([&] { sink += f.get_string_array(key).size(); });
        attempt([&] { sink += f.get_f32_array(key).size(); });
        attempt([&] { sink += f.get_i32_array(key).size(); });
      }
    }
    volatile size_t keep = sink;
    (void)keep;
  } catch (const tc::gguf::ModelLoadError& e) {
    require(e.what()[0] != '\0', "error message");
  }
  return 0;
}
