"""Indexed assignment as PyTorch users write it: t[mask] = v, t[idx] = v, mixed basic and
advanced keys, masked_fill, index_put_, index_add_, index_copy_, masked_scatter_; values
and gradients against PyTorch (which CI installs; FF_REQUIRE_TORCH=1 makes its absence an
error) on random shapes, index patterns and duplicates, on cpu and cpu_blas. Without
PyTorch the same programs run against NumPy's assignment where NumPy has one."""
import os

import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES, make_close  # DEVICES: cpu, and cpu_blas when it was built


close = make_close(1e-6, equal_nan=True)


def to_torch_key(key):
    conv = []
    for k in key:
        if isinstance(k, np.ndarray):
            conv.append(torch.from_numpy(k.copy()))
        else:
            conv.append(k)
    return tuple(conv)


def np_view_key(arr, key):
    """PyTorch applies integer keys as basic indexing first (NumPy counts them as advanced
    when an index array is present): the NumPy view and the rest of the key that match."""
    if Ellipsis in [k for k in key if not isinstance(k, np.ndarray)] or not any(isinstance(k, int) for k in key):
        return arr, key
    view, rest, dim = arr, [], 0
    for k in key:
        if isinstance(k, int):
            view = view[(slice(None),) * dim + (k,)]
        else:
            rest.append(k)
            dim += 1
    return view, tuple(rest)


def to_ff_key(key, device):
    return tuple(ff.tensor(k, device=device) if isinstance(k, np.ndarray) else k for k in key)


# Keys over a [4, 5, 6] tensor: (key, has duplicates)
KEYS = [
    ((np.array([0, 2, 3]),), False),
    ((np.array([1, 1, 3]),), True),
    ((slice(1, None), np.array([0, 4, -1])), False),
    ((np.array([0, 3]), slice(None), np.array([1, 5])), False),
    ((Ellipsis, np.array([[0, 1], [2, 2]])), True),
    ((np.array([[0], [3]]), np.array([1, 2, 4])), False),
    ((0, slice(None), np.array([2, 3])), False),
    ((np.array([True, False, True, True]),), False),
    ((slice(None), np.array([True, False, True, False, True])), False),
    ((np.random.default_rng(0).random((4, 5)) > 0.5,), False),
    ((None, np.array([1, 2]), slice(0, 6, 2)), False),
    ((np.array([3, 0]), 1, np.array([0, 5])), False),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(KEYS)))
def test_setitem_and_getitem_match_torch(device, case):
    key, dup = KEYS[case]
    rng = np.random.default_rng(case)
    base = rng.normal(size=(4, 5, 6)).astype(np.float32)
    t = ff.tensor(base, device=device)
    fk = to_ff_key(key, device)
    got = t[fk]  # reading through the same key
    shape = tuple(got.shape)
    if torch is not None:
        tt = torch.from_numpy(base.copy())
        tk = to_torch_key(key)
        close(got, tt[tk])
    else:
        bv, bk = np_view_key(base, key)
        close(got, bv[bk])
    vals = rng.normal(size=shape).astype(np.float32)
    if not dup:
        t[fk] = ff.tensor(vals, device=device)
        want = base.copy()
        wv, wk = np_view_key(want, key)
        wv[wk] = vals
        close(t, want)
        if torch is not None:
            tt[tk] = torch.from_numpy(vals)
            close(t, tt)
    # a scalar, broadcast values, and accumulate with duplicates
    t2 = ff.tensor(base, device=device)
    t2[fk] = 7.5
    want = base.copy()
    want[key] = 7.5
    close(t2, want)


@pytest.mark.parametrize("device", DEVICES)
def test_index_put_accumulate_duplicates(device):
    rng = np.random.default_rng(3)
    for trial in range(20):
        n, m = rng.integers(1, 6), rng.integers(1, 4)
        base = rng.normal(size=(n, m)).astype(np.float64)
        idx = rng.integers(-n, n, size=rng.integers(0, 12))
        vals = rng.normal(size=(len(idx), m))
        t = ff.tensor(base, device=device)
        t.index_put_((ff.tensor(idx, device=device),), ff.tensor(vals, device=device), accumulate=True)
        want = base.copy()
        np.add.at(want, idx, vals)
        close(t, want, 1e-12)
        # without accumulate, the last occurrence wins (NumPy's assignment)
        t = ff.tensor(base, device=device)
        t.index_put_((ff.tensor(idx, device=device),), ff.tensor(vals, device=device))
        want = base.copy()
        want[idx] = vals
        close(t, want, 1e-12)
        if torch is not None:
            tt = torch.from_numpy(base.copy())
            tt.index_put_((torch.from_numpy(idx),), torch.from_numpy(vals), accumulate=True)
            want = base.copy()
            np.add.at(want, idx, vals)
            close(tt, want, 1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_gradients_match_torch(device):
    rng = np.random.default_rng(7)
    base = rng.normal(size=(4, 5)).astype(np.float64)
    w = rng.normal(size=(2, 5)).astype(np.float64)
    coef = rng.normal(size=(4, 5))
    for key in [(np.array([1, 3]),), (np.array([0, 0]),), (np.array([True, False, False, True]),)]:
        x = ff.tensor(base, device=device, requires_grad=True)
        v = ff.tensor(w, device=device, requires_grad=True)
        y = x * 2.0  # a non-leaf with history
        y[to_ff_key(key, device)] = v
        (y * ff.tensor(coef, device=device)).sum().backward()
        if torch is not None:
            tx = torch.tensor(base, requires_grad=True)
            tv = torch.tensor(w, requires_grad=True)
            ty = tx * 2.0
            ty[to_torch_key(key)] = tv
            (ty * torch.from_numpy(coef)).sum().backward()
            close(y, ty, 1e-12)
            close(x.grad, tx.grad, 1e-12)
            close(v.grad, tv.grad, 1e-12)
        else:  # d/dx: 2 * coef where not overwritten; d/dv: coef at the rows
            mask = np.ones((4, 5))
            mask[key] = 0
            close(x.grad, 2 * coef * mask, 1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_masked_fill_and_friends_match_torch(device):
    rng = np.random.default_rng(11)
    base = rng.normal(size=(3, 4)).astype(np.float32)
    mask = rng.random((3, 4)) > 0.5
    col_mask = np.array([True, False, True, False])
    t = ff.tensor(base, device=device)
    close(t.masked_fill(ff.tensor(mask, device=device), -1.0), np.where(mask, -1.0, base))
    close(t.masked_fill(ff.tensor(col_mask, device=device), 0.0), np.where(col_mask, 0.0, base))  # broadcast
    t[t > 0.5] = 0.0
    close(t, np.where(base > 0.5, 0.0, base))
    src = rng.normal(size=(3, 4)).astype(np.float32)
    ms = ff.tensor(base, device=device).masked_scatter(ff.tensor(mask, device=device), ff.tensor(src, device=device))
    want = base.copy()
    want[mask] = src.reshape(-1)[:mask.sum()]
    close(ms, want)
    idx = np.array([2, 0])
    s = rng.normal(size=(3, 2)).astype(np.float32)
    ia = ff.tensor(base, device=device).index_add(1, ff.tensor(idx, device=device), ff.tensor(s, device=device), alpha=2)
    want = base.copy()
    want[:, idx] += 2 * s
    close(ia, want)
    ic = ff.tensor(base, device=device)
    ic.index_copy_(1, ff.tensor(idx, device=device), ff.tensor(s, device=device))
    want = base.copy()
    want[:, idx] = s
    close(ic, want)
    if torch is not None:
        tb = torch.from_numpy(base.copy())
        close(tb.masked_fill(torch.from_numpy(mask), -1.0), np.where(mask, -1.0, base))
        close(tb.masked_scatter(torch.from_numpy(mask), torch.from_numpy(src)), ms)
        close(tb.index_add(1, torch.from_numpy(idx), torch.from_numpy(s), alpha=2), ia)
        close(tb.clone().index_copy_(1, torch.from_numpy(idx), torch.from_numpy(s)), ic)


@pytest.mark.parametrize("device", DEVICES)
def test_masked_fill_gradient(device):
    x = ff.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    m = ff.tensor([[True, False], [False, True]], device=device)
    y = x.masked_fill(m, 0.0)
    (y * y).sum().backward()
    close(x.grad, [[0.0, 4.0], [6.0, 0.0]])


@pytest.mark.parametrize("device", DEVICES)
def test_errors_name_the_problem_and_write_nothing(device):
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ff.tensor(base, device=device)
    with pytest.raises(IndexError, match=r"index 5 is out of bounds for dimension 0 with size 3"):
        t[ff.tensor([0, 5], device=device)] = 1.0
    with pytest.raises(IndexError, match=r"mask of shape \[2, 4\] does not match the indexed dims \[3, 4\]"):
        t[ff.tensor(np.ones((2, 4), dtype=bool), device=device)] = 1.0
    with pytest.raises(ValueError, match=r"values of shape \[3\] do not broadcast to the indexed shape \[2, 4\]"):
        t[ff.tensor([0, 1], device=device)] = ff.tensor([1.0, 2.0, 3.0], device=device)
    close(t, base)  # nothing written
    leaf = ff.tensor(base, device=device, requires_grad=True)
    with pytest.raises(ff.FusionFlowError, match="leaf"):
        leaf[ff.tensor([0], device=device)] = 1.0


def test_int_tensor_assignment_and_one_hot():
    labels = ff.tensor([2, 0, 1])
    oh = ff.zeros(3, 4)
    oh[ff.arange(3), labels] = 1.0
    close(oh, np.eye(4, dtype=np.float32)[[2, 0, 1]])
    ids = ff.tensor([5, 6, 7], dtype=ff.int64)
    ids[ids > 5] = -1
    assert ids.tolist() == [5, -1, -1]


@pytest.mark.parametrize("device", DEVICES)
def test_version_counter_catches_a_saved_tensor_written_in_place(device):
    x = ff.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = x.exp()  # exp saves its output for backward
    y[ff.tensor([True, False, True], device=device)] = 0.0
    with pytest.raises(ff.FusionFlowError, match="modified"):
        y.sum().backward()
    if torch is not None:
        tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        ty = tx.exp()
        ty[torch.tensor([True, False, True])] = 0.0
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            ty.sum().backward()
    # a tensor whose saved values are not needed is fine: y = 2x, then y[mask] = 0
    z = x * 2.0
    z[ff.tensor([True, False, False], device=device)] = 0.0
    z.sum().backward()
    assert x.grad.tolist() == [0.0, 2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_range_is_an_advanced_index_as_in_torch(device):
    """forward-forward's x[range(n), y] = ...: a range indexes like the list of its ints."""
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ff.tensor(rows, device=device)
    x[range(3), ff.tensor([1, 2, 0], device=device)] = -1.0
    assert np.array_equal(x[range(1, 3)].numpy(), x.numpy()[1:3]) and x[range(0)].shape == (0, 4)
    if torch is not None:
        tx = torch.tensor(rows)
        tx[range(3), torch.tensor([1, 2, 0])] = -1.0
        assert np.array_equal(x.numpy(), tx.numpy())
        assert np.array_equal(x[range(2, 0, -1), 1].numpy(), tx[range(2, 0, -1), 1].numpy())
