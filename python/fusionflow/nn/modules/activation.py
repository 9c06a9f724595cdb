"""Activation modules."""
from .module import Module


def _act(name, fn_name, doc):
    def forward(self, x):
        return getattr(x, fn_name)()
    cls = type(name, (Module,), {"forward": forward, "__doc__": doc})
    return cls


ReLU = _act("ReLU", "relu", "max(x, 0)")
Tanh = _act("Tanh", "tanh", "tanh(x)")
Sigmoid = _act("Sigmoid", "sigmoid", "1 / (1 + exp(-x))")
SiLU = _act("SiLU", "silu", "x * sigmoid(x)")
Softplus = _act("Softplus", "softplus", "log(1 + exp(x))")


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return x.gelu(self.approximate)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.softmax(self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return x.log_softmax(self.dim)
