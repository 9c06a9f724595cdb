"""The cuda backend from Python. Without a usable GPU (this is how it runs where it was
written) the plugin is there but refuses to start: .to(device="cuda") raises the loader's
message and nothing else changes. With a GPU: tensors move with .to(device="cuda"),
download in .numpy(), and DLPack shares device memory with PyTorch both ways (kDLCUDA).
Skipped where the plugin was not built."""
import numpy as np
import pytest

import fusionflow as ff


def _state():
    try:
        ff._backend.backend_handle("cuda")
        return "gpu"
    except ff.FusionFlowError as e:
        return "no_device" if "no CUDA device found" in str(e) else "not_built"


STATE = _state()


@pytest.mark.skipif(STATE != "no_device", reason="needs the cuda plugin on a machine without a usable GPU")
def test_no_device_is_a_clear_error():
    t = ff.tensor(np.arange(4, dtype=np.float32))
    with pytest.raises(ff.FusionFlowError, match="the cuda backend needs an NVIDIA GPU and driver"):
        t.to(device="cuda")
    assert np.array_equal((t + t).numpy(), np.arange(4, dtype=np.float32) * 2)  # still usable


@pytest.mark.skipif(STATE != "gpu", reason="no usable CUDA device")
def test_to_device_and_back():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = ff.tensor(a).to(device="cuda")
    assert d.device == ff.device("cuda", 0) and d.is_cuda
    assert np.array_equal(d.numpy(), a)
    assert np.array_equal(d.T.numpy(), a.T)
    assert np.array_equal((d * 2).to("cpu").numpy(), a * 2)
    assert d.__dlpack_device__() == (2, 0)  # kDLCUDA


@pytest.mark.skipif(STATE != "gpu", reason="no usable CUDA device")
def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = ff.tensor(a).to(device="cuda")
    tt = torch.from_dlpack(d)                   # zero copy: FusionFlow's device memory
    assert tt.is_cuda and torch.equal(tt.cpu(), torch.from_numpy(a))
    back = ff.from_dlpack(torch.arange(5.0, device="cuda"))
    assert back.device == ff.device("cuda:0") and np.array_equal(back.numpy(), np.arange(5.0))
