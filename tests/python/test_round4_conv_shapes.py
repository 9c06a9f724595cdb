"""conv2d on small shapes against PyTorch 1.13 (issue 47, item 8): cpu_blas's oneDNN path
failed with "oneDNN failed (status 2)" where every window lies in the left padding of a
spatial dim (W = 1, kernel 1, padding 1, stride 3: the only window reads input column -1),
where the result is all zeros and PyTorch gives them. A sweep of every small (size,
kernel, padding, stride, dilation) combination of one spatial dim, each paired with
another of the sweep in the other dim, forward and both gradients (input, weight, bias),
on every device and through cpu_blas's composition too."""
import itertools
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

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

_KIND_CONV2D = 11  # ff_op_kind FF_KIND_CONV2D (backend_abi_ops.h)
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


def dim_configs():
    """Every (size, kernel, padding, stride, dilation) of one spatial dim with sizes up to 5
    that gives at least one output row (PyTorch raises otherwise)."""
    out = []
    for n, k, p, s, d in itertools.product((1, 2, 3, 5), (1, 2, 3), (0, 1, 2), (1, 2, 3), (1, 2)):
        if n + 2 * p - d * (k - 1) - 1 >= 0:
            out.append((n, k, p, s, d))
    return out


def reads_only_padding(cfg):
    """The last window of the dim ends at or before row 0: only the left padding is read."""
    n, k, p, s, d = cfg
    last = (n + 2 * p - d * (k - 1) - 1) // s * s  # the last window's start, counted in the padded input
    return last + d * (k - 1) + 1 - p <= 0


DIMS = dim_configs()
PAD_ONLY = [c for c in DIMS if reads_only_padding(c)]  # the issue's family (W = 1, k 1, pad 1, stride 3 ...)
# config i in H with config 7i + 3 in W: a permutation of the sweep (7 is prime to its
# length), so every config also runs in W, with a different H each time; then each
# padding-only config once more in each dim against an ordinary one
assert len(DIMS) % 7
CASES = [(DIMS[i], DIMS[(7 * i + 3) % len(DIMS)]) for i in range(len(DIMS))]
CASES += [(DIMS[5 * j % len(DIMS)], c) for j, c in enumerate(PAD_ONLY)]
CASES += [(c, DIMS[11 * j % len(DIMS)]) for j, c in enumerate(PAD_ONLY)]


def conv_and_grads(lib_, x, w, b, gy, hcfg, wcfg):
    """(y, dx, dw, db) of sum(conv2d(x, w, b) * gy), in fusionflow or PyTorch."""
    f = F.conv2d if lib_ is ff else TF.conv2d
    y = f(x, w, b, stride=(hcfg[3], wcfg[3]), padding=(hcfg[2], wcfg[2]), dilation=(hcfg[4], wcfg[4]))
    (y * gy).sum().backward()
    return y, x.grad, w.grad, b.grad


def check_case(dev, hcfg, wcfg, rng):
    xs = rng.standard_normal((2, 2, hcfg[0], wcfg[0])).astype(np.float32)
    ws = rng.standard_normal((3, 2, hcfg[1], wcfg[1])).astype(np.float32)
    bs = rng.standard_normal(3).astype(np.float32)
    tt = [torch.tensor(a, requires_grad=True) for a in (xs, ws, bs)]
    ty = TF.conv2d(tt[0].detach(), tt[1].detach(), stride=(hcfg[3], wcfg[3]), padding=(hcfg[2], wcfg[2]),
                   dilation=(hcfg[4], wcfg[4]))
    gys = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    want = conv_and_grads(torch, *tt, torch.tensor(gys), hcfg, wcfg)
    ours = [ff.tensor(a, device=dev, requires_grad=True) for a in (xs, ws, bs)]
    got = conv_and_grads(ff, *ours, ff.tensor(gys, device=dev), hcfg, wcfg)
    for name, g, t in zip(("y", "dx", "dw", "db"), got, want):
        g = np.asarray(g.tolist(), dtype=np.float64).reshape(tuple(g.shape))
        t = t.detach().numpy()
        assert g.shape == t.shape, (name, hcfg, wcfg, g.shape, t.shape)
        assert np.allclose(g, t, rtol=1e-4, atol=1e-4), (name, "H (size, k, pad, stride, dil) %s, W %s" %
                                                          (hcfg, wcfg), np.abs(g - t).max())


def test_sweep_has_the_issue_family():
    """The sweep holds the shape cpu_blas rejected: W = 1, kernel 1, padding 1, stride 3."""
    assert (1, 1, 1, 3, 1) in PAD_ONLY and (1, 1, 1, 3, 2) in PAD_ONLY, PAD_ONLY
    assert sum(reads_only_padding(w) for _, w in CASES) >= 3 and sum(reads_only_padding(h) for h, _ in CASES) >= 3


@pytest.mark.parametrize("hw", [(1, 1), (1, 2), (1, 4), (1, 5), (2, 1), (4, 1)])
def test_only_padding_read_gives_bias(dev, hw):
    """The issue's reproduction: H = 1 (or W = 1), kernel 1, padding 1, stride 3: every window
    in the padding of that dim, so y is the bias and every gradient but the bias's is zero
    (PyTorch's values too; ones(1, 1, 1, 4) gives [[0, 0]] without a bias)."""
    x = ff.ones(1, 1, *hw, device=dev, requires_grad=True)
    w = ff.ones(2, 1, 1, 1, device=dev, requires_grad=True)
    b = ff.tensor([0.5, -1.0], device=dev, requires_grad=True)
    assert F.conv2d(x.detach(), w.detach(), padding=1, stride=3).tolist() == \
        TF.conv2d(torch.ones(1, 1, *hw), torch.ones(2, 1, 1, 1), padding=1, stride=3).tolist()
    y = F.conv2d(x, w, b, padding=1, stride=3)
    want = TF.conv2d(torch.ones(1, 1, *hw), torch.ones(2, 1, 1, 1), torch.tensor([0.5, -1.0]), padding=1, stride=3)
    assert tuple(y.shape) == tuple(want.shape)
    y.sum().backward()
    assert np.array_equal(np.asarray(y.tolist()), want.numpy())
    assert not np.asarray(x.grad.tolist()).any() and not np.asarray(w.grad.tolist()).any()
    assert np.asarray(b.grad.tolist()).tolist() == [float(want[0, 0].numel())] * 2


def test_small_shape_sweep(dev):
    """Every case of the sweep: forward, dx, dw, db against PyTorch."""
    rng = np.random.default_rng(47)
    for hcfg, wcfg in CASES:
        check_case(dev, hcfg, wcfg, rng)
