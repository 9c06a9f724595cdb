"""The KV cache of examples/tiny_gpt.py (incremental decoding for examples/gpt_generate.py):
generating with the cache gives the logits of re-running the whole prefix each step, here
and in PyTorch on the same weights, and each cached step is one query over the cache
(F.scaled_dot_product_attention with Tq = 1), not the prefix recomputed."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F

from conftest import DEVICES  # cpu, and cpu_blas and opencl when they were built

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from tiny_gpt import generate, gpt_classes  # noqa: E402

LAYERS, HEADS, EMBD, BLOCK, VOCAB = 2, 2, 32, 24, 11


def tiny_model(lib, seed=0, device="cpu"):
    lib.manual_seed(seed)
    GPTConfig, GPT = gpt_classes(lib)
    model = GPT(GPTConfig(vocab_size=VOCAB, block_size=BLOCK, n_layer=LAYERS, n_head=HEADS, n_embd=EMBD))
    # larger weights than nanoGPT's 0.02 init, so that attention is far from uniform and the
    # greedy tokens depend on the context
    gen = np.random.default_rng(seed)
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(gen.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
    return model.to(device).eval()


def prompt(lib, batch=2, length=5, device="cpu"):
    return lib.tensor(np.random.default_rng(7).integers(0, VOCAB, (batch, length)), dtype=lib.int64, device=device)


@pytest.fixture
def attention_calls(monkeypatch):
    """The (q shape, k shape, is_causal, attn_mask given) of every F.scaled_dot_product_attention call."""
    calls, real = [], F.scaled_dot_product_attention

    def watched(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        calls.append((tuple(q.shape), tuple(k.shape), is_causal, attn_mask is not None))
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale)
    monkeypatch.setattr(F, "scaled_dot_product_attention", watched)
    return calls


@pytest.mark.parametrize("device", DEVICES)
def test_greedy_with_cache_equals_full_prefix(attention_calls, device):
    model, idx, steps = tiny_model(ff, device=device), prompt(ff, device=device), 12
    full, full_logits = generate(ff, model, idx, steps, use_cache=False)
    assert len(attention_calls) == LAYERS * steps
    assert all(q[2] == k[2] > 1 and causal for q, k, causal, _ in attention_calls)
    del attention_calls[:]
    cached, cached_logits = generate(ff, model, idx, steps, use_cache=True)
    assert cached.tolist() == full.tolist()
    assert full[0, 5:].tolist() != full[1, 5:].tolist()  # the tokens depend on the context
    for a, b in zip(cached_logits, full_logits):
        np.testing.assert_allclose(a.cpu().numpy(), b.cpu().numpy(), rtol=1e-4, atol=1e-5)

    # the prompt once (causal, Tq = Tk = 5), then one query per token over a growing cache
    assert len(attention_calls) == LAYERS * steps
    for n, (q, k, causal, masked) in enumerate(attention_calls):
        step = n // LAYERS
        if step == 0:
            assert (q[2], k[2], causal, masked) == (5, 5, True, False)
        else:
            assert (q[2], k[2], causal, masked) == (1, 5 + step, False, False), (n, q, k)
        assert q[:2] == k[:2] == (2, HEADS)


def test_cached_logits_equal_pytorch_full_prefix():
    torch = pytest.importorskip("torch")
    ours = tiny_model(ff)
    GPTConfig, GPT = gpt_classes(torch)
    theirs = GPT(GPTConfig(vocab_size=VOCAB, block_size=BLOCK, n_layer=LAYERS, n_head=HEADS, n_embd=EMBD)).eval()
    mine = dict(ours.named_parameters())
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.from_numpy(mine[name].detach().numpy().copy()))
    idx, steps = prompt(ff), 10
    cached, cached_logits = generate(ff, ours, idx, steps, use_cache=True)
    ref, ref_logits = generate(torch, theirs, torch.from_numpy(idx.numpy().copy()), steps, use_cache=False)
    assert cached.tolist() == ref.tolist()
    for a, b in zip(cached_logits, ref_logits):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_chunk_after_prefill_is_causal_within_the_chunk():
    model, idx = tiny_model(ff), prompt(ff, length=9)
    with ff.no_grad():
        want = model(idx)
        cache = model.new_cache(2)
        first = model(idx[:, :4], cache=cache)
        rest = model(idx[:, 4:], cache=cache)  # 5 queries at positions 4..8: the masked path
    assert cache.pos == 9
    np.testing.assert_allclose(ff.cat((first, rest), dim=1).numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_full_cache_refuses_and_keeps_its_contents():
    model = tiny_model(ff)
    with ff.no_grad():
        cache = model.new_cache(2)
        model(prompt(ff, length=BLOCK - 1), cache=cache)
        before = [k.numpy().copy() for k in cache.k]
        with pytest.raises(ValueError, match="block_size"):
            model(prompt(ff, length=2), cache=cache)
        extra = ff.ones(2, HEADS, 2, EMBD // HEADS)
        with pytest.raises(ValueError, match="do not fit"):
            cache.append(0, extra, extra)
    assert cache.pos == BLOCK - 1
    for k, b in zip(cache.k, before):
        np.testing.assert_array_equal(k.numpy(), b)


def test_generation_past_the_window_restarts_the_cache():
    model, idx = tiny_model(ff), prompt(ff)
    out, logits = generate(ff, model, idx, 2 * BLOCK, use_cache=True, greedy=False, top_k=3)
    assert tuple(out.shape) == (2, 5 + 2 * BLOCK) and len(logits) == 2 * BLOCK
    assert 0 <= out.min().item() and out.max().item() < VOCAB


def test_the_example_trains_and_samples():
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "gpt_generate.py")
    p = subprocess.run([sys.executable, example, "--steps", "3", "--chars", "40", "--block", "16", "--embd", "16",
                        "--batch", "4", "--prompt", "GNU"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("step    0  loss ") and "with the KV cache" in p.stdout.splitlines()[-1]
    rule = "-" * 60 + "\n"
    sample = p.stdout.split(rule)[1][:-1]  # between the two rules, less print's newline
    assert sample.startswith("GNU") and len(sample) == 3 + 40, repr(sample)
