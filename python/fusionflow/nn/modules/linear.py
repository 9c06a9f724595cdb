"""Linear and Identity."""
import math

from ..._tensor import uniform
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module


class Linear(Module):
    """y = x @ weight.T + bias, weight [out, in]. PyTorch's default init: weight and bias
    from U(-1/sqrt(in), 1/sqrt(in)); seeded by manual_seed() or `seed`."""

    def __init__(self, in_features, out_features, bias=True, dtype=_dtype.float32, seed=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(uniform((out_features, in_features), -bound, bound, dtype=dtype, seed=seed))
        if bias:
            self.bias = Parameter(uniform((out_features,), -bound, bound, dtype=dtype,
                                          seed=None if seed is None else seed + 1))
        else:
            self.bias = None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class Identity(Module):
    def forward(self, x):
        return x
