"""fusionflow.nn.init: in-place initializers (under no_grad), as torch.nn.init (1.13): the
same gains, fans and distributions, drawn from fusionflow's generator (manual_seed)."""
import math

import numpy as np

from .._tensor import as_tensor, no_grad, rand, randn

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_"]


def calculate_gain(nonlinearity, param=None):
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError("negative_slope {} not a valid number".format(param))
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError("Unsupported nonlinearity {}".format(nonlinearity))


def _fill(t, values):
    with no_grad():
        return t.copy_(values.to(t.dtype).to(t.device))


def uniform_(t, a=0.0, b=1.0):
    return _fill(t, rand(*t.shape) * (b - a) + a)


def normal_(t, mean=0.0, std=1.0):
    return _fill(t, randn(*t.shape) * std + mean)


def trunc_normal_(t, mean=0.0, std=1.0, a=-2.0, b=2.0):
    """N(mean, std) cut to [a, b], by the inverse CDF of a uniform draw, as torch."""
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = rand(*t.shape) * (2 * hi - 2 * lo) + (2 * lo - 1)
    return _fill(t, (u.erfinv() * (std * math.sqrt(2.0)) + mean).clamp(a, b))


def constant_(t, value):
    with no_grad():
        return t.fill_(value)


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


def eye_(t):
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(t, as_tensor(np.eye(*t.shape, dtype=np.float32)))


def dirac_(t, groups=1):
    """The identity of a conv weight [out, in, k...]: centre taps, per group."""
    if t.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(t.shape)
    if shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_g = shape[0] // groups
    w = np.zeros(shape, np.float32)
    for g in range(groups):
        for d in range(min(out_g, shape[1])):
            w[(g * out_g + d, d) + tuple(k // 2 for k in shape[2:])] = 1.0
    return _fill(t, as_tensor(w))


def _calculate_fan_in_and_fan_out(t):
    if t.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    rf = 1
    for s in t.shape[2:]:
        rf *= s
    return t.shape[1] * rf, t.shape[0] * rf


def xavier_uniform_(t, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def _kaiming_std(t, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError("Mode {} not supported, please use one of fan_in, fan_out".format(mode))
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    std = _kaiming_std(t, a, mode, nonlinearity)
    if std is None:  # a zero-element tensor: torch warns and leaves it
        return t
    bound = math.sqrt(3.0) * std
    return uniform_(t, -bound, bound)


def kaiming_normal_(t, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    std = _kaiming_std(t, a, mode, nonlinearity)
    if std is None:
        return t
    return normal_(t, 0.0, std)


def orthogonal_(t, gain=1):
    """A (semi-)orthogonal matrix from the QR of a normal draw, signs fixed by diag(R)."""
    if t.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if t.numel() == 0:
        return t
    rows = t.shape[0]
    cols = t.numel() // rows
    flat = randn(rows, cols).numpy().astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(t, as_tensor((q * gain).astype(np.float32).reshape(tuple(t.shape))))


def sparse_(t, sparsity, std=0.01):
    """N(0, std) with ceil(sparsity * rows) entries of each column set to zero."""
    if t.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = t.shape
    w = randn(rows, cols).numpy() * std
    zeros = int(math.ceil(sparsity * rows))
    order = rand(rows, cols).numpy().argsort(axis=0)  # a random permutation per column
    for c in range(cols):
        w[order[:zeros, c], c] = 0.0
    return _fill(t, as_tensor(w.astype(np.float32)))
