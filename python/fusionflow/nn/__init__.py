"""fusionflow.nn: modules in Python over the C op library (PyTorch-shaped API).

Layers keep PyTorch's parameter layout and names (Linear.weight is [out, in]), so a
state dict saved by PyTorch's safetensors loads here and the other way round.
"""
import collections
import math

from .._lib import C, FusionFlowError
from .._tensor import Tensor, wrap, no_grad, tensor, uniform, zeros, ones
from .. import _dtype
from . import functional
from . import functional as F

__all__ = ["Parameter", "Module", "Linear", "Sequential", "ModuleList", "ReLU", "Tanh", "Sigmoid", "GELU", "SiLU",
           "Softplus", "Softmax", "LogSoftmax", "Identity", "Flatten", "Dropout", "LayerNorm", "Embedding",
           "MSELoss", "CrossEntropyLoss", "L1Loss", "NLLLoss", "functional", "init"]


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable; requires grad by default.

    Parameter(t) shares t's memory (a detached alias), as torch.nn.Parameter."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = zeros(0)
        if not isinstance(data, Tensor):
            data = tensor(data)
        p = wrap(C.ff_detach(data._ptr), cls)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


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
        from .._tensor import to_args
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


# ---- layers ----------------------------------------------------------------------------
class Linear(Module):
    """y = x @ weight.T + bias, weight [out, in]. PyTorch's default init: weight and bias
    from U(-1/sqrt(in), 1/sqrt(in)); seeded by manual_seed() or `seed`."""

    def __init__(self, in_features, out_features, bias=True, dtype=_dtype.float32, seed=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(uniform((out_features, in_features), -bound, bound, dtype=dtype, seed=seed))
        if bias:
            self.bias = Parameter(uniform((out_features,), -bound, bound, dtype=dtype,
                                          seed=None if seed is None else seed + 1))
        else:
            self.bias = None

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for k, m in modules[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        mods = list(self._modules.values())
        return Sequential(*mods[i]) if isinstance(i, slice) else mods[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self


class ModuleList(Module):
    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, m):
        self.add_module(str(len(self._modules)), m)
        return self

    def __getitem__(self, i):
        return list(self._modules.values())[i]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


def _act(name, fn_name, doc):
    def forward(self, x):
        return getattr(x, fn_name)()
    cls = type(name, (Module,), {"forward": forward, "__doc__": doc})
    return cls


ReLU = _act("ReLU", "relu", "max(x, 0)")
Tanh = _act("Tanh", "tanh", "tanh(x)")
Sigmoid = _act("Sigmoid", "sigmoid", "1 / (1 + exp(-x))")
SiLU = _act("SiLU", "silu", "x * sigmoid(x)")
Softplus = _act("Softplus", "softplus", "log(1 + exp(x))")


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return x.gelu(self.approximate)


class Softmax(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.softmax(self.dim)


class LogSoftmax(Softmax):
    def forward(self, x):
        return x.log_softmax(self.dim)


class Identity(Module):
    def forward(self, x):
        return x


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape))
            self.bias = Parameter(zeros(*self.normalized_shape))
        else:
            self.weight = self.bias = None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)


class Conv2d(Module):
    """PyTorch's Conv2d (groups 1, dilation 1, zero padding): weight [out, in, kh, kw] and
    bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in * kh * kw (PyTorch's default
    kaiming_uniform_(a=sqrt(5)) comes to that bound); seeded by manual_seed() or `seed`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=_dtype.float32, seed=None):
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError("Conv2d: padding_mode=%r is not supported (zeros only)" % (padding_mode,))
        F._no_dilation(dilation, groups, "Conv2d")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = F._pair(kernel_size, "kernel_size")
        self.stride, self.padding = stride, padding
        fan_in = in_channels * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(uniform((out_channels, in_channels) + self.kernel_size, -bound, bound, dtype=dtype,
                                        seed=seed))
        self.bias = Parameter(uniform((out_channels,), -bound, bound, dtype=dtype,
                                      seed=None if seed is None else seed + 1)) if bias else None

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self):
        return "%d, %d, kernel_size=%s, stride=%s, padding=%s" % (self.in_channels, self.out_channels,
                                                                 self.kernel_size, self.stride, self.padding)


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)

    def extra_repr(self):
        return "kernel_size=%s, stride=%s, padding=%s" % (self.kernel_size, self.stride, self.padding)


class AvgPool2d(MaxPool2d):
    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class _BatchNorm(Module):
    """PyTorch's BatchNorm: affine weight (ones) and bias (zeros), running_mean/running_var
    buffers updated in training with the unbiased batch variance, used in eval."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 dtype=_dtype.float32):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.track_running_stats = track_running_stats
        self.weight = Parameter(ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(zeros(num_features, dtype=dtype)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0))
        else:
            self.running_mean = self.running_var = None

    def _check(self, x):
        pass

    def forward(self, x):
        self._check(x)
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
        return F.batch_norm(x, self.running_mean if self.track_running_stats else None,
                            self.running_var if self.track_running_stats else None, self.weight, self.bias,
                            use_batch, self.momentum, self.eps)

    def extra_repr(self):
        return "%d, eps=%g, momentum=%g" % (self.num_features, self.eps, self.momentum)


class BatchNorm1d(_BatchNorm):
    def _check(self, x):
        if x.ndim not in (2, 3):
            raise ValueError("BatchNorm1d: expected a 2-D or 3-D input, got %d-D" % x.ndim)


class BatchNorm2d(_BatchNorm):
    def _check(self, x):
        if x.ndim != 4:
            raise ValueError("BatchNorm2d: expected a 4-D input [N, C, H, W], got %d-D" % x.ndim)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, seed=None):
        super().__init__()
        from .._tensor import normal
        self.weight = Parameter(normal((num_embeddings, embedding_dim), seed=seed))

    def forward(self, idx):
        return F.embedding(idx, self.weight)


# ---- losses ------------------------------------------------------------------------------
class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError("reduction must be 'mean', 'sum' or 'none'")
        self.reduction = reduction


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """logits [N, C] (or [C]) and integer class targets [N]; mean over N."""

    def forward(self, input, target):
        return F.cross_entropy(input, target, reduction=self.reduction)


class NLLLoss(_Loss):
    def forward(self, input, target):
        return F.nll_loss(input, target, reduction=self.reduction)


from . import init  # noqa: E402
from . import utils  # noqa: E402,F401  (torch.nn.utils)
