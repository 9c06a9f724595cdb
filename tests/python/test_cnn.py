"""CNN building blocks from Python, against PyTorch: F.conv2d / max_pool2d / avg_pool2d /
batch_norm and nn.Conv2d / MaxPool2d / AvgPool2d / BatchNorm2d, values and gradients, on
cpu and cpu_blas. Without PyTorch (FF_REQUIRE_TORCH unset) the checks fall back to NumPy
references written here."""
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES, make_close  # DEVICES: cpu, and cpu_blas when it was built


close = make_close(1e-4)


def conv_ref(x, w, b, stride, pad):
    """NumPy cross-correlation, PyTorch's conv2d."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh, ow = (h + 2 * pad[0] - kh) // stride[0] + 1, (wd + 2 * pad[1] - kw) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + (b[None, :, None, None] if b is not None else 0)


CONVS = [  # (x shape, weight shape, stride, padding)
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, 1),
    ((1, 1, 5, 5), (2, 1, 1, 1), 1, 0),
    ((3, 2, 9, 8), (3, 2, 5, 5), 2, 2),
    ((2, 4, 6, 7), (5, 4, 3, 2), (2, 1), (1, 0)),
    ((1, 3, 4, 4), (1, 3, 4, 4), 1, 0),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv2d_values_and_gradients(device, case):
    xs, ws, stride, pad = CONVS[case]
    rng = np.random.default_rng(case)
    x0 = rng.normal(size=xs).astype(np.float32)
    w0 = rng.normal(size=ws).astype(np.float32)
    b0 = rng.normal(size=ws[0]).astype(np.float32)
    x = ff.tensor(x0, device=device, requires_grad=True)
    w = ff.tensor(w0, device=device, requires_grad=True)
    b = ff.tensor(b0, device=device, requires_grad=True)
    y = F.conv2d(x, w, b, stride=stride, padding=pad)
    st = stride if isinstance(stride, tuple) else (stride, stride)
    pd = pad if isinstance(pad, tuple) else (pad, pad)
    close(y, conv_ref(x0.astype(np.float64), w0, b0, st, pd))
    g0 = rng.normal(size=y.shape).astype(np.float32)
    y.backward(ff.tensor(g0, device=device))
    if torch is not None:
        tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x0, w0, b0))
        ty = TF.conv2d(tx, tw, tb, stride=stride, padding=pad)
        ty.backward(torch.from_numpy(g0))
        close(y, ty)
        close(x.grad, tx.grad)
        close(w.grad, tw.grad)
        close(b.grad, tb.grad)
    else:
        close(b.grad, g0.sum(axis=(0, 2, 3)))


@pytest.mark.parametrize("device", DEVICES)
def test_pools_match_torch(device):
    rng = np.random.default_rng(3)
    x0 = rng.normal(size=(2, 3, 7, 6)).astype(np.float32)
    for args in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(2, 3), stride=1)]:
        for fn, tfn in [(F.max_pool2d, "max_pool2d"), (F.avg_pool2d, "avg_pool2d")]:
            x = ff.tensor(x0, device=device, requires_grad=True)
            y = fn(x, **args)
            g0 = rng.normal(size=y.shape).astype(np.float32)
            y.backward(ff.tensor(g0, device=device))
            if torch is not None:
                tx = torch.tensor(x0, requires_grad=True)
                ty = getattr(TF, tfn)(tx, **args)
                ty.backward(torch.from_numpy(g0))
                close(y, ty)
                close(x.grad, tx.grad)  # distinct random values: no ties to split
    if torch is not None:  # ceil_mode is offered now (tests/python/test_nn_pool.py has the options)
        close(F.max_pool2d(ff.tensor(x0, device=device), 2, ceil_mode=True), TF.max_pool2d(torch.tensor(x0), 2,
                                                                                          ceil_mode=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compose", [False, True])
def test_pools_second_order_and_ties(device, compose, force_compose):
    """The gradient of a pooling gradient (create_graph), through the backend's pool2d entry
    (its create_graph path) and the composition (FF_POOL=compose), against PyTorch; and a
    tied window's whole gradient sent to its first maximum on both paths (PyTorch's index)."""
    if compose:
        force_compose("pool2d")
    x0 = np.random.default_rng(1).normal(size=(2, 3, 6, 6))
    for args in [dict(kernel_size=2), dict(kernel_size=3, stride=1, padding=1)]:
        for fn in ("max_pool2d", "avg_pool2d"):
            x = ff.tensor(x0, device=device, requires_grad=True)
            (g,) = ff.autograd.grad((getattr(F, fn)(x, **args) ** 2).sum(), [x], create_graph=True)
            (g ** 3).sum().backward()
            if torch is not None:
                tx = torch.tensor(x0, requires_grad=True)
                (tg,) = torch.autograd.grad((getattr(TF, fn)(tx, **args) ** 2).sum(), [tx], create_graph=True)
                (tg ** 3).sum().backward()
                close(g, tg)
                close(x.grad, tx.grad)
    t = ff.tensor(np.array([[[[1.0, 1.0], [0.0, 1.0]]]]), device=device, requires_grad=True)
    F.max_pool2d(t, 2).sum().backward()
    close(t.grad, np.array([[[[1.0, 0.0], [0.0, 0.0]]]]))


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_train_and_eval(device):
    rng = np.random.default_rng(4)
    bn = ff.nn.BatchNorm2d(3).to(device)
    x0 = rng.normal(2.0, 3.0, size=(4, 3, 5, 5)).astype(np.float32)
    x = ff.tensor(x0, requires_grad=True, device=device)
    y = bn(x)
    mean, var = x0.mean(axis=(0, 2, 3)), x0.var(axis=(0, 2, 3))
    close(y, (x0 - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5), 1e-4)
    close(bn.running_mean, 0.1 * mean, 1e-5)
    close(bn.running_var, 0.9 + 0.1 * x0.var(axis=(0, 2, 3), ddof=1), 1e-4)
    assert bn.num_batches_tracked.item() == 1
    y.sum().backward()
    bn.eval()
    ye = bn(ff.tensor(x0, device=device))
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    close(ye, (x0 - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5), 1e-4)
    if torch is not None:
        tbn = torch.nn.BatchNorm2d(3)
        tx = torch.tensor(x0, requires_grad=True)
        ty = tbn(tx)
        ty.sum().backward()
        close(y, ty)
        close(x.grad, tx.grad, 1e-3)
        close(bn.running_var, tbn.running_var)
        tbn.eval()
        close(ye, tbn(torch.from_numpy(x0)))
    with pytest.raises(ValueError, match="4-D"):
        bn(ff.zeros(3, 3, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_small_cnn_matches_torch(device):
    """conv-BN-ReLU-pool, twice, then a linear head: the same weights in both libraries give
    the same loss and the same gradients."""
    rng = np.random.default_rng(5)
    net = ff.nn.Sequential(ff.nn.Conv2d(1, 4, 3, padding=1, seed=1), ff.nn.BatchNorm2d(4), ff.nn.ReLU(),
                           ff.nn.MaxPool2d(2), ff.nn.Conv2d(4, 6, 3, padding=1, seed=3), ff.nn.BatchNorm2d(6),
                           ff.nn.ReLU(), ff.nn.AvgPool2d(2), ff.nn.Flatten(), ff.nn.Linear(6 * 2 * 2, 3, seed=5))
    net.to(device)
    x0 = rng.normal(size=(5, 1, 8, 8)).astype(np.float32)
    y0 = rng.integers(0, 3, 5)
    out = net(ff.tensor(x0, device=device))
    loss = F.cross_entropy(out, ff.tensor(y0, device=device))
    loss.backward()
    if torch is None:
        assert np.isfinite(loss.item())
        return
    tnet = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Conv2d(4, 6, 3, padding=1), torch.nn.BatchNorm2d(6),
                               torch.nn.ReLU(), torch.nn.AvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(24, 3))
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(net.named_parameters(), tnet.named_parameters()):
            assert tuple(p.shape) == tuple(tp.shape), (name, tname)
            tp.copy_(torch.from_numpy(p.detach().numpy()))
    tloss = TF.cross_entropy(tnet(torch.from_numpy(x0)), torch.from_numpy(y0))
    tloss.backward()
    assert abs(loss.item() - tloss.item()) < 1e-4
    for (name, p), (_, tp) in zip(net.named_parameters(), tnet.named_parameters()):
        close(p.grad, tp.grad, 2e-4)
