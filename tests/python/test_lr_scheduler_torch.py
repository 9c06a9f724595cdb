"""fusionflow.optim.lr_scheduler against torch.optim.lr_scheduler (PyTorch 1.13): the lr of
every param group (and the momentum the cyclic ones set) after each step, state_dict
round trips, and the composite schedulers."""
import warnings

import numpy as np
import pytest

import fusionflow as ff

torch = pytest.importorskip("torch")

N = 25


class Halver:
    """A callable object: its __dict__ goes into LambdaLR's state_dict."""

    def __init__(self):
        self.k = 0.5

    def __call__(self, e):
        return self.k ** (e // 4)


CASES = [
    ("StepLR", lambda L: dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", lambda L: dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", lambda L: dict(gamma=0.9)),
    ("CosineAnnealingLR", lambda L: dict(T_max=7, eta_min=0.001)),
    ("CosineAnnealingWarmRestarts", lambda L: dict(T_0=4, T_mult=2, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", lambda L: dict(T_0=5)),
    ("CyclicLR", lambda L: dict(base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=4, step_size_down=3)),
    ("CyclicLR", lambda L: dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2")),
    ("CyclicLR", lambda L: dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9)),
    ("OneCycleLR", lambda L: dict(max_lr=0.5, total_steps=N + 1)),
    ("OneCycleLR", lambda L: dict(max_lr=[0.5, 0.3], epochs=2, steps_per_epoch=13, three_phase=True,
                                  anneal_strategy="linear", pct_start=0.25)),
    ("LambdaLR", lambda L: dict(lr_lambda=lambda e: 0.95 ** e)),
    ("LambdaLR", lambda L: dict(lr_lambda=[lambda e: 1.0 / (e + 1), Halver()])),
    ("MultiplicativeLR", lambda L: dict(lr_lambda=lambda e: 0.9)),
    ("LinearLR", lambda L: dict(start_factor=0.25, end_factor=0.9, total_iters=6)),
    ("LinearLR", lambda L: dict()),
    ("ConstantLR", lambda L: dict(factor=0.5, total_iters=4)),
    ("PolynomialLR", lambda L: dict(total_iters=8, power=2.0)),
    ("PolynomialLR", lambda L: dict()),
    ("SequentialLR", lambda L: dict(schedulers=[L.ConstantLR(L.opt, factor=0.1, total_iters=2),
                                                L.ExponentialLR(L.opt, gamma=0.9)], milestones=[3])),
    ("SequentialLR", lambda L: dict(schedulers=[L.LinearLR(L.opt, start_factor=0.2, total_iters=4),
                                                L.CosineAnnealingLR(L.opt, T_max=6),
                                                L.StepLR(L.opt, step_size=2)], milestones=[4, 11])),
]


class _Lib:
    """One side: a module's lr_scheduler namespace and an SGD with two param groups."""

    def __init__(self, mod, optim="SGD"):
        self.mod = mod
        p, q = mod.zeros(2, requires_grad=True), mod.zeros(3, requires_grad=True)
        kw = dict(lr=0.1, momentum=0.9) if optim == "SGD" else dict(lr=0.1)
        self.opt = getattr(mod.optim, optim)([{"params": [p]}, {"params": [q], "lr": 0.05}], **kw)

    def __getattr__(self, name):
        return getattr(self.mod.optim.lr_scheduler, name)


def _trace(sched, opt, steps=N):
    rows = []
    for _ in range(steps):
        rows.append((list(sched.get_last_lr()), [g.get("momentum", g.get("betas")) for g in opt.param_groups]))
        opt.step()
        sched.step()
    return rows


def _same(a, b):
    for (lr, mom), (tlr, tmom) in zip(a, b):
        np.testing.assert_allclose(lr, tlr, rtol=1e-12, atol=1e-15)
        assert np.allclose(np.array(mom, dtype=float), np.array(tmom, dtype=float), rtol=1e-12, atol=1e-15), \
            (mom, tmom)


@pytest.mark.parametrize("name,make", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
def test_lrs_step_by_step_match_torch(name, make):
    ours, theirs = _Lib(ff), _Lib(torch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's warnings on step(epoch), used inside SequentialLR
        s = getattr(ours, name)(ours.opt, **make(ours))
        ts = getattr(theirs, name)(theirs.opt, **make(theirs))
        _same(_trace(s, ours.opt), _trace(ts, theirs.opt))


def test_one_cycle_with_adam_cycles_beta1():
    ours, theirs = _Lib(ff, "Adam"), _Lib(torch, "Adam")
    s = ours.OneCycleLR(ours.opt, max_lr=0.3, total_steps=12)
    ts = theirs.OneCycleLR(theirs.opt, max_lr=0.3, total_steps=12)
    _same(_trace(s, ours.opt, 12), _trace(ts, theirs.opt, 12))
    with pytest.raises(ValueError, match="Tried to step 14 times"):
        s.step()


def test_chained_scheduler_as_torch():
    ours, theirs = _Lib(ff), _Lib(torch)
    s = ours.ChainedScheduler([ours.ConstantLR(ours.opt, factor=0.1, total_iters=2),
                               ours.ExponentialLR(ours.opt, gamma=0.9)])
    ts = theirs.ChainedScheduler([theirs.ConstantLR(theirs.opt, factor=0.1, total_iters=2),
                                  theirs.ExponentialLR(theirs.opt, gamma=0.9)])
    _same(_trace(s, ours.opt, 10), _trace(ts, theirs.opt, 10))


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", factor=0.5, patience=1, cooldown=2, threshold=0.1),
                                dict(patience=0, threshold_mode="abs", threshold=0.05, min_lr=[0.02, 0.04])])
def test_reduce_on_plateau_as_torch(kw):
    metrics = [1.0, 0.9, 0.95, 0.9, 0.91, 0.89, 0.9, 0.9, 1.2, 0.5, 0.5, 0.5, 0.6, 0.4, 0.4] * 2
    ours, theirs = _Lib(ff), _Lib(torch)
    s, ts = ours.ReduceLROnPlateau(ours.opt, **kw), theirs.ReduceLROnPlateau(theirs.opt, **kw)
    for m in metrics:
        s.step(ff.tensor(m))
        ts.step(torch.tensor(m))
        np.testing.assert_allclose(s.get_last_lr(), ts._last_lr, rtol=1e-12)
        assert s.num_bad_epochs == ts.num_bad_epochs and s.cooldown_counter == ts.cooldown_counter


@pytest.mark.parametrize("name,make", [CASES[3], CASES[4], CASES[9], CASES[12], CASES[20]])
def test_state_dict_resumes(name, make):
    """Stop half-way, load the state into a scheduler made fresh, go on: as torch, uninterrupted."""
    theirs = _Lib(torch)
    ts = getattr(theirs, name)(theirs.opt, **make(theirs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _trace(ts, theirs.opt)
        ours = _Lib(ff)
        s = getattr(ours, name)(ours.opt, **make(ours))
        first = _trace(s, ours.opt, 10)
        sd, opt_sd = s.state_dict(), ours.opt.state_dict()
        assert "optimizer" not in sd and "last_epoch" in sd
        again = _Lib(ff)  # the usual resume: make both, then load the optimizer's state, then the scheduler's
        s2 = getattr(again, name)(again.opt, **make(again))
        again.opt.load_state_dict(opt_sd)
        s2.load_state_dict(sd)
        _same(first + _trace(s2, again.opt, N - 10), want)


def test_errors_as_torch():
    ours = _Lib(ff)
    with pytest.raises(TypeError, match="not an Optimizer"):
        ours.StepLR(object(), 2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        ours.LinearLR(ours.opt, start_factor=2.0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        ours.LambdaLR(ours.opt, [lambda e: 1.0])
    with pytest.raises(KeyError, match="initial_lr"):
        ff.optim.lr_scheduler.StepLR(ff.optim.SGD([ff.zeros(1, requires_grad=True)], lr=0.1), 2, last_epoch=3)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        ours.ReduceLROnPlateau(ours.opt, factor=1.0)
