"""Makes `import fusionflow` work from a source checkout: the package comes from
<repo>/python, the library from $FUSIONFLOW_LIB (set by ctest) or <repo>/build/lib."""
import gc
import os
import sys

import pytest

if os.environ.get("FF_REQUIRE_TORCH"):  # CI: the PyTorch comparisons must run, not skip
    import torch  # noqa: F401  (an ImportError here fails the whole session)
    import torchvision  # noqa: F401  (fusionflow.vision's reference)
    import PIL  # noqa: F401

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))


def make_close(default_tol, equal_nan=False):
    """close(a, b[, tol]) for the differential tests: same shape, and allclose with rtol = atol
    = tol (default_tol unless given); a and b may be tensors of ours or torch's, or arrays."""
    import numpy as np

    def close(a, b, tol=default_tol):
        a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
        b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert np.allclose(a, b, rtol=tol, atol=tol, equal_nan=equal_nan), (a, b)
    return close


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same global random state (numpy's, torch's, ours), so a test that
    draws its data unseeded sees the same numbers on every machine and run: a comparison that
    fails, fails every time, and can be reproduced."""
    import numpy as np
    np.random.seed(0)
    for name in ("torch", "fusionflow"):
        if name in sys.modules:
            sys.modules[name].manual_seed(0)
    yield


@pytest.fixture
def live_counter():
    """Asserts the test leaves no C tensor alive that it created."""
    import fusionflow as ff
    gc.collect()
    base = ff._debug_live_tensors()
    yield base
    gc.collect()
    assert ff._debug_live_tensors() == base


_COMPOSABLE = {"softmax": 10, "batch_norm": 16, "pool2d": 17, "attention": 20}  # ff_op_kind (backend_abi_ops.h)


@pytest.fixture
def force_compose():
    """force_compose("softmax" | "batch_norm" | "pool2d" | "attention"): the core composes that op even
    where the backend has its entry, as FF_SOFTMAX / FF_BATCH_NORM / FF_POOL=compose, until
    the test ends. Not through the environment: setenv while a backend's threads read it
    (PoCL's workers call getenv) is a data race that crashed an ASan run."""
    from fusionflow._lib import lib
    forced = []

    def force(kind):
        lib.ff_ops_force_compose(_COMPOSABLE[kind], True)
        forced.append(_COMPOSABLE[kind])
    yield force
    for k in forced:
        lib.ff_ops_force_compose(k, False)


def _devices():
    """The backends the differential tests run on: the reference (Python's 'cpu_ref', C's
    'cpu'), and cpu_blas and opencl when they were built (opencl also needs an OpenCL
    platform: PoCL in CI, which installs one)."""
    import fusionflow as ff
    found = ["cpu_ref"]
    for name in ("cpu_blas", "opencl"):
        try:
            ff._backend.backend_handle(name)
            found.append(name)
        except ff.FusionFlowError:
            pass
    return found


DEVICES = _devices()
if os.environ.get("FF_REQUIRE_OPENCL") and "opencl" not in DEVICES:  # CI: PoCL is there
    raise RuntimeError("FF_REQUIRE_OPENCL is set but the opencl backend does not load")


def _default_keeps_host_memory():
    """Whether tensors on the default backend are host memory (DLPack kDLCPU): zero-copy
    sharing with NumPy and PyTorch and a real data_ptr() need it. Not so when FF_BACKEND
    names a device backend, e.g. tests/guarded's PROT_NONE one."""
    import fusionflow as ff
    try:
        return ff.zeros(1).__dlpack_device__()[0] == 1
    except BufferError:
        return False


DEFAULT_HOST_MEMORY = _default_keeps_host_memory()


def _default_is_cpu():
    """Whether the default backend is what Python calls 'cpu' (the fastest CPU backend
    built); not so when FF_BACKEND names another one (cpu, i.e. 'cpu_ref', or guarded)."""
    import fusionflow as ff
    return ff.zeros(1).device == ff.device("cpu")


DEFAULT_IS_CPU = _default_is_cpu()


def pytest_configure(config):
    config.addinivalue_line("markers", "requires_host_memory: the test shares the default backend's memory "
                            "with the host (DLPack, data_ptr); skipped when FF_BACKEND names a device backend")
    config.addinivalue_line("markers", "requires_default_cpu: the test checks that the default device is "
                            "'cpu'; skipped when FF_BACKEND names another backend")


def pytest_collection_modifyitems(config, items):
    named = os.environ.get("FF_BACKEND", "")
    skip_host = pytest.mark.skip(reason="the default backend does not keep tensors in host memory "
                                 "(FF_BACKEND=%s)" % named)
    skip_cpu = pytest.mark.skip(reason="the default backend is not Python's 'cpu' (FF_BACKEND=%s)" % named)
    for item in items:
        if not DEFAULT_HOST_MEMORY and item.get_closest_marker("requires_host_memory"):
            item.add_marker(skip_host)
        if not DEFAULT_IS_CPU and item.get_closest_marker("requires_default_cpu"):
            item.add_marker(skip_cpu)


def import_torch_device():
    """fusionflow.torch_device for the tests of tests/python/test_torch_device*.py, or a skip of
    the calling module where it was not built (no libtorch-dev); with FF_REQUIRE_TORCH (CI,
    which installs libtorch-dev) its absence is a failure."""
    import pytest
    try:
        import fusionflow.torch_device as ffd
    except ImportError as e:
        if os.environ.get("FF_REQUIRE_TORCH"):
            raise
        pytest.skip("fusionflow.torch_device not built: %s" % e, allow_module_level=True)
    return ffd
