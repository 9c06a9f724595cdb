"""Identity, Linear and Bilinear, with torch 1.13's init (reset_parameters)."""
import math

from ..._tensor import uniform, zeros
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Takes and ignores any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias, weight [out, in]. PyTorch's default init: weight and bias
    from U(-1/sqrt(in), 1/sqrt(in)); seeded by manual_seed() or `seed`."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *, seed=None):
        super().__init__()  # torch's signature (device before dtype); seed is ours, by keyword
        dtype = dtype or _dtype.float32
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(uniform((out_features, in_features), -bound, bound, dtype=dtype, seed=seed,
                                        device=device))
        if bias:
            self.bias = Parameter(uniform((out_features,), -bound, bound, dtype=dtype,
                                          seed=None if seed is None else seed + 1, device=device))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """kaiming_uniform_(a=sqrt(5)) comes to U(-1/sqrt(in), 1/sqrt(in)), as the bias's."""
        from .. import init
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class Bilinear(Module):
    """y = x1^T W_k x2 + b_k; weight [out, in1, in2] and bias from U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        dtype = dtype or _dtype.float32
        self.weight = Parameter(zeros(out_features, in1_features, in2_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        from .. import init
        bound = 1.0 / math.sqrt(self.in1_features) if self.in1_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return "in1_features={}, in2_features={}, out_features={}, bias={}".format(
            self.in1_features, self.in2_features, self.out_features, self.bias is not None)
