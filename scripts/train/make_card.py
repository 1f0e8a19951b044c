#!/usr/bin/env python3
"""Writes the model card (Markdown) from the pipeline's measured figures:
corpus_stats.json, tokenizer_check.json, the run's train_meta.json and
eval.json. Nothing in the card is typed by hand.

  make_card.py --run build-train/run --gguf models/default.gguf -o models/default.md --png models/default_loss.png
"""
import argparse
import json
import os
import shutil


def fmt_md_text(s):
    return s.replace("\n", "⏎ ").replace("|", "\\|").strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="build-train/run")
    ap.add_argument("--build", default="build-train")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--png", required=True, help="where the loss curve PNG goes (linked relative to the card)")
    ap.add_argument("--command", default="scripts/train/run_all.sh")
    args = ap.parse_args()
    corpus = json.load(open(os.path.join(args.build, "corpus", "corpus_stats.json")))
    tokcheck = json.load(open(os.path.join(args.build, "tokenizer_check.json")))
    meta = json.load(open(os.path.join(args.run, "train_meta.json")))
    ev = json.load(open(os.path.join(args.run, "eval.json")))
    if os.path.abspath(ev["loss_curve"]) != os.path.abspath(args.png):
        shutil.copyfile(ev["loss_curve"], args.png)
    cfg = meta["config"]
    png_rel = os.path.relpath(args.png, os.path.dirname(os.path.abspath(args.output)))
    gguf_name = os.path.basename(args.gguf)
    a = meta["args"]
    h = ev["heldout"]
    L = []
    w = L.append
    w("# %s: the bundled model\n" % gguf_name)
    w("A small LLaMA-architecture language model with a ReLU-gated FFN (`relu(gate) * up`, as ReluLLaMA), "
      "trained from scratch on the King James Bible so that Thermocline has a real default model with real "
      "activation sparsity. It continues text in the style of the KJV and answers chat messages with "
      "KJV-style verses; it knows nothing else and is not a source of facts. Every figure below was measured "
      "by `scripts/train/` (%s) and written by `scripts/train/make_card.py`.\n" % args.command)
    w("## Data and licence\n")
    w("- Text: the King James Version (1611; the standard text of Debian's `bible-kjv` / `bible-kjv-text` "
      "packages, printed by their `bible` command), %d chapters, %d verses. Its copyright "
      "(`/usr/share/doc/bible-kjv-text/copyright`): *\"The copyright for the King James Version text of the "
      "Bible is expired\"*; the text is in the public domain (in the UK, Crown rights in the Authorized "
      "Version persist under letters patent; they concern printing the Bible there, not models trained "
      "on it)." % (corpus["chapters"], corpus["verses"]))
    w("- Not used: the `fortunes` collections. Their copyright file licenses the fortune *program* (BSD) "
      "but not the quotations, which come from many authors, some of them still in copyright.")
    w("- Split: documents are chapters (a `Book N` line, then one verse a line, without verse numbers); "
      "held out: every 50th chapter (%s): %d chapters, %d verses, %d bytes. Training: %d chapters, %d bytes."
      % (corpus["heldout_rule"], corpus["heldout"]["chapters"], corpus["heldout"]["verses"],
         corpus["heldout"]["bytes"], corpus["train"]["chapters"], corpus["train"]["bytes"]))
    w("- Chat: %d of the %d training documents are ChatML dialogues made from the training chapters "
      "(user: a verse, assistant: the next one or two; user: \"Read me Book N.\", assistant: its first "
      "verses), so that the chat template means something to the model. %d training tokens in all.\n"
      % (meta["chat_documents"], meta["documents"], meta["train_tokens"]))
    w("## Shape\n")
    w("| | |\n| --- | --- |")
    for k, v in [("architecture", "`llama` (GGUF v3), `thermocline.ffn_form` = `reglu`"),
                 ("parameters", "{:,}".format(meta["params"])),
                 ("n_embd / n_layer / n_ff", "%d / %d / %d" % (cfg["n_embd"], cfg["n_layer"], cfg["n_ff"])),
                 ("heads / kv heads / head dim", "%d / %d / %d" % (cfg["n_head"], cfg["n_head_kv"],
                                                                  cfg["n_embd"] // cfg["n_head"])),
                 ("context", "%d tokens" % cfg["n_ctx"]),
                 ("RoPE", "normal (interleaved pairs), base %g" % cfg["rope_base"]),
                 ("norm", "RMSNorm, eps %g" % cfg["rms_eps"]),
                 ("embeddings", "tied (no `output.weight`)" if cfg["tied"] else "untied"),
                 ("biases", "none"),
                 ("weights", "F16 (norms F32), %.2f MB" % (ev["gguf_bytes"] / 1e6)),
                 ("vocabulary", "%d, SentencePiece-style BPE (`tokenizer.ggml.model` = `llama`)" % cfg["n_vocab"]),
                 ("chat template", "ChatML (`<|im_start|>`, `<|im_end|>` control tokens)")]:
        w("| %s | %s |" % (k, v))
    w("")
    w("## Tokenizer\n")
    w("Trained on the training split by `scripts/train/train_tokenizer.py`: `<unk>`, `<s>`, `</s>`, byte "
      "fallback `<0x00>`..`<0xFF>`, `<|im_start|>`, `<|im_end|>`, the printable ASCII characters and U+2581, "
      "then BPE merges scored by creation order, so that llama.cpp's SentencePiece merge (ours: "
      "`engine/text/tokenizer_spm.cpp`) reproduces the trainer's encoder. Checked against Thermocline's "
      "`/tokenize`: %d texts (every held-out verse and chapter, the whole held-out text, chat prompts with "
      "special tokens, odd strings), %d tokens, **%d mismatches**.\n"
      % (tokcheck["cases"], tokcheck["python_tokens"], tokcheck["mismatches"]))
    w("## Training\n")
    w("PyTorch %s (Debian `python3-torch`, OpenBLAS) on the CPU, %d threads, seed %d; AdamW (betas 0.9/0.95, "
      "weight decay %g), peak learning rate %g, %d warm-up steps, cosine decay to 10%%; batch %d x %d tokens; "
      "%d steps, %.2f M tokens seen (%.1f epochs), %.1f minutes. Repeat exactly with "
      "`scripts/train/train.py --steps %d`.\n"
      % (meta["torch"], meta["threads"], a["seed"], a["weight_decay"], a["lr"], a["warmup"], a["batch"],
         cfg["n_ctx"], meta["steps"], meta["tokens_seen"] / 1e6, meta["tokens_seen"] / meta["train_tokens"],
         meta["elapsed_s"] / 60, meta["steps"]))
    w("![training loss](%s)\n" % png_rel)
    w("## Held-out perplexity\n")
    w("Over the %d held-out tokens, in windows of %d: **perplexity %.2f** (%.3f nats/token, %.3f bits/byte); "
      "with the weights rounded to F16 as the file stores them: %.2f.\n"
      % (h["tokens"], cfg["n_ctx"], h["ppl"], h["nll"], h["bits_per_byte"], h["ppl_f16"]))
    sp = ev["sparsity"]
    w("## FFN activation sparsity\n")
    w("Fraction of `relu(gate)` outputs that are exactly zero over the held-out text (%d tokens x %d neurons "
      "per layer); *hot*: neurons active for more than half of the tokens; *dead*: never active.\n"
      % (sp["tokens"], sp["n_ff"]))
    w("| layer | sparsity | mean active neurons | hot neurons | dead neurons |\n| --- | --- | --- | --- | --- |")
    for r in sp["layers"]:
        w("| %d | %.1f%% | %.0f of %d | %d | %d |" % (r["layer"], 100 * r["sparsity"], r["mean_active_neurons"],
                                                   sp["n_ff"], r["hot_neurons_gt50pct"], r["dead_neurons"]))
    w("| all | %.1f%% | | | |\n" % (100 * sp["overall"]))
    ag = ev["agreement_summary"]
    w("## Thermocline against PyTorch\n")
    w("Greedy continuations (%d tokens at most) of the GGUF in Thermocline against PyTorch with the same "
      "F16-rounded weights: `thermocline generate --temp 0` text identical for %s prompts; `/v1/completions` "
      "and `/v1/chat/completions` tokens identical for %s; largest difference in the chosen tokens' "
      "log-probabilities %.1e, in the top-5 alternatives' %.1e.\n"
      % (32, ag["generate_identical"], ag["server_identical"], ag["max_abs_dlogprob_chosen"],
         ag["max_abs_dlogprob_top5"]))
    w("llama.cpp loads the file too (architecture `llama`, its keys and tensor names; the test "
      "\"llama.cpp loads the bundled model and tokenizes like us\" in `tests/oracle/greedy_oracle_test.cpp` "
      "loads it through llama.cpp's own libllama, checks that its prompt tokens equal ours and decodes). "
      "llama.cpp has no ReGLU for `llama` and ignores `thermocline.ffn_form`, so it runs the FFN as SwiGLU "
      "and its text differs: Thermocline is the runtime for this model.\n")
    w("## Samples\n")
    w("PyTorch, from the prompt after `<s>`; greedy, and sampled at temperature 0.8, top-k 40, seed 1.\n")
    w("| prompt | greedy | sampled |\n| --- | --- | --- |")
    for s in ev["samples"]:
        w("| %s | %s | %s |" % (fmt_md_text(s["prompt"]), fmt_md_text(s["greedy"]),
                                fmt_md_text(s["sampled_t0.8_k40_seed1"])))
    w("\nChat (Thermocline `/v1/chat/completions`, temperature 0):\n")
    w("| user | assistant |\n| --- | --- |")
    for c in ev["thermocline_vs_pytorch"]["chat"]:
        w("| %s | %s |" % (fmt_md_text(c["prompt"]), fmt_md_text(c["thermocline_text"])))
    w("")
    with open(args.output, "w", encoding="utf-8") as f:
        f.write("\n".join(L))
    print("make_card: %s" % args.output)


if __name__ == "__main__":
    main()
