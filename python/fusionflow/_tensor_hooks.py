"""Tensor.register_hook over the C engine's per-tensor hooks (ff_tensor_register_hook):
one ctypes callback serves every hook; each hook's `user` is a key into _hooks. A key
whose Python tensor is gone is dropped (weakref.finalize), and a call for an unknown key
passes the gradient through untouched."""
import itertools
import traceback
import weakref

from ._interrupt import callback_error
from ._lib import C, TensorHookFn, check_status, error
from ._tensor import Tensor, wrap

_hooks = {}  # key -> hook(grad) -> Tensor | None
_keys = itertools.count(1)  # 0 would reach the callback as None


def _on_grad(grad_ptr, replace, user):
    try:
        hook = _hooks.get(user)
        if hook is None:
            return 0
        r = hook(wrap(C.ff_detach(grad_ptr)))
        if r is not None:
            if not isinstance(r, Tensor):
                raise TypeError("register_hook: the hook returned %s, expected a Tensor or None" % type(r).__name__)
            replace[0] = C.ff_detach(r._ptr)
        return 0
    except BaseException as e:  # cannot cross the C frames: report it and fail backward
        if isinstance(e, Exception):
            traceback.print_exc()
        callback_error(e)  # a KeyboardInterrupt comes out of backward as itself (_interrupt)
        return 1


_HOOK = TensorHookFn(_on_grad)


class RemovableHandle:
    """What register_hook returns (torch.utils.hooks.RemovableHandle's remove())."""

    def __init__(self, tensor, hook_id, key):
        self._tensor, self.id, self._key = weakref.ref(tensor), hook_id, key

    def remove(self):
        t = self._tensor()
        if t is not None:
            check_status(C.ff_tensor_remove_hook(t._ptr, self.id))
        _hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register(tensor, hook):
    if not callable(hook):
        raise TypeError("register_hook: expected a callable, got %s" % type(hook).__name__)
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    key = next(_keys)
    _hooks[key] = hook
    hook_id = C.ff_tensor_register_hook(tensor._ptr, _HOOK, key)
    if hook_id < 0:
        _hooks.pop(key, None)
        raise error()
    weakref.finalize(tensor, _hooks.pop, key, None)
    handle = RemovableHandle(tensor, hook_id, key)
    tensor.__dict__.setdefault("_hook_handles", []).append(handle)  # for carry_hooks
    return handle


def carry_hooks(tensor):
    """Registers tensor's live hooks again on its C tensor, in their order: `t.data = v`
    puts a new C tensor under the same Python one, and its hooks must stay (as torch's)."""
    live = [h for h in tensor.__dict__.get("_hook_handles", ()) if h._key in _hooks]
    for h in live:
        h.id = C.ff_tensor_register_hook(tensor._ptr, _HOOK, h._key)
        if h.id < 0:
            raise error()
    tensor.__dict__["_hook_handles"] = live
