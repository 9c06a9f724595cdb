"""fusionflow.nn.functional: stateless ops, as torch.nn.functional."""
from .._lib import C
from .._tensor import Tensor, as_tensor, wrap
from .. import _dtype

__all__ = ["linear", "relu", "tanh", "sigmoid", "gelu", "silu", "softplus", "softmax", "log_softmax", "dropout",
           "mse_loss", "l1_loss", "cross_entropy", "nll_loss", "one_hot", "embedding", "layer_norm", "pad"]


def linear(x, weight, bias=None):
    y = x @ weight.mT if weight.ndim == 2 else x @ weight
    return y + bias if bias is not None else y


def relu(x):
    return x.relu()


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def gelu(x, approximate="none"):
    return x.gelu(approximate)


def silu(x):
    return x.silu()


def softplus(x):
    return x.softplus()


def softmax(x, dim=-1):
    return x.softmax(dim)


def log_softmax(x, dim=-1):
    return x.log_softmax(dim)


def dropout(x, p=0.5, training=True, seed=None):
    if not training or p == 0:
        return x
    if seed is None:
        import random
        seed = random.getrandbits(63)
    return wrap(C.ff_dropout(x._ptr, float(p), bool(training), int(seed)))


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def mse_loss(input, target, reduction="mean"):
    target = as_tensor(target, dtype=input.dtype)
    if reduction == "mean":
        return wrap(C.ff_mse_loss(input._ptr, target._ptr))
    return _reduce((input - target).square(), reduction)


def l1_loss(input, target, reduction="mean"):
    return _reduce((input - as_tensor(target, dtype=input.dtype)).abs(), reduction)


def cross_entropy(input, target, reduction="mean"):
    target = as_tensor(target)
    if reduction == "mean":
        return wrap(C.ff_cross_entropy(input._ptr, target._ptr))
    return nll_loss(input.log_softmax(-1), target, reduction)


def nll_loss(input, target, reduction="mean"):
    target = as_tensor(target).to(_dtype.int64)
    picked = -input.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return _reduce(picked, reduction)


def one_hot(indices, num_classes):
    idx = as_tensor(indices)
    return wrap(C.ff_one_hot(idx._ptr, int(num_classes)))


def embedding(indices, weight):
    idx = as_tensor(indices)
    return wrap(C.ff_embedding(weight._ptr, idx._ptr))


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The C layer norm: statistics of f32 inputs in f64, so huge values do not overflow."""
    n = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    w = None if weight is None else as_tensor(weight)
    b = None if bias is None else as_tensor(bias)
    return wrap(C.ff_layer_norm(x._ptr, n, w._ptr if w is not None else None,
                                b._ptr if b is not None else None, float(eps)))


def pad(x, pad, value=0.0):
    """torch.nn.functional.pad order: pairs for the last dim first."""
    import ctypes
    nd = x.ndim
    if len(pad) % 2 or len(pad) // 2 > nd:
        raise ValueError("pad needs an even number of entries, at most 2 * ndim")
    pads = [0] * (2 * nd)
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        pads[2 * d], pads[2 * d + 1] = int(pad[2 * i]), int(pad[2 * i + 1])
    arr = (ctypes.c_int64 * len(pads))(*pads)
    return wrap(C.ff_pad(x._ptr, arr, float(value)))
