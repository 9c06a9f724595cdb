"""nn.Module: the base class; assigning a Parameter or Module attribute registers it.

Follows torch 1.13's Module: the same registration rules, traversal order, state_dict keys,
load_state_dict's missing/unexpected keys and error text, hooks and repr, so code written
against torch's Module (and its state dicts) works here unchanged."""
import collections
import collections.abc
import itertools

from ..._lib import FusionFlowError
from ..._tensor import Tensor, no_grad, tensor
from ... import _dtype
from ..._grad_mode import is_grad_enabled
from ..parameter import Parameter
from . import _backward_hooks

__all__ = ["Module", "RemovableHandle"]


class RemovableHandle:
    """What register_*_hook returns: remove() (or leaving a `with` block) drops the hook."""
    _next_id = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(RemovableHandle._next_id)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text, spaces):
    """Indents every line but the first (a child module's repr inside its parent's)."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


def _join(prefix, name):
    return prefix + ("." if prefix else "") + name


class Module:
    """Base class: assigning a Parameter or Module attribute registers it."""
    _version = 1
    training: bool

    def __init__(self):
        for name, value in (("training", True), ("_parameters", collections.OrderedDict()),
                            ("_buffers", collections.OrderedDict()), ("_non_persistent_buffers_set", set()),
                            ("_modules", collections.OrderedDict()),
                            ("_forward_hooks", collections.OrderedDict()),
                            ("_forward_pre_hooks", collections.OrderedDict()),
                            ("_backward_hooks", collections.OrderedDict())):
            object.__setattr__(self, name, value)

    # ---- registration -----------------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("cannot assign '%s' before Module.__init__() call (in %s.__init__)"
                                 % (name, type(self).__name__))
        params, modules, buffers = d["_parameters"], d["_modules"], d["_buffers"]
        if isinstance(value, Parameter):
            self._forget(name, keep=params)
            params[name] = value
        elif name in params:
            if value is not None:
                raise TypeError("cannot assign '%s' as parameter '%s' (fusionflow.nn.Parameter or None expected)"
                                % (type(value).__name__, name))
            params[name] = None
        elif isinstance(value, Module):
            self._forget(name, keep=modules)
            modules[name] = value
        elif name in modules:
            if value is not None:
                raise TypeError("cannot assign '%s' as child module '%s' (fusionflow.nn.Module or None expected)"
                                % (type(value).__name__, name))
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError("cannot assign '%s' as buffer '%s' (fusionflow.Tensor or None expected)"
                                % (type(value).__name__, name))
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, keep=None):
        """Drops name from every store but keep: a submodule or parameter assigned again keeps
        its place in the order (children(), state_dict), as torch's."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._modules, self._buffers):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = set(dir(type(self))) | set(self.__dict__) | set(self._parameters) | set(self._modules) \
            | set(self._buffers)
        return sorted(k for k in keys if not k[0].isdigit())

    def _check_name(self, kind, name):
        if not isinstance(name, str):
            raise TypeError("%s name should be a string. Got %s" % (kind, type(name).__name__))
        if "." in name:
            raise KeyError('%s name can\'t contain ".", got: %s' % (kind, name))
        if name == "":
            raise KeyError('%s name can\'t be empty string ""' % kind)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor that is state but not a parameter (running stats); persistent=False keeps
        it out of state_dict."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError("attribute '%s' already exists" % name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError("cannot assign '%s' object to buffer '%s' (fusionflow.Tensor or None required)"
                            % (type(tensor).__name__, name))
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError("attribute '%s' already exists" % name)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError("cannot assign '%s' object to parameter '%s' (fusionflow.nn.Parameter or None required)"
                            % (type(param).__name__, name))
        else:
            self._parameters[name] = param

    def add_module(self, name, module):
        if module is not None and not isinstance(module, Module):
            raise TypeError("%s is not a Module subclass" % type(module).__name__)
        self._check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError("attribute '%s' already exists" % name)
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        mod = self
        for item in target.split(".") if target else []:
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def _get_leaf(self, target, store, kind):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in getattr(mod, store):
            raise AttributeError("`" + name + "` is not " + kind)
        return getattr(mod, name)

    def get_parameter(self, target):
        return self._get_leaf(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        return self._get_leaf(target, "_buffers", "a buffer")

    # ---- traversal ------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, _join(prefix, name), remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, store, prefix, recurse, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, v in getattr(m, store).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield _join(mp, name), v

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """fn(m) on every child (recursively) and then on self, as torch's init idiom."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- state ------------------------------------------------------------------------
    def zero_grad(self, set_to_none=False):
        """Zeroes the grads in place, or drops them (set_to_none=True); torch 1.13's default
        is to zero them."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                with no_grad():
                    g.zero_()

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """OrderedDict of name -> tensor (detached, sharing memory, unless keep_vars);
        non-persistent buffers are left out. Positional (destination, prefix, keep_vars) as
        torch's deprecated form."""
        if args:
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = collections.OrderedDict()
            destination._metadata = collections.OrderedDict()
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        """torch's signature (local_metadata: this module's entry of state_dict._metadata, {}
        when there is none), so that an override written for torch runs here unchanged."""
        local = [(k, v) for k, v in itertools.chain(self._parameters.items(), self._buffers.items())
                 if v is not None and k not in self._non_persistent_buffers_set]
        for name, p in local:
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing.append(key)
                continue
            v = state_dict[key]
            try:
                v = v.to(device=p.device, dtype=p.dtype) if isinstance(v, Tensor) else \
                    tensor(v, dtype=p.dtype, device=p.device)
            except (TypeError, ValueError) as e:
                errors.append('While copying the parameter named "%s", whose dimensions in the model are %s, an '
                              'exception occurred : %s.' % (key, tuple(p.shape), e))
                continue
            if tuple(v.shape) != tuple(p.shape):
                errors.append("size mismatch for %s: copying a param with shape %s from checkpoint, the shape in "
                              "current model is %s." % (key, _shape_str(v.shape), _shape_str(p.shape)))
                continue
            with no_grad():
                p.copy_(v)
        if strict:
            names = {k for k, _ in local}
            for key in state_dict:
                if key.startswith(prefix):
                    first = key[len(prefix):].split(".", 1)[0]
                    if first not in self._modules and first not in names:
                        unexpected.append(key)

    def load_state_dict(self, state_dict, strict=True):
        """Copies values in place (under no_grad), converting to each parameter's dtype and
        device. Returns (missing_keys, unexpected_keys); strict raises on either, as torch,
        and a shape mismatch raises in either mode, leaving the other entries copied."""
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError("Expected state_dict to be dict-like, got %s." % type(state_dict))
        # a copy, as torch takes: a module's _load_from_state_dict may rename keys in it
        # (old checkpoints' names), which must not reach the caller's dict
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = collections.OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata
        missing, unexpected, errors = [], [], []

        def load(m, prefix):
            local = metadata.get(prefix[:-1], {}) if metadata is not None else {}
            m._load_from_state_dict(state_dict, prefix, local, True, missing, unexpected, errors)
            for name, child in m._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
        load(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in unexpected))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: %s. " % ", ".join('"%s"' % k for k in missing))
        if errors:
            raise FusionFlowError("Error(s) in loading state_dict for %s:\n\t%s" % (self._get_name(),
                                                                                  "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ---- moving and casting -------------------------------------------------------------
    def _apply(self, convert):
        """convert(t) -> t' for every parameter (its data replaced in place, so identity and
        ties are kept, grads converted with it) and buffer, children first, as torch."""
        for m in self.children():
            m._apply(convert)
        with no_grad():
            for name, p in self._parameters.items():
                if p is None:
                    continue
                q = convert(p.detach())
                if q.dtype == p.dtype and q.device == p.device:  # nothing to do (to() made no copy)
                    continue
                g = p.grad
                p.data = q
                if g is not None:
                    p.grad = convert(g)
            for name, b in self._buffers.items():
                if b is not None:
                    self._buffers[name] = convert(b)
        return self

    def _cast_floating(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.dtype.is_floating_point else t)

    def float(self):
        return self._cast_floating(_dtype.float32)

    def double(self):
        return self._cast_floating(_dtype.float64)

    def half(self):
        return self._cast_floating(_dtype.float16)

    def bfloat16(self):
        return self._cast_floating(_dtype.bfloat16)

    def type(self, dst_type):
        """Casts every parameter and buffer (integer ones too), as torch's Module.type."""
        dst = _dtype.to_dtype(dst_type)
        return self._apply(lambda t: t.to(dst))

    def to(self, *args, **kwargs):
        """Moves every parameter and buffer to a device and casts the floating ones to a
        floating dtype, as torch. Parameters keep their identity (their data is replaced, as
        torch's param.data = ...), so tied weights stay tied and an optimizer made before
        still holds them; grads move with them."""
        from ..._tensor import to_args
        device, dtype = to_args(args, kwargs.get("device"), kwargs.get("dtype"))
        if dtype is not None:
            dtype = _dtype.to_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired dtype=%s"
                                % dtype.name)
        return self._apply(lambda t: t.to(device=device, dtype=dtype if t.dtype.is_floating_point else None))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    # ---- calling, with hooks ---------------------------------------------------------------
    def register_forward_pre_hook(self, hook):
        """hook(module, args) -> None or new args (a tuple, or one value), before forward."""
        h = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[h.id] = hook
        return h

    def register_forward_hook(self, hook):
        """hook(module, args, output) -> None or a replacement output, after forward."""
        h = RemovableHandle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        return h

    def register_full_backward_hook(self, hook):
        """hook(module, grad_input, grad_output) -> None or a new grad_input, run when the
        gradients of the module's inputs are known (modules/_backward_hooks.py)."""
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        return h

    def forward(self, *args, **kwargs):
        raise NotImplementedError('Module [%s] is missing the required "forward" function' % self._get_name())

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            r = hook(self, args)
            if r is not None:
                args = r if isinstance(r, tuple) else (r,)
        call = None
        if self._backward_hooks and is_grad_enabled():
            call, args = _backward_hooks.setup_inputs(self, args)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            r = hook(self, args, out)
            if r is not None:
                out = r
        if call is not None:
            out = _backward_hooks.setup_outputs(call, out)
        return out

    # ---- printing ---------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = ["(" + k + "): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                body = extra_lines[0]
            else:
                body = "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"


def _shape_str(shape):
    return "[%s]" % ", ".join(str(int(s)) for s in shape)
