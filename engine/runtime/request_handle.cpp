// What a request's handle carries between the engine thread and the HTTP
// thread that reads it: RequestHandle's event queue (engine.h), and the
// finish reasons' names.
#include "engine/runtime/engine.h"

#include <utility>

namespace tc::runtime {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "?";
}

bool RequestHandle::next(StreamEvent& event, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty() || ended_; })) return false;
  if (events_.empty()) {
    event = StreamEvent{};
    event.kind = StreamEvent::Kind::Error;
    event.error = "no more events";
    return true;
  }
  event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool RequestHandle::ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

void RequestHandle::push(StreamEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    ended_ = event.kind != StreamEvent::Kind::Text;
    events_.push_back(std::move(event));
  }
  ready_.notify_all();
}

}  // namespace tc::runtime
