"""Every torch.optim optimizer of PyTorch 1.13 against fusionflow.optim's: the same initial
parameters and the same gradients fed to both, parameters compared after every step (rtol
1e-5 in float32, 1e-10 in float64); then param groups, state_dict / load_state_dict in
PyTorch's layout, and zero_grad."""
import numpy as np
import pytest

import fusionflow as ff

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,)]
STEPS = 8

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, amsgrad=True, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.5, weight_decay=0.1, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.1, maximize=True)),
    ("Adamax", dict()),
    ("Adamax", dict(lr=0.01, weight_decay=0.1, maximize=True)),
    ("NAdam", dict()),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("RAdam", dict()),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1)),  # rho_t > 5 from step 6 on
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.1), maximize=True)),
]


def _data(seed, dtype):
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    # gradients that sometimes change sign (Rprop's case) and some zeros
    grads = [[(rng.standard_normal(s) * (rng.random(s) > 0.1)).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return init, grads


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
def test_steps_match_torch(name, kw, dtype):
    init, grads = _data(len(name) + len(kw), dtype)
    ps = [ff.nn.Parameter(ff.tensor(a)) for a in init]
    tps = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt, topt = getattr(ff.optim, name)(ps, **kw), getattr(torch.optim, name)(tps, **kw)
    tol = 1e-5 if dtype == "float32" else 1e-10
    for step, gs in enumerate(grads):
        for p, tp, g in zip(ps, tps, gs):
            p.grad, tp.grad = ff.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        for p, tp in zip(ps, tps):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=tol, atol=tol,
                                       err_msg="%s %s step %d" % (name, kw, step + 1))
    assert set(opt.param_groups[0]) == set(topt.param_groups[0])  # the same options, defaults included
    assert {k: v for k, v in opt.param_groups[0].items() if k != "params"} == \
        {k: v for k, v in topt.param_groups[0].items() if k != "params"}
    assert set(opt.state[ps[0]]) == set(topt.state[tps[0]])


def test_param_groups_options_and_add_param_group():
    init, grads = _data(1, "float64")
    ps = [ff.nn.Parameter(ff.tensor(a)) for a in init]
    tps = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt = ff.optim.SGD([{"params": [ps[0]]}], lr=0.1, momentum=0.9)
    topt = torch.optim.SGD([{"params": [tps[0]]}], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": ps[1], "lr": 0.01, "nesterov": True})
    topt.add_param_group({"params": tps[1], "lr": 0.01, "nesterov": True})
    for gs in grads[:4]:
        for p, tp, g in zip(ps, tps, gs):
            p.grad, tp.grad = ff.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        opt.param_groups[0]["lr"] *= 0.5  # what a scheduler does
        topt.param_groups[0]["lr"] *= 0.5
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [ps[0]]})
    with pytest.raises(TypeError, match="Tensor"):
        ff.optim.SGD(ps[0], lr=0.1)
    with pytest.raises(ValueError, match="empty"):
        ff.optim.Adam([])
    with pytest.raises(ValueError, match="beta parameter at index 1"):
        ff.optim.Adam(ps, betas=(0.9, 1.0))


@pytest.mark.parametrize("name,kw", [("Adam", dict(lr=0.01, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("RMSprop", dict(centered=True, momentum=0.1)), ("NAdam", {}), ("Rprop", {})])
def test_state_dict_layout_and_resume(name, kw):
    init, grads = _data(2, "float64")
    ps = [ff.nn.Parameter(ff.tensor(a)) for a in init]
    tps = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt, topt = getattr(ff.optim, name)(ps, **kw), getattr(torch.optim, name)(tps, **kw)
    for gs in grads[:3]:
        for p, tp, g in zip(ps, tps, gs):
            p.grad, tp.grad = ff.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert set(sd) == {"state", "param_groups"} and sorted(sd["state"]) == sorted(tsd["state"]) == [0, 1]
    assert [g["params"] for g in sd["param_groups"]] == [g["params"] for g in tsd["param_groups"]]
    assert set(sd["state"][0]) == set(tsd["state"][0])
    # a fresh optimizer on copies, resumed from ours, continues exactly as torch does
    ps2 = [ff.nn.Parameter(p.detach().clone()) for p in ps]
    opt2 = getattr(ff.optim, name)(ps2, lr=123.0) if "lr" in kw or name != "Rprop" else getattr(ff.optim, name)(ps2)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == sd["param_groups"][0]["lr"]
    for gs in grads[3:6]:
        for p, tp, g in zip(ps2, tps, gs):
            p.grad, tp.grad = ff.tensor(g), torch.tensor(g)
        opt2.step()
        topt.step()
    for p, tp in zip(ps2, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="parameter group"):
        getattr(ff.optim, name)([ps2[0]], **kw).load_state_dict(sd)


def test_load_state_dict_from_torch():
    init, grads = _data(3, "float32")
    ps = [ff.nn.Parameter(ff.tensor(a)) for a in init]
    tps = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    opt, topt = ff.optim.Adam(ps, lr=0.01), torch.optim.Adam(tps, lr=0.01)
    for gs in grads[:2]:
        for tp, g in zip(tps, gs):
            tp.grad = torch.tensor(g)
        topt.step()
    with torch.no_grad():
        for p, tp in zip(ps, tps):
            p.data = ff.tensor(tp.detach().numpy())
    opt.load_state_dict(topt.state_dict())  # torch tensors, torch's float 'step' tensors
    for gs in grads[2:5]:
        for p, tp, g in zip(ps, tps, gs):
            p.grad, tp.grad = ff.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_zero_grad_as_torch_1_13():
    p, tp = ff.nn.Parameter(ff.ones(3)), torch.nn.Parameter(torch.ones(3))
    opt, topt = ff.optim.SGD([p], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    p.grad, tp.grad = ff.ones(3), torch.ones(3)
    opt.zero_grad()
    topt.zero_grad()  # 1.13's default: zeroed in place, not dropped
    assert tp.grad is not None and p.grad is not None and p.grad.tolist() == tp.grad.tolist() == [0.0] * 3
    opt.zero_grad(set_to_none=True)
    topt.zero_grad(set_to_none=True)
    assert p.grad is None and tp.grad is None


def _lbfgs_problem(mod, dtype):
    """A smooth non-quadratic least-squares fit (tanh model): LBFGS needs several iterations
    and the line search has work to do."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((20, 4)).astype(dtype)
    y = rng.standard_normal((20, 1)).astype(dtype)
    w = mod.tensor(rng.standard_normal((4, 1)).astype(dtype) * 0.5, requires_grad=True)
    b = mod.tensor(np.zeros((1,), dtype), requires_grad=True)
    Xt, yt = mod.tensor(X), mod.tensor(y)

    def closure(opt):
        def f():
            opt.zero_grad()
            loss = ((((Xt @ w) + b).tanh() * 2.0 - yt) ** 2).mean() + (w ** 4).sum() * 0.01
            loss.backward()
            return loss
        return f
    return [w, b], closure


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [dict(), dict(line_search_fn="strong_wolfe"),
                                dict(lr=0.5, max_iter=4, history_size=2),
                                dict(line_search_fn="strong_wolfe", history_size=3, max_iter=6,
                                     tolerance_grad=1e-5, tolerance_change=1e-7)])
def test_lbfgs_matches_torch(kw, dtype):
    ps, mk = _lbfgs_problem(ff, dtype)
    tps, tmk = _lbfgs_problem(torch, dtype)
    opt, topt = ff.optim.LBFGS(ps, **kw), torch.optim.LBFGS(tps, **kw)
    f, tf = mk(opt), tmk(topt)
    # one LBFGS step is up to 20 iterations and 25 closure calls: float32 gradients that differ
    # in their last bits (reduction order) drift to ~1e-4 near the optimum; float64 holds 1e-10
    tol = 1e-4 if dtype == "float32" else 1e-10
    for step in range(5):
        loss, tloss = opt.step(f), topt.step(tf)
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=tol, err_msg="step %d" % step)
        for p, tp in zip(ps, tps):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=tol, atol=tol,
                                       err_msg="%s step %d" % (kw, step))
    st, tst = opt.state[ps[0]], topt.state[tps[0]]
    if dtype == "float64":  # in float32, stopping on a loss change < 1e-9 near the optimum is a matter of bits
        assert st["func_evals"] == tst["func_evals"] and st["n_iter"] == tst["n_iter"]
    assert set(st) == set(tst)
    with pytest.raises(ValueError, match="closure"):
        opt.step()
    with pytest.raises(ValueError, match="parameter groups"):
        ff.optim.LBFGS([{"params": [ps[0]]}, {"params": [ps[1]]}])


def test_eager_optimizers_refuse_a_capture_and_stay_usable():
    net = ff.nn.Linear(3, 1)
    opt = ff.optim.RMSprop(net.parameters(), lr=0.01)
    x, y = ff.randn(4, 3, seed=1), ff.randn(4, 1, seed=2)

    def loss_of():
        return ((net(x) - y) ** 2).mean()

    @ff.compile
    def train(x, y):
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss
    first = train(x, y).item()  # the eager warm-up call
    with pytest.raises(ff.FusionFlowError, match="RMSprop.step cannot be captured"):
        train(x, y)
    opt.zero_grad()
    loss_of().backward()
    opt.step()
    assert opt.state[net.weight]["step"] == 2 and loss_of().item() < first  # the refused step changed nothing
