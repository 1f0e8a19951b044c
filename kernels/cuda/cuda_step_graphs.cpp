// StepGraphs (see cuda_step_graphs.h). Failures of the graph API are not
// thrown: the step is issued again without a graph, so a driver that cannot
// hold some op costs speed, never a request; summary() says why.
#include "kernels/cuda/cuda_step_graphs.h"

#include <cstdlib>
#include <string_view>

namespace tc::kernels::cuda {
namespace {

// Keys kept at most (step shapes: tokens, sequences, logit rows); beyond,
// every graph is dropped and made again as steps need them.
constexpr size_t kMaxGraphs = 32;

bool env_turns_off() {
  const char* v = std::getenv("THERMOCLINE_CUDA_GRAPHS");
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "0" || s == "off" || s == "false" || s == "no";
}

std::string describe(cudaError_t err) { return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err); }

}  // namespace

StepGraphs::StepGraphs() {
  if (env_turns_off()) {
    stats_.enabled = false;
    stats_.off_reason = "THERMOCLINE_CUDA_GRAPHS turns them off";
  }
}

StepGraphs::~StepGraphs() {
  for (auto& [key, exec] : execs_) cudaGraphExecDestroy(exec);
}

void StepGraphs::turn_off(const std::string& reason) {
  if (!stats_.enabled) return;
  stats_.enabled = false;
  stats_.off_reason = reason;
  for (auto& [key, exec] : execs_) cudaGraphExecDestroy(exec);
  execs_.clear();
}

bool StepGraphs::begin(cudaStream_t stream, uint64_t key) {
  if (!stats_.enabled || recording_) return false;
  const cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    cudaGetLastError();
    turn_off("cudaStreamBeginCapture: " + describe(err));
    return false;
  }
  recording_ = true;
  key_ = key;
  return true;
}

bool StepGraphs::end(cudaStream_t stream) {
  if (!recording_) return false;
  recording_ = false;
  cudaGraph_t graph = nullptr;
  cudaError_t err = cudaStreamEndCapture(stream, &graph);
  if (err != cudaSuccess || graph == nullptr) {
    cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    turn_off("recording the step: " + describe(err));
    return false;
  }
  cudaGraphExec_t exec = nullptr;
  if (auto it = execs_.find(key_); it != execs_.end()) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(it->second, graph, &info) == cudaSuccess) {
      exec = it->second;
      ++stats_.updates;
    } else {
      cudaGetLastError();  // another topology under this key: make it anew
      cudaGraphExecDestroy(it->second);
      execs_.erase(it);
    }
  }
  if (exec == nullptr) {
    if (execs_.size() >= kMaxGraphs) {
      for (auto& [key, old] : execs_) cudaGraphExecDestroy(old);
      execs_.clear();
    }
    err = cudaGraphInstantiate(&exec, graph, 0);
    if (err != cudaSuccess) {
      cudaGetLastError();
      cudaGraphDestroy(graph);
      turn_off("cudaGraphInstantiate: " + describe(err));
      return false;
    }
    execs_[key_] = exec;
    ++stats_.instantiations;
  }
  err = cudaGraphLaunch(exec, stream);
  cudaGraphDestroy(graph);
  if (err != cudaSuccess) {
    cudaGetLastError();
    turn_off("cudaGraphLaunch: " + describe(err));
    return false;
  }
  ++stats_.launches;
  return true;
}

void StepGraphs::abort(cudaStream_t stream, const std::string& reason) {
  if (!recording_) return;
  recording_ = false;
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
  turn_off(reason);
}

std::string StepGraphs::summary() const {
  if (!stats_.enabled) return "step graphs off (" + stats_.off_reason + ")";
  return "step graphs: " + std::to_string(stats_.launches) + " steps, " + std::to_string(stats_.updates) +
         " on an updated graph, " + std::to_string(stats_.instantiations) + " graphs made";
}

}  // namespace tc::kernels::cuda
