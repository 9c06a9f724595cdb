"""Issue 48's findings 5 and 11 (round 4), against PyTorch 1.13 (set FF_REQUIRE_TORCH=1 to make
its absence an error): dynamic int8 Linear refuses non-finite weights and inputs, as torch's
quantize_dynamic / forward do, rather than turning them into plausible numbers; RNN / GRU /
LSTM on a batch of 0 sequences return empty outputs; the cells report a wrong input or
hidden size in torch's words; MultiheadAttention refuses inputs of another dtype than its
weights, as torch's linear does. Each runs on the DEVICES of conftest."""
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as fnn

try:
    import torch
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
nan, inf = float("nan"), float("inf")


def _linear_pair(seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.Sequential(torch.nn.Linear(6, 4))
    fm = fnn.Sequential(fnn.Linear(6, 4))
    fm.load_state_dict({k: ff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


# ---- 48.5: dynamic int8 Linear and non-finite values --------------------------------------
@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [nan, inf, -inf])
def test_dynamic_linear_refuses_non_finite_input(device, bad):
    tm, fm = _linear_pair()
    tq = torch_quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
    fq = ff.quantization.quantize_dynamic(fm.to(device), {fnn.Linear}, dtype=ff.qint8, per_channel=False)
    x = np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32)
    yt = tq(torch.tensor(x)).numpy()  # finite input: both run, and agree
    yf = fq(ff.tensor(x, device=device)).to("cpu_ref").numpy()
    np.testing.assert_allclose(yf, yt, rtol=1e-5, atol=1e-5 * np.abs(yt).max())
    x[1, 2] = bad
    if bad == -inf:  # torch 1.13 runs, and every output is NaN or inf: no plausible number either
        assert not np.isfinite(tq(torch.tensor(x)).numpy()).any()
    else:
        with pytest.raises(RuntimeError):  # torch: ChooseQuantizationParams / "could not execute a primitive"
            tq(torch.tensor(x))
    for shape in ((3, 6), (1, 3, 6)):
        with pytest.raises(RuntimeError, match="DynamicQuantizedLinear.forward.*NaN or inf"):
            fq(ff.tensor(x.reshape(shape), device=device))


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [nan, inf])
@pytest.mark.parametrize("per_channel", [True, False])
def test_quantize_dynamic_refuses_non_finite_weights(device, bad, per_channel):
    """torch raises for a NaN weight (AssertionError from its observer) and gives inf / NaN
    outputs for an inf one; we refuse both at quantize time, naming the function."""
    tm, fm = _linear_pair(1)
    with torch.no_grad():
        tm[0].weight[0, 0] = nan
    with pytest.raises(AssertionError):
        torch_quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
    with ff.no_grad():
        fm[0].weight[0, 0] = bad
    with pytest.raises(RuntimeError, match=r"quantize_dynamic.*weight \(4, 6\).*NaN or inf"):
        ff.quantization.quantize_dynamic(fm.to(device), {fnn.Linear}, dtype=ff.qint8, per_channel=per_channel)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_dynamic_linear_nan_bias_propagates_as_torch(device):
    """The bias stays float (torch's too), so a NaN there reaches its output column."""
    tm, fm = _linear_pair(2)
    with torch.no_grad():
        tm[0].bias[1] = nan
    with ff.no_grad():
        fm[0].bias[1] = nan
    tq = torch_quantize_dynamic(tm, {torch.nn.Linear}, dtype=torch.qint8)
    fq = ff.quantization.quantize_dynamic(fm.to(device), {fnn.Linear}, dtype=ff.qint8)
    x = np.random.default_rng(1).normal(size=(2, 6)).astype(np.float32)
    yt = tq(torch.tensor(x)).numpy()
    yf = fq(ff.tensor(x, device=device)).to("cpu_ref").numpy()
    assert np.array_equal(np.isnan(yf), np.isnan(yt)) and np.isnan(yt[:, 1]).all()


# ---- 48.11: RNNs on a batch of 0 ------------------------------------------------------------
def _rnn_pair(cls, **kw):
    tm = getattr(torch.nn, cls)(4, 3, **kw)
    fm = getattr(fnn, cls)(4, 3, **kw)
    fm.load_state_dict({k: ff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def _shapes(out):
    """(output shape, [state shapes]) of an RNN's result, either library."""
    o, h = out
    return tuple(o.shape), [tuple(t.shape) for t in (h if isinstance(h, tuple) else (h,))]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_rnn_on_empty_batch_returns_empty(device, cls, batch_first, layers, bidirectional):
    tm, fm = _rnn_pair(cls, batch_first=batch_first, num_layers=layers, bidirectional=bidirectional)
    fm = fm.to(device)
    shape = (0, 5, 4) if batch_first else (5, 0, 4)
    xt = torch.zeros(shape, requires_grad=True)
    x = ff.zeros(*shape, device=device, requires_grad=True)
    got, want = fm(x), tm(xt)
    assert _shapes(got) == _shapes(want)
    n = layers * (2 if bidirectional else 1)
    h0t, h0 = torch.zeros(n, 0, 3), ff.zeros(n, 0, 3, device=device)
    hxt, hx = ((h0t, h0t), (h0, h0)) if cls == "LSTM" else (h0t, h0)
    assert _shapes(fm(x, hx)) == _shapes(tm(xt, hxt))
    # backward runs, as torch's, with zero gradients
    got[0].sum().backward()
    want[0].sum().backward()
    assert tuple(x.grad.shape) == tuple(xt.grad.shape)
    g = fm.weight_ih_l0.grad
    assert g is not None and tuple(g.shape) == tuple(tm.weight_ih_l0.grad.shape)
    assert np.array_equal(g.to("cpu_ref").numpy(), tm.weight_ih_l0.grad.numpy())
    # a state for another batch size is refused, as torch
    bad_t, bad = torch.zeros(n, 1, 3), ff.zeros(n, 1, 3, device=device)
    with pytest.raises(RuntimeError, match="Expected hidden"):
        tm(xt, (bad_t, bad_t) if cls == "LSTM" else bad_t)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \[%d, 0, 3\], got \[%d, 1, 3\]" % (n, n)):
        fm(x, (bad, bad) if cls == "LSTM" else bad)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_lstm_with_projection_on_empty_batch_and_empty_sequence(device):
    tm, fm = _rnn_pair("LSTM", proj_size=2)
    fm = fm.to(device)
    assert _shapes(fm(ff.zeros(5, 0, 4, device=device))) == _shapes(tm(torch.zeros(5, 0, 4)))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        tm(torch.zeros(0, 2, 4))
    with pytest.raises(RuntimeError, match="LSTM: Expected sequence length to be larger than 0"):
        fm(ff.zeros(0, 2, 4, device=device))


# ---- 48.11: the cells' size errors ------------------------------------------------------------
def _cell_state(lib, cls, h, c=None, device=None):
    kw = {"device": device} if lib is ff else {}
    hh = lib.zeros(*h, **kw)
    if cls != "LSTMCell":
        return hh
    return hh, lib.zeros(*(c or h), **kw)


CELL_ERRORS = [  # (input shape, h shape, c shape, torch's message)
    ((2, 5), None, None, "input has inconsistent input_size: got 5 expected 4"),
    ((5,), None, None, "input has inconsistent input_size: got 5 expected 4"),
    ((2, 4), (2, 5), None, "has inconsistent hidden_size: got 5, expected 3"),
    ((2, 4), (3, 3), None, "Input batch size 2 doesn't match hidden0 batch size 3"),
]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", ["RNNCell", "GRUCell", "LSTMCell"])
@pytest.mark.parametrize("xs,hs,cs,msg", CELL_ERRORS)
def test_cell_size_errors_match_torch(device, cls, xs, hs, cs, msg):
    tm = getattr(torch.nn, cls)(4, 3)
    fm = getattr(fnn, cls)(4, 3).to(device)
    targs = (torch.zeros(*xs),) + ((_cell_state(torch, cls, hs, cs),) if hs else ())
    fargs = (ff.zeros(*xs, device=device),) + ((_cell_state(ff, cls, hs, cs, device),) if hs else ())
    with pytest.raises(RuntimeError, match=msg):
        tm(*targs)
    with pytest.raises(RuntimeError, match="%s: .*%s" % (cls, msg)):
        fm(*fargs)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_lstm_cell_c_size_error_and_valid_calls(device):
    tm, fm = torch.nn.LSTMCell(4, 3), fnn.LSTMCell(4, 3)
    fm.load_state_dict({k: ff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    fm = fm.to(device)
    with pytest.raises(RuntimeError, match="has inconsistent hidden_size: got 4, expected 3"):
        tm(torch.zeros(2, 4), (torch.zeros(2, 3), torch.zeros(2, 4)))
    with pytest.raises(RuntimeError, match="LSTMCell: hidden1 has inconsistent hidden_size: got 4, expected 3"):
        fm(ff.zeros(2, 4, device=device), (ff.zeros(2, 3, device=device), ff.zeros(2, 4, device=device)))
    x = np.random.default_rng(3).normal(size=(2, 4)).astype(np.float32)
    for xs in (x, x[0]):  # batched and unbatched still run, and agree
        h, c = fm(ff.tensor(xs, device=device))
        ht, ct = tm(torch.tensor(xs))
        np.testing.assert_allclose(h.detach().to("cpu_ref").numpy(), ht.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c.detach().to("cpu_ref").numpy(), ct.detach().numpy(), rtol=1e-5, atol=1e-6)


# ---- 48.11: MultiheadAttention's input dtypes -------------------------------------------------
@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "float16", "bool"])
def test_multihead_attention_refuses_other_dtypes(device, dtype):
    tm, fm = torch.nn.MultiheadAttention(4, 2), fnn.MultiheadAttention(4, 2).to(device)
    xt = torch.ones(3, 2, 4, dtype=getattr(torch, dtype))
    x = ff.ones(3, 2, 4, dtype=dtype, device=device)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        tm(xt, xt, xt)
    with pytest.raises(RuntimeError, match="multi_head_attention_forward: mat1 and mat2 must have the same dtype: "
                                           "query is %s but in_proj_weight is float32" % dtype):
        fm(x, x, x)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_multihead_attention_dtype_rules(device):
    """An f64 module takes f64 (and refuses f32); a separate-projection module checks each of
    query, key and value; under autocast a float input is cast, as torch's."""
    x = np.random.default_rng(4).normal(size=(3, 2, 4))
    tm = torch.nn.MultiheadAttention(4, 2).double()
    fm = fnn.MultiheadAttention(4, 2).double()
    fm.load_state_dict({k: ff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    fm = fm.to(device)
    xf = ff.tensor(x, dtype="float64", device=device)
    got, want = fm(xf, xf, xf)[0], tm(*(torch.tensor(x),) * 3)[0]
    assert got.dtype == ff.float64
    np.testing.assert_allclose(got.detach().to("cpu_ref").numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        tm(*(torch.tensor(x, dtype=torch.float32),) * 3)
    with pytest.raises(RuntimeError, match="query is float32 but in_proj_weight is float64"):
        fm(*(ff.tensor(x, dtype="float32", device=device),) * 3)
    sep_t, sep = torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=3), fnn.MultiheadAttention(4, 2, kdim=3, vdim=3)
    q, kv = torch.ones(3, 2, 4), torch.ones(3, 2, 3)
    with pytest.raises(RuntimeError, match="mat1 and mat2 must have the same dtype"):
        sep_t(q, kv.double(), kv)
    sep = sep.to(device)
    qf, kvf = ff.ones(3, 2, 4, device=device), ff.ones(3, 2, 3, device=device)
    with pytest.raises(RuntimeError, match="key is float64 but k_proj_weight is float32"):
        sep(qf, kvf.double(), kvf)
    with ff.autocast(dtype=ff.bfloat16):  # autocast casts f32 and the half dtypes, never f64 (torch's rule)
        m = fnn.MultiheadAttention(4, 2).to(device)
        assert m(qf, qf.bfloat16(), qf)[0].dtype == ff.bfloat16
        with pytest.raises(RuntimeError, match="query is float64 but in_proj_weight is float32"):
            m(qf.double(), qf, qf)
