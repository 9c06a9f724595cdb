"""fusionflow.save/load as torch.save/load: paths and file objects, nested checkpoints (model
and optimizer state_dicts) round-trip to what torch.save/torch.load give back for the same
structure, training resumes exactly; Modules and other objects are pickled."""
import io
import json
import struct

import numpy as np
import pytest

import fusionflow as ff
import fusionflow.nn as nn

torch = pytest.importorskip("torch")


def _plain(x):
    """A nested value with tensors as (dtype name, array): comparable between the libraries."""
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return ("tensor", str(x.dtype).split(".")[-1], x.detach().numpy().tolist())
    if isinstance(x, dict):
        return ("dict", [(_plain(k), _plain(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [_plain(v) for v in x])
    return (type(x).__name__, x)


def _checkpoint(lib):
    return {"epoch": 3, "lr": 0.125, "name": "run-1", "done": False, "best": None,
            "betas": (0.9, 0.999), "history": [1.5, 2.5],
            "weights": {"w": lib.tensor([[1.0, 2.0], [3.0, 4.0]]), "b": lib.tensor([1, 2])},
            "state": {0: {"step": lib.tensor(2.0), "exp_avg": lib.tensor([0.5, -0.5])}},
            "mixed": [lib.tensor(7.0), (lib.tensor([True, False]), "x")]}


@pytest.mark.parametrize("target", ["path", "bytesio", "open"])
def test_nested_checkpoint_round_trips_as_torch(tmp_path, target):
    got = []
    for lib in (ff, torch):
        obj = _checkpoint(lib)
        p = tmp_path / ("ck_%s.bin" % lib.__name__)
        if target == "path":
            lib.save(obj, p)
            back = lib.load(p)
        elif target == "bytesio":
            buf = io.BytesIO()
            lib.save(obj, buf)
            buf.seek(0)
            back = lib.load(buf)
        else:
            with open(p, "wb") as f:
                lib.save(obj, f)
            with open(p, "rb") as f:
                back = lib.load(f)
        got.append(_plain(back))
    assert got[0] == got[1]


def test_flat_state_dict_stays_a_plain_safetensors_file(tmp_path):
    p = tmp_path / "sd.safetensors"
    ff.save({"a": ff.ones(2), "b": ff.zeros(1, dtype=ff.int64)}, p, metadata={"k": "v"})
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"k": "v"} and set(header) == {"__metadata__", "a", "b"}
    assert list(ff.load(p)) == ["a", "b"]
    assert ff.load_metadata(p) == {"k": "v"}


def test_nested_metadata_is_hidden_from_load_metadata(tmp_path):
    p = tmp_path / "ck.safetensors"
    ff.save({"model": {"w": ff.ones(2)}, "step": 4}, p, metadata={"k": "v"})
    assert ff.load_metadata(p) == {"k": "v"}
    back = ff.load(p)
    assert back["step"] == 4 and back["model"]["w"].tolist() == [1.0, 1.0]


def test_special_floats_and_int_keys_survive(tmp_path):
    p = tmp_path / "f.bin"
    ff.save({1: float("inf"), 2: float("nan"), "t": (1, [2.0])}, p)
    back = ff.load(p)
    assert back[1] == float("inf") and back[2] != back[2] and back["t"] == (1, [2.0])


def _train(model, opt, x, y, steps):
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_model_and_optimizer_state_dicts_resume_training_exactly():
    rng = np.random.default_rng(0)
    x = ff.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    y = ff.tensor(rng.standard_normal((8, 2)).astype(np.float32))

    def make():
        m = nn.Sequential(nn.Linear(4, 3, seed=1), nn.Tanh(), nn.Linear(3, 2, seed=2))
        return m, ff.optim.Adam(m.parameters(), lr=0.05)
    m, opt = make()
    _train(m, opt, x, y, 3)
    buf = io.BytesIO()
    ff.save({"model": m.state_dict(), "optim": opt.state_dict(), "epoch": 3}, buf)
    buf.seek(0)
    ck = ff.load(buf)
    m2, opt2 = make()
    m2.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["optim"])
    assert ck["epoch"] == 3
    assert _train(m, opt, x, y, 3) == _train(m2, opt2, x, y, 3)


def test_torch_optimizer_state_dict_layout_round_trips(tmp_path):
    """The same optimizer state_dict layout as torch's (int state keys, param_groups list)
    comes back with the same structure from both libraries' save/load."""
    got = []
    for lib in (ff, torch):
        w = lib.tensor([1.0, -2.0], requires_grad=True)
        opt = lib.optim.Adam([w], lr=0.1)
        (w * w).sum().backward()
        opt.step()
        sd = opt.state_dict()
        p = tmp_path / ("opt_%s" % lib.__name__)
        lib.save(sd, p)
        back = lib.load(p)
        got.append((sorted(back), list(back["state"]), sorted(back["state"][0]), back["param_groups"][0]["params"],
                    back["param_groups"][0]["betas"], back["state"][0]["exp_avg"].tolist()))
    assert got[0][:5] == got[1][:5]
    assert np.allclose(got[0][5], got[1][5])


def test_objects_outside_the_tree_format_are_pickled(tmp_path):
    """A Module, or a set, is no tree of tensors: save pickles it (test_save_module_pickled.py)
    and load wants weights_only=False; a function cannot be pickled and is refused."""
    m = nn.Linear(2, 2, seed=0)
    p = tmp_path / "m.bin"
    ff.save({"model": m, "a": {1, 2}}, p)
    back = ff.load(p, weights_only=False)
    assert back["a"] == {1, 2} and type(back["model"]) is nn.Linear
    np.testing.assert_array_equal(back["model"].weight.detach().numpy(), m.weight.detach().numpy())
    with pytest.raises(TypeError, match="cannot pickle.*lambda"):
        ff.save([lambda: 0], io.BytesIO())
