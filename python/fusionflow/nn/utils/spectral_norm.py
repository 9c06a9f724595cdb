"""spectral_norm / remove_spectral_norm, as torch.nn.utils (1.13): weight = weight_orig /
sigma, sigma estimated by power iteration on the weight as a matrix (dim first); in training
each forward runs n_power_iterations and updates the buffers weight_u and weight_v in place."""
from ..._grad_mode import no_grad
from .. import Parameter
from . import _pre_forward


def _normalize(x, eps):
    return x / x.norm().clamp(min=eps)


def _matrix(weight, dim):
    w = weight
    if dim != 0:
        w = w.permute(dim, *[d for d in range(w.ndim) if d != dim])
    return w.reshape(w.shape[0], -1)


def _compute(module, name, n_iter, eps, dim, do_power_iteration):
    weight = getattr(module, name + "_orig")
    u, v = getattr(module, name + "_u"), getattr(module, name + "_v")
    mat = _matrix(weight, dim)
    if do_power_iteration:
        with no_grad():
            m = mat.detach()
            for _ in range(n_iter):
                v.copy_(_normalize(m.t() @ u, eps))
                u.copy_(_normalize(m @ v, eps))
        if n_iter > 0:
            u, v = u.clone(), v.clone()
    sigma = (u * (mat @ v)).sum()
    return weight / sigma


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    if _pre_forward.has(module, ("spectral_norm", name)):
        raise RuntimeError("Cannot register two spectral_norm hooks on the same parameter %s" % name)
    if name not in module._parameters:
        raise AttributeError("spectral_norm: %s has no parameter %r" % (type(module).__name__, name))
    if n_power_iterations <= 0:
        raise ValueError("Expected n_power_iterations to be positive, but got n_power_iterations=%d"
                         % n_power_iterations)
    if dim is None:
        dim = 1 if type(module).__name__.startswith("ConvTranspose") else 0
    weight = module._parameters[name]
    with no_grad():
        mat = _matrix(weight.detach(), dim)
        h, w = mat.shape
        u = _normalize(weight.new_zeros(h).normal_(0, 1).to(weight.dtype), eps)
        v = _normalize(weight.new_zeros(w).normal_(0, 1).to(weight.dtype), eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    args = (name, n_power_iterations, eps, dim)
    _pre_forward.add(module, ("spectral_norm", name),
                     lambda m: setattr(m, name, _compute(m, *args, do_power_iteration=m.training)))
    module.__dict__.setdefault("_ff_spectral_norm_args", {})[name] = args
    return module


def remove_spectral_norm(module, name="weight"):
    all_args = module.__dict__.get("_ff_spectral_norm_args", {})
    if name not in all_args:
        raise ValueError("spectral_norm of '%s' not found in %s" % (name, type(module).__name__))
    with no_grad():
        w = _compute(module, *all_args.pop(name), do_power_iteration=False)
    _pre_forward.remove(module, ("spectral_norm", name))
    del module._parameters[name + "_orig"]
    del module._buffers[name + "_u"]
    del module._buffers[name + "_v"]
    setattr(module, name, Parameter(w.detach()))
    return module
