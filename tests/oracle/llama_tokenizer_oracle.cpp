// Loading of llama.cpp's libllama for the tokenizer oracle tests, pinned to
// the build in @node-llama-cpp/linux-x64 3.22.1 (_nlcBuildMetadata.json:
// llama.cpp repo ggml-org/llama.cpp, release "v0.5.0"; libllama.v0.5.0.so).
#include "tests/oracle/llama_tokenizer_oracle.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "engine/gguf/gguf_writer.h"
#include "tests/oracle/shared_library.h"
#include "tests/test_util.h"

namespace tc::oracle {
namespace {

using gguf::Value;

// llama_model_params is passed by value, so its layout must be known
// exactly. This wrapper treats it as opaque bytes, pinned to the 3.22.1
// build (objdump of llama_model_default_params): 80 bytes, eight pointer /
// int fields, then six trailing bools at 72..77 of which the first,
// vocab_only, is the only one set here. load() checks the pin against the
// defaults the library writes; a moved vocab_only that slipped past that
// would leave a full model load that fails on the missing tensors, and the
// tests compare llama_vocab_n_tokens with our vocab on every load.
constexpr size_t kParamsSize = 80;
constexpr size_t kVocabOnlyOffset = 72;
constexpr size_t kBoolsEnd = 78;  // one past the last bool the defaults write
constexpr size_t kKvOverridesOffset = 64;

struct ModelParams {
  alignas(8) unsigned char bytes[kParamsSize];
};
static_assert(sizeof(ModelParams) == kParamsSize);

// llama_model_default_params returns the struct by value; with the SysV ABI
// a struct over 16 bytes comes back through a hidden out-pointer, which is
// what this signature passes, into a bigger poisoned buffer so that writes
// past the pinned size show.
using DefaultParamsFn = void (*)(void* out);
using LoadFn = void* (*)(const char* path, ModelParams params);
using FreeFn = void (*)(void* model);
using GetVocabFn = const void* (*)(const void* model);
using VocabIntFn = int32_t (*)(const void* vocab);
using TokenizeFn = int32_t (*)(const void* vocab, const char* text, int32_t text_len, int32_t* tokens,
                               int32_t n_tokens_max, bool add_special, bool parse_special);
using PieceFn = int32_t (*)(const void* vocab, int32_t token, char* buf, int32_t length, int32_t lstrip,
                            bool special);
using DetokenizeFn = int32_t (*)(const void* vocab, const int32_t* tokens, int32_t n_tokens, char* text,
                                 int32_t text_len_max, bool remove_special, bool unparse_special);
using VocabTokenFn = bool (*)(const void* vocab, int32_t token);
using LogCallback = void (*)(int level, const char* text, void* user_data);
using LogSetFn = void (*)(LogCallback callback, void* user_data);
using BackendInitFn = void (*)();

struct LlamaApi {
  DefaultParamsFn llama_model_default_params = nullptr;
  LoadFn llama_model_load_from_file = nullptr;
  FreeFn llama_model_free = nullptr;
  GetVocabFn llama_model_get_vocab = nullptr;
  VocabIntFn llama_vocab_n_tokens = nullptr;
  VocabIntFn llama_vocab_type = nullptr;
  VocabIntFn llama_vocab_bos = nullptr;
  VocabIntFn llama_vocab_eos = nullptr;
  VocabIntFn llama_vocab_fim_pre = nullptr;
  VocabIntFn llama_vocab_fim_suf = nullptr;
  VocabIntFn llama_vocab_fim_mid = nullptr;
  VocabIntFn llama_vocab_fim_pad = nullptr;
  VocabIntFn llama_vocab_fim_rep = nullptr;
  VocabIntFn llama_vocab_fim_sep = nullptr;
  VocabTokenFn llama_vocab_is_eog = nullptr;
  TokenizeFn llama_tokenize = nullptr;
  PieceFn llama_token_to_piece = nullptr;
  DetokenizeFn llama_detokenize = nullptr;
  LogSetFn llama_log_set = nullptr;
  BackendInitFn llama_backend_init = nullptr;
};

struct Loaded {
  LlamaApi api;
  ModelParams params{};  // the defaults with vocab_only set
  void* handle = nullptr;  // the dlopen() handle, never closed
  bool ok = false;
  bool broken = false;
  std::string reason;
};

// The tail of llama.cpp's warnings and errors, for load failure messages
// (its log is silenced otherwise). Tests are single-threaded.
std::string& log_tail() {
  static std::string tail;
  return tail;
}

void capture_log(int level, const char* text, void*) {
  constexpr int kGgmlLogLevelWarn = 3;  // ggml_log_level: 3 WARN, 4 ERROR, 5 CONT
  if (level < kGgmlLogLevelWarn || text == nullptr) return;
  std::string& tail = log_tail();
  tail += text;
  constexpr size_t kKeep = 2000;
  if (tail.size() > kKeep) tail.erase(0, tail.size() - kKeep);
}


// Empty when the defaults match the pinned layout, else what differs.
std::string check_params_layout(const LlamaApi& api, ModelParams& out) {
  constexpr unsigned char kPoison = 0xA5;
  std::array<unsigned char, 256> buf;
  buf.fill(kPoison);
  api.llama_model_default_params(buf.data());
  for (size_t i = kBoolsEnd; i < buf.size(); ++i) {
    if (buf[i] != kPoison) {
      return "llama_model_default_params wrote byte " + std::to_string(i) +
             ", past the pinned layout's last field (byte " + std::to_string(kBoolsEnd - 1) + ")";
    }
  }
  for (size_t i = kVocabOnlyOffset; i < kBoolsEnd; ++i) {
    if (buf[i] > 1) {
      return "llama_model_params byte " + std::to_string(i) + " is " + std::to_string(buf[i]) +
             ", not a bool as in the pinned layout";
    }
  }
  if (buf[kVocabOnlyOffset] != 0) return "llama_model_params vocab_only (byte 72) defaults to true";
  for (size_t i = kKvOverridesOffset; i < kVocabOnlyOffset; ++i) {
    if (buf[i] != 0) return "llama_model_params kv_overrides (bytes 64..71) is not a null pointer";
  }
  std::memcpy(out.bytes, buf.data(), kParamsSize);
  out.bytes[kVocabOnlyOffset] = 1;
  return {};
}

Loaded load() {
  Loaded out;
  const auto path = llama_library_path();
  // Never closed: the functions stay valid for the life of the process.
  void* handle = open_shared_library(path, "THERMOCLINE_LLAMA_LIB", out.reason);
  if (handle == nullptr) return out;
  out.handle = handle;
  std::string missing;
  LlamaApi& a = out.api;
#define TC_RESOLVE(name) resolve_symbol(handle, #name, a.name, missing)
  TC_RESOLVE(llama_model_default_params);
  TC_RESOLVE(llama_model_load_from_file);
  TC_RESOLVE(llama_model_free);
  TC_RESOLVE(llama_model_get_vocab);
  TC_RESOLVE(llama_vocab_n_tokens);
  TC_RESOLVE(llama_vocab_type);
  TC_RESOLVE(llama_vocab_bos);
  TC_RESOLVE(llama_vocab_eos);
  TC_RESOLVE(llama_vocab_fim_pre);
  TC_RESOLVE(llama_vocab_fim_suf);
  TC_RESOLVE(llama_vocab_fim_mid);
  TC_RESOLVE(llama_vocab_fim_pad);
  TC_RESOLVE(llama_vocab_fim_rep);
  TC_RESOLVE(llama_vocab_fim_sep);
  TC_RESOLVE(llama_vocab_is_eog);
  TC_RESOLVE(llama_tokenize);
  TC_RESOLVE(llama_token_to_piece);
  TC_RESOLVE(llama_detokenize);
  TC_RESOLVE(llama_log_set);
  TC_RESOLVE(llama_backend_init);
#undef TC_RESOLVE
  if (!missing.empty()) {
    out.broken = true;
    out.reason = path.string() + " lacks the symbols: " + missing;
    return out;
  }
  if (std::string bad = check_params_layout(a, out.params); !bad.empty()) {
    out.broken = true;
    out.reason = path.string() + ": " + bad +
                 " (this wrapper is pinned to @node-llama-cpp/linux-x64 3.22.1; update "
                 "tests/oracle/llama_tokenizer_oracle.cpp)";
    return out;
  }
  a.llama_log_set(capture_log, nullptr);
  a.llama_backend_init();
  out.ok = true;
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

std::filesystem::path llama_library_path() {
  if (const char* env = std::getenv("THERMOCLINE_LLAMA_LIB"); env != nullptr && *env != '\0') {
    return env;
  }
  return test::source_dir() /
         ".deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so";
}

bool llama_available() { return loaded().ok; }
bool llama_library_broken() { return loaded().broken; }
const std::string& llama_unavailable_reason() { return loaded().reason; }
void* llama_library_handle() { return loaded().ok ? loaded().handle : nullptr; }
std::string take_llama_log_tail() { return std::exchange(log_tail(), std::string()); }

void set_vocab_only_model_keys(gguf::GgufWriter& w) {
  // llama.cpp reads the hyperparameters even with vocab_only; the values only
  // have to be consistent.
  w.set("general.architecture", Value(std::string("llama")));
  w.set("llama.context_length", Value(uint32_t{512}));
  w.set("llama.embedding_length", Value(uint32_t{64}));
  w.set("llama.block_count", Value(uint32_t{1}));
  w.set("llama.feed_forward_length", Value(uint32_t{128}));
  w.set("llama.attention.head_count", Value(uint32_t{4}));
  w.set("llama.attention.head_count_kv", Value(uint32_t{4}));
  w.set("llama.rope.dimension_count", Value(uint32_t{16}));
  w.set("llama.attention.layer_norm_rms_epsilon", Value(1e-5f));
}

void write_vocab_only_gguf(const text::Vocab& vocab, const std::filesystem::path& path) {
  gguf::GgufWriter w;
  set_vocab_only_model_keys(w);
  text::write_vocab(vocab, w);
  w.write(path);
}

LlamaVocab::LlamaVocab(const std::filesystem::path& path) {
  const Loaded& l = loaded();
  if (!l.ok) throw std::runtime_error("llama.cpp tokenizer oracle unavailable: " + l.reason);
  log_tail().clear();
  model_ = l.api.llama_model_load_from_file(path.c_str(), l.params);
  if (model_ == nullptr) {
    throw std::runtime_error("llama_model_load_from_file(" + path.string() +
                             ", vocab_only) failed: " + log_tail());
  }
  vocab_ = l.api.llama_model_get_vocab(model_);
  if (vocab_ == nullptr) {
    l.api.llama_model_free(model_);
    throw std::runtime_error("llama_model_get_vocab returned null for " + path.string());
  }
}

LlamaVocab::~LlamaVocab() {
  if (model_ != nullptr) loaded().api.llama_model_free(model_);
}

LlamaVocab::LlamaVocab(LlamaVocab&& other) noexcept
    : model_(std::exchange(other.model_, nullptr)), vocab_(std::exchange(other.vocab_, nullptr)) {}

int32_t LlamaVocab::n_tokens() const { return loaded().api.llama_vocab_n_tokens(vocab_); }
int LlamaVocab::type() const { return loaded().api.llama_vocab_type(vocab_); }
int32_t LlamaVocab::bos() const { return loaded().api.llama_vocab_bos(vocab_); }
int32_t LlamaVocab::eos() const { return loaded().api.llama_vocab_eos(vocab_); }

text::FimTokens LlamaVocab::fim() const {
  const auto& api = loaded().api;
  text::FimTokens f;
  f.pre = api.llama_vocab_fim_pre(vocab_);
  f.suf = api.llama_vocab_fim_suf(vocab_);
  f.mid = api.llama_vocab_fim_mid(vocab_);
  f.pad = api.llama_vocab_fim_pad(vocab_);
  f.rep = api.llama_vocab_fim_rep(vocab_);
  f.sep = api.llama_vocab_fim_sep(vocab_);
  return f;
}

bool LlamaVocab::is_eog(int32_t id) const { return loaded().api.llama_vocab_is_eog(vocab_, id); }

std::vector<int32_t> LlamaVocab::tokenize(std::string_view text, bool add_special,
                                          bool parse_special) const {
  const auto& api = loaded().api;
  if (text.size() > static_cast<size_t>(INT32_MAX / 2)) throw std::invalid_argument("text too long");
  const auto len = static_cast<int32_t>(text.size());
  std::vector<int32_t> ids(text.size() + 8);
  int32_t n = api.llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()),
                                 add_special, parse_special);
  if (n < 0) {  // -n is the count it needs
    ids.resize(static_cast<size_t>(-n));
    n = api.llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()),
                           add_special, parse_special);
    if (n < 0) throw std::runtime_error("llama_tokenize failed twice");
  }
  ids.resize(static_cast<size_t>(n));
  return ids;
}

std::string LlamaVocab::token_to_piece(int32_t id, bool special) const {
  const auto& api = loaded().api;
  std::string buf(64, '\0');
  int32_t n = api.llama_token_to_piece(vocab_, id, buf.data(), static_cast<int32_t>(buf.size()), 0, special);
  if (n < 0) {  // -n is the size it needs
    buf.resize(static_cast<size_t>(-n));
    n = api.llama_token_to_piece(vocab_, id, buf.data(), static_cast<int32_t>(buf.size()), 0, special);
    if (n < 0) throw std::runtime_error("llama_token_to_piece failed twice");
  }
  buf.resize(static_cast<size_t>(n));
  return buf;
}

std::string LlamaVocab::detokenize(const std::vector<int32_t>& ids, bool special) const {
  const auto& api = loaded().api;
  if (ids.size() > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("too many ids");
  const auto n_ids = static_cast<int32_t>(ids.size());
  std::string buf(ids.size() * 8 + 16, '\0');
  int32_t n = api.llama_detokenize(vocab_, ids.data(), n_ids, buf.data(), static_cast<int32_t>(buf.size()), false,
                                   special);
  if (n < 0) {  // -n is the size it needs
    buf.resize(static_cast<size_t>(-n));
    n = api.llama_detokenize(vocab_, ids.data(), n_ids, buf.data(), static_cast<int32_t>(buf.size()), false,
                             special);
    if (n < 0) throw std::runtime_error("llama_detokenize failed twice");
  }
  buf.resize(static_cast<size_t>(n));
  return buf;
}

}  // namespace tc::oracle
