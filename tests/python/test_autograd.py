"""Gradients through the Python API against central finite differences (float64)."""
import numpy as np
import pytest

import fusionflow as ff

rng = np.random.default_rng(1)


def numeric_grad(f, xs, i, eps=1e-6):
    """d sum(f(xs) * w) / d xs[i] by central differences, with xs as float64 arrays."""
    x = xs[i]
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = x[idx]
        x[idx] = old + eps
        fp = f(*[ff.tensor(a) for a in xs]).sum().item()
        x[idx] = old - eps
        fm = f(*[ff.tensor(a) for a in xs]).sum().item()
        x[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


def check(f, *shapes, lo=-1.5, hi=1.5, weight=True):
    xs = [rng.uniform(lo, hi, size=s) for s in shapes]
    w = None
    if weight:
        out_shape = f(*[ff.tensor(a) for a in xs]).shape
        w = rng.uniform(0.5, 1.5, size=out_shape)

    def fw(*ts):
        y = f(*ts)
        return y * ff.tensor(w) if w is not None else y
    ts = [ff.tensor(a, requires_grad=True) for a in xs]
    fw(*ts).sum().backward()
    for i, t in enumerate(ts):
        num = numeric_grad(fw, [a.copy() for a in xs], i)
        assert t.grad is not None, "no gradient for input %d" % i
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-7)


CASES = {
    "add_broadcast": (lambda a, b: a + b, [(3, 4), (4,)]),
    "sub": (lambda a, b: a - b, [(3, 4), (3, 1)]),
    "mul": (lambda a, b: a * b, [(2, 3), (2, 3)]),
    "div": (lambda a, b: a / (b.abs() + 0.5), [(2, 3), (3,)]),
    "pow": (lambda a, b: (a.abs() + 0.5) ** b, [(4,), (4,)]),
    "pow_scalar": (lambda a: a ** 3, [(5,)]),
    "rsub_rdiv": (lambda a: 2 - 3 / (a.abs() + 1), [(5,)]),
    "matmul": (lambda a, b: a @ b, [(3, 4), (4, 2)]),
    "batched_matmul": (lambda a, b: a @ b, [(2, 3, 4), (4, 2)]),
    "matvec": (lambda a, b: a @ b, [(3, 4), (4,)]),
    "exp_log": (lambda a: (a.exp() + 1).log(), [(6,)]),
    "tanh_sigmoid": (lambda a: a.tanh() * a.sigmoid(), [(6,)]),
    "relu": (lambda a: a.relu(), [(7,)]),
    "gelu_silu": (lambda a: a.gelu() + a.silu() + a.softplus(), [(6,)]),
    "sqrt": (lambda a: (a.abs() + 0.1).sqrt(), [(5,)]),
    "sum_mean": (lambda a: a.sum(1, keepdim=True) * a.mean(0), [(3, 4)]),
    "amax": (lambda a: a.amax(1), [(3, 4)]),
    "var_std": (lambda a: a.var(1, keepdim=True) + a.std(0), [(3, 4)]),
    "logsumexp": (lambda a: a.logsumexp(-1), [(3, 4)]),
    "softmax": (lambda a: a.softmax(-1), [(2, 5)]),
    "log_softmax": (lambda a: a.log_softmax(0), [(3, 4)]),
    "views": (lambda a: a.T[1:, ::2].reshape(-1).unsqueeze(0) * 2, [(4, 3)]),
    "index": (lambda a: a[1] * a[:, 0:1] + a[None, ..., -1:], [(3, 3)]),
    "adv_index": (lambda a: a[[2, 0, 2]], [(3, 2)]),
    "cat_stack": (lambda a, b: ff.cat([a, b], 0) * ff.stack([a, b]).sum(0).sum(0), [(2, 3), (2, 3)]),
    "where_clamp": (lambda a: ff.where(a > 0, a * 2, a.clamp(-0.5, 0.5)), [(8,)]),
    "permute_expand": (lambda a: a.permute(1, 0).unsqueeze(0).expand(2, 3, 2), [(2, 3)]),
    "mse": (lambda a, b: ff.nn.functional.mse_loss(a, b), [(3, 4), (3, 4)]),
    "layer_norm": (lambda a: ff.nn.functional.layer_norm(a, (4,)), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name):
    f, shapes = CASES[name]
    check(f, *shapes)


def test_cross_entropy_gradient():
    x = rng.normal(size=(4, 5))
    y = ff.tensor([1, 0, 4, 2])
    check(lambda a: ff.nn.functional.cross_entropy(a, y), (4, 5), weight=False)


def test_backward_semantics():
    x = ff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    y.backward()  # gradients accumulate
    assert x.grad.tolist() == [4.0, 8.0, 12.0]
    with pytest.raises(ff.FusionFlowError):
        y.backward()  # graph freed
    x.grad = None
    z = x * 2
    z.backward(ff.tensor([1.0, 0.0, -1.0]))  # explicit upstream gradient
    assert x.grad.tolist() == [2.0, 0.0, -2.0]
    with pytest.raises(ff.FusionFlowError):
        (x * 2).backward()  # non-scalar without gradient


def test_no_grad_and_detach():
    x = ff.ones(3, requires_grad=True)
    with ff.no_grad():
        y = x * 2
        assert not ff.is_grad_enabled()
    assert ff.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    d = x.detach()
    assert not d.requires_grad and d.shares_memory_with(x)

    @ff.no_grad()
    def f(t):
        return t * 3
    assert not f(x).requires_grad
    with ff.no_grad():
        with ff.enable_grad():
            assert (x * 1).requires_grad
    assert (x * 1).grad_fn == "mul" and x.is_leaf and not (x * 1).is_leaf


def test_higher_order_and_functional_grad():
    x = ff.tensor([0.5, -1.0, 2.0], dtype=ff.float64, requires_grad=True)
    y = (x ** 3).sum()
    (g,) = ff.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    assert x.grad is None  # functional grad does not touch .grad
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.numpy())


def test_grad_of_integer_tensor_refused():
    with pytest.raises(ff.FusionFlowError):
        ff.tensor([1, 2]).requires_grad_()
