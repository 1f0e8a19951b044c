// Helpers of the model-spec tests: a written GGUF file opened from a fresh
// scratch folder (earlier files stay mapped), and the load error a file
// gives (read_model_spec + validate_model_tensors).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"
#include "engine/model/model_spec.h"
#include "profiler/make_model.h"
#include "tests/test_util.h"

namespace tc::test {

// make-model's options for a small f16 model of `arch`: 3 layers of 64, 4
// heads of 16, 2 KV heads, n_ff 96, vocab 512 (output left to the caller).
inline profiler::MakeModelOptions small_model_options(const std::string& arch, uint64_t seed = 3) {
  profiler::MakeModelOptions o;
  o.arch = arch;
  o.n_vocab = 512;
  o.n_embd = 64;
  o.n_layer = 3;
  o.n_ff = 96;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.weight_type = "f16";
  o.n_threads = 1;
  o.seed = seed;
  return o;
}

// Writes `w` to scratch folder `name`_N/m.gguf (N counts calls) and opens it.
inline gguf::GgufFile write_fresh(const gguf::GgufWriter& w, const std::string& name) {
  static int n = 0;
  const auto path = scratch_dir(name + "_" + std::to_string(n++)) / "m.gguf";
  w.write(path);
  return gguf::GgufFile::open(path);
}

// A copy of `f` (written and opened as write_fresh does, in `name`_N)
// without the key `drop_key` and the tensor `drop_tensor` (empty: none),
// with `edit` applied to the keys after the file's own.
inline gguf::GgufFile copy_gguf(const gguf::GgufFile& f, const std::string& name, const std::string& drop_tensor,
                                const std::function<void(gguf::GgufWriter&)>& edit,
                                const std::string& drop_key = "") {
  gguf::GgufWriter w(f.magic(), static_cast<uint32_t>(f.alignment()));
  for (const auto& [key, value] : f.metadata()) {
    if (key != "general.alignment" && key != drop_key) w.set(key, value);
  }
  if (edit) edit(w);
  for (const auto& t : f.tensors()) {
    if (t.name == drop_tensor) continue;
    const auto bytes = f.tensor_data(t);
    w.add_tensor(t.name, t.dtype, t.ne, std::vector<std::byte>(bytes.begin(), bytes.end()));
  }
  return write_fresh(w, name);
}

// The ModelLoadError message reading and validating `f` gives; "" when it loads.
inline std::string load_error(const gguf::GgufFile& f) {
  try {
    auto spec = model::read_model_spec(f);
    model::validate_model_tensors(f, spec);
  } catch (const gguf::ModelLoadError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tc::test
