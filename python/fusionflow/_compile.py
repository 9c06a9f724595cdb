"""fusionflow.compile: run a function's kernels as one captured graph (include/ff/graph.h),
as CUDA graphs / torch.compile(mode="reduce-overhead") do; on cuda the replay itself runs
as CUDA graphs (graph/record.c: each run of launches between host calls recorded once),
which compiled.graph_stats() counts as device_runs.

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
  - Guards, as torch.compile's: a graph holds the module state it captured (parameters,
    buffers, optimizer state, tensors fn reaches through closures, globals and the
    arguments' objects). Before each replay that state is checked: the same objects in
    the same places, and each tensor on the very C tensor it had (so the same storage,
    dtype, shape and device: a C tensor never changes them). After `p.data = ...`,
    `model.to(...)`, `model.double()`, a new submodule or a new optimizer, the signature
    warms up and captures again; one whose state changes on every call runs eagerly after
    `_MAX_RECAPTURES` tries, with a warning. A list's membership is not guarded, only
    the objects in it at capture.
"""
import collections
import ctypes
import functools
import threading
import types
import warnings

from ._interrupt import deferred, guarded_call
from ._lib import C, GraphInfo, check_status, error
from ._tensor import Tensor, wrap

__all__ = ["compile", "graph_stats", "CompiledFunction", "host_call"]

_release = C.ff_graph_release
_local = threading.local()  # .keep: {id: object} the capture in progress must keep alive
_EAGER = "eager"  # a signature whose capture failed
_MAX_RECAPTURES = 8  # guard failures of one signature before it runs eagerly for good


def host_call(fn, user, owner, every=False):
    """ff_graph_host_call(fn, user) for Python callbacks (fn a _lib.HostFn that stores
    what it raises with _interrupt.callback_error): while this thread captures for a
    compiled function, owner (which must hold fn and whatever it reads) is kept alive as
    long as the graph, which calls fn on every replay. Returns the status; re-raises what
    fn stored (guarded_call(every))."""
    keep = getattr(_local, "keep", None)
    if keep is not None:
        keep[id(owner)] = owner
    return guarded_call(C.ff_graph_host_call, fn, user, every=every)


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


def _skeleton_values(skel):
    """The values other than tensors a skeleton holds (the arguments' modules, objects)."""
    t, v = skel
    if t is Tensor:
        return []
    if t is tuple or t is list:
        return [x for s in v for x in _skeleton_values(s)]
    if t is dict:
        return [x for _, s in v for x in _skeleton_values(s)]
    return [v]


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


# ---- guards: the state a graph captured ---------------------------------------------------
_MISSING = object()
_WALK_DEPTH = 4  # attribute hops from fn to a model (module and optimizer insides not counted)
_WALK_ITEMS = 256  # a larger container outside a module or optimizer is data: not walked
_LIBRARIES = ("fusionflow", "numpy", "torch")  # code there holds no model state of the caller's


def _state_classes():
    from .nn.modules.module import Module  # here: nn and optim import this module
    from .optim.optimizer import Optimizer
    return Module, Optimizer


def _code_names(code, out):
    """The names code (and the functions and comprehensions inside it) may look up globally."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _from_library(obj):
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".", 1)[0] in _LIBRARIES


class _Guard:
    """Where the state fn reached at capture was, and the C tensor of each tensor in it.
    holds() is true while every slot (a mapping entry, a closure cell) still holds the
    same object and every tensor the same C tensor. Those C tensors are retained here, so
    an equal handle is the very tensor, never a new one at a reused address."""

    def __init__(self, roots):
        self.slots = []  # (mapping, key, object)
        self.cells = []  # (cell, object)
        self.tensors = []
        self.held = []
        self._seen = set()
        self._classes = _state_classes()
        for r in roots:
            self._visit(r, 0)
        del self._seen, self._classes
        self.ptrs = [t._ptr for t in self.tensors]

    def holds(self):
        for m, k, o in self.slots:
            if m.get(k, _MISSING) is not o:
                return False
        for c, o in self.cells:
            try:
                if c.cell_contents is not o:
                    return False
            except ValueError:  # the cell was emptied (del)
                return False
        return [t._ptr for t in self.tensors] == self.ptrs

    def _interesting(self, v):
        """Whether v may hold state a graph reads: tensors, models, and what leads to them."""
        if isinstance(v, (Tensor, CompiledFunction) + self._classes):
            return True
        if isinstance(v, (dict, list, tuple)):
            return len(v) > 0
        if isinstance(v, (types.FunctionType, types.MethodType)):
            return not _from_library(v)
        if isinstance(v, (type, types.ModuleType)) or not hasattr(v, "__dict__"):
            return False
        return not _from_library(type(v))  # the caller's own objects (a trainer holding a model)

    def _visit(self, obj, depth):
        if id(obj) in self._seen or depth > _WALK_DEPTH:
            return
        self._seen.add(id(obj))
        if isinstance(obj, Tensor):
            self.tensors.append(obj)
            self.held.append(wrap(C.ff_tensor_retain(obj._ptr)))
        elif isinstance(obj, self._classes):  # whole: a deep model is still one model
            self._visit_mapping(vars(obj), 0, limit=False)
        elif isinstance(obj, CompiledFunction):
            self._visit(obj._fn, depth)
        elif isinstance(obj, types.MethodType):
            self._visit(obj.__self__, depth)
            self._visit(obj.__func__, depth)
        elif isinstance(obj, types.FunctionType):
            self._visit_function(obj, depth)
        elif isinstance(obj, dict):
            self._visit_mapping(obj, depth, limit=True)
        elif isinstance(obj, (list, tuple)):
            if len(obj) <= _WALK_ITEMS:
                for v in obj:
                    if self._interesting(v):
                        self._visit(v, depth + 1)
        elif hasattr(obj, "__dict__"):
            self._visit_mapping(vars(obj), depth, limit=True)

    def _visit_mapping(self, d, depth, limit):
        """limit: outside a module or optimizer, where a big mapping is data and depth counts."""
        if limit and len(d) > _WALK_ITEMS:
            return
        for k, v in list(d.items()):
            if isinstance(k, Tensor):  # optimizer state: param -> dict
                self._visit(k, depth + 1 if limit else 0)
            if self._interesting(v):
                self.slots.append((d, k, v))
                self._visit_inner(v, depth + 1 if limit else 0, limit)

    def _visit_inner(self, v, depth, limit):
        """Inside a module or optimizer (not limit) its containers are walked whole."""
        if limit or not isinstance(v, (dict, list, tuple)):
            self._visit(v, depth)
        elif id(v) not in self._seen:
            self._seen.add(id(v))
            if isinstance(v, dict):
                self._visit_mapping(v, 0, limit=False)
            else:
                for x in v:
                    if self._interesting(x):
                        self._visit_inner(x, 0, False)

    def _visit_function(self, fn, depth):
        code = fn.__code__
        for cell in fn.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if self._interesting(v):
                self.cells.append((cell, v))
                self._visit(v, depth + 1)
        g = fn.__globals__
        for name in sorted(_code_names(code, set())):
            v = g.get(name, _MISSING)
            if v is not _MISSING and self._interesting(v):
                self.slots.append((g, name, v))
                self._visit(v, depth + 1)
        for v in (fn.__defaults__ or ()) + tuple((fn.__kwdefaults__ or {}).values()):
            if self._interesting(v):
                self._visit(v, depth + 1)


class _Graph:
    """One captured signature: the C graph, its static inputs and outputs, and the objects
    its host calls reach (they must outlive it)."""

    def __init__(self, ptr, inputs, out_skel, outputs, keep):
        self.ptr = ptr
        self.guard = None  # a _Guard, set once the graph is owned
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
        # the host calls run Python: a Ctrl-C or SystemExit there comes out as itself
        check_status(guarded_call(C.ff_graph_replay_with, self.ptr, n, self.in_ptrs, vals))
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
        self._recaptures = {}  # signature -> graphs dropped because their state changed
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
            if entry.guard.holds():
                self._entries.move_to_end(key)
                self._last = entry
                return entry.replay(tensors)
            entry = self._invalidate(key)
        if entry == _EAGER:
            return self._fn(*args, **kwargs)
        if entry < self._warmup:
            self._remember(key, entry + 1)
            return self._fn(*args, **kwargs)
        return self._capture(key, skel, tensors)

    def _invalidate(self, key):
        """The state key's graph captured has changed: warm up and capture again (the
        first call after model.double() may build state anew), or, after
        _MAX_RECAPTURES, run eagerly. Returns the new entry."""
        n = self._recaptures[key] = self._recaptures.get(key, 0) + 1
        if self._last is self._entries.get(key):
            self._last = None
        if n > _MAX_RECAPTURES:
            self._remember(key, _EAGER)
            self._warn(("guards", key), "fusionflow.compile(%s): the module state this signature captured (parameters, "
                       "buffers, optimizer state) changed %d times; it runs eagerly from now on"
                       % (self.__name__, n - 1))
            return _EAGER
        self._remember(key, 0)
        return 0

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
        args_objects = [v for v in _skeleton_values(skel) if not isinstance(v, Tensor)]  # a module passed in
        keep = {}
        prev = getattr(_local, "keep", None)
        try:  # from the begin on: a Ctrl-C right after it must still abort the capture
            check_status(C.ff_graph_capture_begin())
            _local.keep = keep
            out = self._fn(*args, **dict(kwargs))
            outputs = []
            out_skel = _flatten(out, outputs)
            bad = _first_non_tensor(out_skel)
            if bad:
                C.ff_graph_capture_abort()
            else:  # detached before the end, so the autograd graph's tensors die as intermediates
                outputs = [t.detach() for t in outputs]
                out = None
                with deferred():  # a Ctrl-C while planning is raised once the graph is owned (or its error read)
                    ptr = C.ff_graph_capture_end()
                    g = _Graph(ptr, inputs, out_skel, outputs, list(keep.values())) if ptr else error()
        except BaseException:
            if C.ff_graph_is_capturing():  # ours: __call__ captures only when none is on
                C.ff_graph_capture_abort()
            raise
        finally:
            _local.keep = prev
        if bad:
            self._remember(key, _EAGER)
            self._warn(("output", key), "fusionflow.compile(%s): %s is not a tensor; a value read to the host while "
                       "capturing would be frozen in replays, so this signature runs eagerly (return tensors)"
                       % (self.__name__, bad))
            return out
        if not ptr:
            self._remember(key, _EAGER)
            self._warn(("capture", key), "fusionflow.compile(%s): the capture failed, this signature runs eagerly: %s"
                       % (self.__name__, g))
            return _build(out_skel, outputs)
        g.guard = _Guard((self._fn, args_objects))  # after fn ran: the state as the graph leaves it
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
