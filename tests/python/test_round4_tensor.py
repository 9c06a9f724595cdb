"""Issue 47's tensor-surface findings (round 4), against PyTorch 1.13 (set FF_REQUIRE_TORCH=1
to make its absence an error): `p.data = t` keeps the grad, identity and hooks (so
nn.utils.vector_to_parameters keeps gradients) and `.data` aliases; the methods that were
missing or failed (std_mean, var_mean, vander, round(decimals=), is_floating_point(), bf16
signbit / tolist / cummin / copysign, integer add_/sub_ with alpha); and the integer inputs
PyTorch refuses (int ** negative int, var / std / nanmean). Each runs on the DEVICES of
conftest."""
import os

import numpy as np
import pytest

import fusionflow as ff

try:
    import torch
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES, make_close  # cpu, and cpu_blas / opencl when they were built

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
close = make_close(1e-6, equal_nan=True)


def values(t):
    """t's values as float64 (a bf16 tensor of either library through f32, which is exact)."""
    return np.asarray(t.detach().float().numpy(), dtype=np.float64)


def same(got, want):
    """Same dtype name, shape and values (bit for bit, NaN matching NaN; -0.0 is 0.0)."""
    assert str(got.dtype).split(".")[-1].rstrip("_") == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
    g, w = values(got), values(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.array_equal(g, w, equal_nan=True), (g.tolist(), w.tolist())


# ---- 1. p.data = t keeps grad, identity and hooks; .data aliases -------------------------
@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_vector_to_parameters_keeps_grads(device):
    got, want = [], []
    for lib, out in ((ff, got), (torch, want)):
        kw = {"device": device} if lib is ff else {}
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0], **kw))
        q = lib.nn.Parameter(lib.tensor([[3.0]], **kw))
        p.grad, q.grad = lib.tensor([0.5, 0.5], **kw), lib.tensor([[0.25]], **kw)
        ids = (id(p), id(q))
        lib.nn.utils.vector_to_parameters(lib.tensor([7.0, 8.0, 9.0], **kw), [p, q])
        assert (id(p), id(q)) == ids and p.requires_grad and p.is_leaf
        out.append([values(p), values(q), values(p.grad), values(q.grad)])
    for g, w in zip(got[0], want[0]):
        assert np.array_equal(g, w), (g, w)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_data_setter_keeps_hooks_and_grad_accumulates(device):
    """A hook registered before `p.data = v` still runs, and backward accumulates into the
    grad p had, as torch's."""
    seen = {ff: [], torch: []}
    grads = {}
    for lib in (ff, torch):
        kw = {"device": device} if lib is ff else {}
        p = lib.nn.Parameter(lib.tensor([1.0, 2.0], **kw))
        p.grad = lib.tensor([1.0, 1.0], **kw)
        p.register_hook(lambda g, lib=lib: seen[lib].append(values(g)))
        p.data = lib.tensor([5.0, 6.0], **kw)
        (p * p).sum().backward()
        grads[lib] = values(p.grad)
    assert len(seen[ff]) == len(seen[torch]) == 1
    assert np.array_equal(seen[ff][0], seen[torch][0])  # 2 p = [10, 12]
    assert np.array_equal(grads[ff], grads[torch])  # [1, 1] + [10, 12]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_data_getter_is_a_detached_alias(device):
    p = ff.nn.Parameter(ff.tensor([1.0, 2.0, 3.0], device=device))
    pt = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
    d, dt = p.data, pt.data
    assert d is not p and not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert (d.requires_grad, d.is_leaf) == (dt.requires_grad, dt.is_leaf)
    d[0] = 9.0
    dt[0] = 9.0
    assert np.array_equal(values(p), values(pt))  # the write went into p's memory
    p.data.mul_(2)
    pt.data.mul_(2)
    assert np.array_equal(values(p), values(pt))


@pytest.mark.parametrize("device", DEVICES)
def test_data_setter_new_shape_and_dtype(device):
    """v's shape and dtype replace p's (the grad of the old shape is dropped: documented)."""
    p = ff.nn.Parameter(ff.tensor([1.0, 2.0], device=device))
    p.data = ff.tensor([[1.0, 2.0, 3.0]], dtype="float64", device=device)
    assert p.shape == (1, 3) and p.dtype == ff.float64 and p.requires_grad
    (p * 2).sum().backward()
    assert values(p.grad).tolist() == [[2.0, 2.0, 2.0]]


# ---- 11. methods that were missing or failed ------------------------------------------
X = [[1.5, -2.25, 3.0, 0.5], [4.0, 0.125, -1.0, 2.5], [0.0, 7.0, -3.5, 1.0]]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", ["std_mean", "var_mean"])
@pytest.mark.parametrize("args", [{}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"dim": (0, 1), "unbiased": False},
                                  {"dim": 1, "correction": 0}])
def test_std_var_mean_match_torch(device, fn, args):
    for dtype in ("float32", "float64"):
        x = ff.tensor(X, dtype=dtype, device=device)
        got = getattr(ff, fn)(x, **args)
        want = getattr(torch, fn)(torch.tensor(X, dtype=getattr(torch, dtype)), **args)
        assert isinstance(got, tuple) and len(got) == 2
        for g, w in zip(got, want):
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
            close(g, w, 1e-6 if dtype == "float32" else 1e-12)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_std_mean_positional_unbiased_and_gradient(device):
    x = ff.tensor(X[0], device=device, requires_grad=True)
    xt = torch.tensor(X[0], requires_grad=True)
    (s, m), (st, mt) = ff.std_mean(x, False), torch.std_mean(xt, False)
    close(s, st)
    close(m, mt)
    (s + 3 * m).backward()
    (st + 3 * mt).backward()
    close(x.grad, xt.grad)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("data,dtype", [([1.5, -2.0, 3.0, 0.5], "float32"), ([2, -3, 4], "int64"),
                                        ([2, -3, 4], "int32"), ([True, False, True], "bool"),
                                        ([0.5, 3.0], "float64")])
@pytest.mark.parametrize("N,increasing", [(None, False), (None, True), (5, False), (1, True), (0, False)])
def test_vander_matches_torch(device, data, dtype, N, increasing):
    got = ff.vander(ff.tensor(data, dtype=dtype, device=device), N=N, increasing=increasing)
    want = torch.vander(torch.tensor(data, dtype=getattr(torch, dtype)), N=N, increasing=increasing)
    same(got, want)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_vander_gradient_and_errors(device):
    """The gradient against the f64 closed form: torch 1.13's vander backward fails (its
    cumprod is modified in place: 'one of the variables needed for gradient computation')."""
    xs = np.array([1.5, -2.0, 3.0])
    w = np.array([[1.0, -2.0, 0.5, 3.0], [0.25, 1.0, -1.0, 2.0], [2.0, 0.5, 1.0, -0.5]])
    x = ff.tensor(xs, dtype="float64", device=device, requires_grad=True)
    (ff.vander(x, 4) * ff.tensor(w, device=device)).sum().backward()
    powers = np.arange(3, -1, -1)  # column j holds x ** (3 - j)
    want = (w * powers * xs[:, None] ** np.maximum(powers - 1, 0)).sum(1)
    close(x.grad, want, 1e-12)
    for bad, match in (([[1.0]], "one-dimensional"), ([1.0, 2.0], "non-negative")):
        n = -1 if match == "non-negative" else None
        with pytest.raises(RuntimeError, match=match):
            torch.vander(torch.tensor(bad), N=n)
        with pytest.raises(RuntimeError, match="vander.*" + match):
            ff.vander(ff.tensor(bad, device=device), N=n)


ROUND_DATA = [1.2345, -2.5678, 0.125, 0.135, 2.5, -0.5, 1234.5, 15.0, 25.0, -35.0, 1e-7, float("nan"), float("inf")]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
def test_round_decimals_matches_torch(device, dtype, decimals):
    x = ff.tensor(ROUND_DATA, device=device).to(dtype)
    xt = torch.tensor(ROUND_DATA).to(getattr(torch, dtype))
    want = xt.round(decimals=decimals)
    same(x.round(decimals=decimals), want)
    same(ff.round(x, decimals=decimals), want)
    y = x.clone()
    y.round_(decimals=decimals)
    same(y, want)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_round_decimals_of_integers_raises_as_torch(device):
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2]).round(decimals=1)
    with pytest.raises(RuntimeError, match="round.*decimals"):
        ff.tensor([1, 2], device=device).round(decimals=1)
    same(ff.tensor([1, 2], device=device).round(), torch.tensor([1, 2]).round())


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_is_floating_point_is_a_method(device):
    for dtype in ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool"):
        x = ff.zeros(2, dtype=dtype, device=device)
        want = torch.zeros(2, dtype=getattr(torch, dtype)).is_floating_point()
        assert x.is_floating_point() is want
        assert ff.is_floating_point(x) is want
        assert x.dtype.is_floating_point is want  # the dtype's stays a property, as torch's


# no NaN for signbit / copysign: torch's f32 -> bf16 conversion makes NaN's sign bit 1
BF = [1.0, -2.0, -0.0, 0.0, 3.5, -0.5, 2.0 ** -130, float("inf"), -float("inf"), 1.0078125]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_host_methods_match_torch(device):
    x = ff.tensor(BF, device=device).bfloat16()
    xt = torch.tensor(BF).bfloat16()
    same(x.signbit(), xt.signbit())
    same(ff.signbit(x), torch.signbit(xt))
    got = ff.tensor(BF + [float("nan")], device=device).bfloat16().tolist()
    want = torch.tensor(BF + [float("nan")]).bfloat16().tolist()
    assert np.array_equal(np.array(got), np.array(want), equal_nan=True)
    assert all(type(v) is float for v in got)
    assert [np.signbit(v) for v in got[:-1]] == [np.signbit(v) for v in want[:-1]]
    other = [-1.0, 1.0, 1.0, -0.0, -2.0, 3.0, -1.0, -1.0, 1.0, -1.0]
    same(x.copysign(ff.tensor(other, device=device).bfloat16()), xt.copysign(torch.tensor(other).bfloat16()))
    same(x.copysign(-1.0), xt.copysign(-1.0))
    finite = [1.0, -2.0, 0.5, -3.0, 4.0, -3.0]
    y, yt = ff.tensor(finite, device=device).bfloat16(), torch.tensor(finite).bfloat16()
    (v, i), (vt, it) = y.cummin(0), yt.cummin(0)
    same(v, vt)
    same(i, it)
    (v, i), (vt, it) = y.reshape(2, 3).cummax(1), yt.reshape(2, 3).cummax(1)
    same(v, vt)
    same(i, it)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_integer_add_sub_inplace_with_alpha(device, dtype):
    for op in ("add_", "sub_"):
        for alpha in (1, 2, -3):
            x = ff.tensor([1, 2], dtype=dtype, device=device)
            xt = torch.tensor([1, 2], dtype=getattr(torch, dtype))
            for o, ot in ((ff.tensor([3, 4], dtype=dtype, device=device), torch.tensor([3, 4],
                                                                                    dtype=getattr(torch, dtype))),
                          (5, 5)):
                assert getattr(x, op)(o, alpha=alpha) is x
                getattr(xt, op)(ot, alpha=alpha)
                same(x, xt)
    x = ff.tensor([1, 2], dtype="int32", device=device)
    same(x.add_(ff.tensor([3, 4], dtype="int32", device=device), alpha=2), torch.tensor([7, 10], dtype=torch.int32))
    for op in ("add_", "sub_"):
        with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
            getattr(torch.tensor([1, 2]), op)(torch.tensor([1, 1]), alpha=1.5)
        with pytest.raises(RuntimeError, match="%s.*alpha must not be a floating point" % op):
            getattr(ff.tensor([1, 2], device=device), op)(ff.tensor([1, 1], device=device), alpha=1.5)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_float_add_sub_inplace_with_alpha_still_fused(device):
    x = ff.tensor([1.0, 2.0], device=device)
    xt = torch.tensor([1.0, 2.0])
    x.add_(ff.tensor([3, 4], device=device), alpha=2.5)
    xt.add_(torch.tensor([3, 4]), alpha=2.5)
    x.sub_(ff.tensor([0.5, 1.0], device=device), alpha=3)
    xt.sub_(torch.tensor([0.5, 1.0]), alpha=3)
    same(x, xt)


# ---- 15 (part). integer inputs torch refuses ---------------------------------------------
@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_to_negative_integer_power_raises(device, dtype):
    data = [2, 3] if dtype != "bool" else [True, False]
    x = ff.tensor(data, dtype=dtype, device=device)
    xt = torch.tensor(data, dtype=getattr(torch, dtype))
    for f in (lambda a: a ** -1, lambda a: a.pow(-2), lambda a: a.clone().pow_(-1)):
        with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
            f(xt)
        with pytest.raises(RuntimeError, match="pow.*Integers to negative integer powers are not allowed"):
            f(x)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        ff.pow(x, -1)
    # what torch still computes: non-negative and float exponents, tensor exponents
    same(x ** 2, xt ** 2)
    same(x ** -1.0, xt ** -1.0)
    if dtype in ("int64", "int32"):
        e = [-1, 2]
        same(x ** ff.tensor(e, dtype=dtype, device=device), xt ** torch.tensor(e, dtype=getattr(torch, dtype)))
    same(ff.tensor([2.0, 4.0], device=device) ** -1, torch.tensor([2.0, 4.0]) ** -1)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_var_std_nanmean_of_integers_raise(device, dtype):
    data = [2, 3, 7] if dtype != "bool" else [True, False, True]
    x = ff.tensor(data, dtype=dtype, device=device)
    xt = torch.tensor(data, dtype=getattr(torch, dtype))
    cases = [("var", lambda lib, a: a.var(), "std and var only support floating point"),
             ("std", lambda lib, a: lib.std(a, 0), "std and var only support floating point"),
             ("nanmean", lambda lib, a: a.nanmean(), "expected input to have floating point dtype"),
             ("std_mean", lambda lib, a: lib.std_mean(a), "std_mean only support floating point"),
             ("var_mean", lambda lib, a: lib.var_mean(a, 0), "var_mean only support floating point")]
    for name, f, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            f(torch, xt)
        with pytest.raises(RuntimeError, match="%s.*%s" % (name, msg)):
            f(ff, x)
    same(x.float().var(), xt.float().var())  # the float forms still work
    same(x.float().nanmean(), xt.float().nanmean())


def test_div_rounding_modes_and_where_alone_as_torch():
    a, b = [7.0, -7.0, 5.5, -0.5], [2.0, 2.0, -2.0, 3.0]
    fa, fb, ta, tb = ff.tensor(a), ff.tensor(b), torch.tensor(a), torch.tensor(b)
    for mode in (None, "floor", "trunc"):
        np.testing.assert_array_equal(ff.div(fa, fb, rounding_mode=mode).numpy(),
                                      torch.div(ta, tb, rounding_mode=mode).numpy())
        np.testing.assert_array_equal(fa.div(fb, rounding_mode=mode).numpy(), ta.div(tb, rounding_mode=mode).numpy())
    m = [[True, False, True], [False, False, True]]
    got, want = ff.where(ff.tensor(m)), torch.where(torch.tensor(m))
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert g.tolist() == w.tolist()


def test_load_state_dict_leaves_the_callers_dict_and_passes_torchs_arguments():
    """torch's _load_from_state_dict(state_dict, prefix, local_metadata, strict, missing,
    unexpected, errors): an override renaming an old key works on a copy of the dict."""
    class Renaming(ff.nn.Linear):
        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            if prefix + "w_old" in state_dict:
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w_old")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing, unexpected, errors)
    m = ff.nn.Sequential(Renaming(2, 2))
    sd = {"0.w_old": ff.ones(2, 2), "0.bias": ff.zeros(2)}
    m.load_state_dict(sd)
    assert set(sd) == {"0.w_old", "0.bias"}  # the caller's dict is untouched
    assert m[0].weight.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_grad_accumulates_in_place_as_torch():
    """Outside create_graph, a second backward adds into .grad itself (PyTorch's
    AccumulateGrad): a reference to p.grad sees the sum; under create_graph it is a new
    tensor with history, as in PyTorch."""
    for lib in (ff, torch):
        p = lib.ones(3, requires_grad=True)
        (p * 2).sum().backward()
        held = p.grad
        (p * 3).sum().backward()
        assert held.tolist() == [5.0, 5.0, 5.0], lib
        assert p.grad is held or p.grad.data_ptr() == held.data_ptr()
    p = ff.ones(2, requires_grad=True)
    (p ** 2).sum().backward(create_graph=True)
    first = p.grad
    (p ** 2).sum().backward(create_graph=True)
    assert first.tolist() == [2.0, 2.0] and p.grad.tolist() == [4.0, 4.0] and p.grad.grad_fn is not None


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_backward_and_double_backward_as_torch(device):
    w0 = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    idx = [[0, 3, 3], [1, 0, 2]]
    fw, tw = ff.tensor(w0, device=device, requires_grad=True), torch.tensor(w0, requires_grad=True)
    fi, ti = ff.tensor(idx, device=device), torch.tensor(idx)
    (ff.nn.functional.embedding(fi, fw) ** 2).sum().backward()
    (torch.nn.functional.embedding(ti, tw) ** 2).sum().backward()
    np.testing.assert_allclose(fw.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-6)
    # through the gradient (create_graph): the scatter is recorded
    fw2 = ff.tensor(w0, device=device, requires_grad=True)
    g, = ff.autograd.grad((ff.nn.functional.embedding(fi, fw2) ** 3).sum(), [fw2], create_graph=True)
    g.sum().backward()
    tw2 = torch.tensor(w0, requires_grad=True)
    tg, = torch.autograd.grad((torch.nn.functional.embedding(ti, tw2) ** 3).sum(), [tw2], create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(fw2.grad.cpu().numpy(), tw2.grad.numpy(), rtol=1e-5)
