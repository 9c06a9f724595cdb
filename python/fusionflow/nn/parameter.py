"""nn.Parameter: a Tensor a Module registers as trainable (torch.nn.parameter)."""
from .._lib import C
from .._tensor import Tensor, wrap, tensor, zeros


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable; requires grad by default.

    Parameter(t) shares t's memory (a detached alias), as torch.nn.Parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = zeros(0)
        if not isinstance(data, Tensor):
            data = tensor(data)
        p = wrap(C.ff_detach(data._ptr), cls)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        """A Parameter again (copy.deepcopy(model) keeps parameters Parameters; ties are kept
        through memo), with its own memory and requires_grad."""
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = p
        return p
