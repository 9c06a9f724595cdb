"""nn.Module: the base class; assigning a Parameter or Module attribute registers it."""
import collections

from ..._lib import FusionFlowError
from ..._tensor import Tensor, no_grad, tensor
from ... import _dtype
from ..parameter import Parameter


class Module:
    """Base class: assigning a Parameter or Module attribute registers it."""

    def __init__(self):
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_modules", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("call Module.__init__() before assigning attributes in %s.__init__"
                                 % type(self).__name__)
        for d in (self._parameters, self._modules, self._buffers):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)
            return
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_modules", "_buffers"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError("'%s' object has no attribute '%s'" % (type(self).__name__, name))

    def __delattr__(self, name):
        for d in (self._parameters, self._modules, self._buffers):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        if param is None:
            self._parameters.pop(name, None)
        else:
            self.__setattr__(name, param if isinstance(param, Parameter) else Parameter(param))

    def register_buffer(self, name, t):
        self._buffers[name] = t

    def add_module(self, name, module):
        self._modules[name] = module

    # ---- traversal ------------------------------------------------------------------
    def named_modules(self, prefix="", memo=None):
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(prefix + ("." if prefix else "") + name, memo)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def children(self):
        return iter(m for m in self._modules.values() if m is not None)

    def named_children(self):
        return iter(self._modules.items())

    def named_parameters(self, prefix="", recurse=True):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (mp + "." if mp else "") + name, p

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix=""):
        for mp, m in self.named_modules(prefix):
            for name, b in m._buffers.items():
                yield (mp + "." if mp else "") + name, b

    # ---- state ------------------------------------------------------------------------
    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g is not None:
                    with no_grad():
                        g.zero_()

    def state_dict(self):
        """OrderedDict of name -> detached tensor sharing the parameter's memory."""
        sd = collections.OrderedDict()
        for mp, m in self.named_modules():
            for name, p in m._parameters.items():
                if p is not None:
                    sd[(mp + "." if mp else "") + name] = p.detach()
            for name, b in m._buffers.items():
                sd[(mp + "." if mp else "") + name] = b.detach()
        return sd

    def load_state_dict(self, state_dict, strict=True):
        """Copies values in place (under no_grad); shapes must match. Returns
        (missing_keys, unexpected_keys)."""
        own = collections.OrderedDict()
        for mp, m in self.named_modules():
            for name, p in list(m._parameters.items()) + list(m._buffers.items()):
                if p is not None:
                    own[(mp + "." if mp else "") + name] = p
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError("load_state_dict: missing keys %s, unexpected keys %s" % (missing, unexpected))
        with no_grad():
            for k, p in own.items():
                if k not in state_dict:
                    continue
                v = state_dict[k]
                v = v.to(p.device) if isinstance(v, Tensor) else tensor(v, dtype=p.dtype, device=p.device)
                if tuple(v.shape) != tuple(p.shape):
                    raise FusionFlowError("load_state_dict: '%s' has shape %s in the state dict but %s in the "
                                          "model" % (k, tuple(v.shape), tuple(p.shape)))
                p.copy_(v)
        return missing, unexpected

    def train(self, mode=True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

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

        def target(t):
            return t.to(device=device, dtype=dtype if t.dtype.is_floating_point else None)
        seen = set()
        with no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is None or id(p) in seen:
                        continue
                    seen.add(id(p))
                    q = target(p.detach())
                    if q.dtype == p.dtype and q.device == p.device:  # to() made no copy
                        continue
                    g = p.grad
                    p.data = q
                    if g is not None:
                        p.grad = target(g)
                for name, b in list(m._buffers.items()):
                    if b is not None:
                        m._buffers[name] = target(b)
        return self

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("%s.forward is not implemented" % type(self).__name__)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [type(self).__name__ + "(" + self.extra_repr()]
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append("  (%s): %s" % (name, sub))
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"
