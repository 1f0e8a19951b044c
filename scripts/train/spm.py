"""SentencePiece-style BPE vocabulary and encoder, the Python twin of
engine/text/tokenizer_spm.cpp (llama.cpp's llm_tokenizer_spm):

- the text is split on special tokens (control and unknown ones only when
  parse_special), longest text first;
- each raw fragment gets U+2581 for every space, and a leading U+2581 when it
  is the first fragment or follows a special token (add_space_prefix);
- the fragment is split into UTF-8 characters and the adjacent pair whose
  concatenation is the highest-scoring vocab piece is merged (leftmost on
  ties) until no pair is left;
- a symbol that is not a piece becomes its <0xXX> byte tokens.

The vocab is stored as JSON (tokenizer.json beside the model) and written
into GGUF by export_gguf.py under tokenizer.ggml.*.
"""
import json

SPACE = "\u2581"

# llama.cpp token types (tokenizer.ggml.token_type)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# ChatML, as profiler/make_model.cpp writes it; <|im_start|> and <|im_end|>
# are control tokens of the vocab.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}")


def byte_piece(b):
    return "<0x%02X>" % b


class Vocab:
    def __init__(self, tokens, scores, types, bos_id=1, eos_id=2, unk_id=0, eot_id=-1,
                 add_bos=True, add_space_prefix=True, chat_template=CHAT_TEMPLATE):
        assert len(tokens) == len(scores) == len(types)
        self.tokens, self.scores, self.types = list(tokens), [float(s) for s in scores], list(types)
        self.bos_id, self.eos_id, self.unk_id, self.eot_id = bos_id, eos_id, unk_id, eot_id
        self.add_bos, self.add_space_prefix, self.chat_template = add_bos, add_space_prefix, chat_template
        self.index = {}
        for i, t in enumerate(self.tokens):
            if not t or t in self.index:
                raise ValueError("empty or duplicate token %r at id %d" % (t, i))
            self.index[t] = i
        self.byte_ids = [self.index.get(byte_piece(b), -1) for b in range(256)]
        # Special tokens, longest text first (ties by id), as TokenizerBase orders them.
        self.special = sorted((i for i, t in enumerate(self.types) if t in (CONTROL, USER_DEFINED, UNKNOWN)),
                              key=lambda i: (-len(self.tokens[i].encode("utf-8")), i))
        self._cache = {}
        self._check_word_splittable()

    def __len__(self):
        return len(self.tokens)

    # -- persistence ---------------------------------------------------------
    def to_json(self):
        return {"tokens": self.tokens, "scores": self.scores, "types": self.types, "bos_id": self.bos_id,
                "eos_id": self.eos_id, "unk_id": self.unk_id, "eot_id": self.eot_id, "add_bos": self.add_bos,
                "add_space_prefix": self.add_space_prefix, "chat_template": self.chat_template}

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            return Vocab(**json.load(f))

    # -- encoding ------------------------------------------------------------
    def _check_word_splittable(self):
        # The merge loop never crosses a word boundary (before U+2581, around
        # "\n") when no normal piece has U+2581 after its first character and
        # none holds "\n": then each word can be merged on its own, and cached.
        self._splittable = all(
            (SPACE not in t[1:] and "\n" not in t) for t, ty in zip(self.tokens, self.types) if ty == NORMAL)

    def _merge(self, text):
        """The merge loop on one escaped fragment; returns token ids."""
        syms = list(text)  # Python str: one symbol per code point = per UTF-8 character
        index, scores = self.index, self.scores
        while len(syms) > 1:
            best, best_i = None, -1
            for i in range(len(syms) - 1):
                t = index.get(syms[i] + syms[i + 1])
                if t is not None and (best is None or scores[t] > best):
                    best, best_i = scores[t], i
            if best_i < 0:
                break
            syms[best_i:best_i + 2] = [syms[best_i] + syms[best_i + 1]]
        out = []
        for s in syms:
            t = index.get(s)
            if t is not None:
                out.append(t)
                continue
            for b in s.encode("utf-8"):
                if self.byte_ids[b] >= 0:
                    out.append(self.byte_ids[b])
                elif self.unk_id >= 0:
                    out.append(self.unk_id)
        return out

    def _words(self, text):
        word, out = [], []
        for ch in text:
            if ch == "\n" or (ch == SPACE and word):
                if word:
                    out.append("".join(word))
                word = []
                if ch == "\n":
                    out.append("\n")
                    continue
            word.append(ch)
        if word:
            out.append("".join(word))
        return out

    def _encode_fragment(self, text):
        if not self._splittable:
            return self._merge(text)
        out = []
        for w in self._words(text):
            ids = self._cache.get(w)
            if ids is None:
                ids = self._merge(w)
                if len(self._cache) < 1_000_000:
                    self._cache[w] = ids
            out.extend(ids)
        return out

    def partition(self, text, parse_special):
        frags = [(-1, text)] if text else []
        for sid in self.special:
            if not parse_special and self.types[sid] != USER_DEFINED:
                continue
            sp = self.tokens[sid]
            nxt, found = [], False
            for tok, frag in frags:
                if tok >= 0:
                    nxt.append((tok, frag))
                    continue
                pos = 0
                while True:
                    m = frag.find(sp, pos)
                    if m < 0:
                        break
                    if m > pos:
                        nxt.append((-1, frag[pos:m]))
                    nxt.append((sid, ""))
                    pos = m + len(sp)
                    found = True
                if pos < len(frag):
                    nxt.append((-1, frag[pos:]))
            if found:
                frags = nxt
        return frags

    def encode(self, text, add_special=False, parse_special=False):
        out = []
        if add_special and self.add_bos and self.bos_id >= 0:
            out.append(self.bos_id)
        prev_special = True
        for tok, frag in self.partition(text, parse_special):
            if tok >= 0:
                out.append(tok)
                prev_special = True
                continue
            esc = (SPACE if (self.add_space_prefix and prev_special) else "") + frag.replace(" ", SPACE)
            out.extend(self._encode_fragment(esc))
            prev_special = False
        return out

    # -- decoding ------------------------------------------------------------
    def piece_bytes(self, i, render_special=False):
        ty, t = self.types[i], self.tokens[i]
        if ty == BYTE:
            return bytes([int(t[3:5], 16)])
        if ty == NORMAL:
            return t.replace(SPACE, " ").encode("utf-8")
        if ty in (CONTROL, UNKNOWN):
            return t.encode("utf-8") if render_special else b""
        return t.encode("utf-8")

    def decode(self, ids, render_special=False):
        return b"".join(self.piece_bytes(i, render_special) for i in ids).decode("utf-8", errors="replace")

    def is_end_of_generation(self, i):
        return i in (self.eos_id, self.eot_id) or (
            self.types[i] == CONTROL and self.tokens[i] in ("<|im_end|>", "</s>"))
