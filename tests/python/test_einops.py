"""Issue 46, part 5: einops (from PyPI: scripts/install-einops.sh, which `make test` runs) on
fusionflow tensors through the backend in fusionflow/_einops.py: rearrange, reduce, repeat,
pack, unpack and einsum, values and gradients against the same calls on PyTorch 1.13 tensors
(CI installs both; FF_REQUIRE_TORCH=1 makes their absence an error)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import fusionflow as ff
from conftest import DEVICES, make_close

if os.environ.get("FF_REQUIRE_TORCH"):
    import einops
    import torch
else:
    einops = pytest.importorskip("einops")
    torch = pytest.importorskip("torch")

close = make_close(1e-5)
X = np.random.default_rng(0).normal(size=(2, 3, 4, 6)).astype(np.float32)


def pair(device, data=X):
    return ff.tensor(data, device=device, requires_grad=True), torch.tensor(data, requires_grad=True)


def check_grads(got, want, x, tx, seed=1):
    """Values equal, then the gradient of a weighted sum of the result equal too."""
    close(got, want)
    w = np.random.default_rng(seed).normal(size=tuple(want.shape)).astype(np.float32)
    (got * ff.tensor(w, device=x.device)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    close(x.grad, tx.grad)


@pytest.mark.parametrize("pattern,lengths", [
    ("b c h w -> b (h w) c", {}),
    ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", {"p1": 2, "p2": 3}),
    ("b c h w -> (b c) w h", {}),
    ("b c h (w k) -> k b c h w", {"k": 2}),
    ("b ... w -> w ... b", {}),
    ("b c h w -> b 1 c h w", {})])
@pytest.mark.parametrize("device", DEVICES)
def test_rearrange(pattern, lengths, device):
    x, tx = pair(device)
    check_grads(einops.rearrange(x, pattern, **lengths), einops.rearrange(tx, pattern, **lengths), x, tx)


@pytest.mark.parametrize("pattern,op,lengths", [
    ("b c h w -> b c", "mean", {}),
    ("b c (h h2) (w w2) -> b c h w", "max", {"h2": 2, "w2": 2}),
    ("b c h w -> c", "sum", {}),
    ("b c h w -> b () h ()", "min", {}),
    ("b c h w -> b h w", "prod", {})])
@pytest.mark.parametrize("device", DEVICES)
def test_reduce(pattern, op, lengths, device):
    x, tx = pair(device)
    check_grads(einops.reduce(x, pattern, op, **lengths), einops.reduce(tx, pattern, op, **lengths), x, tx)


@pytest.mark.parametrize("pattern,lengths", [
    ("b c h w -> b c h w r", {"r": 3}),
    ("b c h w -> (r b) c h w", {"r": 2}),
    ("b c h w -> b c (h h2) (w w2)", {"h2": 2, "w2": 2})])
@pytest.mark.parametrize("device", DEVICES)
def test_repeat(pattern, lengths, device):
    x, tx = pair(device)
    check_grads(einops.repeat(x, pattern, **lengths), einops.repeat(tx, pattern, **lengths), x, tx)


@pytest.mark.parametrize("device", DEVICES)
def test_pack_and_unpack(device):
    x, tx = pair(device)
    cls_tok, tcls = pair(device, X[:, 0, 0, :])  # (b, d) next to (b, n, d): ViT's class token
    tokens = einops.rearrange(x, "b c h w -> b (c h) w")
    ttokens = einops.rearrange(tx, "b c h w -> b (c h) w")
    packed, shapes = einops.pack([cls_tok, tokens], "b * d")
    tpacked, tshapes = einops.pack([tcls, ttokens], "b * d")
    assert shapes == tshapes and tuple(packed.shape) == tuple(tpacked.shape) == (2, 13, 6)
    close(packed, tpacked)
    first, rest = einops.unpack(packed * 2, shapes, "b * d")
    tfirst, trest = einops.unpack(tpacked * 2, tshapes, "b * d")
    assert tuple(first.shape) == (2, 6) and tuple(rest.shape) == (2, 12, 6)
    loss = (first * first).sum() + rest.sum()
    tloss = (tfirst * tfirst).sum() + trest.sum()
    close(loss, tloss)
    loss.backward()
    tloss.backward()
    close(x.grad, tx.grad)
    close(cls_tok.grad, tcls.grad)


@pytest.mark.parametrize("pattern", ["b c h w, b c h w -> b c", "b c h w, b d h w -> b c d h"])
@pytest.mark.parametrize("device", DEVICES)
def test_einsum(pattern, device):
    x, tx = pair(device)
    y, ty = pair(device, X[:, ::-1].copy())
    got, want = einops.einsum(x, y, pattern), einops.einsum(tx, ty, pattern)
    close(got, want, 1e-4)
    got.sum().backward()
    want.sum().backward()
    close(x.grad, tx.grad, 1e-4)
    close(y.grad, ty.grad, 1e-4)


def test_parse_shape_and_asnumpy_and_errors():
    x = ff.zeros(2, 3, 5)
    assert einops.parse_shape(x, "b _ w") == {"b": 2, "w": 5}
    assert isinstance(einops.asnumpy(x), np.ndarray)
    with pytest.raises(einops.EinopsError):
        einops.rearrange(x, "b c -> c b")  # einops' own error, as on torch tensors
    with pytest.raises(einops.EinopsError):
        einops.rearrange(torch.zeros(2, 3, 5), "b c -> c b")


def test_einops_found_whichever_is_imported_first():
    """einops imported before fusionflow, or after (the usual `import torch` first): the
    backend is there either way, and fusionflow alone does not import einops."""
    code = ("import sys; {first}; {second}; import gc; gc.collect(); from einops import rearrange; "
            "x = fusionflow.ones(2, 3); print(tuple(rearrange(x, 'a b -> b a').shape))")
    env = dict(os.environ)
    for first, second in (("import einops", "import fusionflow"), ("import fusionflow", "import einops")):
        out = subprocess.run([sys.executable, "-c", code.format(first=first, second=second)], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "(3, 2)"
    alone = subprocess.run([sys.executable, "-c", "import fusionflow, sys; print('einops' in sys.modules)"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert alone.stdout.strip() == "False", alone.stderr
