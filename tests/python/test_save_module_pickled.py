"""fusionflow.save of a whole Module pickles it (classes by reference, tensors in the
safetensors container, _pickled.py), as torch.save does; load gives it back only with
weights_only=False, as PyTorch >= 2.6, and refuses it otherwise. State_dict files are
untouched by this: still plain safetensors, loaded with weights_only=True."""
import io
import pickle

import numpy as np
import pytest

import fusionflow as ff

torch = pytest.importorskip("torch")


def _define(lib):
    """The same model on either library: conv, batch norm (buffers), a tied pair of weights."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.bn = nn.BatchNorm2d(2)
            self.enc = nn.Linear(8, 4, bias=False)
            self.dec = nn.Linear(4, 8, bias=False)
            self.out = nn.Linear(4, 8, bias=False)
            self.out.weight = self.dec.weight  # tied: one Parameter, two owners
            self.register_buffer("scale", lib.tensor([0.5, 2.0]).view(1, 2, 1, 1))

        def forward(self, x):
            h = self.bn(self.conv(x)) * self.scale
            z = self.enc(h.view(h.shape[0], -1)[:, :8])
            return self.dec(z) + self.out(z)
    Net.__qualname__ = Net.__name__ = "Net_" + lib.__name__
    return Net


_CLASSES = {lib.__name__: _define(lib) for lib in (torch, ff)}
globals().update({c.__name__: c for c in _CLASSES.values()})  # importable, as pickle needs


def _make(lib):
    lib.manual_seed(0)
    return _CLASSES[lib.__name__]()


def _summary(lib, m, x):
    m.eval()
    with lib.no_grad():
        y = m(x).numpy()
    return (type(m).__name__.split("_")[0], m.out.weight is m.dec.weight, type(m.enc.weight).__name__,
            m.enc.weight.requires_grad, sorted(n for n, _ in m.named_buffers()), y)


@pytest.mark.parametrize("target", ["path", "fileobj"])
def test_module_round_trips_with_weights_only_false_as_torch(tmp_path, target):
    x = np.random.RandomState(0).randn(3, 1, 2, 4).astype(np.float32)
    got = {}
    for lib in (torch, ff):
        m = _make(lib)
        m.train()
        m(lib.tensor(x))  # batch statistics move the running buffers: they must be saved too
        before = _summary(lib, m, lib.tensor(x))
        f = tmp_path / ("m_%s.pt" % lib.__name__) if target == "path" else io.BytesIO()
        lib.save(m, f)
        if target == "fileobj":
            f.seek(0)
        back = lib.load(f, weights_only=False)
        after = _summary(lib, back, lib.tensor(x))
        assert type(back) is type(m) and back is not m
        assert after[:5] == before[:5]
        np.testing.assert_array_equal(after[5], before[5])
        got[lib.__name__] = after
    assert got["fusionflow"][:5] == got["torch"][:5]  # ties kept, Parameters, buffers: as torch


@pytest.mark.parametrize("weights_only", [None, True])
def test_pickled_file_is_refused_without_weights_only_false(tmp_path, weights_only):
    p = tmp_path / "m.pt"
    ff.save(_make(ff), p)
    with pytest.raises(pickle.UnpicklingError, match=r"m\.pt' holds a pickled Python object.*weights_only=False"):
        ff.load(p, weights_only=weights_only)
    buf = io.BytesIO(p.read_bytes())
    with pytest.raises(pickle.UnpicklingError, match="the file object holds a pickled"):
        ff.load(buf, weights_only=weights_only)
    # PyTorch refuses the same file content under weights_only=True
    tp = tmp_path / "t.pt"
    torch.save(_make(torch), tp)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(tp, weights_only=True)


def test_state_dict_files_stay_plain_and_load_weights_only(tmp_path):
    m = _make(ff)
    p = tmp_path / "sd.safetensors"
    ff.save(m.state_dict(), p)
    assert ff.load_metadata(p) == {}
    assert b"fusionflow.pickle" not in p.read_bytes()
    sd = ff.load(p, weights_only=True)
    assert list(sd) == list(m.state_dict())
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())


def test_unpicklable_object_is_refused_and_writes_nothing(tmp_path):
    p = tmp_path / "f.pt"
    with pytest.raises(TypeError, match="cannot pickle a list.*state_dict"):
        ff.save([lambda: 0], p)
    assert not p.exists()
