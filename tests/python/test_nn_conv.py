"""The convolution family against PyTorch 1.13 (issue 33): F.conv1d/2d/3d and
F.conv_transpose1d/2d/3d (values, first and second gradients, stride, every padding form,
dilation, groups, depthwise, odd shapes, empty batches, unbatched, non-contiguous inputs) on
every CPU device, through the backend's entries and through the composition; the modules
(constructor, parameter shapes, init, extra_repr, state_dict both ways, padding_mode,
output_size) with weights copied from torch modules."""
import math
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from fusionflow._lib import lib

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES

pytestmark = [pytest.mark.skipif(torch is None, reason="needs PyTorch"),
              pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")]

_KIND_CONV2D = 11  # ff_op_kind FF_KIND_CONV2D (backend_abi_ops.h)
# every device, and cpu_blas once more with its conv2d entries off (the composition there)
PATHS = [(d, False) for d in DEVICES] + ([("cpu_blas", True)] if "cpu_blas" in DEVICES else [])
PATH_IDS = ["%s%s" % (d, "-compose" if c else "") for d, c in PATHS]


@pytest.fixture(params=PATHS, ids=PATH_IDS)
def dev(request):
    device, compose = request.param
    if compose:
        lib.ff_ops_force_compose(_KIND_CONV2D, True)
    yield device
    if compose:
        lib.ff_ops_force_compose(_KIND_CONV2D, False)


def arr(t):
    if isinstance(t, torch.Tensor):
        return t.detach().numpy()
    return np.asarray(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))


def close(got, want, tol=2e-4):
    g, w = arr(got), arr(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert np.allclose(g, w, rtol=tol, atol=tol), "max diff %g" % (np.abs(g - w).max() if g.size else 0)


def view_of(a, dev, how):
    """A tensor of ours holding a's values: contiguous, a transposed view of a transposed
    copy (permuted strides), or every other element of a twice as large array (steps)."""
    if how == "permuted":
        return ff.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1)), device=dev).transpose(0, -1)
    if how == "stepped":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), dtype=a.dtype)
        big[..., ::2] = a
        return ff.tensor(big, device=dev)[..., ::2]
    return ff.tensor(a, device=dev)


def compare(dev, name, xs, ws, bias=True, how="plain", second=True, seed=0, **kw):
    """F.<name> on ours and torch's with the same inputs: the value, the gradients to x, w
    and bias for a random upstream gradient, and (second) the gradients of
    <grad_x, v> with respect to w and of <grad_w, u> to x (double backward)."""
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    tw_ = torch.tensor(w, requires_grad=True)
    tx_ = torch.tensor(x, requires_grad=True)
    out_ch = ws[1] * kw.get("groups", 1) if "transpose" in name else ws[0]
    b = rng.standard_normal(out_ch).astype(np.float32) if bias else None
    tb = torch.tensor(b, requires_grad=True) if bias else None
    ty = getattr(TF, name)(tx_, tw_, tb, **kw)
    fx = view_of(x, dev, how)  # a non-contiguous view stays one: it is a leaf of its own
    assert how == "plain" or not fx.is_contiguous()
    fx.requires_grad_(True)
    fw = ff.tensor(w, device=dev, requires_grad=True)
    fb = ff.tensor(b, device=dev, requires_grad=True) if bias else None
    y = getattr(F, name)(fx, fw, fb, **kw)
    close(y, ty)
    if ty.numel() == 0 and not second:
        return
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    tgx, tgw = torch.autograd.grad(ty, (tx_, tw_), torch.tensor(g), create_graph=True)
    gx, gw = ff.autograd.grad(y, (fx, fw), ff.tensor(g, device=dev), create_graph=True)
    close(gx, tgx)
    close(gw, tgw)
    if bias:
        close(ff.autograd.grad(y, fb, ff.tensor(g, device=dev))[0], torch.autograd.grad(ty, tb, torch.tensor(g))[0])
    if not second:
        return
    v = rng.standard_normal(xs).astype(np.float32)
    u = rng.standard_normal(ws).astype(np.float32)
    t2w, t2g = torch.autograd.grad((tgx * torch.tensor(v)).sum() + (tgw * torch.tensor(u)).sum(), (tw_, tx_))
    f2w, f2g = ff.autograd.grad((gx * ff.tensor(v, device=dev)).sum() + (gw * ff.tensor(u, device=dev)).sum(),
                                (fw, fx))
    close(f2w, t2w, 1e-3)
    close(f2g, t2g, 1e-3)


CONV_CASES = [  # name, x shape, w shape, kwargs
    ("conv1d", (2, 4, 9), (6, 4, 3), dict(stride=2, padding=1, dilation=2)),
    ("conv1d", (3, 6, 11), (6, 2, 4), dict(padding=2, groups=3)),
    ("conv1d", (2, 4, 7), (4, 1, 3), dict(padding="same", groups=4)),
    ("conv1d", (2, 3, 8), (5, 3, 4), dict(padding="same", dilation=3)),
    ("conv1d", (1, 3, 5), (2, 3, 5), dict(padding="valid")),
    ("conv2d", (2, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)),
    ("conv2d", (2, 6, 9, 7), (6, 1, 3, 3), dict(stride=2, padding=1, groups=6)),  # depthwise
    ("conv2d", (1, 4, 6, 5), (8, 1, 3, 3), dict(padding=1, groups=4)),  # depthwise, multiplier 2
    ("conv2d", (2, 3, 7, 8), (4, 3, 2, 4), dict(padding="same", dilation=(2, 1))),  # even kernel: extra pad after
    ("conv2d", (2, 3, 5, 5), (4, 3, 3, 3), dict(padding="valid", stride=(1, 3))),
    ("conv2d", (1, 2, 13, 3), (3, 2, 5, 3), dict(stride=(3, 2), padding=(2, 1), dilation=(2, 1))),
    ("conv3d", (2, 4, 5, 6, 5), (6, 2, 3, 2, 2), dict(stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1),
                                                      groups=2)),
    ("conv3d", (1, 3, 4, 5, 3), (3, 1, 3, 3, 3), dict(padding="same", groups=3)),
]

TRANSPOSE_CASES = [
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d", (2, 6, 7), (6, 2, 4), dict(stride=3, padding=2, groups=3, dilation=2, output_padding=2)),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2),
                                                          groups=2, dilation=(1, 2))),
    ("conv_transpose2d", (1, 3, 4, 4), (3, 1, 3, 3), dict(stride=2, padding=1, groups=3)),  # depthwise
    ("conv_transpose2d", (2, 2, 3, 5), (2, 3, 4, 1), dict(stride=1, padding=(1, 0), dilation=(1, 3))),
    ("conv_transpose2d", (1, 2, 3, 3), (2, 2, 3, 3), dict(stride=1, dilation=2, output_padding=1)),  # op >= stride
    ("conv_transpose3d", (1, 2, 3, 4, 3), (2, 2, 2, 3, 2), dict(stride=2, padding=1, output_padding=(1, 0, 1),
                                                                 dilation=(2, 1, 1))),
]


@pytest.mark.parametrize("case", CONV_CASES + TRANSPOSE_CASES, ids=lambda c: "%s-%s" % (c[0], c[1]))
def test_values_and_gradients(dev, case):
    name, xs, ws, kw = case
    compare(dev, name, xs, ws, **kw)


@pytest.mark.parametrize("how", ["permuted", "stepped"])
@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv2d", (2, 4, 6, 7), (4, 1, 3, 3), dict(padding=1, groups=4, dilation=2)),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 2, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("conv3d", (1, 2, 4, 3, 5), (2, 2, 2, 2, 2), dict(stride=(1, 1, 2))),
])
def test_non_contiguous_inputs(dev, how, name, xs, ws, kw):
    compare(dev, name, xs, ws, how=how, second=False, **kw)


@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (0, 4, 9), (6, 2, 3), dict(groups=2)),
    ("conv2d", (0, 4, 6, 7), (4, 1, 3, 3), dict(padding=1, groups=4)),
    ("conv_transpose2d", (0, 4, 5, 4), (4, 2, 3, 3), dict(stride=2)),
    ("conv_transpose1d", (0, 2, 5), (2, 3, 3), dict(stride=2)),
    ("conv3d", (0, 2, 4, 3, 5), (2, 2, 2, 2, 2), {}),
])
def test_empty_batch(dev, name, xs, ws, kw):
    compare(dev, name, xs, ws, second=False, **kw)


@pytest.mark.parametrize("name,xs,ws,kw", [
    ("conv1d", (4, 9), (6, 2, 3), dict(groups=2)),
    ("conv2d", (4, 6, 7), (4, 4, 3, 3), dict(padding="same")),
    ("conv_transpose3d", (2, 3, 2, 3), (2, 1, 2, 2, 2), dict(stride=2)),
])
def test_unbatched_input(dev, name, xs, ws, kw):
    compare(dev, name, xs, ws, second=False, **kw)


@pytest.mark.parametrize("name,xs,ws,kw,err", [
    ("conv2d", (1, 4, 5, 5), (4, 3, 3, 3), dict(groups=2), "channels"),
    ("conv2d", (1, 4, 5, 5), (3, 2, 3, 3), dict(groups=2), "divisible"),
    ("conv2d", (1, 4, 2, 5), (4, 4, 3, 3), {}, "larger than the padded input"),
    ("conv1d", (1, 4, 5), (4, 4, 3), dict(dilation=0), "dilation (0) must be >= 1"),
    ("conv_transpose2d", (1, 4, 5, 5), (4, 4, 3, 3), dict(stride=2, output_padding=2), "output_padding"),
])
def test_errors_name_the_problem(name, xs, ws, kw, err):
    x, w = ff.zeros(*xs), ff.zeros(*ws)
    with pytest.raises(ff.FusionFlowError, match=err.replace("(", r"\(").replace(")", r"\)")):
        getattr(F, name)(x, w, **kw)


@pytest.mark.parametrize("kw,xs", [(dict(padding="same", stride=2), (1, 2, 5, 5)), (dict(padding="full"), (1, 2, 5, 5)),
                                   ({}, (2, 2, 5, 5, 5))])
def test_argument_errors_as_torch(kw, xs):
    """The same exception type as torch's for padding strings and input ranks."""
    with pytest.raises(RuntimeError) as want:
        TF.conv2d(torch.zeros(*xs), torch.zeros(2, 2, 3, 3), **kw)
    with pytest.raises(RuntimeError) as got:
        F.conv2d(ff.zeros(*xs), ff.zeros(2, 2, 3, 3), **kw)
    msg = str(got.value)
    assert "conv2d" in msg  # errors name the function (_args.named prefixes "conv2d(): " where torch's words do not)
    assert msg.replace("conv2d(): ", "", 1).split(":")[0] == str(want.value).split(":")[0]


# ---- modules -----------------------------------------------------------------------------
MODULES = [  # class name, args, kwargs, input shape
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, dilation=2, groups=2), (2, 4, 11)),
    ("Conv1d", (3, 5, 4), dict(padding="same", bias=False), (2, 3, 9)),
    ("Conv2d", (4, 8, (3, 2)), dict(stride=(2, 1), padding=(1, 0), groups=4), (2, 4, 7, 6)),
    ("Conv2d", (6, 6, 3), dict(padding=1, groups=6), (2, 6, 8, 8)),
    ("Conv3d", (2, 4, 3), dict(padding=(1, 0, 1), dilation=(1, 1, 2)), (1, 2, 4, 5, 6)),
    ("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2)), (2, 4, 5, 4)),
    ("ConvTranspose2d", (3, 3, 4), dict(stride=2, padding=1, groups=3, bias=False), (1, 3, 4, 5)),
    ("ConvTranspose3d", (2, 3, 2), dict(stride=2, output_padding=1), (1, 2, 3, 2, 3)),
]
for mode in ("reflect", "replicate", "circular"):
    MODULES += [("Conv1d", (2, 3, 3), dict(padding=2, padding_mode=mode), (2, 2, 7)),
                ("Conv2d", (2, 3, 3), dict(padding=(1, 2), padding_mode=mode, stride=2), (2, 2, 5, 6)),
                ("Conv3d", (2, 2, 3), dict(padding="same", padding_mode=mode), (1, 2, 3, 4, 5))]


@pytest.mark.parametrize("case", MODULES, ids=lambda c: "%s-%s" % (c[0], c[2].get("padding_mode", "")))
def test_modules_with_torch_weights(dev, case):
    cls, args, kw, xs = case
    torch.manual_seed(0)
    tm = getattr(torch.nn, cls)(*args, **kw)
    m = getattr(ff.nn, cls)(*args, **kw).to(dev)
    assert repr(m) == repr(tm)
    assert list(m._reversed_padding_repeated_twice) == list(tm._reversed_padding_repeated_twice)
    tsd = tm.state_dict()
    assert list(m.state_dict().keys()) == list(tsd.keys())
    for k, v in m.state_dict().items():
        assert tuple(v.shape) == tuple(tsd[k].shape), k
    m.load_state_dict({k: ff.tensor(v.numpy(), device=dev) for k, v in tsd.items()})
    x = np.random.default_rng(1).standard_normal(xs).astype(np.float32)
    fx, tx = ff.tensor(x, device=dev, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = m(fx), tm(tx)
    close(y, ty)
    g = np.random.default_rng(2).standard_normal(tuple(ty.shape)).astype(np.float32)
    (y * ff.tensor(g, device=dev)).sum().backward()
    (ty * torch.tensor(g)).sum().backward()
    close(fx.grad, tx.grad)
    close(m.weight.grad, tm.weight.grad)
    if tm.bias is not None:
        close(m.bias.grad, tm.bias.grad)
    # and back: our state_dict loads into a fresh torch module and gives the same output
    tm2 = getattr(torch.nn, cls)(*args, **kw)
    tm2.load_state_dict({k: torch.tensor(arr(v), dtype=torch.float32) for k, v in m.state_dict().items()})
    close(tm2(tx), ty)


@pytest.mark.parametrize("cls,args", [("Conv2d", (8, 16, 3)), ("ConvTranspose2d", (8, 16, 3, 2, 1, 0, 4)),
                                      ("Conv1d", (6, 4, 5)), ("Conv3d", (3, 5, 2))])
def test_module_init_matches_torch_bounds(cls, args):
    m, tm = getattr(ff.nn, cls)(*args, seed=3), getattr(torch.nn, cls)(*args)
    fan_in = tm.weight.shape[1] * math.prod(tm.weight.shape[2:])
    bound = 1.0 / math.sqrt(fan_in)
    for t in (arr(m.weight), arr(m.bias)):
        assert np.abs(t).max() <= bound and np.abs(t).max() > 0.5 * bound
    assert np.abs(tm.weight.detach().numpy()).max() <= bound  # torch's kaiming_uniform_(a=sqrt(5)) has that bound
    w0 = arr(m.weight).copy()
    ff.manual_seed(5)
    m.reset_parameters()
    w1 = arr(m.weight)
    assert not np.array_equal(w0, w1) and np.abs(w1).max() <= bound


def test_conv_transpose_output_size(dev):
    torch.manual_seed(0)
    tm = torch.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    m = ff.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).to(dev)
    m.load_state_dict({k: ff.tensor(v.numpy(), device=dev) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 5)).astype(np.float32)
    for size in ([8, 10], [1, 3, 7, 9]):
        close(m(ff.tensor(x, device=dev), output_size=size), tm(torch.tensor(x), output_size=size))
    with pytest.raises(ValueError):
        m(ff.tensor(x, device=dev), output_size=[9, 11])


@pytest.mark.parametrize("kw,exc", [(dict(groups=3), ValueError), (dict(padding="same", stride=2), ValueError),
                                    (dict(padding_mode="mirror"), ValueError), (dict(padding="full"), ValueError)])
def test_module_constructor_errors(kw, exc):
    with pytest.raises(exc):
        torch.nn.Conv2d(4, 4, 3, **kw)
    with pytest.raises(exc):
        ff.nn.Conv2d(4, 4, 3, **kw)
    with pytest.raises(ValueError):
        ff.nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
