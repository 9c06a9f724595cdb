"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (torch 1.13's
behaviour: children keyed "0", "1", ... or by name, so state_dict keys match torch's)."""
import collections
import collections.abc
import operator

from ..._tensor import Tensor
from ..parameter import Parameter
from .module import Module

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


def _abs_index(idx, n, kind):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError("index %d is out of range (%s of %d)" % (idx, kind, n))
    return idx % n


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for k, m in modules[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(collections.OrderedDict(list(self._modules.items())[i]))
        return list(self._modules.values())[_abs_index(i, len(self), "Sequential")]

    def __setitem__(self, i, m):
        key = list(self._modules)[_abs_index(i, len(self), "Sequential")]
        setattr(self, key, m)

    def __delitem__(self, i):
        keys = list(self._modules)
        for k in keys[i] if isinstance(i, slice) else [keys[_abs_index(i, len(keys), "Sequential")]]:
            delattr(self, k)
        # torch renumbers what is left so the keys stay "0".."n-1"
        items = list(self._modules.items())
        self._modules.clear()
        self._modules.update((str(j), m) for j, (_, m) in enumerate(items))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, but %s is given."
                             % type(other).__name__)
        out = Sequential()
        for m in list(self) + list(other):
            out.append(m)
        return out

    def __iadd__(self, other):
        for m in list(other):
            self.append(m)
        return self

    def pop(self, i):
        m = self[i]
        del self[i]
        return m

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def insert(self, index, m):
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError("Index out of range: %d" % index)
        index = index + n if index < 0 else index
        mods = list(self._modules.values())
        mods.insert(index, m)
        self._modules.clear()
        for j, x in enumerate(mods):
            self.add_module(str(j), x)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def extend(self, modules):
        if not isinstance(modules, collections.abc.Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got %s"
                            % type(modules).__name__)
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, m):
        mods = list(self._modules.values())
        mods.insert(index, m)
        self._modules.clear()
        for j, x in enumerate(mods):
            self.add_module(str(j), x)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self._modules.values())[i])
        return self._modules[str(_abs_index(i, len(self), "ModuleList"))]

    def __setitem__(self, i, m):
        setattr(self, str(_abs_index(i, len(self), "ModuleList")), m)

    def __delitem__(self, i):
        keys = list(self._modules)
        for k in keys[i] if isinstance(i, slice) else [str(_abs_index(i, len(keys), "ModuleList"))]:
            delattr(self, k)
        mods = list(self._modules.values())
        self._modules.clear()
        self._modules.update((str(j), m) for j, m in enumerate(mods))

    def pop(self, i):
        m = self[i]
        del self[i]
        return m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))


class ModuleDict(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, m):
        self.add_module(key, m)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        m = self[key]
        del self[key]
        return m

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        if isinstance(modules, (collections.OrderedDict, ModuleDict, collections.abc.Mapping)):
            for k, m in modules.items():
                self[k] = m
            return
        for j, kv in enumerate(modules):
            if len(kv) != 2:
                raise ValueError("ModuleDict update sequence element #%d has length %d; 2 is required"
                                 % (j, len(kv)))
            self[kv[0]] = kv[1]


def _param_line(k, p):
    if isinstance(p, Tensor):
        size = "x".join(str(int(s)) for s in p.shape)
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return "  (%s): %s containing: [%s of size %s]" % (k, kind, _type_name(p), size)
    return "  (%s): Object of type: %s" % (k, type(p).__name__)


def _type_name(p):
    # torch prints its legacy type name (torch.FloatTensor); ours names the fusionflow dtype
    return "fusionflow.%s" % p.dtype.name


def _as_param(value):
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """Parameters kept as attributes "0", "1", ... (torch's state_dict keys); plain tensors
    appended become Parameters, as torch's."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return type(self)(list(self)[i])
        return getattr(self, str(_abs_index(i, len(self), "ParameterList")))

    def __setitem__(self, i, value):
        setattr(self, str(_abs_index(i, len(self), "ParameterList")), _as_param(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def append(self, value):
        n = self._size
        self._size += 1
        setattr(self, str(n), _as_param(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, key, _as_param(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(collections.OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def popitem(self):
        k = list(self._keys)[-1]
        return k, self.pop(k)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        if isinstance(parameters, (collections.abc.Mapping, ParameterDict)):
            items = parameters.items()
            if not isinstance(parameters, (collections.OrderedDict, ParameterDict)):
                items = sorted(items)  # torch sorts a plain dict's keys
            for k, v in items:
                self[k] = v
            return
        for j, kv in enumerate(parameters):
            if len(kv) != 2:
                raise ValueError("ParameterDict update sequence element #%d has length %d; 2 is required"
                                 % (j, len(kv)))
            self[kv[0]] = kv[1]

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")
