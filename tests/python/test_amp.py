"""Mixed precision from Python: fusionflow.autocast against torch.autocast on CPU (bf16,
which is what torch 1.13 autocasts on CPU), and GradScaler's scale / unscale / skip /
back-off / growth rules."""
import math

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as nn
import fusionflow.nn.functional as F

try:
    import torch
except ImportError:  # python3-torch not installed (CI installs it; FF_REQUIRE_TORCH=1 fails there)
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def test_autocast_mode_nests_and_restores():
    assert not ff.amp.is_autocast_enabled()
    with ff.autocast(dtype=ff.float16):
        assert ff.amp.get_autocast_dtype() == ff.float16
        with ff.autocast(enabled=False):
            assert ff.amp.get_autocast_dtype() is None
            assert (ff.ones(2, 3) @ ff.ones(3, 2)).dtype == ff.float32
        assert (ff.ones(2, 3) @ ff.ones(3, 2)).dtype == ff.float16
    assert ff.amp.get_autocast_dtype() is None
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        ff.autocast(dtype=ff.float64)

    @ff.autocast()
    def f():
        return ff.ones(2, 2) @ ff.ones(2, 2)
    assert f().dtype == ff.bfloat16 and not ff.amp.is_autocast_enabled()


@needs_torch
def test_mlp_step_matches_torch_cpu_autocast():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    y = rng.integers(0, 5, 16)
    ws = [rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((20, 12), (20,), (5, 20), (5,))]

    fm = nn.Sequential(nn.Linear(12, 20), nn.ReLU(), nn.Linear(20, 5))
    tm = torch.nn.Sequential(torch.nn.Linear(12, 20), torch.nn.ReLU(), torch.nn.Linear(20, 5))
    with ff.no_grad(), torch.no_grad():
        for p, q, w in zip(fm.parameters(), tm.parameters(), ws):
            p.copy_(ff.tensor(w))
            q.copy_(torch.tensor(w))
    with ff.autocast(dtype=ff.bfloat16):
        fh = fm(ff.tensor(x))
        fl = F.cross_entropy(fh, ff.tensor(y))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        th = tm(torch.tensor(x))
        tl = torch.nn.functional.cross_entropy(th, torch.tensor(y))
    assert fh.dtype == ff.bfloat16 and th.dtype == torch.bfloat16
    assert fl.dtype == ff.float32 and tl.dtype == torch.float32
    np.testing.assert_allclose(fh.float().numpy(), th.float().detach().numpy(), rtol=2e-2, atol=2e-2)
    assert abs(fl.item() - tl.item()) < 1e-2
    fl.backward()
    tl.backward()
    for p, q in zip(fm.parameters(), tm.parameters()):
        assert p.grad.dtype == ff.float32 and q.grad.dtype == torch.float32
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=3e-2, atol=1e-2)  # bf16 rounding in either order


def test_grad_scaler_unscales_skips_and_adapts():
    p = ff.tensor([1.0, 2.0, 3.0], requires_grad=True)
    opt = ff.optim.SGD([p], lr=0.5)
    sc = ff.amp.GradScaler(init_scale=1024.0, growth_interval=2)
    history = []
    for step in range(4):
        opt.zero_grad()
        with ff.no_grad():
            p.copy_(ff.tensor([1.0, 2.0, 3.0]))
        loss = (p * p).sum() * (math.inf if step == 1 else 1.0)
        sc.scale(loss).backward()
        if step == 0:
            assert p.grad.tolist() == [2048.0, 4096.0, 6144.0]  # scaled
        sc.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            sc.unscale_(opt)
        sc.step(opt)
        history.append((p.tolist(), sc.get_scale()))
        sc.update()
    assert history[0][0] == [0.0, 0.0, 0.0]  # p - 0.5 * 2p with the gradient unscaled exactly
    assert history[1][0] == [1.0, 2.0, 3.0]  # the overflowing step was skipped
    assert [sc_ for _, sc_ in history] == [1024.0, 1024.0, 512.0, 512.0]
    assert sc.get_scale() == 1024.0  # two clean steps after the back-off: grown
    sd = sc.state_dict()
    sc2 = ff.amp.GradScaler()
    sc2.load_state_dict(sd)
    assert sc2.get_scale() == 1024.0
    off = ff.amp.GradScaler(enabled=False)
    assert off.scale(loss) is loss and off.get_scale() == 1.0


def test_f16_training_needs_the_scaler():
    """A gradient of 1e-9 per element through an f16 matmul flushes to zero unscaled."""
    w = ff.full((8, 4), 0.25, requires_grad=True)
    x = ff.full((32, 8), 0.5)
    for scaler in (None, ff.amp.GradScaler()):
        w.grad = None
        with ff.autocast(dtype=ff.float16):
            out = x @ w
        loss = out.float().mean() * 1e-6
        (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.unscale_(SimpleNamespaceOpt([w]))
            np.testing.assert_allclose(w.grad.numpy(), np.full((8, 4), 1e-6 * 0.5 / 4), rtol=3e-3)
        else:
            assert w.grad.abs().amax().item() == 0.0


class SimpleNamespaceOpt:
    def __init__(self, params):
        self.param_groups = [{"params": params}]


def test_autocast_linear_output_dtype_and_values_as_torch():
    """F.linear under bf16 autocast: the f32 bias joins the output's bf16, as torch.autocast's."""
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4), (3, 4), (3,)))
    with ff.autocast(dtype=ff.bfloat16):
        y = F.linear(ff.tensor(x), ff.tensor(w), ff.tensor(b))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        t = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b))
    assert y.dtype == ff.bfloat16 and t.dtype == torch.bfloat16
    np.testing.assert_allclose(y.float().numpy(), t.float().numpy(), rtol=2e-2, atol=2e-2)


def test_autocast_linear_1d_weight_keeps_the_autocast_dtype():
    """A 1-D weight (matmul's form; torch 1.13's autocast refuses it, so no torch side): the
    bias joins the bf16 product too, the same rule as the 2-D weight's, and the value is the
    f32 one within bf16's rounding."""
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 4), (4,), (2,)))
    with ff.autocast(dtype=ff.bfloat16):
        y = F.linear(ff.tensor(x), ff.tensor(w), ff.tensor(b))
    assert y.dtype == ff.bfloat16
    np.testing.assert_allclose(y.float().numpy(), x @ w + b, rtol=3e-2, atol=3e-2)
