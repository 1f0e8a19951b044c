// Helpers of the model-spec tests: a written GGUF file opened from a fresh
// scratch folder (earlier files stay mapped), and the load error a file
// gives (read_model_spec + validate_model_tensors).
#pragma once

#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/model_load_error.h"
#include "engine/model/model_spec.h"
#include "tests/test_util.h"

namespace tc::test {

// Writes `w` to scratch folder `name`_N/m.gguf (N counts calls) and opens it.
inline gguf::GgufFile write_fresh(const gguf::GgufWriter& w, const std::string& name) {
  static int n = 0;
  const auto path = scratch_dir(name + "_" + std::to_string(n++)) / "m.gguf";
  w.write(path);
  return gguf::GgufFile::open(path);
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
