"""In-place ops under autograd, against PyTorch 1.13 (issue 44): the idioms real programs use,
the view rules (PyTorch's CopySlices and regenerated view grad_fns), the version check of
saved tensors, PyTorch's refusals, and a randomized differential test of programs mixing
in-place and out-of-place ops, views and reductions (autograd/view_history.c)."""
import random

import numpy as np
import pytest
import torch

import fusionflow as ff
import fusionflow.nn as fnn
import fusionflow.nn.functional as FF
from conftest import DEVICES


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.allclose(a, b, rtol=tol, atol=tol), (a, b)


def both(fn, *arrays, device="cpu_ref"):
    """fn(lib, *leaves) on fusionflow (on device) and on torch, from the same values; returns
    (ff result, torch result, ff leaves, torch leaves)."""
    fl = [ff.tensor(a, device=device, requires_grad=True) for a in arrays]
    tl = [torch.tensor(a, requires_grad=True) for a in arrays]
    return fn(ff, *fl), fn(torch, *tl), fl, tl


def grads_match(fn, *arrays, device="cpu_ref", tol=1e-5):
    fo, to, fl, tl = both(fn, *arrays, device=device)
    fo.backward()
    to.backward()
    close(fo, to, tol)
    for f, t in zip(fl, tl):
        assert (f.grad is None) == (t.grad is None)
        if t.grad is not None:
            close(f.grad, t.grad, tol)


def rnd(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ---- the idioms -------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_sigmoid_on_a_slice_of_a_tensor_with_history(device):
    """The issue's silent wrong gradient: y[2:4].sigmoid_() must reach x through y."""
    x0 = (np.arange(6.0) / 6).reshape(2, 3).astype(np.float32)

    def f(lib, x):
        y = lib.cat([x, x * 2])
        y[2:4].sigmoid_()
        return (y * y).sum()
    grads_match(f, x0, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_residual_add_and_inplace_relu(device):
    """ResNet's `out += self.shortcut(x)`, then relu_ and ReLU(inplace=True) after a conv."""
    x0, w0, w1 = rnd(2, 3, 6, 6), rnd(3, 3, 3, 3, seed=1) * 0.3, rnd(3, 3, 1, 1, seed=2)

    def f(lib, x, w, ws):
        F = FF if lib is ff else torch.nn.functional
        relu = (fnn if lib is ff else torch.nn).ReLU(inplace=True)
        out = F.conv2d(x, w, padding=1)
        out = relu(out)
        out = F.conv2d(out, w, padding=1)
        out += F.conv2d(x, ws)
        out.relu_()
        return out.pow(2).mean()
    grads_match(f, x0, w0, w1, device=device, tol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_loss_accumulated_in_a_sequence_loop(device):
    """`loss = 0; loss += criterion(...)`: the first += makes a tensor, the next are in place."""
    x0, w0 = rnd(4, 3, 5), rnd(5, 5, seed=1)
    t = np.random.RandomState(3).randint(0, 5, size=(4, 3))

    def f(lib, x, w):
        crit = (fnn if lib is ff else torch.nn).CrossEntropyLoss()
        target = lib.tensor(t, device=x.device) if lib is ff else torch.tensor(t)
        loss = 0
        h = x[0]
        for di in range(4):
            h = (h + x[di]) @ w
            loss += crit(h, target[di])
        return loss
    grads_match(f, x0, w0, device=device, tol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_plain_tensor_made_to_require_grad_by_an_inplace_op(device):
    """A normalizing flow's `log_det = torch.zeros(m); log_det += ld`."""
    x0 = rnd(4, 3)

    def f(lib, x):
        log_det = lib.zeros(4, device=x.device) if lib is ff else torch.zeros(4)
        for k in range(3):
            ld = (x * (k + 1)).tanh().sum(1)
            log_det += ld
        assert log_det.requires_grad and not log_det.is_leaf
        return (log_det ** 2).sum()
    grads_match(f, x0, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_positional_embedding_mask_and_clamp_in_place(device):
    """`x += self.pos_embedding`, `x.mul_(mask)`, `y.clamp_(0, 1)` inside a forward."""
    x0, p0 = rnd(2, 5, 4), rnd(1, 5, 4, seed=1)
    m = (np.random.RandomState(2).rand(2, 5, 4) > 0.3).astype(np.float32)

    def f(lib, x, pos):
        x = x * 1.5
        x += pos
        x.mul_(lib.tensor(m, device=x.device) if lib is ff else torch.tensor(m))
        y = x.sigmoid() * 2 - 0.5
        y.clamp_(0, 1)
        return (y * x).sum()
    grads_match(f, x0, p0, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_hidden_states_written_one_step_at_a_time(device):
    """`h[:, t] = cell(...)` into a tensor made with zeros: every step reaches its own input."""
    x0, w0 = rnd(2, 4, 3), rnd(3, 3, seed=1)

    def f(lib, x, w):
        h = lib.zeros(2, 4, 3, device=x.device) if lib is ff else torch.zeros(2, 4, 3)
        prev = x[:, 0]
        for t in range(4):
            prev = (prev @ w + x[:, t]).tanh()
            h[:, t] = prev
        return (h * h.flip(1)).sum()
    grads_match(f, x0, w0, device=device)


# ---- the view rules ------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_inplace_on_the_base_seen_through_views_made_before(device):
    x0 = rnd(3, 4)

    def f(lib, x):
        y = x * 2
        row, col, t = y[1], y[:, 2], y.t()
        y.exp_()
        return row.sum() + (col * col).sum() + t[3, 0] * 5
    grads_match(f, x0, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_views_of_views_and_several_writes(device):
    x0, w0 = rnd(4, 6), rnd(2, 3, seed=1)

    def f(lib, x, w):
        y = x + 0
        v = y[1:3]             # a view
        vv = v[:, ::2]         # a view of a view, strided
        vv.mul_(w)             # written through the chain
        y[0].add_(y[3])        # and through another view, from another part
        z = y.t()[2:]          # a view made after the writes
        z.tanh_()
        return (y ** 2).sum() + vv.sum()
    grads_match(f, x0, w0, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_metadata_inplace_ops(device):
    """unsqueeze_ / squeeze_ / transpose_ / t_ keep identity and history."""
    x0 = rnd(3, 4)

    def f(lib, x):
        y = x * 1
        ident = id(y)
        y.unsqueeze_(0)
        y.transpose_(1, 2)
        y.squeeze_(0)
        y.t_()
        y.t_()
        assert id(y) == ident and tuple(y.shape) == (4, 3)
        y.mul_(2)
        y.tanh_()
        return (y * lib.arange(3.0).to(y.device if lib is ff else "cpu")).sum()
    grads_match(f, x0, device=device)


def test_view_made_before_its_base_requires_grad_tracks_it():
    """Issue 47 item 5: both say the view requires grad. PyTorch 1.13 then makes it a leaf of
    its own (b.grad stays None: the view's gradient never reaches the base it aliases); here
    the view takes its history from its base, so the gradient is the closed form's."""
    tb = torch.zeros(3)
    tv = tb[1:]
    tb.requires_grad_()
    assert tv.requires_grad
    b = ff.zeros(3)
    v = b[1:]
    b.requires_grad_()
    assert v.requires_grad and not v.is_leaf and v.grad_fn == "as_strided"
    (v * ff.tensor([2.0, 3.0])).sum().backward()
    assert b.grad.tolist() == [0.0, 2.0, 3.0]


def test_grad_fn_names_and_version_counter():
    x = ff.ones(3, requires_grad=True) * 1
    assert x._version == 0
    x.add_(1)
    assert x._version == 1 and x.grad_fn == "add"
    v = x[1:]
    v.mul_(2)
    assert x._version == 2 and v._version == 2 and x.grad_fn == "copy_slices" and v.grad_fn == "as_strided"
    tx = torch.ones(3, requires_grad=True) * 1
    tx.add_(1)
    tx[1:].mul_(2)
    assert tx._version == 2


# ---- saved tensors and refusals --------------------------------------------------------------
def torch_error(fn):
    with pytest.raises(RuntimeError) as e:
        fn(torch)
    return str(e.value)


def test_saved_tensor_modified_in_place_raises_at_backward_with_versions():
    def f(lib):
        x = lib.ones(3, 4, requires_grad=True) * 2
        y = x.exp()
        y.add_(1)         # exp saved its result
        y.add_(1)
        return y.sum()
    assert "is at version 2; expected version 0 instead" in torch_error(lambda lib: f(lib).backward())
    z = f(ff)
    with pytest.raises(RuntimeError) as e:
        z.backward()
    msg = str(e.value)
    assert "modified by an inplace operation: [f32 [3, 4]]" in msg
    assert "is at version 2; expected version 0 instead" in msg


def test_saved_input_overwritten_raises_but_original_self_is_kept():
    # mul saved x; writing x afterwards breaks it (both raise) ...
    def broken(lib):
        w = lib.ones(3, requires_grad=True)
        x = w * 2
        y = x * w
        x.add_(1)
        y.sum().backward()
    torch_error(broken)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        broken(ff)

    # ... but x.mul_(y) itself keeps x's old values for y's gradient (PyTorch's original self)
    def ok(lib, a, b):
        x = a * 1
        x.mul_(b)
        x.sin_()
        return x.sum()
    grads_match(ok, rnd(5), rnd(5, seed=1))


@pytest.mark.parametrize("device", DEVICES)
def test_refusals_with_pytorch_words(device):
    w = ff.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[1:].mul_(2)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w[0] = 3.0
    with ff.no_grad():
        v = (w * 1)[1:]
    with pytest.raises(RuntimeError, match="a view was created in no_grad mode"):
        v.mul_(w[1:])
    assert w.tolist() == [1.0, 1.0, 1.0]
    for lib in (torch,):  # PyTorch refuses the same three
        tw = lib.ones(3, requires_grad=True)
        for bad in (lambda: tw.add_(1), lambda: tw[1:].mul_(2), lambda: tw.__setitem__(0, 3.0)):
            with pytest.raises(RuntimeError):
                bad()


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_updates_of_parameters_stay_allowed(device):
    w = ff.tensor(rnd(3), device=device, requires_grad=True)
    (w * w).sum().backward()
    with ff.no_grad():
        w.sub_(0.1 * w.grad)
        w[0] = 5.0
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w.tolist()[0] == 5.0
    opt = ff.optim.SGD([w], lr=0.1)
    opt.zero_grad()
    (w * 3).sum().backward()
    opt.step()
    close(w, np.array([5.0 - 0.3, *(np.array(w.tolist()[1:]))], np.float32))


def test_data_is_a_detached_alias_sharing_the_version():
    x = ff.ones(3, requires_grad=True) * 2
    d = x.data
    assert not d.requires_grad and d.is_leaf
    d.add_(1)
    assert x.tolist() == [3.0, 3.0, 3.0] and x._version == d._version == 1


# ---- graphs -----------------------------------------------------------------------------------
def test_compiled_step_with_inplace_ops_matches_eager():
    rs = np.random.RandomState(0)
    X, Y = rs.randn(16, 6).astype(np.float32), rs.randn(16, 3).astype(np.float32)

    def model():
        ff.manual_seed(0)
        return fnn.Sequential(fnn.Linear(6, 8), fnn.ReLU(inplace=True), fnn.Linear(8, 3))

    def step(m, opt, x, y):
        out = m(x)
        out += x[:, :3]
        out.tanh_()
        loss = ((out - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    losses = []
    for compiled in (False, True):
        m = model()
        opt = ff.optim.SGD(m.parameters(), lr=0.1)
        fn = ff.compile(step) if compiled else step
        losses.append([float(fn(m, opt, ff.tensor(X), ff.tensor(Y))) for _ in range(5)])
    close(np.array(losses[0]), np.array(losses[1]), 1e-6)
    assert losses[0][-1] < losses[0][0]


# ---- a randomized differential test ----------------------------------------------------------
VIEWS = [lambda t: t[1:], lambda t: t[:, 1:3], lambda t: t.t(), lambda t: t[::2], lambda t: t[0],
         lambda t: t.reshape(-1)[2:7], lambda t: t.unsqueeze(0)[0, 1]]
INPLACE = [lambda t, o: t.add_(o), lambda t, o: t.mul_(o), lambda t, o: t.sub_(o * 0.5),
           lambda t, o: t.tanh_(), lambda t, o: t.sigmoid_(), lambda t, o: t.clamp_(-0.5, 0.8),
           lambda t, o: t.exp_(), lambda t, o: t.copy_(o), lambda t, o: t.zero_(), lambda t, o: t.relu_()]
OUTOFPLACE = [lambda t: t * 2, lambda t: t.sin(), lambda t: t + 1, lambda t: t.exp() * 0.1]


def random_program(seed):
    """A program over a [4, 5] leaf: a non-leaf y, then steps that either write in place into
    y or a view of it (operand: a function of the leaf), or replace a view by an out-of-place
    result; returns the loss. Each step is drawn from seed, so both libraries run the same."""
    r = random.Random(seed)
    steps = [(r.randrange(3), r.randrange(len(VIEWS)), r.randrange(len(INPLACE)), r.randrange(len(OUTOFPLACE)))
             for _ in range(r.randint(1, 4))]
    keep = r.randrange(len(VIEWS))

    def program(lib, x):
        y = x * 1.5
        kept = VIEWS[keep](y)  # made before the writes: sees them
        for kind, v, op, oop in steps:
            if kind == 0:
                INPLACE[op](y, OUTOFPLACE[oop](x))
            else:
                t = VIEWS[v](y)
                INPLACE[op](t, OUTOFPLACE[oop](VIEWS[v](x)))
        return (y * y).sum() + kept.sum() * 0.5
    return program


@pytest.mark.parametrize("device", DEVICES)
def test_random_programs_match_pytorch(device):
    x0 = rnd(4, 5)
    agree_errors = 0
    for seed in range(40 if device == "cpu_ref" else 12):
        prog = random_program(seed)
        fx, tx = ff.tensor(x0, device=device, requires_grad=True), torch.tensor(x0, requires_grad=True)
        try:
            tl = prog(torch, tx)
            tl.backward()
            t_err = None
        except RuntimeError as e:
            t_err = str(e)
        try:
            fl = prog(ff, fx)
            fl.backward()
            f_err = None
        except RuntimeError as e:
            f_err = str(e)
        assert (t_err is None) == (f_err is None), (seed, t_err, f_err)
        if t_err is None:
            close(fl, tl, 1e-4)
            close(fx.grad, tx.grad, 1e-4)
        else:
            agree_errors += 1
    assert agree_errors < (40 if device == "cpu_ref" else 12)  # most programs run


def test_recorded_inplace_ops_leave_no_tensor_alive(live_counter):
    """The nodes of an in-place op never hold the tensor they are attached to (a cycle): the
    graph, its views and bases all go when the last reference does."""
    x0 = rnd(4, 5)
    for seed in range(10):
        x = ff.tensor(x0, requires_grad=True)
        try:
            random_program(seed)(ff, x).backward()
        except RuntimeError:
            pass
        del x
    w = ff.tensor(rnd(3, 4), requires_grad=True)
    h = ff.zeros(2, 3, 4)
    h[0] = w * 2
    h[1].add_(w)
    h.relu_()
    (h ** 2).sum().backward()
    del w, h


@pytest.mark.parametrize("how", ["split", "chunk", "unbind"])
def test_outputs_of_multi_view_functions_refuse_recorded_inplace_ops(how):
    """PyTorch refuses an in-place op under autograd on an output of split/chunk/unbind (or a
    view of one); under no_grad, or with nothing requiring grad, it is allowed."""
    pieces = {"split": lambda t: t.split(2), "chunk": lambda t: t.chunk(2), "unbind": lambda t: t.unbind(0)}[how]
    for lib in (torch, ff):
        x = lib.ones(4, 3, requires_grad=True) * 2
        a = pieces(x)[0]
        with pytest.raises(RuntimeError, match="modified inplace"):
            a.mul_(2)
        with pytest.raises(RuntimeError, match="modified inplace"):
            a[0:1].add_(1)
        with lib.no_grad():
            a.mul_(2)
        plain = pieces(lib.ones(4, 3))[1]
        plain.add_(1)
        assert float(plain.sum()) == (6.0 if how == "unbind" else 12.0)
        assert float(x.detach().sum()) == (30.0 if how == "unbind" else 36.0)
