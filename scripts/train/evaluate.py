#!/usr/bin/env python3
"""Measures the trained model and checks the exported GGUF against PyTorch.

- held-out perplexity (PyTorch, fp32 checkpoint and with the weights rounded
  to F16 as the GGUF stores them), over non-overlapping n_ctx windows of the
  held-out chapters;
- FFN activation sparsity per layer: the fraction of relu(gate) outputs that
  are exactly 0 over every held-out token and neuron, and how many neurons
  fire for more than half of the tokens ("hot") or for none ("dead");
- Thermocline vs PyTorch on the GGUF: for each prompt, PyTorch's greedy
  continuation (F16-rounded weights, stopping at end-of-generation tokens)
  against (a) `thermocline generate --temp 0` text, and (b) `thermocline
  serve` /v1/completions and /v1/chat/completions with temperature 0 and
  logprobs: the token pieces must be the same, and the chosen tokens'
  log-probabilities and the top-5 alternatives are compared; a differing
  token is excused only at a near-tie (PyTorch's top-2 logits within 0.05);
- the loss curve PNG from train.py's log.csv;
- sample continuations (greedy and seeded sampling) for the model card.

Writes --out/eval.json and --out/loss_curve.png; exits non-zero when
Thermocline disagrees with PyTorch beyond a near-tie.
"""
import argparse
import csv
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as model_lib  # noqa: E402
import spm  # noqa: E402
import thermo  # noqa: E402
import train as train_lib  # noqa: E402

PROMPTS = [
    "In the beginning",
    "And the LORD said unto Moses,",
    "The LORD is my shepherd;",
    "Blessed are the",
    "And it came to pass, when",
    "Psalms 23\n",
]
CHAT_PROMPTS = ["Hello! Who are you?", "Read me Genesis 1.", "Tell me about the sea."]
NEAR_TIE = 0.05


@torch.no_grad()
def greedy(model, ids, n, vocab):
    ids = list(ids)
    out, margins, logprobs = [], [], []
    for _ in range(n):
        x = torch.tensor([ids[-model.cfg["n_ctx"]:]])
        logits = model(x)[0, -1].double()
        top2 = torch.topk(logits, 2)
        lp = torch.log_softmax(logits, -1)
        t = int(top2.indices[0])
        out.append(t)
        margins.append(float(top2.values[0] - top2.values[1]))
        logprobs.append(lp)
        ids.append(t)
        if vocab.is_end_of_generation(t):
            break
    return out, margins, logprobs


@torch.no_grad()
def sample(model, ids, n, vocab, temp=0.8, top_k=40, seed=1):
    g = torch.Generator().manual_seed(seed)
    ids, out = list(ids), []
    for _ in range(n):
        logits = model(torch.tensor([ids[-model.cfg["n_ctx"]:]]))[0, -1] / temp
        v, i = torch.topk(logits, top_k)
        t = int(i[torch.multinomial(torch.softmax(v, -1), 1, generator=g)])
        if vocab.is_end_of_generation(t):
            break
        out.append(t)
        ids.append(t)
    return out


@torch.no_grad()
def sparsity(model, stream, n_ctx, max_windows=None):
    n = (len(stream) - 1) // n_ctx
    if max_windows:
        n = min(n, max_windows)
    L, n_ff = model.cfg["n_layer"], model.cfg["n_ff"]
    zeros = torch.zeros(L, dtype=torch.float64)
    fire = torch.zeros(L, n_ff, dtype=torch.float64)
    tokens = 0
    for b0 in range(0, n, 16):
        x = torch.stack([stream[i * n_ctx:i * n_ctx + n_ctx] for i in range(b0, min(n, b0 + 16))])
        acts = []
        model(x, acts)
        for l, a in enumerate(acts):
            a = a.reshape(-1, n_ff)
            zeros[l] += (a == 0).sum().item()
            fire[l] += (a > 0).sum(0).double()
        tokens += x.numel()
    rows = []
    for l in range(L):
        frac = fire[l] / tokens
        rows.append({"layer": l, "sparsity": zeros[l].item() / (tokens * n_ff),
                     "mean_active_neurons": float((1 - zeros[l] / (tokens * n_ff)) * n_ff),
                     "hot_neurons_gt50pct": int((frac > 0.5).sum()), "dead_neurons": int((frac == 0).sum())})
    return {"tokens": tokens, "n_ff": n_ff, "layers": rows,
            "overall": sum(r["sparsity"] for r in rows) / L}


def plot(log_csv, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = list(csv.DictReader(open(log_csv)))
    tok = [int(r["tokens"]) / 1e6 for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(tok, [float(r["train_loss"]) for r in rows], label="train (mean since last point)")
    ax.plot(tok, [float(r["heldout_loss"]) for r in rows], label="held-out", marker="o", markersize=3)
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross-entropy (nats/token)")
    ax.set_title("thermocline-kjv-relu: training loss")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)
    plt.close(fig)


def piece_text(vocab, t):
    return vocab.piece_bytes(t).decode("utf-8", errors="replace")


def compare_server(model, vocab, srv, prompt_ids, n, path, body):
    want, margins, lps = greedy(model, prompt_ids, n, vocab)
    body = dict(body, max_tokens=n, temperature=0)
    r = srv.post(path, body)
    ch = r["choices"][0]
    if path.endswith("chat/completions"):
        content = ch["logprobs"]["content"]
        got_pieces = [c["token"] for c in content]
        got_lp = [c["logprob"] for c in content]
        got_top = [{t["token"]: t["logprob"] for t in c["top_logprobs"]} for c in content]
        text = ch["message"]["content"]
    else:
        got_pieces, got_lp, got_top = ch["logprobs"]["tokens"], ch["logprobs"]["token_logprobs"], ch["logprobs"]["top_logprobs"]
        text = ch["text"]
    want_vis = [t for t in want if not vocab.is_end_of_generation(t)]
    want_pieces = [piece_text(vocab, t) for t in want_vis]
    n_same = 0
    while n_same < min(len(want_pieces), len(got_pieces)) and want_pieces[n_same] == got_pieces[n_same]:
        n_same += 1
    full = n_same == len(want_pieces) == len(got_pieces)
    excused = (not full) and n_same < len(margins) and margins[n_same] < NEAR_TIE
    max_dlp, max_dtop = 0.0, 0.0
    for i in range(n_same):
        lp = lps[i]
        max_dlp = max(max_dlp, abs(float(lp[want_vis[i]]) - got_lp[i]))
        for piece, l in (got_top[i] or {}).items():
            cands = [t for t in torch.topk(lp, 8).indices.tolist() if piece_text(vocab, t) == piece]
            if cands:
                max_dtop = max(max_dtop, abs(float(lp[cands[0]]) - l))
    return {"prompt_tokens": len(prompt_ids), "pytorch_tokens": len(want_vis), "thermocline_tokens": len(got_pieces),
            "same_prefix": n_same, "identical": full, "near_tie_excused": excused,
            "min_margin": min(margins) if margins else None, "max_abs_dlogprob_chosen": max_dlp,
            "max_abs_dlogprob_top5": max_dtop, "thermocline_text": text,
            "pytorch_text": vocab.decode(want_vis)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="build-train/run")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--corpus", default="build-train/corpus")
    ap.add_argument("--tokenizer", default="build-train/tokenizer.json")
    ap.add_argument("--thermocline", default="build-train/cli/thermocline")
    ap.add_argument("--n-predict", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="default: the run folder")
    args = ap.parse_args()
    out = args.out or args.run
    torch.set_num_threads(args.threads)
    vocab = spm.Vocab.load(args.tokenizer)
    model32, ck = model_lib.load_checkpoint(os.path.join(args.run, "final.pt"))
    model16, _ = model_lib.load_checkpoint(os.path.join(args.run, "final.pt"), round_f16=True)
    n_ctx = model32.cfg["n_ctx"]
    held = train_lib.heldout_stream(args.corpus, vocab)
    res = {"gguf": args.gguf, "gguf_bytes": os.path.getsize(args.gguf), "params": model32.n_params(),
           "config": model32.cfg, "steps": ck["step"]}
    nll32 = train_lib.evaluate_loss(model32, held, n_ctx)
    nll16 = train_lib.evaluate_loss(model16, held, n_ctx)
    held_bytes = sum(len(vocab.piece_bytes(int(t))) for t in held)
    res["heldout"] = {"tokens": len(held), "nll": nll32, "ppl": math.exp(nll32), "nll_f16": nll16,
                      "ppl_f16": math.exp(nll16), "bits_per_byte": nll32 * len(held) / held_bytes / math.log(2)}
    print("evaluate: held-out perplexity %.2f (F16 weights %.2f), %.3f bits/byte, %d tokens"
          % (res["heldout"]["ppl"], res["heldout"]["ppl_f16"], res["heldout"]["bits_per_byte"], len(held)), flush=True)
    res["sparsity"] = sparsity(model32, held, n_ctx)
    print("evaluate: FFN sparsity per layer " +
          " ".join("%.3f" % r["sparsity"] for r in res["sparsity"]["layers"]), flush=True)
    if os.path.exists(os.path.join(args.run, "log.csv")):
        plot(os.path.join(args.run, "log.csv"), os.path.join(out, "loss_curve.png"))
        res["loss_curve"] = os.path.join(out, "loss_curve.png")

    # Samples (PyTorch): greedy and seeded top-k sampling.
    res["samples"] = []
    for p in PROMPTS:
        ids = vocab.encode(p, add_special=True)
        g, _, _ = greedy(model32, ids, 48, vocab)
        s = sample(model32, ids, 48, vocab)
        res["samples"].append({"prompt": p, "greedy": vocab.decode([t for t in g if not vocab.is_end_of_generation(t)]),
                               "sampled_t0.8_k40_seed1": vocab.decode(s)})

    # Thermocline vs PyTorch.
    agree = {"generate": [], "completions": [], "chat": []}
    ok = True
    for p in PROMPTS:
        ids = vocab.encode(p, add_special=True)
        want, margins, _ = greedy(model16, ids, args.n_predict, vocab)
        want_text = vocab.decode([t for t in want if not vocab.is_end_of_generation(t)])
        stdout, stderr = thermo.generate(args.thermocline, args.gguf, p, args.n_predict, args.threads)
        got = stdout[:-1] if stdout.endswith("\n") else stdout
        got_cont = got[len(p):] if got.startswith(p) else got
        same = got_cont == want_text
        n = 0
        while n < min(len(got_cont), len(want_text)) and got_cont[n] == want_text[n]:
            n += 1
        agree["generate"].append({"prompt": p, "identical_text": same, "same_chars": n,
                                  "pytorch": want_text, "thermocline": got_cont})
        ok &= same or min(margins) < NEAR_TIE
    with thermo.Server(args.thermocline, args.gguf, threads=args.threads,
                       log_path=os.path.join(out, "serve.log")) as srv:
        for p in PROMPTS:
            r = compare_server(model16, vocab, srv, vocab.encode(p, add_special=True), args.n_predict,
                               "/v1/completions", {"prompt": p, "logprobs": 5})
            agree["completions"].append(dict(r, prompt=p))
            ok &= r["identical"] or r["near_tie_excused"]
        for p in CHAT_PROMPTS:
            templated = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n" % p
            ids = vocab.encode(templated, add_special=True, parse_special=True)
            r = compare_server(model16, vocab, srv, ids, args.n_predict, "/v1/chat/completions",
                               {"messages": [{"role": "user", "content": p}], "logprobs": True, "top_logprobs": 5})
            agree["chat"].append(dict(r, prompt=p))
            ok &= r["identical"] or r["near_tie_excused"]
    res["thermocline_vs_pytorch"] = agree
    n_gen = sum(a["identical_text"] for a in agree["generate"])
    n_srv = sum(a["identical"] for a in agree["completions"] + agree["chat"])
    max_dlp = max(a["max_abs_dlogprob_chosen"] for a in agree["completions"] + agree["chat"])
    max_dtop = max(a["max_abs_dlogprob_top5"] for a in agree["completions"] + agree["chat"])
    res["agreement_summary"] = {"generate_identical": "%d/%d" % (n_gen, len(agree["generate"])),
                                "server_identical": "%d/%d" % (n_srv, len(agree["completions"]) + len(agree["chat"])),
                                "max_abs_dlogprob_chosen": max_dlp, "max_abs_dlogprob_top5": max_dtop, "ok": bool(ok)}
    print("evaluate: thermocline vs PyTorch greedy: generate %s identical, server %s identical, "
          "max |d logprob| %.4f (chosen) %.4f (top-5)" % (res["agreement_summary"]["generate_identical"],
                                                          res["agreement_summary"]["server_identical"], max_dlp, max_dtop))
    with open(os.path.join(out, "eval.json"), "w") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    if not ok:
        sys.exit("evaluate: thermocline and PyTorch disagree beyond a near-tie; see %s/eval.json" % out)


if __name__ == "__main__":
    main()
