"""fusionflow.compile's guards (issue 48, item 4): a graph replays only while the module
state it captured is the same (the same objects in the same places, each tensor on the
same C tensor); after `p.data = ...`, `model.to(dtype)`, `model.double()` or a new
submodule it captures again, so the values and shapes are the new ones and the weights
keep training, as PyTorch's eager steps (the reference) do."""
import warnings

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import nn, optim
from conftest import DEVICES, make_close

import torch

close = make_close(1e-5)
close64 = make_close(1e-8)  # an f32 step would miss by ~1e-4


def _data(device, rows=5):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((rows, 4)).astype(np.float32), rng.integers(0, 3, rows)
    return x, y, ff.tensor(x, device=device), ff.tensor(y, device=device)


def _torch_twin(model):
    t = torch.nn.Linear(4, 3).double()
    with torch.no_grad():
        t.weight.copy_(torch.from_numpy(model.weight.numpy().astype(np.float64)))
        t.bias.copy_(torch.from_numpy(model.bias.numpy().astype(np.float64)))
    return t


def _torch_steps(t, x, y, n, lr=0.1, dtype=torch.float64):
    opt = torch.optim.SGD(t.parameters(), lr=lr)
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(t(torch.from_numpy(x).to(dtype)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def _compiled_step(model, opt):
    lf = nn.CrossEntropyLoss()

    @ff.compile
    def step(x, y):
        opt.zero_grad()
        loss = lf(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


@pytest.mark.parametrize("device", DEVICES)
def test_p_data_assignment_recaptures_and_trains_the_new_weights(device):
    x, y, fx, fy = _data(device)
    model = nn.Linear(4, 3, seed=1).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = _compiled_step(model, opt)
    for _ in range(3):
        step(fx, fy)  # warm-up, capture, replay
    assert step.captures == 1
    new_w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    model.weight.data = ff.tensor(new_w, device=device)
    t = _torch_twin(model)
    got = [step(fx, fy).item() for _ in range(4)]
    close(got, _torch_steps(t, x, y, 4, dtype=torch.float64), 1e-4)
    close(model.weight.numpy(), t.weight.detach().numpy(), 1e-4)  # the new weights trained
    assert step.captures == 2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cast", ["double", "to"])
def test_model_cast_recaptures_with_the_new_dtype(device, cast):
    x, y, fx, fy = _data(device)
    model = nn.Linear(4, 3, seed=2).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = _compiled_step(model, opt)
    for _ in range(3):
        step(fx, fy)
    if cast == "double":
        model.double()
    else:
        model.to(dtype=ff.float64)
    fx64 = fx.to(ff.float64)
    t = _torch_twin(model)
    outs = [step(fx64, fy) for _ in range(4)]  # .item() each: a replay overwrites its outputs
    losses = [o.item() for o in outs[:1]] + [step(fx64, fy).item() for _ in range(3)]
    assert outs[0].dtype == ff.float64 and model.weight.dtype == ff.float64
    want = _torch_steps(t, x, y, 7)
    close64(losses, want[:1] + want[4:])  # f64 all the way: the eager warm-up, the capture, replays
    close64(model.weight.numpy(), t.weight.detach().numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_new_submodule_and_new_optimizer_recapture(device):
    x, y, fx, fy = _data(device)
    holder = {"model": nn.Linear(4, 3, seed=1).to(device)}
    holder["opt"] = optim.SGD(holder["model"].parameters(), lr=0.1)
    lf = nn.CrossEntropyLoss()

    @ff.compile
    def step(x, y):
        holder["opt"].zero_grad()
        loss = lf(holder["model"](x), y)
        loss.backward()
        holder["opt"].step()
        return loss
    for _ in range(3):
        step(fx, fy)
    holder["model"] = nn.Linear(4, 3, seed=5).to(device)
    holder["opt"] = optim.SGD(holder["model"].parameters(), lr=0.1)
    t = _torch_twin(holder["model"])
    got = [step(fx, fy).item() for _ in range(3)]
    close(got, _torch_steps(t, x, y, 3), 1e-4)
    assert step.captures == 2


def test_unchanged_state_keeps_replaying():
    _, _, fx, fy = _data(None)  # the default device, where the model is (guarded in its ctest run)
    model = nn.Linear(4, 3, seed=1)
    opt = optim.Adam(model.parameters(), lr=0.01)
    step = _compiled_step(model, opt)
    for _ in range(6):
        step(fx, fy)
    assert step.captures == 1 and step.graph_stats()["replays"] == 4


def test_state_that_changes_every_call_runs_eagerly_with_a_warning():
    _, _, fx, fy = _data(None)  # the default device, where the model is (guarded in its ctest run)
    model = nn.Linear(4, 3, seed=1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = _compiled_step(model, opt)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for i in range(40):
            model.bias.data = model.bias.detach().clone()  # a new C tensor every call
            step(fx, fy)
    assert any("changed" in str(m.message) for m in w), [str(m.message) for m in w]
    captures = step.captures
    model.bias.data = model.bias.detach().clone()
    step(fx, fy)
    assert step.captures == captures  # eager now: no capture per call
