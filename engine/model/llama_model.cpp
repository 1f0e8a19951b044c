// The forward pass of every architecture (architecture.h): embeddings
// (scaled for Gemma), then per layer
//   x += attn_output(attention(rope(q), rope(k), v))   on norm(x)
//   x += ffn_down(act(ffn_gate, ffn_up))                on ffn_norm(x)
// (or a mixture of experts' output, moe_ffn_block.h, past any leading dense layers)
// with the architecture's variations (biases, q/k norms, post-norms, or
// post-norms without pre-norms; sliding windows, layers without RoPE, score caps;
// Falcon's and Cohere's attention and FFN side by side on one norm), then
// the final norm and the output head (with its bias, logit multiplier and
// logit cap) on the rows that need logits. Decode steps on a GPU run as
// one step graph (Backend::begin_graph) where the step allows it.
#include "engine/model/llama_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/model/cpu_repack.h"
#include "kernels/check.h"
#include "kernels/cuda_error.h"
#include "kernels/device_scratch.h"

namespace tc::model {
namespace {

bool on_host(const kernels::Backend& backend) { return backend.device() == kernels::DeviceKind::Cpu; }

void require_host_backend(const kernels::Backend& backend, const char* what) {
  if (!on_host(backend)) {
    throw std::invalid_argument(std::string(what) + " needs the CPU backend (it reads activations in host memory); "
                                "this model runs on " + backend.name());
  }
}

}  // namespace

std::string_view linear_input_name(LinearInput site) {
  switch (site) {
    case LinearInput::AttnQkv: return "attn_qkv";
    case LinearInput::AttnOutput: return "attn_output";
    case LinearInput::FfnGateUp: return "ffn_gate_up";
    case LinearInput::FfnDown: return "ffn_down";
  }
  return "?";
}

void LlamaModel::set_observer(ForwardObserver* observer) {
  if (observer != nullptr) require_host_backend(backend_, "a forward observer (profiling, predictor training)");
  if (observer != nullptr && (spec_.has_experts() || spec_.is_mla())) {
    throw std::invalid_argument("profiling and predictor training read a dense FFN's neurons and llama's "
                                "attention; this model is a mixture of experts or has latent attention");
  }
  observer_ = observer;
}

void LlamaModel::set_input_sparsifier(InputSparsifier* sparsifier) {
  if (sparsifier != nullptr) require_host_backend(backend_, "an input sparsifier (TEAL)");
  if (sparsifier != nullptr && (spec_.has_experts() || spec_.is_mla())) {
    throw std::invalid_argument("TEAL sparsity (--sparsity teal:X) is calibrated on a dense FFN and llama's "
                                "attention; this model is a mixture of experts or has latent attention: use "
                                "--sparsity dense");
  }
  sparsifier_ = sparsifier;
}

void LlamaModel::prepare_input(int64_t layer, LinearInput site, int64_t n_tokens, int64_t n, float* x) {
  if (observer_ == nullptr && sparsifier_ == nullptr) return;
  backend_.synchronize();
  if (observer_ != nullptr) observer_->on_linear_input(layer, site, n_tokens, n, x);
  if (sparsifier_ != nullptr) sparsifier_->sparsify(layer, site, n_tokens, n, x);
}

std::string_view ffn_mode_name(FfnMode mode) { return mode == FfnMode::Sparse ? "sparse" : "dense"; }

LlamaModel::LlamaModel(const LoadedModel& model, kernels::Backend& backend, const ForwardOptions& options,
                       HybridOptions hybrid, LayerOffloadOptions offload)
    : spec_(model.spec),
      options_(options),
      weights_(map_llama_weights(model.file, model.spec)),
      transposed_down_(backend),
      backend_(backend),
      activation_(activation_for(model.spec.ffn_form)),
      offload_cpu_(offload.cpu),
      n_device_layers_(offload.n_device_layers) {
  const bool hybrid_mode = hybrid.cpu != nullptr;
  check_host_only_parts(model, hybrid_mode);
  if (offload_cpu_ != nullptr) check_layer_offload(model, hybrid_mode);
  if (hybrid_mode && options.ffn_mode != FfnMode::Sparse) {
    throw std::invalid_argument("hybrid mode (a neuron placement) runs the sparse FFN: use --sparsity relu or auto");
  }
  if (!on_host(backend) && !hybrid_mode) {
    // The sparse FFN on a GPU is hybrid mode; PWRI's dense down projection
    // (host-side tiles in TransposedDown) is not on the GPU either.
    if (options.ffn_mode == FfnMode::Sparse) {
      throw std::invalid_argument("the sparse FFN on " + backend.name() + " needs a neuron placement (hybrid mode: "
                                  "--placement FILE.gpuidx from `thermocline place`); without one it runs on the "
                                  "CPU backend only; run " + model.file.path() + " with --sparsity dense");
    }
    if (spec_.sparse_layout) {
      throw std::invalid_argument(model.file.path() + " is a PowerInfer (PWRI) file: its dense down projection "
                                  "runs on the CPU backend only so far (or hybrid mode, with --placement)");
    }
  }
  const LlamaWeights host_weights = weights_;
  host_rope_factors_ = {host_weights.rope_freqs, host_weights.rope_factors_short, host_weights.rope_factors_long};
  // The CPU backend: the same views, nothing copied. Hybrid: no FFN matrices
  // (the split below uploads the hot rows).
  PlacedWeights placed = offload_cpu_ != nullptr
                             ? place_leading_layers(weights_, backend, n_device_layers_, head_on_device())
                             : place_weights(weights_, backend, !hybrid_mode);
  weights_ = std::move(placed.views);
  weight_storage_ = std::move(placed.storage);
  device_weight_bytes_ = placed.device_bytes;
  // The CPU sparse FFN's own views of the predictors (repacked with the rest).
  std::vector<sparse::LayerPredictor> cpu_predictors = model.predictors.layers;
  if (on_host(backend) && offload_cpu_ == nullptr && !hybrid_mode) {
    RepackOptions repack{.mode = options.cpu_repack, .ffn = options.ffn_mode != FfnMode::Sparse, .extra = {}};
    if (options.ffn_mode == FfnMode::Sparse) {
      for (sparse::LayerPredictor& p : cpu_predictors) repack.extra.insert(repack.extra.end(), {&p.fc1, &p.fc2});
    }
    kernels::ThreadPool pool(backend.n_threads());
    repacked_weight_bytes_ = repack_for_cpu_matmul(weights_, repack, pool, weight_storage_);
  }
  if (spec_.has_experts()) moe_ffn_ = std::make_unique<MoeFfnBlock>(spec_, backend_);
  if (spec_.is_mla()) mla_ = std::make_unique<MlaAttention>(spec_, backend_);
  if (spec_.has_recurrent_layers()) recurrent_ = make_recurrent_mixer(spec_, backend_);
  if (spec_.n_embd_per_layer > 0) per_layer_inputs_ = std::make_unique<PerLayerInputs>(spec_, weights_);
  if (spec_.altup.n_streams > 0) altup_ = std::make_unique<AltUpStreams>(spec_, weights_, host_weights);
  if (spec_.architecture->gemma4_layers || spec_.architecture->altup_layers) {
    int64_t widest = spec_.n_embd;
    for (int64_t l = 0; l < spec_.n_layer; ++l) widest = std::max(widest, spec_.shape(l).head_dim);
    unit_weights_.assign(static_cast<size_t>(widest), 1.0f);
  }
  if (options.ffn_mode != FfnMode::Sparse) return;
  if (!is_relu_family(spec_.ffn_form)) {
    throw std::invalid_argument("the sparse FFN needs a ReLU-family model (reglu, drelu or relu); " +
                                model.file.path() + " is " + std::string(ffn_form_name(spec_.ffn_form)) +
                                " (use --sparsity teal:X for models without exact zeros)");
  }
  for (const LayerWeights& l : host_weights.layers) {
    if (l.ffn_gate_b.data != nullptr || l.ffn_up_b.data != nullptr || l.ffn_down_b.data != nullptr) {
      throw std::invalid_argument("the sparse FFN does not take FFN biases, which " + model.file.path() + " has");
    }
  }
  if (model.predictors.empty()) {
    throw std::invalid_argument("the sparse FFN needs predictors: " + model.file.path() +
                                " has none (blk.N.fc1/fc2); make them with `thermocline profile "
                                "--train-predictors` and pass the stats file with --stats");
  }
  if (options.sparse_max_tokens < 0) throw std::invalid_argument("sparse_max_tokens must be at least 0");
  if (hybrid_mode && !is_gated(spec_.ffn_form)) {
    throw std::invalid_argument("hybrid mode needs a gated FFN (gate and up rows per neuron); " + model.file.path() +
                                " is " + std::string(ffn_form_name(spec_.ffn_form)) +
                                " (one matrix): it runs the sparse FFN on the CPU backend");
  }
  if (hybrid_mode) check_neuron_placement(hybrid.placement, spec_.n_layer, spec_.n_ff);
  // The neuron-major ffn_down_t in host memory: the file's (PWRI) or built here.
  std::vector<LayerWeights> host_layers = host_weights.layers;
  if (!spec_.sparse_layout) {
    kernels::ThreadPool pool(hybrid_mode ? hybrid.cpu->n_threads() : backend.n_threads());
    down_t_storage_.resize(host_layers.size());
    for (size_t l = 0; l < host_layers.size(); ++l) {
      host_layers[l].ffn_down_t = transpose_down(host_layers[l].ffn_down, down_t_storage_[l], pool);
    }
  }
  if (hybrid_mode) {
    const auto cache_slots = cache_slot_counts(hybrid.prefetch, hybrid.placement, spec_.n_ff);
    hybrid_weights_ = split_hybrid_weights(host_layers, hybrid.placement, backend, cache_slots);
    hybrid_ffn_ = std::make_unique<HybridFfnBlock>(spec_, backend_, *hybrid.cpu, model.predictors, hybrid_weights_,
                                                   activation_, std::move(hybrid.prefetch));
    return;
  }
  for (size_t l = 0; l < host_layers.size(); ++l) weights_.layers[l].ffn_down_t = host_layers[l].ffn_down_t;
  sparse_ffn_ = std::make_unique<SparseFfnBlock>(spec_, backend_, std::move(cpu_predictors), activation_);
}

LlamaModel::~LlamaModel() = default;

void LlamaModel::check_host_only_parts(const LoadedModel& model, bool hybrid_mode) const {
  if (spec_.is_mla() && (!on_host(backend_) || offload_cpu_ != nullptr || hybrid_mode ||
                         options_.ffn_mode == FfnMode::Sparse)) {
    throw std::invalid_argument(model.file.path() + " has latent attention (MLA): it runs on the CPU backend only so "
                                "far (--device cpu), with the dense FFN (--sparsity dense)");
  }
  const bool layers_differ =
      spec_.architecture->gemma4_layers || spec_.architecture->altup_layers || spec_.has_recurrent_layers();
  if (spec_.architecture->bidirectional && (!on_host(backend_) || offload_cpu_ != nullptr || hybrid_mode)) {
    throw std::invalid_argument(model.file.path() + " is an encoder (" + spec_.arch + ", bidirectional attention): "
                                "it runs on the CPU backend only so far (--device cpu)");
  }
  if (layers_differ && (!on_host(backend_) || offload_cpu_ != nullptr || hybrid_mode ||
                        options_.ffn_mode == FfnMode::Sparse)) {
    throw std::invalid_argument(model.file.path() + " is a " + spec_.arch + " model, whose layers differ in kind: it "
                                "runs on the CPU backend only so far (--device cpu), with the dense FFN "
                                "(--sparsity dense)");
  }
  if (spec_.architecture->attn_output_gate && (!on_host(backend_) || offload_cpu_ != nullptr)) {
    throw std::invalid_argument(model.file.path() + " gates its attention output (" + spec_.arch +
                                "): it runs on the CPU backend only so far (--device cpu)");
  }
  if (!spec_.has_experts()) return;
  const std::string what = model.file.path() + " is a mixture of experts (" + std::to_string(spec_.n_expert_used) +
                           " of " + std::to_string(spec_.n_expert) + " experts per token)";
  if (!on_host(backend_) || offload_cpu_ != nullptr || hybrid_mode) {
    throw std::invalid_argument(what + ": it runs on the CPU backend only so far (--device cpu)");
  }
  if (options_.ffn_mode == FfnMode::Sparse) {
    throw std::invalid_argument(what + ": the sparse FFN needs one dense ReLU FFN; use --sparsity dense");
  }
}

void LlamaModel::check_layer_offload(const LoadedModel& model, bool hybrid_mode) const {
  const std::string what = "layer offload (--offload-layers)";
  if (on_host(backend_)) throw std::invalid_argument(what + " needs a GPU backend (--device cuda)");
  if (!on_host(*offload_cpu_)) throw std::invalid_argument(what + ": the host layers' backend must be the CPU's");
  if (hybrid_mode) throw std::invalid_argument(what + " and a neuron placement (hybrid mode) are two modes: pick one");
  if (options_.ffn_mode != FfnMode::Dense) {
    throw std::invalid_argument(what + " runs the dense FFN: use --sparsity dense");
  }
  if (spec_.sparse_layout) {
    throw std::invalid_argument(what + ": " + model.file.path() + " is a PWRI file; it needs a GGUF file");
  }
  if (n_device_layers_ < 0 || n_device_layers_ > spec_.n_layer) {
    throw std::invalid_argument(what + ": " + std::to_string(n_device_layers_) + " layers asked, the model has " +
                                std::to_string(spec_.n_layer));
  }
}

runtime::KvCache LlamaModel::make_kv_cache(int n_slots, int64_t n_ctx, kernels::KvCacheTypes types) {
  if (offload_cpu_ == nullptr) return runtime::KvCache(backend_, spec_, n_slots, n_ctx, types);
  return runtime::KvCache(backend_, *offload_cpu_, n_device_layers_, spec_, n_slots, n_ctx, types);
}

void LlamaModel::reserve_workspace(kernels::Backend& b, Workspace& ws, int64_t t, bool pinned_x) {
  auto f32 = [&b](int64_t n) { return b.allocate(static_cast<size_t>(n) * sizeof(float)); };
  // The CPU side's residual crosses to and from the device: pinned, so the copies run at full speed.
  ws.x = pinned_x ? backend_.allocate_host(static_cast<size_t>(t * spec_.n_embd) * sizeof(float))
                  : f32(t * spec_.n_embd);
  ws.cur = f32(t * std::max(spec_.n_embd, spec_.widest_n_embd_q()));  // the normed input, then the heads' output
  ws.q = f32(t * spec_.widest_n_embd_q());
  ws.k = f32(t * spec_.widest_n_embd_kv());
  ws.v = f32(t * spec_.widest_n_embd_kv());
  // Hybrid mode and experts have their own FFN workspace (dense layers
  // beside experts excepted: leading ones, Jamba's every other one).
  const bool dense_beside_experts =
      spec_.n_layer_dense_lead > 0 || spec_.architecture->gemma4_layers || !spec_.expert_layers.empty();
  if (hybrid_ffn_ == nullptr && (moe_ffn_ == nullptr || dense_beside_experts)) {
    ws.ffn_gate = f32(t * spec_.widest_n_ff());
    ws.ffn_up = f32(t * spec_.widest_n_ff());
  }
  ws.tmp = f32(t * spec_.n_embd);
  if (spec_.architecture->layer_form == LayerForm::Parallel) ws.ffn_out = f32(t * spec_.n_embd);
}

HybridStepTimer& LlamaModel::enable_time_split() {
  if (hybrid_ffn_ == nullptr) throw std::invalid_argument("the time split is hybrid mode's (--placement)");
  if (timer_ == nullptr) {
    timer_ = std::make_unique<HybridStepTimer>(backend_, spec_.n_layer);
    hybrid_ffn_->set_timer(timer_.get());
  }
  return *timer_;
}

void LlamaModel::reserve_steps(int64_t max_tokens, int64_t max_logit_rows) {
  if (max_tokens < 1 || max_logit_rows < 0) {
    throw std::invalid_argument("reserve_steps: max_tokens must be >= 1 and max_logit_rows >= 0");
  }
  reserve(max_tokens, max_logit_rows);
  if (hybrid_ffn_ != nullptr) hybrid_ffn_->reserve(max_tokens);
}

void LlamaModel::reserve(int64_t n_tokens, int64_t n_logit_rows) {
  const bool device_used = offload_cpu_ == nullptr || n_device_layers_ > 0;
  if (n_tokens > capacity_tokens_) {
    const int64_t t = std::max(n_tokens, capacity_tokens_ * 2);
    if (device_used) reserve_workspace(backend_, ws_, t, false);
    if (offload_cpu_ != nullptr) reserve_workspace(*offload_cpu_, cpu_ws_, t, true);
    if (device_used) {
      ids_ = backend_.allocate(static_cast<size_t>(t) * sizeof(int32_t));
      positions_ = backend_.allocate(static_cast<size_t>(t) * sizeof(int32_t));
      horizons_ = backend_.allocate(static_cast<size_t>(t) * sizeof(int32_t));
    }
    ids_host_ = backend_.allocate_host(static_cast<size_t>(t) * sizeof(int32_t));
    positions_host_ = backend_.allocate_host(static_cast<size_t>(t) * sizeof(int32_t));
    horizons_host_ = backend_.allocate_host(static_cast<size_t>(t) * sizeof(int32_t));
    capacity_tokens_ = t;
  }
  if (n_logit_rows > capacity_logit_rows_) {
    const int64_t r = std::max(n_logit_rows, capacity_logit_rows_ * 2);
    kernels::Backend& head = head_on_device() ? backend_ : *offload_cpu_;
    head_in_ = head.allocate(static_cast<size_t>(r * spec_.n_embd) * sizeof(float));
    if (!on_host(head)) {
      logits_dev_ = head.allocate(static_cast<size_t>(r * spec_.n_vocab) * sizeof(float));
      logits_host_ = head.allocate_host(static_cast<size_t>(r * spec_.n_vocab) * sizeof(float));
    }
    capacity_logit_rows_ = r;
  }
}

StepStatus LlamaModel::forward(std::span<const StepSequence> sequences, runtime::KvCache& kv,
                               std::vector<float>& logits, std::vector<float>* embeddings) {
  int64_t n_tokens = 0;
  int64_t n_logit_rows = 0;
  int64_t n_embedding_rows = 0;
  for (const auto& s : sequences) {
    const int64_t end = kv.n_used(s.slot) + static_cast<int64_t>(s.tokens.size());
    if (end > kv.n_ctx()) return StepStatus::ContextFull;
    // Learned positions end where the table does.
    if (weights_.position_embd.data != nullptr && end > weights_.position_embd.ne[1]) return StepStatus::ContextFull;
    for (const text::TokenId id : s.tokens) {
      if ((id < 0 || id >= spec_.n_vocab) && find_prompt_image(s.images, id) == nullptr) {
        return StepStatus::InvalidToken;
      }
    }
    n_tokens += static_cast<int64_t>(s.tokens.size());
    const int64_t rows = s.tokens.empty() ? 0 : (s.all_logits ? static_cast<int64_t>(s.tokens.size()) : 1);
    (s.embeddings ? n_embedding_rows : n_logit_rows) += rows;
  }
  if (n_embedding_rows > 0 && embeddings == nullptr) {
    throw std::invalid_argument("forward: a sequence asks for embeddings and there is no output for them");
  }
  logits.resize(static_cast<size_t>(n_logit_rows * spec_.n_vocab));
  if (embeddings != nullptr) embeddings->resize(static_cast<size_t>(n_embedding_rows * spec_.n_embd));
  if (n_tokens == 0) return StepStatus::Ok;
  reserve(n_tokens, n_logit_rows);
  if (n_embedding_rows > capacity_embedding_rows_) {
    kernels::Backend& head = head_on_device() ? backend_ : *offload_cpu_;
    capacity_embedding_rows_ = std::max(n_embedding_rows, capacity_embedding_rows_ * 2);
    embedding_rows_ = head.allocate(static_cast<size_t>(capacity_embedding_rows_ * spec_.n_embd) * sizeof(float));
  }

  auto* ids = ids_host_.as<int32_t>();
  auto* positions = positions_host_.as<int32_t>();
  int64_t t = 0;
  image_rows_.clear();
  step_has_horizons_ = false;
  auto* horizons = horizons_host_.as<int32_t>();
  for (const auto& s : sequences) {
    const int64_t start = kv.n_used(s.slot);
    const auto n = static_cast<int64_t>(s.tokens.size());
    for (int64_t i = 0; i < n; ++i, ++t) {
      ids[t] = s.tokens[static_cast<size_t>(i)];
      positions[t] = static_cast<int32_t>(start + i);
      horizons[t] = positions[t];
      if (ids[t] >= 0 && ids[t] < spec_.n_vocab) continue;
      // An image's row: looked up as token 0, then overwritten (place_image_rows).
      const PromptImage& image = *find_prompt_image(s.images, ids[t]);
      const int64_t row = ids[t] - image.first_id;
      image_rows_.push_back({t, image.rows->data() + row * spec_.n_embd});
      ids[t] = 0;
      if (image.bidirectional) {
        // It sees the image's last row, or the step's last token when the image goes on in the next step.
        horizons[t] = static_cast<int32_t>(start + std::min(i + image.n_tokens - 1 - row, n - 1));
        step_has_horizons_ = true;
      }
    }
  }
  const size_t index_bytes = static_cast<size_t>(n_tokens) * sizeof(int32_t);
  const size_t hidden_bytes = static_cast<size_t>(n_tokens * spec_.n_embd) * sizeof(float);
  if (timer_ != nullptr) {
    timer_->begin_step();
    timer_->add_bus(2 * index_bytes + logits.size() * sizeof(float));  // ids and positions up, logits down
  }
  // Phi-3's LongRoPE takes its long factors when the context (the KV
  // cache's) is longer than the original one, as llama.cpp's n_ctx_seq.
  long_context_ = kv.n_ctx() > spec_.n_ctx_orig;
  const size_t logits_bytes = logits.size() * sizeof(float);
  // Every op and copy of the step, the logits copied to `logits_out` (host
  // memory) last; nothing here waits for the device.
  auto issue_step = [&](float* logits_out) {
    if (offload_cpu_ == nullptr) {
      backend_.copy_to_device(ids_.data(), ids, index_bytes);
      backend_.copy_to_device(positions_.data(), positions, index_bytes);
      if (step_has_horizons_) backend_.copy_to_device(horizons_.data(), horizons, index_bytes);
      backend_.get_rows(weights_.token_embd, ids_.as<int32_t>(), n_tokens, ws_.x.as<float>());
      if (spec_.embd_scale != 1.0f) backend_.scale(ws_.x.as<float>(), n_tokens * spec_.n_embd, spec_.embd_scale);
      if (weights_.token_embd_norm.data != nullptr) {
        add_bert_inputs(backend_, ws_.x.as<float>(), positions_.as<int32_t>(), n_tokens, ws_.cur.as<float>());
      }
      place_image_rows(backend_, ws_.x.as<float>());
      if (per_layer_inputs_ != nullptr) per_layer_inputs_->prepare(backend_, ids, ws_.x.as<float>(), n_tokens);
      if (altup_ != nullptr) altup_->begin(backend_, ws_.x.as<float>(), n_tokens);
    } else {
      TC_CHECK(kv.n_first_layers() == n_device_layers_, "layer offload needs its KV cache from make_kv_cache()");
      // The embedding rows are looked up on the CPU, then cross up with the positions when layer 0 is on the device.
      offload_cpu_->get_rows(weights_.token_embd, ids, n_tokens, cpu_ws_.x.as<float>());
      if (spec_.embd_scale != 1.0f) offload_cpu_->scale(cpu_ws_.x.as<float>(), n_tokens * spec_.n_embd, spec_.embd_scale);
      place_image_rows(*offload_cpu_, cpu_ws_.x.as<float>());
      if (n_device_layers_ > 0) {
        backend_.copy_to_device(positions_.data(), positions, index_bytes);
        if (step_has_horizons_) backend_.copy_to_device(horizons_.data(), horizons, index_bytes);
        backend_.copy_to_device(ws_.x.data(), cpu_ws_.x.data(), hidden_bytes);
      }
    }
    for (int64_t l = 0; l < spec_.n_layer; ++l) {
      const auto& w = weights_.layers[static_cast<size_t>(l)];
      if (layer_on_device(l)) {
        run_layer(backend_, ws_, positions_.as<int32_t>(),
                  step_has_horizons_ ? horizons_.as<int32_t>() : positions_.as<int32_t>(), w, l, sequences, kv,
                  n_tokens);
        continue;
      }
      if (l == n_device_layers_ && l > 0) {  // the boundary: the residual comes down once
        backend_.copy_to_host(cpu_ws_.x.data(), ws_.x.data(), hidden_bytes);
        backend_.synchronize();
      }
      run_layer(*offload_cpu_, cpu_ws_, positions, step_has_horizons_ ? horizons : positions, w, l, sequences, kv,
                n_tokens);
    }

    if (altup_ != nullptr) altup_->finish(backend_, ws_.x.as<float>(), n_tokens);  // (host only: no offload)
    // Gather the rows that need logits (or embeddings), then norm them and
    // project only the logit rows.
    kernels::Backend& head = head_on_device() ? backend_ : *offload_cpu_;
    const float* x = (head_on_device() ? ws_ : cpu_ws_).x.as<float>();
    const size_t row_bytes = static_cast<size_t>(spec_.n_embd) * sizeof(float);
    int64_t logit_row = 0;
    int64_t embedding_row = 0;
    t = 0;
    for (const auto& s : sequences) {
      const auto n = static_cast<int64_t>(s.tokens.size());
      const int64_t first = s.all_logits ? t : t + n - 1;
      int64_t& row = s.embeddings ? embedding_row : logit_row;
      float* rows = (s.embeddings ? embedding_rows_ : head_in_).as<float>();
      for (int64_t i = first; n > 0 && i < t + n; ++i, ++row) {
        head.copy_on_device(rows + row * spec_.n_embd, x + i * spec_.n_embd, row_bytes);
      }
      t += n;
    }
    if (n_embedding_rows > 0) {
      float* rows = embedding_rows_.as<float>();
      if (weights_.output_norm.data != nullptr) {  // (BERT's stack ends with its last layer's norm)
        norm(head, rows, weights_.output_norm, weights_.output_norm_b, n_embedding_rows, rows);
      }
      head.copy_to_host(embeddings->data(), rows, static_cast<size_t>(n_embedding_rows) * row_bytes);
    }
    if (n_logit_rows == 0) return;
    if (weights_.output_norm.data != nullptr) {
      norm(head, head_in_.as<float>(), weights_.output_norm, weights_.output_norm_b, n_logit_rows,
           head_in_.as<float>());
    }
    float* out = on_host(head) ? logits_out : logits_dev_.as<float>();
    head.matmul(weights_.output, head_in_.as<float>(), n_logit_rows, out);
    if (weights_.output_b.data != nullptr) {
      head.add_bias(out, static_cast<const float*>(weights_.output_b.data), n_logit_rows, spec_.n_vocab);
    }
    if (spec_.logit_multiplier != 0.0f) head.scale(out, n_logit_rows * spec_.n_vocab, spec_.logit_multiplier);
    if (spec_.final_softcap > 0.0f) head.softcap(out, n_logit_rows * spec_.n_vocab, spec_.final_softcap);
    if (!on_host(head)) head.copy_to_host(logits_out, logits_dev_.data(), logits_bytes);
  };
  if (n_embedding_rows == 0 && image_rows_.empty() && step_graph_fits(n_tokens) &&
      backend_.begin_graph(step_graph_key(sequences, n_tokens, n_logit_rows))) {
    // A decode step on a GPU: recorded and run as one graph, the logits
    // through pinned staging (a graph copies only to pinned or device memory).
    bool ran = false;
    try {
      issue_step(logits_host_.as<float>());
      ran = backend_.end_graph();
    } catch (const kernels::CudaError&) {
      backend_.abort_graph();  // an op the graph could not hold: issued again below, one by one
    } catch (...) {
      backend_.abort_graph();
      throw;
    }
    if (!ran) issue_step(logits.data());
    backend_.synchronize();
    if (ran) std::memcpy(logits.data(), logits_host_.data(), logits_bytes);
    finish_step_counts(sequences, kv);
    return StepStatus::Ok;
  }
  issue_step(logits.data());
  finish_step_counts(sequences, kv);
  if (timer_ == nullptr) {
    backend_.synchronize();
    return StepStatus::Ok;
  }
  timer_->end_step();
  const double wait_start = host_seconds();
  backend_.synchronize();
  timer_->add_wait(host_seconds() - wait_start);
  timer_->finish_step();
  return StepStatus::Ok;
}

void LlamaModel::place_image_rows(kernels::Backend& b, float* x) const {
  // Image embeddings enter as they are: not scaled as token embeddings are
  // (Gemma's sqrt(n_embd)), as llama.cpp feeds its embeddings input.
  const size_t row_bytes = static_cast<size_t>(spec_.n_embd) * sizeof(float);
  for (const ImageRow& r : image_rows_) b.copy_to_device(x + r.token * spec_.n_embd, r.row, row_bytes);
}

void LlamaModel::norm(kernels::Backend& b, const float* x, const kernels::Tensor& weight, const kernels::Tensor& bias,
                      int64_t n_rows, float* y) const {
  const auto eps = static_cast<float>(spec_.rms_eps);
  if (spec_.architecture->norm != NormKind::Rms) {  // bias.data: null for LayerNoBias
    b.layer_norm(x, static_cast<const float*>(weight.data), static_cast<const float*>(bias.data), n_rows, spec_.n_embd,
                 eps, y);
  } else {
    b.rms_norm(x, static_cast<const float*>(weight.data), n_rows, spec_.n_embd, eps, y);
  }
}

void LlamaModel::pre_norm(kernels::Backend& b, const float* x, const kernels::Tensor& weight,
                          const kernels::Tensor& bias, int64_t n_rows, float* y) const {
  if (spec_.architecture->pre_norms && weight.data != nullptr) {  // (ModernBERT's layer 0: none, identity)
    norm(b, x, weight, bias, n_rows, y);
  } else {
    b.copy_on_device(y, x, static_cast<size_t>(n_rows * spec_.n_embd) * sizeof(float));
  }
}

bool LlamaModel::rotates(int64_t layer) const {
  if (spec_.no_rope) return false;
  const Architecture& a = *spec_.architecture;
  const auto& windowed = spec_.swa_layers;
  if (a.rope_windowed_only && std::find(windowed.begin(), windowed.end(), true) != windowed.end()) {
    return spec_.is_swa(layer);
  }
  return a.no_rope_period == 0 || (layer + 1) % a.no_rope_period != 0;
}

kernels::RopeParams LlamaModel::rope_params(const kernels::Backend& b, int64_t layer) const {
  // The factors where this layer runs: the placed views, or in layer
  // offload mode the host's for the CPU's layers.
  const bool host_side = offload_cpu_ != nullptr && &b == offload_cpu_;
  const RopeFactors placed{weights_.rope_freqs, weights_.rope_factors_short, weights_.rope_factors_long};
  return rope_params(host_side ? host_rope_factors_ : placed, layer);
}

kernels::RopeParams LlamaModel::rope_params(const RopeFactors& f, int64_t layer) const {
  kernels::RopeParams p;
  p.n_rot = spec_.shape(layer).n_rot;
  p.mode = spec_.rope_mode();
  const bool swa = spec_.is_swa(layer);
  p.freq_base = swa ? spec_.rope_freq_base_swa : spec_.rope_freq_base;
  p.freq_scale = swa ? spec_.rope_freq_scale_swa : spec_.rope_freq_scale;
  const kernels::Tensor& factors =
      f.freqs.data != nullptr ? f.freqs : (long_context_ ? f.factors_long : f.factors_short);
  // Gemma 4's frequency factors are its global layers' (proportional RoPE).
  const bool factors_here = !(swa && spec_.architecture->gemma4_layers);
  p.freq_factors = factors_here ? static_cast<const float*>(factors.data) : nullptr;
  const bool plain = swa && spec_.architecture->sliding_window.plain_rope;
  p.attn_factor = plain ? 1.0 : spec_.rope_attn_factor;
  p.ext_factor = plain ? 0.0 : spec_.yarn_ext_factor;
  if (p.ext_factor != 0.0) {
    kernels::yarn_corr_dims(p.n_rot, spec_.n_ctx_orig, p.freq_base, spec_.yarn_beta_fast, spec_.yarn_beta_slow,
                            p.corr_low, p.corr_high);
  }
  return p;
}

void LlamaModel::scale_queries_by_position(kernels::Backend& b, float* q, int64_t n_tokens) const {
  // Llama 4's temperature tuning, as llama.cpp computes the factor (in
  // double, stored as f32): 1 below the first multiple of the floor.
  const auto* positions = positions_host_.as<int32_t>();
  const int64_t n_embd_q = spec_.n_embd_q();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const double steps = std::floor(static_cast<double>(positions[t]) / static_cast<double>(spec_.attn_temp_floor));
    const auto factor = static_cast<float>(std::log(steps + 1.0) * spec_.attn_temp_scale + 1.0);
    if (factor != 1.0f) b.scale(q + t * n_embd_q, n_embd_q, factor);
  }
}

void LlamaModel::project_qkv(kernels::Backend& b, const LayerWeights& w, int64_t layer, const float* cur,
                             int64_t n_tokens, const int32_t* positions, float* q, float* k, float* v) {
  const LayerShape shape = spec_.shape(layer);
  const int64_t n_embd_q = spec_.n_embd_q(layer);
  const int64_t n_embd_kv = spec_.n_embd_kv(layer);
  const bool own_kv = !spec_.shares_kv(layer);  // else only q: the cache is an earlier layer's
  const bool v_from_k = own_kv && w.attn_v.data == nullptr;  // Gemma 4: the values are attn_k's rows
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  if (spec_.architecture->qwen35_layers) {
    project_gated_q(b, w, cur, n_tokens, q, k, v);
  } else {
    const kernels::MatmulTarget qkv[] = {{&w.attn_q, q}, {&w.attn_k, k}, {&w.attn_v, v}};
    b.matmul_many(std::span<const kernels::MatmulTarget>(qkv, !own_kv ? 1 : v_from_k ? 2 : 3), cur, n_tokens);
  }
  if (v_from_k) b.copy_on_device(v, k, static_cast<size_t>(n_tokens * n_embd_kv) * sizeof(float));
  const bool v_norm = spec_.architecture->gemma4_layers || spec_.architecture->altup_layers;
  if (own_kv && v_norm) {  // each value head RMS-normed, no weight
    b.rms_norm(v, unit_weights_.data(), n_tokens * shape.n_head_kv, shape.head_dim, static_cast<float>(spec_.rms_eps),
               v);
  }
  if (w.attn_q_b.data != nullptr) b.add_bias(q, f32(w.attn_q_b), n_tokens, n_embd_q);
  if (w.attn_k_b.data != nullptr) b.add_bias(k, f32(w.attn_k_b), n_tokens, n_embd_kv);
  if (w.attn_v_b.data != nullptr) b.add_bias(v, f32(w.attn_v_b), n_tokens, n_embd_kv);
  // The q/k norms: each head on its own, or each token's whole q and k;
  // before RoPE, or after it (Hunyuan).
  auto qk_norms = [&] {
    if (w.attn_q_norm.data == nullptr) return;
    if (w.attn_q_norm_b.data != nullptr) {  // jina-bert-v2's LayerNorms of each token's whole q and k
      norm(b, q, w.attn_q_norm, w.attn_q_norm_b, n_tokens, q), norm(b, k, w.attn_k_norm, w.attn_k_norm_b, n_tokens, k);
      return;
    }
    const auto eps = static_cast<float>(spec_.rms_eps);
    const bool whole = spec_.architecture->qk_norm_whole;
    b.rms_norm(q, f32(w.attn_q_norm), whole ? n_tokens : n_tokens * spec_.n_head, whole ? n_embd_q : shape.head_dim,
               eps, q);
    if (!own_kv) return;
    b.rms_norm(k, f32(w.attn_k_norm), whole ? n_tokens : n_tokens * shape.n_head_kv,
               whole ? n_embd_kv : shape.head_dim, eps, k);
  };
  const bool norms_after = spec_.architecture->qk_norm_after_rope;
  if (!norms_after) qk_norms();
  if (rotates(layer)) {
    const kernels::RopeParams rope = rope_params(b, layer);
    b.rope(q, n_tokens, spec_.n_head, shape.head_dim, positions, rope);
    if (own_kv) b.rope(k, n_tokens, shape.n_head_kv, shape.head_dim, positions, rope);
  }
  if (norms_after) qk_norms();
  if (spec_.attn_temp_scale != 0.0) scale_queries_by_position(b, q, n_tokens);
}

void LlamaModel::run_layer(kernels::Backend& b, Workspace& ws, const int32_t* positions, const int32_t* horizons,
                           const LayerWeights& w,
                           int64_t layer, std::span<const StepSequence> sequences, runtime::KvCache& kv,
                           int64_t n_tokens) {
  const int64_t n_embd = spec_.n_embd;
  const bool parallel = spec_.architecture->layer_form == LayerForm::Parallel;
  float* x = ws.x.as<float>();
  float* cur = ws.cur.as<float>();
  float* tmp = ws.tmp.as<float>();
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };

  if (moe_ffn_ != nullptr && spec_.architecture->router_reads_layer_input && spec_.layer_has_experts(layer)) {
    // Grown to the largest step once; the experts' backend is the host's.
    router_input_.resize(std::max(router_input_.size(), static_cast<size_t>(n_tokens * n_embd)));
    std::copy_n(x, n_tokens * n_embd, router_input_.data());
  }
  if (altup_ != nullptr) {
    run_altup_layer(b, ws, positions, horizons, w, layer, sequences, kv, n_tokens);
    return;
  }
  if (!spec_.has_mixer(layer)) {  // Nemotron-H's FFN layer: x + ffn(norm(x))
    pre_norm(b, x, w.ffn_norm, w.ffn_norm_b, n_tokens, cur);
    run_ffn_runs(b, ws, w, layer, sequences, cur, tmp);
    b.add(x, tmp, n_tokens * n_embd);
    return;
  }
  // Attention block. In the parallel form the FFN runs first, on the same
  // normed input (and the layer input x as its predictors' input).
  pre_norm(b, x, w.attn_norm, w.attn_norm_b, n_tokens, cur);
  if (parallel) run_ffn_runs(b, ws, w, layer, sequences, cur, ws.ffn_out.as<float>());
  if (w.attn_norm_2.data != nullptr) norm(b, x, w.attn_norm_2, w.attn_norm_2_b, n_tokens, cur);
  prepare_input(layer, LinearInput::AttnQkv, n_tokens, n_embd, cur);
  if (spec_.is_recurrent(layer)) {
    int64_t first = 0;
    recurrent_sequences_.clear();
    for (const auto& s : sequences) {
      const auto n = static_cast<int64_t>(s.tokens.size());
      recurrent_sequences_.push_back({s.slot, first, n});
      first += n;
    }
    if (spec_.attends_beside_mamba2) {  // Falcon-H1: attention + Mamba-2 on the same input
      beside_.resize(std::max(beside_.size(), static_cast<size_t>(n_tokens * n_embd)));
      recurrent_->run(layer, w, cur, n_tokens, recurrent_sequences_, kv, beside_.data());
      run_attention(b, ws, positions, horizons, w, layer, sequences, kv, n_tokens);
      b.add(tmp, beside_.data(), n_tokens * n_embd);
    } else {
      recurrent_->run(layer, w, cur, n_tokens, recurrent_sequences_, kv, tmp);
    }
  } else {
    run_attention(b, ws, positions, horizons, w, layer, sequences, kv, n_tokens);
  }
  if (w.attn_output_b.data != nullptr) b.add_bias(tmp, f32(w.attn_output_b), n_tokens, n_embd);
  if (w.attn_post_norm.data != nullptr) {
    b.rms_norm(tmp, f32(w.attn_post_norm), n_tokens, n_embd, static_cast<float>(spec_.rms_eps), tmp);
  }
  if (spec_.residual_scale != 0.0f) b.scale(tmp, n_tokens * n_embd, spec_.residual_scale);
  if (parallel) {
    // x + (ffn + attention), as llama.cpp adds them.
    float* ffn_out = ws.ffn_out.as<float>();
    b.add(ffn_out, tmp, n_tokens * n_embd);
    b.add(x, ffn_out, n_tokens * n_embd);
    return;
  }
  // BERT's residual add and post-norm(s) (encoder_output.cpp), or the plain residual add
  w.attn_out_norm.data != nullptr ? add_bert_attention(b, w, x, tmp, n_tokens) : b.add(x, tmp, n_tokens * n_embd);
  if (!spec_.has_ffn(layer)) return;  // Nemotron-H's attention and Mamba-2 layers
  pre_norm(b, x, w.ffn_norm, w.ffn_norm_b, n_tokens, cur);
  run_ffn_runs(b, ws, w, layer, sequences, cur, tmp);
  if (w.ffn_pre_norm_2.data != nullptr) add_gemma4_experts(b, w, layer, x, n_tokens, tmp);
  if (w.ffn_post_norm.data != nullptr) {
    b.rms_norm(tmp, f32(w.ffn_post_norm), n_tokens, n_embd, static_cast<float>(spec_.rms_eps), tmp);
  }
  if (spec_.residual_scale != 0.0f) b.scale(tmp, n_tokens * n_embd, spec_.residual_scale);
  b.add(x, tmp, n_tokens * n_embd);
  if (w.layer_out_norm.data != nullptr) norm(b, x, w.layer_out_norm, w.layer_out_norm_b, n_tokens, x);
  if (per_layer_inputs_ != nullptr) per_layer_inputs_->apply(b, w, layer, x, n_tokens);
  if (w.layer_output_scale.data != nullptr) b.scale(x, n_tokens * n_embd, *f32(w.layer_output_scale));
}

bool LlamaModel::step_graph_fits(int64_t n_tokens) const {
  // Decode-sized steps (every matmul a GEMV, no cuBLAS) of the plain device
  // path: layer offload, the sparse and hybrid FFNs, observers, sparsifiers
  // and the time split wait for the device or read its memory inside a step.
  return !on_host(backend_) && offload_cpu_ == nullptr && sparse_ffn_ == nullptr && hybrid_ffn_ == nullptr &&
         observer_ == nullptr && sparsifier_ == nullptr && timer_ == nullptr && n_tokens <= kernels::kGemvMaxTokens &&
         spec_.attn_temp_scale == 0.0;  // its per-position query scales are host values a replay would repeat
}

uint64_t LlamaModel::step_graph_key(std::span<const StepSequence> sequences, int64_t n_tokens,
                                    int64_t n_logit_rows) {
  // The step's shape: what decides which kernels a step launches (the
  // sequences' attention calls, the GEMVs' token counts, the head's rows).
  return static_cast<uint64_t>(n_tokens) | static_cast<uint64_t>(n_logit_rows) << 16 |
         static_cast<uint64_t>(sequences.size()) << 32;
}

void LlamaModel::finish_step_counts(std::span<const StepSequence> sequences, runtime::KvCache& kv) {
  if (SparseFfnCounters* counters = sparse_counters(); counters != nullptr) {
    bool any_sparse = false, any_dense = false;
    for (const auto& s : sequences) (runs_sparse(s) ? any_sparse : any_dense) = true;
    auto& c = *counters;
    c.sparse_steps += any_sparse ? 1 : 0;
    c.dense_steps += any_dense ? 1 : 0;
  }
  for (const auto& s : sequences) kv.set_used(s.slot, kv.n_used(s.slot) + static_cast<int64_t>(s.tokens.size()));
}

void LlamaModel::run_ffn_runs(kernels::Backend& b, Workspace& ws, const LayerWeights& w, int64_t layer,
                              std::span<const StepSequence> sequences, const float* in, float* out) {
  // The FFN in runs of consecutive sequences that take the same path.
  int64_t begin = 0;
  int64_t t = 0;
  bool run_sparse = false;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const bool sparse = runs_sparse(sequences[i]);
    if (t > begin && sparse != run_sparse) {
      run_ffn(b, ws, w, layer, begin, t - begin, run_sparse, in, out);
      begin = t;
    }
    run_sparse = sparse;
    t += static_cast<int64_t>(sequences[i].tokens.size());
  }
  if (t > begin) run_ffn(b, ws, w, layer, begin, t - begin, run_sparse, in, out);
}

bool LlamaModel::runs_sparse(const StepSequence& s) const {
  return (sparse_ffn_ != nullptr || hybrid_ffn_ != nullptr) &&
         (s.generated || static_cast<int64_t>(s.tokens.size()) <= options_.sparse_max_tokens);
}

void LlamaModel::run_ffn(kernels::Backend& b, Workspace& ws, const LayerWeights& w, int64_t layer, int64_t t0,
                         int64_t n_tokens, bool sparse, const float* in_all, float* out_all) {
  const int64_t n_embd = spec_.n_embd;
  const int64_t n_ff = spec_.shape(layer).n_ff;
  // The residual entering the block (the predictors' input; the layer input
  // in the parallel form), its normed rows, and the block's output rows.
  const float* x = ws.x.as<float>() + t0 * n_embd;
  float* cur = const_cast<float*>(in_all) + t0 * n_embd;
  float* out = out_all + t0 * n_embd;
  prepare_input(layer, LinearInput::FfnGateUp, n_tokens, n_embd, cur);
  if (moe_ffn_ != nullptr && spec_.layer_has_experts(layer) && !spec_.architecture->gemma4_layers) {
    const bool layer_input = spec_.architecture->router_reads_layer_input;
    moe_ffn_->run(layer, w, cur, n_tokens, out, layer_input ? router_input_.data() + t0 * n_embd : nullptr);
    return;
  }
  if (hybrid_ffn_ != nullptr) {
    // Sparse and dense steps alike: the hot neurons here, the cold ones on the CPU.
    hybrid_ffn_->run(layer, x, cur, n_tokens, sparse, out);
    return;
  }
  if (sparse) {
    sparse_ffn_->run(layer, w, x, cur, n_tokens, out);
    return;
  }
  auto f32 = [](const kernels::Tensor& t) { return static_cast<const float*>(t.data); };
  float* gate = ws.ffn_gate.as<float>() + t0 * n_ff;
  float* up = ws.ffn_up.as<float>() + t0 * n_ff;
  const bool gated = w.ffn_up.data != nullptr;
  const kernels::MatmulTarget gate_up[] = {{&w.ffn_gate, gate}, {&w.ffn_up, up}};
  const bool sparse_gate = layer < spec_.altup.n_sparse_layers;  // Gemma 3n: up where the gate is kept
  b.matmul_many(std::span<const kernels::MatmulTarget>(gate_up, gated && !sparse_gate ? 2 : 1), cur, n_tokens);
  if (sparse_gate) altup_->sparse_gate_up(b, w, layer, cur, n_tokens, gate, up);
  if (w.ffn_gate_b.data != nullptr) b.add_bias(gate, f32(w.ffn_gate_b), n_tokens, n_ff);
  if (w.ffn_up_b.data != nullptr) b.add_bias(up, f32(w.ffn_up_b), n_tokens, n_ff);
  if (observer_ != nullptr) {
    b.synchronize();
    // An ungated FFN shows its one matrix's output as both gate and up.
    observer_->on_ffn(layer, n_tokens, x, gate, gated ? up : gate);
  }
  b.ffn_activation(activation_, gate, gated ? up : nullptr, n_tokens * n_ff, gate);
  prepare_input(layer, LinearInput::FfnDown, n_tokens, n_ff, gate);
  if (w.ffn_down.data != nullptr) {
    b.matmul(w.ffn_down, gate, n_tokens, out);
  } else {
    transposed_down_.run(w.ffn_down_t, gate, n_tokens, out);
  }
  if (w.ffn_down_b.data != nullptr) b.add_bias(out, f32(w.ffn_down_b), n_tokens, n_embd);
}

}  // namespace tc::model
