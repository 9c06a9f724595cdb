"""The einops backend for fusionflow tensors, so that einops' rearrange, reduce, repeat, pack,
unpack and einsum take them (einops finds a backend among AbstractBackend's subclasses whose
framework_name is an imported module). einops is no dependency: register() defines the
backend only once einops is imported, whether before or after fusionflow.

What remains: einops.layers.torch (Rearrange, Reduce, EinMix) subclasses the real
torch.nn.Module, so those layers are PyTorch modules, not fusionflow ones; without PyTorch
installed importing them fails with "No module named 'torch'"."""
import importlib.abc
import importlib.util
import sys

_REDUCTIONS = {"min": "amin", "max": "amax", "sum": "sum", "mean": "mean"}
_backend_class = None  # held here: einops sees subclasses through weak references only


def _define_backend():
    from einops._backends import AbstractBackend

    import fusionflow

    class FusionFlowBackend(AbstractBackend):
        framework_name = "fusionflow"

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, fusionflow.Tensor)

        def from_numpy(self, x):
            t = fusionflow.tensor(x)
            return t.requires_grad_(True) if t.dtype.is_floating_point else t

        def to_numpy(self, x):
            return x.detach().numpy()

        def arange(self, start, stop):
            return fusionflow.arange(start, stop, dtype=fusionflow.int64)

        def shape(self, x):
            return tuple(x.shape)

        def reduce(self, x, operation, reduced_axes):
            if operation in _REDUCTIONS:
                return getattr(x, _REDUCTIONS[operation])(dim=tuple(reduced_axes))
            if operation in ("any", "all", "prod"):  # one dim at a time, the highest first
                for axis in sorted(reduced_axes, reverse=True):
                    x = getattr(x, operation)(dim=axis)
                return x
            raise NotImplementedError("einops reduction %r is unknown to the fusionflow backend" % (operation,))

        def transpose(self, x, axes):
            return x.permute(*axes)

        def stack_on_zeroth_dimension(self, tensors):
            return fusionflow.stack(list(tensors))

        def add_axes(self, x, n_axes, pos2len):
            repeats = [-1] * n_axes
            for position, length in pos2len.items():
                x = x.unsqueeze(position)
                repeats[position] = length
            return x.expand(*repeats)

        def tile(self, x, repeats):
            return x.repeat(*repeats)

        def concat(self, tensors, axis):
            return fusionflow.cat(list(tensors), dim=axis)

        def add_axis(self, x, new_position):
            return x.unsqueeze(new_position)

        def is_float_type(self, x):
            return x.dtype.is_floating_point

        def layers(self):
            raise NotImplementedError("einops layers for fusionflow are not offered: einops.layers.torch subclasses "
                                      "torch.nn.Module; write rearrange(...) in a fusionflow Module's forward")

        def einsum(self, pattern, *x):
            return fusionflow.einsum(pattern, *x)

    return FusionFlowBackend


def register():
    """Defines the backend now if einops is imported, else as soon as it is."""
    global _backend_class
    if _backend_class is not None:
        return
    if "einops" in sys.modules:
        _backend_class = _define_backend()
    elif not any(isinstance(f, _AfterEinopsImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterEinopsImport())


class _AfterEinopsImport(importlib.abc.MetaPathFinder):
    """Finds einops with the other finders and has its loader define the backend once the
    package has run; then steps out of the import system."""

    def __init__(self):
        self._finding = False

    def find_spec(self, name, path=None, target=None):
        if name != "einops" or self._finding:
            return None
        self._finding = True  # the other finders, not this one again
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._finding = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run_package = spec.loader.exec_module

        def exec_module(module):
            run_package(module)
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            register()

        spec.loader.exec_module = exec_module
        return spec
