// llama.cpp's own forward pass as an oracle and a benchmark baseline: dlopens
// libllama from npm @node-llama-cpp/linux-x64 3.22.1 (llama.cpp release
// "v0.5.0"), loads whole GGUF models on its CPU backend and decodes batches.
// Header-only so that bench/llamacpp_bench.cpp builds from it alone
// (`c++ -std=c++20 -I<repo> ... -ldl`); tests/oracle/greedy_oracle_test.cpp
// uses the same code.
//
// The by-value structs (llama_model_params, llama_context_params, llama_batch,
// ggml_threadpool_params) are pinned byte layouts, taken from llama.h and
// ggml.h of the llama.cpp source bundled in the same npm release
// (node-llama-cpp/llama/gitRelease.bundle) and from objdump of
// llama_context_default_params. LlamaCppLibrary checks them at run time: the
// library's default-params functions write into poisoned buffers, and every
// field must hold its documented default at its pinned offset with nothing
// written past the pinned size. Any mismatch makes the library "broken"
// (update this file), never a silent skip.
#pragma once

#include <dlfcn.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tests/oracle/shared_library.h"

namespace tc::oracle::llamacpp {

// llama_model_params, 80 bytes: devices 0, tensor_buft_overrides 8,
// n_gpu_layers 16, split_mode 20, load_mode 24, lazy_mode 28, main_gpu 32,
// tensor_split 40, progress_callback 48, progress_callback_user_data 56,
// kv_overrides 64, bools vocab_only 72, check_tensors 73, use_extra_bufts 74,
// no_host 75, no_alloc 76, load_mtp 77.
struct ModelParams {
  alignas(8) unsigned char bytes[80];
};
static_assert(sizeof(ModelParams) == 80);

// llama_context_params, 160 bytes: u32 n_ctx 0, n_batch 4, n_ubatch 8,
// n_seq_max 12, n_rs_seq 16, n_outputs_max 20, n_outputs_max_per_seq 24;
// i32 n_threads 28, n_threads_batch 32; enums ctx_type 36, rope_scaling_type
// 40, pooling_type 44, attention_type 48, flash_attn_type 52; f32
// rope_freq_base 56, rope_freq_scale 60, yarn_ext_factor 64, yarn_attn_factor
// 68, yarn_beta_fast 72, yarn_beta_slow 76; u32 yarn_orig_ctx 80; f32
// defrag_thold 84; cb_eval 88, cb_eval_user_data 96; ggml_type type_k 104,
// type_v 108; abort_callback 112, abort_callback_data 120; bools embeddings
// 128, offload_kqv 129, no_perf 130, op_offload 131, swa_full 132, kv_unified
// 133; samplers 136, n_samplers 144, ctx_other 152.
struct ContextParams {
  alignas(8) unsigned char bytes[160];
};
static_assert(sizeof(ContextParams) == 160);

namespace ctx_offset {
constexpr size_t kNCtx = 0, kNBatch = 4, kNUbatch = 8, kNThreads = 28, kNThreadsBatch = 32,
                 kPoolingType = 44, kFlashAttnType = 52, kTypeK = 104, kTypeV = 108, kEmbeddings = 128,
                 kNoPerf = 130;
}  // namespace ctx_offset

// llama_batch: a plain C struct of an int and six pointers (56 bytes), the
// same layout on every x86-64 compiler.
struct Batch {
  int32_t n_tokens;
  int32_t* token;
  float* embd;
  int32_t* pos;
  int32_t* n_seq_id;
  int32_t** seq_id;
  int8_t* logits;
};
static_assert(sizeof(Batch) == 56);

// ggml_threadpool_params, 528 bytes: bool cpumask[GGML_MAX_N_THREADS = 512],
// int n_threads 512, prio 516, u32 poll 520, bool strict_cpu 524, paused 525.
struct ThreadpoolParams {
  alignas(8) unsigned char bytes[528];
};
static_assert(sizeof(ThreadpoolParams) == 528);

// llama_flash_attn_type.
enum class FlashAttn : int32_t { Auto = -1, Off = 0, On = 1 };

struct Api {
  using LogCallback = void (*)(int level, const char* text, void* user_data);
  void (*llama_backend_init)() = nullptr;
  void (*llama_log_set)(LogCallback, void*) = nullptr;
  const char* (*llama_print_system_info)() = nullptr;
  void (*llama_model_default_params)(void* out) = nullptr;  // returns the struct through a hidden pointer
  void* (*llama_model_load_from_file)(const char*, ModelParams) = nullptr;
  void (*llama_model_free)(void*) = nullptr;
  const void* (*llama_model_get_vocab)(const void*) = nullptr;
  uint64_t (*llama_model_size)(const void*) = nullptr;
  int32_t (*llama_vocab_n_tokens)(const void*) = nullptr;
  int32_t (*llama_vocab_bos)(const void*) = nullptr;
  int32_t (*llama_vocab_eos)(const void*) = nullptr;
  bool (*llama_vocab_get_add_bos)(const void*) = nullptr;
  int32_t (*llama_tokenize)(const void*, const char*, int32_t, int32_t*, int32_t, bool, bool) = nullptr;
  void (*llama_context_default_params)(void* out) = nullptr;  // hidden pointer, as above
  void* (*llama_init_from_model)(void*, ContextParams) = nullptr;
  void (*llama_free)(void*) = nullptr;
  int32_t (*llama_decode)(void*, Batch) = nullptr;
  void* (*llama_get_memory)(const void*) = nullptr;
  void (*llama_memory_clear)(void*, bool) = nullptr;
  bool (*llama_memory_seq_rm)(void*, int32_t, int32_t, int32_t) = nullptr;        // mem, seq, p0, p1
  void (*llama_memory_seq_add)(void*, int32_t, int32_t, int32_t, int32_t) = nullptr;  // mem, seq, p0, p1, delta
  float* (*llama_get_logits_ith)(void*, int32_t) = nullptr;
  float* (*llama_get_embeddings_seq)(void*, int32_t) = nullptr;
  void (*llama_synchronize)(void*) = nullptr;
  void (*llama_set_n_threads)(void*, int32_t, int32_t) = nullptr;
  void (*llama_attach_threadpool)(void*, void*, void*) = nullptr;
  // ggml, found through libllama's handle (its DT_NEEDED libggml*).
  void (*ggml_backend_load_all_from_path)(const char*) = nullptr;
  void* (*ggml_backend_reg_by_name)(const char*) = nullptr;
  void* (*ggml_backend_reg_get_proc_address)(void*, const char*) = nullptr;
  void (*ggml_threadpool_params_default)(void* out, int n_threads) = nullptr;  // hidden pointer
  // From the CPU backend's registry (ggml_backend_reg_get_proc_address).
  void* (*ggml_threadpool_new)(ThreadpoolParams*) = nullptr;
  void (*ggml_threadpool_free)(void*) = nullptr;
};

// The layout checks; each returns empty when the library matches the pin,
// else what differs. Exposed for the tests of this file.
namespace detail {

template <typename T>
T read_at(const unsigned char* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof(T));
  return v;
}

inline std::string check_poison_tail(const unsigned char* buf, size_t n, size_t pinned_size, unsigned char poison,
                                     const char* what) {
  for (size_t i = pinned_size; i < n; ++i) {
    if (buf[i] != poison) {
      return std::string(what) + " wrote byte " + std::to_string(i) + ", past the pinned size " +
             std::to_string(pinned_size);
    }
  }
  return {};
}

inline std::string check_model_params(const Api& api, ModelParams& out) {
  constexpr unsigned char kPoison = 0xA5;
  std::array<unsigned char, 512> buf;
  buf.fill(kPoison);
  api.llama_model_default_params(buf.data());
  const unsigned char* b = buf.data();
  if (auto bad = check_poison_tail(b, buf.size(), 78, kPoison, "llama_model_default_params"); !bad.empty()) return bad;
  struct Field {
    const char* name;
    size_t offset;
    int64_t expected;
    int size;
  };
  // The defaults of llama_model_default_params in this release.
  const Field fields[] = {
      {"devices", 0, 0, 8},        {"tensor_buft_overrides", 8, 0, 8}, {"n_gpu_layers", 16, -1, 4},
      {"split_mode", 20, 1, 4},    {"load_mode", 24, -1, 4},           {"lazy_mode", 28, 1, 4},
      {"main_gpu", 32, 0, 4},      {"tensor_split", 40, 0, 8},         {"progress_callback", 48, 0, 8},
      {"progress_callback_user_data", 56, 0, 8}, {"kv_overrides", 64, 0, 8}, {"vocab_only", 72, 0, 1},
      {"check_tensors", 73, 0, 1}, {"use_extra_bufts", 74, 1, 1},      {"no_host", 75, 0, 1},
      {"no_alloc", 76, 0, 1},      {"load_mtp", 77, 0, 1}};
  for (const Field& f : fields) {
    const int64_t v = f.size == 8   ? read_at<int64_t>(b, f.offset)
                      : f.size == 4 ? read_at<int32_t>(b, f.offset)
                                    : static_cast<int64_t>(b[f.offset]);
    if (v != f.expected) {
      return std::string("llama_model_params.") + f.name + " (byte " + std::to_string(f.offset) + ") defaults to " +
             std::to_string(v) + ", the pinned layout expects " + std::to_string(f.expected);
    }
  }
  std::memcpy(out.bytes, b, sizeof(out.bytes));
  return {};
}

inline std::string check_context_params(const Api& api, ContextParams& out) {
  constexpr unsigned char kPoison = 0xA5;
  std::array<unsigned char, 512> buf;
  buf.fill(kPoison);
  api.llama_context_default_params(buf.data());
  const unsigned char* b = buf.data();
  if (auto bad = check_poison_tail(b, buf.size(), 160, kPoison, "llama_context_default_params"); !bad.empty()) {
    return bad;
  }
  struct IntField {
    const char* name;
    size_t offset;
    int64_t expected;
    int size;
  };
  // The defaults of llama_context_default_params in this release
  // (GGML_DEFAULT_N_THREADS = 4, the *_UNSPECIFIED enums and
  // LLAMA_FLASH_ATTN_TYPE_AUTO = -1, GGML_TYPE_F16 = 1).
  const IntField ints[] = {
      {"n_ctx", 0, 512, 4},          {"n_batch", 4, 2048, 4},        {"n_ubatch", 8, 512, 4},
      {"n_seq_max", 12, 1, 4},       {"n_rs_seq", 16, 0, 4},         {"n_outputs_max", 20, 0, 4},
      {"n_outputs_max_per_seq", 24, 1, 4}, {"n_threads", 28, 4, 4},  {"n_threads_batch", 32, 4, 4},
      {"ctx_type", 36, 0, 4},        {"rope_scaling_type", 40, -1, 4}, {"pooling_type", 44, -1, 4},
      {"attention_type", 48, -1, 4}, {"flash_attn_type", 52, -1, 4}, {"yarn_orig_ctx", 80, 0, 4},
      {"cb_eval", 88, 0, 8},         {"cb_eval_user_data", 96, 0, 8}, {"type_k", 104, 1, 4},
      {"type_v", 108, 1, 4},         {"abort_callback", 112, 0, 8},  {"abort_callback_data", 120, 0, 8},
      {"embeddings", 128, 0, 1},     {"offload_kqv", 129, 1, 1},     {"no_perf", 130, 1, 1},
      {"op_offload", 131, 1, 1},     {"swa_full", 132, 1, 1},        {"kv_unified", 133, 0, 1},
      {"samplers", 136, 0, 8},       {"n_samplers", 144, 0, 8},      {"ctx_other", 152, 0, 8}};
  for (const IntField& f : ints) {
    const int64_t v = f.size == 8   ? read_at<int64_t>(b, f.offset)
                      : f.size == 4 ? read_at<int32_t>(b, f.offset)
                                    : static_cast<int64_t>(b[f.offset]);
    if (v != f.expected) {
      return std::string("llama_context_params.") + f.name + " (byte " + std::to_string(f.offset) +
             ") defaults to " + std::to_string(v) + ", the pinned layout expects " + std::to_string(f.expected);
    }
  }
  const std::pair<const char*, std::pair<size_t, float>> floats[] = {
      {"rope_freq_base", {56, 0.0f}},    {"rope_freq_scale", {60, 0.0f}}, {"yarn_ext_factor", {64, -1.0f}},
      {"yarn_attn_factor", {68, -1.0f}}, {"yarn_beta_fast", {72, -1.0f}}, {"yarn_beta_slow", {76, -1.0f}},
      {"defrag_thold", {84, -1.0f}}};
  for (const auto& [name, at] : floats) {
    if (read_at<float>(b, at.first) != at.second) {
      return std::string("llama_context_params.") + name + " (byte " + std::to_string(at.first) +
             ") does not hold its default " + std::to_string(at.second);
    }
  }
  std::memcpy(out.bytes, b, sizeof(out.bytes));
  return {};
}

inline std::string check_threadpool_params(const Api& api) {
  constexpr unsigned char kPoison = 0xA5;
  std::array<unsigned char, 1024> buf;
  buf.fill(kPoison);
  constexpr int kProbeThreads = 3;
  api.ggml_threadpool_params_default(buf.data(), kProbeThreads);
  const unsigned char* b = buf.data();
  if (auto bad = check_poison_tail(b, buf.size(), 528, kPoison, "ggml_threadpool_params_default"); !bad.empty()) {
    return bad;
  }
  for (size_t i = 0; i < 512; ++i) {
    if (b[i] != 0) return "ggml_threadpool_params.cpumask (bytes 0..511) is not all false by default";
  }
  if (read_at<int32_t>(b, 512) != kProbeThreads) return "ggml_threadpool_params.n_threads is not at byte 512";
  if (read_at<int32_t>(b, 516) != 0) return "ggml_threadpool_params.prio (byte 516) is not GGML_SCHED_PRIO_NORMAL";
  if (read_at<uint32_t>(b, 520) != 50) return "ggml_threadpool_params.poll (byte 520) is not its default 50";
  if (b[524] != 0 || b[525] != 0) return "ggml_threadpool_params.strict_cpu/paused (bytes 524, 525) are not false";
  return {};
}

}  // namespace detail

// The loaded library: symbols resolved, layouts checked, the CPU backend
// registered. One per process (instance()); thread-safe to create, the
// models and contexts made from it are not.
class LlamaCppLibrary {
 public:
  // The library at `path` (libllama.v0.5.0.so; libggml* beside it). The first
  // call wins: later calls return the same instance whatever the path.
  static const LlamaCppLibrary& instance(const std::filesystem::path& path) {
    static std::once_flag once;
    static std::unique_ptr<LlamaCppLibrary> lib;
    std::call_once(once, [&] { lib.reset(new LlamaCppLibrary(path)); });
    return *lib;
  }

  bool ok() const { return ok_; }
  // True when the library is there but does not match this file's pins.
  bool broken() const { return broken_; }
  const std::string& reason() const { return reason_; }
  const Api& api() const { return api_; }
  const ModelParams& model_defaults() const { return model_defaults_; }
  const ContextParams& context_defaults() const { return context_defaults_; }
  std::filesystem::path path() const { return path_; }
  // llama_print_system_info(), e.g. "CPU : SSE3 = 1 | ... | AVX2 = 1 | ...".
  std::string system_info() const { return ok_ ? api_.llama_print_system_info() : ""; }
  // The log lines of the backend loading ("load_backend: loaded CPU backend from ...").
  const std::string& backend_log() const { return backend_log_; }

  // The last warnings and errors llama.cpp logged (for error messages).
  static std::string& log_tail() {
    static std::string tail;
    return tail;
  }

 private:
  explicit LlamaCppLibrary(const std::filesystem::path& path) : path_(path) {
    void* handle = open_shared_library(path, "THERMOCLINE_LLAMA_LIB", reason_);
    if (handle == nullptr) return;  // absent or unloadable: unavailable, not broken
    reason_ = load(handle, path);
    broken_ = !reason_.empty();
    ok_ = !broken_;
  }

  // Resolves, checks and initializes; returns why the library is unusable, or "".
  std::string load(void* handle, const std::filesystem::path& path) {
    std::string missing;
    Api& a = api_;
#define TC_RESOLVE(name) resolve_symbol(handle, #name, a.name, missing)
    TC_RESOLVE(llama_backend_init);
    TC_RESOLVE(llama_log_set);
    TC_RESOLVE(llama_print_system_info);
    TC_RESOLVE(llama_model_default_params);
    TC_RESOLVE(llama_model_load_from_file);
    TC_RESOLVE(llama_model_free);
    TC_RESOLVE(llama_model_get_vocab);
    TC_RESOLVE(llama_model_size);
    TC_RESOLVE(llama_vocab_n_tokens);
    TC_RESOLVE(llama_vocab_bos);
    TC_RESOLVE(llama_vocab_eos);
    TC_RESOLVE(llama_vocab_get_add_bos);
    TC_RESOLVE(llama_tokenize);
    TC_RESOLVE(llama_context_default_params);
    TC_RESOLVE(llama_init_from_model);
    TC_RESOLVE(llama_free);
    TC_RESOLVE(llama_decode);
    TC_RESOLVE(llama_get_memory);
    TC_RESOLVE(llama_memory_clear);
    TC_RESOLVE(llama_memory_seq_rm);
    TC_RESOLVE(llama_memory_seq_add);
    TC_RESOLVE(llama_get_logits_ith);
    TC_RESOLVE(llama_get_embeddings_seq);
    TC_RESOLVE(llama_synchronize);
    TC_RESOLVE(llama_set_n_threads);
    TC_RESOLVE(llama_attach_threadpool);
    TC_RESOLVE(ggml_backend_load_all_from_path);
    TC_RESOLVE(ggml_backend_reg_by_name);
    TC_RESOLVE(ggml_backend_reg_get_proc_address);
    TC_RESOLVE(ggml_threadpool_params_default);
#undef TC_RESOLVE
    if (!missing.empty()) return path.string() + " lacks the symbols: " + missing;
    std::string bad = detail::check_model_params(a, model_defaults_);
    if (bad.empty()) bad = detail::check_context_params(a, context_defaults_);
    if (bad.empty()) bad = detail::check_threadpool_params(a);
    if (!bad.empty()) {
      return path.string() + ": " + bad +
             " (tests/oracle/llama_context_oracle.h is pinned to @node-llama-cpp/linux-x64 3.22.1; update it)";
    }
    a.llama_log_set(&LlamaCppLibrary::capture_log, nullptr);
    a.llama_backend_init();
    // The npm build ships its CPU backend as per-ISA libggml-cpu-*.so beside
    // libllama; ggml picks the best one for this CPU, as node-llama-cpp does.
    a.ggml_backend_load_all_from_path(path.parent_path().c_str());
    backend_log_ = log_tail();
    void* cpu = a.ggml_backend_reg_by_name("CPU");
    if (cpu == nullptr) return "no CPU backend loaded from " + path.parent_path().string() + ": " + log_tail();
    a.ggml_threadpool_new =
        reinterpret_cast<decltype(a.ggml_threadpool_new)>(a.ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new"));
    a.ggml_threadpool_free = reinterpret_cast<decltype(a.ggml_threadpool_free)>(
        a.ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_free"));
    if (a.ggml_threadpool_new == nullptr || a.ggml_threadpool_free == nullptr) {
      return "the CPU backend lacks ggml_threadpool_new/free";
    }
    return {};
  }

  // Keeps INFO lines too (the backend loader reports what it loaded at INFO).
  static void capture_log(int level, const char* text, void*) {
    constexpr int kGgmlLogLevelInfo = 2;  // ggml_log_level: 1 DEBUG, 2 INFO, 3 WARN, 4 ERROR, 5 CONT
    if (level < kGgmlLogLevelInfo || text == nullptr) return;
    std::string& tail = log_tail();
    tail += text;
    constexpr size_t kKeep = 4000;
    if (tail.size() > kKeep) tail.erase(0, tail.size() - kKeep);
  }

  std::filesystem::path path_;
  Api api_;
  ModelParams model_defaults_{};
  ContextParams context_defaults_{};
  bool ok_ = false;
  bool broken_ = false;
  std::string reason_;
  std::string backend_log_;
};

// Whether llama.cpp may repack weights for its CPU kernels (use_extra_bufts).
enum class Repack { Default, Off };

// A whole model loaded by llama.cpp with its default model params (mmap, CPU
// weight repacking on, as llama-bench and llama-cli load it; Repack::Off
// for graphs whose weights a CPU variant's repacked buffers cannot serve).
// Move-only.
class LlamaCppModel {
 public:
  LlamaCppModel(const LlamaCppLibrary& lib, const std::filesystem::path& path, Repack repack = Repack::Default)
      : lib_(&lib) {
    if (!lib.ok()) throw std::runtime_error("llama.cpp unavailable: " + lib.reason());
    LlamaCppLibrary::log_tail().clear();
    ModelParams params = lib.model_defaults();
    if (repack == Repack::Off) params.bytes[74] = 0;  // use_extra_bufts (check_model_params pins the offset)
    model_ = lib.api().llama_model_load_from_file(path.c_str(), params);
    if (model_ == nullptr) {
      throw std::runtime_error("llama_model_load_from_file(" + path.string() + ") failed: " +
                               LlamaCppLibrary::log_tail());
    }
    vocab_ = lib.api().llama_model_get_vocab(model_);
  }
  ~LlamaCppModel() {
    if (model_ != nullptr) lib_->api().llama_model_free(model_);
  }
  LlamaCppModel(LlamaCppModel&& o) noexcept
      : lib_(o.lib_), model_(std::exchange(o.model_, nullptr)), vocab_(std::exchange(o.vocab_, nullptr)) {}
  LlamaCppModel& operator=(LlamaCppModel&&) = delete;
  LlamaCppModel(const LlamaCppModel&) = delete;
  LlamaCppModel& operator=(const LlamaCppModel&) = delete;

  void* handle() const { return model_; }
  const LlamaCppLibrary& library() const { return *lib_; }
  int32_t n_vocab() const { return lib_->api().llama_vocab_n_tokens(vocab_); }
  int32_t bos() const { return lib_->api().llama_vocab_bos(vocab_); }
  bool add_bos() const { return lib_->api().llama_vocab_get_add_bos(vocab_); }
  uint64_t size_bytes() const { return lib_->api().llama_model_size(model_); }  // all tensors

  // llama_tokenize with add_special (BOS as the vocab asks) and parse_special
  // as llama-cli tokenizes a prompt.
  std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = true) const {
    const auto& api = lib_->api();
    const auto len = static_cast<int32_t>(text.size());
    std::vector<int32_t> ids(text.size() + 8);
    int32_t n = api.llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()),
                                   add_special, parse_special);
    if (n < 0) {
      ids.resize(static_cast<size_t>(-n));
      n = api.llama_tokenize(vocab_, text.data(), len, ids.data(), static_cast<int32_t>(ids.size()), add_special,
                             parse_special);
      if (n < 0) throw std::runtime_error("llama_tokenize failed twice");
    }
    ids.resize(static_cast<size_t>(n));
    return ids;
  }

 private:
  const LlamaCppLibrary* lib_;
  void* model_ = nullptr;        // llama_model*
  const void* vocab_ = nullptr;  // owned by model_
};

struct ContextOptions {
  uint32_t n_ctx = 512;
  uint32_t n_batch = 2048;   // llama-bench's defaults
  uint32_t n_ubatch = 512;
  int32_t n_threads = 2;     // decode and batch threads alike
  FlashAttn flash_attn = FlashAttn::Off;
  // The KV cache's ggml_type (1 F16, 8 Q8_0); a quantized V cache needs
  // flash attention on.
  int32_t type_k = 1;
  int32_t type_v = 1;
  bool threadpool = true;    // a persistent ggml threadpool, as llama-bench attaches
  // Embeddings instead of logits, pooled per sequence (llama_pooling_type:
  // 1 mean, 2 cls, 3 last; -1 the model's).
  bool embeddings = false;
  int32_t pooling_type = -1;
};

// llama_pooling_type values.
inline constexpr int32_t kPoolingMean = 1, kPoolingCls = 2, kPoolingLast = 3, kPoolingRank = 4;

// One llama_context on a model, with its own threadpool. Move-only; the model
// must outlive it. Not thread-safe.
class LlamaCppContext {
 public:
  LlamaCppContext(const LlamaCppModel& model, const ContextOptions& o) : lib_(&model.library()) {
    ContextParams p = lib_->context_defaults();
    auto put = [&p](size_t offset, auto value) { std::memcpy(p.bytes + offset, &value, sizeof(value)); };
    put(ctx_offset::kNCtx, o.n_ctx);
    put(ctx_offset::kNBatch, o.n_batch);
    put(ctx_offset::kNUbatch, o.n_ubatch);
    put(ctx_offset::kNThreads, o.n_threads);
    put(ctx_offset::kNThreadsBatch, o.n_threads);
    put(ctx_offset::kFlashAttnType, static_cast<int32_t>(o.flash_attn));
    put(ctx_offset::kTypeK, o.type_k);
    put(ctx_offset::kTypeV, o.type_v);
    put(ctx_offset::kPoolingType, o.pooling_type);
    put(ctx_offset::kEmbeddings, o.embeddings);
    LlamaCppLibrary::log_tail().clear();
    ctx_ = lib_->api().llama_init_from_model(model.handle(), p);
    if (ctx_ == nullptr) throw std::runtime_error("llama_init_from_model failed: " + LlamaCppLibrary::log_tail());
    if (o.threadpool) {
      ThreadpoolParams tpp;
      std::memset(tpp.bytes, 0, sizeof(tpp.bytes));
      lib_->api().ggml_threadpool_params_default(tpp.bytes, o.n_threads);
      threadpool_ = lib_->api().ggml_threadpool_new(&tpp);
      if (threadpool_ == nullptr) {
        lib_->api().llama_free(ctx_);
        throw std::runtime_error("ggml_threadpool_new failed");
      }
      lib_->api().llama_attach_threadpool(ctx_, threadpool_, nullptr);
    }
    lib_->api().llama_set_n_threads(ctx_, o.n_threads, o.n_threads);
  }
  ~LlamaCppContext() {
    if (ctx_ != nullptr) lib_->api().llama_free(ctx_);
    if (threadpool_ != nullptr) lib_->api().ggml_threadpool_free(threadpool_);
  }
  LlamaCppContext(LlamaCppContext&& o) noexcept
      : lib_(o.lib_), ctx_(std::exchange(o.ctx_, nullptr)), threadpool_(std::exchange(o.threadpool_, nullptr)) {}
  LlamaCppContext& operator=(LlamaCppContext&&) = delete;
  LlamaCppContext(const LlamaCppContext&) = delete;
  LlamaCppContext& operator=(const LlamaCppContext&) = delete;

  // llama_memory_clear(data = false): the next decode starts at position 0.
  void clear() { lib_->api().llama_memory_clear(lib_->api().llama_get_memory(ctx_), false); }

  // A context shift of sequence 0, holding positions [0, n_past): positions
  // [n_keep, n_keep + n_discard) removed (llama_memory_seq_rm), the rest
  // moved down by n_discard (llama_memory_seq_add; llama.cpp rotates their
  // keys at the next decode). The next decode continues at n_past - n_discard.
  bool shift(int32_t n_keep, int32_t n_discard, int32_t n_past) {
    void* memory = lib_->api().llama_get_memory(ctx_);
    if (!lib_->api().llama_memory_seq_rm(memory, 0, n_keep, n_keep + n_discard)) return false;
    lib_->api().llama_memory_seq_add(memory, 0, n_keep + n_discard, n_past, -n_discard);
    return true;
  }

  // llama_decode of llama_batch_get_one(tokens): positions continue the
  // sequence, logits for the last token only. Returns llama_decode's status
  // (0 ok). Waits for the result (llama_synchronize).
  int32_t decode(const int32_t* tokens, int32_t n_tokens) {
    Batch b{n_tokens, const_cast<int32_t*>(tokens), nullptr, nullptr, nullptr, nullptr, nullptr};
    const int32_t rc = lib_->api().llama_decode(ctx_, b);
    lib_->api().llama_synchronize(ctx_);
    return rc;
  }

  // f32 [n_vocab]: the logits of the last decoded token.
  const float* last_logits() { return lib_->api().llama_get_logits_ith(ctx_, -1); }
  // f32 [n_embd]: sequence 0's pooled embedding (a context made with
  // embeddings and a pooling type); null otherwise.
  const float* sequence_embedding() { return lib_->api().llama_get_embeddings_seq(ctx_, 0); }

 private:
  const LlamaCppLibrary* lib_;
  void* ctx_ = nullptr;         // llama_context*
  void* threadpool_ = nullptr;  // ggml_threadpool*
};

// Greedy generation exactly as llama.cpp's greedy sampler picks (argmax,
// ties to the lowest id): decodes `prompt_tokens` in one batch from an empty
// context, then `n_gen` tokens one at a time, never stopping at EOS. Also
// returns the prompt's last-position logits.
struct GreedyResult {
  std::vector<int32_t> tokens;
  std::vector<float> prompt_logits;  // f32 [n_vocab]
};

inline int32_t argmax(const float* logits, int32_t n) {
  int32_t best = 0;
  for (int32_t i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

inline GreedyResult greedy(LlamaCppContext& ctx, int32_t n_vocab, const std::vector<int32_t>& prompt_tokens,
                           int32_t n_gen) {
  GreedyResult r;
  ctx.clear();
  if (ctx.decode(prompt_tokens.data(), static_cast<int32_t>(prompt_tokens.size())) != 0) {
    throw std::runtime_error("llama_decode of the prompt failed: " + LlamaCppLibrary::log_tail());
  }
  const float* logits = ctx.last_logits();
  if (logits == nullptr) throw std::runtime_error("llama_get_logits_ith(-1) returned null");
  r.prompt_logits.assign(logits, logits + n_vocab);
  for (int32_t i = 0; i < n_gen; ++i) {
    int32_t next = argmax(logits, n_vocab);
    r.tokens.push_back(next);
    if (i + 1 == n_gen) break;
    if (ctx.decode(&next, 1) != 0) throw std::runtime_error("llama_decode failed: " + LlamaCppLibrary::log_tail());
    logits = ctx.last_logits();
  }
  return r;
}

}  // namespace tc::oracle::llamacpp
