"""The bundled model in PyTorch: LLaMA as llama.cpp computes it for
architecture `llama`, with Thermocline's ReGLU FFN (`thermocline.ffn_form` =
"reglu": down(relu(gate(x)) * up(x)), as ReluLLaMA).

- RMSNorm: x / sqrt(mean(x^2) + eps) * w, before attention, FFN and head.
- RoPE in llama.cpp's normal mode: dims (2i, 2i+1) of each head rotate by
  pos * base^(-2i/head_dim), so the Q/K rows export unpermuted.
- Attention: causal softmax(q k^T / sqrt(head_dim)) v; with GQA, query head
  h reads kv head h // (n_head / n_head_kv), as llama.cpp.
- No biases. Tied embeddings (no output.weight) unless cfg["tied"] is False.

Weight layout: every nn.Linear holds [out, in], which is GGUF's
ne = [in, out] row-major, so tensors export as they are.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_CONFIG = dict(n_vocab=4096, n_embd=256, n_layer=6, n_head=8, n_head_kv=4, n_ff=768, n_ctx=256,
                      rope_base=10000.0, rms_eps=1e-5, tied=True)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(n_ctx, head_dim, base, device=None):
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(n_ctx, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float().to(device), torch.sin(ang).float().to(device)


def apply_rope(x, cos, sin):
    # x: [B, T, H, D]; pairs (2i, 2i+1); cos/sin: [T, D/2]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        e, hd = cfg["n_embd"], cfg["n_embd"] // cfg["n_head"]
        self.n_head, self.n_head_kv, self.hd = cfg["n_head"], cfg["n_head_kv"], hd
        self.attn_norm = RMSNorm(e, cfg["rms_eps"])
        self.attn_q = nn.Linear(e, e, bias=False)
        self.attn_k = nn.Linear(e, hd * cfg["n_head_kv"], bias=False)
        self.attn_v = nn.Linear(e, hd * cfg["n_head_kv"], bias=False)
        self.attn_output = nn.Linear(e, e, bias=False)
        self.ffn_norm = RMSNorm(e, cfg["rms_eps"])
        self.ffn_gate = nn.Linear(e, cfg["n_ff"], bias=False)
        self.ffn_up = nn.Linear(e, cfg["n_ff"], bias=False)
        self.ffn_down = nn.Linear(cfg["n_ff"], e, bias=False)

    def forward(self, x, cos, sin, mask, acts=None):
        B, T, _ = x.shape
        h = self.attn_norm(x)
        q = apply_rope(self.attn_q(h).view(B, T, self.n_head, self.hd), cos, sin)
        k = apply_rope(self.attn_k(h).view(B, T, self.n_head_kv, self.hd), cos, sin)
        v = self.attn_v(h).view(B, T, self.n_head_kv, self.hd)
        g = self.n_head // self.n_head_kv
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        if g > 1:
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        att = att.masked_fill(mask[:T, :T], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, -1)
        x = x + self.attn_output(y)
        h = self.ffn_norm(x)
        a = F.relu(self.ffn_gate(h))
        if acts is not None:
            acts.append(a.detach())
        return x + self.ffn_down(a * self.ffn_up(h))


class Model(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.token_embd = nn.Embedding(cfg["n_vocab"], cfg["n_embd"])
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["n_layer"]))
        self.output_norm = RMSNorm(cfg["n_embd"], cfg["rms_eps"])
        self.output = None if cfg["tied"] else nn.Linear(cfg["n_embd"], cfg["n_vocab"], bias=False)
        cos, sin = rope_tables(cfg["n_ctx"], cfg["n_embd"] // cfg["n_head"], cfg["rope_base"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.triu(torch.ones(cfg["n_ctx"], cfg["n_ctx"], dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def init_weights(self, seed):
        g = torch.Generator().manual_seed(seed)
        resid_sd = 0.02 / math.sqrt(2 * self.cfg["n_layer"])
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.ones_(p)
            else:
                sd = resid_sd if name.endswith(("attn_output.weight", "ffn_down.weight")) else 0.02
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=g) * sd)

    def forward(self, idx, acts=None):
        T = idx.shape[1]
        x = self.token_embd(idx)
        for b in self.blocks:
            x = b(x, self.cos[:T], self.sin[:T], self.mask, acts)
        x = self.output_norm(x)
        w = self.token_embd.weight if self.output is None else self.output.weight
        return x @ w.t()

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def load_checkpoint(path, round_f16=False):
    ck = torch.load(path, map_location="cpu")
    m = Model(ck["config"])
    m.load_state_dict(ck["model"])
    if round_f16:  # the weights as the F16 GGUF stores them (norms stay f32)
        with torch.no_grad():
            for p in m.parameters():
                if p.dim() == 2:
                    p.copy_(p.half().float())
    m.eval()
    return m, ck
