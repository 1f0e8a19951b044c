// The text that make-model learns tokenizer vocabularies from by default
// (profiler/data/tokenizer_corpus.txt, embedded into the binary at build time
// so generated models do not depend on files outside the binary).
#pragma once

#include <string_view>

namespace tc::profiler {

std::string_view tokenizer_corpus();

}  // namespace tc::profiler
