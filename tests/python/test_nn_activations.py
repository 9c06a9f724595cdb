"""Activation modules and functions against torch 1.13: repr, values, gradients (weights of
PReLU copied from torch), odd and empty shapes."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from fusionflow import nn

torch = pytest.importorskip("torch")
from nn_compare import arr, compare_module, compare_fn  # noqa: E402

X = arr((3, 5, 4), 1) * 3  # spans every branch (|x| up to ~9)

MODULES = [
    ("ReLU", (), {}), ("ReLU6", (), {}), ("ReLU6", (), {"inplace": False}), ("LeakyReLU", (0.2,), {}),
    ("ELU", (), {"alpha": 0.7}), ("SELU", (), {}), ("CELU", (), {"alpha": 1.5}), ("GELU", (), {}),
    ("GELU", (), {"approximate": "tanh"}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}),
    ("Hardtanh", (-2.0, 1.5), {}), ("Hardshrink", (), {"lambd": 0.7}), ("Softshrink", (0.3,), {}),
    ("Tanhshrink", (), {}), ("Softsign", (), {}), ("Softplus", (), {}), ("Softplus", (), {"beta": 2, "threshold": 3}),
    ("Mish", (), {}), ("SiLU", (), {}), ("LogSigmoid", (), {}), ("Softmin", (), {"dim": 1}), ("Softmax", (2,), {}),
    ("LogSoftmax", (), {"dim": -1}), ("Threshold", (0.1, 20.0), {}), ("GLU", (), {}), ("GLU", (1,), {}),
    ("Sigmoid", (), {}), ("Tanh", (), {}), ("Softmax2d", (), {}), ("PReLU", (), {}), ("PReLU", (5,), {"init": 0.1}),
    ("RReLU", (0.1, 0.3), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES, ids=[m[0] + str(i) for i, m in enumerate(MODULES)])
def test_module_matches_torch(name, args, kwargs):
    x = X[:, :4] if name == "GLU" and args == (1,) else X
    compare_module(name, args, kwargs, [x], train=False if name == "RReLU" else None)


@pytest.mark.parametrize("name", ["relu6", "elu", "selu", "celu", "leaky_relu", "hardswish", "mish", "softsign",
                                  "logsigmoid", "tanhshrink", "hardsigmoid"])
def test_functional_odd_and_empty_shapes(name):
    for shape in [(), (7,), (0, 3), (2, 1, 3)]:
        compare_fn(name, [arr(shape, 2) * 4])


def test_inplace_variants_write_their_input():
    for name in ["relu_", "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_", "rrelu_"]:
        x = arr((4, 3), 3)
        a, b = ff.tensor(x), torch.tensor(x)
        ra = getattr(F, name)(a)
        getattr(torch.nn.functional, name)(b)
        assert ra is a
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)
    a, b = ff.tensor(X), torch.tensor(X)
    F.threshold_(a, 0.5, -1.0)
    torch.nn.functional.threshold_(b, 0.5, -1.0)
    np.testing.assert_allclose(a.numpy(), b.numpy())


def test_softplus_large_inputs_and_elu_stay_finite():
    x = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], np.float32)
    for name, kw in [("softplus", {"beta": 3.0, "threshold": 50.0}), ("elu", {}), ("mish", {}), ("logsigmoid", {}),
                     ("selu", {}), ("celu", {"alpha": 0.5})]:
        compare_fn(name, [x], kw)


def test_rrelu_training_slopes_lie_between_lower_and_upper():
    ff.manual_seed(0)
    m = nn.RReLU(0.1, 0.3)
    x = ff.tensor(-np.ones((2000,), np.float32))
    slopes = -m(x).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    assert np.unique(slopes).size > 100  # one draw per element
    m.eval()
    assert np.allclose(-m(x).numpy(), 0.2)


def test_prelu_per_channel_weight_and_errors():
    m = nn.PReLU(3)
    assert [n for n, _ in m.named_parameters()] == ["weight"] and np.allclose(m.weight.numpy(), 0.25)
    with pytest.raises(ValueError, match="slopes"):
        m(ff.ones(2, 4))
    with pytest.raises(RuntimeError, match="even"):
        F.glu(ff.ones(3, 5))


@pytest.mark.parametrize("name,kw", [("relu", {}), ("leaky_relu", dict(negative_slope=0.2)), ("elu", {}),
                                     ("hardtanh", {}), ("threshold", dict(threshold=0.1, value=-2.0))])
def test_inplace_inside_a_graph_as_torch(name, kw):
    """nn.LeakyReLU(inplace=True) after a conv (dcgan): the input is written and takes the
    result's history, and gradients flow as torch's."""
    xs = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    w = ff.tensor(xs, requires_grad=True)
    tw = torch.tensor(xs, requires_grad=True)
    h, th = w * 1.5, tw * 1.5
    out = getattr(ff.nn.functional, name)(h, **kw, inplace=True)
    tout = getattr(torch.nn.functional, name)(th, **kw, inplace=True)
    assert out is h and np.allclose(h.numpy(), th.detach().numpy())
    (out * out).sum().backward()
    (tout * tout).sum().backward()
    assert np.allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("slope", [0.2, -0.5, 3.0, 0.0])
def test_leaky_relu_edges_as_torch(dtype, slope):
    """ff_leaky_relu (one C op with its own node): exact values and gradients beside torch's at
    0, -0, +-inf and NaN, on a transposed view, with slopes below 0 and above 1 (where
    max(x, slope * x) would be wrong), and create_graph (the gradient is linear in g)."""
    x = np.array([[-2.5, -0.0, 0.0, 1.5], [np.inf, -np.inf, np.nan, -1e-3], [7.0, -7.0, 0.25, -0.25]], np.float32)
    td = getattr(torch, dtype)
    a = ff.tensor(x).to(getattr(ff, dtype)).t().requires_grad_()
    b = torch.tensor(x).to(td).t().requires_grad_()
    ya, yb = F.leaky_relu(a, slope), torch.nn.functional.leaky_relu(b, slope)
    np.testing.assert_array_equal(ya.float().detach().numpy(), yb.float().detach().numpy())
    g = arr(tuple(yb.shape), 5)
    ga, = ff.autograd.grad(ya, a, ff.tensor(g).to(getattr(ff, dtype)).requires_grad_(), create_graph=True)
    gb, = torch.autograd.grad(yb, b, torch.tensor(g).to(td).requires_grad_(), create_graph=True)
    np.testing.assert_array_equal(ga.float().detach().numpy(), gb.float().detach().numpy())
    assert ga.requires_grad == gb.requires_grad


def test_leaky_relu_refuses_integers_as_torch():
    with pytest.raises(RuntimeError):
        torch.nn.functional.leaky_relu(torch.arange(3), 0.1)
    with pytest.raises(Exception, match="ff_leaky_relu.*floating.*i64"):
        F.leaky_relu(ff.arange(3), 0.1)
