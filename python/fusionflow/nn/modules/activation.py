"""Activation modules: torch 1.13's constructors, defaults and extra_repr, each calling its
nn.functional counterpart."""
from ..._tensor import full
from ... import _dtype
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "Tanh", "Sigmoid", "SiLU", "Softplus", "GELU", "Softmax", "LogSoftmax", "ReLU6", "Hardtanh",
           "Threshold", "LeakyReLU", "ELU", "CELU", "SELU", "GLU", "Hardshrink", "Softshrink", "Tanhshrink",
           "Softsign", "Hardswish", "Hardsigmoid", "Mish", "LogSigmoid", "PReLU", "RReLU", "Softmin", "Softmax2d"]


def _act(name, fn_name, doc):
    """A parameterless module whose forward is the Tensor method fn_name."""
    def forward(self, x):
        return getattr(x, fn_name)()
    cls = type(name, (Module,), {"forward": forward, "__doc__": doc})
    return cls


Tanh = _act("Tanh", "tanh", "tanh(x)")
Sigmoid = _act("Sigmoid", "sigmoid", "1 / (1 + exp(-x))")


def _inplace_str(inplace, lead=""):
    return lead + "inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation with only torch's `inplace` flag."""
    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class ReLU(_Inplace):
    _fn = staticmethod(F.relu)


class SiLU(_Inplace):
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class Hardswish(_Inplace):
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):
        return ""


class Hardsigmoid(Hardswish):
    _fn = staticmethod(F.hardsigmoid)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise AssertionError("Hardtanh: max_val (%g) must be greater than min_val (%g)"
                                 % (self.max_val, self.min_val))

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return "min_val={}, max_val={}{}".format(self.min_val, self.max_val, _inplace_str(self.inplace, ", "))


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_str(self.inplace)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return "threshold={}, value={}{}".format(self.threshold, self.value, _inplace_str(self.inplace, ", "))


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return "negative_slope={}{}".format(self.negative_slope, _inplace_str(self.inplace, ", "))


class ELU(Module):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return "alpha={}{}".format(self.alpha, _inplace_str(self.inplace, ", "))


class CELU(ELU):
    _fn = staticmethod(F.celu)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return "dim={}".format(self.dim)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return "approximate={}".format(repr(self.approximate))


class Hardshrink(Module):
    _fn = staticmethod(F.hardshrink)

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Softshrink(Hardshrink):
    _fn = staticmethod(F.softshrink)


class _Plain(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Tanhshrink(_Plain):
    _fn = staticmethod(F.tanhshrink)


class Softsign(_Plain):
    _fn = staticmethod(F.softsign)


class LogSigmoid(_Plain):
    _fn = staticmethod(F.logsigmoid)


class Softplus(Module):
    def __init__(self, beta=1, threshold=20):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return "beta={}, threshold={}".format(self.beta, self.threshold)


class PReLU(Module):
    """One learnable negative slope, or one per channel (num_parameters = C), init 0.25."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(full((num_parameters,), float(init), dtype=dtype or _dtype.float32, device=device))

    def reset_parameters(self):
        from .. import init
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return "num_parameters={}".format(self.num_parameters)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return "lower={}, upper={}{}".format(self.lower, self.upper, _inplace_str(self.inplace, ", "))


class Softmax(Module):
    _fn = staticmethod(F.softmax)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return type(self)._fn(x, self.dim)

    def extra_repr(self):
        return "dim={dim}".format(dim=self.dim)


class LogSoftmax(Softmax):
    _fn = staticmethod(F.log_softmax)


class Softmin(Softmax):
    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError("Softmax2d: expected input to be 3D or 4D, got %dD instead" % input.ndim)
        return input.softmax(-3)


# torch.nn.modules.activation holds MultiheadAttention, where PyTorch programs import it
# from; here it lives in multihead.py (it imports linear and module only: no cycle).
from .multihead import MultiheadAttention  # noqa: E402,F401
