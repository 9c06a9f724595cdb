"""fusionflow.compile: run a function's kernels as one captured graph (include/ff/graph.h),
as CUDA graphs / torch.compile(mode="reduce-overhead") do.

    @fusionflow.compile
    def train_step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

Per signature (the shape, dtype, backend and requires_grad of every tensor argument, the
other arguments' values, grad mode and the default backend):
  - the first call (`warmup` calls) runs fn eagerly, so that state made on a first step
    (optimizer state, lazily built buffers) exists before capture, as CUDA graphs require;
  - the next call copies the tensor arguments into static input tensors the compiled
    function owns, runs fn on them between ff_graph_capture_begin/end, and returns its
    outputs;
  - later calls copy the arguments into the static inputs and replay the graph: no Python,
    no dispatch, no allocation.
A new signature is warmed up and captured on its own; `cache_size` signatures are kept (the
least recently used is dropped). If a capture fails (two backends in one region, foreign
memory released in it, ...) the signature runs eagerly from then on, with one warning that
carries the C library's reason.

Rules (CUDA graphs'):
  - Outputs are the same Tensor objects on every replay, overwritten in place: clone what
    you keep across calls. They are detached: the backward pass belongs inside fn.
  - fn returns tensors (alone, or in tuples, lists, dicts; None is allowed). A Python
    number read during the capture (.item(), .tolist(), ...) would be frozen: a function
    returning one is not captured (it runs eagerly, with a warning), and a captured one
    that reads values to the host is warned about (ff_graph_info.host_reads).
  - Tensor arguments are data: fn sees the static copies, so writes to them and gradients
    with respect to them do not reach the caller's tensors. Parameters and optimizer state
    that fn reaches through modules or closures are used, and updated, in place.
  - Control flow and Python values are those of the capture; random ops draw new numbers
    on every replay. Optimizers (fusionflow.optim) read the learning rate at each replayed
    step; their other hyper-parameters are fixed at capture.
  - Called while another function captures, a compiled function runs eagerly (its kernels
    become part of the outer graph).
"""
import collections
import ctypes
import functools
import threading
import types
import warnings

from ._lib import C, GraphInfo, check_status, error
from ._tensor import Tensor

__all__ = ["compile", "graph_stats", "CompiledFunction", "host_call"]

_release = C.ff_graph_release
_local = threading.local()  # .keep: {id: object} the capture in progress must keep alive
_EAGER = "eager"  # a signature whose capture failed


def host_call(fn, user, owner):
    """ff_graph_host_call(fn, user) for Python callbacks (fn a _lib.HostFn): while this
    thread captures for a compiled function, owner (which must hold fn and whatever it
    reads) is kept alive as long as the graph, which calls fn on every replay."""
    keep = getattr(_local, "keep", None)
    if keep is not None:
        keep[id(owner)] = owner
    return C.ff_graph_host_call(fn, user)


# ---- arguments and outputs as (skeleton, tensors) -------------------------------------------
def _flatten(x, tensors):
    """x as a hashable skeleton, each Tensor replaced by its index in tensors (appended);
    tuples, lists and dicts are walked, other values kept as (type, value)."""
    if isinstance(x, Tensor):
        tensors.append(x)
        return (Tensor, len(tensors) - 1)
    t = type(x)
    if t is tuple or t is list:
        return (t, tuple(_flatten(v, tensors) for v in x))
    if t is dict:
        return (dict, tuple((k, _flatten(v, tensors)) for k, v in x.items()))
    return (t, x)


def _build(skel, tensors):
    """The inverse of _flatten, with tensors in the tensors' places."""
    t, v = skel
    if t is Tensor:
        return tensors[v]
    if t is tuple or t is list:
        return t(_build(s, tensors) for s in v)
    if t is dict:
        return {k: _build(s, tensors) for k, s in v}
    return v


def _first_non_tensor(skel, where="output"):
    """Where the first value other than a tensor or None sits in an output skeleton."""
    t, v = skel
    if t is tuple or t is list:
        items = [("%s[%d]" % (where, i), s) for i, s in enumerate(v)]
    elif t is dict:
        items = [("%s[%r]" % (where, k), s) for k, s in v]
    else:
        return None if t is Tensor or v is None else "%s (a %s)" % (where, t.__name__)
    for w, s in items:
        found = _first_non_tensor(s, w)
        if found:
            return found
    return None


def _tensor_key(t):
    p = t._ptr
    n, s = C.ff_tensor_ndim(p), C.ff_tensor_shape(p)
    return (tuple(s[i] for i in range(n)), C.ff_tensor_dtype(p), C.ff_tensor_backend(p), C.ff_requires_grad(p))


def _static_copy(t):
    """A tensor of the compiled function's own, made before the capture: an input of the graph."""
    s = t.detach().clone()
    if t.requires_grad:
        s.requires_grad_(True)
    return s


class _Graph:
    """One captured signature: the C graph, its static inputs and outputs, and the objects
    its host calls reach (they must outlive it)."""

    def __init__(self, ptr, inputs, out_skel, outputs, keep):
        self.ptr = ptr
        self.inputs = inputs
        self.in_ptrs = (ctypes.c_void_p * max(len(inputs), 1))(*[t._ptr for t in inputs])
        self.out_skel = out_skel
        self.outputs = outputs
        self.keep = keep

    def __del__(self):
        if self.ptr and _release is not None:
            _release(self.ptr)  # before self.keep goes: nothing calls back after this

    def replay(self, args):
        n = len(args)
        vals = (ctypes.c_void_p * max(n, 1))(*[t._ptr for t in args])
        check_status(C.ff_graph_replay_with(self.ptr, n, self.in_ptrs, vals))
        return _build(self.out_skel, self.outputs)

    def stats(self):
        info = GraphInfo()
        check_status(C.ff_graph_stats(self.ptr, ctypes.byref(info)))
        return {name: getattr(info, name) for name, _ in GraphInfo._fields_}


class CompiledFunction:
    """fn warmed up, captured and replayed per signature (see the module's docstring)."""

    def __init__(self, fn, warmup=1, cache_size=8):
        if not callable(fn):
            raise TypeError("fusionflow.compile: expected a function, got %r" % (fn,))
        if warmup < 0 or cache_size < 1:
            raise ValueError("fusionflow.compile: warmup must be >= 0 and cache_size >= 1")
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._warmup = int(warmup)
        self._cache_size = int(cache_size)
        self._entries = collections.OrderedDict()  # signature -> eager calls so far | _Graph | _EAGER
        self._warned = set()
        self._last = None
        self.captures = 0  # graphs captured so far (a new signature captures again)

    def __get__(self, obj, cls=None):  # as a method: bound like a function
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if C.ff_graph_is_capturing():  # inside another capture: part of that graph
            return self._fn(*args, **kwargs)
        tensors = []
        skel = _flatten((args, tuple(sorted(kwargs.items()))), tensors)
        key = (skel, tuple(_tensor_key(t) for t in tensors), C.ff_grad_enabled(), C.ff_backend_default())
        try:
            entry = self._entries.get(key, 0)
        except TypeError as e:  # an unhashable argument (a NumPy array, ...)
            self._warn("unhashable", "fusionflow.compile(%s): an argument is not hashable (%s); running eagerly"
                       % (self.__name__, e), stacklevel=3)
            return self._fn(*args, **kwargs)
        if isinstance(entry, _Graph):
            self._entries.move_to_end(key)
            self._last = entry
            return entry.replay(tensors)
        if entry == _EAGER:
            return self._fn(*args, **kwargs)
        if entry < self._warmup:
            self._remember(key, entry + 1)
            return self._fn(*args, **kwargs)
        return self._capture(key, skel, tensors)

    def _remember(self, key, entry):
        self._entries[key] = entry
        self._entries.move_to_end(key)
        while len(self._entries) > self._cache_size:
            self._entries.popitem(last=False)

    def _warn(self, what, msg, stacklevel=4):
        """Warns once per what; stacklevel 4 names the caller of a call that captured."""
        if what not in self._warned:
            self._warned.add(what)
            warnings.warn(msg, RuntimeWarning, stacklevel=stacklevel)

    def _capture(self, key, skel, tensors):
        inputs = [_static_copy(t) for t in tensors]  # before the capture: graph inputs
        args, kwargs = _build(skel, inputs)
        keep = {}
        check_status(C.ff_graph_capture_begin())
        prev, _local.keep = getattr(_local, "keep", None), keep
        try:
            out = self._fn(*args, **dict(kwargs))
            outputs = []
            out_skel = _flatten(out, outputs)
            bad = _first_non_tensor(out_skel)
            if not bad:  # detached before the end, so the autograd graph's tensors die as intermediates
                outputs = [t.detach() for t in outputs]
                out = None
        except BaseException:
            C.ff_graph_capture_abort()
            raise
        finally:
            _local.keep = prev
        if bad:
            C.ff_graph_capture_abort()
            self._remember(key, _EAGER)
            self._warn(("output", key), "fusionflow.compile(%s): %s is not a tensor; a value read to the host while "
                       "capturing would be frozen in replays, so this signature runs eagerly (return tensors)"
                       % (self.__name__, bad))
            return out
        ptr = C.ff_graph_capture_end()
        if not ptr:
            self._remember(key, _EAGER)
            self._warn(("capture", key), "fusionflow.compile(%s): the capture failed, this signature runs eagerly: %s"
                       % (self.__name__, error()))
            return _build(out_skel, outputs)
        g = _Graph(ptr, inputs, out_skel, outputs, list(keep.values()))
        self._remember(key, g)
        self._last = g
        self.captures += 1
        reads = g.stats()["host_reads"]
        if reads:
            self._warn(("reads", key), "fusionflow.compile(%s): %d value(s) were read to the host while capturing "
                       "(.item(), .numpy(), ...); replays reuse what was read then" % (self.__name__, reads))
        return _build(out_skel, outputs)

    def graph_stats(self):
        """The ff_graph_info of the graph last captured or replayed, as a dict (None before any)."""
        return self._last.stats() if self._last else None

    def dump(self, path):
        """Writes that graph as Graphviz dot (launches, fused groups, buffers)."""
        if not self._last:
            raise RuntimeError("fusionflow.compile(%s): no graph captured yet" % self.__name__)
        check_status(C.ff_graph_dump(self._last.ptr, str(path).encode()))

    def reset(self):
        """Drops every graph and warm-up count: the next calls warm up and capture again."""
        self._entries.clear()
        self._last = None


def compile(fn=None, *, warmup=1, cache_size=8):
    """fn as a CompiledFunction; as a decorator: @compile or @compile(warmup=2)."""
    if fn is None:
        return lambda f: CompiledFunction(f, warmup, cache_size)
    return CompiledFunction(fn, warmup, cache_size)


def graph_stats(compiled):
    """compiled's last graph's ff_graph_info as a dict (compiled.graph_stats())."""
    return getattr(compiled, "__func__", compiled).graph_stats()
