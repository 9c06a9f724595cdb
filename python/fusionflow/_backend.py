"""Backends by name: the C loader finds ff_backend_<name>.so next to libfusionflow."""
from ._lib import C, check_ptr, check_status

__all__ = ["backend_handle", "loaded_backends", "default_backend", "set_default_backend"]

_handles = {}


def backend_handle(name):
    """The C ff_backend * for a name ('cpu', 'cpu_blas') or a plugin path."""
    h = _handles.get(name)
    if h is None:
        h = check_ptr(C.ff_backend_load(name.encode()))
        _handles[name] = h
    return h


def loaded_backends():
    """C names of the loaded backends (the default one is loaded on first use). Was
    fusionflow.backends() before that name became torch.backends' namespace."""
    C.ff_backend_default()
    return [C.ff_backend_name(C.ff_backend_at(i)).decode() for i in range(C.ff_backend_count())]


def default_backend():
    return C.ff_backend_name(check_ptr(C.ff_backend_default())).decode()


def set_default_backend(name):
    check_status(C.ff_backend_set_default(backend_handle(name)))
