"""The opencl backend from Python (PoCL on the CPU in CI): tensors move with .to(device=),
report .device, download in .numpy(), refuse DLPack export with a clear error, and nn
modules plus optimizers train on the device exactly as on the host. Runs wherever the
plugin was built and an OpenCL platform exists (CI installs PoCL); skipped otherwise."""
import numpy as np
import pytest

import fusionflow as ff

from conftest import DEVICES, make_close

pytestmark = pytest.mark.skipif("opencl" not in DEVICES, reason="opencl backend not built or no OpenCL platform")
close = make_close(1e-5)


def test_to_device_and_back():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ff.tensor(a)
    d = t.to(device="opencl")
    assert d.device == ff.device("opencl") and t.device != ff.device("opencl")
    assert "device='opencl'" in repr(d)
    assert np.array_equal(d.numpy(), a)               # download
    assert np.array_equal(d.T.numpy(), a.T)           # a strided view downloads in order
    assert d[1, 2].item() == 6.0
    assert np.array_equal(d.to("cpu").numpy(), a)
    with pytest.raises(BufferError, match="opencl"):
        d.__dlpack__()                                # no host pointer to share


def test_mixing_devices_names_both():
    a = ff.tensor([1.0, 2.0])
    with pytest.raises(ff.FusionFlowError, match="different backends.*opencl|opencl.*different backends"):
        a + a.to(device="opencl")


def test_training_on_the_device_matches_the_host():
    """Same init, same batches: an MLP with AdamW on opencl follows the host's losses."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 10)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    losses = {}
    for dev in ("cpu_ref", "opencl"):
        ff.manual_seed(3)
        net = ff.nn.Sequential(ff.nn.Linear(10, 16), ff.nn.ReLU(), ff.nn.Linear(16, 3)).to(dev)
        assert all(p.device == ff.device(dev) for p in net.parameters())
        opt = ff.optim.AdamW(net.parameters(), lr=1e-2)
        xs, ys = ff.tensor(x).to(device=dev), ff.tensor(y).to(device=dev)
        run = []
        for _ in range(20):
            opt.zero_grad()
            loss = ff.nn.functional.cross_entropy(net(xs), ys)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses[dev] = run
    assert losses["opencl"][-1] < 0.8 * losses["opencl"][0]
    close(np.array(losses["opencl"]), np.array(losses["cpu_ref"]), 1e-4)
