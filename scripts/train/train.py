#!/usr/bin/env python3
"""Trains the bundled model (model.py) on the training split, on the CPU.

Data: each training chapter is a document "<s>Book N\\nverse\\nverse...</s>",
plus ChatML dialogues made from the same chapters so that the chat template
means something to the model (user: a verse, assistant: the verses after it;
user: "Read me Book N.", assistant: its first verses), about a quarter of the
training tokens. Documents are shuffled with the seed and concatenated; each step takes
--batch windows of n_ctx+1 tokens at offsets drawn from a seeded generator
(deterministic data order; the generator state is checkpointed).

Optimiser: AdamW (betas 0.9/0.95, weight decay 0.1 on matrices), linear
warm-up then cosine decay to 10% of --lr, gradient clipping at 1.0.

Budget: with --steps 0 (default) the step count is set after a calibration
of a few steps so that the run ends within --max-minutes (default 55; the
run also stops at that time whatever happens); the chosen count is logged,
and `--steps N` repeats the run exactly. --quick: a 2.5-minute smoke run.

Writes into --out (default build-train/run): log.csv (step, tokens, elapsed,
lr, train loss, held-out loss), last.pt (resumable with --resume), final.pt,
train_meta.json.
"""
import argparse
import csv
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as model_lib  # noqa: E402
import spm  # noqa: E402


def chat(user, assistant):
    return "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n" % (user, assistant)


def build_documents(chapters, vocab, seed, with_chat):
    rng = random.Random(seed)
    docs = []
    for ch in chapters:
        text = ch["ref"] + "\n" + "\n".join(ch["verses"])
        docs.append([vocab.bos_id] + vocab.encode(text) + [vocab.eos_id])
        if not with_chat:
            continue
        v = ch["verses"]
        docs.append(vocab.encode(chat("Read me %s." % ch["ref"], " ".join(v[:rng.randint(1, 3)])),
                                  add_special=True, parse_special=True))
        for _ in range(max(1, len(v) // 10)):
            if len(v) < 2:
                break
            i = rng.randrange(len(v) - 1)
            k = rng.randint(1, 2)
            docs.append(vocab.encode(chat(v[i], " ".join(v[i + 1:i + 1 + k])), add_special=True, parse_special=True))
    return docs


def load_split(corpus, name):
    with open(os.path.join(corpus, name + ".jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def heldout_stream(corpus, vocab):
    ids = []
    for d in build_documents(load_split(corpus, "heldout"), vocab, 0, with_chat=False):
        ids += d
    return torch.tensor(ids, dtype=torch.long)


@torch.no_grad()
def evaluate_loss(model, stream, n_ctx, max_windows=None, batch=16):
    """Mean next-token NLL over non-overlapping windows of the stream."""
    model.eval()
    n = (len(stream) - 1) // n_ctx
    if max_windows:
        n = min(n, max_windows)
    total, count = 0.0, 0
    for b0 in range(0, n, batch):
        rows = [stream[i * n_ctx:i * n_ctx + n_ctx + 1] for i in range(b0, min(n, b0 + batch))]
        x = torch.stack(rows)
        logits = model(x[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1), reduction="sum").item()
        count += x[:, 1:].numel()
    model.train()
    return total / max(count, 1)


def lr_at(step, total, warmup, peak):
    if step < warmup:
        return peak * (step + 1) / warmup
    p = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="build-train/corpus")
    ap.add_argument("--tokenizer", default="build-train/tokenizer.json")
    ap.add_argument("--out", default="build-train/run")
    ap.add_argument("--max-minutes", type=float, default=55.0)
    ap.add_argument("--quick", action="store_true", help="2.5-minute smoke run (unless --max-minutes is given)")
    ap.add_argument("--steps", type=int, default=0, help="0: as many as fit in --max-minutes")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--evals", type=int, default=25, help="held-out evaluations over the run")
    ap.add_argument("--eval-windows", type=int, default=0,
                    help="held-out windows per evaluation during training (0: all; --quick: 8)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--resume", action="store_true")
    for k, v in model_lib.DEFAULT_CONFIG.items():
        if k != "n_vocab" and not isinstance(v, bool):
            ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    ap.add_argument("--untied", action="store_true", help="a separate output.weight")
    args = ap.parse_args()
    explicit_minutes = any(a.startswith("--max-minutes") for a in sys.argv[1:])
    if args.quick and not explicit_minutes:
        args.max_minutes = 2.5
    if args.quick:
        args.warmup = min(args.warmup, 20)
        args.evals = min(args.evals, 5)
        args.eval_windows = args.eval_windows or 8

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.time()
    budget_s = args.max_minutes * 60
    os.makedirs(args.out, exist_ok=True)

    vocab = spm.Vocab.load(args.tokenizer)
    cfg = {k: getattr(args, k) for k in model_lib.DEFAULT_CONFIG if k not in ("n_vocab", "tied")}
    cfg["n_vocab"], cfg["tied"] = len(vocab), not args.untied
    docs = build_documents(load_split(args.corpus, "train"), vocab, args.seed, with_chat=True)
    random.Random(args.seed).shuffle(docs)
    train_ids = torch.tensor([t for d in docs for t in d], dtype=torch.long)
    held = heldout_stream(args.corpus, vocab)
    n_chat = sum(1 for d in docs if len(d) > 1 and d[1] == vocab.index["<|im_start|>"])
    print("train: %d documents (%d chat), %d training tokens, %d held-out tokens, %.1fs to tokenize"
          % (len(docs), n_chat, len(train_ids), len(held), time.time() - t_start), flush=True)

    model = model_lib.Model(cfg)
    model.init_weights(args.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)
    step, total_steps, log_rows = 0, args.steps, []
    last_path, log_path = os.path.join(args.out, "last.pt"), os.path.join(args.out, "log.csv")
    if args.resume and os.path.exists(last_path):
        ck = torch.load(last_path, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        gen.set_state(ck["generator"])
        step, total_steps, log_rows = ck["step"], ck["total_steps"], ck["log"]
        budget_s += ck["elapsed"]  # the time budget counts this run's time only
        print("train: resumed at step %d of %d" % (step, total_steps), flush=True)
    print("train: %d parameters, config %s" % (model.n_params(), json.dumps(cfg)), flush=True)

    n_ctx, B = cfg["n_ctx"], args.batch
    max_start = len(train_ids) - n_ctx - 1
    calib_steps = 3 if args.quick else 8
    eval_every = max(1, total_steps // args.evals) if total_steps else None
    t_train = time.time()
    losses = []
    stopped_early = False
    model.train()

    def save(path, final=False):
        ck = {"config": cfg, "model": model.state_dict(), "step": step, "total_steps": total_steps,
              "log": log_rows, "elapsed": time.time() - t_start, "args": vars(args)}
        if not final:
            ck.update(optimizer=opt.state_dict(), generator=gen.get_state())
        torch.save(ck, path + ".tmp")
        os.replace(path + ".tmp", path)

    def write_log():
        with open(log_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step", "tokens", "elapsed_s", "lr", "train_loss", "heldout_loss"])
            w.writerows(log_rows)

    while total_steps == 0 or step < total_steps:
        if total_steps == 0 and step == calib_steps:
            per_step = (time.time() - t_train) / calib_steps
            t0 = time.time()
            evaluate_loss(model, held, n_ctx, args.eval_windows)
            eval_s = time.time() - t0
            remaining = budget_s - (time.time() - t_start) - 30  # export margin
            total_steps = max(calib_steps + 1, int((remaining - args.evals * eval_s) / per_step * 0.95) + step)
            eval_every = max(1, total_steps // args.evals)
            print("train: %.2fs/step, %.1fs/eval -> %d steps (repeat with --steps %d)"
                  % (per_step, eval_s, total_steps, total_steps), flush=True)
        lr = lr_at(step, total_steps or 10 ** 9, args.warmup, args.lr)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, max_start, (B,), generator=gen)
        x = torch.stack([train_ids[s:s + n_ctx + 1] for s in starts.tolist()])
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        step += 1
        elapsed = time.time() - t_start
        if eval_every and (step % eval_every == 0 or step == total_steps):
            hl = evaluate_loss(model, held, n_ctx, args.eval_windows)
            tl = sum(losses) / len(losses)
            losses = []
            log_rows.append([step, step * B * n_ctx, round(elapsed, 1), lr, round(tl, 4), round(hl, 4)])
            write_log()
            save(last_path)
            print("step %5d/%d  %6.0fs  lr %.2e  train %.3f  held-out %.3f (ppl %.1f)"
                  % (step, total_steps, elapsed, lr, tl, hl, math.exp(hl)), flush=True)
        if elapsed > budget_s:
            print("train: the %.1f-minute budget ran out at step %d of %d" % (args.max_minutes, step, total_steps))
            stopped_early = True
            break
    if not log_rows or log_rows[-1][0] != step:
        hl = evaluate_loss(model, held, n_ctx, args.eval_windows)
        tl = sum(losses) / max(1, len(losses))
        log_rows.append([step, step * B * n_ctx, round(time.time() - t_start, 1), lr, round(tl, 4), round(hl, 4)])
        write_log()
    save(os.path.join(args.out, "final.pt"), final=True)
    meta = {"steps": step, "planned_steps": total_steps, "stopped_early": stopped_early,
            "tokens_seen": step * B * n_ctx, "train_tokens": len(train_ids), "heldout_tokens": len(held),
            "documents": len(docs), "chat_documents": n_chat, "params": model.n_params(), "config": cfg,
            "elapsed_s": round(time.time() - t_start, 1), "final_train_loss": log_rows[-1][4],
            "final_heldout_loss": log_rows[-1][5], "args": vars(args), "torch": torch.__version__,
            "threads": torch.get_num_threads()}
    with open(os.path.join(args.out, "train_meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("train: done, %d steps, %.1f minutes, held-out loss %.3f -> %s"
          % (step, meta["elapsed_s"] / 60, log_rows[-1][5], args.out), flush=True)


if __name__ == "__main__":
    main()
