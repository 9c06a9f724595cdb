"""all-MiniLM-L6-v2 sentence embeddings through the fusionflow Python package: what
build/bin/ff-embed does, in Python (README.md here).

    python3 models/minilm/embed.py [--backend NAME] [--model DIR] [--similarity] SENTENCE...

Prints one line per sentence (384 numbers) or, with --similarity, the cosine matrix. The
weights come from model.safetensors through fusionflow.load; the tokenizer is BERT's
WordPiece over tokenizer.json with Python's own Unicode tables (unicodedata), so it also
serves the tests as the reference for the C tokenizer's smaller tables. The model is
fetched once by scripts/fetch-minilm.sh (`make model`), never here.
"""
import argparse
import json
import os
import sys
import unicodedata

import numpy as np

try:
    import fusionflow as ff
except ImportError:  # a source checkout: the package next door, the library in build/lib
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import fusionflow as ff
import fusionflow.nn.functional as F

MODEL_NAME = "all-MiniLM-L6-v2"
FETCH_HINT = "run scripts/fetch-minilm.sh (or `make model`) once to fetch it"


def model_dir(explicit=None):
    """--model, else $FF_MODEL_DIR, else $XDG_CACHE_HOME (absolute only) or ~/.cache, then
    fusionflow/models/all-MiniLM-L6-v2: the rule of ff-embed and scripts/fetch-minilm.sh."""
    if explicit:
        return explicit
    if os.environ.get("FF_MODEL_DIR"):
        return os.environ["FF_MODEL_DIR"]
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not cache.startswith("/"):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "fusionflow", "models", MODEL_NAME)


def missing_files(directory):
    return [f for f in ("model.safetensors", "tokenizer.json", "config.json")
            if not os.path.isfile(os.path.join(directory, f))]


# ---- the tokenizer -------------------------------------------------------------------
def _is_punctuation(c):
    cp = ord(c)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 \
        or unicodedata.category(c).startswith("P")


def _is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


class WordPiece:
    """HF tokenizers' BertNormalizer + BertPreTokenizer + WordPiece + [CLS] A [SEP]."""

    def __init__(self, directory):
        with open(os.path.join(directory, "tokenizer.json"), encoding="utf-8") as f:
            spec = json.load(f)
        model, norm = spec["model"], spec.get("normalizer") or {}
        self.vocab = model["vocab"]
        self.unk = self.vocab[model.get("unk_token", "[UNK]")]
        self.prefix = model.get("continuing_subword_prefix", "##")
        self.max_chars = model.get("max_input_chars_per_word", 100)
        self.clean = norm.get("clean_text", True)
        self.chinese = norm.get("handle_chinese_chars", True)
        self.lower = norm.get("lowercase", True)
        strip = norm.get("strip_accents")
        self.strip = self.lower if strip is None else strip
        self.cls, self.sep, self.pad = self.vocab["[CLS]"], self.vocab["[SEP]"], self.vocab["[PAD]"]

    def normalize(self, text):
        out = []
        for c in text:
            if self.clean:
                if c in "\0\ufffd" or (unicodedata.category(c) in ("Cc", "Cf", "Co") and c not in "\t\n\r"):
                    continue
                if c.isspace():
                    c = " "
            out.append(" %s " % c if self.chinese and _is_cjk(ord(c)) else c)
        text = "".join(out)
        if self.strip:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lower:  # character by character, as HF (no final-sigma rule)
            text = "".join(c.lower() for c in text)
        return text

    def words(self, text):
        words, cur = [], []
        for c in self.normalize(text):
            if c.isspace() or _is_punctuation(c):
                if cur:
                    words.append("".join(cur))
                    cur = []
                if not c.isspace():
                    words.append(c)
            else:
                cur.append(c)
        if cur:
            words.append("".join(cur))
        return words

    def pieces(self, word):
        if len(word) > self.max_chars:
            return [self.unk]
        ids, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = (self.prefix if start else "") + word[start:end]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    break
            else:
                return [self.unk]
            start = end
        return ids

    def encode(self, text, max_len=256):
        ids = [i for w in self.words(text) for i in self.pieces(w)]
        return [self.cls] + ids[:max_len - 2] + [self.sep]


# ---- the model -----------------------------------------------------------------------
def load_config(directory):
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    max_len = 256
    path = os.path.join(directory, "sentence_bert_config.json")
    if os.path.isfile(path):
        with open(path) as f:
            max_len = json.load(f).get("max_seq_length", 256)
    return {"hidden": c["hidden_size"], "heads": c["num_attention_heads"], "layers": c["num_hidden_layers"],
            "eps": c.get("layer_norm_eps", 1e-12), "max_len": min(max_len, c["max_position_embeddings"])}


def pad_batch(seqs, pad_id):
    """ids [B, T] (int64, padded with pad_id) and the lengths of a list of id lists."""
    lens = [len(s) for s in seqs]
    ids = np.full((len(seqs), max(lens)), pad_id, dtype=np.int64)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = s
    return ids, lens


def _linear(x, w, b):
    return x @ w.T + b


def forward(w, cfg, ids, lens, device=None):
    """Sentence embeddings [B, H] (L2-normalized mean pooling) of the padded batch ids
    [B, T] with lengths lens: the same forward as models/minilm/bert.c."""
    B, T = ids.shape
    H, nh = cfg["hidden"], cfg["heads"]
    dh, eps = H // nh, cfg["eps"]
    p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
    keep = (np.arange(T)[None, :] < np.asarray(lens)[:, None]).astype(np.float32)
    mask = ff.tensor(keep.reshape(B, T, 1), device=device)
    # attention's mask: the real tokens' keys, [B, 1, T, T] by stride 0 (a view)
    keys = ff.tensor(keep.reshape(B, 1, 1, T) > 0, device=device).expand(B, 1, T, T)
    with ff.no_grad():
        x = F.embedding(ff.tensor(ids, device=device), w[p + "embeddings.word_embeddings.weight"])
        x = x + w[p + "embeddings.token_type_embeddings.weight"].select(0, 0)
        x = x + w[p + "embeddings.position_embeddings.weight"].narrow(0, 0, T)
        x = F.layer_norm(x.reshape(B * T, H), H, w[p + "embeddings.LayerNorm.weight"],
                         w[p + "embeddings.LayerNorm.bias"], eps)
        for i in range(cfg["layers"]):
            pre = "%sencoder.layer.%d." % (p, i)

            def heads(name):
                y = _linear(x, w[pre + "attention.self.%s.weight" % name], w[pre + "attention.self.%s.bias" % name])
                return y.reshape(B, T, nh, dh).permute(0, 2, 1, 3)

            ctx = F.scaled_dot_product_attention(heads("query"), heads("key"), heads("value"), attn_mask=keys)
            ctx = ctx.permute(0, 2, 1, 3).reshape(B * T, H)
            attn = _linear(ctx, w[pre + "attention.output.dense.weight"], w[pre + "attention.output.dense.bias"])
            x = F.layer_norm(attn + x, H, w[pre + "attention.output.LayerNorm.weight"],
                             w[pre + "attention.output.LayerNorm.bias"], eps)
            inter = F.gelu(_linear(x, w[pre + "intermediate.dense.weight"], w[pre + "intermediate.dense.bias"]))
            out = _linear(inter, w[pre + "output.dense.weight"], w[pre + "output.dense.bias"])
            x = F.layer_norm(out + x, H, w[pre + "output.LayerNorm.weight"], w[pre + "output.LayerNorm.bias"], eps)
        mean = (x.reshape(B, T, H) * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return mean / mean.norm(2, 1, keepdim=True).clamp(min=1e-12)


def embed(sentences, directory=None, device=None):
    """The embeddings of a list of sentences as a NumPy array [len(sentences), 384]."""
    directory = model_dir(directory)
    missing = missing_files(directory)
    if missing:
        raise FileNotFoundError("no %s model in %s (%s not found): %s" % (MODEL_NAME, directory, missing[0],
                                                                           FETCH_HINT))
    cfg, tok = load_config(directory), WordPiece(directory)
    ids, lens = pad_batch([tok.encode(s, cfg["max_len"]) for s in sentences], tok.pad)
    weights = ff.load(os.path.join(directory, "model.safetensors"), mmap=True, device=device)
    return forward(weights, cfg, ids, lens, device).numpy()


def main(argv=None):
    ap = argparse.ArgumentParser(description="all-MiniLM-L6-v2 sentence embeddings through fusionflow")
    ap.add_argument("--backend", help="device, as fusionflow.device names it: cpu (the fastest CPU backend), "
                                      "cpu_ref (the reference), opencl, cuda (default: FF_BACKEND, else cpu_blas)")
    ap.add_argument("--model", help="model directory (default: as ff-embed's)")
    ap.add_argument("--similarity", action="store_true", help="print the cosine matrix instead")
    ap.add_argument("sentences", nargs="+")
    a = ap.parse_args(argv)
    try:
        e = embed(a.sentences, a.model, a.backend)
    except FileNotFoundError as err:
        print("embed.py: %s" % err, file=sys.stderr)
        return 1
    rows, fmt = (e @ e.T, "%.6f") if a.similarity else (e, "%.9g")
    for r in rows:
        print(" ".join(fmt % v for v in r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
