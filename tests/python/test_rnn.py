"""nn.RNN / LSTM / GRU and their cells against torch 1.13: torch's weights loaded into
ours, then outputs, final states and the gradients of the input, h0/c0 and every
parameter compared; padded and packed (unequal lengths, unsorted) input."""
import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as nn
from fusionflow.nn.utils import rnn as ffrnn

from conftest import DEVICES  # cpu_ref, and cpu_blas / opencl where built

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(34)
TOL = {ff.float32: 2e-5, ff.float64: 1e-10}
TDT = {ff.float32: torch.float32, ff.float64: torch.float64}


def _close(a, b, tol):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.allclose(a, b, rtol=tol, atol=tol), np.abs(a - b).max()


def _pair(cls, dtype, *args, **kwargs):
    """(ours, torch's) built alike, torch's weights loaded into ours."""
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cls)(*args, **kwargs).to(TDT[dtype])
    ours = getattr(nn, cls)(*args, **kwargs).to(dtype)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _leaf(a, lib, dtype):
    return lib.tensor(a, dtype=dtype, requires_grad=True)


def _flatten(out):
    """Every tensor in a module's output (PackedSequence: its data)."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flatten(o)]
    if hasattr(out, "batch_sizes"):
        return [out.data]
    return [] if out is None else [out]


def _backward(outs, lib):
    """sum of out * fixed weights over every output, backward."""
    loss = 0
    for i, o in enumerate(outs):
        w = np.cos(np.arange(o.numel()).reshape(tuple(o.shape)) * 0.37 + i)
        loss = loss + (o * lib.tensor(w, dtype=o.dtype, device=o.device)).sum()
    loss.backward()


def _compare(ours, theirs, fx, tx, fh, th, dtype):
    fo, to = ours(*fx, *fh), theirs(*tx, *th)
    fouts, touts = _flatten(fo), _flatten(to)
    assert len(fouts) == len(touts)
    tol = TOL[dtype]
    for a, b in zip(fouts, touts):
        _close(a, b, tol)
    _backward(fouts, ff)
    _backward(touts, torch)
    for a, b in zip(fx + [t for h in fh for t in (h if isinstance(h, tuple) else (h,))],
                    tx + [t for h in th for t in (h if isinstance(h, tuple) else (h,))]):
        if hasattr(b, "grad") and b.requires_grad:
            _close(a.grad, b.grad, tol)
    tp = dict(theirs.named_parameters())
    names = [n for n, _ in ours.named_parameters()]
    assert names == list(tp), (names, list(tp))
    for n, p in ours.named_parameters():
        _close(p.grad, tp[n].grad, tol)


CONFIGS = [
    ("RNN", dict(num_layers=1)),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True)),
    ("LSTM", dict(num_layers=1)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, proj_size=3)),
    ("LSTM", dict(num_layers=1, bidirectional=True, proj_size=2, bias=False)),
    ("GRU", dict(num_layers=1)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
]


@pytest.mark.parametrize("dtype", [ff.float32, ff.float64])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("cls,kw", CONFIGS)
def test_module_matches_torch(cls, kw, batch_first, dtype):
    i, hid, t, b = 4, 5, 6, 3
    ours, theirs = _pair(cls, dtype, i, hid, batch_first=batch_first, **kw)
    x = RNG.standard_normal((b, t, i) if batch_first else (t, b, i))
    dirs = 2 if kw.get("bidirectional") else 1
    n = kw.get("num_layers", 1) * dirs
    h0 = RNG.standard_normal((n, b, kw.get("proj_size") or hid))
    fx, tx = [_leaf(x, ff, dtype)], [_leaf(x, torch, TDT[dtype])]
    if cls == "LSTM":
        c0 = RNG.standard_normal((n, b, hid))
        fh = [(_leaf(h0, ff, dtype), _leaf(c0, ff, dtype))]
        th = [(_leaf(h0, torch, TDT[dtype]), _leaf(c0, torch, TDT[dtype]))]
    else:
        fh, th = [_leaf(h0, ff, dtype)], [_leaf(h0, torch, TDT[dtype])]
    _compare(ours, theirs, fx, tx, fh, th, dtype)


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_module_default_state_and_unbatched(cls):
    ours, theirs = _pair(cls, ff.float64, 3, 4, num_layers=2)
    x = RNG.standard_normal((5, 3))  # unbatched [T, I]
    _compare(ours, theirs, [_leaf(x, ff, ff.float64)], [_leaf(x, torch, torch.float64)], [], [], ff.float64)


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("cls,kw", [("LSTM", dict(num_layers=2, bidirectional=True)), ("GRU", dict(bidirectional=True)),
                                    ("RNN", dict()), ("LSTM", dict(proj_size=2))])
def test_packed_matches_torch(cls, kw, enforce_sorted):
    dtype = ff.float64
    lengths = [5, 4, 4, 2] if enforce_sorted else [2, 5, 1, 4]
    ours, theirs = _pair(cls, dtype, 3, 4, **kw)
    x = RNG.standard_normal((max(lengths), len(lengths), 3))
    fx, tx = _leaf(x, ff, dtype), _leaf(x, torch, torch.float64)
    fp = ffrnn.pack_padded_sequence(fx, lengths, enforce_sorted=enforce_sorted)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted)
    fo, fh = ours(fp)
    to, th = theirs(tp)
    assert isinstance(fo, ffrnn.PackedSequence)
    assert fo.batch_sizes.tolist() == to.batch_sizes.tolist()
    fpad, flen = ffrnn.pad_packed_sequence(fo)
    tpad, tlen = torch.nn.utils.rnn.pad_packed_sequence(to)
    assert flen.tolist() == tlen.tolist()
    fouts, touts = [fpad] + _flatten(fh), [tpad] + _flatten(th)
    for a, b in zip(fouts, touts):
        _close(a, b, 1e-10)
    _backward(fouts, ff)
    _backward(touts, torch)
    _close(fx.grad, tx.grad, 1e-10)
    tparams = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        _close(p.grad, tparams[n].grad, 1e-10)


@pytest.mark.parametrize("dtype", [ff.float32, ff.float64])
@pytest.mark.parametrize("cls,kw", [("RNNCell", dict()), ("RNNCell", dict(nonlinearity="relu")), ("LSTMCell", dict()),
                                    ("GRUCell", dict()), ("GRUCell", dict(bias=False))])
def test_cell_matches_torch(cls, kw, dtype):
    ours, theirs = _pair(cls, dtype, 4, 5, **kw)
    x, h = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 5))
    fx, tx = [_leaf(x, ff, dtype)], [_leaf(x, torch, TDT[dtype])]
    if cls == "LSTMCell":
        c = RNG.standard_normal((3, 5))
        fh = [(_leaf(h, ff, dtype), _leaf(c, ff, dtype))]
        th = [(_leaf(h, torch, TDT[dtype]), _leaf(c, torch, TDT[dtype]))]
    else:
        fh, th = [_leaf(h, ff, dtype)], [_leaf(h, torch, TDT[dtype])]
    _compare(ours, theirs, fx, tx, fh, th, dtype)
    # unbatched, no state
    x1 = RNG.standard_normal(4)
    _close(_flatten(ours(ff.tensor(x1, dtype=dtype)))[0], _flatten(theirs(torch.tensor(x1, dtype=TDT[dtype])))[0],
           TOL[dtype])


def test_state_dict_loads_into_torch_and_names():
    ours = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    theirs = torch.nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2)
    sd = ours.state_dict()
    assert list(sd) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(sd[k].shape) == tuple(v.shape), k
    theirs.load_state_dict({k: torch.from_numpy(v.numpy()) for k, v in sd.items()})
    x = RNG.standard_normal((4, 2, 3)).astype(np.float32)
    _close(ours(ff.tensor(x))[0], theirs(torch.tensor(x))[0], 2e-5)
    # PyTorch's init: U(-1/sqrt(hidden), 1/sqrt(hidden)), not constant
    w = ours.weight_hh_l0.numpy()
    assert np.abs(w).max() <= 1 / np.sqrt(6) and w.std() > 0.1
    ours.flatten_parameters()


def test_dropout_between_layers():
    ours, theirs = _pair("GRU", ff.float64, 3, 4, num_layers=3, dropout=0.5)
    x = RNG.standard_normal((5, 2, 3))
    ours.eval(), theirs.eval()
    _close(ours(ff.tensor(x))[0], theirs(torch.tensor(x))[0], 1e-10)  # eval: identity
    ours.train()
    ff.manual_seed(1)
    a = ours(ff.tensor(x))[0].numpy()
    assert not np.allclose(a, theirs(torch.tensor(x))[0].detach().numpy(), atol=1e-6)  # train: it drops


def test_bad_arguments():
    with pytest.raises(ValueError):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    m = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input_size"):
        m(ff.zeros(2, 1, 5))
    with pytest.raises(RuntimeError, match="hidden size"):
        m(ff.zeros(2, 1, 3), (ff.zeros(1, 2, 4), ff.zeros(1, 2, 4)))
    with pytest.raises(Exception, match="dtype"):  # f64 input, f32 weights: refused, as torch
        m(ff.zeros(2, 1, 3, dtype=ff.float64))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_every_backend(cls, device):
    """The cell runs through ff ops only, so every backend runs it: values and gradients
    on each against torch's, f32."""
    ours, theirs = _pair(cls, ff.float32, 4, 5, num_layers=2, bidirectional=True)
    ours.to(device)
    x = RNG.standard_normal((6, 3, 4))
    fx = ff.tensor(x, dtype=ff.float32, device=device, requires_grad=True)
    tx = _leaf(x, torch, torch.float32)
    fo, to = _flatten(ours(fx)), _flatten(theirs(tx))
    assert fo[0].device == fx.device
    for a, b in zip(fo, to):
        _close(a.to("cpu"), b, 1e-4)
    _backward([o.to("cpu") for o in fo], ff)
    _backward(to, torch)
    _close(fx.grad.to("cpu"), tx.grad, 1e-4)
    tp = dict(theirs.named_parameters())
    for n, p in ours.named_parameters():
        _close(p.grad.to("cpu"), tp[n].grad, 1e-4)


def test_operand_changed_in_place_is_reported():
    """The cell saves h, c and w_hh: changing one before backward is an error, not a wrong gradient."""
    cell = nn.LSTMCell(3, 4)
    x = ff.tensor(RNG.standard_normal((2, 3)), dtype=ff.float32, requires_grad=True)
    h, c = (ff.tensor(RNG.standard_normal((2, 4)), dtype=ff.float32) for _ in range(2))
    h2, c2 = cell(x, (h, c))
    with ff.no_grad():
        c.add_(1.0)
    with pytest.raises(Exception, match="modified|in place|in-place"):
        (h2.sum() + c2.sum()).backward()


def test_create_graph_is_refused():
    cell = nn.GRUCell(3, 4)
    x = ff.tensor(RNG.standard_normal((2, 3)), dtype=ff.float64, requires_grad=True)
    cell.to(ff.float64)
    with pytest.raises(Exception, match="create_graph"):
        ff.autograd.grad(cell(x).sum(), x, create_graph=True)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_autocast_runs_in_low_precision(cls):
    """Under autocast the layer is matmul-like: every f32 operand goes to the autocast dtype."""
    m = getattr(nn, cls)(4, 8, num_layers=2)
    x = ff.tensor(RNG.standard_normal((5, 3, 4)), dtype=ff.float32, requires_grad=True)
    want = m(x)[0].numpy()
    with ff.autocast(dtype=ff.bfloat16):
        y = m(x)[0]
    assert y.dtype == ff.bfloat16
    assert np.allclose(y.float().numpy(), want, atol=5e-2)
    y.float().sum().backward()
    assert x.grad is not None and m.weight_hh_l0.grad.dtype == ff.float32


@pytest.mark.parametrize("cls,args,kw", [("LSTM", (3, 4, 2, True, True, 0.0, True, 2), {}),
                                         ("RNN", (3, 4), dict(nonlinearity="relu", num_layers=2, dropout=0.5)),
                                         ("GRU", (3, 4), dict(bias=False)),
                                         ("RNNCell", (3, 4), dict(nonlinearity="relu")),
                                         ("GRUCell", (3, 4), dict(bias=False)), ("LSTMCell", (3, 4), {})])
def test_constructor_and_repr_as_torch(cls, args, kw):
    ours, theirs = getattr(nn, cls)(*args, **kw), getattr(torch.nn, cls)(*args, **kw)
    assert repr(ours) == repr(theirs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in theirs.named_parameters()]


@pytest.mark.parametrize("dtype,tol", [(ff.bfloat16, 3e-2), (ff.float16, 4e-3)])
@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_half_dtypes(cls, dtype, tol):
    """A module moved to f16/bf16 runs in that dtype (each op through the backend's half
    path), close to its f32 result; gradients come back in the dtype."""
    m = getattr(nn, cls)(4, 8, num_layers=2, bidirectional=True)
    x = RNG.standard_normal((5, 3, 4))
    want = m(ff.tensor(x, dtype=ff.float32))[0].numpy()
    m.to(dtype)
    xh = ff.tensor(x, dtype=ff.float32).to(dtype).requires_grad_(True)
    y = m(xh)[0]
    assert y.dtype == dtype
    assert np.abs(y.float().numpy() - want).max() < tol
    y.float().sum().backward()
    assert xh.grad.dtype == dtype and m.weight_hh_l0.grad.dtype == dtype
