"""fusionflow.autograd: functional gradients (torch.autograd.grad)."""
import ctypes

from ._interrupt import guarded_call
from ._lib import C, BackwardOpts, check_status
from ._tensor import Tensor, as_tensor, wrap

__all__ = ["grad", "backward", "Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable as since PyTorch 0.4: no wrapper, Variable(t) is a Tensor, a
    detached alias of t (its memory, no history) that requires grad if asked; every tensor
    is an instance of Variable. volatile is gone (use no_grad), as in torch."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            import warnings
            warnings.warn("volatile was removed and now has no effect. Use `with fusionflow.no_grad():` instead.",
                          UserWarning, stacklevel=2)
        if data is None:
            from ._factories import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError("Variable data has to be a tensor, but got %s" % type(data).__name__)
        return data.detach().requires_grad_(bool(requires_grad))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False):
    """d(outputs)/d(inputs) without touching .grad; returns a tuple (None where unused
    if allow_unused, else an error)."""
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if isinstance(outputs, (list, tuple)):
        if len(outputs) != 1:
            raise ValueError("grad supports one output tensor")
        outputs = outputs[0]
    if isinstance(grad_outputs, (list, tuple)):
        grad_outputs = grad_outputs[0]
    g = as_tensor(grad_outputs, dtype=outputs.dtype) if grad_outputs is not None else None
    n = len(inputs)
    arr = (ctypes.c_void_p * n)(*[t._ptr for t in inputs])
    out = (ctypes.c_void_p * n)()
    opts = BackwardOpts(bool(create_graph if retain_graph is None else retain_graph), bool(create_graph))
    check_status(guarded_call(C.ff_autograd_grad, outputs._ptr, g._ptr if g is not None else None, n, arr, out,
                                    ctypes.byref(opts)))
    res = tuple(wrap(out[i]) if out[i] else None for i in range(n))
    if not allow_unused and any(r is None for r in res):
        raise RuntimeError("one of the inputs was not used in the graph (pass allow_unused=True)")
    return res


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    tensors.backward(grad_tensors, retain_graph=retain_graph, create_graph=create_graph)
