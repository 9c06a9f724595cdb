"""Activation functions, composed from the core's elementwise ops with torch 1.13's
definitions. Branches are taken with where() on inputs that are safe on both sides (exp of a
clamped value), so the branch not taken cannot put inf * 0 = nan into the gradient."""
from ..._lib import C
from ..._tensor import as_tensor, rand, where, wrap

__all__ = ["relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_",
           "hardswish", "hardsigmoid", "hardtanh", "hardtanh_", "hardshrink", "softshrink", "tanhshrink",
           "softsign", "mish", "prelu", "rrelu", "rrelu_", "glu", "logsigmoid", "softmin", "threshold",
           "threshold_"]


def _act(input, inplace, f):
    """f(input), or with inplace the in-place form: input takes the values (what torch's
    F.relu_ etc. leave in it). With autograd history, f runs on a clone, so what its nodes
    save is never the memory then written, and input takes the result's history (the C
    in-place mechanism, ff_inplace_result_: nn.ReLU(inplace=True) inside a network that
    trains, as in torch; on a view, its base's history)."""
    if not inplace:
        return f(input)
    if input._needs_history():
        return input._rebase_(f(input.clone()))
    return input.copy_(f(input))


def relu_(input):
    return _act(input, True, lambda x: x.relu())


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("hardtanh: min_val (%g) cannot be greater than max_val (%g)" % (min_val, max_val))
    return _act(input, inplace, lambda x: x.clamp(min_val, max_val))


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _act(input, inplace, lambda x: wrap(C.ff_leaky_relu(x._ptr, float(negative_slope))))


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def _neg_expm1(x, scale=1.0):
    """expm1(x * scale) where x <= 0, 0 elsewhere (no overflow; slope kept at x = 0, which
    torch gives to this branch)."""
    return (where(x > 0, x * 0.0, x) * scale).expm1()


def elu(input, alpha=1.0, inplace=False):
    return _act(input, inplace, lambda x: where(x > 0, x, _neg_expm1(x) * alpha))


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    return _act(input, inplace, lambda x: where(x > 0, x, _neg_expm1(x) * _SELU_ALPHA) * _SELU_SCALE)


def selu_(input):
    return selu(input, True)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise ValueError("ZeroDivisionError in celu: alpha cannot be 0")
    return _act(input, inplace, lambda x: where(x > 0, x, _neg_expm1(x, 1.0 / alpha) * alpha))


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


def hardsigmoid(input, inplace=False):
    return _act(input, inplace, lambda x: (x + 3.0).clamp(0.0, 6.0) / 6.0)


def hardswish(input, inplace=False):
    return _act(input, inplace, lambda x: x * (x + 3.0).clamp(0.0, 6.0) / 6.0)


def hardshrink(input, lambd=0.5):
    return where(input.abs() > lambd, input, input * 0.0)


def softshrink(input, lambd=0.5):
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, input * 0.0))


def tanhshrink(input):
    return input - input.tanh()


def softsign(input):
    return input / (input.abs() + 1.0)


def _softplus(x):
    """log(1 + exp(x)) without overflow: x + log1p(exp(-x)) above 0, log1p(exp(x)) below,
    each branch fed only its own side (no inf in the other's gradient; slope 1/2 at 0)."""
    pos = x > 0
    xp = where(pos, x, x * 0.0)
    xn = where(pos, x * 0.0, x)
    return where(pos, xp + (-xp).exp().log1p(), xn.exp().log1p())


def softplus(input, beta=1.0, threshold=20.0):
    bx = input * beta
    return where(bx > threshold, input, _softplus(bx.clamp(max=threshold)) / beta)


def mish(input, inplace=False):
    return _act(input, inplace, lambda x: x * _softplus(x).tanh())


def logsigmoid(input):
    return -_softplus(-input)


def prelu(input, weight):
    """weight: one slope, or one per channel (dim 1 of an input of 2 or more dims)."""
    w = as_tensor(weight)
    if w.numel() != 1:
        if input.ndim < 2 or input.shape[1] != w.numel():
            raise ValueError("prelu: %d slopes for an input of shape %s (expected 1 or the channel count, dim 1)"
                             % (w.numel(), tuple(input.shape)))
        w = w.reshape((1, w.numel()) + (1,) * (input.ndim - 2))
    elif input.ndim != 0:
        w = w.reshape(())
    return where(input > 0, input, input * w)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Eval: leaky with slope (lower + upper) / 2. Training: each negative element gets its
    own slope from U(lower, upper), as torch (a different random stream than torch's)."""
    if training:
        slope = rand(*input.shape, dtype=input.dtype, device=input.device) * (upper - lower) + lower
        return _act(input, inplace, lambda x: where(x >= 0, x, x * slope))
    return leaky_relu(input, (lower + upper) / 2.0, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


def glu(input, dim=-1):
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError("Halving dimension must be even, but dimension %d is size %d" % (dim % input.ndim, n))
    half = n // 2  # narrow, not split: split refuses a 0-size piece of an empty dim
    a, b = input.narrow(dim, 0, half), input.narrow(dim, half, half)
    return a * b.sigmoid()


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1  # torch's legacy implicit dim


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return (-x).softmax(_softmax_dim(x.ndim) if dim is None else dim)


def threshold(input, threshold, value, inplace=False):
    return _act(input, inplace, lambda x: where(x > threshold, x, x * 0.0 + value))


def threshold_(input, threshold_value, value):
    return threshold(input, threshold_value, value, True)


