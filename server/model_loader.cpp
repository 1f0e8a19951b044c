// load_serving_model: model file -> chat template -> engine, until Ready.
#include "server/model_loader.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/device_setting.h"
#include "config/gpu_split_setting.h"
#include "engine/model/loaded_model.h"
#include "engine/text/chat_template.h"
#include "engine/text/vocab_harmony.h"
#include "server/gemma4_split.h"
#include "server/image_embedder.h"
#include "server/tool_call_parser.h"
#include "kernels/cpu/q4_lanes16.h"
#include "kernels/cpu/thread_pool.h"

namespace tc::server {

runtime::EngineOptions engine_options(const config::ServeOptions& o) {
  runtime::EngineOptions e;
  e.n_parallel = o.parallel;
  e.n_ctx = o.ctx_size;
  e.n_batch = o.batch_size;
  e.queue_size = o.queue_size;
  e.lookup_draft.n_max = o.lookup_draft;
  e.time_split = o.time_split;
  // The engine view's modelled limit per token. The probe allocates and
  // reads a large buffer at each engine start: a models folder, loading
  // models on demand within a memory budget, goes without it.
  e.probe_bandwidth = o.models_dir.empty();
  e.model.threads = o.threads;
  e.model.device = config::parse_device_setting(o.device);
  e.model.sparsity = config::parse_sparsity_setting(o.sparsity);
  e.model.sparse_max_tokens = o.sparse_max_tokens;
  e.model.cpu_repack = kernels::cpu_repack_from_name(o.repack).value();  // one of the key's choices
  e.model.kv_types = {kernels::dtype_from_name(o.cache_type_k).value(),  // f16 or q8_0, the keys' choices
                      kernels::dtype_from_name(o.cache_type_v).value()};
  e.model.gpu_split =
      config::parse_gpu_split_setting(e.model.device, o.placement.string(), o.offload_layers, o.vram_budget,
                                      o.prefetch);
  return e;
}

namespace {

// The model's vision projector, checked against it: its embeddings must be
// the language model's width.
std::shared_ptr<ImageEmbedder> load_vision(const config::ServeOptions& o, const model::LoadedModel& loaded,
                                           const std::string& file) {
  std::shared_ptr<const vision::VisionModel> projector;
  try {
    projector = vision::VisionModel::load(o.mmproj);
  } catch (const std::exception& e) {
    throw ModelLoadFailure(file + ": vision projector: " + e.what());
  }
  if (projector->spec().n_embd_text != loaded.spec.n_embd) {
    throw ModelLoadFailure(o.mmproj.string() + ": the projector's embeddings have " +
                           std::to_string(projector->spec().n_embd_text) + " values; the model " + file + " has " +
                           std::to_string(loaded.spec.n_embd) + " (a projector of another model)");
  }
  const int threads = o.threads > 0 ? o.threads : kernels::ThreadPool::physical_cores();
  spdlog::info("vision projector {} ({}, {} image tokens per image)", o.mmproj.string(), projector->spec().projector,
               projector->spec().n_image_tokens());
  return std::make_shared<ImageEmbedder>(std::move(projector), threads);
}

}  // namespace

std::shared_ptr<ServingModel> load_serving_model(const std::filesystem::path& path, const config::ServeOptions& o,
                                                 const std::string& model_id) {
  const std::string file = path.string();
  auto serving = std::make_shared<ServingModel>();
  serving->model_id = model_id;
  serving->options = o;
  std::string template_text;
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    if (!in) throw ModelLoadFailure("cannot read the chat template file " + o.chat_template_file.string());
    std::ostringstream text;
    text << in.rdbuf();
    template_text = text.str();
  }
  std::shared_ptr<const model::LoadedModel> loaded;
  try {
    loaded = model::load_model(path, {.stats = o.stats});
  } catch (const std::exception& e) {
    // ModelLoadError's message names the file already; others may not.
    const std::string what = e.what();
    throw ModelLoadFailure(what.find(file) != std::string::npos ? what : file + ": " + what);
  }
  serving->model = loaded;
  serving->tool_marker_ids = tool_marker_ids(loaded->tokenizer->vocab().tokens);
  serving->harmony = text::is_harmony_vocab(loaded->tokenizer->vocab());
  serving->gemma4_marker_ids = gemma4_marker_ids(loaded->tokenizer->vocab().tokens);
  const auto& file_template = loaded->tokenizer->vocab().chat_template;
  try {
    if (!template_text.empty()) {
      serving->chat_template = std::make_shared<text::ChatTemplate>(template_text);
    } else if (file_template) {
      serving->chat_template = std::make_shared<text::ChatTemplate>(*file_template);
    } else {
      spdlog::warn("model {}: no chat template (tokenizer.chat_template); using ChatML", model_id);
      serving->chat_template = std::make_shared<text::ChatTemplate>(text::ChatTemplate::chatml_source());
    }
  } catch (const text::ChatTemplateError& e) {
    serving->chat_template_error = std::string("the model's chat template cannot be used: ") + e.what();
    spdlog::error("model {}: {}; chat requests will fail with this message", model_id, serving->chat_template_error);
  }
  if (!o.mmproj.empty()) {
    try {
      serving->vision = load_vision(o, *loaded, file);
    } catch (const ModelLoadFailure& e) {
      if (!o.mmproj_beside) throw;
      // (Qwen-VL's and others' projectors sit beside their models in downloaded folders.)
      spdlog::warn("model {}: {}; the projector was found beside it: serving text only", model_id, e.what());
    }
  }
  runtime::EngineOptions options;
  try {
    options = engine_options(o);
  } catch (const std::exception& e) {
    throw ModelLoadFailure(file + ": " + e.what());
  }
  serving->engine = std::make_shared<runtime::Engine>(loaded, options);
  while (serving->engine->state() == runtime::EngineState::Loading) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (serving->engine->state() != runtime::EngineState::Ready) {
    throw ModelLoadFailure(file + ": " + serving->engine->stats().failure);
  }
  return serving;
}

ModelLoadFunction default_model_loader() {
  const char* env = std::getenv("THERMOCLINE_TEST_LOAD_DELAY_MS");
  const long delay_ms = env ? std::strtol(env, nullptr, 10) : 0;
  if (delay_ms <= 0) return load_serving_model;
  spdlog::warn("THERMOCLINE_TEST_LOAD_DELAY_MS is set: every model load waits {} ms first (a test hook)", delay_ms);
  return [delay_ms](const std::filesystem::path& path, const config::ServeOptions& o, const std::string& model_id) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    return load_serving_model(path, o, model_id);
  };
}

}  // namespace tc::server
