#!/usr/bin/env python3
"""Trains the bundled model's SentencePiece-style BPE tokenizer on the
training split and checks that Thermocline's C++ tokenizer gives the same ids.

Vocabulary (default 4096 tokens), in id order:
  0 <unk> (unknown), 1 <s>, 2 </s> (control), 3..258 <0x00>..<0xFF> (byte
  fallback), 259 <|im_start|>, 260 <|im_end|> (control, ChatML), then the
  base characters (U+2581 and printable ASCII), then the merged pieces.

Training is SentencePiece's BPE: the text is escaped (U+2581 for spaces, a
leading U+2581 as add_space_prefix gives), split into units that no piece
crosses (a run of letters/apostrophes, of digits, or of other symbols, each
with an optional leading U+2581; "\n" alone), and the most frequent adjacent
pair of symbols is merged until the vocabulary is full (ties: the
lexicographically smallest pair). Pieces are scored by creation order: the
k-th piece created has score -k (base characters come first), so the encoder,
which merges the adjacent pair whose concatenation has the highest score, is
llama.cpp's and ours (engine/text/tokenizer_spm.cpp); spm.py is its Python
twin and is what train.py tokenizes with.

--check (after training, or alone with --check-only) writes a tiny
random-weight GGUF with this vocab (export_gguf.py's writer), starts
`thermocline serve` on it and compares /tokenize with spm.py on every
held-out verse, every held-out chapter, the whole held-out text, chat
prompts with special tokens, and some tricky strings. Ids must match exactly.
"""
import argparse
import collections
import heapq
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spm  # noqa: E402

CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]
UNIT_RE = re.compile(r"\u2581?[A-Za-z']+|\u2581?[0-9]+|\u2581?[^A-Za-z0-9'\u2581\n]+|\u2581|\n")


def base_vocab():
    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [spm.UNKNOWN, spm.CONTROL, spm.CONTROL]
    for b in range(256):
        tokens.append(spm.byte_piece(b)); scores.append(0.0); types.append(spm.BYTE)
    for t in CHAT_TOKENS:
        tokens.append(t); scores.append(0.0); types.append(spm.CONTROL)
    return tokens, scores, types


def train(text, vocab_size, log=print):
    tokens, scores, types = base_vocab()
    # Units, counted. Each training line is a fragment of its own (as a
    # document start gets the space prefix); spaces become U+2581.
    unit_counts = collections.Counter()
    for line in text.split("\n"):
        if line:
            unit_counts.update(UNIT_RE.findall(spm.SPACE + line.replace(" ", spm.SPACE)))
    unit_counts.pop("\n", None)
    chars = collections.Counter()
    for u, c in unit_counts.items():
        for ch in u:
            chars[ch] += c
    base_chars = set(chr(c) for c in range(0x21, 0x7F)) | {spm.SPACE} | set(chars)
    # Base characters by frequency (then code point), scored as SentencePiece does.
    for ch in sorted(base_chars, key=lambda ch: (-chars.get(ch, 0), ch)):
        tokens.append(ch); scores.append(-float(len(tokens))); types.append(spm.NORMAL)
    existing = set(tokens)

    words = [list(u) for u in unit_counts]
    counts = list(unit_counts.values())
    pair_count = collections.Counter()
    pair_where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += counts[wi]
            pair_where[(a, b)].add(wi)

    # Max-heap of (-count, pair) with lazy deletion: an entry is live when its
    # count is the pair's current count. Ties pop the smallest pair first.
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    n_merges = 0
    touched = set()
    t0 = time.time()
    while len(tokens) < vocab_size and heap:
        negc, (a, b) = heapq.heappop(heap)
        c = -negc
        if pair_count.get((a, b), 0) != c:
            continue
        if c < 2:
            break
        merged = a + b
        n_merges += 1
        if merged not in existing:
            tokens.append(merged); scores.append(-float(len(tokens))); types.append(spm.NORMAL)
            existing.add(merged)
        for wi in list(pair_where[(a, b)]):
            w = words[wi]
            cnt = counts[wi]
            # remove old pairs
            for p in zip(w, w[1:]):
                pair_count[p] -= cnt
                if pair_count[p] <= 0:
                    del pair_count[p]
                pair_where[p].discard(wi)
                touched.add(p)
            nw, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    nw.append(merged); i += 2
                else:
                    nw.append(w[i]); i += 1
            words[wi] = nw
            for p in zip(nw, nw[1:]):
                pair_count[p] += cnt
                pair_where[p].add(wi)
                touched.add(p)
        pair_where.pop((a, b), None)
        pair_count.pop((a, b), None)
        for p in touched:
            if p in pair_count:
                heapq.heappush(heap, (-pair_count[p], p))
        touched.clear()
        if n_merges % 500 == 0:
            log("train_tokenizer: %d merges, %d tokens, %.1fs" % (n_merges, len(tokens), time.time() - t0))
    # Scores as SentencePiece writes them: minus the piece's rank.
    return spm.Vocab(tokens, scores, types, bos_id=1, eos_id=2, unk_id=0,
                     eot_id=tokens.index("<|im_end|>"))


# --- the check against the C++ tokenizer -----------------------------------------

TRICKY = [
    "", " ", "  two  spaces  ", "Hello, world!", "The LORD's house; 42 cubits (and 7).",
    "caf\u00e9 na\u00efve \u2014 emoji \U0001F600 and CJK \u6f22\u5b57", "tab\tand\r\nnewlines\n\nend",
    "<s>literal specials</s> <|im_start|>x<|im_end|>", "<0x41> <unk>", "\u2581already escaped",
    "trailing space ", "\n\nleading newlines", "AND GOD SAID, LET THERE BE LIGHT",
]


def check(vocab, heldout_dir, thermocline, work_dir, log=print):
    import export_gguf  # noqa: E402
    import thermo  # noqa: E402
    os.makedirs(work_dir, exist_ok=True)
    gguf_path = os.path.join(work_dir, "tokenizer_check.gguf")
    export_gguf.write_tiny_model(vocab, gguf_path)
    cases = []
    chapters = [json.loads(l) for l in open(os.path.join(heldout_dir, "heldout.jsonl"), encoding="utf-8")]
    for ch in chapters:
        for v in ch["verses"]:
            cases.append((v, False, False))
        cases.append((ch["ref"] + "\n" + "\n".join(ch["verses"]), True, False))
    cases.append((open(os.path.join(heldout_dir, "heldout.txt"), encoding="utf-8").read(), True, False))
    for t in TRICKY:
        cases += [(t, False, False), (t, True, True), (t, False, True)]
    for ch in chapters[:8]:
        prompt = ("<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n%s<|im_end|>\n"
                  % (ch["verses"][0], ch["verses"][1] if len(ch["verses"]) > 1 else ""))
        cases += [(prompt, True, True), (prompt, False, False)]
    n_tok = 0
    mismatches = []
    with thermo.Server(thermocline, gguf_path) as srv:
        for text, add_special, parse_special in cases:
            want = vocab.encode(text, add_special=add_special, parse_special=parse_special)
            got = srv.tokenize(text, add_special=add_special, parse_special=parse_special)
            n_tok += len(want)
            if got != want:
                mismatches.append({"text": text[:200], "add_special": add_special, "parse_special": parse_special,
                                   "python": want[:60], "thermocline": got[:60]})
    result = {"cases": len(cases), "python_tokens": n_tok, "mismatches": len(mismatches),
              "first_mismatches": mismatches[:5], "gguf": gguf_path}
    log("train_tokenizer: check against %s /tokenize: %d cases, %d tokens, %d mismatches"
        % (thermocline, len(cases), n_tok, len(mismatches)))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default="build-train/corpus")
    ap.add_argument("--out", default="build-train/tokenizer.json")
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--check", action="store_true", help="compare with thermocline's /tokenize after training")
    ap.add_argument("--check-only", action="store_true", help="only the check, on the saved --out vocab")
    ap.add_argument("--thermocline", default="build-train/cli/thermocline")
    args = ap.parse_args()
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    if not args.check_only:
        text = open(os.path.join(args.corpus, "train.txt"), encoding="utf-8").read()
        t0 = time.time()
        vocab = train(text, args.vocab_size)
        vocab.save(args.out)
        ids = vocab.encode(text.replace("\n\n", "\n"))
        print("train_tokenizer: %d tokens in the vocab, %.1fs; train split = %d tokens (%.2f bytes/token) -> %s"
              % (len(vocab), time.time() - t0, len(ids), len(text) / len(ids), args.out))
        if len(vocab) != args.vocab_size:
            sys.exit("train_tokenizer: the corpus gave only %d tokens" % len(vocab))
    vocab = spm.Vocab.load(args.out)
    if args.check or args.check_only:
        res = check(vocab, args.corpus, args.thermocline, os.path.join(out_dir, "tokenizer_check"))
        with open(os.path.join(out_dir, "tokenizer_check.json"), "w") as f:
            json.dump(res, f, indent=1, ensure_ascii=False)
        if res["mismatches"]:
            print(json.dumps(res["first_mismatches"], indent=1, ensure_ascii=False))
            sys.exit("train_tokenizer: thermocline's tokenizer disagrees")


if __name__ == "__main__":
    main()
