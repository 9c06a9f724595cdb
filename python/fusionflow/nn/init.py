"""fusionflow.nn.init: in-place initializers (under no_grad), as torch.nn.init."""
import math

from .._tensor import no_grad, rand, randn

__all__ = ["uniform_", "normal_", "zeros_", "ones_", "constant_", "kaiming_uniform_", "xavier_uniform_"]


def uniform_(t, a=0.0, b=1.0):
    with no_grad():
        return t.copy_(rand(*t.shape, dtype=t.dtype) * (b - a) + a)


def normal_(t, mean=0.0, std=1.0):
    with no_grad():
        return t.copy_(randn(*t.shape, dtype=t.dtype) * std + mean)


def constant_(t, value):
    with no_grad():
        return t.fill_(value)


def zeros_(t):
    return constant_(t, 0.0)


def ones_(t):
    return constant_(t, 1.0)


def _fans(t):
    fan_in = t.shape[1] if t.ndim > 1 else t.shape[0]
    fan_out = t.shape[0]
    rf = 1
    for s in t.shape[2:]:
        rf *= s
    return fan_in * rf, fan_out * rf


def kaiming_uniform_(t, a=0.0):
    fan_in, _ = _fans(t)
    bound = math.sqrt(6.0 / ((1 + a * a) * fan_in))
    return uniform_(t, -bound, bound)


def xavier_uniform_(t, gain=1.0):
    fan_in, fan_out = _fans(t)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(t, -bound, bound)
