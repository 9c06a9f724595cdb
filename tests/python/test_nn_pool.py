"""The pooling family against PyTorch 1.13 (issue 33), on every device of conftest's list:
max pooling's gradient at ties goes to one element, PyTorch's index (the first maximum in
the window's scan order), through the backend's pool2d entry, the core's composition and
the create_graph recomputation alike."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import fusionflow as ff
import fusionflow.nn.functional as F
from conftest import DEVICES, make_close

close = make_close(1e-5)

# (shape, kernel, stride, padding): 2 x 2 tiles (cpu_blas's fast path), odd sizes in floor
# mode, overlapping padded windows, rectangular windows
CASES = [((2, 3, 6, 8), 2, 2, 0), ((2, 3, 7, 5), 2, 2, 0), ((2, 2, 7, 6), 3, 2, 1), ((1, 2, 5, 5), 3, 1, 1),
         ((2, 2, 6, 9), (2, 3), (1, 2), (1, 1))]


def relu_ints(rng, shape):
    """ReLU'd small integers: most windows hold several tied maxima, many of them zeros."""
    return np.maximum(rng.integers(-3, 3, size=shape), 0).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("compose", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_max_pool2d_ties_first_max(device, compose, case, force_compose):
    if compose:
        force_compose("pool2d")
    shape, k, s, p = case
    rng = np.random.default_rng(7)
    x0 = relu_ints(rng, shape)
    tx = torch.tensor(x0, requires_grad=True)
    ty = TF.max_pool2d(tx, k, s, p)
    g0 = rng.normal(size=ty.shape).astype(np.float32)
    ty.backward(torch.from_numpy(g0))
    x = ff.tensor(x0, device=device, requires_grad=True)
    y = F.max_pool2d(x, k, s, p)
    y.backward(ff.tensor(g0, device=device))
    close(y, ty)
    close(x.grad, tx.grad)
    # the rule, not the sum: every window's gradient lands whole on one element
    assert np.count_nonzero(x.grad.numpy()) == np.count_nonzero(tx.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool2d_ties_second_order(device):
    """create_graph recomputes the forward as the composition: its gradient and the
    gradient's own gradient follow the same one-element rule as the entry's first order."""
    rng = np.random.default_rng(8)
    x0 = relu_ints(rng, (2, 3, 6, 6)).astype(np.float64)
    w0 = rng.normal(size=(2, 3, 5, 5))
    tx = torch.tensor(x0, requires_grad=True)
    (tg,) = torch.autograd.grad((TF.max_pool2d(tx, 2, 1) * torch.from_numpy(w0)).sum(), [tx], create_graph=True)
    x = ff.tensor(x0, device=device, requires_grad=True)
    wy = ff.tensor(w0, device=device)
    (g,) = ff.autograd.grad((F.max_pool2d(x, 2, 1) * wy).sum(), [x], create_graph=True)
    close(g, tg)
    (tg * tx).sum().backward()
    (g * x).sum().backward()
    close(x.grad, tx.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool2d_nan_window_last_nan(device):
    """A window holding NaN pools to NaN and its gradient goes to its last NaN (PyTorch's
    kernel replaces its max on `v > max || isnan(v)`)."""
    x0 = np.array([[[[1.0, np.nan, 3.0, np.nan], [np.nan, 0.0, 2.0, 2.0]]]], dtype=np.float32)
    tx = torch.tensor(x0, requires_grad=True)
    TF.max_pool2d(tx, 2).sum().backward()
    x = ff.tensor(x0, device=device, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


# (input shape, output_size): global, equal windows, overlapping unequal windows, upsampling
# (out > in), None entries, unbatched input, empty batch
ADAPTIVE = {
    1: [((2, 3, 10), 1), ((2, 3, 10), 5), ((2, 3, 7), 3), ((3, 5), 8), ((0, 3, 6), 4)],
    2: [((2, 3, 7, 9), 1), ((2, 3, 8, 6), (4, 3)), ((2, 3, 7, 9), (3, 4)), ((3, 5, 6), (None, 4)),
        ((2, 2, 4, 5), (7, 6)), ((0, 3, 5, 5), 2)],
    3: [((2, 2, 4, 5, 6), 1), ((1, 2, 5, 7, 6), (2, 3, 4)), ((2, 3, 4, 5), (3, None, 2))],
}


def _adaptive_cases():
    for nd, cases in ADAPTIVE.items():
        for shape, out in cases:
            for kind in ("avg", "max"):
                yield nd, shape, out, kind


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd,shape,out,kind", list(_adaptive_cases()))
def test_adaptive_pool_vs_torch(device, nd, shape, out, kind):
    """Values, indices, first and second gradients against torch, f64; a transposed
    (non-contiguous) input and, for max, ReLU'd integers so that windows tie."""
    rng = np.random.default_rng(11)
    x0 = relu_ints(rng, shape).astype(np.float64) if kind == "max" else rng.normal(size=shape)
    name = "adaptive_%s_pool%dd" % (kind, nd)
    fn, tfn = getattr(F, name), getattr(TF, name)
    tx = torch.tensor(x0, requires_grad=True)
    x = ff.tensor(x0, device=device, requires_grad=True)
    xt = x.transpose(-1, -2).contiguous().transpose(-1, -2) if nd > 1 else x  # same values, strided
    if kind == "max":
        ty, ti = tfn(tx, out, return_indices=True)
        y, i = fn(xt, out, return_indices=True)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    else:
        ty, y = tfn(tx, out), fn(xt, out)
    close(y, ty)
    w0 = rng.normal(size=ty.shape)
    (tg,) = torch.autograd.grad((ty * torch.from_numpy(w0)).sum(), [tx], create_graph=True)
    (g,) = ff.autograd.grad((y * ff.tensor(w0, device=device)).sum(), [x], create_graph=True)
    close(g, tg)
    if tg.requires_grad:  # avg's gradient does not depend on x: torch gives no second order
        (tg * tx).sum().backward()
        (g * x).sum().backward()
        close(x.grad, tx.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_modules(device):
    """nn.Adaptive*Pool*: torch's extra_repr and forward, return_indices as a tuple."""
    x0 = np.random.default_rng(2).normal(size=(2, 3, 6, 7)).astype(np.float32)
    for cls, args in [("AdaptiveAvgPool2d", ((2, None),)), ("AdaptiveMaxPool2d", (3, True)),
                      ("AdaptiveAvgPool1d", (4,)), ("AdaptiveMaxPool1d", (2,)), ("AdaptiveAvgPool3d", ((1, 2, 3),)),
                      ("AdaptiveMaxPool3d", (1,))]:
        m, tm = getattr(ff.nn, cls)(*args), getattr(torch.nn, cls)(*args)
        assert repr(m) == repr(tm)
        xin = x0[0] if "1d" in cls else x0
        y, ty = m(ff.tensor(xin, device=device)), tm(torch.tensor(xin))
        if isinstance(ty, tuple):
            close(y[0], ty[0])
            np.testing.assert_array_equal(y[1].numpy(), ty[1].numpy())
        else:
            close(y, ty)


def test_adaptive_pool_refuses_bad_input():
    x = ff.tensor(np.zeros((2, 3, 4, 4), np.float32))
    with pytest.raises(ValueError, match="expected a 2D or 3D input"):
        F.adaptive_avg_pool1d(x, 2)
    with pytest.raises(ff.FusionFlowError, match="output size -1"):
        F.adaptive_max_pool2d(x, (-1, 2))
    with pytest.raises(ff.FusionFlowError, match="floating point"):
        F.adaptive_avg_pool2d(ff.tensor(np.zeros((2, 3, 4, 4), np.int64)), 2)


@pytest.mark.parametrize("device", DEVICES)
def test_pool1d_and_module_signatures(device):
    """MaxPool1d / AvgPool1d (the 2-D ops on an H = 1 view), batched and unbatched, with
    ties; the modules' repr and defaults as torch's; refused options say so."""
    rng = np.random.default_rng(5)
    for shape in [(2, 3, 11), (3, 8)]:
        x0 = relu_ints(rng, shape).astype(np.float64)
        for cls, args, kw in [("MaxPool1d", (3,), {}), ("MaxPool1d", (4, 2, 2), {}), ("AvgPool1d", (3, 2, 1), {}),
                              ("AvgPool1d", (2,), {}), ("MaxPool2d", ((1, 3), 2), {}),
                              ("AvgPool2d", (2, 1), {"padding": 1})]:
            if cls.endswith("2d") and len(shape) == 2:
                continue
            m, tm = getattr(ff.nn, cls)(*args, **kw), getattr(torch.nn, cls)(*args, **kw)
            assert repr(m) == repr(tm)
            xin = x0 if cls.endswith("1d") else x0[None]
            tx = torch.tensor(xin, requires_grad=True)
            x = ff.tensor(xin, device=device, requires_grad=True)
            ty, y = tm(tx), m(x)
            close(y, ty)
            g0 = rng.normal(size=ty.shape)
            ty.backward(torch.from_numpy(g0))
            y.backward(ff.tensor(g0, device=device))
            close(x.grad, tx.grad)
    with pytest.raises(ff.FusionFlowError, match="padding 2"):
        ff.nn.MaxPool1d(2, padding=2)(ff.tensor(np.zeros((1, 2, 5)), device=device))


# (nd, input shape, options): ceil_mode, dilation, count_include_pad=False, divisor_override,
# unbatched and empty-batch inputs, 1-3 spatial axes
OPTIONS = [
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (1, (3, 10), dict(kernel_size=2, dilation=3)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    (2, (2, 2, 9, 8), dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 1), dilation=(2, 1))),
    (2, (3, 7, 7), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    (2, (2, 2, 6, 7), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True, divisor_override=3)),
    (2, (0, 3, 6, 6), dict(kernel_size=2, ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2)),
    (3, (2, 1, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
]


def _option_cases():
    for nd, shape, opts in OPTIONS:
        for kind in ("max", "avg"):
            o = dict(opts)
            if kind == "max":
                if "count_include_pad" in o or "divisor_override" in o:
                    continue
            elif "dilation" in o:
                continue
            if nd == 1:
                o.pop("divisor_override", None)
            yield nd, shape, o, kind


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd,shape,opts,kind", list(_option_cases()))
def test_pool_options_vs_torch(device, nd, shape, opts, kind):
    """Values, return_indices, first and second gradients against torch in f64, on a
    strided input; max on ReLU'd integers (ties)."""
    rng = np.random.default_rng(13)
    x0 = relu_ints(rng, shape).astype(np.float64) if kind == "max" else rng.normal(size=shape)
    name = "%s_pool%dd" % (kind, nd)
    fn, tfn = getattr(F, name), getattr(TF, name)
    tx = torch.tensor(x0, requires_grad=True)
    x = ff.tensor(x0, device=device, requires_grad=True)
    xt = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if kind == "max":
        ty, ti = tfn(tx, return_indices=True, **opts)
        y, i = fn(xt, return_indices=True, **opts)
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
        # without indices 1-2 D max pooling takes the entry (ceil mode's overhanging last
        # window through a -inf pad), a path of its own: its values and gradient too
        y_entry = fn(xt, **opts)
        close(y_entry, ty)
        w1 = rng.normal(size=ty.shape)
        (tg1,) = torch.autograd.grad((ty * torch.from_numpy(w1)).sum(), [tx], retain_graph=True)
        (g1,) = ff.autograd.grad((y_entry * ff.tensor(w1, device=device)).sum(), [x])
        close(g1, tg1)
    else:
        ty, y = tfn(tx, **opts), fn(xt, **opts)
    close(y, ty)
    w0 = rng.normal(size=ty.shape)
    (tg,) = torch.autograd.grad((ty * torch.from_numpy(w0)).sum(), [tx], create_graph=True)
    (g,) = ff.autograd.grad((y * ff.tensor(w0, device=device)).sum(), [x], create_graph=True)
    close(g, tg)
    if tg.requires_grad:
        (tg * tx).sum().backward()
        (g * x).sum().backward()
        close(x.grad, tx.grad)


def test_pool3d_modules_repr():
    for cls, args, kw in [("MaxPool3d", (2,), {}), ("AvgPool3d", (3, 2), {"ceil_mode": True}),
                          ("MaxPool2d", (3, 2, 1), {"dilation": 2, "ceil_mode": True})]:
        assert repr(getattr(ff.nn, cls)(*args, **kw)) == repr(getattr(torch.nn, cls)(*args, **kw))


@pytest.mark.parametrize("device", DEVICES)
def test_lp_pool_and_max_unpool(device):
    """LPPool1d/2d (through avg pooling) and MaxUnpool1d/2d/3d (a scatter at max_pool's
    indices, overlapping windows sharing an argmax included), values and gradients."""
    rng = np.random.default_rng(17)
    for cls, args, shape in [("LPPool1d", (2, 3, 2), (2, 3, 9)), ("LPPool2d", (3.0, (2, 3)), (2, 2, 6, 7)),
                             ("LPPool2d", (1.5, 2, 1, True), (1, 2, 5, 5))]:
        x0 = np.abs(rng.normal(size=shape)) + 0.1
        m, tm = getattr(ff.nn, cls)(*args), getattr(torch.nn, cls)(*args)
        assert repr(m) == repr(tm)
        tx, x = torch.tensor(x0, requires_grad=True), ff.tensor(x0, device=device, requires_grad=True)
        ty, y = tm(tx), m(x)
        close(y, ty)
        ty.sum().backward()
        y.sum().backward()
        close(x.grad, tx.grad)
    for nd, shape, k, s in [(1, (2, 3, 8), 2, 2), (2, (2, 2, 5, 6), 3, 1), (3, (1, 2, 4, 4, 4), 2, 2)]:
        x0 = relu_ints(rng, shape).astype(np.float64)
        tp, ti = getattr(TF, "max_pool%dd" % nd)(torch.tensor(x0), k, s, return_indices=True)
        m, tm = getattr(ff.nn, "MaxUnpool%dd" % nd)(k, s), getattr(torch.nn, "MaxUnpool%dd" % nd)(k, s)
        assert repr(m) == repr(tm)
        tv = tp.clone().requires_grad_()
        v = ff.tensor(tp.numpy(), device=device, requires_grad=True)
        ty, y = tm(tv, ti, output_size=x0.shape), m(v, ff.tensor(ti.numpy(), device=device), output_size=x0.shape)
        close(y, ty)
        g0 = rng.normal(size=x0.shape)
        ty.backward(torch.from_numpy(g0))
        y.backward(ff.tensor(g0, device=device))
        close(v.grad, tv.grad)


UNFOLD = [((2, 3, 6, 7), dict(kernel_size=3)), ((2, 2, 7, 6), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1,
                                                                      stride=(2, 1))),
          ((3, 5, 5), dict(kernel_size=2, stride=2)), ((0, 2, 4, 4), dict(kernel_size=2))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,opts", UNFOLD)
def test_unfold_fold_vs_torch(device, shape, opts):
    """nn.Unfold / nn.Fold against torch: values, the gradient of fold(w * unfold(x)) taken
    with create_graph, a strided input, unbatched and empty-batch inputs."""
    rng = np.random.default_rng(19)
    x0 = rng.normal(size=shape)
    m, tm = ff.nn.Unfold(**opts), torch.nn.Unfold(**opts)
    assert repr(m) == repr(tm)
    tx, x = torch.tensor(x0, requires_grad=True), ff.tensor(x0, device=device, requires_grad=True)
    xt = x.transpose(-1, -2).contiguous().transpose(-1, -2)
    ty, y = tm(tx), m(xt)
    close(y, ty)
    fm, tfm = ff.nn.Fold(shape[-2:], **opts), torch.nn.Fold(shape[-2:], **opts)
    assert repr(fm) == repr(tfm)
    w0 = rng.normal(size=ty.shape)
    tz, z = tfm(ty * torch.from_numpy(w0)), fm(y * ff.tensor(w0, device=device))
    close(z, tz)
    g0 = rng.normal(size=tz.shape)
    (tg,) = torch.autograd.grad((tz * torch.from_numpy(g0)).sum(), [tx], create_graph=True)
    (g,) = ff.autograd.grad((z * ff.tensor(g0, device=device)).sum(), [x], create_graph=True)
    close(g, tg)


def test_unfold_fold_refuse_bad_shapes():
    x = ff.tensor(np.zeros((1, 2, 3, 3)))
    with pytest.raises(ff.FusionFlowError, match="holds no 4 x 4 block"):
        F.unfold(x, 4)
    with pytest.raises(ff.FusionFlowError, match="does not fold into"):
        F.fold(ff.tensor(np.zeros((1, 5, 4))), (3, 3), 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_affine_grid_vs_torch(device, mode, padding_mode, align_corners):
    """F.affine_grid then F.grid_sample against torch, with grid points outside [-1, 1]:
    values and gradients to the input, the grid and theta."""
    rng = np.random.default_rng(23)
    x0 = rng.normal(size=(2, 3, 5, 6))
    # random theta: no sample lands exactly on a pixel, where the gradient to the grid jumps
    # and the last bit of a backend's matmul would pick the side
    th0 = np.array([[[1.2, 0.3, 0.1], [-0.2, 0.9, -0.3]], [[0.7, -0.5, 0.4], [0.6, 1.4, 0.2]]])
    th0 += rng.uniform(-0.05, 0.05, size=th0.shape)
    tx, tth = torch.tensor(x0, requires_grad=True), torch.tensor(th0, requires_grad=True)
    x, th = ff.tensor(x0, device=device, requires_grad=True), ff.tensor(th0, device=device, requires_grad=True)
    tgrid = TF.affine_grid(tth, [2, 3, 4, 7], align_corners=align_corners)
    grid = F.affine_grid(th, [2, 3, 4, 7], align_corners=align_corners)
    close(grid, tgrid)
    ty = TF.grid_sample(tx, tgrid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    y = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    close(y, ty)
    g0 = rng.normal(size=ty.shape)
    ty.backward(torch.from_numpy(g0))
    y.backward(ff.tensor(g0, device=device))
    close(x.grad, tx.grad)
    close(th.grad, tth.grad)


@pytest.mark.parametrize("name,args", [("max_pool1d_with_indices", (2,)), ("max_pool2d_with_indices", (2, 1, 1)),
                                       ("max_pool3d_with_indices", (2,)), ("adaptive_max_pool1d_with_indices", (3,)),
                                       ("adaptive_max_pool2d_with_indices", ((2, 3),)),
                                       ("adaptive_max_pool3d_with_indices", (2,))])
def test_with_indices_forms_as_torch(name, args):
    nd = int(name.split("pool")[1][0])
    x = np.random.default_rng(3).standard_normal((2, 3) + (5,) * nd).astype(np.float32)
    v, i = getattr(F, name)(ff.tensor(x), *args)
    tv, ti = getattr(torch.nn.functional, name)(torch.tensor(x), *args)
    assert np.array_equal(v.numpy(), tv.numpy()) and np.array_equal(i.numpy(), ti.numpy())


def test_conv_tbc_as_torch():
    rng = np.random.default_rng(4)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((7, 2, 3), (3, 3, 4), (4,)))
    y = F.conv_tbc(ff.tensor(x), ff.tensor(w), ff.tensor(b), 1)
    ty = torch.conv_tbc(torch.tensor(x), torch.tensor(w), torch.tensor(b), 1)
    assert y.shape == tuple(ty.shape) and np.allclose(y.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("nd,shape,k,out", [(2, (2, 3, 9, 11), (2, 3), (4, 5)), (2, (3, 8, 8), 3, (6, 6)),
                                            (3, (2, 2, 7, 8, 9), 2, (3, 4, 5))])
def test_fractional_max_pool_as_torch(nd, shape, k, out):
    """Given torch's _random_samples, the same windows: values, indices and gradients."""
    rng = np.random.default_rng(nd)
    x = rng.standard_normal(shape).astype(np.float32)
    lead = shape[:-nd] if len(shape) == nd + 2 else (1,) + shape[:1]
    s = rng.random(lead + (nd,)).astype(np.float32)
    name = "fractional_max_pool%dd" % nd
    fx, tx = ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    v, i = getattr(F, name)(fx, k, output_size=out, return_indices=True, _random_samples=ff.tensor(s))
    tv, ti = getattr(TF, name)(tx, k, output_size=out, return_indices=True, _random_samples=torch.tensor(s))
    assert np.array_equal(v.numpy(), tv.detach().numpy()) and np.array_equal(i.numpy(), ti.numpy())
    g = rng.standard_normal(tuple(tv.shape)).astype(np.float32)
    (v * ff.tensor(g)).sum().backward()
    (tv * torch.tensor(g)).sum().backward()
    assert np.array_equal(fx.grad.numpy(), tx.grad.numpy())


def test_fractional_max_pool_module_draws_windows_that_fit():
    m = ff.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    x = ff.randn(2, 3, 10, 12)
    v, i = m(x)
    assert v.shape == (2, 3, 5, 6) and i.shape == v.shape
    flat = x.reshape(2, 3, -1)
    assert np.array_equal(flat.gather(2, i.reshape(2, 3, -1)).numpy(), v.reshape(2, 3, -1).numpy())
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        ff.nn.FractionalMaxPool2d(2)
    with pytest.raises(RuntimeError, match="too large relative to input"):  # torch 1.13's type
        F.fractional_max_pool2d(x, 3, output_size=(9, 9))
