"""fusionflow.torch_device: FusionFlow backends as a PyTorch device (issue 51).

Each test runs a PyTorch computation twice, on PyTorch's CPU and on ffd.device(b) for
the backends b that are built (cpu, cpu_blas, opencl on PoCL in CI), and compares values,
dtypes and gradients. PyTorch's own autograd, views and in-place rules run above the
device; FusionFlow runs the kernels. strict() proves a computation needed no CPU fallback.
"""
import copy
import io
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from conftest import DEVICES, import_torch_device  # noqa: E402

ffd = import_torch_device()

BACKENDS = ["cpu"] + [b for b in ("cpu_blas", "opencl") if b in DEVICES]


@pytest.fixture(params=BACKENDS)
def dev(request):
    return ffd.device(request.param)


def same(ours, ref, tol=1e-5):
    assert ours.device.type == ffd.device("cpu").type
    got = ours.cpu()
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(got, ref, atol=tol, rtol=tol, equal_nan=True)
    else:
        assert torch.equal(got, ref), (got, ref)


def test_device_identity_and_transfers(dev):
    assert dev.type in ("privateuseone", "fusionflow")
    assert ffd.device(ffd.backend_name(dev)) == dev        # one index per backend, stable
    a = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    d = a.to(dev)
    assert d.device == dev and d.shape == a.shape and d.stride() == a.stride()
    assert torch.equal(d.cpu(), a)
    assert torch.equal(d.transpose(0, 2).cpu(), a.transpose(0, 2))      # a strided view downloads in order
    assert torch.equal(d[:, 1:, ::2].contiguous().cpu(), a[:, 1:, ::2])
    assert d[1, 2, 3].item() == 23.0
    for dt in (torch.float64, torch.int64, torch.int32, torch.bool, torch.float16, torch.bfloat16, torch.uint8):
        x = (torch.arange(6) % 3).to(dt)
        assert torch.equal(x.to(dev).cpu(), x), dt
    h = torch.zeros(3, 4)
    h.copy_(d[0].t().t())                                    # device -> a host tensor
    assert torch.equal(h, a[0])
    e = torch.empty(4, 3, device=dev).t()                    # host -> a strided device view
    e.copy_(a[1])
    assert torch.equal(e.cpu(), a[1])
    e.copy_(torch.tensor(2.5))                               # broadcast from a 0-d host tensor
    assert torch.equal(e.cpu(), torch.full((3, 4), 2.5))


def test_views_alias_the_device_memory(dev):
    a = torch.arange(12.0).reshape(3, 4)
    d = a.to(dev)
    v = d[1:]
    v.add_(1)                                     # through a view into its base
    a[1:] += 1
    assert torch.equal(d.cpu(), a)
    d.t()[0].mul_(10)                             # a strided view's in-place op
    a.t()[0].mul_(10)
    assert torch.equal(d.cpu(), a)
    w = d.view(4, 3)
    w.zero_()
    assert torch.equal(d.cpu(), torch.zeros(3, 4))
    r = torch.empty(0, device=dev)
    r.resize_(5)
    r.fill_(3)
    r.resize_(7)                                   # grows, keeps the first 5
    assert torch.equal(r[:5].cpu(), torch.full((5,), 3.0))


def test_in_place_and_view_autograd_is_pytorch_s(dev):
    """PyTorch's own in-place rules: out += shortcut(x) in a residual block, a slice
    written in place, a leaf refused."""
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    grads = []
    for d in ("cpu", dev):
        xl = x.clone().to(d).requires_grad_()
        y = torch.tanh(xl) * 2
        y += xl                       # the ResNet block's out += shortcut(x)
        y[1:3] *= 3                   # an in-place write through a view
        loss = (y.sigmoid() ** 2).sum()
        loss.backward()
        grads.append((loss.detach().cpu(), xl.grad.cpu()))
    torch.testing.assert_close(grads[1][0], grads[0][0])
    torch.testing.assert_close(grads[1][1], grads[0][1], atol=1e-6, rtol=1e-5)
    leaf = torch.zeros(3, device=dev, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.add_(1)


BINARY = [torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum, torch.eq, torch.ne,
          torch.lt, torch.le, torch.gt, torch.ge]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_ops_dtypes_broadcasting_strides(dev, op):
    torch.manual_seed(1)
    a = torch.randn(3, 4)
    b = torch.randn(4, 3).t()                       # a transposed operand
    i = torch.randint(-3, 4, (3, 1))
    cases = [(a, b), (a, i), (i, a[0]), (a.double(), a[0]), (i, i.t())]
    with ffd.strict():
        for x, y in cases:
            if op is torch.div and not x.is_floating_point() and not y.is_floating_point():
                y = y.abs() + 1
            same(op(x.to(dev), y.to(dev)), op(x, y))
            same(op(x.to(dev), torch.tensor(1.5, dtype=torch.float64)), op(x, torch.tensor(1.5, dtype=torch.float64)))
            if op not in (torch.maximum, torch.minimum):      # these take tensors only
                same(op(x.to(dev), 2), op(x, 2))            # a Python number: weak, as PyTorch's
                same(op(x.to(dev), 0.5), op(x, 0.5))


def test_in_place_and_out_forms(dev):
    torch.manual_seed(2)
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    with ffd.strict():
        for name in ("add_", "sub_", "mul_", "div_"):
            x, xd = a.clone(), a.clone().to(dev)
            getattr(x, name)(b)
            getattr(xd, name)(b.to(dev))
            same(xd, x)
        x, xd = a.clone(), a.clone().to(dev)
        x.add_(b, alpha=-2.5)
        xd.add_(b.to(dev), alpha=-2.5)
        same(xd, x)
        out = torch.empty(0, device=dev)
        torch.mul(a.to(dev), b.to(dev), out=out)         # out= resized from empty
        same(out, a * b)
        for name in ("exp_", "tanh_", "sigmoid_", "abs_", "neg_", "relu_", "sqrt_"):
            x, xd = a.abs().clone(), a.abs().clone().to(dev)
            getattr(x, name)()
            getattr(xd, name)()
            same(xd, x)
    ints = torch.arange(4).to(dev)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ints.add_(0.5)                                   # PyTorch's casting rule for in-place


@pytest.mark.parametrize("fn", ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "neg",
                                "abs", "sign", "relu", "floor", "ceil", "round", "reciprocal", "log1p", "expm1"])
def test_unary_ops(dev, fn):
    torch.manual_seed(3)
    x = torch.randn(5, 6) * 3
    if fn in ("log", "sqrt", "rsqrt", "log1p"):
        x = x.abs() + 0.1
    f = getattr(torch, fn)
    with ffd.strict():
        same(f(x.to(dev)), f(x))
        same(f(x.t().to(dev)), f(x.t()))
        if fn in ("exp", "neg", "abs", "sigmoid"):
            i = torch.arange(-3, 4)
            same(f(i.to(dev)), f(i))                        # an int tensor: float result where PyTorch's is


def test_reductions(dev):
    torch.manual_seed(4)
    x = torch.randn(3, 4, 5)
    i = torch.randint(-5, 5, (3, 4))
    with ffd.strict():
        same(x.to(dev).sum(), x.sum())
        same(x.to(dev).sum((0, 2), keepdim=True), x.sum((0, 2), keepdim=True))
        same(x.to(dev).mean(1), x.mean(1))
        same(x.transpose(0, 2).to(dev).mean(-1), x.transpose(0, 2).mean(-1))
        same(i.to(dev).sum(1), i.sum(1))                     # ints sum in int64
        same(i.to(dev).bool().sum(), i.bool().sum())
        same(x.to(dev).amax(2), x.amax(2))
        same(x.to(dev).amin((0, 1)), x.amin((0, 1)))
        same(x.to(dev).argmax(1), x.argmax(1))
        same(x.to(dev).argmax(), x.argmax())
        v, k = x.to(dev).max(1)
        rv, rk = x.max(1)
        same(v, rv)
        same(k, rk)
        same(x.to(dev).max(), x.max())
        same(x.to(dev).var(1), x.var(1))
        same(x.to(dev).std(0, unbiased=False), x.std(0, unbiased=False))
        same(x.to(dev).sum(1, dtype=torch.float64), x.sum(1, dtype=torch.float64))


def test_matrix_products(dev):
    torch.manual_seed(5)
    a, b, c = torch.randn(6, 7), torch.randn(7, 5), torch.randn(6, 5)
    ba, bb = torch.randn(3, 6, 7), torch.randn(3, 7, 5)
    with ffd.strict():
        same(a.to(dev) @ b.to(dev), a @ b, 1e-4)
        same(a.t().to(dev).t() @ b.t().to(dev).t(), a @ b, 1e-4)                  # both operands strided views
        same(torch.addmm(c.to(dev), a.to(dev), b.to(dev), beta=0.5, alpha=2), torch.addmm(c, a, b, beta=0.5, alpha=2),
             1e-4)
        nan = torch.full((6, 5), float("nan"))
        same(torch.addmm(nan.to(dev), a.to(dev), b.to(dev), beta=0), torch.addmm(nan, a, b, beta=0), 1e-4)
        same(torch.bmm(ba.to(dev), bb.to(dev)), torch.bmm(ba, bb), 1e-4)
        same(ba.to(dev) @ bb[0].to(dev), ba @ bb[0], 1e-4)            # matmul's broadcasting decomposes
        same(torch.baddbmm(c.to(dev), ba.to(dev), bb.to(dev)), torch.baddbmm(c, ba, bb), 1e-4)
        same(torch.dot(a[0].to(dev), a[1].to(dev)), torch.dot(a[0], a[1]), 1e-4)
        lin = F.linear(a.to(dev), b.t().to(dev), c[0].to(dev))
        same(lin, F.linear(a, b.t(), c[0]), 1e-4)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        a.to(dev) @ a.to(dev)


def test_losses_and_softmax_with_gradients(dev):
    torch.manual_seed(6)
    x = torch.randn(8, 5)
    t = torch.tensor([0, 4, 2, -100, 1, 1, 3, 0])
    w = torch.rand(5) + 0.5
    for kw in ({}, {"weight": w}, {"reduction": "sum"}, {"reduction": "none", "weight": w}, {"ignore_index": -100}):
        results = []
        for d in ("cpu", dev):
            xl = x.clone().to(d).requires_grad_()
            kwd = {k: (v.to(d) if torch.is_tensor(v) else v) for k, v in kw.items()}
            with ffd.strict():
                loss = F.cross_entropy(xl, t.to(d), **kwd)
                (loss * torch.arange(1.0, loss.numel() + 1).reshape(loss.shape).to(d)).sum().backward()
            results.append((loss.detach().cpu(), xl.grad.cpu()))
        torch.testing.assert_close(results[1][0], results[0][0], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(results[1][1], results[0][1], atol=1e-6, rtol=1e-5)
    with ffd.strict():
        xd = x.to(dev).requires_grad_()
        s = F.softmax(xd, 1)
        (s * torch.arange(5.0).to(dev)).sum().backward()
    xr = x.clone().requires_grad_()
    (F.softmax(xr, 1) * torch.arange(5.0)).sum().backward()
    same(s.detach(), F.softmax(x, 1))
    same(xd.grad, xr.grad)


def test_embedding_and_gather_gradients(dev):
    torch.manual_seed(7)
    idx = torch.tensor([[1, 3, 3], [0, 9, 1]])
    out = []
    for d in ("cpu", dev):
        torch.manual_seed(7)
        emb = nn.Embedding(10, 4, padding_idx=3).to(d)
        with ffd.strict():
            y = emb(idx.to(d))
            g = torch.gather(y, 2, torch.tensor([[[0], [1], [2]], [[3], [3], [0]]]).to(d))
            (g.sum() + (y ** 2).sum()).backward()
        out.append((y.detach().cpu(), emb.weight.grad.cpu()))
    torch.testing.assert_close(out[1][0], out[0][0])
    torch.testing.assert_close(out[1][1], out[0][1])


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 5))


def _train(model, d, steps=6):
    torch.manual_seed(1)
    x = torch.randn(64, 20)
    y = torch.randint(0, 5, (64,))
    model = model.to(d)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x.to(d)), y.to(d))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() for p in model.parameters()]


def test_mlp_trains_as_on_pytorch_s_cpu_with_no_fallback(dev):
    ref_losses, ref_params = _train(_mlp(), "cpu")
    with ffd.strict():
        losses, params = _train(_mlp(), dev)
    assert losses == pytest.approx(ref_losses, rel=1e-5, abs=1e-6)
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, atol=1e-5, rtol=1e-4)


def test_adam_step_matches(dev):
    torch.manual_seed(0)
    res = []
    for d in ("cpu", dev):
        torch.manual_seed(0)
        m = nn.Linear(6, 3).to(d)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        for _ in range(3):
            opt.zero_grad()
            m(torch.ones(4, 6).to(d)).pow(2).mean().backward()
            opt.step()
        res.append(m.weight.detach().cpu())
    torch.testing.assert_close(res[1], res[0], atol=1e-6, rtol=1e-5)


def test_cnn_conv_gradients_match(dev):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 3, stride=2, groups=2),
                        nn.Flatten(), nn.Linear(4 * 6 * 6, 10))
    x = torch.randn(2, 3, 14, 14)
    t = torch.randint(0, 10, (2,))
    F.cross_entropy(net(x), t).backward()
    ref = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    netd = net.to(dev)
    with ffd.strict():
        F.cross_entropy(netd(x.to(dev)), t.to(dev)).backward()
    for p, g in zip(netd.parameters(), ref):
        torch.testing.assert_close(p.grad.cpu(), g, atol=1e-5, rtol=1e-4)


def test_fallback_warns_once_counts_and_strict_refuses(dev):
    # an op FusionFlow has no kernel for (a Bessel function)
    x = torch.arange(6.0).reshape(2, 3)
    d = x.to(dev)
    ffd.reset_fallback_counts()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c1 = torch.special.bessel_j0(d)
        c2 = torch.special.bessel_j0(d)
    assert c1.device == dev
    assert torch.equal(c2.cpu(), torch.special.bessel_j0(x))
    assert sum("bessel_j0" in str(w.message) for w in caught) <= 1    # PyTorch's TORCH_WARN: once per op
    assert sum(n for op, n in ffd.fallback_counts().items() if "bessel_j0" in op) == 2
    with ffd.strict():
        with pytest.raises(RuntimeError, match="bessel_j0.*no FusionFlow kernel"):
            torch.special.bessel_j0(d)


def test_errors_name_the_problem():
    with pytest.raises(RuntimeError, match="no_such_backend"):
        ffd.device("no_such_backend")
    d = torch.zeros(3, device=ffd.device("cpu"))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device|expected all tensors"):
        d + torch.zeros(3)                               # a host tensor with dims
    with pytest.raises(RuntimeError, match="is not a FusionFlow backend"):
        torch.zeros(2, device=torch.device(d.device.type, 15))


def test_memory_goes_back_to_the_backend():
    import ctypes
    from fusionflow._lib import lib
    lib.ff_backend_load.restype = ctypes.c_void_p
    be = ctypes.c_void_p(lib.ff_backend_load(b"cpu"))
    def in_use():
        n, c, p = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
        assert lib.ff_backend_memory_stats(be, ctypes.byref(n), ctypes.byref(c), ctypes.byref(p)) == 0
        return n.value
    dev = ffd.device("cpu")
    base = in_use()
    xs = [torch.ones(1000, device=dev) * i for i in range(5)]
    assert in_use() >= base + 5 * 4000
    v = xs[0][10:20]                                      # a view keeps its storage alive
    del xs
    assert in_use() >= base + 4000
    del v
    assert in_use() == base


def test_save_and_load_through_the_host(dev):
    torch.manual_seed(0)
    m = nn.Linear(3, 2).to(dev)
    buf = io.BytesIO()
    torch.save({"state": m.state_dict(), "t": torch.arange(5).to(dev), "h": torch.ones(2, dtype=torch.bfloat16).to(dev)},
               buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["state"]["weight"].device == dev
    assert torch.equal(back["state"]["weight"].cpu(), m.weight.detach().cpu())
    assert torch.equal(back["t"].cpu(), torch.arange(5))
    assert back["h"].dtype == torch.bfloat16 and torch.equal(back["h"].cpu(), torch.ones(2, dtype=torch.bfloat16))


def _grads_both(fn, inputs, dev, tol=1e-5):
    """fn(*inputs) on the CPU and on dev (strict: no fallback): values and input gradients equal."""
    outs = []
    for d in ("cpu", dev):
        xs = [x.clone().to(d).requires_grad_(x.is_floating_point()) for x in inputs]
        if d != "cpu":
            with ffd.strict():
                y = fn(*xs)
                (y * torch.linspace(0.5, 1.5, y.numel()).reshape(y.shape).to(d)).sum().backward()
        else:
            y = fn(*xs)
            (y * torch.linspace(0.5, 1.5, y.numel()).reshape(y.shape)).sum().backward()
        outs.append((y.detach().cpu(), [x.grad.cpu() if x.grad is not None else None for x in xs]))
    torch.testing.assert_close(outs[1][0], outs[0][0], atol=tol, rtol=tol)
    for g, r in zip(outs[1][1], outs[0][1]):
        if r is not None:
            torch.testing.assert_close(g, r, atol=tol, rtol=tol)


def test_clamp_addcmul_addcdiv_cat(dev):
    torch.manual_seed(8)
    a, b, c = torch.randn(3, 4), torch.randn(3, 4), torch.rand(3, 4) + 0.5
    with ffd.strict():
        same(a.to(dev).clamp(-0.5, 0.5), a.clamp(-0.5, 0.5))
        same(a.to(dev).clamp(min=0), a.clamp(min=0))
        same(torch.arange(6).to(dev).clamp(max=3), torch.arange(6).clamp(max=3))
        same(torch.addcmul(a.to(dev), b.to(dev), c.to(dev), value=0.5), torch.addcmul(a, b, c, value=0.5))
        same(torch.addcdiv(a.to(dev), b.to(dev), c.to(dev), value=-2), torch.addcdiv(a, b, c, value=-2))
        same(torch.cat([a.to(dev), b.t().to(dev).t()], 1), torch.cat([a, b], 1))
        i = torch.arange(4).reshape(1, 4)
        same(torch.cat([a.to(dev), i.to(dev)]), torch.cat([a, i]))                 # promoted to f32
        same(torch.cat([torch.empty(0).to(dev), a.to(dev)]), torch.cat([torch.empty(0), a]))  # legacy empty
    _grads_both(lambda x, y: torch.cat([x, y * 2], 0).clamp(-1, 1), [a, b], dev)


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_train_and_eval(dev, train):
    torch.manual_seed(9)
    x = torch.randn(4, 3, 5, 5) * 2 + 1
    res = []
    for d in ("cpu", dev):
        torch.manual_seed(9)
        bn = nn.BatchNorm2d(3).to(d)
        with torch.no_grad():
            bn.weight.copy_(torch.tensor([0.5, 1.0, 2.0]))
            bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
            bn.running_mean.copy_(torch.tensor([0.2, 0.9, 1.1]))
            bn.running_var.copy_(torch.tensor([3.0, 4.0, 5.0]))
        bn.train(train)
        xd = x.clone().to(d).requires_grad_()
        with ffd.strict() if d != "cpu" else warnings.catch_warnings():
            y = bn(xd)
            (y * torch.linspace(0, 1, y.numel()).reshape(y.shape).to(d)).sum().backward()
        res.append([t.detach().cpu() for t in (y, xd.grad, bn.weight.grad, bn.bias.grad, bn.running_mean,
                                                 bn.running_var)])
    for got, ref in zip(*res[::-1]):
        torch.testing.assert_close(ref, got, atol=1e-5, rtol=1e-4)


def test_layer_norm_mse_bce_gradients(dev):
    torch.manual_seed(10)
    x, w, b = torch.randn(2, 3, 8), torch.rand(8) + 0.5, torch.randn(8)
    _grads_both(lambda x, w, b: F.layer_norm(x, (8,), w, b, 1e-5), [x, w, b], dev)
    _grads_both(lambda x: F.layer_norm(x, (3, 8)), [x], dev)
    p, t = torch.rand(4, 5) * 0.98 + 0.01, torch.rand(4, 5)
    for red in ("mean", "sum", "none"):
        _grads_both(lambda p, t: F.mse_loss(p, t, reduction=red), [p, t], dev)
        _grads_both(lambda p: F.binary_cross_entropy(p, t.to(p.device), reduction=red), [p], dev)


def test_a_backend_registered_after_the_first_backward_pass():
    """PyTorch's engine sizes its device queues at the first backward; a device made later
    must still run backward (a fresh process: this one has run backward already)."""
    import subprocess
    import sys
    code = ("import torch, fusionflow.torch_device as ffd\n"
            "a = torch.ones(3, device=ffd.device('cpu'), requires_grad=True); (a * 2).sum().backward()\n"
            "for name in %r:\n"
            "    b = torch.ones(3, device=ffd.device(name), requires_grad=True); (b * 3).sum().backward()\n"
            "    assert b.grad.cpu().tolist() == [3.0, 3.0, 3.0], b.grad\n"
            "print('ok')\n" % (BACKENDS[1:] or ["cpu"],))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_optimizer_built_before_model_to_device_follows_the_move(dev):
    """Module.to() moves parameters in place (param.data = ...) only where PyTorch deems the
    two tensor types compatible; PyTorch 1.13 knows CPU/CUDA/... only, so the device says so
    itself, or an optimizer made first (mnist_forward_forward's Layer) keeps stale CPU copies."""
    torch.manual_seed(0)
    m = nn.Linear(3, 2)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    w = m.weight
    m.to(dev)
    assert m.weight is w and w.device == dev and opt.param_groups[0]["params"][0] is w
    before = w.detach().cpu().clone()
    m(torch.ones(4, 3, device=dev)).pow(2).mean().backward()
    opt.step()
    assert (w.detach().cpu() - before).abs().max() > 0.05
    m.cpu()
    assert m.weight is w and w.device.type == "cpu"


def test_indexing_masked_fill_topk(dev):
    torch.manual_seed(11)
    x = torch.randn(4, 5, 3)
    idx = torch.tensor([3, 0, 0, -1])
    mask = x > 0.3
    with ffd.strict():
        same(x.to(dev)[idx.to(dev)], x[idx])
        same(x.to(dev)[idx], x[idx])                                   # host indices, as PyTorch allows
        same(x.to(dev)[:, [1, -1]], x[:, [1, -1]])
        same(x.to(dev)[idx.to(dev), :, torch.tensor([2, 1, 0, 0]).to(dev)], x[idx, :, torch.tensor([2, 1, 0, 0])])
        same(x.to(dev)[mask.to(dev)], x[mask])
        for acc in (False, True):
            y, yd = x.clone(), x.clone().to(dev)
            y.index_put_((idx,), torch.ones(5, 3), accumulate=acc)
            yd.index_put_((idx.to(dev),), torch.ones(5, 3).to(dev), accumulate=acc)
            same(yd, y)
        y, yd = x.clone(), x.clone().to(dev)
        y[range(4), [0, 2, 4, 1]] = -7.0
        yd[range(4), [0, 2, 4, 1]] = -7.0
        same(yd, y)
        same(x.to(dev).masked_fill(mask.to(dev), -1e9), x.masked_fill(mask, -1e9))
        v, i = torch.topk(x.to(dev), 2, dim=1)
        rv, ri = torch.topk(x, 2, dim=1)
        same(v, rv)
        same(i, ri)
    _grads_both(lambda x: x[idx.to(x.device)] * 2, [x], dev)


def test_gelu_leaky_relu_norm_roll_arange(dev):
    torch.manual_seed(12)
    x = torch.randn(3, 7)
    for approx in ("none", "tanh"):
        _grads_both(lambda x: F.gelu(x, approximate=approx), [x], dev)
    _grads_both(lambda x: F.leaky_relu(x, 0.2), [x], dev)
    _grads_both(lambda x: x.norm(2, 1, keepdim=True), [x], dev)
    with ffd.strict():
        same(torch.roll(x.to(dev), 2, 1), torch.roll(x, 2, 1))
        same(torch.roll(x.to(dev), (-1, 3), (0, 1)), torch.roll(x, (-1, 3), (0, 1)))
        same(torch.roll(x.to(dev), 5), torch.roll(x, 5))
        same(torch.triu(x.to(dev), 1), torch.triu(x, 1))
        same(torch.tril(x.to(dev), -1), torch.tril(x, -1))
        same(torch.arange(2, 11, 3, device=dev), torch.arange(2, 11, 3))
        same(torch.arange(0.5, 2.0, 0.25, device=dev), torch.arange(0.5, 2.0, 0.25))


def test_load_a_host_checkpoint_onto_the_device(dev, tmp_path):
    """nanoGPT's resume: torch.load(ckpt, map_location=device) of a checkpoint saved on the CPU."""
    torch.manual_seed(0)
    m = nn.Linear(4, 3)
    torch.save({"model": m.state_dict(), "iter": 7, "view": torch.arange(10.0)[2:8:2]}, tmp_path / "ckpt.pt")
    ck = torch.load(tmp_path / "ckpt.pt", map_location=str(dev))
    assert ck["iter"] == 7 and ck["model"]["weight"].device == dev
    assert torch.equal(ck["model"]["weight"].cpu(), m.weight.detach())
    assert torch.equal(ck["view"].cpu(), torch.tensor([2.0, 4.0, 6.0]))
    m2 = nn.Linear(4, 3).to(dev)
    m2.load_state_dict(ck["model"])
    assert torch.equal(m2.bias.detach().cpu(), m.bias.detach())


@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False),
                                          (2, 3, 1, 1, True), ((3, 2), (2, 1), (1, 0), 1, False)])
def test_max_pool_values_indices_and_gradients(dev, k, s, p, d, ceil):
    torch.manual_seed(13)
    x = torch.randint(-3, 4, (2, 3, 9, 8)).float()          # many ties: the first maximum wins
    x[0, 0, 2, 2] = float("nan")
    with ffd.strict():
        v, i = F.max_pool2d(x.to(dev), k, s, p, d, ceil_mode=ceil, return_indices=True)
    rv, ri = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)
    same(v, rv)
    same(i, ri)
    _grads_both(lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil), [torch.nan_to_num(x)], dev)
    _grads_both(lambda x: F.max_pool2d(x, k, s, p, d, ceil_mode=ceil), [torch.nan_to_num(x[0])], dev)  # 3-D


def test_random_numbers_on_the_device(dev):
    torch.manual_seed(5)
    with ffd.strict():
        a = torch.empty(20000, device=dev).normal_(2.0, 3.0)
        u = torch.empty(20000, device=dev).uniform_(-1, 1)
        b = torch.empty(20000, device=dev).bernoulli_(0.25)
        r = torch.empty(20000, dtype=torch.int64, device=dev).random_(3, 9)
        d = F.dropout(torch.ones(20000, device=dev), 0.5)
        m = torch.multinomial(torch.tensor([0.0, 1.0, 3.0]).to(dev), 4000, replacement=True)
    a, u, b, r, d, m = (t.cpu() for t in (a, u, b, r, d, m))
    assert abs(a.mean() - 2.0) < 0.1 and abs(a.std() - 3.0) < 0.1
    assert u.min() >= -1 and u.max() < 1 and abs(u.mean()) < 0.03
    assert set(b.unique().tolist()) == {0.0, 1.0} and abs(b.mean() - 0.25) < 0.02
    assert set(r.unique().tolist()) == set(range(3, 9))
    assert set(d.unique().tolist()) == {0.0, 2.0} and abs(d.mean() - 1.0) < 0.05
    assert (m != 0).all() and abs((m == 2).float().mean() - 0.75) < 0.03
    torch.manual_seed(5)
    again = torch.empty(20000, device=dev).normal_(2.0, 3.0).cpu()
    assert torch.equal(again, a)                              # torch.manual_seed seeds the device
    with pytest.raises(RuntimeError, match="Generator cannot draw on a FusionFlow device"):
        torch.empty(3, device=dev).normal_(generator=torch.Generator())


def test_elu_and_deepcopy(dev):
    torch.manual_seed(14)
    x = torch.randn(4, 6)
    _grads_both(lambda x: F.elu(x, 0.7), [x], dev)
    _grads_both(lambda x: F.selu(x), [x], dev)
    m = nn.Linear(3, 2).to(dev)
    c = copy.deepcopy(m)
    assert c.weight.device == dev and torch.equal(c.weight.detach().cpu(), m.weight.detach().cpu())
    with torch.no_grad():
        c.weight.add_(1)
    assert not torch.equal(c.weight.detach().cpu(), m.weight.detach().cpu())  # a copy, not an alias
    t = torch.arange(3.0).to(dev)
    assert torch.equal(copy.deepcopy(t).cpu(), t.cpu())


def _guarded_plugin():
    from fusionflow._lib import library_path
    path = os.path.join(os.path.dirname(os.path.abspath(library_path)), "..", "guarded", "libff_backend_guarded.so")
    return os.path.abspath(path)


@pytest.mark.skipif(not os.path.exists(_guarded_plugin()), reason="tests/guarded's plugin not built")
def test_a_third_party_backend_trains_through_pytorch_unchanged():
    """The claim that a backend author gets PyTorch for free: tests/guarded's plugin (opaque
    handles; a host access to its memory outside its own entries faults) becomes a PyTorch
    device by its path, and an MLP with Adam and a CNN train on it as on PyTorch's CPU, with no
    CPU fallback."""
    dev = ffd.device(_guarded_plugin())
    assert ffd.backend_name(dev) == "guarded"
    ref_losses, ref_params = _train(_mlp(), "cpu")
    with ffd.strict():
        losses, params = _train(_mlp(), dev)
    assert losses == pytest.approx(ref_losses, rel=1e-5, abs=1e-6)
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                        nn.Linear(4 * 3 * 3, 3))
    x, t = torch.randn(5, 1, 8, 8), torch.tensor([0, 1, 2, 1, 0])
    res = []
    for d in ("cpu", dev):
        m = copy.deepcopy(net).to(d)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        with ffd.strict() if d != "cpu" else warnings.catch_warnings():
            for _ in range(3):
                opt.zero_grad()
                loss = F.cross_entropy(m(x.to(d)), t.to(d))
                loss.backward()
                opt.step()
        res.append(loss.item())
    assert res[1] == pytest.approx(res[0], rel=1e-5)


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [(2, 2, 0, False, True, None), (3, 2, 1, True, True, None),
                                                (3, 2, 1, True, False, None), (3, 1, 1, False, False, None),
                                                ((3, 2), (2, 1), (1, 0), False, True, 5), (2, 3, 1, True, False, None)])
def test_avg_pool_values_and_gradients(dev, k, s, p, ceil, cip, div):
    torch.manual_seed(15)
    x = torch.randn(2, 3, 9, 8)
    f = lambda x: F.avg_pool2d(x, k, s, p, ceil_mode=ceil, count_include_pad=cip, divisor_override=div)  # noqa: E731
    _grads_both(f, [x], dev)
    _grads_both(f, [x[0]], dev)                                                   # a 3-D input


@pytest.mark.parametrize("out", [(1, 1), (3, 4), (5, 3), (9, 8)])
def test_adaptive_avg_pool(dev, out):
    torch.manual_seed(16)
    _grads_both(lambda x: F.adaptive_avg_pool2d(x, out), [torch.randn(2, 3, 9, 8)], dev)
    _grads_both(lambda x: F.adaptive_avg_pool2d(x, out), [torch.randn(3, 7, 5)], dev)


def test_overlapping_writes_are_refused_as_pytorch_refuses_them(dev):
    a = torch.arange(6.0).to(dev)
    with pytest.raises(RuntimeError, match="single memory location|refer to a single memory"):
        a[1:].copy_(a[:-1])                       # partial overlap
    e = torch.zeros(1).to(dev).expand(4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.add_(1)                                 # an expanded tensor written in place
    assert torch.equal(a.cpu(), torch.arange(6.0))                     # nothing written
    b = a.clone()
    b.copy_(b)                                    # the same tensor: a no-op
    assert torch.equal(b.cpu(), torch.arange(6.0))


def test_dlpack_both_ways(dev):
    """DLPack, which PyTorch 1.13 refuses for this device ("Cannot pack tensors on
    privateuseone"): PyTorch, NumPy and FusionFlow take a device tensor's memory without a
    copy on a host-memory backend, and a device tensor can be made over theirs."""
    import numpy as np
    import fusionflow as ff
    a = torch.arange(12.0).reshape(3, 4)
    d = a.to(dev)
    if ffd.backend_name(dev) not in ("cpu", "cpu_blas"):      # memory the host cannot see: refused, or copied
        with pytest.raises(RuntimeError, match="does not keep tensors in host memory"):
            torch.utils.dlpack.to_dlpack(d)
        t = ffd.from_dlpack(a, dev)
        a[0, 0] = 7.0
        assert t.device == dev and t[0, 0].item() == 0.0 and torch.equal(t.cpu()[1:], a[1:])
        return
    assert d.__dlpack_device__() == (1, 0)
    v = torch.from_dlpack(d[:, 1:].t())                      # PyTorch's consumer: a CPU view of device memory
    assert v.device.type == "cpu" and v.stride() == (1, 4) and torch.equal(v, a[:, 1:].t())
    v[0, 0] = 100.0
    assert d[0, 1].item() == 100.0                            # one memory
    n = np.from_dlpack(d)
    assert n.shape == (3, 4) and n[0, 1] == 100.0
    f = ff.from_dlpack(d)
    assert f.tolist()[0] == [0.0, 100.0, 2.0, 3.0]
    del d, f
    assert v[0, 0].item() == 100.0                            # the capsule kept the storage alive
    h = torch.ones(2, 3)
    t = ffd.from_dlpack(h, dev)                              # a device tensor over PyTorch's host memory
    t.add_(1.0)
    assert t.device == dev and torch.equal(h, torch.full((2, 3), 2.0))
    arr = np.arange(6, dtype=np.float64)
    t = ffd.from_dlpack(arr[::2], dev)                        # NumPy's strided view
    assert t.dtype == torch.float64 and torch.equal(t.cpu(), torch.tensor([0.0, 2.0, 4.0], dtype=torch.float64))
    capsule = torch.utils.dlpack.to_dlpack(torch.ones(2))
    ffd.from_dlpack(capsule, dev)
    with pytest.raises(TypeError, match="unconsumed 'dltensor' capsule"):
        ffd.from_dlpack(capsule, dev)                         # a capsule is consumed once
    with pytest.raises(RuntimeError, match="bool"):
        torch.utils.dlpack.to_dlpack(torch.tensor([True]).to(dev))
    with pytest.raises(ValueError, match="not a FusionFlow device"):
        ffd.from_dlpack(torch.ones(2), torch.device("cpu"))   # a string names a backend; this is PyTorch's CPU


def test_pinned_memory_is_a_no_op(dev):
    """Tensor.pin_memory(device) and DataLoader(pin_memory=True, pin_memory_device=...): a
    backend's upload takes any host memory, so every dense CPU tensor counts as pinned."""
    x = torch.randn(4, 3)
    assert x.is_pinned(dev) and x.pin_memory(dev).data_ptr() == x.data_ptr()
    data = torch.utils.data.TensorDataset(torch.randn(8, 3), torch.arange(8))
    loader = torch.utils.data.DataLoader(data, batch_size=4, pin_memory=True, pin_memory_device=str(dev))
    for (xb, yb), i in zip(loader, (0, 4)):
        assert xb.is_pinned(dev)
        same(xb.to(dev, non_blocking=True) * 2, data.tensors[0][i:i + 4] * 2)
        same(yb.to(dev, non_blocking=True), data.tensors[1][i:i + 4])
