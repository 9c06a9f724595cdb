"""fusionflow.compile: warm-up, capture, replay (include/ff/graph.h) against the same calls
run eagerly (bit for bit) and against PyTorch; re-capture on new signatures, eager fallback
with a warning, and the optimizers' host calls (lr changes reach replayed steps)."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import fusionflow as ff
from fusionflow import nn, optim
from conftest import DEVICES

try:
    import torch
except ImportError:
    torch = None

STEPS = 6


def _batches(seed=0, n=STEPS, rows=5):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((rows, 8)).astype(np.float32), rng.integers(0, 4, rows)) for _ in range(n)]


OPTIMIZERS = [
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
]


def _train_ff(opt_name, kwargs, compiled, device="cpu_ref", set_to_none=True):
    """STEPS steps of a Linear-ReLU-Linear classifier (cross-entropy); the lr halves
    before step 3 (a replay when compiled). Returns the losses, the final parameters and
    the step function."""
    model = nn.Sequential(nn.Linear(8, 16, seed=1), nn.ReLU(), nn.Linear(16, 4, seed=3)).to(device)
    opt = getattr(optim, opt_name)(model.parameters(), **kwargs)
    lf = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad(set_to_none)  # False: the .grad tensors are zeroed and accumulated into, in place
        loss = lf(model(x), y)
        loss.backward()
        opt.step()
        return loss

    if compiled:
        step = ff.compile(step)
    losses = []
    for i, (x, y) in enumerate(_batches()):
        if i == 3:
            opt.param_groups[0]["lr"] *= 0.5
        losses.append(step(ff.tensor(x, device=device), ff.tensor(y, device=device)).item())
    return losses, [p.numpy() for p in model.parameters()], step


def _train_torch(opt_name, kwargs, params0):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        for p, v in zip(model.parameters(), params0):
            p.copy_(torch.from_numpy(v))
    opt = getattr(torch.optim, opt_name)(model.parameters(), **kwargs)
    losses = []
    for i, (x, y) in enumerate(_batches()):
        if i == 3:
            opt.param_groups[0]["lr"] *= 0.5
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in model.parameters()]


@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,kwargs", OPTIMIZERS)
def test_training_step_equals_eager_and_torch(name, kwargs, device, set_to_none):
    eager_losses, eager_params, _ = _train_ff(name, kwargs, False, device, set_to_none)
    losses, params, step = _train_ff(name, kwargs, True, device, set_to_none)
    assert losses == eager_losses  # bit for bit: same floats
    for p, q in zip(params, eager_params):
        assert np.array_equal(p, q)
    stats = ff.graph_stats(step)
    assert step.captures == 1 and stats["replays"] == STEPS - 2  # call 1 eager, call 2 captured
    assert stats["host_calls"] == 1 and stats["host_reads"] == 0  # one host call per group and step
    if torch is not None:
        params0 = [p.numpy() for p in nn.Sequential(nn.Linear(8, 16, seed=1), nn.ReLU(),
                                                    nn.Linear(16, 4, seed=3)).parameters()]
        t_losses, t_params = _train_torch(name, kwargs, params0)
        np.testing.assert_allclose(losses, t_losses, rtol=1e-5, atol=1e-5)
        for p, q in zip(params, t_params):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS)
def test_lr_zero_reaches_the_replayed_step(name, kwargs):
    w = nn.Parameter(ff.tensor([[0.5, -1.0], [2.0, 0.25]]))
    opt = getattr(optim, name)([w], **kwargs)

    @ff.compile
    def step(x):
        opt.zero_grad()
        loss = ((w @ x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    x = ff.tensor([[1.0], [-2.0]])
    for _ in range(3):  # eager, captured, replayed
        step(x)
    before = w.numpy()
    opt.param_groups[0]["lr"] = 0.0
    step(x)  # replayed: the host call reads lr = 0, the recorded update multiplies by it
    assert ff.graph_stats(step)["replays"] == 2
    assert np.array_equal(w.numpy(), before) and np.abs(w.grad.numpy()).sum() > 0


def _relu_fma(a, b, c):
    return (a * b + c).relu()


@pytest.mark.parametrize("device", DEVICES)
def test_pure_function_equals_eager_and_recaptures_for_new_shapes(device):
    f = ff.compile(_relu_fma)
    rng = np.random.default_rng(1)

    def args(rows):
        return [ff.tensor(rng.standard_normal(s).astype(np.float32), device=device)
                for s in [(rows, 6), (rows, 6), (6,)]]

    outs = []
    for rows in (4, 4, 4, 4, 7, 7, 7, 4):
        a = args(rows)
        out = f(*a)
        assert np.array_equal(out.numpy(), _relu_fma(*a).numpy())
        outs.append(out)
    assert outs[1] is outs[2] is outs[3] is outs[7]  # captured at call 2, replayed in place
    assert outs[5] is outs[6] and outs[5] is not outs[3]
    assert f.captures == 2  # the [7, 6] signature captured its own graph; [4, 6] replayed again
    assert f.graph_stats()["replays"] == 3  # the [4, 6] graph: calls 3, 4 and 8
    assert not outs[3].requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_factories_for_a_device_capture_on_it(device):
    """arange, linspace, eye and the random fills with device= are made on that device's
    backend, so a region that makes them is still one backend's graph (when the device is
    not the default backend, a tensor made on the default and copied over would fail the
    capture)."""
    def f(x):
        pos = ff.arange(0, x.shape[1], device=x.device)
        ramp = ff.linspace(0.0, 1.0, x.shape[1], device=x.device)
        eye = ff.eye(x.shape[1], device=x.device)
        noise = ff.randn(x.shape, seed=7, device=x.device)
        return (x + pos + ramp) @ eye + 0.0 * noise
    c = ff.compile(f)
    x = ff.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a failed capture warns
        outs = [c(x) for _ in range(3)]
    assert c.graph_stats()["replays"] == 1
    assert np.array_equal(outs[2].numpy(), f(x).numpy())
    for t in (ff.arange(0, 3, device=device), ff.linspace(0, 1, 3, device=device), ff.eye(2, device=device),
              ff.randn(2, seed=1, device=device), ff.rand(2, device=device)):
        assert t.device == x.device
    assert np.array_equal(ff.randn(5, seed=3, device=device).numpy(), ff.randn(5, seed=3).numpy())


def test_dropout_draws_a_new_mask_on_every_replay():
    f = ff.compile(lambda x: nn.functional.dropout(x, 0.5))
    masks = [f(ff.ones(64)).numpy() for _ in range(5)]
    assert f.captures == 1 and set(np.unique(np.concatenate(masks))) <= {0.0, 2.0}
    assert not np.array_equal(masks[2], masks[3]) and not np.array_equal(masks[3], masks[4])


def test_outputs_structures_and_non_tensor_arguments():
    @ff.compile(warmup=2)
    def f(xs, scale, opts=None):
        y = xs[0] * scale + xs[1]
        return {"y": y, "pair": (y.sum(), None)}

    x0, x1 = ff.ones(3), ff.full((3,), 2.0)
    res = [f([x0, x1], 3.0) for _ in range(4)]
    assert f.captures == 1 and res[2]["y"] is res[3]["y"]
    assert np.array_equal(res[3]["y"].numpy(), [5.0, 5.0, 5.0]) and res[3]["pair"][1] is None
    other = f([x0, x1], 4.0)  # another value of a non-tensor argument: another signature (warmed up first)
    assert np.array_equal(other["y"].numpy(), [6.0, 6.0, 6.0]) and f.captures == 1


def test_unhashable_argument_runs_eagerly_with_a_warning():
    f = ff.compile(lambda x, arr: x + float(arr.sum()))
    with pytest.warns(RuntimeWarning, match="not hashable"):
        for _ in range(3):
            y = f(ff.ones(2), np.ones(2))
    assert np.array_equal(y.numpy(), [3.0, 3.0]) and f.captures == 0


def test_non_tensor_output_falls_back_with_a_warning():
    f = ff.compile(lambda x: (x * 2).sum().item())
    with pytest.warns(RuntimeWarning, match=r"output \(a float\) is not a tensor"):
        vals = [f(ff.full((3,), float(i))) for i in range(4)]
    assert vals == [0.0, 6.0, 12.0, 18.0] and f.captures == 0


def _mixed(device):
    def f(x):  # two backends in one region: a graph runs on one
        return (x.to(device) * 2).to(x.device) + 1
    return f


OTHER_DEVICES = [d for d in DEVICES if d != ff.default_backend()]


@pytest.mark.skipif(not OTHER_DEVICES, reason="one backend only: nothing to mix")
@pytest.mark.parametrize("device", OTHER_DEVICES)
def test_capture_failure_falls_back_to_eager_with_one_warning(device):
    fn = _mixed(device)
    f = ff.compile(fn)
    want = [fn(ff.full((3,), float(i))).numpy() for i in range(5)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [f(ff.full((3,), float(i))).numpy() for i in range(5)]
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1 and "capture failed" in msgs[0] and "ff_graph_capture_end" in msgs[0], msgs
    assert all(np.array_equal(g, w) for g, w in zip(got, want)) and f.captures == 0


def test_sgd_momentum_without_warmup_refuses_to_capture():
    w = nn.Parameter(ff.tensor([1.0, -2.0]))
    opt = optim.SGD([w], lr=0.1, momentum=0.5)

    @ff.compile(warmup=0)
    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        return w

    with pytest.raises(ff.FusionFlowError, match="run one step before capturing"):
        step()
    assert not ff._lib.C.ff_graph_is_capturing()


def test_host_call_errors_do_not_unwind_through_c():
    w = nn.Parameter(ff.tensor([1.0, -2.0]))
    opt = optim.SGD([w], lr=0.1)

    @ff.compile
    def step():
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        return w

    step(), step()
    opt.param_groups[0]["lr"] = "fast"
    with pytest.raises(TypeError):  # eagerly: the callback's own exception
        opt.step()
    with pytest.raises(ff.FusionFlowError, match="host call.*TypeError"):  # replayed: the C error carrying it
        step()
    opt.param_groups[0]["lr"] = 0.1
    step()


def test_graph_keeps_the_optimizer_alive_and_frees_it_on_reset():
    w = nn.Parameter(ff.tensor([1.0, -2.0]))
    holder = [optim.Adam([w], lr=0.1)]
    ref = weakref.ref(holder[0])

    @ff.compile
    def step():
        opt = holder[0]
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
        return w

    step(), step()
    holder.clear()
    gc.collect()
    assert ref() is not None  # the graph calls its host calls on every replay
    before = w.numpy()
    step()
    assert not np.array_equal(w.numpy(), before)
    step.reset()
    gc.collect()
    assert ref() is None


def test_dump_and_no_leaks(tmp_path, live_counter):
    f = ff.compile(_relu_fma)
    a, b, c = ff.ones(2, 3), ff.full((2, 3), 2.0), ff.full((3,), -1.0)
    for _ in range(3):
        f(a, b, c)
    f.dump(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text().startswith("digraph")
    assert f.graph_stats()["kernels_captured"] >= 3
    del f, a, b, c


class _Scaler:
    def __init__(self, k):
        self.k = k

    @ff.compile
    def apply(self, x):
        return x * self.k


def test_compiled_method():
    s = _Scaler(3.0)
    ys = [s.apply(ff.full((2,), float(i))) for i in range(3)]
    assert np.array_equal(ys[2].numpy(), [6.0, 6.0]) and ff.graph_stats(s.apply)["kernels_captured"] >= 1
