#!/usr/bin/env python3
"""Writes the trained model as a GGUF v3 file that llama.cpp and Thermocline
load: architecture `llama` with llama.cpp's keys and tensor names, the
tokenizer under tokenizer.ggml.* (model "llama": SentencePiece BPE by piece
scores), ChatML as tokenizer.chat_template, and `thermocline.ffn_form` =
"reglu" (llama.cpp ignores the key and would run SwiGLU). 2-D weights are
F16, norms F32. A small pure-Python GGUF writer (NumPy for the tensor bytes);
no `gguf` package needed.

  export_gguf.py --checkpoint build-train/run/final.pt --tokenizer build-train/tokenizer.json -o models/default.gguf
"""
import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm  # noqa: E402

# GGUF metadata value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# ggml tensor types
GGML_F32, GGML_F16 = 0, 1
ALIGNMENT = 32


class U32v(int):
    pass


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _value(v):
    """(type, bytes) for a Python value: bool, U32v/int (u32), float (f32),
    str, or a list of one of str / float / int (i32)."""
    if isinstance(v, bool):
        return BOOL, struct.pack("<?", v)
    if isinstance(v, int):
        if not 0 <= v < 2 ** 32:
            raise ValueError("int metadata out of u32 range: %r" % v)
        return U32, struct.pack("<I", v)
    if isinstance(v, float):
        return F32, struct.pack("<f", v)
    if isinstance(v, str):
        return STR, _str(v)
    if isinstance(v, tuple) and v[0] == "i32[]":
        return ARR, struct.pack("<IQ", I32, len(v[1])) + np.asarray(v[1], dtype="<i4").tobytes()
    if isinstance(v, tuple) and v[0] == "f32[]":
        return ARR, struct.pack("<IQ", F32, len(v[1])) + np.asarray(v[1], dtype="<f4").tobytes()
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return ARR, struct.pack("<IQ", STR, len(v)) + b"".join(_str(x) for x in v)
    raise TypeError("unsupported metadata value %r" % (v,))


def write_gguf(path, metadata, tensors):
    """metadata: list of (key, value); tensors: list of (name, np.ndarray of
    float32 or float16, C order). GGUF lists dims fastest first, so a
    [rows, cols] array is ne = [cols, rows]."""
    infos, offset = [], 0
    for name, arr in tensors:
        arr = np.ascontiguousarray(arr)
        ttype = {np.dtype(np.float32): GGML_F32, np.dtype(np.float16): GGML_F16}[arr.dtype]
        infos.append((name, arr, ttype, offset))
        offset += arr.nbytes
        offset += (-offset) % ALIGNMENT
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
        for key, val in metadata:
            t, b = _value(val)
            f.write(_str(key) + struct.pack("<I", t) + b)
        for name, arr, ttype, off in infos:
            f.write(_str(name) + struct.pack("<I", arr.ndim))
            f.write(b"".join(struct.pack("<Q", d) for d in reversed(arr.shape)))
            f.write(struct.pack("<IQ", ttype, off))
        f.write(b"\0" * ((-f.tell()) % ALIGNMENT))
        base = f.tell()
        for name, arr, ttype, off in infos:
            f.write(b"\0" * (base + off - f.tell()))
            f.write(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
    os.replace(tmp, path)


def vocab_metadata(vocab):
    md = [
        ("tokenizer.ggml.model", "llama"),
        ("tokenizer.ggml.tokens", vocab.tokens),
        ("tokenizer.ggml.scores", ("f32[]", vocab.scores)),
        ("tokenizer.ggml.token_type", ("i32[]", vocab.types)),
        ("tokenizer.ggml.bos_token_id", vocab.bos_id),
        ("tokenizer.ggml.eos_token_id", vocab.eos_id),
        ("tokenizer.ggml.unknown_token_id", vocab.unk_id),
    ]
    if vocab.eot_id >= 0:
        md.append(("tokenizer.ggml.eot_token_id", vocab.eot_id))
    md += [
        ("tokenizer.ggml.add_bos_token", bool(vocab.add_bos)),
        ("tokenizer.ggml.add_eos_token", False),
        ("tokenizer.ggml.add_space_prefix", bool(vocab.add_space_prefix)),
        ("tokenizer.chat_template", vocab.chat_template),
    ]
    return md


def model_metadata(cfg, name, extra=()):
    hd = cfg["n_embd"] // cfg["n_head"]
    return [
        ("general.architecture", "llama"),
        ("general.name", name),
        ("general.file_type", 1),  # llama.cpp's LLAMA_FTYPE_MOSTLY_F16
        ("llama.vocab_size", cfg["n_vocab"]),
        ("llama.context_length", cfg["n_ctx"]),
        ("llama.embedding_length", cfg["n_embd"]),
        ("llama.block_count", cfg["n_layer"]),
        ("llama.feed_forward_length", cfg["n_ff"]),
        ("llama.rope.dimension_count", hd),
        ("llama.attention.head_count", cfg["n_head"]),
        ("llama.attention.head_count_kv", cfg["n_head_kv"]),
        ("llama.attention.layer_norm_rms_epsilon", float(cfg["rms_eps"])),
        ("llama.rope.freq_base", float(cfg["rope_base"])),
        ("thermocline.ffn_form", "reglu"),
    ] + list(extra)


def state_tensors(cfg, sd):
    """llama.cpp names for the model.py state dict (arrays as numpy)."""
    def w2(k):
        return sd[k].astype(np.float16)

    def w1(k):
        return sd[k].astype(np.float32)
    out = [("token_embd.weight", w2("token_embd.weight")), ("output_norm.weight", w1("output_norm.weight"))]
    if not cfg["tied"]:
        out.append(("output.weight", w2("output.weight")))
    for l in range(cfg["n_layer"]):
        p = "blocks.%d." % l
        out.append(("blk.%d.attn_norm.weight" % l, w1(p + "attn_norm.weight")))
        for t in ("attn_q", "attn_k", "attn_v", "attn_output"):
            out.append(("blk.%d.%s.weight" % (l, t), w2(p + t + ".weight")))
        out.append(("blk.%d.ffn_norm.weight" % l, w1(p + "ffn_norm.weight")))
        for t in ("ffn_gate", "ffn_up", "ffn_down"):
            out.append(("blk.%d.%s.weight" % (l, t), w2(p + t + ".weight")))
    return out


def export(cfg, state_dict_np, vocab, path, name, extra=()):
    if len(vocab) != cfg["n_vocab"]:
        raise ValueError("vocab has %d tokens, model %d" % (len(vocab), cfg["n_vocab"]))
    write_gguf(path, model_metadata(cfg, name, extra) + vocab_metadata(vocab), state_tensors(cfg, state_dict_np))


def write_tiny_model(vocab, path, seed=0):
    """A random-weight model with this vocab (for the tokenizer check)."""
    cfg = dict(n_vocab=len(vocab), n_embd=64, n_layer=1, n_head=2, n_head_kv=2, n_ff=64, n_ctx=4096,
               rope_base=10000.0, rms_eps=1e-5, tied=True)
    rng = np.random.default_rng(seed)
    sd = {"token_embd.weight": rng.normal(0, 1, (cfg["n_vocab"], 64)), "output_norm.weight": np.ones(64)}
    for t, shape in (("attn_q", (64, 64)), ("attn_k", (64, 64)), ("attn_v", (64, 64)), ("attn_output", (64, 64)),
                     ("ffn_gate", (64, 64)), ("ffn_up", (64, 64)), ("ffn_down", (64, 64))):
        sd["blocks.0.%s.weight" % t] = rng.normal(0, 0.125, shape)
    sd["blocks.0.attn_norm.weight"] = np.ones(64)
    sd["blocks.0.ffn_norm.weight"] = np.ones(64)
    export(cfg, sd, vocab, path, "tokenizer-check (random weights)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--name", default="thermocline-kjv-relu")
    ap.add_argument("--max-mb", type=float, default=16.0)
    args = ap.parse_args()
    import torch
    ck = torch.load(args.checkpoint, map_location="cpu")
    cfg = ck["config"]
    sd = {k: v.float().numpy() for k, v in ck["model"].items()}
    vocab = spm.Vocab.load(args.tokenizer)
    extra = [("general.description", "Trained by scripts/train on the King James Bible (public domain), step %d"
              % ck["step"])]
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    export(cfg, sd, vocab, args.output, args.name, extra)
    size = os.path.getsize(args.output)
    print("export_gguf: %s, %.2f MB (%d parameters)" % (args.output, size / 1e6, sum(v.size for v in sd.values())))
    if size > args.max_mb * 1024 * 1024:
        sys.exit("export_gguf: %s is larger than %.0f MiB" % (args.output, args.max_mb))


if __name__ == "__main__":
    main()
