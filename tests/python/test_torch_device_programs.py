"""tests/programs a third way (issue 51): each program on PyTorch itself, unchanged except for
its device string, which names fusionflow.torch_device's device for a FusionFlow backend
(tests/programs/harness/rewrite.py, device_source). Its losses must match PyTorch's CPU run
from the same weights (the harness's tolerances) with no op falling back to PyTorch's CPU
kernels. cpu_blas runs every program; opencl (PoCL in CI, kernels compiled on first use,
30-45 s a program) a few of different kinds. A program that never chooses a device cannot be
moved by a device string and must say so; DEVICE_BLOCKED lists programs whose device handling
defeats the change, and each must fail with its listed reason."""
import os
import sys

import pytest

if not os.environ.get("FF_REQUIRE_TORCH"):
    pytest.importorskip("torch")
from conftest import DEVICES, import_torch_device  # noqa: E402

import_torch_device()

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "harness")
sys.path.insert(0, HARNESS)
from pair import FIRST_RTOL, LAST_RTOL, run_device  # noqa: E402
from programs import DEVICE_BLOCKED, PROGRAMS  # noqa: E402

NO_DEVICE = {"normalizing_flows", "pygcn", "yunjey_feedforward"}  # they never choose a device
OPENCL_PROGRAMS = ["makemore_mlp", "mnist_rnn", "super_resolution"]  # embeddings, an RNN, convolutions


def _cases():
    for name in sorted(PROGRAMS):
        yield pytest.param(name, "cpu_blas", id="%s-cpu_blas" % name)
    if "opencl" in DEVICES:
        for name in OPENCL_PROGRAMS:
            yield pytest.param(name, "opencl", id="%s-opencl" % name)


@pytest.mark.parametrize("name,backend", _cases())
def test_program_on_the_device_matches_pytorch(name, backend, tmp_path):
    if backend not in DEVICES:
        pytest.skip("%s not built" % backend)
    r = run_device(name, str(tmp_path), backend)
    ref, got = r["torch"], r["device"]
    assert not ref["error"], "the PyTorch side itself failed:\n" + ref["error"]
    if name in NO_DEVICE:
        assert got.get("no_device"), "%s now chooses a device: take it off NO_DEVICE" % name
        return
    if name in DEVICE_BLOCKED:
        assert got["error"] and DEVICE_BLOCKED[name] in got["error"], \
            "%s's device side no longer fails as DEVICE_BLOCKED says:\n%s" % (name, got["error"] or got["losses"])
        return
    assert not got["error"], got["error"]
    assert "first" in r, "loss counts differ: torch %d, device %d" % (len(ref["losses"]), len(got["losses"]))
    assert r["first"] <= FIRST_RTOL and r["last"] <= LAST_RTOL, (r["first"], r["last"], got["losses"], ref["losses"])
    assert not got["fallbacks"], "ops fell back to PyTorch's CPU kernels: %s" % got["fallbacks"]
