// StepGraphs: the CUDA backend's step graphs (Backend::begin_graph). A step
// is recorded by stream capture into a cudaGraph_t; each key keeps one
// instantiated cudaGraphExec_t, updated in place (cudaGraphExecUpdate) when a
// later recording under that key has the same nodes, instantiated anew when
// not. A recording that fails (an op a graph cannot hold: an allocation, a
// synchronization, memory a graph cannot copy) turns graphs off for the
// backend, with the reason kept for the log. THERMOCLINE_CUDA_GRAPHS=0 (or
// off, false) turns them off from the start.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <unordered_map>

namespace tc::kernels::cuda {

class StepGraphs {
 public:
  StepGraphs();  // reads THERMOCLINE_CUDA_GRAPHS
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Starts recording `stream` (thread-local capture mode, so that calls a
  // graph cannot hold fail instead of running); false when graphs are off.
  bool begin(cudaStream_t stream, uint64_t key);
  // Ends the recording and launches the step's graph on `stream`; false
  // (nothing ran, graphs now off) when the recording or the graph failed.
  bool end(cudaStream_t stream);
  // Ends a recording an exception left open, discarding it; graphs off.
  void abort(cudaStream_t stream, const std::string& reason);
  bool recording() const { return recording_; }

  // One line for logs: the counts, or why graphs are off.
  std::string summary() const;

 private:
  void turn_off(const std::string& reason);

  struct Stats {
    int64_t launches = 0;        // steps run as graphs
    int64_t updates = 0;         // of them, on an updated graph
    int64_t instantiations = 0;  // graphs made
    bool enabled = true;         // false: off (by the environment, or after a failure)
    std::string off_reason;      // why off
  };
  Stats stats_;
  bool recording_ = false;
  uint64_t key_ = 0;
  std::unordered_map<uint64_t, cudaGraphExec_t> execs_;
};

}  // namespace tc::kernels::cuda
