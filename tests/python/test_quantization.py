"""fusionflow.quantization against PyTorch 1.13's dynamic quantization (torch.ao.quantization.
quantize_dynamic; the onednn or fbgemm engine): quantize_per_tensor / per_channel, int_repr,
dequantize, the weights a Linear quantizes to, and whole models' outputs, per channel
(per_channel_dynamic_qconfig) and per tensor (the default qconfig), with torch's
reduce_range=True activations; then the safetensors round trip and the error paths."""
import os

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as fnn

try:
    import torch
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig
    from torch.ao.quantization import quantize_dynamic as torch_quantize_dynamic
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES

needs_torch = pytest.mark.skipif(torch is None, reason="python3-torch is not installed")


def _models(seed, sizes):
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        layers += [torch.nn.Linear(a, b, bias=i % 2 == 0)] + ([torch.nn.ReLU()] if i < len(sizes) - 2 else [])
    tm = torch.nn.Sequential(*layers)
    fl = []
    for layer in layers:
        fl.append(fnn.Linear(layer.in_features, layer.out_features, bias=layer.bias is not None)
                  if isinstance(layer, torch.nn.Linear) else fnn.ReLU())
    fm = fnn.Sequential(*fl)
    fm.load_state_dict({k: ff.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


@needs_torch
def test_quantize_per_tensor_matches_torch():
    x = np.random.default_rng(1).normal(size=(5, 7)).astype(np.float32) * 3
    x[0, :3] = [0.25, -0.25, 0.75]  # ties: to even, as torch
    for dt, tdt, zp in ((ff.quint8, torch.quint8, 100), (ff.qint8, torch.qint8, -3)):
        tq = torch.quantize_per_tensor(torch.tensor(x), 0.5, zp, tdt)
        q = ff.quantize_per_tensor(ff.tensor(x), 0.5, zp, dt)
        np.testing.assert_array_equal(q.int_repr().numpy(), tq.int_repr().numpy().astype(np.int32))
        np.testing.assert_array_equal(q.dequantize().numpy(), tq.dequantize().numpy())
        assert q.q_scale() == 0.5 and q.q_zero_point() == zp and q.qscheme() == "per_tensor_affine"


@needs_torch
def test_quantize_per_channel_matches_torch():
    x = np.random.default_rng(2).normal(size=(4, 6)).astype(np.float32)
    s, z = np.array([0.01, 0.02, 0.05, 0.1]), np.array([0, 3, -2, 7])
    tq = torch.quantize_per_channel(torch.tensor(x), torch.tensor(s), torch.tensor(z), 0, torch.qint8)
    q = ff.quantize_per_channel(ff.tensor(x), s, z, 0, ff.qint8)
    np.testing.assert_array_equal(q.int_repr().numpy(), tq.int_repr().numpy().astype(np.int32))
    np.testing.assert_allclose(q.dequantize().numpy(), tq.dequantize().numpy(), rtol=1e-6)
    assert q.q_per_channel_axis() == 0 and q.qscheme() == "per_channel_affine"


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("per_channel", [True, False])
def test_quantize_dynamic_matches_torch(device, per_channel):
    tm, fm = _models(3, [64, 96, 33, 10])
    qc = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    tq = torch_quantize_dynamic(tm, {torch.nn.Linear: qc}, dtype=torch.qint8)
    fq = ff.quantization.quantize_dynamic(fm.to(device), {fnn.Linear}, dtype=ff.qint8, per_channel=per_channel)
    assert isinstance(fq[0], ff.quantization.DynamicQuantizedLinear) and isinstance(fm[0], fnn.Linear)  # a copy
    # the weights quantize to torch's integers and scales
    tw, fw = tq[0].weight(), fq[0].weight()
    np.testing.assert_array_equal(fw.int_repr().numpy(), tw.int_repr().numpy().astype(np.int32))
    tscale = tw.q_per_channel_scales().numpy() if per_channel else np.full(96, tw.q_scale())
    np.testing.assert_allclose(fw.q_per_channel_scales().to("cpu_ref").numpy(), tscale, rtol=1e-6)
    for shape in ((1, 64), (7, 64), (2, 5, 64)):
        x = np.random.default_rng(len(shape)).normal(size=shape).astype(np.float32) * 2
        yt = tq(torch.tensor(x)).numpy()
        yf = fq(ff.tensor(x, device=device)).to("cpu_ref").numpy()
        assert yf.shape == yt.shape
        # same activation parameters and integers: only the f32 scaling steps may differ
        np.testing.assert_allclose(yf, yt, rtol=1e-5, atol=1e-5 * np.abs(yt).max())
        # and within quantization error of the float model
        y32 = tm(torch.tensor(x)).detach().numpy()
        assert np.abs(yf - y32).max() < 0.05 * np.abs(y32).max()


@pytest.mark.parametrize("device", DEVICES)
def test_full_range_is_closer(device):
    """reduce_range=False (8-bit activations, safe: our kernels never saturate) beats 7 bits."""
    fm = fnn.Sequential(fnn.Linear(128, 64, seed=5), fnn.ReLU(), fnn.Linear(64, 32, seed=7)).to(device)
    x = ff.tensor(np.random.default_rng(9).normal(size=(16, 128)).astype(np.float32), device=device)
    y = fm(x).detach().to("cpu_ref").numpy()
    err = [np.abs(ff.quantization.quantize_dynamic(fm, reduce_range=rr)(x).to("cpu_ref").numpy() - y).mean()
           for rr in (True, False)]
    assert err[1] < err[0]


def test_save_load_round_trip(tmp_path):
    fm = fnn.Sequential(fnn.Linear(20, 12, seed=1), fnn.ReLU(), fnn.Linear(12, 3, seed=2))
    q = ff.quantization.quantize_dynamic(fm)
    path = tmp_path / "q.safetensors"
    ff.quantization.save(q, path)
    meta = ff.load_metadata(path)
    assert "per_channel_symmetric" in meta["fusionflow.quantization"]
    sd = ff.load(path)
    assert sd["0.weight_int8"].dtype == ff.uint8 and sd["0.weight_scale"].shape == (12,)
    fresh = ff.quantization.quantize_dynamic(fnn.Sequential(fnn.Linear(20, 12, seed=8), fnn.ReLU(),
                                                            fnn.Linear(12, 3, seed=9)))
    x = ff.randn(4, 20)
    assert not np.array_equal(fresh(x).numpy(), q(x).numpy())
    ff.quantization.load_into(fresh, path)
    np.testing.assert_array_equal(fresh(x).numpy(), q(x).numpy())
    with pytest.raises(ValueError, match="quantizes"):
        ff.quantization.load_into(ff.quantization.quantize_dynamic(fnn.Sequential(fnn.Linear(20, 12))), path)


def test_errors():
    q = ff.quantization.quantize_dynamic(fnn.Linear(8, 4, seed=1))
    with pytest.raises(ff.FusionFlowError, match="K=5"):
        q(ff.randn(2, 5))
    with pytest.raises(ff.FusionFlowError, match="scale"):
        ff.quantize_per_tensor(ff.randn(3), 0.0, 0, ff.quint8)
    with pytest.raises(TypeError, match="qint8"):
        ff.quantization.quantize_dynamic(fnn.Linear(8, 4), dtype=ff.quint8)
    with pytest.raises(RuntimeError, match="per channel"):
        q.weight().q_scale()
    if "opencl" in DEVICES:  # tensors on two backends: a clear error
        qo = ff.quantization.quantize_dynamic(fnn.Linear(8, 4, seed=1).to("opencl"))
        with pytest.raises(ff.FusionFlowError, match="different backends"):
            qo(ff.randn(2, 8))


def test_found_where_torch_keeps_it():
    """torch.ao.quantization's names reach fusionflow.quantization."""
    import fusionflow.ao.quantization as aoq
    import fusionflow.quantization as q
    assert aoq.quantize_dynamic is q.quantize_dynamic and aoq.qint8 is q.qint8
