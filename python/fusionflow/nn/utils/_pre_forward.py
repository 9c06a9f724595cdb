"""Forward pre-hooks for weight_norm and spectral_norm, by wrapping the module's forward.

This branch's Module has no register_forward_pre_hook; wrapping the instance's forward gives
the same order (recompute the weight, then run forward) and needs nothing from Module.
Removing the last hook restores the original forward."""
import collections

_HOOKS = "_ff_pre_forward_hooks"
_ORIG = "_ff_pre_forward_orig"


class _Forward:
    """The wrapped forward. An object holding the module, not a closure over it, so that
    copy.deepcopy(module) gives a copy whose forward runs the copy's hooks and weights."""

    def __init__(self, module, orig):
        self.module, self.orig = module, orig

    def __call__(self, *args, **kwargs):
        m = self.module
        for h in list(m.__dict__[_HOOKS].values()):
            h(m)
        call = self.orig if self.orig is not None else type(m).forward.__get__(m)
        return call(*args, **kwargs)


def add(module, key, fn):
    """Runs fn(module) before each forward; key names it for remove (one per key)."""
    d = module.__dict__
    if _HOOKS not in d:
        orig = d.get("forward")  # an instance-level forward someone set before us, else the class's
        object.__setattr__(module, _HOOKS, collections.OrderedDict())
        object.__setattr__(module, _ORIG, orig)
        object.__setattr__(module, "forward", _Forward(module, orig))
    hooks = d[_HOOKS]
    if key in hooks:
        raise RuntimeError("Cannot register two %s hooks on the same parameter %s" % key)
    hooks[key] = fn


def has(module, key):
    return key in module.__dict__.get(_HOOKS, {})


def remove(module, key):
    hooks = module.__dict__.get(_HOOKS, {})
    if key not in hooks:
        raise ValueError("%s of '%s' not found in %s" % (key[0], key[1], type(module).__name__))
    del hooks[key]
    if not hooks:
        orig = module.__dict__.pop(_ORIG)
        del module.__dict__[_HOOKS]
        del module.__dict__["forward"]
        if orig is not None:
            object.__setattr__(module, "forward", orig)
