"""fusionflow.device: torch.device over FusionFlow's backends.

Python device names follow PyTorch, C backend names (FF_BACKEND, ff_backend_load) follow
the loader; they differ in one place, on purpose (docs/semantics.md, "Devices"):

    Python 'cpu'      the fastest CPU backend built: C 'cpu_blas', else C 'cpu'
    Python 'cpu_ref'  the reference oracle: C 'cpu'
    Python 'cuda'     C 'cuda' (one GPU: index 0)
    any other name    the C backend of that name ('cpu_blas', 'opencl', a plugin's name)

Every PyTorch program says 'cpu' and means host memory on the fast path; the reference is
kept for the conformance suite and differential tests, which name it explicitly."""
import re

from ._lib import FusionFlowError
from ._backend import backend_handle

__all__ = ["device", "backend_for", "device_of"]

CPU_REF = "cpu_ref"
_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?::(\d+))?$")
_fast_cpu = None  # the C name 'cpu' resolves to, found on first use


class device:
    """device('cpu'), device('cuda', 0), device('cuda:0'), device(other_device)."""
    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002  (torch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(%r, %r): a device object takes no index" % (type, index))
            self._type, self._index = type._type, type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):  # torch.device(0) is cuda:0
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError("device(): expected a str, int or device, got %s" % _name_of(type))
        m = _NAME.match(type.strip())
        if m is None:
            raise ValueError("device(%r): expected a name such as 'cpu', 'cuda', 'cuda:0', 'cpu_ref' "
                             "or a backend's name" % type)
        if m.group(2) is not None:
            if index is not None:
                raise ValueError("device(%r, %r): the index is given twice" % (type, index))
            index = int(m.group(2))
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError("device(%r): the index must be an int, got %s" % (type, _name_of(index)))
            if index < 0:
                raise ValueError("device(%r, %d): the index must not be negative" % (type, index))
        self._type, self._index = m.group(1), index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __eq__(self, other):
        return isinstance(other, device) and (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))

    def __str__(self):
        return self._type if self._index is None else "%s:%d" % (self._type, self._index)

    def __repr__(self):
        if self._index is None:
            return "device(type=%r)" % self._type
        return "device(type=%r, index=%d)" % (self._type, self._index)

    def __reduce__(self):
        return (device, (self._type, self._index))


def _name_of(x):
    return type(x).__name__


def fast_cpu_backend():
    """The C name of the backend Python's 'cpu' means: cpu_blas when it loads, else cpu."""
    global _fast_cpu
    if _fast_cpu is None:
        try:
            backend_handle("cpu_blas")
            _fast_cpu = "cpu_blas"
        except FusionFlowError:
            _fast_cpu = "cpu"
    return _fast_cpu


def backend_name(dev):
    """The C backend name for a device, a device string or an int (cuda index)."""
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cpu":
        return fast_cpu_backend()
    if d.type == CPU_REF:
        return "cpu"
    if d.type == "cuda" and d.index not in (None, 0):
        raise ValueError("device %r: FusionFlow's cuda backend drives one GPU, cuda:0" % str(d))
    return d.type


def backend_for(dev):
    """The C ff_backend * for a device (loads it; raises the loader's error)."""
    return backend_handle(backend_name(dev))


def device_of(c_name):
    """The Python device of a tensor on the C backend c_name."""
    if c_name == fast_cpu_backend():
        return device("cpu")
    if c_name == "cpu":
        return device(CPU_REF)
    if c_name == "cuda":
        return device("cuda", 0)
    return device(c_name)
