"""Every op family against NumPy (float64 reference, float32 tolerance)."""
import numpy as np
import pytest

import fusionflow as ff

rng = np.random.default_rng(0)


def arr(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def close(t, want, rtol=1e-5, atol=1e-6):
    got = t.numpy() if isinstance(t, ff.Tensor) else np.asarray(t)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def _erf(x):
    import math
    return np.vectorize(math.erf)(x)


UNARY = {
    "neg": (lambda t: -t, np.negative, None),
    "abs": (lambda t: t.abs(), np.abs, None),
    "sign": (lambda t: t.sign(), np.sign, None),
    "exp": (lambda t: t.exp(), np.exp, None),
    "log": (lambda t: t.log(), np.log, (0.1, 3)),
    "log1p": (lambda t: t.log1p(), np.log1p, (-0.5, 3)),
    "expm1": (lambda t: t.expm1(), np.expm1, None),
    "sqrt": (lambda t: t.sqrt(), np.sqrt, (0.01, 4)),
    "rsqrt": (lambda t: t.rsqrt(), lambda x: 1 / np.sqrt(x), (0.1, 4)),
    "square": (lambda t: t.square(), np.square, None),
    "reciprocal": (lambda t: t.reciprocal(), np.reciprocal, (0.5, 3)),
    "sin": (lambda t: t.sin(), np.sin, None),
    "cos": (lambda t: t.cos(), np.cos, None),
    "tanh": (lambda t: t.tanh(), np.tanh, None),
    "sigmoid": (lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), None),
    "relu": (lambda t: t.relu(), lambda x: np.maximum(x, 0), None),
    "silu": (lambda t: t.silu(), lambda x: x / (1 + np.exp(-x)), None),
    "softplus": (lambda t: t.softplus(), lambda x: np.log1p(np.exp(x)), None),
    "gelu": (lambda t: t.gelu(), lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))), None),
    "gelu_tanh": (lambda t: t.gelu("tanh"),
                  lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), None),
    "erf": (lambda t: t.erf(), _erf, None),
    "floor": (lambda t: t.floor(), np.floor, None),
    "ceil": (lambda t: t.ceil(), np.ceil, None),
    "round": (lambda t: t.round(), np.round, None),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(name, dtype):
    f, ref, rng_ = UNARY[name]
    lo, hi = rng_ or (-3, 3)
    x = arr(3, 4, lo=lo, hi=hi, dtype=dtype)
    t = ff.tensor(x)
    out = f(t)
    assert out.dtype is t.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    close(out, ref(x.astype(np.float64)), rtol=tol, atol=tol)
    # strided input (a transposed view) gives the same values
    close(f(t.T), ref(x.T.astype(np.float64)), rtol=tol, atol=tol)


def test_unary_predicates_and_int_promotion():
    x = np.array([1.0, np.nan, np.inf, -np.inf], dtype=np.float32)
    t = ff.tensor(x)
    assert t.isnan().tolist() == [False, True, False, False]
    assert t.isinf().tolist() == [False, False, True, True]
    assert (~ff.tensor([True, False])).tolist() == [False, True]
    i = ff.tensor([1, 4, 9])
    assert i.sqrt().dtype is ff.float32 and i.sqrt().tolist() == [1.0, 2.0, 3.0]  # ints -> f32 as torch


BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a.abs() ** b, lambda x, y: np.abs(x) ** y),
    "maximum": (lambda a, b: a.maximum(b), np.maximum),
    "minimum": (lambda a, b: a.minimum(b), np.minimum),
    "fmod": (lambda a, b: a.fmod(b), np.fmod),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (2, 3))])
def test_binary_broadcasting(name, shapes):
    f, ref = BINARY[name]
    x, y = arr(*shapes[0]), arr(*shapes[1], lo=0.5, hi=2.0)
    close(f(ff.tensor(x), ff.tensor(y)), ref(x.astype(np.float64), y.astype(np.float64)), rtol=1e-5, atol=1e-5)


def test_scalar_and_reflected_forms():
    x = arr(2, 3, lo=0.5, hi=2)
    t = ff.tensor(x)
    close(t + 2, x + 2)
    close(2 + t, 2 + x)
    close(t - 1.5, x - 1.5)
    close(1.5 - t, 1.5 - x)
    close(t * 3, x * 3)
    close(3 * t, 3 * x)
    close(t / 4, x / 4)
    close(4 / t, 4 / x, rtol=1e-5)
    close(t ** 2, x ** 2, rtol=1e-5)
    close(2 ** t, 2 ** x, rtol=1e-5)
    close(t % 0.7, np.mod(x, 0.7), atol=1e-5)
    close(-t % 0.7, np.mod(-x, 0.7), atol=1e-5)
    assert (t + 2).dtype is ff.float32  # weak scalar does not widen
    i = ff.tensor([1, 2, 3])
    assert (i + 2).dtype is ff.int64 and (i * 2.5).dtype is ff.float32 and (i / 2).dtype is ff.float32


def test_comparisons_and_logic():
    x, y = arr(3, 4), arr(3, 4)
    a, b = ff.tensor(x), ff.tensor(y)
    for f, ref in [(lambda p, q: p == q, np.equal), (lambda p, q: p != q, np.not_equal),
                   (lambda p, q: p < q, np.less), (lambda p, q: p <= q, np.less_equal),
                   (lambda p, q: p > q, np.greater), (lambda p, q: p >= q, np.greater_equal)]:
        r = f(a, b)
        assert r.dtype is ff.bool_
        assert np.array_equal(r.numpy(), ref(x, y))
    assert np.array_equal((a > 0).numpy(), x > 0)
    assert np.array_equal((0 < a).numpy(), 0 < x)
    p, q = a > 0, b > 0
    assert np.array_equal((p & q).numpy(), (x > 0) & (y > 0))
    assert np.array_equal((p | q).numpy(), (x > 0) | (y > 0))
    assert np.array_equal((p ^ q).numpy(), (x > 0) ^ (y > 0))
    assert np.array_equal(ff.where(a > 0, a, b).numpy(), np.where(x > 0, x, y))
    close(ff.where(a > 0, a, 0.0), np.where(x > 0, x, 0))
    close(a.clamp(-0.5, 0.5), np.clip(x, -0.5, 0.5))
    close(a.clamp(min=0), np.maximum(x, 0))
    close(a.lerp(b, 0.25), x + 0.25 * (y - x))


@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_reductions(dim, keepdim):
    x = arr(3, 4, 5, lo=0.1, hi=2)
    t = ff.tensor(x)
    ax = dim
    x64 = x.astype(np.float64)
    close(t.sum(dim, keepdim), x64.sum(axis=ax, keepdims=keepdim), rtol=1e-5)
    close(t.mean(dim, keepdim), x64.mean(axis=ax, keepdims=keepdim), rtol=1e-5)
    close(t.prod(dim, keepdim), x64.prod(axis=ax, keepdims=keepdim), rtol=1e-4)
    close(t.amax(dim, keepdim), x64.max(axis=ax, keepdims=keepdim))
    close(t.amin(dim, keepdim), x64.min(axis=ax, keepdims=keepdim))
    close(t.var(dim, keepdim=keepdim), x64.var(axis=ax, ddof=1, keepdims=keepdim), rtol=1e-4)
    close(t.std(dim, keepdim=keepdim, unbiased=False), x64.std(axis=ax, keepdims=keepdim), rtol=1e-4)
    lse = np.log(np.exp(x64).sum(axis=ax, keepdims=keepdim))
    close(t.logsumexp(dim, keepdim), lse, rtol=1e-5)
    close(t.norm(2, dim, keepdim), np.sqrt((x64 ** 2).sum(axis=ax, keepdims=keepdim)), rtol=1e-5)
    b = x > 1
    tb = ff.tensor(b)
    assert np.array_equal(tb.any(dim, keepdim).numpy(), b.any(axis=ax, keepdims=keepdim))
    assert np.array_equal(tb.all(dim, keepdim).numpy(), b.all(axis=ax, keepdims=keepdim))


def test_arg_reductions_and_max_tuple():
    x = arr(4, 6)
    t = ff.tensor(x)
    assert np.array_equal(t.argmax(1).numpy(), x.argmax(1))
    assert np.array_equal(t.argmin(0).numpy(), x.argmin(0))
    assert t.argmax().item() == x.argmax()
    v, i = t.max(1)
    close(v, x.max(1))
    assert np.array_equal(i.numpy(), x.argmax(1))
    assert t.max().item() == pytest.approx(float(x.max()))
    assert ff.tensor([1, 2, 3]).sum().dtype is ff.int64


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((4,), (4,)),
                                   ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((1, 7), (7, 1))])
def test_matmul(sa, sb):
    x, y = arr(*sa), arr(*sb)
    close(ff.tensor(x) @ ff.tensor(y), np.matmul(x.astype(np.float64), y.astype(np.float64)), rtol=1e-5,
          atol=1e-5)


def test_matmul_strided_and_outer():
    x, y = arr(5, 3), arr(4, 5)
    close(ff.tensor(x).T @ ff.tensor(y).T, x.T.astype(np.float64) @ y.T, rtol=1e-5, atol=1e-5)
    u, v = arr(3), arr(4)
    close(ff.tensor(u).outer(ff.tensor(v)), np.outer(u, v), rtol=1e-6)


def test_softmax_family():
    x = arr(3, 5, lo=-5, hi=5)
    t = ff.tensor(x)
    e = np.exp(x - x.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    close(t.softmax(-1), sm, rtol=1e-5)
    close(t.log_softmax(1), np.log(sm), rtol=1e-5, atol=1e-5)
    e0 = np.exp(x - x.max(0, keepdims=True))
    close(t.softmax(0), e0 / e0.sum(0, keepdims=True), rtol=1e-5)
    targets = np.array([0, 4, 2])
    ce = -np.log(sm[np.arange(3), targets]).mean()
    assert ff.nn.functional.cross_entropy(t, ff.tensor(targets)).item() == pytest.approx(ce, rel=1e-5)
    y = arr(3, 5)
    assert ff.nn.functional.mse_loss(t, ff.tensor(y)).item() == pytest.approx(((x - y) ** 2).mean(), rel=1e-5)


def test_shape_ops():
    x = arr(2, 3, 4)
    t = ff.tensor(x)
    close(t.reshape(4, 6), x.reshape(4, 6))
    close(t.reshape(-1), x.reshape(-1))
    close(t.view(6, 4), x.reshape(6, 4))
    close(t.permute(2, 0, 1), x.transpose(2, 0, 1))
    close(t.transpose(0, 2), x.swapaxes(0, 2))
    close(t.T, x.T)
    close(t.mT, x.swapaxes(-1, -2))
    close(t.flatten(1), x.reshape(2, 12))
    close(t.unsqueeze(1), x[:, None])
    close(t[:, :1].squeeze(1), x[:, 0])
    close(t.expand(3, 2, 3, 4) if False else t.unsqueeze(0).expand(3, 2, 3, 4), np.broadcast_to(x, (3, 2, 3, 4)))
    close(t.flip(1), x[:, ::-1])
    close(t.flip((0, 2)), x[::-1, :, ::-1])
    close(ff.cat([t, t], 1), np.concatenate([x, x], 1))
    close(ff.stack([t, t], 0), np.stack([x, x]))
    parts = ff.split(t, 2, dim=2)
    assert [p.shape for p in parts] == [(2, 3, 2), (2, 3, 2)]
    close(parts[1], x[:, :, 2:])
    parts = t.chunk(3, 1)
    assert len(parts) == 3 and parts[2].shape == (2, 1, 4)
    m = arr(4, 4)
    close(ff.tensor(m).tril(), np.tril(m))
    close(ff.tensor(m).triu(1), np.triu(m, 1))
    close(ff.tensor(m[:2]).repeat(2, 3), np.tile(m[:2], (2, 3)))
    close(ff.tensor(m[:2]).tile(2), np.tile(m[:2], 2))
    close(ff.nn.functional.pad(ff.tensor(m), (1, 2)), np.pad(m, ((0, 0), (1, 2))))
    assert not t.permute(2, 0, 1).is_contiguous() and t.permute(2, 0, 1).contiguous().is_contiguous()
    with pytest.raises(ff.FusionFlowError):
        t.permute(2, 0, 1).view(24)  # a view is impossible; reshape copies instead
    close(t.permute(2, 0, 1).reshape(24), x.transpose(2, 0, 1).reshape(24))


def test_gather_index_scatter():
    x = arr(3, 4)
    t = ff.tensor(x)
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    close(t.gather(1, ff.tensor(idx)), np.take_along_axis(x, idx, 1))
    close(t.index_select(0, ff.tensor([2, 0])), x[[2, 0]])
    z = ff.zeros(3, 4)
    src = ff.ones(3, 2)
    want = np.zeros((3, 4))
    for i in range(3):
        for j in range(2):
            want[i, idx[i, j]] += 1
    close(z.scatter_add(1, ff.tensor(idx), src), want)
    oh = ff.nn.functional.one_hot(ff.tensor([0, 2]), 3)
    assert oh.tolist() == [[1, 0, 0], [0, 0, 1]]
    w = ff.tensor(arr(5, 2))
    close(ff.nn.functional.embedding(ff.tensor([4, 0]), w), w.numpy()[[4, 0]])


def test_inplace_ops():
    x = arr(2, 3)
    t = ff.tensor(x)
    t += 1
    t *= 2
    t -= ff.ones(3)
    t /= 4
    close(t, ((x + 1) * 2 - 1) / 4, rtol=1e-6)
    ptr, alias = t.data_ptr(), t[:]  # alias: the same memory on any backend (data_ptr() is 0 on a device)
    t.add_(ff.ones(2, 3), alpha=3).mul_(0.5)
    assert t.data_ptr() == ptr and t.shares_memory_with(alias)  # same memory
    close(t, (((x + 1) * 2 - 1) / 4 + 3) * 0.5, rtol=1e-6)
    t.zero_()
    assert t.sum().item() == 0
    t.fill_(2.5)
    assert t.tolist() == [[2.5] * 3] * 2
    t.copy_(ff.tensor([1.0, 2.0, 3.0]))  # broadcasting copy
    assert t.tolist() == [[1, 2, 3], [1, 2, 3]]
    leaf = ff.ones(2, requires_grad=True)
    with pytest.raises(ff.FusionFlowError):
        leaf += 1  # in-place on a leaf that requires grad is refused
    with ff.no_grad():
        leaf += 1
    assert leaf.tolist() == [2.0, 2.0]


def test_astype_matrix():
    x = np.array([-1.7, 0.0, 2.5, 300.0])
    t = ff.tensor(x, dtype=ff.float64)
    assert t.to(ff.int32).tolist() == [-1, 0, 2, 300]  # truncation toward zero
    assert t.to(ff.bool_).tolist() == [True, False, True, True]
    assert ff.tensor([0, 1, 255], dtype=ff.uint8).to(ff.float32).tolist() == [0.0, 1.0, 255.0]
