// Layer offload (the first k layers on the device, the rest on the CPU) with
// HostDeviceBackend as the "GPU": the CPU backend's logits bit for bit for
// k = 0, 1, n_layer - 1, n_layer on generated dense models, the weights
// uploaded (the first k layers, the head only with every layer), the KV
// cache split, what crosses the bus per decode step, and the refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "engine/model/llama_model.h"
#include "engine/model/loaded_model.h"
#include "kernels/backend.h"
#include "profiler/make_model.h"
#include "tests/engine/model/host_device_backend.h"
#include "tests/test_util.h"

using tc::model::FfnMode;
using tc::model::LayerOffloadOptions;
using tc::model::LlamaModel;
using tc::model::StepSequence;
using tc::model::StepStatus;
using tc::text::TokenId;

namespace {

constexpr int64_t kVocab = 512;
constexpr int64_t kLayers = 3;
constexpr int64_t kEmbd = 64;

std::unique_ptr<tc::model::LoadedModel> dense_model(const std::string& type, bool tied) {
  tc::profiler::MakeModelOptions o;
  o.output = tc::test::scratch_dir("layer_offload_" + type + (tied ? "_tied" : "")) / "m.gguf";
  o.n_vocab = kVocab;
  o.n_embd = kEmbd;
  o.n_layer = kLayers;
  o.n_ff = 160;
  o.n_head = 4;
  o.n_head_kv = 2;
  o.n_ctx = 128;
  o.weight_type = type;
  o.tied_embeddings = tied;
  o.seed = 17;
  o.n_threads = 2;
  tc::profiler::make_model(o);
  return tc::model::load_model(o.output);
}

// File bytes of the tensors whose names start with `prefix`.
size_t file_bytes(const tc::model::LoadedModel& m, const std::string& prefix) {
  size_t n = 0;
  for (const auto& t : m.file.tensors()) {
    if (t.name.rfind(prefix, 0) == 0) n += t.n_bytes;
  }
  return n;
}

struct Run {
  std::vector<float> logits;             // every step's logits, concatenated
  std::vector<size_t> decode_to_device;  // bus bytes of each decode step (HostDeviceBackend runs only)
  std::vector<size_t> decode_to_host;
  std::vector<size_t> decode_uploads;    // weight bytes uploaded during each decode step
};

// Two sequences prefilled in one step (one with every position's logits),
// then four steps decoding both, one token each.
Run run_steps(LlamaModel& m, tc::test::HostDeviceBackend* device) {
  auto kv = m.make_kv_cache(2, 64);
  const auto a = tc::test::random_tokens(9, 1, kVocab);
  const auto b = tc::test::random_tokens(5, 2, kVocab);
  Run run;
  std::vector<float> logits(1, std::numeric_limits<float>::quiet_NaN());
  const StepSequence prefill[] = {{0, a, true}, {1, b, false}};
  REQUIRE(m.forward(prefill, kv, logits) == StepStatus::Ok);
  run.logits.insert(run.logits.end(), logits.begin(), logits.end());
  for (int step = 0; step < 4; ++step) {
    const TokenId next_a = (7 * step + 3) % kVocab, next_b = (11 * step + 5) % kVocab;
    const StepSequence decode[] = {{0, std::span(&next_a, 1), false, true}, {1, std::span(&next_b, 1), false, true}};
    const size_t in = device ? device->to_device_bytes : 0, out = device ? device->to_host_bytes : 0;
    const size_t up = device ? device->uploaded_bytes : 0;
    std::fill(logits.begin(), logits.end(), std::numeric_limits<float>::quiet_NaN());
    REQUIRE(m.forward(decode, kv, logits) == StepStatus::Ok);
    run.logits.insert(run.logits.end(), logits.begin(), logits.end());
    if (device != nullptr) {
      run.decode_to_device.push_back(device->to_device_bytes - in);
      run.decode_to_host.push_back(device->to_host_bytes - out);
      run.decode_uploads.push_back(device->uploaded_bytes - up);
    }
  }
  return run;
}

}  // namespace

TEST_CASE("layer offload gives the CPU's logits bit for bit, uploading the first k layers", "[model][offload]") {
  for (const char* type : {"f32", "f16", "q8_0", "q4_0"}) {
    for (bool tied : {false, true}) {
      const auto loaded = dense_model(type, tied);
      auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
      LlamaModel on_cpu(*loaded, *cpu);
      const Run want = run_steps(on_cpu, nullptr);
      for (int64_t k : {int64_t{0}, int64_t{1}, kLayers - 1, kLayers}) {
        INFO(type << (tied ? " tied" : "") << ", k = " << k);
        tc::test::HostDeviceBackend device(2);
        auto host = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 2});
        LlamaModel m(*loaded, device, {}, {}, LayerOffloadOptions{.cpu = host.get(), .n_device_layers = k});

        // Weights: blk.0 .. blk.k-1, and the head (output_norm + output, or
        // token_embd's bytes when tied) only with every layer; never token_embd itself.
        size_t want_uploaded = 0;
        for (int64_t l = 0; l < k; ++l) want_uploaded += file_bytes(*loaded, "blk." + std::to_string(l) + ".");
        if (k == kLayers) {
          want_uploaded += file_bytes(*loaded, "output_norm.") +
                           file_bytes(*loaded, tied ? "token_embd." : "output.weight");
        }
        CHECK(device.uploaded_bytes == want_uploaded);
        CHECK(m.device_weight_bytes() == want_uploaded);

        // The KV cache: k layers' worth on the device, the rest on the host.
        const auto kv = m.make_kv_cache(2, 64);
        const size_t kv_layer_bytes = 2 * 2 * 64 * static_cast<size_t>(loaded->spec.n_embd_kv()) * sizeof(uint16_t);
        CHECK(kv.first_bytes() == static_cast<size_t>(k) * kv_layer_bytes);
        CHECK(kv.bytes() == static_cast<size_t>(kLayers) * kv_layer_bytes);

        const Run got = run_steps(m, &device);
        REQUIRE(got.logits.size() == want.logits.size());
        CHECK(std::memcmp(got.logits.data(), want.logits.data(), got.logits.size() * sizeof(float)) == 0);

        // Per decode step of 2 tokens: positions and the embedding rows up
        // when layer 0 is on the device; the residual down at the boundary
        // (0 < k < n_layer) or the logits (k = n_layer); no weights.
        const size_t hidden = 2 * kEmbd * sizeof(float);
        const size_t want_in = k > 0 ? 2 * sizeof(int32_t) + hidden : 0;
        const size_t want_out = k == 0 ? 0 : k < kLayers ? hidden : 2 * kVocab * sizeof(float);
        for (size_t s = 0; s < got.decode_to_device.size(); ++s) {
          INFO("decode step " << s);
          CHECK(got.decode_to_device[s] == want_in);
          CHECK(got.decode_to_host[s] == want_out);
          CHECK(got.decode_uploads[s] == 0);
        }
        // With k = 0 nothing at all lives on the device.
        if (k == 0) CHECK(device.allocated_bytes == 0);
        if (k > 0) CHECK(device.allocated_bytes > static_cast<size_t>(k) * kv_layer_bytes);
      }
    }
  }
}

TEST_CASE("layer offload refuses what it cannot run, saying why", "[model][offload]") {
  const auto loaded = dense_model("f32", false);
  auto cpu = tc::kernels::create_backend(tc::kernels::DeviceKind::Cpu, {.n_threads = 1});
  tc::test::HostDeviceBackend device(1);
  const LayerOffloadOptions one{.cpu = cpu.get(), .n_device_layers = 1};
  CHECK_THROWS_WITH(LlamaModel(*loaded, *cpu, {}, {}, one), Catch::Contains("needs a GPU backend"));
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {}, {}, {.cpu = &device, .n_device_layers = 1}),
                    Catch::Contains("must be the CPU's"));
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {}, {}, {.cpu = cpu.get(), .n_device_layers = kLayers + 1}),
                    Catch::Contains("4 layers asked, the model has 3"));
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {}, {}, {.cpu = cpu.get(), .n_device_layers = -1}),
                    Catch::Contains("layers asked"));
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {.ffn_mode = FfnMode::Sparse}, {}, one),
                    Catch::Contains("dense FFN"));
  const tc::model::HybridOptions hybrid{.cpu = cpu.get(), .placement = {}, .prefetch = {}};
  CHECK_THROWS_WITH(LlamaModel(*loaded, device, {.ffn_mode = FfnMode::Sparse}, hybrid, one),
                    Catch::Contains("two modes"));
}
