"""parameters_to_vector / vector_to_parameters, as torch.nn.utils."""
from ..._tensor import Tensor, cat


def _check_device(params):
    devs = {str(p.device) for p in params}
    if len(devs) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported (%s)"
                        % ", ".join(sorted(devs)))


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    ps = list(parameters)
    _check_device(ps)
    return cat([p.reshape(-1) for p in ps])


def vector_to_parameters(vec, parameters):
    """Points each parameter's .data at its slice of vec (shared memory, no history), as torch."""
    if not isinstance(vec, Tensor):
        raise TypeError("expected torch.Tensor, but got: %s" % type(vec).__name__)
    ps = list(parameters)
    _check_device(ps)
    need = sum(p.numel() for p in ps)
    if vec.ndim != 1 or vec.numel() != need:
        raise ValueError("vector_to_parameters: vec has shape %s; the parameters need a 1-D vector of %d"
                         % (tuple(vec.shape), need))
    pos = 0
    for p in ps:
        n = p.numel()
        p.data = vec.detach().narrow(0, pos, n).reshape(p.shape).to(p.dtype)  # shares vec, as torch
        pos += n
