"""nn.init against torch 1.13: exact for the deterministic initializers and gains, and the
same distributions (bounds, mean, std over many draws) for the random ones."""
import math

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import nn

torch = pytest.importorskip("torch")
init, tinit = nn.init, torch.nn.init


def test_gains_equal_torchs():
    for nl, p in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None),
                  ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, p) == tinit.calculate_gain(nl, p)
    with pytest.raises(ValueError):
        init.calculate_gain("swish")


def test_deterministic_initializers_equal_torchs():
    for shape, groups in [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 2, 3, 3, 3), 1)]:
        a, b = ff.zeros(*shape), torch.zeros(shape)
        init.dirac_(a, groups)
        tinit.dirac_(b, groups)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    a, b = ff.zeros(3, 5), torch.zeros(3, 5)
    init.eye_(a)
    tinit.eye_(b)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="fewer than 2"):
        init.xavier_uniform_(ff.zeros(3))


@pytest.mark.parametrize("name,kwargs,shape", [
    ("uniform_", {"a": -2.0, "b": 3.0}, (200, 300)), ("normal_", {"mean": 1.0, "std": 0.5}, (200, 300)),
    ("trunc_normal_", {"std": 2.0, "a": -1.0, "b": 3.0}, (200, 300)), ("xavier_uniform_", {"gain": 2.0}, (300, 200)),
    ("xavier_normal_", {}, (300, 20, 3)), ("kaiming_uniform_", {"a": math.sqrt(5)}, (300, 200)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}, (300, 20, 3, 3)),
    ("sparse_", {"sparsity": 0.3, "std": 0.1}, (100, 400))])
def test_random_initializers_have_torchs_distribution(name, kwargs, shape):
    ff.manual_seed(0)
    torch.manual_seed(0)
    a, b = ff.zeros(*shape), torch.zeros(shape)
    assert getattr(init, name)(a, **kwargs) is a
    getattr(tinit, name)(b, **kwargs)
    x, y = a.numpy(), b.numpy()
    if "uniform" in name or "trunc" in name:  # bounded: the samples reach the same bounds
        np.testing.assert_allclose([x.min(), x.max()], [y.min(), y.max()], rtol=0.01, atol=1e-3)
    np.testing.assert_allclose(x.mean(), y.mean(), atol=0.02 * y.std() + 1e-4)
    np.testing.assert_allclose(x.std(), y.std(), rtol=0.02)
    if name == "sparse_":
        assert ((x == 0).sum(0) == math.ceil(0.3 * shape[0])).all()


def test_orthogonal():
    for shape in [(5, 8), (8, 5), (4, 2, 3)]:
        ff.manual_seed(1)
        a = ff.zeros(*shape)
        init.orthogonal_(a, gain=2.0)
        m = a.numpy().reshape(shape[0], -1)
        g = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(g, 4.0 * np.eye(g.shape[0]), atol=1e-5)


def test_init_under_autograd_leaves_no_history():
    lin = nn.Linear(4, 3)
    init.kaiming_normal_(lin.weight)
    init.zeros_(lin.bias)
    assert lin.weight.requires_grad and lin.weight.is_leaf and not lin.bias.numpy().any()


def test_modules_utils_tuple_helpers_as_torchs():
    from fusionflow.nn.modules import utils
    from torch.nn.modules import utils as tutils
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for v in (3, (1, 2), [4, 5, 6]):
            assert getattr(utils, name)(v) == getattr(tutils, name)(v)
    assert utils._reverse_repeat_tuple((1, 2, 3), 2) == tutils._reverse_repeat_tuple((1, 2, 3), 2)
