// libFuzzer target for what load_model checks past the GGUF container: a
// model file from anywhere (the reader itself is gguf_reader_fuzz's). Each
// input is a GGUF file's bytes; when the container parses, the same steps
// as load_model run on it: the spec (hyperparameters), every tensor's name,
// dtype and shape, the vocab and its tokenizer, the predictors, and then the
// weight views the engine computes with. A ModelLoadError naming the file
// is the expected outcome of a bad file; any other exception, a sanitizer
// report or a broken invariant is a bug. Seeds: tiny models of each layout
// written by `make-model` (scripts/fuzz.sh makes them).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/model/llama_weights.h"
#include "engine/model/model_spec.h"
#include "engine/sparse/predictors.h"
#include "engine/text/tokenizer.h"
#include "engine/text/vocab.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "model_load_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// Every byte of a view the engine may read lies inside one tensor's data.
void check_view(const tc::gguf::GgufFile& f, const tc::kernels::Tensor& t) {
  if (t.data == nullptr) return;  // an absent optional tensor
  require(t.ne[0] > 0 && t.n_rows() > 0, "a view has rows and columns");
  const auto* begin = static_cast<const std::byte*>(t.data);
  const auto* end = begin + (t.n_rows() - 1) * t.row_bytes + tc::kernels::row_bytes(t.dtype, t.ne[0]);
  for (const auto& info : f.tensors()) {
    const auto bytes = f.tensor_data(info);
    if (begin >= bytes.data() && end <= bytes.data() + bytes.size()) return;
  }
  require(false, "a view lies inside one tensor's data");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto file = tc::gguf::GgufFile::from_bytes({reinterpret_cast<const std::byte*>(data), size}, "fuzz.gguf");
    const auto spec = tc::model::read_model_spec(file);
    tc::model::validate_model_tensors(file, spec);
    auto vocab = tc::text::read_vocab(file);
    require(vocab.n_vocab() > 0, "a vocab has tokens");
    try {
      const auto tokenizer = tc::text::Tokenizer::create(std::move(vocab));
      const auto ids = tokenizer->encode("Hello, world! \xe4\xb8\xad");
      for (const auto id : ids) require(id >= 0 && id < tokenizer->n_vocab(), "ids in range");
      volatile size_t keep = tokenizer->decode(ids).size();
      (void)keep;
    } catch (const std::invalid_argument&) {  // load_model turns it into a ModelLoadError naming the key
    }
    if (tc::sparse::has_predictors(file)) {
      const auto predictors = tc::sparse::map_predictors(file, spec);
      for (const auto& p : predictors.layers) {
        check_view(file, p.fc1);
        check_view(file, p.fc2);
      }
    }
    const auto w = tc::model::map_llama_weights(file, spec);
    check_view(file, w.token_embd);
    check_view(file, w.output);
    check_view(file, w.output_norm);
    require(w.layers.size() == static_cast<size_t>(spec.n_layer), "one LayerWeights per layer");
    for (const auto& l : w.layers) {
      for (const auto* t : {&l.attn_norm, &l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_norm, &l.ffn_gate,
                            &l.ffn_up, &l.ffn_down, &l.ffn_down_t}) {
        check_view(file, *t);
      }
    }
  } catch (const tc::gguf::ModelLoadError& e) {
    require(e.what()[0] != '\0', "an error has a message");
  }
  return 0;
}
