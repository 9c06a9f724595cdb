"""Advanced indexing for Tensor.__getitem__/__setitem__: keys (ints, slices, None,
Ellipsis, bool and integer tensors, lists) turned into views, ff_index and ff_index_put."""
import builtins
import ctypes

import numpy as np

from ._dtype import int64, bool_
from ._lib import C, check_status
from ._tensor import Tensor, wrap, as_tensor, _scalar_ok
from ._grad_mode import is_grad_enabled
from ._factories import tensor, full, arange


# ---- indexing ---------------------------------------------------------------------------------
def _as_index(k, device):
    """An advanced index (Tensor, list, array) as a Tensor of int64 or bool on device."""
    if isinstance(k, Tensor):
        kt = k
    else:
        arr = np.asarray(k)
        if arr.dtype != bool:
            if arr.size and arr.dtype.kind not in "iu":
                raise IndexError("tensors used as indices must be integer or bool")
            arr = arr.astype(np.int64)
        kt = tensor(arr)
    if kt.dtype.is_floating_point:
        raise IndexError("tensors used as indices must be integer or bool")
    return kt if kt.device == device else kt.to(device)


def _index(t, key):
    """PyTorch's indexing split in two: the basic part (ints, slices, None, ...) as a view
    V of t, and the advanced part as one entry per dim of V (None for ':', an integer or
    bool tensor), or None when there is no advanced index."""
    if not isinstance(key, tuple):
        key = (key,)
    is_adv = [isinstance(k, (Tensor, list, np.ndarray)) for k in key]
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
                i = int(k) if not isinstance(k, Tensor) else k.__index__()
            except TypeError:
                raise TypeError("invalid index %r" % (k,)) from None
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


def _setitem(t, key, value):
    """t[key] = value. Without autograd it writes through the view; with autograd (grad
    mode on and t or value requiring grad) it computes t with the region replaced, out of
    place and differentiably, writes that into t's memory and points t at the new history
    (ff_assign), as PyTorch's in-place ops rebase theirs."""
    v = value if isinstance(value, Tensor) else None
    if is_grad_enabled() and (t.requires_grad or (v is not None and v.requires_grad)):
        # The flat positions of t[key], found by indexing a tensor of positions with the
        # same key: one index_put on t's flat view then writes exactly PyTorch's places.
        if not isinstance(value, Tensor):
            value = full((), value, dtype=t.dtype, device=t.device)
        pos = _getitem(arange(t.numel(), dtype=int64, device=t.device).reshape(t.shape), key)
        flat = t.reshape(-1)
        entries = _entries_array([pos])
        t._rebase_(wrap(C.ff_index_put(flat._ptr, 1, entries, value._ptr, False)).reshape(t.shape))
        return
    view, entries = _index(t, key)
    if not isinstance(value, Tensor):
        value = as_tensor(value) if not _scalar_ok(value) else full((), value, dtype=t.dtype, device=t.device)
    if entries is None:
        check_status(C.ff_copy_(view._ptr, value._ptr))
    else:
        check_status(C.ff_index_put_(view._ptr, len(entries), _entries_array(entries), value._ptr, False))
