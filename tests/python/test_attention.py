"""F.scaled_dot_product_attention against PyTorch 1.13, which has no SDPA: its reference is
the composition softmax(q @ k^T * scale + mask) @ v written in torch ops. Values and the
gradients of q, k and v, f32 and f64, bool and additive masks, causal (the top-left
triangle, also for Tq != Tk), broadcast leading dims, batch-first 3-D inputs, on every
backend built, through the attention entry and through the forced composition."""
import math
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F

try:
    import torch
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES  # cpu, and cpu_blas and opencl when they were built

needs_torch = pytest.mark.skipif(torch is None, reason="python3-torch is not installed")


def torch_sdpa(q, k, v, mask=None, causal=False, scale=None):
    """PyTorch 2's documented reference implementation, in 1.13's ops."""
    s = q @ k.transpose(-2, -1) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if causal:
        vis = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        s = s.masked_fill(~vis, float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, dim=-1) @ v


# (name, q shape, k shape, v shape, mask: None | ("bool" | "add", shape), causal)
CASES = [
    ("plain", (2, 3, 7, 8), (2, 3, 9, 8), (2, 3, 9, 5), None, False),
    ("causal", (2, 2, 9, 16), (2, 2, 9, 16), (2, 2, 9, 16), None, True),
    ("causal_tq_lt_tk", (1, 2, 5, 8), (1, 2, 11, 8), (1, 2, 11, 8), None, True),
    ("causal_tq_gt_tk", (1, 2, 11, 8), (1, 2, 4, 8), (1, 2, 4, 8), None, True),
    ("bool_over_batch", (2, 3, 6, 8), (2, 3, 7, 8), (2, 3, 7, 8), ("bool", (1, 3, 6, 7)), False),
    ("add_over_heads", (2, 3, 6, 8), (2, 3, 7, 8), (2, 3, 7, 8), ("add", (2, 1, 6, 7)), False),
    ("add_2d", (2, 3, 6, 8), (2, 3, 7, 8), (2, 3, 7, 8), ("add", (6, 7)), False),
    ("kv_over_heads", (2, 4, 6, 8), (2, 1, 7, 8), (2, 1, 7, 8), None, False),
    ("batch_first_3d", (4, 6, 8), (4, 7, 8), (4, 7, 3), ("bool", (6, 7)), False),
    ("q_over_batch", (3, 2, 5, 8), (2, 5, 8), (5, 8), None, True),
    # masks that broadcast over the queries too (a key padding mask [N, 1, 1, S]; 1-D)
    ("add_key_padding", (2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8), ("add", (2, 1, 1, 7)), False),
    ("bool_key_padding", (2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8), ("bool", (2, 1, 1, 7)), False),
    ("add_1d", (2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8), ("add", (7,)), False),
    ("bool_per_query", (2, 4, 5, 8), (2, 4, 7, 8), (2, 4, 7, 8), ("bool", (5, 1)), False),
    # 3 leading dims whose broadcast k cannot fold into [B, H] as a view: copied
    ("five_d_folded_copy", (2, 3, 2, 5, 8), (3, 1, 6, 8), (3, 1, 6, 4), ("add", (2, 1, 1, 5, 6)), False),
]


def _inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.uniform(-1, 1, s) for s in case[1:4])
    m = None
    if case[4] is not None:
        kind, shape = case[4]
        if kind == "bool":
            m = rng.uniform(0, 1, shape) < 0.7
            m[..., 0] = True  # no empty rows here: PyTorch 1.13 gives them NaN
        else:
            m = rng.uniform(-2, 2, shape)
    return q, k, v, m


def _run(lib, case, dtype, device=None):
    q, k, v, m = _inputs(case)
    if lib is ff:
        mk = lambda a: ff.tensor(a, dtype=dtype, device=device, requires_grad=True)  # noqa: E731
        mt = None if m is None else ff.tensor(m, dtype="bool" if m.dtype == bool else dtype, device=device)
        fq, fk, fv = mk(q), mk(k), mk(v)
        o = F.scaled_dot_product_attention(fq, fk, fv, attn_mask=mt, is_causal=case[5])
    else:
        tdt = getattr(torch, dtype)
        mk = lambda a: torch.tensor(a, dtype=tdt, requires_grad=True)  # noqa: E731
        mt = None if m is None else torch.tensor(m, dtype=torch.bool if m.dtype == bool else tdt)
        fq, fk, fv = mk(q), mk(k), mk(v)
        o = torch_sdpa(fq, fk, fv, mt, case[5])
    w = np.random.default_rng(1).uniform(-1, 1, tuple(o.shape))
    (o * (ff.tensor(w, dtype=dtype, device=device) if lib is ff else torch.tensor(w, dtype=tdt))).sum().backward()
    return [np.asarray(t.detach().numpy() if lib is torch else t.numpy(), dtype=np.float64)
            for t in (o, fq.grad, fk.grad, fv.grad)]


@needs_torch
@pytest.mark.parametrize("path", ["entry", "compose"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_matches_torch_composition(device, case, dtype, path, force_compose):
    if path == "compose":
        force_compose("attention")
    ours, theirs = _run(ff, case, dtype, device), _run(torch, case, dtype)
    tol = 2e-5 if dtype == "float32" else 1e-11
    for name, a, b in zip(("o", "grad q", "grad k", "grad v"), ours, theirs):
        assert a.shape == b.shape, (name, a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_fully_masked_rows_give_zero(device):
    """PyTorch 2.5's rule (1.13's composition gives NaN): o = 0 and no gradient."""
    q = ff.tensor(np.ones((1, 3, 4)), dtype="float32", device=device, requires_grad=True)
    k = ff.tensor(np.ones((1, 5, 4)), dtype="float32", device=device)
    v = ff.tensor(np.arange(20.0).reshape(1, 5, 4), dtype="float32", device=device)
    m = ff.tensor(np.array([[True] * 5, [False] * 5, [False, True, False, False, False]]), device=device)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    o.sum().backward()
    on, gq = o.numpy(), q.grad.numpy()
    assert np.all(on[0, 1] == 0) and np.all(gq[0, 1] == 0)
    np.testing.assert_allclose(on[0, 0], np.arange(20.0).reshape(5, 4).mean(0), rtol=1e-6)
    np.testing.assert_allclose(on[0, 2], [4, 5, 6, 7])


def test_scale_and_dropout():
    rng = np.random.default_rng(3)
    q, k, v = (ff.tensor(rng.uniform(-1, 1, (2, 5, 4)), dtype="float64") for _ in range(3))
    a = F.scaled_dot_product_attention(q, k, v, scale=0.3).numpy()
    qn, kn, vn = (t.numpy() for t in (q, k, v))
    s = qn @ kn.transpose(0, 2, 1) * 0.3
    p = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(a, (p / p.sum(-1, keepdims=True)) @ vn, rtol=1e-12)
    d = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    assert d.shape == a.shape and not np.allclose(d, F.scaled_dot_product_attention(q, k, v).numpy())


def test_errors_name_the_function():
    q = ff.randn(2, 5, 4)
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention.*key"):
        F.scaled_dot_product_attention(q, ff.randn(2, 5, 3), ff.randn(2, 5, 4))
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention.*dtype"):
        F.scaled_dot_product_attention(q, ff.randn(2, 5, 4, dtype="float64"), ff.randn(2, 5, 4))
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention.*broadcast"):
        F.scaled_dot_product_attention(q, ff.randn(3, 5, 4), ff.randn(3, 5, 4))
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention.*is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ff.ones(5, 5, dtype="bool"), is_causal=True)
    with pytest.raises(RuntimeError, match="scaled_dot_product_attention.*attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ff.ones(4, 5, dtype="bool"))
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=2.0)
    with pytest.raises(TypeError, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(q, q, None)


def test_manual_seed_repeats_dropout():
    """F.dropout and attention's dropout draw their seeds from the default generator, so
    fusionflow.manual_seed repeats their masks (as torch.manual_seed does)."""
    x = ff.ones(4, 6, 8)

    def run(seed):
        ff.manual_seed(seed)
        return F.dropout(x, 0.5).numpy(), F.scaled_dot_product_attention(x, x, x, dropout_p=0.5).numpy()

    a1, b1 = run(3)
    a2, b2 = run(3)
    a3, b3 = run(4)
    assert (a1 == a2).all() and (b1 == b2).all()
    assert not (a1 == a3).all() and not (b1 == b3).all()


# Dropout inside the entry (backend_abi.h's rule): the mask is F.dropout's over the
# [B, H, Tq, Tk] weights with the same seed, so PyTorch's composition with that mask is
# the reference, and the entry must equal the forced composition.
DROP_CASES = [c for c in CASES if c[0] in ("plain", "causal", "causal_tq_lt_tk", "bool_over_batch", "add_over_heads",
                                           "kv_over_heads", "batch_first_3d", "q_over_batch")]
# v broadcasts past q and k: one mask serves many heads, which the entry's [B, H, Tq, Tk]
# order cannot say, so the core composes
DROP_CASES.append(("v_over_batch", (2, 5, 8), (2, 7, 8), (3, 2, 7, 4), None, False))


def _dropout_mask(o_shape, tk, p, seed, device):
    """F.dropout's keep-mask (0 or 1 / (1 - p)) over the weights' shape [..., Tq, Tk]."""
    ff.manual_seed(seed)
    ones = ff.ones(*o_shape[:-1], tk, dtype="float64", device=device)
    return F.dropout(ones, p).numpy()


def _run_dropout(lib, case, p, seed, device=None, mask=None):
    q, k, v, m = _inputs(case)
    if lib is ff:
        mk = lambda a: ff.tensor(a, dtype="float64", device=device, requires_grad=True)  # noqa: E731
        mt = None if m is None else ff.tensor(m, dtype="bool" if m.dtype == bool else "float64", device=device)
        fq, fk, fv = mk(q), mk(k), mk(v)
        ff.manual_seed(seed)
        o = F.scaled_dot_product_attention(fq, fk, fv, attn_mask=mt, dropout_p=p, is_causal=case[5])
    else:
        mk = lambda a: torch.tensor(a, dtype=torch.float64, requires_grad=True)  # noqa: E731
        mt = None if m is None else torch.tensor(m)
        fq, fk, fv = mk(q), mk(k), mk(v)
        s = fq @ fk.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if case[5]:
            s = s.masked_fill(~torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril(), float("-inf"))
        if mt is not None:
            s = s.masked_fill(~mt, float("-inf")) if mt.dtype == torch.bool else s + mt
        o = (torch.softmax(s, dim=-1) * torch.tensor(mask)) @ fv
    w = np.random.default_rng(1).uniform(-1, 1, tuple(o.shape))
    (o * (ff.tensor(w, dtype="float64", device=device) if lib is ff else torch.tensor(w))).sum().backward()
    return [np.asarray(t.detach().numpy() if lib is torch else t.numpy()) for t in (o, fq.grad, fk.grad, fv.grad)]


@needs_torch
@pytest.mark.parametrize("case", DROP_CASES, ids=[c[0] for c in DROP_CASES])
@pytest.mark.parametrize("device", DEVICES)
def test_dropout_matches_torch_with_the_same_mask(device, case, force_compose):
    """The weights' shape is q's, k's (and the mask's) leading dims broadcast + [Tq, Tk]."""
    q, k, v, m = _inputs(case)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], () if m is None or m.ndim < 2 else m.shape[:-2])
    drop = _dropout_mask(lead + (q.shape[-2], q.shape[-1]), k.shape[-2], 0.25, 11, device)
    assert 0 < (drop == 0).mean() < 0.6  # some dropped, most kept
    theirs = _run_dropout(torch, case, 0.25, 11, mask=drop)
    entry = _run_dropout(ff, case, 0.25, 11, device)
    force_compose("attention")
    composed = _run_dropout(ff, case, 0.25, 11, device)
    for name, a, b, c in zip(("o", "grad q", "grad k", "grad v"), entry, composed, theirs):
        np.testing.assert_allclose(a, c, rtol=1e-11, atol=1e-11, err_msg=name + " (entry vs torch)")
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11, err_msg=name + " (entry vs composition)")


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_entry_equals_composition_f32(device, force_compose):
    rng = np.random.default_rng(5)
    q, k, v = (rng.uniform(-1, 1, (2, 3, 33, 16)) for _ in range(3))

    def run():
        t = [ff.tensor(a, dtype="float32", device=device, requires_grad=True) for a in (q, k, v)]
        ff.manual_seed(21)
        o = F.scaled_dot_product_attention(*t, dropout_p=0.1, is_causal=True)
        (o * o).sum().backward()
        return [o.detach().numpy()] + [x.grad.numpy() for x in t]
    entry = run()
    force_compose("attention")
    for name, a, b in zip(("o", "grad q", "grad k", "grad v"), entry, run()):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=name)


# A training step's peak on cpu_blas, in a fresh process (the allocator's peak is a
# high-water mark): sdpa with dropout forward and backward, less what was in use before.
_PEAK_SCRIPT = r"""
import sys, time, ctypes
import fusionflow as ff, fusionflow.nn.functional as F
from fusionflow._lib import lib
B, H, T, D, compose = (int(a) for a in sys.argv[1:6])
if compose:
    lib.ff_ops_force_compose(20, True)
be = ff._backend.backend_handle("cpu_blas")
qkv = [ff.randn(B, H, T, D, device="cpu_blas", requires_grad=True) for _ in range(3)]
v = [ctypes.c_size_t(0) for _ in range(3)]
lib.ff_backend_memory_stats(be, *(ctypes.byref(x) for x in v))
before = v[0].value
t0 = time.perf_counter()
o = F.scaled_dot_product_attention(*qkv, dropout_p=0.1, is_causal=True)
o.sum().backward()
dt = time.perf_counter() - t0
lib.ff_backend_memory_stats(be, *(ctypes.byref(x) for x in v))
print(v[2].value - before, dt)
"""


def training_step_peak(b, h, t, d, compose):
    """(peak bytes above the inputs, seconds) of one causal step with dropout 0.1."""
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "python"))
    out = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, str(b), str(h), str(t), str(d), str(int(compose))],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), float(out[1])


@pytest.mark.skipif("cpu_blas" not in DEVICES, reason="cpu_blas was not built")
def test_dropout_training_step_memory_is_linear_in_t():
    """With dropout the entry keeps O(T) memory; the composition holds several [T, T]s."""
    b, h, t, d = 1, 2, 1024, 32
    scores = b * h * t * t * 4  # one f32 score-sized tensor
    entry, _ = training_step_peak(b, h, t, d, False)
    composed, _ = training_step_peak(b, h, t, d, True)
    assert composed > 3 * scores, composed
    assert entry < scores / 4, entry
