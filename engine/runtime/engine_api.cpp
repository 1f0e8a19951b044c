// The Engine facade (any thread): construction, request validation and the
// bounded queue, shutdown, and snapshots of the engine thread's figures.
#include <algorithm>
#include <utility>

#include "engine/model/context_shift.h"
#include "engine/runtime/engine_impl.h"
#include "engine/runtime/request_check.h"

namespace tc::runtime {

Engine::Engine(std::shared_ptr<const model::LoadedModel> model, EngineOptions options) : options_(options) {
  if (model && model->spec.n_ctx_train > 0) options_.n_ctx = std::min(options_.n_ctx, model->spec.n_ctx_train);
  context_shift_refusal_ = model ? model::context_shift_refusal(model->spec) : "no model";
  impl_ = std::make_unique<Impl>(std::move(model), options_);
  impl_->stats.kv_tokens_capacity = static_cast<int64_t>(std::max(options_.n_parallel, 0)) * options_.n_ctx;
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

Engine::~Engine() { shutdown(std::chrono::milliseconds(0)); }

SubmitResult Engine::submit(GenerationRequest request) {
  SubmitResult result;
  auto refuse = [&](SubmitStatus status, std::string message) {
    result.status = status;
    result.message = std::move(message);
    return result;
  };
  const auto& loaded = impl_->loaded;
  if (!loaded) return refuse(SubmitStatus::NotReady, "the engine has no model");
  if (request.context_shift && !context_shift_refusal_.empty()) {
    return refuse(SubmitStatus::InvalidRequest, "context shift is not possible on this model: " + context_shift_refusal_);
  }
  if (loaded->spec.architecture->bidirectional && !request.embedding) {
    return refuse(SubmitStatus::InvalidRequest, "this model (" + loaded->spec.arch +
                                                    ") is an encoder: it serves embeddings (/v1/embeddings), "
                                                    "not completions");
  }
  if (request.embedding == model::Pooling::Rank && loaded->spec.n_cls_out == 0) {
    return refuse(SubmitStatus::InvalidRequest, "this model (" + loaded->spec.arch +
                                                    ") has no classification head: it does not rank (rerank)");
  }
  if (auto refusal =
          check_request(request, static_cast<int32_t>(loaded->spec.n_vocab), options_.n_ctx, loaded->spec.n_embd)) {
    return refuse(refusal->status, std::move(refusal->message));
  }
  auto handle = std::make_shared<RequestHandle>();
  {
    std::lock_guard lock(impl_->mutex);
    const EngineState state = impl_->stats.state;
    if (state == EngineState::Failed) {
      return refuse(SubmitStatus::NotReady, "the engine failed: " + impl_->stats.failure);
    }
    if (impl_->stopping || state == EngineState::Stopped) {
      return refuse(SubmitStatus::NotReady, "the engine is shutting down");
    }
    if (static_cast<int64_t>(impl_->queue.size()) >= options_.queue_size) {
      return refuse(SubmitStatus::QueueFull,
                    "the queue is full (" + std::to_string(options_.queue_size) + " requests waiting)");
    }
    impl_->queue.push_back(Pending{std::move(request), handle, Clock::now()});
    impl_->stats.requests_waiting = static_cast<int>(impl_->queue.size());
  }
  impl_->wake.notify_one();
  result.handle = std::move(handle);
  return result;
}

void Engine::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(impl_->mutex);
    const auto end = Clock::now() + grace;
    if (!impl_->stopping || end < impl_->grace_end) impl_->grace_end = end;
    impl_->stopping = true;
  }
  impl_->wake.notify_all();
  std::lock_guard join_lock(impl_->join_mutex);
  if (impl_->thread.joinable()) impl_->thread.join();
}

FfnActivity Engine::ffn_activity() const {
  const FfnActivityRing* ring = nullptr;
  {
    std::lock_guard lock(impl_->mutex);
    ring = impl_->activity;
  }
  return ring != nullptr ? ring->window() : FfnActivity{};
}

DecodeTimes Engine::decode_times() const {
  const DecodeTimeRing* ring = nullptr;
  {
    std::lock_guard lock(impl_->mutex);
    ring = impl_->decode_times;
  }
  return ring != nullptr ? ring->window() : DecodeTimes{};
}

EngineBandwidths Engine::bandwidths() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->bandwidths;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats;
}

EngineState Engine::state() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stats.state;
}

std::vector<std::string> Engine::setup_summary() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->setup_summary;
}

}  // namespace tc::runtime
