"""Advanced indexing for Tensor.__getitem__/__setitem__: keys (ints, slices, None,
Ellipsis, bool and integer tensors, lists) turned into views, ff_index and ff_index_put."""
import builtins
import ctypes
import operator

import numpy as np

from ._args import int_arg, named
from ._dtype import int64, bool_
from ._lib import C, check_status, error
from ._tensor import Tensor, wrap, as_tensor, _scalar_ok, _operand, _number_tensor
from ._grad_mode import is_grad_enabled
from ._factories import tensor, full, arange


# ---- indexing ---------------------------------------------------------------------------------
def _as_index(k, device):
    """An advanced index (Tensor, list, range, array) as a Tensor of int64 or bool on device."""
    if isinstance(k, Tensor):
        kt = k
    else:
        arr = np.asarray(k)
        if arr.dtype != bool:
            if arr.size and arr.dtype.kind not in "iu":
                raise IndexError("tensors used as indices must be integer or bool")
            arr = arr.astype(np.int64)
        kt = tensor(arr, device=device)  # straight to the device, not through the default backend
    if kt.dtype.is_floating_point:
        raise IndexError("tensors used as indices must be integer or bool")
    return kt if kt.device == device else kt.to(device)


def _index(t, key):
    """PyTorch's indexing split in two: the basic part (ints, slices, None, ...) as a view
    V of t, and the advanced part as one entry per dim of V (None for ':', an integer or
    bool tensor), or None when there is no advanced index."""
    if not isinstance(key, tuple):
        key = (key,)
    is_adv = [isinstance(k, (Tensor, list, range, np.ndarray)) for k in key]
    nspec = 0
    for k, adv in zip(key, is_adv):
        if k is None or k is Ellipsis:
            continue
        if adv:
            a = k if isinstance(k, Tensor) else np.asarray(k)
            nspec += a.ndim if (a.dtype is bool_ if isinstance(k, Tensor) else a.dtype == bool) else 1
        else:
            nspec += 1
    if builtins.sum(1 for k in key if k is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if nspec > t.ndim:
        raise IndexError("too many indices for tensor of dimension %d" % t.ndim)
    out = t
    axis = 0
    entries = []
    for k, adv in zip(key, is_adv):
        if k is Ellipsis:
            n = t.ndim - nspec
            entries += [None] * n
            axis += n
        elif k is None:
            out = wrap(C.ff_unsqueeze(out._ptr, axis))
            entries.append(None)
            axis += 1
        elif isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            if step <= 0:
                raise ValueError("slice step must be positive (got %d)" % step)
            n = out.shape[axis]
            start, stop, _ = slice(k.start, k.stop, step).indices(n)
            if not (k.start is None and k.stop is None and step == 1):
                out = wrap(C.ff_slice(out._ptr, axis, start, builtins.max(stop, start), step))
            entries.append(None)
            axis += 1
        elif adv:
            kt = _as_index(k, t.device)
            entries.append(kt)
            span = kt.ndim if kt.dtype is bool_ else 1
            entries += [_SPANNED] * (span - 1)
            axis += span
        else:
            try:
                i = operator.index(k)  # 1.5 is no index (int() would truncate it), nor is '0'
            except TypeError:
                raise IndexError("index %r: only integers, slices (`:`), ellipsis (`...`), None and integer or "
                                 "bool tensors are valid indices" % (k,)) from None
            n = out.shape[axis]
            if i < -n or i >= n:
                raise IndexError("index %d is out of bounds for dimension %d with size %d" % (i, axis, n))
            out = wrap(C.ff_select(out._ptr, axis, i % n if n else i))
    entries = [e for e in entries if e is not _SPANNED]
    while entries and entries[-1] is None:
        entries.pop()
    return out, (entries or None)


_SPANNED = object()  # the dims a bool mask covers after its first


def _entries_array(entries):
    """ctypes array of ff_tensor * (NULL for None) and the tensors to keep alive."""
    arr = (ctypes.c_void_p * len(entries))(*[e._ptr if e is not None else None for e in entries])
    return arr


def _getitem(t, key):
    view, entries = _index(t, key)
    if entries is None:
        return view
    return wrap(C.ff_index(view._ptr, len(entries), _entries_array(entries)))


def _without_leading_ones(value):
    """value with its leading size-1 dims dropped (a view, so gradients still reach it), as
    PyTorch's indexed assignment drops them: a[1] = ones(1, 4) writes row 1 of a (3, 4)
    tensor, and broadcasting puts back whatever dims the target has."""
    if not isinstance(value, Tensor):
        return value
    shape = value.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return value.reshape(shape[k:]) if k else value


def _setitem(t, key, value):
    """t[key] = value: a write through the view t[key] (index_put for index tensors and
    masks). Under autograd the C side records it as every in-place op: the view's base
    gets a copy_slices node, as PyTorch's CopySlices (autograd/view_history.c)."""
    value = _without_leading_ones(value)
    view, entries = _index(t, key)
    if not isinstance(value, Tensor):
        if isinstance(value, (complex, np.complexfloating)):  # t[i] = 1j: a complex 0-d value on t's device
            from ._complex import complex_operand
            value = complex_operand(value, t)
        else:
            value = as_tensor(value) if not _scalar_ok(value) else full((), value, dtype=t.dtype, device=t.device)
    if entries is None:
        check_status(C.ff_copy_(view._ptr, value._ptr))
    else:
        check_status(C.ff_index_put_(view._ptr, len(entries), _entries_array(entries), value._ptr, False))


# ---- indexed writes: Tensor methods (PyTorch's names; the _ forms write in place, with autograd) ----
def _rebase_(self, result):
    """self takes result (computed out of place from self) as that op's in-place form
    would: its values, and under autograd its history (ff_inplace_result_). result is
    spent: nothing may use it afterwards."""
    check_status(C.ff_inplace_result_(self._ptr, result._ptr))
    return self

def _needs_history(self, *others):
    return is_grad_enabled() and (self.requires_grad or builtins.any(
        isinstance(o, Tensor) and o.requires_grad for o in others))

def _same_dtype(fn, self, values):
    """PyTorch's index_put takes a tensor of values only in the destination's dtype (a
    number is converted): no silent truncation of floats written into an int tensor."""
    if isinstance(values, Tensor) and values.dtype is not self.dtype:
        raise RuntimeError("%s(): Index put requires the source and destination dtypes match, got %s for the "
                           "destination and %s for the source" % (fn, self.dtype.name, values.dtype.name))

def index_put(self, indices, values, accumulate=False):
    _same_dtype("index_put", self, values)
    entries = [None if i is None else _as_index(i, self.device) for i in indices]
    v = _operand(values, self) if not isinstance(values, Tensor) else values
    return wrap(C.ff_index_put(self._ptr, len(entries), _entries_array(entries), v._ptr, bool(accumulate)))

def index_put_(self, indices, values, accumulate=False):
    _same_dtype("index_put_", self, values)
    if self._needs_history(values):
        return self._rebase_(self.index_put(indices, values, accumulate))
    entries = [None if i is None else _as_index(i, self.device) for i in indices]
    v = _operand(values, self) if not isinstance(values, Tensor) else values
    check_status(C.ff_index_put_(self._ptr, len(entries), _entries_array(entries), v._ptr, bool(accumulate)))
    return self

def index_add(self, dim, index, source, alpha=1):
    dim = int_arg("index_add", "dim", dim)
    return wrap(C.ff_index_add(self._ptr, dim, _as_index(index, self.device)._ptr, source._ptr, float(alpha)))

def index_add_(self, dim, index, source, alpha=1):
    if self._needs_history(source):
        return self._rebase_(self.index_add(dim, index, source, alpha))
    dim = int_arg("index_add_", "dim", dim)
    check_status(C.ff_index_add_(self._ptr, dim, _as_index(index, self.device)._ptr, source._ptr, float(alpha)))
    return self

def index_copy(self, dim, index, source):
    dim = int_arg("index_copy", "dim", dim)
    return wrap(C.ff_index_copy(self._ptr, dim, _as_index(index, self.device)._ptr, source._ptr))

def index_copy_(self, dim, index, source):
    if self._needs_history(source):
        return self._rebase_(self.index_copy(dim, index, source))
    dim = int_arg("index_copy_", "dim", dim)
    check_status(C.ff_index_copy_(self._ptr, dim, _as_index(index, self.device)._ptr, source._ptr))
    return self

def masked_fill(self, mask, value):
    v = value if isinstance(value, Tensor) else _number_tensor(value, self)
    return wrap(C.ff_masked_fill(self._ptr, as_tensor(mask)._ptr, v._ptr))

def masked_fill_(self, mask, value):
    if self._needs_history(value):
        return self._rebase_(self.masked_fill(mask, value))
    v = value if isinstance(value, Tensor) else _number_tensor(value, self)
    check_status(C.ff_masked_fill_(self._ptr, as_tensor(mask)._ptr, v._ptr))
    return self

def masked_scatter(self, mask, source):
    return wrap(C.ff_masked_scatter(self._ptr, as_tensor(mask)._ptr, source._ptr))

def masked_scatter_(self, mask, source):
    if self._needs_history(source):
        return self._rebase_(self.masked_scatter(mask, source))
    check_status(C.ff_masked_scatter_(self._ptr, as_tensor(mask)._ptr, source._ptr))
    return self

def index_select(self, dim, index):
    if isinstance(index, Tensor) and index.dtype.is_floating_point:  # PyTorch's rule: no rounding of indices
        raise IndexError("index_select(): expected an int32 or int64 index, got %s" % index.dtype.name)
    idx = as_tensor(index, dtype=int64)
    return wrap(C.ff_index_select(self._ptr, int_arg("index_select", "dim", dim), idx._ptr))


Tensor.__getitem__ = _getitem
Tensor.__setitem__ = _setitem
for _f in (_rebase_, _needs_history):
    setattr(Tensor, _f.__name__, _f)
for _f in (index_put, index_put_, index_add, index_add_, index_copy, index_copy_, masked_fill, masked_fill_,
           masked_scatter, masked_scatter_, index_select):
    setattr(Tensor, _f.__name__, named(_f))  # errors name the method (_args.named)
del _f
