"""Issue 47, round 4: size-0 inputs that raised instead of giving PyTorch's empty results
(max_unpool / fractional_max_pool on an empty batch, training batch_norm / instance_norm
with an empty plane, diff, normalize and glu over an empty dim), the ranks Dropout1d/2d/3d
take, BatchNorm checkpoints from before num_batches_tracked, and inputs PyTorch refuses that
FusionFlow took (padding to a negative size, ChannelShuffle of a 2-D input, group_norm of one
value per group, a fractional pool larger than its input, conv of an empty plane,
pack_sequence of empty tensors). Every test runs on the DEVICES of conftest and checks
against PyTorch 1.13 (FF_REQUIRE_TORCH=1 makes its absence an error): the same shapes,
dtypes and gradients, or the same exception type with the function named."""
import collections
import os
import warnings

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as nn
import fusionflow.nn.functional as F
from fusionflow.nn.utils import rnn as ff_rnn

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES  # cpu, and cpu_blas / opencl when they were built

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
pytestmark = needs_torch
INF = float("inf")


def both(device, shape, requires_grad=False, seed=0):
    """The same random float32 data as a tensor of ours on device and one of torch's."""
    a = np.random.RandomState(seed).randn(*shape).astype(np.float32)
    return (ff.tensor(a, device=device, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def same_result(got, want):
    """Same shape, dtype name and values (NaN matching NaN)."""
    assert tuple(got.shape) == tuple(want.shape), (tuple(got.shape), tuple(want.shape))
    g_dtype = str(got.dtype).replace("fusionflow.", "").replace("torch.", "")
    w_dtype = str(want.dtype).replace("torch.", "")
    assert g_dtype.rstrip("_") == w_dtype, (g_dtype, w_dtype)
    g = np.asarray(got.detach().to("cpu").numpy(), dtype=np.float64)
    w = want.detach().double().numpy()
    assert np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True), (g.tolist(), w.tolist())


def torch_error(fn):
    """The exception type torch raises for fn (the test fails if it raises none)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except Exception as e:  # noqa: BLE001  (which type is what the test is about)
        return type(e)
    pytest.fail("PyTorch 1.13 accepts this: the case no longer shows the difference")


def raises_like(ours, theirs, match):
    """ours raises the type torch raises for theirs, with match (the function's name) in it."""
    with pytest.raises(torch_error(theirs), match=match):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours()


# ---- 10. size-0 batches and dims --------------------------------------------------------------
UNPOOL_CASES = [(1, (0, 2, 4)), (2, (0, 2, 4, 4)), (3, (0, 2, 4, 4, 4))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd,shape", UNPOOL_CASES, ids=["1d", "2d", "3d"])
def test_max_unpool_of_an_empty_batch(device, nd, shape):
    x, xt = both(device, shape, requires_grad=True)
    pool, unpool = getattr(F, "max_pool%dd" % nd), getattr(F, "max_unpool%dd" % nd)
    tpool, tunpool = getattr(TF, "max_pool%dd" % nd), getattr(TF, "max_unpool%dd" % nd)
    y = unpool(*pool(x, 2, return_indices=True), 2)
    yt = tunpool(*tpool(xt, 2, return_indices=True), 2)
    same_result(y, yt)
    y.sum().backward()
    yt.sum().backward()
    same_result(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd,shape", [(2, (0, 2, 5, 5)), (2, (0, 5, 5)), (3, (0, 2, 5, 5, 5))],
                         ids=["2d", "2d_unbatched", "3d"])
def test_fractional_max_pool_of_an_empty_batch(device, nd, shape):
    """The values and indices; the input's gradient is an empty one (torch 1.13's backward on
    an empty batch fails inside autograd, so only its forward is compared)."""
    x, xt = both(device, shape, requires_grad=True)
    fn, tfn = getattr(F, "fractional_max_pool%dd" % nd), getattr(TF, "fractional_max_pool%dd" % nd)
    y, ind = fn(x, 2, output_size=3, return_indices=True)
    yt, indt = tfn(xt, 2, output_size=3, return_indices=True)
    same_result(y, yt)
    same_result(ind, indt)
    y.sum().backward()
    assert tuple(x.grad.shape) == shape


@pytest.mark.parametrize("device", DEVICES)
def test_fractional_max_pool_output_size_zero_is_empty(device):
    x, xt = both(device, (1, 1, 4, 4))
    same_result(F.fractional_max_pool2d(x, 2, output_size=0), TF.fractional_max_pool2d(xt, 2, output_size=0))


BN_SHAPES = [(2, 3, 0), (0, 3), (0, 3, 2, 2)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", BN_SHAPES, ids=["plane0", "batch0", "batch0_4d"])
def test_training_batch_norm_of_an_empty_input(device, shape):
    """An empty result; the running stats stay as they were; weight and bias get zero gradients."""
    x, xt = both(device, shape, requires_grad=True)
    w, wt = both(device, (3,), requires_grad=True, seed=1)
    b, bt = both(device, (3,), requires_grad=True, seed=2)
    rm, rmt = both(device, (3,), seed=3)
    rv, rvt = ff.full((3,), 2.0, device=device), torch.full((3,), 2.0)
    y = F.batch_norm(x, rm, rv, w, b, training=True)
    yt = TF.batch_norm(xt, rmt, rvt, wt, bt, training=True)
    same_result(y, yt)
    (y.sum() + (w * b).sum()).backward()  # the extra term: grads exist even if y left them out
    (yt.sum() + (wt * bt).sum()).backward()
    for got, want in ((x.grad, xt.grad), (w.grad, wt.grad), (b.grad, bt.grad), (rm, rmt), (rv, rvt)):
        same_result(got, want)
    same_result(F.batch_norm(x, None, None, training=True), TF.batch_norm(xt, None, None, training=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,shape", [("BatchNorm2d", (2, 3, 0, 4)), ("BatchNorm3d", (2, 3, 4, 0, 2)),
                                        ("BatchNorm1d", (0, 3, 4))])
def test_batch_norm_modules_train_on_empty_inputs(device, name, shape):
    """The module counts the batch, as torch's, but its running stats do not move."""
    x, xt = both(device, shape)
    m, mt = getattr(nn, name)(3, device=device), getattr(torch.nn, name)(3)
    same_result(m(x), mt(xt))
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        same_result(getattr(m, k), getattr(mt, k))


@pytest.mark.parametrize("device", DEVICES)
def test_training_instance_norm_of_an_empty_plane(device):
    x, xt = both(device, (2, 3, 0), requires_grad=True)
    w, wt = both(device, (3,), requires_grad=True, seed=1)
    rm, rmt = both(device, (3,), seed=3)
    rv, rvt = ff.ones(3, device=device), torch.ones(3)
    y = F.instance_norm(x, rm, rv, w, None, use_input_stats=True)
    yt = TF.instance_norm(xt, rmt, rvt, wt, None, use_input_stats=True)
    same_result(y, yt)
    (y.sum() + w.sum()).backward()
    (yt.sum() + wt.sum()).backward()
    for got, want in ((x.grad, xt.grad), (w.grad, wt.grad), (rm, rmt), (rv, rvt)):
        same_result(got, want)
    same_result(nn.InstanceNorm1d(3)(x), torch.nn.InstanceNorm1d(3)(xt))
    with pytest.raises(ValueError, match="more than 1 spatial element"):  # one element still refused
        F.instance_norm(ff.ones(2, 3, 1, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_conv_transpose_to_an_empty_output_raises_as_torch(device):
    """torch 1.13 refuses an output size of 0 (RuntimeError), as it does a negative one; an
    empty batch gives an empty result, with its gradient."""
    x, xt = both(device, (1, 2, 1, 1))
    w, wt = both(device, (2, 3, 2, 2), seed=1)
    raises_like(lambda: F.conv_transpose2d(x, w, padding=1), lambda: TF.conv_transpose2d(xt, wt, padding=1),
                "conv_transpose2d")
    x, xt = both(device, (0, 2, 3, 3), requires_grad=True)
    y, yt = F.conv_transpose2d(x, w), TF.conv_transpose2d(xt, wt)
    same_result(y, yt)
    y.sum().backward()
    yt.sum().backward()
    same_result(x.grad, xt.grad)


DIFF_CASES = [((3, 0), 1, 1), ((3, 1), 2, 1), ((3, 2), 3, 1), ((0,), 1, -1), ((0, 4), 1, 1)]  # (shape, n, dim)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,n,dim", DIFF_CASES, ids=[str(c) for c in DIFF_CASES])
def test_diff_over_an_empty_dim(device, shape, n, dim):
    x, xt = both(device, shape, requires_grad=True)
    y, yt = x.diff(n=n, dim=dim), xt.diff(n=n, dim=dim)
    same_result(y, yt)
    y.sum().backward()
    assert tuple(x.grad.shape) == shape  # torch's empty result has no graph; ours has, with an empty gradient
    for dtype in ("bool", "int32"):
        same_result(ff.zeros(*shape, dtype=getattr(ff, dtype + ("_" if dtype == "bool" else "")),
                             device=device).diff(n=n, dim=dim),
                    torch.zeros(*shape, dtype=getattr(torch, dtype)).diff(n=n, dim=dim))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [INF, -INF, 2.0])
@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((0, 3), 0), ((2, 0, 3), -2)])
def test_normalize_over_an_empty_dim(device, p, shape, dim):
    x, xt = both(device, shape, requires_grad=True)
    y, yt = F.normalize(x, p=p, dim=dim), TF.normalize(xt, p=p, dim=dim)
    same_result(y, yt)
    y.sum().backward()
    yt.sum().backward()
    same_result(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,dim", [((3, 0), 1), ((0, 4), 0), ((0, 0), 1), ((2, 0, 4), -1), ((2, 4), 1)])
def test_glu_with_an_empty_dim(device, shape, dim):
    x, xt = both(device, shape, requires_grad=True)
    y, yt = F.glu(x, dim), TF.glu(xt, dim)
    same_result(y, yt)
    y.sum().backward()
    yt.sum().backward()
    same_result(x.grad, xt.grad)
    same_result(nn.GLU(dim)(x), torch.nn.GLU(dim)(xt))


# ---- 12. the ranks channel-wise dropout takes (torch 1.13) -----------------------------------
RANK_SHAPES = [(), (24,), (24, 16), (24, 16, 2), (24, 16, 2, 2), (24, 16, 2, 2, 2), (24, 16, 2, 2, 2, 2)]


def _mask_dims(y):
    """The dims along which a dropout of ones varies (its mask's non-broadcast dims)."""
    a = np.asarray(y.detach().to("cpu").numpy() if isinstance(y, ff.Tensor) else y.detach().numpy())
    return [d for d in range(a.ndim) if a.shape[d] > 1 and not (a == a.take([0], axis=d)).all()]


def _run(module, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 1.13 warns on the deprecated ranks; so do we
        try:
            return module(x), None
        except Exception as e:  # noqa: BLE001  (the type is compared with torch's)
            return None, type(e)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["Dropout1d", "Dropout2d", "Dropout3d"])
@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_channel_dropout_ranks_as_torch(device, name, training):
    """For every rank 0-6: the same refusals (RuntimeError), eval gives the input back, and in
    training the mask varies along the same dims (dropout2d: dims 0 and 1 of any input;
    dropout3d: dims 0 and 1 of a 5-D one, dim 0 of any other)."""
    for shape in RANK_SHAPES:
        ours, theirs = getattr(nn, name)(0.5), getattr(torch.nn, name)(0.5)
        ours.train(training)
        theirs.train(training)
        x, xt = ff.ones(*shape, device=device), torch.ones(shape)
        y, err = _run(ours, x)
        yt, errt = _run(theirs, xt)
        assert err is errt or (errt is not None and err is not None and issubclass(err, errt)), (shape, err, errt)
        if yt is None:
            continue
        if not training:
            same_result(y, yt)  # the input's values (torch 1.13 gives the input back, or a view of it)
        else:
            assert tuple(y.shape) == tuple(yt.shape)
            assert _mask_dims(y) == _mask_dims(yt), (shape, _mask_dims(y), _mask_dims(yt))
            kept = y.to("cpu").numpy()
            assert np.all((kept == 0) | (kept == 2)), shape


# ---- 13. BatchNorm checkpoints from before num_batches_tracked -------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_checkpoint_without_num_batches_tracked(device):
    """A plain dict (no version metadata) loads with strict=True and the count restarts at 0,
    as torch; a version-2 state_dict (our state_dict()'s metadata, as torch's) missing the key
    is still reported missing."""
    ours, theirs = nn.Sequential(nn.BatchNorm1d(3, device=device)), torch.nn.Sequential(torch.nn.BatchNorm1d(3))
    for m in (ours, theirs):
        m[0].num_batches_tracked.fill_(5)
    old = {"0.weight": [1.0, 2.0, 3.0], "0.bias": [0.0, 1.0, 0.0], "0.running_mean": [0.5, 0.5, 0.5],
           "0.running_var": [2.0, 2.0, 2.0]}
    got = ours.load_state_dict({k: ff.tensor(v) for k, v in old.items()})
    want = theirs.load_state_dict({k: torch.tensor(v) for k, v in old.items()})
    assert (got.missing_keys, got.unexpected_keys) == (want.missing_keys, want.unexpected_keys) == ([], [])
    for k in ("weight", "running_var", "num_batches_tracked"):
        same_result(getattr(ours[0], k), getattr(theirs[0], k))
    sd, sdt = ours.state_dict(), theirs.state_dict()
    assert sd._metadata["0"] == sdt._metadata["0"] == {"version": 2}
    for d in (sd, sdt):
        del d["0.num_batches_tracked"]
    with pytest.raises(RuntimeError, match="Missing key.*num_batches_tracked"):
        ours.load_state_dict(sd)
    with pytest.raises(RuntimeError, match="Missing key.*num_batches_tracked"):
        theirs.load_state_dict(sdt)
    old_meta = collections.OrderedDict((k, ff.tensor(v)) for k, v in old.items())
    old_meta._metadata = {"0": {"version": 1}}
    assert ours.load_state_dict(old_meta, strict=False).missing_keys == []


# ---- 15. inputs PyTorch refuses -----------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
def test_pad_to_a_negative_size_raises(device):
    x, xt = both(device, (1, 7, 3))
    for mode, pads in (("constant", (-2, -2)), ("constant", (1, -5)), ("reflect", (-2, -2)),
                       ("replicate", (-2, -2)), ("circular", (-2, -2)), ("reflect", (-2, -1)),
                       ("replicate", (0, -3))):
        raises_like(lambda: F.pad(x, pads, mode=mode), lambda: TF.pad(xt, pads, mode=mode), "pad")


@pytest.mark.parametrize("device", DEVICES)
def test_pad_to_an_empty_dim_as_torch(device):
    """Where torch 1.13 lets a padded dim become empty, the result is empty (it was an
    IndexError from a float index) and the gradient flows."""
    x, xt = both(device, (1, 2, 4, 3), requires_grad=True)
    for mode, pads in (("constant", (-2, -1)), ("reflect", (1, -4, 0, 0)), ("replicate", (0, 0, -2, -2)),
                       ("circular", (-2, -1))):
        xx, xxt = (x[0], xt[0]) if mode == "circular" else (x, xt)  # circular 1-D padding wants a 3-D input
        y, yt = F.pad(xx, pads, mode=mode), TF.pad(xxt, pads, mode=mode)
        same_result(y, yt)
    (y.sum() + x.sum()).backward()
    (yt.sum() + xt.sum()).backward()
    same_result(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_channel_shuffle_needs_more_than_two_dims(device):
    for shape in ((2, 4), (4,)):
        x, xt = both(device, shape)
        raises_like(lambda: nn.ChannelShuffle(2)(x), lambda: torch.nn.ChannelShuffle(2)(xt), "channel_shuffle")
        raises_like(lambda: F.channel_shuffle(x, 2), lambda: TF.channel_shuffle(xt, 2), "channel_shuffle")
    x, xt = both(device, (1, 4, 3))
    same_result(nn.ChannelShuffle(2)(x), torch.nn.ChannelShuffle(2)(xt))


@pytest.mark.parametrize("device", DEVICES)
def test_group_norm_of_one_value_per_group(device):
    """torch counts N * C / groups * spatial (in eval too): 1 is refused (ValueError)."""
    for shape, groups in (((1, 4), 4), ((1, 4, 1), 4), ((1, 1), 1)):
        x, xt = both(device, shape)
        raises_like(lambda: F.group_norm(x, groups), lambda: TF.group_norm(xt, groups), "group_norm")
        raises_like(lambda: nn.GroupNorm(groups, shape[1], device=device).eval()(x),
                    lambda: torch.nn.GroupNorm(groups, shape[1]).eval()(xt), "group_norm")
    for shape, groups in (((2, 4), 4), ((1, 4, 2), 4), ((0, 4), 4)):
        x, xt = both(device, shape)
        same_result(F.group_norm(x, groups), TF.group_norm(xt, groups))


FMP_BAD = [(2, (1, 1, 3, 3), 2, (5, 5)), (2, (1, 1, 3, 3), 4, 1), (2, (1, 1, 5, 3), 2, (2, 3)),
           (3, (1, 1, 3, 3, 3), 2, 3), (2, (1, 0, 4, 4), 2, 2), (2, (1, 2, 0, 4), 1, (1, 2)),
           (3, (1, 0, 4, 4, 4), 2, 2)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nd,shape,k,out", FMP_BAD, ids=[str(c[1:]) for c in FMP_BAD])
def test_fractional_max_pool_larger_than_its_input_raises(device, nd, shape, k, out):
    x, xt = both(device, shape)
    name = "fractional_max_pool%dd" % nd
    raises_like(lambda: getattr(F, name)(x, k, output_size=out), lambda: getattr(TF, name)(xt, k, output_size=out),
                name)


CONV_BAD = [("conv2d", (1, 2, 0, 4), (3, 2, 1, 1), {"padding": 1}), ("conv1d", (1, 2, 0), (3, 2, 1), {"padding": 1}),
            ("conv3d", (1, 2, 0, 4, 4), (3, 2, 1, 1, 1), {"padding": 1}), ("conv2d", (2, 0, 4), (3, 2, 1, 1), {}),
            ("conv2d", (1, 2, 3, 4), (0, 2, 1, 1), {}), ("conv_transpose2d", (1, 2, 0, 4), (2, 3, 2, 2), {}),
            ("conv_transpose2d", (1, 2, 3, 3), (2, 0, 2, 2), {}), ("conv_transpose2d", (1, 0, 3, 3), (0, 3, 2, 2), {})]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn,shape,wshape,kw", CONV_BAD, ids=["%s%s%s" % c[:3] for c in CONV_BAD])
def test_conv_of_an_empty_plane_raises(device, fn, shape, wshape, kw):
    x, xt = both(device, shape)
    w, wt = both(device, wshape, seed=1)
    raises_like(lambda: getattr(F, fn)(x, w, **kw), lambda: getattr(TF, fn)(xt, wt, **kw), fn)


@pytest.mark.parametrize("device", DEVICES)
def test_conv_of_an_empty_batch_as_torch(device):
    """(Zero input channels are not compared: torch 1.13 gives [1, 0, 3, 4] for a [1, 0, 3, 4]
    input and a [3, 0, 1, 1] weight, where the 3 output channels of zeros are ours.)"""
    x, xt = both(device, (0, 2, 3, 4), requires_grad=True)
    w, wt = both(device, (3, 2, 1, 1), seed=1)
    y, yt = F.conv2d(x, w), TF.conv2d(xt, wt)
    same_result(y, yt)
    y.sum().backward()
    yt.sum().backward()
    same_result(x.grad, xt.grad)


@pytest.mark.parametrize("device", DEVICES)
def test_pack_sequence_of_empty_tensors_raises(device):
    a, at = both(device, (3, 0))
    b, bt = both(device, (2, 0))
    raises_like(lambda: ff_rnn.pack_sequence([a, b]), lambda: torch.nn.utils.rnn.pack_sequence([at, bt]),
                "Cannot pack empty tensors")
    p, pt = both(device, (3, 2, 4, 0))
    raises_like(lambda: ff_rnn.pack_padded_sequence(p, [3, 2]),
                lambda: torch.nn.utils.rnn.pack_padded_sequence(pt, [3, 2]), "pack_padded_sequence")
    same_result(ff_rnn.pad_sequence([a, b]), torch.nn.utils.rnn.pad_sequence([at, bt]))  # padding them is fine
