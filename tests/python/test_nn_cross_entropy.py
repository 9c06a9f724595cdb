"""F.cross_entropy and F.nll_loss against torch 1.13: weight, ignore_index, reduction,
label_smoothing, K-dim inputs and probability targets; values and input gradients."""
import itertools

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from fusionflow import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def pair(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def check(ours, theirs, a, b, tol=2e-5):
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=tol, atol=tol)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)


SHAPES = [(5, 4), (4,), (3, 4, 2), (2, 3, 2, 3)]


@pytest.mark.parametrize("shape,reduction,weighted,ignore,smooth",
                         [(s, r, w, i, ls) for s, r, w, i, ls in itertools.product(
                             SHAPES, ["mean", "sum", "none"], [False, True], [False, True], [0.0, 0.2])])
def test_cross_entropy_class_targets(shape, reduction, weighted, ignore, smooth):
    a, b = pair(shape, 1)
    c = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = np.random.default_rng(2).integers(0, c, tshape)
    if ignore and t.ndim:
        t.reshape(-1)[::2] = 1  # class 1 is ignored below
        t.reshape(-1)[1] = 0
    w = np.linspace(0.5, 2.0, c).astype(np.float32) if weighted else None
    kw = dict(reduction=reduction, label_smoothing=smooth, ignore_index=1 if ignore else -100)
    ours = F.cross_entropy(a, ff.tensor(t), weight=None if w is None else ff.tensor(w), **kw)
    theirs = TF.cross_entropy(b, torch.tensor(t), weight=None if w is None else torch.tensor(w), **kw)
    check(ours, theirs, a, b)
    a.grad = None
    b.grad = None
    ours = F.nll_loss(a.log_softmax(1 if len(shape) > 1 else 0), ff.tensor(t),
                      weight=None if w is None else ff.tensor(w), reduction=reduction, ignore_index=kw["ignore_index"])
    theirs = TF.nll_loss(b.log_softmax(1 if len(shape) > 1 else 0), torch.tensor(t),
                         weight=None if w is None else torch.tensor(w), reduction=reduction,
                         ignore_index=kw["ignore_index"])
    check(ours, theirs, a, b)


@pytest.mark.parametrize("shape,reduction,weighted,smooth",
                         [(s, r, w, ls) for s, r, w, ls in itertools.product(
                             [(5, 4), (4,), (2, 3, 4)], ["mean", "sum", "none"], [False, True], [0.0, 0.3])])
def test_cross_entropy_probability_targets(shape, reduction, weighted, smooth):
    a, b = pair(shape, 3)
    c = shape[1] if len(shape) > 1 else shape[0]
    p = np.random.default_rng(4).random(shape).astype(np.float32)
    p /= p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    w = np.linspace(0.5, 2.0, c).astype(np.float32) if weighted else None
    ours = F.cross_entropy(a, ff.tensor(p), weight=None if w is None else ff.tensor(w), reduction=reduction,
                           label_smoothing=smooth)
    theirs = TF.cross_entropy(b, torch.tensor(p), weight=None if w is None else torch.tensor(w),
                              reduction=reduction, label_smoothing=smooth)
    check(ours, theirs, a, b)


def test_modules_carry_the_options_and_errors():
    a, b = pair((6, 3), 5)
    t = np.array([0, 2, 1, 2, 0, 1])
    w = np.array([1.0, 0.5, 3.0], np.float32)
    m = nn.CrossEntropyLoss(weight=ff.tensor(w), ignore_index=2, label_smoothing=0.1)
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=2, label_smoothing=0.1)
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight"]
    check(m(a, ff.tensor(t)), tm(b, torch.tensor(t)), a, b)
    nl = nn.NLLLoss(weight=ff.tensor(w), reduction="sum")
    np.testing.assert_allclose(nl(a, ff.tensor(t)).item(),
                               torch.nn.NLLLoss(weight=torch.tensor(w), reduction="sum")(b, torch.tensor(t)).item(),
                               rtol=1e-6)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(a, ff.tensor([0, 1, 2, 3, 0, 0]), reduction="sum")
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(a, ff.tensor([0, 1]))
    with pytest.raises(ValueError, match="reduction"):
        F.nll_loss(a, ff.tensor(t), reduction="avg")
    # everything ignored: 0 / 0 under mean, as torch
    assert np.isnan(F.cross_entropy(a, ff.tensor([2] * 6), ignore_index=2).item())
    tl = TF.cross_entropy(b, torch.tensor([2] * 6), ignore_index=2)
    assert np.isnan(tl.item())
    a.grad = None
    b.grad = None
    check(F.cross_entropy(a, ff.tensor([2] * 6), ignore_index=2, label_smoothing=0.1),
          TF.cross_entropy(b, torch.tensor([2] * 6), ignore_index=2, label_smoothing=0.1), a, b)
