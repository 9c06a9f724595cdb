"""PyTorch checkpoints both ways: files real torch.save wrote (zip and legacy formats) read
by fusionflow.load, files fusionflow.save wrote read by real torch.load (weights_only=True
too); every dtype, nested training checkpoints, storages shared between tensors,
map_location and mmap; the restricted unpickler refusing a hostile pickle; damaged files
of every format refused with an error naming the file and the format; and the C loader
(ff_torch_zip_load) on the same files."""
import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import fusionflow as ff
from fusionflow._io import MalformedFileError, _read_dict
from fusionflow._lib import C

from conftest import DEVICES

torch = pytest.importorskip("torch")

DTYPES = [("float32", "float32"), ("float64", "float64"), ("float16", "float16"), ("bfloat16", "bfloat16"),
          ("int64", "int64"), ("int32", "int32"), ("uint8", "uint8"), ("bool", "bool"), ("int8", "int8"),
          ("int16", "int16")]
FORMATS = ["zip", "legacy"]


def _torch_save(obj, path, fmt):
    torch.save(obj, path, _use_new_zipfile_serialization=(fmt == "zip"))


def _values(t):
    """A tensor of either library as (dtype name, float64 values): bf16 has no NumPy dtype."""
    name = str(t.dtype).split(".")[-1].replace("bool_", "bool")
    return name, np.asarray(t.detach().double().numpy() if name != "bool" else t.detach().numpy(), np.float64)


def _same(a, b):
    (na, va), (nb, vb) = _values(a), _values(b)
    assert na == nb and va.shape == vb.shape and np.array_equal(va, vb), (na, nb, va, vb)


def _sample(dtype):
    t = torch.arange(-3, 9).reshape(3, 4)
    if dtype == "bool":
        return t % 3 == 0
    if dtype == "uint8":
        t = t + 3
    return t.to(getattr(torch, dtype)) * (1.5 if dtype.startswith(("float", "bfloat")) else 1)


# ---- torch.save -> fusionflow.load ------------------------------------------------------
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype,ff_dtype", DTYPES)
def test_every_dtype_from_torch(tmp_path, fmt, dtype, ff_dtype):
    sd = collections.OrderedDict(w=_sample(dtype), s=_sample(dtype)[1, 2].clone(), e=_sample(dtype)[:0])
    p = tmp_path / "sd.pt"
    _torch_save(sd, p, fmt)
    got = ff.load(p)
    assert isinstance(got, collections.OrderedDict) and list(got) == ["w", "s", "e"]
    for k in sd:
        assert got[k].dtype == getattr(ff, ff_dtype if ff_dtype != "bool" else "bool_")
        _same(got[k], sd[k])


def _trained(steps=3):
    """A torch model, its Adam optimizer and step scheduler after a few steps."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(5, 4)).pow(2).mean().backward()
        opt.step()
        sched.step()
    return model, opt, sched


def _compare(ours, theirs, path="obj"):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, ff.Tensor), path
        return _same(ours, theirs)
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), (path, list(ours), list(theirs))
        return [_compare(ours[k], theirs[k], "%s.%s" % (path, k)) for k in theirs]
    if isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), path
        return [_compare(a, b, "%s.%d" % (path, i)) for i, (a, b) in enumerate(zip(ours, theirs))]
    assert ours == theirs and type(ours) is type(theirs), (path, ours, theirs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_training_checkpoint_from_torch(tmp_path, fmt):
    model, opt, sched = _trained()
    ckpt = {"epoch": 7, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "scheduler": sched.state_dict(), "best": 0.25, "tag": "run", "history": [1, 2.5, None]}
    p = tmp_path / "ckpt.pth"
    _torch_save(ckpt, p, fmt)
    got = ff.load(p)
    _compare(got, ckpt)
    assert isinstance(got["model"], collections.OrderedDict)
    assert sorted(got["optimizer"]["state"]) == [0, 1, 2, 3]  # int keys survive
    # and it resumes: our model takes torch's weights
    ours = ff.nn.Sequential(ff.nn.Linear(4, 3), ff.nn.ReLU(), ff.nn.Linear(3, 2))
    ours.load_state_dict(got["model"])
    x = np.random.RandomState(0).randn(2, 4).astype(np.float32)
    np.testing.assert_allclose(ours(ff.tensor(x)).detach().numpy(), model(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fmt", FORMATS)
def test_storages_shared_in_torch_stay_shared(tmp_path, fmt):
    base = torch.arange(24.0).reshape(4, 6)
    tied = torch.nn.Parameter(torch.randn(3, 2))
    obj = {"base": base, "t": base.t(), "row": base[2], "cols": base[:, 1:5:2], "tied_a": tied, "tied_b": tied,
           "own": torch.ones(3)}
    p = tmp_path / "views.pt"
    _torch_save(obj, p, fmt)
    got = ff.load(p)
    for k in obj:
        _same(got[k], obj[k])
        assert got[k].stride() == obj[k].stride(), k
    for k in ("t", "row", "cols"):
        assert got[k].shares_memory_with(got["base"]), k
    assert got["tied_a"] is got["tied_b"] and isinstance(got["tied_a"], ff.nn.Parameter)
    assert got["tied_a"].requires_grad
    assert not got["own"].shares_memory_with(got["base"])
    got["base"].add_(100.0)  # one storage: the views see the write
    assert got["row"][0].item() == 112.0 and got["t"][1, 0].item() == 101.0


# ---- fusionflow.save -> torch.load --------------------------------------------------------
@pytest.mark.parametrize("dtype,ff_dtype", DTYPES)
def test_every_dtype_to_torch_weights_only(tmp_path, dtype, ff_dtype):
    src = _sample(dtype)
    ours = ff.tensor(src.float().numpy()).to(getattr(ff, ff_dtype if ff_dtype != "bool" else "bool_")) \
        if dtype != "bool" else ff.tensor(src.numpy())
    p = tmp_path / "sd.pt"
    ff.save(collections.OrderedDict(w=ours, row=ours[1]), p)
    with open(p, "rb") as fh:
        assert fh.read(4) == b"PK\x03\x04"  # PyTorch's zip format
    got = torch.load(p, weights_only=True)
    assert list(got) == ["w", "row"]
    _same(ours, got["w"])
    assert got["w"].dtype == src.dtype and got["row"].data_ptr() == got["w"][1].data_ptr()


def test_training_checkpoint_to_torch_and_back(tmp_path):
    torch.manual_seed(0)
    model = ff.nn.Sequential(ff.nn.Linear(4, 3), ff.nn.Tanh(), ff.nn.Linear(3, 2))
    opt = ff.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(ff.randn(5, 4)).pow(2).mean().backward()
        opt.step()
    ckpt = {"epoch": 2, "model": model.state_dict(), "optimizer": opt.state_dict(), "loss": 0.5, "name": "x"}
    p = tmp_path / "ours.pth"
    ff.save(ckpt, p)
    # torch 1.13's weights_only reader has no opcode for floats (BINFLOAT: its own limit,
    # the same for a file torch.save wrote), so the whole checkpoint loads unrestricted,
    # and the state_dicts of numbers and tensors alone with weights_only=True
    theirs = torch.load(p)
    _compare(ckpt, theirs)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    tmodel.load_state_dict(theirs["model"])
    p2 = tmp_path / "sd.pth"
    ff.save(model.state_dict(), p2)
    _compare(model.state_dict(), torch.load(p2, weights_only=True))
    # and torch's save of it back to us
    p3 = tmp_path / "back.pth"
    torch.save(theirs, p3)
    _compare(ff.load(p3), theirs)


@pytest.mark.parametrize("device", DEVICES)
def test_sharing_survives_into_torch(tmp_path, device):
    w = ff.randn(4, 6, device=device)
    emb = ff.nn.Parameter(ff.randn(5, 3, device=device))
    obj = {"w": w, "wt": w.t(), "row": w[1], "cols": w[:, 2:4], "emb": emb, "tied": emb}
    p = tmp_path / "shared.pt"
    ff.save(obj, p)
    got = torch.load(p)
    for k in obj:
        _same(obj[k], got[k])
        assert got[k].stride() == obj[k].stride(), k
    for k in ("wt", "row", "cols"):
        assert got[k].storage().data_ptr() == got["w"].storage().data_ptr(), k
    assert got["emb"] is got["tied"] and isinstance(got["emb"], torch.nn.Parameter)
    with zipfile.ZipFile(p) as z:  # one storage for w's views, one for the parameter
        assert sorted(n for n in z.namelist() if "/data/" in n) == ["shared/data/0", "shared/data/1"]
        for info in z.infolist():  # stored and 64-byte aligned, as torch writes them
            assert info.compress_type == zipfile.ZIP_STORED
            if "/data/" in info.filename:
                with open(p, "rb") as fh:
                    fh.seek(info.header_offset + 26)
                    n, x = struct.unpack("<HH", fh.read(4))
                assert (info.header_offset + 30 + n + x) % 64 == 0


def test_round_trip_keeps_parameters_and_file_objects(tmp_path):
    lin = ff.nn.Linear(3, 2)
    buf = io.BytesIO()
    ff.save({"p": lin.weight, "g": ff.ones(2).requires_grad_(True), "n": ff.zeros(2)}, buf)
    buf.seek(0)
    got = ff.load(buf)
    assert isinstance(got["p"], ff.nn.Parameter) and got["p"].requires_grad
    assert got["g"].requires_grad and not got["n"].requires_grad
    _same(got["p"], torch.tensor(lin.weight.detach().numpy()))
    buf.seek(0)
    assert torch.load(buf)["g"].requires_grad


# ---- map_location and mmap ------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_map_location_puts_every_tensor_there(tmp_path, device, fmt):
    base = torch.arange(12.0).reshape(3, 4)
    p = tmp_path / "m.pt"
    _torch_save({"a": base, "b": base[1:], "c": torch.tensor([1, 2])}, p, fmt)
    want = ff.zeros(1, device=device).device  # cpu_blas is device('cpu')
    for how in (device, ff.device(device), {"cpu": device}, lambda storage, loc: storage.to(device)):
        got = ff.load(p, map_location=how)
        for k in ("a", "b", "c"):
            assert got[k].device == want, (how, k)
        _same(got["b"], base[1:])
        assert got["b"].shares_memory_with(got["a"])
    assert ff.load(p, device)["a"].device == want  # torch.load(f, "cpu"): positional


def test_mmap_views_the_file_copy_on_write(tmp_path):
    p = tmp_path / "m.pt"
    torch.save({"w": torch.arange(64.0), "h": torch.ones(3, dtype=torch.bfloat16)}, p)
    before = p.read_bytes()
    got = ff.load(p, mmap=True)
    _same(got["w"], torch.arange(64.0))
    _same(got["h"], torch.ones(3, dtype=torch.bfloat16))
    got["w"].add_(1.0)  # private pages: the file is untouched
    assert got["w"][0].item() == 1.0 and p.read_bytes() == before
    legacy = tmp_path / "l.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used with files saved in the zip format"):
        ff.load(legacy, mmap=True)


# ---- formats by their bytes; safetensors stays ------------------------------------------
def test_formats_are_told_by_bytes_not_names(tmp_path):
    t = ff.arange(6).reshape(2, 3)
    st = tmp_path / "really_safetensors.pt"
    ff.save({"t": t}, st, format="safetensors")
    assert st.read_bytes()[8:9] == b"{"
    tz = tmp_path / "really_zip.safetensors"
    torch.save({"t": torch.arange(6).reshape(2, 3)}, tz)
    suffix = tmp_path / "by_suffix.safetensors"
    ff.save({"t": t}, suffix)
    assert suffix.read_bytes()[8:9] == b"{"
    for p in (st, tz, suffix):
        _same(ff.load(p)["t"], torch.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match="format must be"):
        ff.save({"t": t}, tmp_path / "x", format="npz")


def test_save_is_atomic(tmp_path):
    p = tmp_path / "ckpt.pt"
    ff.save({"w": ff.ones(2)}, p)
    with pytest.raises(TypeError, match="cannot pickle"):
        ff.save({"w": ff.zeros(2), "f": lambda: 0}, p)
    assert os.listdir(tmp_path) == ["ckpt.pt"]  # no temporary left, the old file whole
    _same(ff.load(p)["w"], torch.ones(2))


# ---- the restricted unpickler ----------------------------------------------------------
class _Hostile:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, ("touch %s" % self.marker,)


def _hostile_zip(path, marker):
    """A zip checkpoint whose data.pkl calls os.system when unpickled by a full pickle."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("evil/data.pkl", pickle.dumps({"w": _Hostile(marker)}, protocol=2))
        z.writestr("evil/version", "3\n")


def _hostile_legacy(path, marker):
    with open(path, "wb") as f:
        for head in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
            pickle.dump(head, f, protocol=2)
        pickle.dump(_Hostile(marker), f, protocol=2)
        pickle.dump([], f, protocol=2)


@pytest.mark.parametrize("make", [_hostile_zip, _hostile_legacy])
@pytest.mark.parametrize("weights_only", [None, True])
def test_hostile_pickle_never_runs(tmp_path, make, weights_only):
    marker = tmp_path / "ran"
    p = tmp_path / "evil.pt"
    make(p, marker)
    with pytest.raises(pickle.UnpicklingError, match=r"evil\.pt' holds a pickled Python object.*(posix|os)\.system"
                       r".*weights_only=False"):
        ff.load(p, weights_only=weights_only)
    assert not marker.exists()


def test_weights_only_false_is_the_full_pickle(tmp_path):
    p = tmp_path / "counter.pt"
    torch.save({"c": collections.Counter("aab"), "w": torch.ones(2)}, p)
    with pytest.raises(pickle.UnpicklingError, match="collections.Counter"):
        ff.load(p)
    got = ff.load(p, weights_only=False)
    assert got["c"] == collections.Counter("aab")
    _same(got["w"], torch.ones(2))


# ---- damaged files of every format -------------------------------------------------------
def _damaged(tmp_path):
    """(format name, the file's bytes) of a small checkpoint in each format."""
    sd = {"w": torch.arange(40.0).reshape(5, 8), "b": torch.tensor([1, 2, 3]), "m": torch.tensor([True, False])}
    out = []
    for fmt in FORMATS:
        p = tmp_path / ("d_" + fmt)
        _torch_save(sd, p, fmt)
        out.append((fmt, p.read_bytes()))
    st = tmp_path / "d.safetensors"
    ff.save({k: ff.tensor(v.numpy()) for k, v in sd.items()}, st)
    out.append(("safetensors", st.read_bytes()))
    return out


_REFUSED = (MalformedFileError, ff.FusionFlowError, pickle.UnpicklingError)


def _load_or_refuse(p, fmt):
    try:
        got = ff.load(p)
    except _REFUSED as e:
        assert "bad.pt" in str(e), e
        # the format it was read as: a damaged signature makes a zip file "safetensors"
        assert any(s in str(e) for s in ("PyTorch %s checkpoint" % fmt, "pickle", "safetensors")), e
        return None
    return got


@pytest.mark.parametrize("fmt_index", [0, 1, 2])
def test_truncated_files_name_the_file_and_format(tmp_path, fmt_index):
    fmt, data = _damaged(tmp_path)[fmt_index]
    p = tmp_path / "bad.pt"
    for n in sorted({0, 1, 7, 8, 20, 64, len(data) // 3, len(data) // 2, len(data) - 30, len(data) - 1}):
        p.write_bytes(data[:n])
        if n == 0:
            with pytest.raises(ff.FusionFlowError):  # too short for any format: safetensors' error
                ff.load(p)
            continue
        assert _load_or_refuse(p, fmt) is None, n


@pytest.mark.parametrize("fmt_index", [0, 1])
def test_fuzzed_torch_files_load_or_are_refused(tmp_path, fmt_index):
    """Random byte damage (the Python readers' fuzzing, beside tests/fuzz for the C ones):
    every file loads or raises one of the load errors, never anything else."""
    fmt, data = _damaged(tmp_path)[fmt_index]
    rng = np.random.RandomState(fmt_index)
    p = tmp_path / "bad.pt"
    for _ in range(150):
        b = bytearray(data)
        for i in rng.randint(0, len(b), rng.randint(1, 4)):
            b[i] = rng.randint(256)
        p.write_bytes(bytes(b))
        _load_or_refuse(p, fmt)


def test_lying_sizes_allocate_nothing(tmp_path):
    p = tmp_path / "bad.pt"
    torch.save({"w": torch.ones(4)}, p)
    with zipfile.ZipFile(p) as z:
        pkl = z.read("bad/data.pkl")
    huge = pkl.replace(b"K\x04t", b"\x8a\x05\x00\x00\x00\x00\x10t")  # numel 4 -> 2**36
    assert huge != pkl
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("bad/data.pkl", huge)
        z.writestr("bad/data/0", b"\0" * 16)
        z.writestr("bad/version", "3\n")
    with pytest.raises(MalformedFileError, match="bad.pt.*zip checkpoint.*holds 16 bytes"):
        ff.load(p)
    assert C.ff_torch_zip_load(os.fsencode(p)) is None
    assert "claims 68719476736 elements" in ff._lib.error().args[0]


# ---- the C loader --------------------------------------------------------------------------
def _c_load(p):
    d = C.ff_torch_zip_load(os.fsencode(p))
    if not d:
        raise ff._lib.error()
    return _read_dict(d, False)


def test_c_loader_reads_torch_state_dicts_and_checkpoints(tmp_path):
    model, opt, _ = _trained(steps=1)
    p = tmp_path / "sd.pt"
    sd = model.state_dict()
    sd["half"] = torch.ones(2, 3, dtype=torch.float16).t()
    sd["flags"] = torch.tensor([True, False])
    torch.save(sd, p)
    got = _c_load(p)
    assert list(got) == list(sd)
    for k in sd:
        _same(got[k], sd[k])
        assert got[k].stride() == sd[k].stride()
    ck = tmp_path / "ck.pt"
    torch.save({"epoch": 1, "model": model.state_dict(), "optimizer": opt.state_dict()}, ck)
    got = _c_load(ck)
    assert "model.0.weight" in got and "optimizer.state.0.exp_avg" in got and "epoch" not in got
    _same(got["optimizer.state.0.exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    views = tmp_path / "v.pt"
    base = torch.arange(6.0).reshape(2, 3)
    torch.save({"a": base, "b": base.t()}, views)
    got = _c_load(views)
    assert got["b"].shares_memory_with(got["a"])


def test_c_loader_refuses_what_is_not_a_state_dict(tmp_path):
    marker = tmp_path / "ran"
    p = tmp_path / "evil.pt"
    _hostile_zip(p, marker)
    with pytest.raises(ff.FusionFlowError, match=r"evil\.pt': the checkpoint's pickle names (posix|os)\.system"):
        _c_load(p)
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(ff.FusionFlowError, match="legacy.pt': not a readable PyTorch zip checkpoint"):
        _c_load(legacy)
    small = tmp_path / "q.pt"  # a quantized tensor: its rebuild function is refused by name
    torch.save({"w": torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)}, small)
    with pytest.raises(ff.FusionFlowError, match="_rebuild_qtensor"):
        _c_load(small)
    with pytest.raises(pickle.UnpicklingError, match="_rebuild_qtensor"):
        ff.load(small)


def test_shapes_cross_as_torch_size(tmp_path):
    """A saved .shape (fusionflow's Size) is torch.Size in the file: torch.load with
    weights_only reads it, and it comes back as a Size; safetensors keeps it as a tuple."""
    p = str(tmp_path / "shape.pt")
    ff.save({"w": ff.ones(2, 3), "shape": ff.ones(2, 3).shape}, p)
    got = torch.load(p, weights_only=True)
    assert isinstance(got["shape"], torch.Size) and tuple(got["shape"]) == (2, 3)
    back = ff.load(p)["shape"]
    assert type(back) is type(ff.ones(1).shape) and back == (2, 3)
    torch.save({"s": torch.ones(4, 5).shape}, p)
    assert ff.load(p)["s"] == (4, 5)
    q = str(tmp_path / "shape.safetensors")
    ff.save({"w": ff.ones(2), "shape": ff.ones(2, 3).shape}, q)
    assert tuple(ff.load(q)["shape"]) == (2, 3)
