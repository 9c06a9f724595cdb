"""Module full backward hooks (register_full_backward_hook), torch 1.13's semantics, on the
C engine's hooked views (ff_hooked_view): each tensor input that requires grad and each
output is passed through one; the output views collect grad_output, and when the last input
view has its gradient the hooks run with (grad_input, grad_output). If no input requires
grad, the hooks run once every output's gradient has arrived, with grad_input all None.

One ctypes callback serves every view; each view's `user` is a key into _slots, so a view
whose forward call was dropped from _slots (never backpropagated, evicted) passes its
gradient through untouched instead of reaching freed Python state."""
import collections
import itertools
import traceback

from ..._interrupt import callback_error
from ..._lib import C, TensorHookFn
from ..._tensor import Tensor, wrap

_slots = collections.OrderedDict()  # key -> (call, "in" | "out", position)
_keys = itertools.count(1)  # 0 would reach the callback as None
_MAX_SLOTS = 1 << 16


class _Call:
    """One forward call's pending gradients."""

    def __init__(self, module, n_args):
        self.module = module
        self.grad_in = [None] * n_args
        self.in_waiting = set()
        self.grad_out = []
        self.out_waiting = set()
        self.keys = []

    def fire(self):
        for k in self.keys:
            _slots.pop(k, None)
        grad_input, grad_output = tuple(self.grad_in), tuple(self.grad_out)
        for hook in list(self.module._backward_hooks.values()):
            r = hook(self.module, grad_input, grad_output)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_input):
                    raise RuntimeError("backward hook returned an invalid number of grad_input, got %d, but "
                                       "expected %d" % (len(r), len(grad_input)))
                grad_input = r
        return grad_input


def _view(t, call, kind, pos):
    key = next(_keys)
    _slots[key] = (call, kind, pos)
    call.keys.append(key)
    while len(_slots) > _MAX_SLOTS:
        _slots.popitem(last=False)
    return wrap(C.ff_hooked_view(t._ptr, _HOOK, key))


def _on_grad(grad_ptr, replace, user):
    try:
        slot = _slots.get(user)
        if slot is None:
            return 0
        call, kind, pos = slot
        grad = wrap(C.ff_detach(grad_ptr))
        if kind == "out":
            call.grad_out[pos] = grad
            call.out_waiting.discard(pos)
            if not call.in_waiting and not call.out_waiting and not any(g is not None for g in call.grad_in):
                call.fire()  # no input needs a gradient: torch runs the hooks at the outputs
            return 0
        call.grad_in[pos] = grad
        call.in_waiting.discard(pos)
        if call.in_waiting:
            return 0
        before = list(call.grad_in)
        new = call.fire()
        for i, (a, b) in enumerate(zip(before, new)):
            if i != pos and b is not a:
                raise RuntimeError("%s: a full backward hook replaced the gradient of input %d, which had already "
                                   "gone on; with several tensor inputs only the last one's can be replaced"
                                   % (call.module._get_name(), i))
        if new[pos] is not grad and new[pos] is not None:
            replace[0] = C.ff_detach(new[pos]._ptr)
        return 0
    except BaseException as e:  # cannot cross the C frames: report it and fail backward
        if isinstance(e, Exception):
            traceback.print_exc()
        callback_error(e)  # a KeyboardInterrupt comes out of backward as itself (_interrupt)
        return 1


_HOOK = TensorHookFn(_on_grad)


def setup_inputs(module, args):
    call = _Call(module, len(args))
    out = list(args)
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and a.requires_grad:
            call.in_waiting.add(i)
            out[i] = _view(a, call, "in", i)
    return call, tuple(out)


def setup_outputs(call, result):
    single = isinstance(result, Tensor)
    outs = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
    if outs is None:
        return result
    call.grad_out = [None] * len(outs)
    for j, o in enumerate(outs):
        if isinstance(o, Tensor) and o.requires_grad:
            call.out_waiting.add(j)
            outs[j] = _view(o, call, "out", j)
    if single:
        return outs[0]
    return type(result)(outs) if isinstance(result, list) else tuple(outs)
