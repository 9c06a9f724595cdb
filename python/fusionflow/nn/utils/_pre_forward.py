"""Forward pre-hooks for weight_norm and spectral_norm, by wrapping the module's forward.

This branch's Module has no register_forward_pre_hook; wrapping the instance's forward gives
the same order (recompute the weight, then run forward) and needs nothing from Module.
Removing the last hook restores the original forward."""
import collections

_HOOKS = "_ff_pre_forward_hooks"
_ORIG = "_ff_pre_forward_orig"


def add(module, key, fn):
    """Runs fn(module) before each forward; key names it for remove (one per key)."""
    d = module.__dict__
    if _HOOKS not in d:
        hooks = collections.OrderedDict()
        orig = d.get("forward")  # an instance-level forward someone set before us, else the class's
        object.__setattr__(module, _HOOKS, hooks)
        object.__setattr__(module, _ORIG, orig)
        call = orig if orig is not None else type(module).forward.__get__(module)

        def forward(*args, **kwargs):
            for h in list(hooks.values()):
                h(module)
            return call(*args, **kwargs)
        object.__setattr__(module, "forward", forward)
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
