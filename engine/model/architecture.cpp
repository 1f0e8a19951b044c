// The architecture table and the FFN form names.
#include "engine/model/architecture.h"

#include <array>
#include <utility>

namespace tc::model {
namespace {

using kernels::RopeMode;

constexpr std::array kLlamaForms{FfnForm::SwiGLU, FfnForm::ReGLU, FfnForm::DReLU};
constexpr std::array kBambooForms{FfnForm::DReLU};
constexpr std::array kSwiGluOnly{FfnForm::SwiGLU};
constexpr std::array kGeGluOnly{FfnForm::GeGLU};
constexpr std::array kFalconForms{FfnForm::Gelu, FfnForm::Relu};
constexpr std::array kSwiGluOaiOnly{FfnForm::SwiGluOai};
constexpr std::array kReluSquaredOnly{FfnForm::ReluSquared};
constexpr std::array kGeluOnly{FfnForm::Gelu};
constexpr std::array kReGluOnly{FfnForm::ReGLU};
constexpr std::array kModernBertForms{FfnForm::GeGLU, FfnForm::SwiGLU, FfnForm::ReGLU};

// One row per architecture; the fields left out are llama's.
const std::array kArchitectures{
    // llama.cpp's llama (LLaMA 1-3, Mistral, ReluLLaMA and ProSparse files
    // with thermocline.ffn_form). Llama 3.1's rope_freqs; Mistral's
    // llama.attention.sliding_window, on every layer where present;
    // Mixtral's experts (llama.expert_count).
    Architecture{.name = "llama",
                 .ffn_forms = kLlamaForms,
                 .sliding_window = {.enabled = true, .period = 0},
                 .rope_freqs = true,
                 .experts = Experts::Optional},
    // PowerInfer's bamboo (Bamboo-7B): llama's tensors and graph with dReLU.
    Architecture{.name = "bamboo", .ffn_forms = kBambooForms, .sliding_window = {}},
    // Qwen2 / Qwen2.5: llama with NeoX RoPE and (optional) q/k/v biases.
    Architecture{.name = "qwen2", .rope_mode = RopeMode::Neox, .ffn_forms = kSwiGluOnly, .sliding_window = {}},
    // Qwen3: qwen2 with an RMSNorm of each q and k head before RoPE.
    Architecture{.name = "qwen3",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {}},
    // Qwen 3.5 (0.8B to 27B dense): three gated delta net layers to one of
    // gated attention (Architecture::qwen35_layers), q/k norms, NeoX RoPE on
    // part of each head.
    Architecture{.name = "qwen35",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .ffn_norm_name = "post_attention_norm",
                 .qwen35_layers = true,
                 .multimodal_rope = MultimodalRope::Optional},
    // Qwen 3.5 MoE (35B-A3B, 122B-A10B, 397B-A17B): qwen35 with a mixture of
    // experts in every layer, renormalised, and a gated shared expert.
    Architecture{.name = "qwen35moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .shared_expert = true,
                 .ffn_norm_name = "post_attention_norm",
                 .qwen35_layers = true,
                 .multimodal_rope = MultimodalRope::Optional},
    // Qwen3-Next (80B-A3B): qwen35moe's layers with its own delta net
    // layout (Architecture::qwen3next_delta_net).
    Architecture{.name = "qwen3next",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .shared_expert = true,
                 .ffn_norm_name = "post_attention_norm",
                 .qwen35_layers = true,
                 .qwen3next_delta_net = true},
    // Qwen2 MoE (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2 with a mixture
    // of experts, their probabilities not renormalised, and a gated shared expert.
    Architecture{.name = "qwen2moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .shared_expert = true},
    // Qwen3 MoE (Qwen3-30B-A3B, 235B-A22B): qwen3 with a mixture of experts
    // in every layer's FFN.
    Architecture{.name = "qwen3moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required},
    // The text models of Qwen's vision-language files: Qwen2-VL and
    // Qwen2.5-VL (qwen2vl: qwen2's layers), Qwen3-VL (qwen3vl: qwen3's;
    // its deepstack layers add image features only) and Qwen3-VL MoE
    // (qwen3vlmoe: qwen3moe's), each with multimodal RoPE sections.
    Architecture{.name = "qwen2vl",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .multimodal_rope = MultimodalRope::Required},
    Architecture{.name = "qwen3vl",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .multimodal_rope = MultimodalRope::Required},
    Architecture{.name = "qwen3vlmoe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .multimodal_rope = MultimodalRope::Required},
    // OLMoE (1B-7B): a mixture of experts (feed_forward_length wide, their
    // probabilities not renormalised) with one RMSNorm over each token's
    // whole q and k, NeoX RoPE.
    Architecture{.name = "olmoe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .qk_norm_whole = true,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .expert_weights_norm = false},
    // IBM Granite 3.x (dense) and Granite MoE (3.0 1B-A400M, 3B-A800M):
    // llama with four multipliers (Architecture::granite_scales).
    Architecture{.name = "granite",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .granite_scales = true},
    Architecture{.name = "granitemoe",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .granite_scales = true},
    // IBM Granite 4.0-H (Micro, Tiny, Small): Granite's scales and
    // experts (shared too) with Mamba-2 layers (Architecture::mamba2_layers).
    Architecture{.name = "granitehybrid",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .granite_scales = true,
                 .mamba2_layers = true},
    // Liquid LFM2 (350M to 2.6B) and LFM2 MoE (8B-A1B, 24B-A2B): short
    // convolution layers beside attention layers with q/k norms and NeoX
    // RoPE (Architecture::short_conv_layers), every attention layer windowed
    // where the file names a window; lfm2moe's experts in DeepSeek's form
    // (dense leading layers, a selection bias, sigmoid).
    Architecture{.name = "lfm2",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {.enabled = true},
                 .short_conv_layers = true},
    Architecture{.name = "lfm2moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {.enabled = true},
                 .experts = Experts::Required,
                 .deepseek_experts = true,
                 .short_conv_layers = true},
    // Mamba-1 (state-spaces' Mamba 130M to 2.8B, Falcon-Mamba 7B): every
    // layer one Mamba-1 block on its norm (Architecture::mamba1_layers).
    Architecture{.name = "mamba",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .single_block_layers = true,
                 .mamba1_layers = true},
    // AI21's Jamba (Reasoning 3B, Mini, Large): Mamba-1 layers with learned
    // dt/B/C norms beside attention layers without RoPE, every layer's FFN
    // dense or (where routed) a softmax mixture not renormalised.
    Architecture{.name = "jamba",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .expert_weights_norm = false,
                 .mamba1_layers = true,
                 .experts_where_routed = true},
    // Mamba-2 alone (Mamba-Codestral 7B, state-spaces' Mamba-2 models):
    // every layer one Mamba-2 block on its norm (Architecture::single_block_layers
    // without attention or FFN layers; the converter writes head counts and
    // feed_forward_length 0).
    Architecture{.name = "mamba2",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .mamba2_layers = true,
                 .single_block_layers = true},
    // NVIDIA Nemotron-H (Nemotron Nano 2 9B and 12B): layers of one block
    // each, Mamba-2, attention without RoPE or a squared-ReLU FFN
    // (Architecture::single_block_layers).
    Architecture{.name = "nemotron_h",
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kReluSquaredOnly,
                 .sliding_window = {},
                 .mamba2_layers = true,
                 .single_block_layers = true},
    // Nemotron-H MoE (Nemotron Nano 3 30B-A3B): nemotron_h with its FFN
    // layers a mixture in DeepSeek's form (sigmoid routing with a selection
    // bias, ungated squared-ReLU experts and shared expert).
    Architecture{.name = "nemotron_h_moe",
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kReluSquaredOnly,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,  // llama.cpp's default without the key
                 .expert_gating = ExpertGating::Sigmoid,
                 .deepseek_experts = true,
                 .mamba2_layers = true,
                 .single_block_layers = true},
    // TII Falcon-H1 (0.5B to 34B): Mamba-2 beside attention in every layer
    // (Architecture::parallel_mamba2), NeoX RoPE, a SwiGLU FFN.
    Architecture{.name = "falcon-h1",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .mamba2_layers = true,
                 .parallel_mamba2 = true},
    // MiniCPM 1-2 and MiniCPM 4 (and MiniCPM-MoE): Granite's graph and
    // multipliers, with MiniCPM's constants where older files lack the keys;
    // MiniCPM 4's LongRoPE factors.
    Architecture{.name = "minicpm",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .rope_freqs = true,
                 .longrope = true,
                 .experts = Experts::Optional,
                 .granite_scales = true,
                 .minicpm_scale_defaults = true},
    // MiniCPM3-4B: MiniCPM's constants around latent attention (always a
    // compressed query and one attn_kv_b), NeoX RoPE with LongRoPE factors.
    Architecture{.name = "minicpm3",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .longrope = true,
                 .granite_scales = true,
                 .minicpm_scale_defaults = true,
                 .mla = true},
    // GLM-4.5 and GLM-4.5-Air, GLM-4.6: DeepSeek's form of experts (a
    // leading dense layer, sigmoid routing with a selection bias, a shared
    // expert; multi-token prediction blocks skipped) under attention with
    // q/k/v biases, partial NeoX RoPE and per-head q/k norms where present;
    // the FFN's input norm is called post_attention_norm.
    Architecture{.name = "glm4moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .qk_norm_optional = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .ffn_norm_name = "post_attention_norm",
                 .expert_gating = ExpertGating::Sigmoid,
                 .deepseek_experts = true,
                 .multimodal_rope = MultimodalRope::Optional},
    // dots.llm1: DeepSeek's form of experts (gating named by the file)
    // under per-head q/k norms and NeoX RoPE.
    Architecture{.name = "dots1",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .deepseek_experts = true},
    // Ling 2.0 and Ring 2.0 (mini, flash): one attn_qkv, per-head q/k
    // norms, NeoX RoPE over DeepSeek's form of experts (the gating named by
    // the file; multi-token prediction blocks skipped).
    Architecture{.name = "bailingmoe2",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .fused_qkv_only = true,
                 .qk_norm = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .deepseek_experts = true},
    // ERNIE 4.5 MoE (21B-A3B, 300B-A47B): ernie4_5's attention over
    // DeepSeek's form of experts, softmax routing renormalised, a selection
    // bias where present, one shared expert of
    // expert_shared_feed_forward_length.
    Architecture{.name = "ernie4_5-moe",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .attn_output_bias = false,
                 .deepseek_experts = true},
    // DeepSeek V2 / V2-Lite / V3 / R1, Kimi K2, GLM-4.7-Flash: multi-head
    // latent attention and DeepSeek's experts (dense where expert_count is
    // 0); softmax routing unless the file names its gating.
    Architecture{.name = "deepseek2",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Optional,
                 .expert_weights_norm = false,
                 .deepseek_experts = true,
                 .mla = true},
    // SmolLM3: llama without RoPE in every fourth layer.
    Architecture{.name = "smollm3", .ffn_forms = kSwiGluOnly, .sliding_window = {}, .no_rope_period = 4},
    // ERNIE 4.5 (the dense 0.3B): llama's graph (an attn_output.bias in the
    // file is left out of it, as llama.cpp does). EXAONE 3.5: llama
    // with NeoX RoPE and Llama 3.1's rope_freqs. Seed-OSS: NeoX RoPE,
    // optional q/k/v biases, and the FFN's input norm named
    // post_attention_norm.
    Architecture{.name = "ernie4_5", .ffn_forms = kSwiGluOnly, .sliding_window = {}, .attn_output_bias = false},
    // Baichuan and Baichuan 2, 7B: llama's graph (read_model_spec refuses
    // the 13B's 40 layers, which use ALiBi in place of RoPE).
    Architecture{.name = "baichuan", .ffn_forms = kSwiGluOnly, .sliding_window = {}},
    // Hunyuan dense (0.5B-7B, Hunyuan-MT): NeoX RoPE with an NTK alpha,
    // per-head q/k norms after RoPE.
    Architecture{.name = "hunyuan-dense",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .qk_norm_after_rope = true,
                 .rope_alpha = true,
                 .sliding_window = {}},
    // DeepSeek-MoE 16B (DeepSeek V1): llama's attention over DeepSeek's
    // form of experts: leading dense layers, softmax routing not
    // renormalised, times expert_weights_scale, shared experts.
    Architecture{.name = "deepseek",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .deepseek_experts = true},
    // Ling 1.0 (Ling-lite, Ling-plus): llama's attention (the scale from
    // rope.dimension_count, which is the head size in its files) over
    // DeepSeek's form of experts in every layer: softmax routing,
    // expert_weights_norm and expert_weights_scale from the file, shared
    // experts.
    Architecture{.name = "bailingmoe",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .deepseek_experts = true},
    // Hunyuan-A13B: hunyuan-dense's attention (per-head q/k norms after
    // NeoX RoPE; its converter folds the NTK alpha into rope.freq_base)
    // over experts in every layer, softmax routing renormalised, plus one
    // ungated shared expert: DeepSeek's form without its other parts.
    Architecture{.name = "hunyuan-moe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .qk_norm_after_rope = true,
                 .sliding_window = {},
                 .experts = Experts::Required,
                 .deepseek_experts = true},
    // InternLM2 / 2.5 and XVERSE: llama's graph and tensors.
    Architecture{.name = "internlm2", .ffn_forms = kSwiGluOnly, .sliding_window = {}},
    Architecture{.name = "xverse", .ffn_forms = kSwiGluOnly, .sliding_window = {}},
    // Orion-14B: llama with LayerNorms with biases and NeoX RoPE.
    Architecture{.name = "orion",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {}},
    Architecture{.name = "exaone",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .rope_freqs = true},
    // EXAONE 4.0 (1.2B, 32B): OLMo 2's post-norms without pre-norms, q/k
    // norms per head, NeoX RoPE with Llama 3.1's rope_freqs; 32B windows
    // three layers of four, and only those rotate.
    Architecture{.name = "exaone4",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .pre_norms = false,
                 .post_norms = true,
                 .sliding_window = {.enabled = true, .period = 4, .reads_freq_base_swa = true},
                 .rope_freqs = true,
                 .rope_windowed_only = true},
    Architecture{.name = "seed_oss",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .ffn_norm_name = "post_attention_norm"},
    // StarCoder2 (3B, 7B, 15B): LayerNorms with biases, NeoX RoPE, biases
    // on every linear layer, an ungated gelu FFN, sequential.
    Architecture{.name = "starcoder2",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kGeluOnly,
                 .sliding_window = {}},
    // Arcee AFM (AFM-4.5B): llama with an ungated FFN, relu(up)^2, and
    // Llama 3.1's rope_freqs. Its exact zeros make it ReLU-family: the
    // sparse FFN runs it once profiled.
    Architecture{.name = "arcee",
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kReluSquaredOnly,
                 .sliding_window = {},
                 .rope_freqs = true},
    // OLMo 2 (1B, 7B, 13B, 32B) and Olmo 3 (olmo2 files with a window): no
    // norms before the blocks, an RMSNorm of each block's output, one
    // RMSNorm over each token's whole q and k, NeoX RoPE. Olmo 3 windows
    // three layers of four; those rotate without YaRN.
    Architecture{.name = "olmo2",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .qk_norm_whole = true,
                 .pre_norms = false,
                 .post_norms = true,
                 .sliding_window = {.enabled = true, .period = 4, .reads_freq_base_swa = true, .plain_rope = true}},
    // GLM-4 (9B, 32B 0414, GLM-Z1): llama's pre-norms plus an RMSNorm of
    // each block's output, fused gate-up, optional fused attn_qkv and
    // biases, RoPE on part of each head (rope.dimension_count, half in
    // GLM-4's files).
    Architecture{.name = "glm4",
                 .ffn_layout = FfnLayout::FusedGateUp,
                 .ffn_forms = kSwiGluOnly,
                 .post_norms = true,
                 .sliding_window = {},
                 .multimodal_rope = MultimodalRope::Optional},
    // ChatGLM3 and GLM-4-9B's first files (chatglm): glm4 without the
    // post-norms.
    Architecture{.name = "chatglm", .ffn_layout = FfnLayout::FusedGateUp, .ffn_forms = kSwiGluOnly, .sliding_window = {}},
    // Phi-3 / 3.5: fused attn_qkv (or separate q/k/v), fused gate-up in
    // ffn_up, LongRoPE factors. llama.cpp ignores its sliding window.
    Architecture{.name = "phi3",
                 .rope_mode = RopeMode::Neox,
                 .ffn_layout = FfnLayout::FusedGateUp,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .longrope = true},
    // Gemma (1): GeGLU, embeddings times sqrt(n_embd), NeoX RoPE, the head
    // tied to token_embd; no post-norms, caps or windows (Gemma 2's additions).
    Architecture{.name = "gemma",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .embd_scale = true,
                 .head_is_token_embd = true,
                 .sliding_window = {}},
    // Gemma 2: GeGLU, scaled embeddings, post-norms, soft-capped attention
    // scores and logits, a 4096 window on every other layer, tied head.
    Architecture{.name = "gemma2",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .post_norms = true,
                 .embd_scale = true,
                 .head_is_token_embd = true,
                 .sliding_window = {.enabled = true, .period = 2, .default_window = 4096},
                 .attn_softcap = 50.0f,
                 .final_softcap = 30.0f,
                 .reads_final_softcap = true,
                 .embd_query_scale_n_layer = 46},
    // Gemma 3: gemma2 with q/k norms instead of the score cap, five windowed
    // layers to one global (their own RoPE base), no logit cap unless the
    // file sets one.
    Architecture{.name = "gemma3",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .qk_norm = true,
                 .post_norms = true,
                 .embd_scale = true,
                 .sliding_window = {.enabled = true, .period = 6, .own_rope = true},
                 .reads_final_softcap = true,
                 .embd_query_scale_n_layer = 62},
    // Gemma 4 (E2B, E4B, 31B; 26B A4B with experts beside each layer's
    // dense FFN: Architecture::gemma4_layers): gemma3's layers with shapes of their own
    // (Architecture::gemma4_layers), a score scale of 1, the file's window
    // pattern and the windowed layers' own RoPE base (rope.freq_base_swa), and
    // logits capped at 30 unless the file says otherwise.
    Architecture{.name = "gemma4",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .qk_norm = true,
                 .post_norms = true,
                 .embd_scale = true,
                 .sliding_window = {.enabled = true, .period = 6, .own_rope = true},
                 .final_softcap = 30.0f,
                 .reads_final_softcap = true,
                 .rope_freqs = true,
                 .experts = Experts::Optional,
                 .fixed_attn_scale = 1.0f,
                 .gemma4_layers = true},
    // Gemma 3n (E2B, E4B): gemma3's blocks in AltUp's streams with LAuReL
    // beside attention, per-layer inputs, activation sparsity in the first
    // layers and shared caches (Architecture::altup_layers); a window on
    // four layers of five, a score scale of 1, logits capped at 30.
    Architecture{.name = "gemma3n",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .qk_norm = true,
                 .post_norms = true,
                 .embd_scale = true,
                 .sliding_window = {.enabled = true, .period = 5, .reads_freq_base_swa = true},
                 .final_softcap = 30.0f,
                 .reads_final_softcap = true,
                 .fixed_attn_scale = 1.0f,
                 .altup_layers = true},
    // EmbeddingGemma (gemma-embedding, 300M): gemma3's blocks as an encoder
    // (Architecture::bidirectional), a symmetric window on five layers of
    // six, mean-pooled and projected by dense_2 and dense_3 where present.
    Architecture{.name = "gemma-embedding",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kGeGluOnly,
                 .qk_norm = true,
                 .post_norms = true,
                 .embd_scale = true,
                 .sliding_window = {.enabled = true, .period = 6, .reads_freq_base_swa = true},
                 .bidirectional = true},
    // BERT sentence encoders (all-MiniLM, bge, mxbai-embed-large,
    // snowflake-arctic-embed): learned absolute positions, q/k/v and an
    // ungated gelu FFN with biases, post-LayerNorms; embeddings only.
    Architecture{.name = "bert",
                 .norm = NormKind::Layer,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kGeluOnly,
                 .pre_norms = false,
                 .head_is_token_embd = true,
                 .sliding_window = {},
                 .bidirectional = true,
                 .bert_layers = BertLayers::Absolute},
    // Nomic Embed (nomic-embed-text v1, v1.5): BERT's post-LayerNorms with
    // NeoX RoPE, one attn_qkv and a SwiGLU FFN, no biases.
    Architecture{.name = "nomic-bert",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .pre_norms = false,
                 .head_is_token_embd = true,
                 .sliding_window = {},
                 .bidirectional = true,
                 .bert_layers = BertLayers::Rotary},
    // Jina Embeddings v2 (jina-bert-v2: jina-embeddings-v2-base-en, -small-en,
    // -base-code, -base-de): BERT's post-LayerNorms without positions, ALiBi
    // on the scores (max bias 8, as llama.cpp), q/k/v with biases, LayerNorms
    // of each token's whole q and k and a second attention norm where the
    // file has them, a GeGLU FFN with biases (one ffn_up of gate rows, then up
    // rows; or ffn_gate and ffn_up); mean pooling.
    Architecture{.name = "jina-bert-v2",
                 .norm = NormKind::Layer,
                 .ffn_forms = kGeGluOnly,
                 .pre_norms = false,
                 .head_is_token_embd = true,
                 .sliding_window = {},
                 .bidirectional = true,
                 .bert_layers = BertLayers::Alibi},
    // ModernBERT (gte-modernbert, nomic modernbert-embed, granite-embedding
    // R2): pre-LayerNorms without biases, NeoX RoPE, one attn_qkv, a GLU FFN
    // in one ffn_up (gate rows first; GeGLU, or as hidden_activation says),
    // a symmetric window on two layers of three (the first of each three
    // global; rope.freq_base_swa, default 10000, on the windowed ones).
    Architecture{.name = "modern-bert",
                 .norm = NormKind::LayerNoBias,
                 .rope_mode = RopeMode::Neox,
                 .ffn_layout = FfnLayout::FusedGateUp,
                 .ffn_forms = kModernBertForms,
                 .fused_qkv_only = true,
                 .head_is_token_embd = true,
                 .sliding_window = {.enabled = true, .period = 3, .own_rope = true, .dense_first = true},
                 .bidirectional = true,
                 .modern_bert_layers = true},
    // Mistral 3 (Ministral 3 3B/8B/14B): llama with YaRN, its
    // yarn_log_multiplier, and queries scaled up past the original context
    // (attention.temperature_scale).
    Architecture{.name = "mistral3",
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .rope_freqs = true,
                 .yarn_log_mul_and_temperature = true},
    // gpt-oss (20B, 120B): a mixture of experts in every layer with router
    // and expert biases, a softmax over the chosen experts' logits and a
    // clamped SwiGLU; q/k/v/output biases, attention sinks, a window on
    // every other layer (from layer 0), NeoX RoPE (YaRN in its files); the
    // FFN's input norm is called post_attention_norm.
    Architecture{.name = "gpt-oss",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOaiOnly,
                 .sliding_window = {.enabled = true, .period = 2, .default_window = 128, .reads_freq_base_swa = true},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .ffn_norm_name = "post_attention_norm",
                 .attn_sinks = true,
                 .expert_gating = ExpertGating::SoftmaxOfChosen,
                 .expert_biases = true},
    // Falcon: LayerNorms with biases, fused attn_qkv, attention and an
    // ungated FFN side by side on the same normed input; ReluFalcon
    // (PowerInfer) with relu in place of gelu.
    Architecture{.name = "falcon",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .layer_form = LayerForm::Parallel,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kFalconForms,
                 .fused_qkv_only = true,
                 .sliding_window = {}},
    // GPT-NeoX, Pythia, Dolly v2, RedPajama-INCITE: LayerNorms with biases,
    // NeoX RoPE on part of each head, one attn_qkv, biases everywhere, an
    // ungated gelu FFN beside attention, each block on its own norm.
    Architecture{.name = "gptneox",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .layer_form = LayerForm::Parallel,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kGeluOnly,
                 .fused_qkv_only = true,
                 .parallel_ffn_norm = true,
                 .sliding_window = {}},
    // StableLM 2 (1.6B), StableLM Zephyr 3B: LayerNorms with biases, NeoX
    // RoPE on part of each head (a quarter), optional q/k/v biases,
    // sequential. StableLM 2 12B's per-head q/k LayerNorms are refused.
    Architecture{.name = "stablelm",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .sliding_window = {},
                 .refused_layer_tensor = "attn_q_norm"},
    // Nemotron (Nemotron-Mini 4B, Minitron 4B/8B): LayerNorms with biases
    // (the converter folds Nemotron's weight + 1 in), NeoX RoPE on part of
    // each head, an ungated relu(up)^2 FFN, sequential: ReLU-family, so the
    // sparse FFN runs it once profiled.
    Architecture{.name = "nemotron",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kReluSquaredOnly,
                 .sliding_window = {}},
    // Phi-2, Phi-1.5: falcon's form (LayerNorms with biases, attention and
    // an ungated gelu FFN side by side) with q/k/v (fused or not), output,
    // FFN and head biases, NeoX RoPE on part of each head.
    Architecture{.name = "phi2",
                 .norm = NormKind::Layer,
                 .rope_mode = RopeMode::Neox,
                 .layer_form = LayerForm::Parallel,
                 .ffn_layout = FfnLayout::UpOnly,
                 .ffn_forms = kGeluOnly,
                 .sliding_window = {}},
    // Command R (35B, 08-2024) and Aya Expanse / Aya 23: attention and a
    // SwiGLU FFN side by side on one LayerNorm (no bias) of the input, the
    // head tied to token_embd, logits times logit_scale. Command R+'s
    // per-head q/k LayerNorms are refused.
    Architecture{.name = "command-r",
                 .norm = NormKind::LayerNoBias,
                 .layer_form = LayerForm::Parallel,
                 .ffn_forms = kSwiGluOnly,
                 .head_is_token_embd = true,
                 .sliding_window = {},
                 .logit_scale_multiplies = true,
                 .refused_layer_tensor = "attn_q_norm"},
    // Command R7B (cohere2): command-r with a window on three layers of
    // four, and RoPE only in those.
    Architecture{.name = "cohere2",
                 .norm = NormKind::LayerNoBias,
                 .layer_form = LayerForm::Parallel,
                 .ffn_forms = kSwiGluOnly,
                 .head_is_token_embd = true,
                 .sliding_window = {.enabled = true, .period = 4, .reads_freq_base_swa = true},
                 .rope_windowed_only = true,
                 .logit_scale_multiplies = true},
    // Arcee AFMoE (Trinity Nano, Mini): DeepSeek's form of experts (sigmoid
    // routing by default), Gemma 2's norms before and after each block,
    // embeddings times sqrt(n_embd), per-head q/k norms, no RoPE in every
    // fourth layer, a window (where named) on three layers of four, and the
    // attention's output gated by a sigmoid before attn_output.
    Architecture{.name = "afmoe",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kSwiGluOnly,
                 .qk_norm = true,
                 .post_norms = true,
                 .embd_scale = true,
                 .sliding_window = {.enabled = true, .period = 4, .reads_freq_base_swa = true},
                 .experts = Experts::Required,
                 .expert_weights_norm = false,
                 .no_rope_period = 4,
                 .attn_output_gate = true,
                 .expert_gating = ExpertGating::Sigmoid,
                 .deepseek_experts = true},
    // SmallThinker (4B-A0.6B, 21B-A3B), made for local inference: ReGLU
    // experts in every layer, routed from the layer's input (the router
    // runs ahead of attention), by the file's expert_gating_func (softmax
    // or sigmoid), renormalised. Files with a window (llama.cpp takes 4096
    // whatever they name) use it on three layers of four, the first of each
    // four global and without RoPE; without one, every layer rotates.
    Architecture{.name = "smallthinker",
                 .rope_mode = RopeMode::Neox,
                 .ffn_forms = kReGluOnly,
                 .sliding_window = {.enabled = true,
                                    .period = 4,
                                    .reads_freq_base_swa = true,
                                    .dense_first = true,
                                    .fixed_window = 4096},
                 .experts = Experts::Required,
                 .rope_windowed_only = true,
                 .rope_everywhere_without_window = true,
                 .router_reads_layer_input = true,
                 .reads_expert_gating_func = true},
};

constexpr std::array kFormNames{std::pair{FfnForm::SwiGLU, "swiglu"}, std::pair{FfnForm::ReGLU, "reglu"},
                                std::pair{FfnForm::DReLU, "drelu"},   std::pair{FfnForm::GeGLU, "geglu"},
                                std::pair{FfnForm::Gelu, "gelu"},     std::pair{FfnForm::Relu, "relu"},
                                std::pair{FfnForm::ReluSquared, "relu2"}, std::pair{FfnForm::SwiGluOai, "swiglu_oai"}};

}  // namespace

std::string_view ffn_form_name(FfnForm form) {
  for (const auto& [f, name] : kFormNames) {
    if (f == form) return name;
  }
  return "?";
}

bool parse_ffn_form(std::string_view name, FfnForm& out) {
  for (const auto& [f, n] : kFormNames) {
    if (name == n) {
      out = f;
      return true;
    }
  }
  return false;
}

bool hidden_activation_form(std::string_view name, FfnForm& out) {
  if (name == "relu") return false;
  if (name == "silu" || name == "swish" || name == "swiglu") {
    out = FfnForm::SwiGLU;
  } else {
    out = name == "reglu" ? FfnForm::ReGLU : FfnForm::GeGLU;  // gelu, geglu and the fallback
  }
  return true;
}

bool is_relu_family(FfnForm form) {
  return form == FfnForm::ReGLU || form == FfnForm::DReLU || form == FfnForm::Relu || form == FfnForm::ReluSquared;
}

bool is_gated(FfnForm form) { return form != FfnForm::Gelu && form != FfnForm::Relu && form != FfnForm::ReluSquared; }

kernels::Activation activation_for(FfnForm form) {
  switch (form) {
    case FfnForm::SwiGLU: return kernels::Activation::SwiGLU;
    case FfnForm::ReGLU: return kernels::Activation::ReGLU;
    case FfnForm::DReLU: return kernels::Activation::DReLU;
    case FfnForm::GeGLU: return kernels::Activation::GeGLU;
    case FfnForm::Gelu: return kernels::Activation::Gelu;
    case FfnForm::Relu: return kernels::Activation::Relu;
    case FfnForm::ReluSquared: return kernels::Activation::ReluSquared;
    case FfnForm::SwiGluOai: return kernels::Activation::SwiGluOai;
  }
  return kernels::Activation::SwiGLU;
}

std::string_view ffn_activated_tensor(const Architecture& a) {
  return a.ffn_layout == FfnLayout::UpOnly ? "ffn_up" : "ffn_gate";
}

std::string_view ffn_input_norm_tensor(const Architecture& a) {
  return a.layer_form == LayerForm::Parallel && !a.parallel_ffn_norm ? "attn_norm" : a.ffn_norm_name;
}

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& a : kArchitectures) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const Architecture& llama_architecture() { return kArchitectures.front(); }

std::span<const Architecture> architectures() { return kArchitectures; }

std::string supported_architecture_names() {
  std::string out;
  for (const Architecture& a : kArchitectures) {
    if (!out.empty()) out += ", ";
    out += a.name;
  }
  return out;
}

}  // namespace tc::model
