"""The pretrained all-MiniLM-L6-v2 (issue 13, "a real model", f32): build/bin/ff-embed and
models/minilm/embed.py against a PyTorch forward of the same weights
(models/minilm/torch_reference.py: weights read with NumPy, not fusionflow), per backend;
the C tokenizer against the Python one (full unicodedata) and ids of the real HF tokenizer.

The model is fetched at set-up by scripts/fetch-minilm.sh (`make test` does it). Without
it, or without ff-embed (built only with cJSON), these tests skip and say why; with
FF_REQUIRE_MODEL=1 (CI) they fail instead."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import DEVICES, REPO

C_NAME = {"cpu_ref": "cpu"}  # ff-embed takes C backend names; Python's 'cpu_ref' is C's cpu

MINILM = os.path.join(REPO, "models", "minilm")
REQUIRED = os.environ.get("FF_REQUIRE_MODEL") == "1"


def _module(name):
    spec = importlib.util.spec_from_file_location("minilm_" + name, os.path.join(MINILM, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


embed_py = _module("embed")


def _ff_embed_path():
    lib = os.environ.get("FUSIONFLOW_LIB")
    build = os.path.dirname(os.path.dirname(os.path.abspath(lib))) if lib else os.path.join(REPO, "build")
    return os.path.join(build, "bin", "ff-embed")


FF_EMBED = _ff_embed_path()
MODEL_DIR = embed_py.model_dir()

# Punctuation, accents, numbers, unknown words and emoji ([UNK]), CJK, Greek, Cyrillic, an
# empty sentence, lengths from 2 to 33 tokens (the batch is padded to the longest).
SENTENCES = [
    "Hello, world!",
    "Café naïve Ångström — résumé, façade & jalapeño.",
    "The year 2024 had 366 days; π ≈ 3.14159, and 1,000,000 > 999.",
    "I love pizza🍕 and 🎉 parties!!!",
    "A man is eating food.",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Short.",
    "This is a considerably longer sentence that keeps going, with commas, clauses and more words than "
    "the others, so the rest of the batch is padded.",
    "東京タワー and 北京 (CJK), ΟΔΟΣ, Привет!",
    "",
]

# ids from the reference tokenizer (HF tokenizers on this tokenizer.json)
KNOWN_IDS = {
    "hello world": [101, 7592, 2088, 102],
    "Café naïve Ångström!": [101, 7668, 15743, 17076, 15687, 999, 102],
    "I love pizza🍕 and 🎉 parties!!!": [101, 1045, 2293, 100, 1998, 100, 4243, 999, 999, 999, 102],
    "The year 2024 had 366 days; π ≈ 3.14159.": [101, 1996, 2095, 16798, 2549, 2018, 4029, 2575, 2420, 1025, 1170,
                                                  1606, 1017, 1012, 15471, 28154, 1012, 102],
    "Supercalifragilisticexpialidocious": [101, 3565, 9289, 10128, 29181, 24411, 4588, 10288, 19312, 21273, 10085,
                                           6313, 102],
}

# The blocks whose normalization and punctuation bert_text.c covers with its own tables.
COVERED = (list(range(0x20, 0x180)) + list(range(0x370, 0x460)) + list(range(0x2000, 0x2070))
           + list(range(0x3000, 0x3040)) + list(range(0xFE10, 0xFE70)) + list(range(0xFF00, 0xFF66))
           + [0x2126, 0x212A, 0x212B])


def _unavailable(need_model):
    if not os.path.isfile(FF_EMBED):
        return "ff-embed was not built (%s missing: cJSON not found, apt-get install libcjson-dev)" % FF_EMBED
    missing = embed_py.missing_files(MODEL_DIR) if need_model else []
    if missing:
        return "no all-MiniLM-L6-v2 in %s (%s missing): run scripts/fetch-minilm.sh (or make model)" % (
            MODEL_DIR, missing[0])
    return None


def _require(need_model):
    why = _unavailable(need_model)
    if why and REQUIRED:
        pytest.fail("FF_REQUIRE_MODEL=1 but " + why)
    if why:
        pytest.skip(why)


@pytest.fixture(scope="module")
def binary():
    _require(False)
    return FF_EMBED


@pytest.fixture(scope="module")
def model():
    _require(True)
    return MODEL_DIR


def ff_embed(*args, env=None, code=0, stdin=None):
    e = dict(os.environ, **(env or {}))
    p = subprocess.run([FF_EMBED, *args], capture_output=True, text=True, env=e, input=stdin, timeout=600)
    assert p.returncode == code, (p.returncode, p.stderr)
    return p


def matrix(text):
    return np.array([[float(v) for v in line.split()] for line in text.splitlines()], dtype=np.float64)


def token_ids(sentences):
    return [[int(v) for v in line.split()] for line in ff_embed("--ids", "--", *sentences).stdout.splitlines()]


@pytest.fixture(scope="module")
def torch_model(model):
    pytest.importorskip("torch")
    ref = _module("torch_reference")
    w, cfg = ref.load(model)
    return lambda ids, lens, dtype=None: ref.forward(w if dtype is None else ref.half(w, dtype), cfg, ids,
                                                     lens).numpy().astype(np.float64)


@pytest.fixture(scope="module")
def tokenizer(model):
    return embed_py.WordPiece(model)


def torch_embeddings(torch_model, tokenizer, sentences, max_len=256, dtype=None):
    ids, lens = embed_py.pad_batch([tokenizer.encode(s, max_len) for s in sentences], tokenizer.pad)
    return torch_model(ids, lens, dtype)


def cosines(a, b):
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ---- the command line, without the model --------------------------------------------------
def test_model_dir_rule_is_shared_by_ff_embed_embed_py_and_the_fetch_script(binary, tmp_path):
    fetch = os.path.join(REPO, "scripts", "fetch-minilm.sh")
    for env in ({"FF_MODEL_DIR": str(tmp_path / "m")}, {"FF_MODEL_DIR": "", "XDG_CACHE_HOME": "/xdg"},
                {"FF_MODEL_DIR": "", "XDG_CACHE_HOME": "relative", "HOME": "/home/u"},
                {"FF_MODEL_DIR": "", "XDG_CACHE_HOME": "", "HOME": "/root2"}):
        got = ff_embed("--print-model-dir", env=env).stdout.strip()
        script = subprocess.run(["bash", fetch, "--print-dir"], capture_output=True, text=True,
                                env=dict(os.environ, **env), check=True).stdout.strip()
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            py = embed_py.model_dir()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k)
                else:
                    os.environ[k] = v
        assert got == script == py, (env, got, script, py)
    assert got == "/root2/.cache/fusionflow/models/all-MiniLM-L6-v2"
    assert ff_embed("--model", "/x/y", "--print-model-dir").stdout == "/x/y\n"


def test_missing_model_says_how_to_fetch_it(binary, tmp_path):
    p = ff_embed("--model", str(tmp_path), "hello", code=1)
    assert "no all-MiniLM-L6-v2 model in %s" % tmp_path in p.stderr
    assert "scripts/fetch-minilm.sh" in p.stderr and "make model" in p.stderr
    assert p.stdout == ""


def test_bad_usage_exits_2(binary):
    assert "--dtype must be f32, bf16, f16 or int8, got 'f64'" in ff_embed("--dtype", "f64", "x", code=2).stderr
    assert "unknown option --nope" in ff_embed("--nope", "x", code=2).stderr
    assert "--backend needs a value" in ff_embed("--backend", code=2).stderr
    assert "usage: ff-embed" in ff_embed("--help").stdout


# ---- the tokenizer ------------------------------------------------------------------------
def test_known_ids(model):
    assert token_ids(list(KNOWN_IDS)) == list(KNOWN_IDS.values())


def test_tokenizer_matches_the_python_reference(tokenizer):
    texts = list(SENTENCES) + ["a%sb x%s %s" % (chr(c), chr(c), chr(c)) for c in COVERED if chr(c) not in "\n\r"]
    texts += ["x" * 100, "x" * 101, "\u00e9" * 101,  # max_input_chars_per_word: 100, then [UNK]
              "tab\there\u00a0nbsp\u2028line\u200bzero\u00adsoft", "ΆΈΉΊΌΎΏ ΐΰ ϴϷ Ѐ Ё Й й ё",
              "İstanbul Łódź Œuvre Ŋ ŉ ſ Ÿ Ĳssel Ħal Đorđe Þór Ææ Øre", "ＡＢＣ！（ｘ）", "\u212bngstr\u00f6m 5\u212a 3\u2126"]
    got = token_ids(texts)
    want = [tokenizer.encode(t, 256) for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want) if g != w]
    assert not bad, "%d of %d differ, first: %r" % (len(bad), len(texts), bad[:3])
    assert 100 in got[3]  # the emoji are [UNK]
    assert got[len(SENTENCES) + 1 + sum(1 for c in COVERED if chr(c) not in "\n\r")] == [101, 100, 102]


def test_truncation_at_256_tokens_keeps_sep(model, tokenizer):
    long = " ".join("word%d" % i for i in range(300))
    ids = token_ids([long])[0]
    assert len(ids) == 256 and ids[0] == 101 and ids[-1] == 102
    assert ids == tokenizer.encode(long, 256)


# ---- the forward --------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_embeddings_match_pytorch(model, torch_model, tokenizer, device):
    got = matrix(ff_embed("--backend", C_NAME.get(device, device), "--dtype", "f32", "--", *SENTENCES).stdout)
    want = torch_embeddings(torch_model, tokenizer, SENTENCES)
    assert got.shape == want.shape == (len(SENTENCES), 384)
    cos = cosines(got, want)
    assert cos.min() >= 0.9999, (device, cos)
    assert np.abs(got - want).max() < 1e-5, (device, np.abs(got - want).max())
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("device", DEVICES)
def test_half_embeddings_match_pytorch(model, torch_model, tokenizer, device, dtype):
    """Half weights and activations (every op rounding to the dtype) against PyTorch's f32
    forward: cosine >= 0.99 for every sentence (the issue's bar), including the padded
    ones; measured 0.9999 (bf16) and 0.999998 (f16), so a tighter bar guards regressions."""
    if device == "opencl" and dtype == "f16":
        pytest.skip("opencl: bf16 covers its half kernels; f16 would add 30 s of the same paths")
    got = matrix(ff_embed("--backend", C_NAME.get(device, device), "--dtype", dtype, "--", *SENTENCES).stdout)
    want = torch_embeddings(torch_model, tokenizer, SENTENCES)
    assert got.shape == want.shape
    cos = cosines(got, want)
    assert cos.min() >= (0.999 if dtype == "bf16" else 0.99999), (device, dtype, cos)
    if dtype == "bf16":  # and PyTorch's own bf16 forward of the same weights (1.13 has no f16 matmul on CPU)
        import torch
        theirs = torch_embeddings(torch_model, tokenizer, SENTENCES, dtype=torch.bfloat16)
        assert cosines(got, theirs).min() >= 0.99, cosines(got, theirs)
    f32 = matrix(ff_embed("--backend", C_NAME.get(device, device), "--", *SENTENCES).stdout)
    assert np.abs(got - f32).max() > 1e-4  # it did compute in half
    assert np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-5)


def test_padding_changes_nothing(model):
    batch = matrix(ff_embed("--", *SENTENCES).stdout)
    for i in (0, 6, 9):  # short sentences, padded to 33 tokens in the batch
        alone = matrix(ff_embed("--", SENTENCES[i]).stdout)
        assert cosines(alone, batch[i:i + 1])[0] >= 0.99999, SENTENCES[i]


def test_truncated_sentence_matches_pytorch(model, torch_model, tokenizer):
    long = "The quick brown fox jumps over the lazy dog, again and again. " * 30
    texts = [long, "and a short one"]
    got = matrix(ff_embed("--", *texts).stdout)
    assert cosines(got, torch_embeddings(torch_model, tokenizer, texts)).min() >= 0.9999


def test_python_example_matches_pytorch(model, torch_model, tokenizer):
    got = embed_py.embed(SENTENCES, model, "cpu_blas")
    assert cosines(got.astype(np.float64), torch_embeddings(torch_model, tokenizer, SENTENCES)).min() >= 0.9999
    out = subprocess.run([sys.executable, os.path.join(MINILM, "embed.py"), "--similarity", "a cat", "a dog"],
                         capture_output=True, text=True, check=True).stdout
    assert matrix(out).shape == (2, 2)


def test_matches_the_sentence_transformers_readme(model):
    """The library's own README shows these cosines for this model (4 decimals)."""
    sim = matrix(ff_embed("--similarity", "The weather is lovely today.", "It's so sunny outside!",
                          "He drove to the stadium.").stdout)
    assert np.allclose(sim, [[1, 0.6660, 0.1046], [0.6660, 1, 0.1411], [0.1046, 0.1411, 1]], atol=6e-5), sim


def test_similar_sentences_score_higher(model):
    texts = ["A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
             "A man is riding a horse.", "Someone is having a meal."]
    sim = matrix(ff_embed("--similarity", "--", *texts).stdout)
    assert sim.shape == (5, 5) and np.allclose(sim, sim.T, atol=1e-6) and np.allclose(np.diag(sim), 1, atol=1e-5)
    assert sim[0, 1] > 0.7 and sim[0, 4] > 0.5  # food ~ bread ~ meal
    assert sim[0, 1] > max(sim[0, 2], sim[0, 3]) + 0.3 and sim[0, 4] > sim[0, 2] + 0.3
    emb = matrix(ff_embed("--", *texts).stdout)
    assert np.allclose(emb @ emb.T, sim, atol=2e-6)
    # standard input: one sentence per line, the same numbers
    assert np.allclose(matrix(ff_embed(stdin="\n".join(texts) + "\n").stdout), emb, atol=1e-7)
