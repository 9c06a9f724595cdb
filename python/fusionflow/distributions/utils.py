"""Helpers shared by the distributions: broadcasting parameters, probs <-> logits, the
standard draws every sampler starts from (all from fusionflow's seeded generator)."""
import math
from functools import update_wrapper

import numpy as np

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property",
           "tiny", "eps", "as_size"]


def _ff():
    import fusionflow
    return fusionflow


def as_size(shape):
    """A shape as fusionflow returns them (fusionflow.Size where it exists, else a tuple)."""
    return getattr(_ff(), "Size", tuple)(tuple(int(s) for s in shape))


def _float_dtype(values):
    ff = _ff()
    for v in values:
        if isinstance(v, ff.Tensor) and v.dtype in (ff.float64, ff.float32, ff.float16, ff.bfloat16):
            return v.dtype, v.device
    for v in values:
        if isinstance(v, ff.Tensor):
            return ff.float32, v.device
    return ff.float32, None


def broadcast_all(*values):
    """The arguments (tensors or Python numbers) as tensors of one broadcast shape; numbers take
    the dtype and device of the first floating tensor, as in torch.distributions."""
    ff = _ff()
    dtype, device = _float_dtype(values)
    for v in values:
        if not isinstance(v, (ff.Tensor, int, float)):
            raise ValueError("Input arguments must all be instances of numbers.Number or Tensor, "
                             "got %s" % type(v).__name__)
    ts = [v if isinstance(v, ff.Tensor) else ff.tensor(float(v), dtype=dtype, device=device) for v in values]
    shape = np.broadcast_shapes(*[tuple(t.shape) for t in ts])
    return tuple(t if tuple(t.shape) == shape else t.expand(*shape) for t in ts)


def finfo(dtype):
    ff = _ff()
    return np.finfo(np.float64 if dtype == ff.float64 else np.float16 if dtype == ff.float16 else np.float32)


def tiny(dtype):
    return float(finfo(dtype).tiny)


def eps(dtype):
    return float(finfo(dtype).eps)


def clamp_probs(probs):
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(-1)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def sum_rightmost(value, dim):
    """value summed over its `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:value.dim() - dim], -1).sum(-1)


def standard_uniform(shape, dtype, device):
    ff = _ff()
    return ff.rand(*shape, dtype=dtype, device=device) if shape else ff.rand(1, dtype=dtype, device=device).reshape(())


def standard_normal(shape, dtype, device):
    ff = _ff()
    return ff.randn(*shape, dtype=dtype, device=device) if shape else ff.randn(1, dtype=dtype, device=device).reshape(())


def host_generator():
    """NumPy's stream inside fusionflow's default generator: fusionflow.manual_seed seeds it,
    so the draws that need a host sampler (gamma, poisson) repeat under a seed."""
    return _ff().default_generator._np


LOG_2PI = math.log(2 * math.pi)


class lazy_property:
    """A property computed once per instance on first access (probs from logits, ...)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def xlogy(x, y):
    """x * log(y), 0 where x == y == 0, with d/dx = log(y) everywhere as torch.xlogy's.
    (fusionflow.xlogy's gradient is 0 where x == 0, which would drop Dirichlet's and Gamma's
    d/dconcentration at concentration 1.)"""
    import fusionflow as ff
    one = ff.ones((), dtype=y.dtype, device=y.device)
    return x * ff.where((x == 0) & (y == 0), one, y).log()
