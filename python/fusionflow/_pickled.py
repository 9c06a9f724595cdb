"""The pickled form of fusionflow.save, for objects the tree format (_tree.py) cannot hold: a
whole Module, or any other Python object, as torch.save pickles them.

The file is still a safetensors file: every tensor the object reaches is one of its named
tensors ("pickle.0", "pickle.1", ...), and the pickle itself (protocol 4, base64) is the
metadata value under PICKLE_KEY. In the pickle a tensor is a persistent id
("tensor", name, is_parameter, requires_grad): the same tensor object reached twice is one id,
so tied weights stay tied. Classes are stored by reference (module and name), as pickle does:
loading needs them importable, and runs their code, which is why load refuses such a file
unless weights_only=False is passed (PyTorch 2.6's rule)."""
import base64
import io
import pickle
import struct

from ._tensor import Tensor

PICKLE_KEY = "fusionflow.pickle"


class _Pickler(pickle.Pickler):
    def __init__(self, buf):
        super().__init__(buf, protocol=4)
        self.names, self.tensors, self.ids = [], [], {}

    def persistent_id(self, obj):
        if not isinstance(obj, Tensor):
            return None
        pid = self.ids.get(id(obj))
        if pid is None:
            from .nn.parameter import Parameter
            name = "pickle.%d" % len(self.names)
            self.names.append(name)
            self.tensors.append(obj.detach())
            pid = ("tensor", name, isinstance(obj, Parameter), bool(obj.requires_grad))
            self.ids[id(obj)] = pid
        return pid


class _Unpickler(pickle.Unpickler):
    def __init__(self, buf, tensors):
        super().__init__(buf)
        self.tensors, self.made = tensors, {}

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "tensor" and pid[1] in self.tensors):
            raise pickle.UnpicklingError("load: the pickle names tensor %r, which the file does not hold" % (pid,))
        if pid[1] not in self.made:  # one object per id: ties survive
            _, name, is_param, requires_grad = pid
            t = self.tensors[name]
            if is_param:
                from .nn.parameter import Parameter
                t = Parameter(t, requires_grad)
            elif requires_grad:
                t = t.requires_grad_(True)
            self.made[name] = t
        return self.made[pid[1]]


def dump(obj):
    """(names, tensors, metadata value) of obj; TypeError naming what could not be pickled."""
    buf = io.BytesIO()
    p = _Pickler(buf)
    try:
        p.dump(obj)
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise TypeError("save: cannot pickle a %s (%s); fusionflow.save pickles objects other than tensors and "
                        "containers of them, so everything they reach must be picklable (no lambdas or local "
                        "classes); or save its state_dict()" % (type(obj).__name__, e)) from None
    return p.names, p.tensors, base64.b64encode(buf.getvalue()).decode("ascii")


# What a truncated or corrupt pickle raises while it is read (a class the pickle names
# that is gone is an ImportError or AttributeError); anything else comes from the code of
# the classes it names and passes through as it is.
_CORRUPT = (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            ImportError, RecursionError, struct.error)


def restore(text, tensors, where):
    """The object dump() wrote; `where` names the file in errors (load's MalformedFileError,
    an UnpicklingError, for a malformed pickle)."""
    from ._io import malformed
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError as e:
        raise malformed(where, PICKLE_KEY, "not base64 (%s)" % e) from None
    try:
        return _Unpickler(io.BytesIO(raw), tensors).load()
    except _CORRUPT as e:
        raise malformed(where, PICKLE_KEY, "the pickle cannot be read (%s: %s)" % (type(e).__name__, e)) from e


def refusal(where):
    return pickle.UnpicklingError(
        "load: %s holds a pickled Python object (fusionflow.save of a Module or another object), and "
        "unpickling it imports and runs code from the classes it names; weights_only=False must be passed "
        "to load it, and only for a file you trust (PyTorch >= 2.6 refuses it the same way). A state_dict "
        "saved instead loads without it." % where)
