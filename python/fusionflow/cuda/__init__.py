"""fusionflow.cuda: torch.cuda's runtime functions over the cuda backend.

is_available() is true only when the cuda plugin loads and starts (a GPU and its driver are
there); the other functions then act on it, and without it they do what torch.cuda does on
a machine with no GPU: device_count() is 0, the seeding functions only seed, synchronize()
and the memory queries raise."""
from .._lib import C, FusionFlowError, check_status
from .._device import device
from . import amp

__all__ = ["is_available", "device_count", "current_device", "set_device", "get_device_name",
           "manual_seed", "manual_seed_all", "seed", "synchronize", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "is_bf16_supported", "amp"]

_state = {}  # "handle": the started cuda backend, or None when it cannot start


def _handle():
    if "handle" not in _state:
        from .._backend import backend_handle
        try:
            _state["handle"] = backend_handle("cuda")
        except FusionFlowError as e:
            _state["handle"], _state["why"] = None, str(e)
    return _state["handle"]


def _require(fn):
    h = _handle()
    if h is None:
        raise RuntimeError("fusionflow.cuda.%s: the cuda backend is not usable: %s" % (fn, _state["why"]))
    return h


def is_available():
    return _handle() is not None


def device_count():
    return 1 if is_available() else 0  # the backend drives one GPU


def current_device():
    _require("current_device")
    return 0


def set_device(dev):
    d = dev if isinstance(dev, device) else device(dev)
    if d.index not in (None, 0):
        raise ValueError("fusionflow.cuda.set_device(%s): the cuda backend drives one GPU, cuda:0" % d)


def get_device_name(dev=None):
    import ctypes
    buf = ctypes.create_string_buffer(256)
    check_status(C.ff_backend_device_info(_require("get_device_name"), buf, len(buf)))
    return buf.value.decode()


def manual_seed(seed):
    """One generator serves every backend (ff_manual_seed): this seeds it, as torch.manual_seed."""
    C.ff_manual_seed(int(seed) & 0xFFFFFFFFFFFFFFFF)


manual_seed_all = manual_seed


def seed():
    import random
    manual_seed(random.getrandbits(63))


def synchronize(dev=None):
    check_status(C.ff_backend_sync(_require("synchronize")))


def empty_cache():
    if is_available():  # torch's is a no-op before CUDA is initialised
        check_status(C.ff_backend_empty_cache(_handle()))


def _stats():
    import ctypes
    v = [ctypes.c_size_t(0) for _ in range(3)]
    check_status(C.ff_backend_memory_stats(_require("memory stats"), *(ctypes.byref(x) for x in v)))
    return [x.value for x in v]


def memory_allocated(dev=None):
    return _stats()[0]


def memory_reserved(dev=None):
    return _stats()[0] + _stats()[1]


def max_memory_allocated(dev=None):
    return _stats()[2]


def is_bf16_supported():
    return is_available()
