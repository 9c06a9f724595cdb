"""Tensor.register_hook and retain_grad against PyTorch 1.13: a hook sees the tensor's
whole gradient (every use summed, also uses made before it was registered), may replace
it, runs in registration order, in backward and autograd.grad; retain_grad keeps a
non-leaf's gradient (accumulated), in its place among the hooks."""
import numpy as np
import pytest
import torch

import fusionflow as ff


def scenario(lib, *, retain_first):
    x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(("x", g.detach().numpy().copy())))
    y = x * 2
    early = (y ** 3).sum()  # a use before the hooks: still part of y's gradient
    if retain_first:
        y.retain_grad()
    y.register_hook(lambda g: seen.append(("y", g.detach().numpy().copy())))
    y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: g - 1)
    if not retain_first:
        y.retain_grad()
    (early + (y * y).sum() + y.sum()).backward(retain_graph=True)
    (y.sum() * 3).backward()  # a second pass accumulates y.grad
    return x.grad.numpy().copy(), y.grad.numpy().copy(), seen, y.retains_grad, x.retains_grad


@pytest.mark.parametrize("retain_first", [True, False])
def test_hooks_and_retain_grad_match_torch(retain_first):
    gx, gy, seen, ry, rx = scenario(ff, retain_first=retain_first)
    tx, ty, tseen, try_, trx = scenario(torch, retain_first=retain_first)
    np.testing.assert_allclose(gx, tx, rtol=1e-6)
    np.testing.assert_allclose(gy, ty, rtol=1e-6)
    assert [n for n, _ in seen] == [n for n, _ in tseen]
    for (_, a), (_, b) in zip(seen, tseen):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert (ry, rx) == (try_, trx) == (True, False)


def test_leaf_hook_replaces_what_reaches_grad_and_remove():
    for lib in (ff, torch):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        h = w.register_hook(lambda g: g.clamp(max=1.0))
        (w * w).sum().backward()
        assert w.grad.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
        h.remove()
        w.grad = None
        (w * w).sum().backward()
        assert w.grad.numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]


def test_hooks_run_in_autograd_grad():
    for lib in (ff, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        y.register_hook(lambda g: g * 0 + 5)
        (gx,) = lib.autograd.grad(y.sum(), [x])
        assert gx.numpy().tolist() == [10.0, 20.0]


def test_errors():
    x = ff.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        x.register_hook(lambda g: g)
    with pytest.raises(ff.FusionFlowError, match="does not require grad"):
        x.retain_grad()
    x = ff.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: ff.ones(3))
    with pytest.raises(ff.FusionFlowError, match="tensor hook returned a gradient of shape"):
        y.sum().backward()
    z = x * 3
    z.register_hook(lambda g: 1 / 0)
    with pytest.raises(ff.FusionFlowError):
        z.sum().backward()
    assert x.grad is None  # the failed passes left .grad alone
