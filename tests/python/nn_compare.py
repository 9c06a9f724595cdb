"""Shared by the test_nn_*.py files: build a module in fusionflow and in torch 1.13 from the
same constructor call, copy torch's weights into ours through load_state_dict, and compare
repr, state_dict keys, outputs, input gradients and parameter gradients."""
import numpy as np
import torch

import fusionflow as ff
from fusionflow import nn


def arr(shape, seed, kind="normal"):
    return np.asarray(_arr(shape, seed, kind), dtype=np.float32)


def _arr(shape, seed, kind):
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "positive":
        return rng.uniform(0.1, 2.0, shape).astype(np.float32)
    if kind == "prob":
        return rng.uniform(0.05, 0.95, shape).astype(np.float32)
    if kind == "sign":
        return np.where(rng.random(shape) < 0.5, -1.0, 1.0).astype(np.float32)
    if kind == "binary":
        return (rng.random(shape) < 0.5).astype(np.float32)
    raise ValueError(kind)


def as_pair(a, grad):
    if isinstance(a, np.generic):
        a = np.asarray(a)
    if isinstance(a, np.ndarray):
        rg = grad and a.dtype.kind == "f"
        return ff.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg)
    return a, a


def compare_module(name, args=(), kwargs=None, inputs=(), tol=1e-5, train=None, check_repr=True, grad=True):
    """nn.<name>(*args, **kwargs) in both libraries on the same inputs (numpy arrays, or
    other values passed as they are)."""
    kwargs = kwargs or {}
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(nn, name)(*args, **kwargs)
    if train is not None:
        theirs.train(train)
        ours.train(train)
    if check_repr:
        assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert tuple(a.shape) == tuple(b.shape), k
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    pairs = [as_pair(a, grad) for a in inputs]
    y = ours(*[p[0] for p in pairs])
    ty = theirs(*[p[1] for p in pairs])
    compare_outputs(y, ty, pairs, list(ours.named_parameters()), dict(theirs.named_parameters()), tol, grad)
    return ours, theirs


def compare_fn(name, inputs, kwargs=None, tol=1e-5, grad=True, ngrad=None):
    """F.<name>(*inputs, **kwargs) in both; the first ngrad inputs (all by default) require
    grad."""
    kwargs = kwargs or {}
    ngrad = len(inputs) if ngrad is None else ngrad
    pairs = [as_pair(a, grad and i < ngrad) for i, a in enumerate(inputs)]
    y = getattr(nn.functional, name)(*[p[0] for p in pairs], **kwargs)
    ty = getattr(torch.nn.functional, name)(*[p[1] for p in pairs], **kwargs)
    compare_outputs(y, ty, pairs, [], {}, tol, grad)


def compare_outputs(y, ty, pairs, params, tparams, tol, grad):
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=tol, atol=tol)
    if not grad or not ty.requires_grad:
        return
    g = np.random.default_rng(99).standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * ff.tensor(g)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    for a, b in pairs:
        if isinstance(b, torch.Tensor) and b.requires_grad:
            assert a.grad is not None
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=tol, atol=tol)
    for k, p in params:
        tp = tparams[k]
        if tp.grad is None:
            assert p.grad is None or not p.grad.numpy().any(), k
        else:
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=tol, atol=tol, err_msg=k)
