"""Issue 48's hostile and odd files, and einsum over 52 subscripts.

Files (each written by the test): a safetensors header with 200k __metadata__ entries
loads in time linear in its size (the duplicate check was quadratic); a FIFO given to a
loader is refused at once instead of blocking in open(); malformed tree, pickle and
quantization metadata raise fusionflow's load error (MalformedFileError: the
FusionFlowValueError class of the C loader's malformed-header errors, and an
UnpicklingError, which is what torch.load raises for a corrupt file) naming the file and
what is malformed, never a bare RecursionError / KeyError / JSONDecodeError.

einsum: up to 52 distinct subscripts where every intermediate of some pairwise order fits
FF_MAX_DIMS (8) dims, against torch.einsum, values and gradients, on every device."""
import io
import os
import pickle
import string
import subprocess
import sys
import time

import numpy as np
import pytest

import fusionflow as ff
from fusionflow._io import MalformedFileError

try:
    import torch
except ImportError:  # python3-torch not installed
    torch = None
    if os.environ.get("FF_REQUIRE_TORCH"):
        raise

from conftest import DEVICES, make_close  # cpu_ref, and cpu_blas / opencl when they were built

close = make_close(1e-10)
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
TREE, PICKLE, QUANT = "fusionflow.tree", "fusionflow.pickle", "fusionflow.quantization"
LETTERS = string.ascii_letters  # the 52 subscripts einsum takes


# ---- item 7: a header with many metadata entries -----------------------------------------
def _write_meta_file(path, n, extra=""):
    """A plain safetensors file, no tensors, {"k0": "v", ...} (then extra) as its __metadata__."""
    header = ('{"__metadata__":{' + ",".join('"k%d":"v"' % i for i in range(n)) + extra + "}}").encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header)


def _best_process_time(fn, runs):
    best = None
    for _ in range(runs):  # the best run: a shared machine's noise only adds
        t = time.process_time()
        fn()
        t = time.process_time() - t
        best = t if best is None else min(best, t)
        if best > 2:  # a quadratic regression: no reruns of a run that slow
            break
    return best


def test_metadata_header_with_200k_entries_loads_in_linear_time(tmp_path):
    small, big = tmp_path / "m20k.safetensors", tmp_path / "m200k.safetensors"
    _write_meta_file(small, 20000)
    _write_meta_file(big, 200000)
    t_small = _best_process_time(lambda: ff.load_metadata(small), 3)
    t_big = _best_process_time(lambda: ff.load_metadata(big), 2)
    meta = ff.load_metadata(big)
    assert len(meta) == 200000 and meta["k199999"] == "v"
    # 10x the entries: 10-20x the time when linear (the small one fits the caches); the
    # per-entry lookup made it ~100x
    assert t_big / max(t_small, 1e-3) < 30, (t_small, t_big)
    # a repeated key among them is still found, and named with the file
    dup = tmp_path / "dup.safetensors"
    _write_meta_file(dup, 200000, ',"k5":"w"')
    with pytest.raises(ff.FusionFlowError, match=r"dup\.safetensors.*duplicate key 'k5'"):
        ff.load(dup)


def test_save_with_200k_metadata_entries_in_linear_time(tmp_path):
    x = {"w": ff.ones(2)}
    meta_small = {"k%d" % i: "v" for i in range(20000)}
    meta_big = {"k%d" % i: "v" for i in range(200000)}
    t_small = _best_process_time(lambda: ff.save(x, tmp_path / "s.safetensors", metadata=meta_small), 3)
    t_big = _best_process_time(lambda: ff.save(x, tmp_path / "b.safetensors", metadata=meta_big), 2)
    assert t_big / max(t_small, 1e-3) < 30, (t_small, t_big)  # as above; the quadratic check: ~100x
    assert ff.load_metadata(tmp_path / "b.safetensors") == meta_big


# ---- item 8: a FIFO where a file is expected -----------------------------------------------
_FIFO_SCRIPT = r"""
import sys
import fusionflow as ff
from fusionflow import quantization
p = sys.argv[1]
for name, call in [("load", lambda: ff.load(p)), ("load_mmap", lambda: ff.load(p, mmap=True)),
                   ("load_metadata", lambda: ff.load_metadata(p)), ("load_npy", lambda: ff.load_npy(p)),
                   ("load_into", lambda: quantization.load_into(ff.nn.Linear(2, 2), p))]:
    try:
        call()
        print(name, "returned")
    except Exception as e:
        print(name, type(e).__name__, "|", e)
"""


def test_loaders_refuse_a_fifo_at_once(tmp_path):
    fifo = tmp_path / "pipe.safetensors"
    os.mkfifo(fifo)
    # in a child, bounded by a timeout: a loader that blocks in open() waits for a writer forever
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", _FIFO_SCRIPT, str(fifo)], capture_output=True, text=True,
                         timeout=60, env=env)
    lines = out.stdout.splitlines()
    assert len(lines) == 5, out.stdout + out.stderr
    for line in lines:
        name, rest = line.split(" ", 1)
        assert rest.startswith("FusionFlowError |"), line  # FF_ERR_IO: a RuntimeError, as torch.load's
        assert "pipe.safetensors' is not a regular file but a FIFO" in rest, line
    with pytest.raises(ff.FusionFlowError, match="is not a regular file but a directory"):
        ff.load(tmp_path)


# ---- item 10: malformed metadata -----------------------------------------------------------
def _hostile(tmp_path, key, value, name="bad.safetensors"):
    """A file holding one tensor "a" and the raw metadata value under key."""
    p = tmp_path / name
    ff.save({"a": ff.ones(2)}, p, metadata={key: value})
    return p


def _nested(depth):
    text = '{"T":"a"}'
    for _ in range(depth):
        text = '{"L":[%s]}' % text
    return text


MALFORMED_TREES = [
    ("not JSON", '{"L": [', "not JSON"),
    ("deep JSON", "[" * 100000 + "]" * 100000, "nested too deeply"),
    ("deep tree", _nested(150), "nested deeper than 100 containers"),
    ("bare list", "[1, 2]", "a bare list"),
    ("unknown node", '{"Q": 1}', "unknown node 'Q'"),
    ("two keys", '{"T": "a", "L": []}', "a node with keys"),
    ("missing tensor", '{"T": "nope"}', "tensor 'nope', which the file does not hold"),
    ("unhashable tensor name", '{"T": ["a"]}', "tensor \\['a'\\], which the file does not hold"),
    ("bad float", '{"F": "1.5e"}', "float node '1.5e'"),
    ("list of a number", '{"L": 5}', "a L node holds 5, not a list"),
    ("tuple of a string", '{"U": "abc"}', "a U node holds 'abc', not a list"),
    ("dict entry not a pair", '{"D": [[1, 2, 3]]}', "a D entry \\[1, 2, 3\\] is not a \\[key, value\\] pair"),
    ("unhashable key", '{"D": [[{"U": [{"L": []}]}, 1]]}', "a dict key \\(\\[\\],\\) is not hashable"),
]


@needs_torch
@pytest.mark.parametrize("what,tree,why", MALFORMED_TREES, ids=[c[0] for c in MALFORMED_TREES])
def test_malformed_tree_metadata_is_a_load_error_naming_the_file(tmp_path, what, tree, why):
    p = _hostile(tmp_path, TREE, tree)
    with pytest.raises(MalformedFileError, match=r"load: '.*bad\.safetensors': malformed fusionflow\.tree "
                                                 r"metadata: .*" + why) as info:
        ff.load(p)
    # the classes torch.load's corrupt-file errors have, and the C loader's malformed headers'
    assert isinstance(info.value, (RuntimeError)) and isinstance(info.value, ValueError)
    assert isinstance(info.value, pickle.UnpicklingError) and isinstance(info.value, ff.FusionFlowError)
    with open(p, "rb") as f:  # a file object is named as such
        with pytest.raises(MalformedFileError, match="load: the file object: malformed"):
            ff.load(f)
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x80\x02" + b"not a pickle")
    with pytest.raises((pickle.UnpicklingError, RuntimeError)):
        torch.load(garbage)


def test_save_caps_nesting_as_load_does(tmp_path):
    ok = [ff.ones(1)]
    for _ in range(99):  # 100 containers: the deepest that loads
        ok = [ok]
    ff.save(ok, tmp_path / "ok.safetensors")
    back = ff.load(tmp_path / "ok.safetensors")
    for _ in range(99):
        back = back[0]
    close(back[0], np.ones(1), 0)
    deep = [ok]
    with pytest.raises(ValueError, match="save: the object is nested deeper than 100 containers"):
        ff.save(deep, tmp_path / "deep.safetensors")
    loop = [ff.ones(1)]
    loop.append(loop)  # holds itself: the cap, not a RecursionError
    with pytest.raises(ValueError, match="nested deeper than 100"):
        ff.save(loop, tmp_path / "loop.safetensors")


def _pickle_naming_a_missing_tensor():
    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return ("tensor", "missing", False, False) if obj == "X" else None
    buf = io.BytesIO()
    Pickler(buf, protocol=4).dump(["X"])
    return buf.getvalue()


def test_malformed_pickle_metadata_is_a_load_error_naming_the_file(tmp_path):
    import base64
    cases = [("!!not base64!!", "not base64"),
             (base64.b64encode(b"\x80\x04garbage").decode(), "the pickle cannot be read"),
             (base64.b64encode(pickle.dumps([1, 2], protocol=4)[:-3]).decode(), "the pickle cannot be read"),
             (base64.b64encode(_pickle_naming_a_missing_tensor()).decode(),
              "UnpicklingError: load: the pickle names tensor \\('tensor', 'missing'")]
    for value, why in cases:
        p = _hostile(tmp_path, PICKLE, value)
        with pytest.raises(MalformedFileError, match=r"load: '.*bad\.safetensors': malformed fusionflow\.pickle "
                                                     r"metadata: .*" + why):
            ff.load(p, weights_only=False)
        with pytest.raises(pickle.UnpicklingError, match="holds a pickled Python object"):
            ff.load(p)  # still refused before anything is read


def test_malformed_quantization_metadata_is_a_load_error_naming_the_file(tmp_path):
    from fusionflow import quantization
    model = ff.nn.Sequential(ff.nn.Linear(4, 3))
    for value, why in [("{oops", "not JSON"), ("[1, 2]", "not an object"), ('{"0": 5}', "not an object"),
                       ("[" * 100000, "not JSON")]:
        p = _hostile(tmp_path, QUANT, value)
        with pytest.raises(MalformedFileError, match=r"load: '.*bad\.safetensors': malformed "
                                                     r"fusionflow\.quantization metadata: " + why):
            quantization.load_into(model, str(p))


# ---- einsum over 52 subscripts -----------------------------------------------------------------
def _chain(n):
    """"ab,bc,cd,...": n matrices, n + 1 subscripts."""
    return ",".join(LETTERS[i] + LETTERS[i + 1] for i in range(n))


EINSUM_52 = [
    ("chain of 51 matrices", _chain(51) + "->" + LETTERS[0] + LETTERS[51], [(2, 2)] * 51),
    ("ring of 52 matrices", ",".join(LETTERS[i] + LETTERS[(i + 1) % 52] for i in range(52)) + "->", [(2, 2)] * 52),
    ("13 rank-4 operands", ",".join(LETTERS[i:i + 4] for i in range(0, 52, 4)) + "->ae",
     [(2, 1, 2, 3)] * 13),
    # left to right, the 12 would hold all of a..l at once (rank 12); pairing a with its twin does not
    ("pairs far apart", "ab,cd,ef,gh,ij,kl,ba,dc,fe,hg,ji,lk->ak", [(2, 3)] * 6 + [(3, 2)] * 6),
    ("rank 8 each, 52 in all", "abcdefgh,hijklmno,opqrstuv,vwxyzABC,CDEFGHIJ,JKLMNOPQ,QRSTUVWX,XYZ->aZ",
     [(2,) * 8] * 7 + [(2, 2, 2)]),
]


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("what,eq,shapes", EINSUM_52, ids=[c[0] for c in EINSUM_52])
def test_einsum_with_52_subscripts_matches_torch(device, what, eq, shapes):
    rng = np.random.default_rng(48)
    arrs = [rng.uniform(0.5, 1.0, s) for s in shapes]  # positive: a product of 51 stays well scaled
    fs = [ff.tensor(a, requires_grad=True, device=device) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    f, t = ff.einsum(eq, *fs), torch.einsum(eq, *ts)
    assert f.shape == tuple(t.shape), eq
    tol = 1e-10 * max(1.0, float(t.abs().max()))
    close(f, t, tol)
    w = rng.standard_normal(tuple(t.shape))
    (f * ff.tensor(w, device=device)).sum().backward()
    (t * torch.tensor(w)).sum().backward()
    for a, b in zip(fs, ts):
        close(a.grad, b.grad, 1e-10 * max(1.0, float(b.grad.abs().max())))


@needs_torch
def test_einsum_output_wider_than_8_dims_is_a_clear_error():
    xs = [ff.tensor(np.ones(2)) for _ in range(10)]
    eq = ",".join(LETTERS[:10])
    assert torch.einsum(eq, *[torch.ones(2)] * 10).dim() == 10  # torch holds 10 dims; we hold 8
    with pytest.raises(ff.FusionFlowError, match="the implicit output has rank 10, more than the 8 dims"):
        ff.einsum(eq, *xs)
    with pytest.raises(ff.FusionFlowError, match="output rank > 8"):
        ff.einsum(eq + "->" + LETTERS[:10], *xs)
