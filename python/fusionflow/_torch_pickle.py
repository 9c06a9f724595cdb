"""The pickles inside PyTorch's checkpoints (torch.save), read and written by us.

In such a pickle a tensor is a call of torch._utils._rebuild_tensor_v2(storage, offset,
size, stride, requires_grad, hooks), its storage a persistent id ('storage',
torch.<X>Storage, key, location, numel) whose bytes the container (_torch_format.py)
holds under key; a Parameter wraps that in torch._utils._rebuild_parameter.

Reading is restricted by default, with PyTorch's weights_only semantics: find_class
hands out only containers, OrderedDict, the rebuild functions and the storage and dtype
names, each mapped to our own code; any other global (os.system, a Module class) is
refused before it is imported, so nothing a hostile pickle names runs. weights_only=False
is the full pickle, for trusted files only.

Writing goes through the pure-Python Pickler (protocol 2, as torch.save), whose
reducer_override and dispatch let a tensor become the torch globals above without torch
being importable here."""
import collections
import pickle

import numpy as np

from . import _dtype
from ._tensor import Tensor

# torch.<X>Storage -> our dtype; the ones we have no dtype for are refused by name.
STORAGE_DTYPES = {"FloatStorage": _dtype.float32, "DoubleStorage": _dtype.float64, "HalfStorage": _dtype.float16,
                  "BFloat16Storage": _dtype.bfloat16, "LongStorage": _dtype.int64, "IntStorage": _dtype.int32,
                  "ByteStorage": _dtype.uint8, "BoolStorage": _dtype.bool_, "CharStorage": _dtype.int8,
                  "ShortStorage": _dtype.int16, "ComplexFloatStorage": _dtype.complex64,
                  "ComplexDoubleStorage": _dtype.complex128}
UNSUPPORTED_STORAGES = {"QInt8Storage": "qint8", "QUInt8Storage": "quint8",
                        "QInt32Storage": "qint32", "UntypedStorage": "untyped"}
_STORAGE_NAMES = {d.code: name for name, d in STORAGE_DTYPES.items()}
TORCH_DTYPES = {"float32": _dtype.float32, "float": _dtype.float32, "float64": _dtype.float64,
                "double": _dtype.float64, "float16": _dtype.float16, "half": _dtype.float16,
                "bfloat16": _dtype.bfloat16, "int64": _dtype.int64, "long": _dtype.int64, "int32": _dtype.int32,
                "int": _dtype.int32, "uint8": _dtype.uint8, "bool": _dtype.bool_}


class StorageType:
    """What torch.<X>Storage unpickles to: the dtype of the storages named with it."""

    def __init__(self, name):
        self.name = name
        self.dtype = STORAGE_DTYPES.get(name)


class TorchGlobal:
    """A torch name the writer emits as a GLOBAL opcode (torch need not be importable)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):  # the Pickler only checks that a reduce's function is callable
        raise TypeError("%s.%s is a name written into a checkpoint, not a function" % (self.module, self.name))


REBUILD_V2 = TorchGlobal("torch._utils", "_rebuild_tensor_v2")
REBUILD_PARAMETER = TorchGlobal("torch._utils", "_rebuild_parameter")


# ---- reading ------------------------------------------------------------------------
def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None):
    t = storage.view(storage_offset, tuple(size), tuple(stride))
    return t.requires_grad_(True) if requires_grad else t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return storage.view(storage_offset, tuple(size), tuple(stride))


def _rebuild_parameter(data, requires_grad, backward_hooks=None, *state):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _torch_size(values=()):
    from ._shape import Size
    return Size(values)


def _parameter_class(data=None, requires_grad=True):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _device(kind, index=None):
    return kind if index is None else "%s:%d" % (kind, index)


# What weights_only allows: the names torch.load(weights_only=True) accepts, each ours.
_ALLOWED = {("collections", "OrderedDict"): collections.OrderedDict,
            ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
            ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
            ("torch.nn.parameter", "Parameter"): _parameter_class,
            ("torch", "Size"): _torch_size,
            ("torch", "device"): _device,
            ("builtins", "set"): set, ("builtins", "frozenset"): frozenset}


class RefusedGlobal(pickle.UnpicklingError):
    """A restricted load met a global it does not allow."""


def refused(where, module, name):
    return RefusedGlobal(
        "load: %s holds a pickled Python object: its pickle names the global %s.%s, which unpickling would "
        "import and call (it can run any code). By default load reads only tensors, containers, numbers, strings "
        "and OrderedDict (PyTorch's weights_only=True); pass weights_only=False to load it, and only for a file "
        "you trust." % (where, module, name))


class Unpickler(pickle.Unpickler):
    """torch.save's pickle; storages come from storage_for(key, dtype, location, numel)."""

    def __init__(self, f, storage_for, where, weights_only):
        super().__init__(f, encoding="utf-8")
        self.storage_for, self.where, self.weights_only = storage_for, where, weights_only

    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and (name in STORAGE_DTYPES or name in UNSUPPORTED_STORAGES):
            return StorageType(name)
        if module == "torch" and name in TORCH_DTYPES:
            return TORCH_DTYPES[name]
        if self.weights_only:
            raise refused(self.where, module, name)
        return super().find_class(*_ours(module, name))

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] in ("storage", b"storage")):
            raise pickle.UnpicklingError("load: %s: a persistent id %.80r that is not a storage" % (self.where, pid))
        _, stype, key, location, numel = pid[:5]
        if not isinstance(stype, StorageType):
            raise pickle.UnpicklingError("load: %s: storage %r has type %r, not a torch storage type"
                                         % (self.where, key, stype))
        if stype.dtype is None:
            raise pickle.UnpicklingError("load: %s: storage %r is a torch.%s (%s), a dtype fusionflow has no "
                                         "tensors of (it has float32/64/16, bfloat16, int64/32, uint8, bool)"
                                         % (self.where, key, stype.name, UNSUPPORTED_STORAGES.get(stype.name)))
        if not isinstance(numel, int) or isinstance(numel, bool) or numel < 0:
            raise pickle.UnpicklingError("load: %s: storage %r has element count %r" % (self.where, key, numel))
        return self.storage_for(str(key), stype.dtype, str(location), numel)


def _ours(module, name):
    """weights_only=False: a torch class the pickle names is fusionflow's of the same path
    where there is one (torch.nn.modules.linear.Linear -> fusionflow.nn.modules.linear.Linear)."""
    if module == "torch" or module.startswith("torch."):
        import importlib
        try:
            mod = importlib.import_module("fusionflow" + module[len("torch"):])
            if hasattr(mod, name):
                return mod.__name__, name
        except ImportError:
            pass
    return module, name


class ScanUnpickler(Unpickler):
    """The legacy format holds its storages' bytes after the pickle, so a first pass
    learns each storage's dtype: every global is inert here, so nothing runs."""

    def __init__(self, f, where):
        self.seen = {}
        super().__init__(f, self._record, where, True)

    def _record(self, key, dtype, location, numel):
        self.seen.setdefault(key, (dtype, location, numel))
        return _Inert()

    def find_class(self, module, name):
        if module == "torch" and (name in STORAGE_DTYPES or name in UNSUPPORTED_STORAGES):
            return StorageType(name)
        return _Inert


class _Inert:
    """Accepts whatever a pickle does to an object and does nothing."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Inert()

    def __setstate__(self, state):
        pass

    def append(self, x):
        pass

    def extend(self, xs):
        pass

    def __setitem__(self, k, v):
        pass


# ---- writing ------------------------------------------------------------------------
class StorageRef:
    """One storage in a checkpoint being written: its key, dtype and element count."""

    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel


class _Rebuilt:
    """A tensor's plain (non-Parameter) rebuild, inside a Parameter's."""

    def __init__(self, t):
        self.t = t


class Pickler(pickle._Pickler):
    """torch.save's pickle of obj; placement(t) gives (StorageRef, offset) for tensor t."""
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, f, placement):
        super().__init__(f, protocol=2)
        self.placement = placement

    def _save_torch_global(self, obj):
        self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)
    dispatch[TorchGlobal] = _save_torch_global

    def persistent_id(self, obj):
        if isinstance(obj, StorageRef):
            return ("storage", TorchGlobal("torch", _STORAGE_NAMES[obj.dtype.code]), obj.key, "cpu", obj.numel)
        return None

    def _tensor_args(self, t):
        ref, offset = self.placement(t)
        return (ref, offset, tuple(t.shape), tuple(t.stride()), bool(t.requires_grad), collections.OrderedDict())

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return REBUILD_PARAMETER, (_Rebuilt(obj), bool(obj.requires_grad), collections.OrderedDict())
        if isinstance(obj, _Rebuilt):
            args = self._tensor_args(obj.t)
            return REBUILD_V2, args[:4] + (False,) + args[5:]
        if isinstance(obj, Tensor):
            return REBUILD_V2, self._tensor_args(obj)
        from ._shape import Size
        if isinstance(obj, Size):  # as torch pickles its own: the torch.Size global and a tuple
            return TorchGlobal("torch", "Size"), (tuple(obj),)
        return NotImplemented

    def _save_dtype(self, obj):
        self._save_torch_global(TorchGlobal("torch", obj.name))
    dispatch[_dtype.DType] = _save_dtype


def numpy_scalars_to_python(obj, depth=0):
    """torch.load(weights_only=True) refuses numpy's scalar globals: numbers go as numbers."""
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if depth > 100:
        return obj
    if type(obj) in (dict, collections.OrderedDict):
        out = type(obj)((k, numpy_scalars_to_python(v, depth + 1)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    if type(obj) in (list, tuple):
        return type(obj)(numpy_scalars_to_python(v, depth + 1) for v in obj)
    return obj
