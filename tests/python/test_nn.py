"""fusionflow.nn and fusionflow.optim: the RFC's usage example, module bookkeeping,
state dicts through safetensors, and optimizer steps against PyTorch's update rules."""
import collections

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import nn, optim

try:
    import torch
except ImportError:
    torch = None


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(self.fc1(x).tanh())


def test_rfc_usage_example_loss_falls():
    """RFC section 5: Module with Linear layers, MSELoss, zero_grad, backward, step."""
    ff.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(64, 3)).astype(np.float32)
    Y = (X @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    x, y = ff.from_numpy(X), ff.from_numpy(Y)
    model = MLP()
    loss_fn = nn.MSELoss()
    opt = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(200):
        pred = model(x)
        loss = loss_fn(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0], (losses[0], losses[-1])


def test_module_registration_and_state_dict(tmp_path):
    m = nn.Sequential(nn.Linear(4, 3, seed=1), nn.ReLU(), nn.Linear(3, 2, bias=False, seed=2))
    names = [n for n, _ in m.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight"]
    assert len(list(m.parameters())) == 3 and all(p.requires_grad for p in m.parameters())
    assert isinstance(m[0].weight, nn.Parameter) and m[0].weight.shape == (3, 4)
    sd = m.state_dict()
    assert list(sd) == names and not sd["0.weight"].requires_grad
    # shares memory (data_ptr() is 0 on a device backend: shares_memory_with holds there too)
    assert sd["0.weight"].shares_memory_with(m[0].weight) and sd["0.weight"].data_ptr() == m[0].weight.data_ptr()
    ff.save(m.state_dict(), tmp_path / "m.safetensors")
    m2 = nn.Sequential(nn.Linear(4, 3, seed=5), nn.ReLU(), nn.Linear(3, 2, bias=False, seed=6))
    assert not np.array_equal(m2[0].weight.numpy(), m[0].weight.numpy())
    m2.load_state_dict(ff.load(tmp_path / "m.safetensors"))
    for (n1, p1), (n2, p2) in zip(m.named_parameters(), m2.named_parameters()):
        assert n1 == n2 and np.array_equal(p1.numpy(), p2.numpy())
    x = ff.randn(2, 4, seed=3)
    assert np.array_equal(m(x).numpy(), m2(x).numpy())
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0.bias", "2.weight"'):
        m2.load_state_dict({"0.weight": sd["0.weight"]})  # torch's error type and text
    bad = collections.OrderedDict(sd)
    bad["0.bias"] = ff.zeros(5)
    with pytest.raises(ff.FusionFlowError, match="shape"):
        m2.load_state_dict(bad)
    m.eval()
    assert not m.training and not m[0].training
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_linear_init_matches_pytorch_rule():
    ff.manual_seed(42)
    lin = nn.Linear(100, 50)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / np.sqrt(100)
    assert w.min() >= -bound and w.max() <= bound and abs(w.mean()) < 0.01
    assert abs(w.std() - bound / np.sqrt(3)) < 0.005  # U(-b, b) has std b/sqrt(3)
    assert b.min() >= -bound and b.max() <= bound
    ff.manual_seed(42)
    assert np.array_equal(nn.Linear(100, 50).weight.numpy(), w)  # seeded


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
def test_state_dict_interop_with_torch(tmp_path):
    """Same parameter names and layout as torch.nn: weights move across and agree."""
    tm = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    m = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    m.load_state_dict({k: ff.from_dlpack(v.detach()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    want = tm(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(m(ff.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def _train(opt_name, kwargs, lib, steps=5):
    """A few steps of an optimizer on a fixed quadratic; returns the final weights."""
    w0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
    x = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 1.0], [2.0, 0.0, 1.0]], np.float32)
    if lib == "ff":
        w = nn.Parameter(ff.tensor(w0))
        opt = getattr(optim, opt_name)([w], **kwargs)
        for _ in range(steps):
            opt.zero_grad()
            loss = ((w @ ff.tensor(x)) ** 2).mean()
            loss.backward()
            opt.step()
        return w.numpy()
    w = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = getattr(torch.optim, opt_name)([w], **kwargs)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((w @ torch.from_numpy(x)) ** 2).mean()
        loss.backward()
        opt.step()
    return w.detach().numpy()


OPTS = [
    ("SGD", dict(lr=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("Adam", dict(lr=0.1)),
    ("Adam", dict(lr=0.1, betas=(0.8, 0.99), weight_decay=0.1)),
    ("AdamW", dict(lr=0.1)),
    ("AdamW", dict(lr=0.1, weight_decay=0.5)),
]


@pytest.mark.skipif(torch is None, reason="PyTorch not installed")
@pytest.mark.parametrize("name,kwargs", OPTS)
def test_optimizers_match_torch(name, kwargs):
    np.testing.assert_allclose(_train(name, kwargs, "ff"), _train(name, kwargs, "torch"), rtol=1e-5, atol=1e-6)


def test_sgd_matches_hand_computed_step():
    w = nn.Parameter(ff.tensor([1.0, -2.0]))
    opt = optim.SGD([w], lr=0.1, momentum=0.5)
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()  # grad = 2w
        opt.step()
    # step 1: buf = 2w0 = [2, -4]; w1 = w0 - 0.1 buf = [0.8, -1.6]
    # step 2: buf = 0.5 buf + 2 w1 = [2.6, -5.2]; w2 = w1 - 0.1 buf = [0.54, -1.08]
    np.testing.assert_allclose(w.numpy(), [0.54, -1.08], rtol=1e-6)


def test_cross_entropy_classifier_learns():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((120, 2)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(2, 8, seed=1), nn.ReLU(), nn.Linear(8, 2, seed=2))
    opt = optim.Adam(model.parameters(), lr=0.05)
    lf = nn.CrossEntropyLoss()
    xt, yt = ff.tensor(X), ff.tensor(y)
    for _ in range(100):
        opt.zero_grad()
        loss = lf(model(xt), yt)
        loss.backward()
        opt.step()
    acc = (model(xt).argmax(1) == yt).to(ff.float32).mean().item()
    assert acc > 0.95


def test_layers_forward():
    x = ff.randn(3, 4, seed=1)
    assert np.allclose(nn.ReLU()(x).numpy(), np.maximum(x.numpy(), 0))
    assert np.allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-x.numpy())), atol=1e-6)
    assert nn.Flatten()(ff.ones(2, 3, 4)).shape == (2, 12)
    assert nn.Softmax(-1)(x).sum(-1).numpy() == pytest.approx(np.ones(3), abs=1e-6)
    d = nn.Dropout(0.5)
    d.eval()
    assert d(x) is x
    ln = nn.LayerNorm(4)
    out = ln(x).numpy()
    assert np.allclose(out.mean(-1), 0, atol=1e-5) and np.allclose(out.std(-1), 1, atol=1e-3)
    assert "Linear(in_features=4, out_features=2, bias=True)" in repr(nn.Sequential(nn.Linear(4, 2)))
