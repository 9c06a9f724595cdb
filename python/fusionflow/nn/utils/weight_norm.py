"""weight_norm / remove_weight_norm, as torch.nn.utils (1.13): weight = g * v / ||v||, the
norm over every dim but dim (over all of v for dim=None), recomputed before each forward."""
from .. import Parameter
from . import _pre_forward


def _norm_except_dim(v, dim):
    if dim == -1:
        return v.norm()
    return v.norm(2, [d for d in range(v.ndim) if d != dim], keepdim=True)


def _compute(module, name, dim):
    g, v = getattr(module, name + "_g"), getattr(module, name + "_v")
    return v * (g / _norm_except_dim(v, dim))


def weight_norm(module, name="weight", dim=0):
    if _pre_forward.has(module, ("weight_norm", name)):
        raise RuntimeError("Cannot register two weight_norm hooks on the same parameter %s" % name)
    if name not in module._parameters:
        raise AttributeError("weight_norm: %s has no parameter %r" % (type(module).__name__, name))
    if dim is None:
        dim = -1
    weight = module._parameters[name]
    if dim < -1:
        dim += weight.ndim
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, _compute(module, name, dim))
    _pre_forward.add(module, ("weight_norm", name), lambda m: setattr(m, name, _compute(m, name, dim)))
    module.__dict__.setdefault("_ff_weight_norm_dims", {})[name] = dim
    return module


def remove_weight_norm(module, name="weight"):
    dims = module.__dict__.get("_ff_weight_norm_dims", {})
    if name not in dims:
        raise ValueError("weight_norm of '%s' not found in %s" % (name, type(module).__name__))
    w = _compute(module, name, dims.pop(name))
    _pre_forward.remove(module, ("weight_norm", name))
    del module._parameters[name + "_g"]
    del module._parameters[name + "_v"]
    setattr(module, name, Parameter(w.detach()))
    return module
