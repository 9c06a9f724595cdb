"""Normalization, padding, shape, embedding, bilinear, dropout and upsampling modules against
torch 1.13: weights copied from torch's module by load_state_dict, then values, input and
parameter gradients, repr and state_dict keys compared; running stats after training steps."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn.functional as F
from fusionflow import nn

torch = pytest.importorskip("torch")
from nn_compare import arr, compare_module, compare_fn  # noqa: E402

X4 = arr((2, 6, 5, 4), 1)
X3 = arr((3, 6, 7), 2)
X5 = arr((2, 4, 3, 4, 5), 3)

LAYERS = [
    ("GroupNorm", (3, 6), {}, [X4]),
    ("GroupNorm", (2, 6), {"affine": False, "eps": 1e-3}, [X3]),
    ("GroupNorm", (1, 4), {}, [X5]),
    ("InstanceNorm1d", (6,), {}, [X3]),
    ("InstanceNorm1d", (6,), {"affine": True}, [X3[0]]),  # unbatched
    ("InstanceNorm2d", (6,), {"affine": True, "track_running_stats": True}, [X4]),
    ("InstanceNorm3d", (4,), {"affine": True}, [X5]),
    ("LayerNorm", ((5, 4),), {}, [X4]),
    ("LayerNorm", (7,), {"elementwise_affine": False, "eps": 1e-3}, [X3]),
    ("LocalResponseNorm", (3,), {}, [X4]),
    ("LocalResponseNorm", (4,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, [X3]),
    ("LocalResponseNorm", (2,), {}, [X5]),
    ("CrossMapLRN2d", (3,), {"alpha": 0.01}, [X4]),
    ("BatchNorm1d", (6,), {}, [X3]),
    ("BatchNorm2d", (6,), {"momentum": None}, [X4]),
    ("BatchNorm3d", (4,), {}, [X5]),
    ("BatchNorm3d", (4,), {"affine": False, "track_running_stats": False}, [X5]),
    ("ConstantPad1d", (2, 1.5), {}, [X3]),
    ("ConstantPad2d", ((1, 0, 2, 3), -1.0), {}, [X4]),
    ("ConstantPad3d", (1, 0.5), {}, [X5]),
    ("ZeroPad2d", ((0, 1, 2, 0),), {}, [X4]),
    ("ReflectionPad1d", ((3, 2),), {}, [X3]),
    ("ReflectionPad2d", (2,), {}, [X4]),
    ("ReflectionPad3d", (1,), {}, [X5]),
    ("ReplicationPad1d", ((0, 4),), {}, [X3]),
    ("ReplicationPad2d", ((1, 2, 3, 0),), {}, [X4]),
    ("ReplicationPad3d", (2,), {}, [X5]),
    ("Flatten", (), {}, [X4]),
    ("Flatten", (0, 2), {}, [X4]),
    ("Unflatten", (1, (2, 3)), {}, [X4]),
    ("Identity", (3,), {"unused": 1}, [X3]),
    ("Bilinear", (6, 4, 5), {}, [arr((3, 6), 4), arr((3, 4), 5)]),
    ("Bilinear", (6, 4, 2), {"bias": False}, [arr((2, 3, 6), 4), arr((2, 3, 4), 5)]),
    ("PixelShuffle", (2,), {}, [arr((2, 8, 3, 2), 6)]),
    ("PixelUnshuffle", (2,), {}, [arr((2, 2, 4, 6), 6)]),
    ("ChannelShuffle", (3,), {}, [X4]),
    ("Upsample", (), {"scale_factor": 2}, [X4]),
    ("Upsample", (), {"size": (7, 9), "mode": "bilinear", "align_corners": False}, [X4]),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "linear"}, [X3]),
    ("UpsamplingNearest2d", (), {"size": 6}, [X4]),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2}, [X4]),
    ("Dropout", (0.3,), {}, [X3]), ("Dropout1d", (), {}, [X3]), ("Dropout2d", (0.2,), {}, [X4]),
    ("Dropout3d", (), {}, [X5]), ("AlphaDropout", (0.2,), {}, [X3]), ("FeatureAlphaDropout", (), {}, [X4]),
]


@pytest.mark.parametrize("name,args,kwargs,inputs", LAYERS, ids=[c[0] + str(i) for i, c in enumerate(LAYERS)])
def test_layer_matches_torch(name, args, kwargs, inputs):
    train = False if "Dropout" in name else None  # dropout: eval is the identity in both
    # torch 1.13 has no derivative for channel_shuffle; CrossMapLRN2d's legacy backward is the
    # symmetric-window formula, not the derivative of its own forward (ours is the derivative)
    grad = name not in ("ChannelShuffle", "CrossMapLRN2d")
    ours, theirs = compare_module(name, args, kwargs, inputs, tol=3e-5, train=train, grad=grad)
    # training-mode running statistics after the step above
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    if hasattr(theirs, "running_mean") and theirs.running_mean is not None:
        ours.eval(), theirs.eval()  # eval: the running statistics are used
        x = inputs[0]
        np.testing.assert_allclose(ours(ff.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(),
                                   rtol=3e-5, atol=3e-5)


@pytest.mark.parametrize("shape", [(4, 6), (3, 6, 7), (2, 6, 3, 4, 5)])
def test_sync_batchnorm_in_one_process_is_batchnorm(shape):
    """torch's SyncBatchNorm trains only on GPUs; in one process it must equal BatchNorm."""
    ref = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 5: torch.nn.BatchNorm3d}[len(shape)](6, momentum=0.3)
    ours = nn.SyncBatchNorm(6, momentum=0.3)
    assert repr(ours) == repr(torch.nn.SyncBatchNorm(6, momentum=0.3))
    assert list(ours.state_dict()) == list(ref.state_dict())
    x = arr(shape, 4)
    a, b = ff.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    np.testing.assert_allclose(ours(a).numpy(), ref(b).detach().numpy(), rtol=3e-5, atol=3e-5)
    ours(a).sum().backward()
    ref(b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours.running_var.numpy(), ref.running_var.numpy(), rtol=1e-5)


def test_batchnorm_cumulative_average_over_steps():
    ours, theirs = nn.BatchNorm1d(6, momentum=None), torch.nn.BatchNorm1d(6, momentum=None)
    for s in range(3):
        x = arr((5, 6), 10 + s) * (s + 1)
        ours(ff.tensor(x))
        theirs(torch.tensor(x))
    for k in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(ours, k).numpy(), getattr(theirs, k).numpy(), rtol=1e-5)


def test_dropout_variants_in_training():
    ff.manual_seed(3)
    x = ff.ones(64, 32, 4, 4)
    y = nn.Dropout2d(0.25)(x).numpy()
    per_channel = y.reshape(64, 32, 16)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # whole channels kept or dropped
    assert np.allclose(y[y != 0], 1.0 / 0.75) and abs((y == 0).mean() - 0.25) < 0.03
    a = nn.AlphaDropout(0.2)(ff.tensor(arr((20000,), 5))).numpy()  # keeps zero mean, unit variance
    assert abs(a.mean()) < 0.05 and abs(a.std() - 1.0) < 0.05
    z = nn.FeatureAlphaDropout(0.5)(ff.ones(50, 40, 3)).numpy()
    assert np.all(z.min(-1) == z.max(-1))
    with pytest.raises(ValueError, match="probability"):
        nn.Dropout(1.5)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):  # torch 1.13: dropout1d refuses other ranks
        F.dropout1d(ff.ones(2, 3, 4, 5), 0.5, True)
    with pytest.warns(UserWarning, match="5-D input"):  # torch 1.13: dropout2d warns, drops (N, C) channels
        F.dropout2d(ff.ones(2, 3, 4, 5, 6), 0.5, True)
    with pytest.warns(UserWarning, match="2-D input"):  # torch 1.13: a warning, each element dropped
        d = F.dropout2d(ff.ones(200, 50), 0.5, True).numpy()
    assert np.allclose(d[d != 0], 2.0) and abs((d == 0).mean() - 0.5) < 0.03 and (d == 0).any(1).sum() > 150


def test_embedding_options_against_torch():
    idx = np.array([[1, 0, 3], [3, 3, 4]])
    for kw in [{}, {"padding_idx": 3}, {"padding_idx": -2, "scale_grad_by_freq": True}, {"max_norm": 1.0},
               {"max_norm": 0.5, "norm_type": 1.0}]:
        t = torch.nn.Embedding(6, 4, **kw)
        o = nn.Embedding(6, 4, **kw)
        assert repr(o) == repr(t)
        o.load_state_dict({"weight": t.weight.detach().numpy()})
        y, ty = o(ff.tensor(idx)), t(torch.tensor(idx))
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(o.weight.numpy(), t.weight.detach().numpy(), rtol=1e-6, atol=1e-7)  # max_norm
        g = arr(tuple(ty.shape), 7)
        (y * ff.tensor(g)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(o.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
    e = nn.Embedding(5, 3, padding_idx=1)
    assert not e.weight.numpy()[1].any()  # the padding row starts at zero, as torch
    p = nn.Embedding.from_pretrained(ff.tensor(arr((4, 2), 8)))
    assert not p.weight.requires_grad and p.weight.shape == (4, 2)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_against_torch(mode):
    t = torch.nn.EmbeddingBag(7, 3, mode=mode, padding_idx=2)
    o = nn.EmbeddingBag(7, 3, mode=mode, padding_idx=2)
    assert repr(o) == repr(t)
    o.load_state_dict({"weight": t.weight.detach().numpy()})
    flat, offs = np.array([1, 2, 4, 4, 6, 0, 2, 5]), np.array([0, 3, 3, 5])  # an empty bag; one of only padding
    cases = [((flat, offs), {}), ((flat.reshape(2, 4),), {})]
    if mode == "sum":
        cases.append(((flat, offs), {"per_sample_weights": arr((8,), 9)}))
    for args, kw in cases:
        targs = [torch.tensor(a) for a in args]
        y = o(*[ff.tensor(a) for a in args], **{k: ff.tensor(v) for k, v in kw.items()})
        ty = t(*targs, **{k: torch.tensor(v) for k, v in kw.items()})
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
        g = arr(tuple(ty.shape), 7)
        o.weight.grad = None
        t.weight.grad = None
        (y * ff.tensor(g)).sum().backward()
        (ty * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(o.weight.grad.numpy(), t.weight.grad.numpy(), rtol=1e-6, atol=1e-6)
    ty = torch.nn.functional.embedding_bag(torch.tensor(flat), t.weight, torch.tensor([0, 2, 8]), mode=mode,
                                           include_last_offset=True)
    y = F.embedding_bag(ff.tensor(flat), o.weight, ff.tensor([0, 2, 8]), mode=mode, include_last_offset=True)
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_pad_modes_functional_and_errors():
    for mode in ("reflect", "replicate", "circular"):
        compare_fn("pad", [X4, (1, 2, 2, 1)], {"mode": mode})
        compare_fn("pad", [X3, (2, 3)], {"mode": mode})
    compare_fn("pad", [X4, (1, 1)], {"value": 2.5})
    with pytest.raises(RuntimeError, match="Padding size should be less"):
        F.pad(ff.tensor(X3), (7, 0), mode="reflect")


def test_pixel_shuffle_round_trip_and_empty_batch():
    x = ff.tensor(arr((0, 8, 3, 3), 1))
    assert nn.PixelShuffle(2)(x).shape == (0, 2, 6, 6)
    y = ff.tensor(arr((2, 4, 6, 4), 2))
    np.testing.assert_array_equal(F.pixel_shuffle(F.pixel_unshuffle(y, 2), 2).numpy(), y.numpy())
    compare_fn("pixel_shuffle", [arr((2, 3, 9, 2, 2), 3), 3])  # extra leading dims


EMPTY = [("LayerNorm", (4,), {}, (0, 4)), ("GroupNorm", (2, 4), {}, (0, 4, 3)), ("Linear", (4, 2), {}, (0, 4)),
         ("PReLU", (), {}, (0, 3)), ("ReflectionPad1d", (1,), {}, (0, 2, 4)),
         ("ReplicationPad2d", (1,), {}, (0, 1, 3, 3)), ("LocalResponseNorm", (2,), {}, (0, 3, 4)),
         ("InstanceNorm1d", (3,), {}, (0, 3, 4)), ("Softmax", (1,), {}, (0, 3)), ("GLU", (), {}, (0, 4)),
         ("Unflatten", (1, (2, 2)), {}, (0, 4)), ("Upsample", (), {"scale_factor": 2}, (0, 2, 3, 3))]


@pytest.mark.parametrize("name,args,kwargs,shape", EMPTY, ids=[c[0] for c in EMPTY])
def test_empty_batch_as_torch(name, args, kwargs, shape):
    compare_module(name, args, kwargs, [np.zeros(shape, np.float32)])


def test_state_dicts_move_both_ways():
    """A model's state_dict loads into torch's same model and back (keys, shapes, values)."""
    def build(lib):
        body = lib.Sequential(lib.Conv2d(2, 3, 3), lib.BatchNorm2d(3), lib.ReLU(), lib.Flatten(), lib.Linear(12, 4),
                              lib.GroupNorm(2, 4), lib.PReLU(4))
        return lib.ModuleDict({"body": body, "bil": lib.Bilinear(4, 4, 2)})
    ours, theirs = build(nn), build(torch.nn)
    x = arr((2, 2, 4, 4), 3)
    ours["body"](ff.tensor(x))  # one training step moves the running stats
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
    ours.eval(), theirs.eval()
    h, th = ours["body"](ff.tensor(x)), theirs["body"](torch.tensor(x))
    np.testing.assert_allclose(ours["bil"](h, h).detach().numpy(), theirs["bil"](th, th).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    ours2 = build(nn)
    ours2.load_state_dict(theirs.state_dict())  # torch tensors load directly
    for (k, a), (_, b) in zip(ours2.state_dict().items(), theirs.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
