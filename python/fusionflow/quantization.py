"""int8 dynamic quantization, as torch.ao.quantization's quantize_dynamic.

    qmodel = fusionflow.quantization.quantize_dynamic(model, {nn.Linear}, dtype=fusionflow.qint8)

Every nn.Linear becomes a DynamicQuantizedLinear: its weight quantized once to s8 per output
channel (symmetric, PyTorch's per_channel_symmetric observer: scale = max|w| / 127.5), the
activation quantized per call to u8 from its own min and max, the product in s32 on the
backend's qmatmul entry (include/ff/quant.h; cpu, cpu_blas and opencl have it). Inference only.

Differences from torch 1.13, on purpose:
- weights are per channel by default (torch's default qconfig is per tensor; pass
  per_channel=False for that, or compare with torch's per_channel_dynamic_qconfig);
- reduce_range=True (7-bit activations, as fbgemm uses on x86) is the default, so results
  match torch's; our kernels never saturate, so reduce_range=False is safe and more precise.

There is no int8 dtype: a QuantizedTensor keeps its integer bytes in a uint8 Tensor (qint8 as
two's complement) beside its scheme; int_repr() gives the integers as int32.
"""
import copy
import ctypes
import json
import math

import numpy as np

from ._lib import C, check_status
from ._tensor import Tensor, wrap, tensor
from . import _dtype
from .nn.modules.module import Module

__all__ = ["qint8", "quint8", "QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "dequantize",
           "DynamicQuantizedLinear", "quantize_dynamic", "save", "load_into", "per_tensor_affine",
           "per_channel_affine", "per_channel_symmetric"]


class QDType:
    """A quantized dtype (fusionflow.qint8, fusionflow.quint8); code is include/ff/quant.h's ff_qdtype."""

    def __init__(self, name, code, lo, hi):
        self.name, self.code, self.lo, self.hi = name, code, lo, hi

    def __repr__(self):
        return "fusionflow." + self.name


quint8 = QDType("quint8", 0, 0, 255)
qint8 = QDType("qint8", 1, -128, 127)
_QDTYPES = {"quint8": quint8, "qint8": qint8}

per_tensor_affine = "per_tensor_affine"
per_channel_affine = "per_channel_affine"
per_channel_symmetric = "per_channel_symmetric"


def _qdtype(d):
    if isinstance(d, QDType):
        return d
    name = getattr(d, "name", None) or str(d).rsplit(".", 1)[-1]
    if name in _QDTYPES:
        return _QDTYPES[name]
    raise TypeError("fusionflow.quantization: dtype %r is not fusionflow.qint8 or fusionflow.quint8" % (d,))


def _f32(t):
    return t if isinstance(t, Tensor) else tensor(np.asarray(t, dtype=np.float32))


class QuantizedTensor:
    """The integer bytes (a uint8 Tensor) of a quantized tensor and its scheme."""

    def __init__(self, data, dtype, scale, zero_point, axis=None):
        self._data, self.dtype, self.axis = data, dtype, axis
        self._scale, self._zero_point = scale, zero_point  # numbers, or Tensors per channel

    @property
    def shape(self):
        return self._data.shape

    def size(self, *dim):
        return self._data.size(*dim)

    def dim(self):
        return self._data.dim()

    def qscheme(self):
        if self.axis is None:
            return per_tensor_affine
        zp = self._zero_point.numpy()
        return per_channel_symmetric if self.dtype is qint8 and not zp.any() else per_channel_affine

    def q_scale(self):
        self._per_tensor("q_scale")
        return float(self._scale)

    def q_zero_point(self):
        self._per_tensor("q_zero_point")
        return int(self._zero_point)

    def q_per_channel_scales(self):
        self._per_channel("q_per_channel_scales")
        return self._scale

    def q_per_channel_zero_points(self):
        self._per_channel("q_per_channel_zero_points")
        return self._zero_point

    def q_per_channel_axis(self):
        self._per_channel("q_per_channel_axis")
        return self.axis

    def _per_tensor(self, fn):
        if self.axis is not None:
            raise RuntimeError("%s: the tensor is quantized per channel (axis %d)" % (fn, self.axis))

    def _per_channel(self, fn):
        if self.axis is None:
            raise RuntimeError("%s: the tensor is quantized per tensor" % fn)

    def int_repr(self):
        """The integers as an int32 Tensor (torch gives int8/uint8; there is no int8 dtype here)."""
        b = self._data.numpy()
        return tensor((b.view(np.int8) if self.dtype is qint8 else b).astype(np.int32))

    def dequantize(self):
        if self.axis is None:
            return wrap(C.ff_dequantize_per_tensor(self._data._ptr, float(self._scale), int(self._zero_point),
                                                   self.dtype.code))
        return wrap(C.ff_dequantize_per_channel(self._data._ptr, self._scale._ptr, self._zero_point._ptr,
                                                self.axis, self.dtype.code))

    def __repr__(self):
        return "QuantizedTensor(%s, dtype=%r, qscheme=%s)" % (self.dequantize(), self.dtype, self.qscheme())


def quantize_per_tensor(input, scale, zero_point, dtype):
    """round(x / scale) + zero_point, clamped to the dtype's range (ties to even)."""
    qd = _qdtype(dtype)
    data = wrap(C.ff_quantize_per_tensor(input._ptr, float(scale), int(zero_point), qd.code))
    return QuantizedTensor(data, qd, float(scale), int(zero_point))


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    qd = _qdtype(dtype)
    scales = _f32(scales)
    zps = zero_points if isinstance(zero_points, Tensor) else tensor(np.asarray(zero_points, dtype=np.int64))
    data = wrap(C.ff_quantize_per_channel(input._ptr, scales._ptr, zps._ptr, int(axis), qd.code))
    return QuantizedTensor(data, qd, scales, zps, int(axis))


def dequantize(q):
    return q.dequantize()


class DynamicQuantizedLinear(Module):
    """torch.ao.nn.quantized.dynamic.Linear: y = dequant(quant(x) @ w_q.T) + bias with x
    quantized per call (u8, from its min and max) and w_q s8 per output channel.

    Non-finite values raise, as torch's (RuntimeError where torch raises RuntimeError or
    AssertionError): a NaN or inf weight when the module is made (from_float, so
    quantize_dynamic), a NaN or inf input in forward. The scales are amax / 127.5 of the
    values, so one non-finite value would otherwise become a plausible finite output: NaN
    is dropped by the min/max, and an inf scale quantizes every other value to 0."""

    def __init__(self, in_features, out_features, bias=True, dtype=qint8, reduce_range=True):
        super().__init__()
        if _qdtype(dtype) is not qint8:
            raise TypeError("DynamicQuantizedLinear: weights are fusionflow.qint8 only, got %r" % (dtype,))
        self.in_features, self.out_features, self.reduce_range = in_features, out_features, reduce_range
        self.register_buffer("weight_int8", tensor(np.zeros((out_features, in_features), np.uint8)))
        self.register_buffer("weight_scale", tensor(np.ones(out_features, np.float32)))
        self.register_buffer("bias_f32", tensor(np.zeros(out_features, np.float32)) if bias else None)

    @classmethod
    def from_float(cls, mod, per_channel=True, reduce_range=True):
        w = mod.weight.detach().float()
        _check_finite_weight(w)
        q = cls(mod.in_features, mod.out_features, mod.bias is not None, reduce_range=reduce_range)
        if not per_channel:  # torch's default observer: one scale for the whole weight
            amax = float(np.abs(w.numpy()).max()) if w.numel() else 0.0
            scale = max(float(np.float32(amax) / np.float32(127.5)), float(np.finfo(np.float32).eps))
            q.weight_int8 = quantize_per_tensor(w, scale, 0, qint8)._data
            q.weight_scale = tensor(np.full(mod.out_features, scale, np.float32)).to(w.device)
        else:
            wq, ws = ctypes.c_void_p(), ctypes.c_void_p()
            check_status(C.ff_quantize_weight_s8(w._ptr, wq, ws))
            q.weight_int8, q.weight_scale = wrap(wq.value), wrap(ws.value)
        if mod.bias is not None:
            q.bias_f32 = mod.bias.detach().float()
        return q

    def weight(self):
        """The quantized weight (torch's dynamic Linear has weight() too)."""
        zp = tensor(np.zeros(self.out_features, np.int64))
        return QuantizedTensor(self.weight_int8, qint8, self.weight_scale, zp, 0)

    def bias(self):
        return self.bias_f32

    def forward(self, x):
        _check_finite_input(x)
        b = self.bias_f32._ptr if self.bias_f32 is not None else None
        return wrap(C.ff_linear_dynamic_int8(x._ptr, self.weight_int8._ptr, self.weight_scale._ptr, b,
                                             bool(self.reduce_range)))

    def extra_repr(self):
        return "in_features=%d, out_features=%d, dtype=qint8, qscheme=per_channel_symmetric" % (
            self.in_features, self.out_features)


def _check_finite_weight(w):
    """The bias stays float, so a NaN there reaches the output as it is (as torch's)."""
    if not np.isfinite(w.numpy()).all():
        raise RuntimeError("quantize_dynamic: the Linear's weight %s has NaN or inf values; its int8 scales need "
                           "finite values" % (tuple(w.shape),))


def _check_finite_input(x):
    # x * 0 is 0 where x is finite and NaN where it is NaN or inf: its sum is NaN iff
    # x has a non-finite value (never a false alarm from an overflowing sum of x itself)
    if x.dtype.is_floating_point and not math.isfinite((x * 0).sum().item()):
        raise RuntimeError("DynamicQuantizedLinear.forward: the input %s (%s) has NaN or inf values, which int8 "
                           "dynamic quantization cannot represent (its scale comes from the input's min and max)"
                           % (tuple(x.shape), x.dtype.name))


def _is_linear(m, spec):
    from .nn import Linear
    types = tuple(t for t in spec if isinstance(t, type)) if spec else (Linear,)
    return isinstance(m, types) and isinstance(m, Linear)


def quantize_dynamic(model, qconfig_spec=None, dtype=qint8, mapping=None, inplace=False, *, per_channel=True,
                     reduce_range=True):
    """Replaces every nn.Linear (of the types in qconfig_spec, default {nn.Linear}) with a
    DynamicQuantizedLinear; returns the model (a deep copy unless inplace)."""
    if _qdtype(dtype) is not qint8:
        raise TypeError("quantize_dynamic: only dtype=fusionflow.qint8 is supported, got %r" % (dtype,))
    if mapping is not None:
        raise NotImplementedError("quantize_dynamic: custom mappings are not supported")
    if not inplace:
        model = copy.deepcopy(model)
    if _is_linear(model, qconfig_spec):
        return DynamicQuantizedLinear.from_float(model, per_channel, reduce_range)
    _swap(model, qconfig_spec, per_channel, reduce_range)
    return model


def _swap(module, spec, per_channel, reduce_range):
    for name, child in list(module._modules.items()):
        if child is None:
            continue
        if _is_linear(child, spec):
            module._modules[name] = DynamicQuantizedLinear.from_float(child, per_channel, reduce_range)
        else:
            _swap(child, spec, per_channel, reduce_range)


_META_KEY = "fusionflow.quantization"


def save(model, f):
    """The state_dict as safetensors, with each quantized Linear's scheme in the metadata:
    weight_int8 (s8 bytes as uint8), weight_scale and bias_f32 are ordinary tensors."""
    from ._io import save as _save
    scheme = {name: {"dtype": "qint8", "qscheme": per_channel_symmetric, "axis": 0,
                     "activation": "quint8 per tensor, dynamic", "reduce_range": m.reduce_range}
              for name, m in model.named_modules() if isinstance(m, DynamicQuantizedLinear)}
    _save(model.state_dict(), f, metadata={_META_KEY: json.dumps(scheme, sort_keys=True)})


def _read_scheme(text, f):
    """The {module name: scheme dict} that save() wrote; a malformed one raises load's
    MalformedFileError naming the file."""
    from ._io import malformed, _where
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as e:  # JSONDecodeError is a ValueError
        raise malformed(_where(f), _META_KEY, "not JSON (%s)" % e) from None
    if not isinstance(meta, dict) or not all(isinstance(s, dict) for s in meta.values()):
        raise malformed(_where(f), _META_KEY, "not an object of {module name: scheme object}")
    return meta


def load_into(model, f):
    """Loads a file written by save() into a model of the same structure (quantize_dynamic of
    the float model); checks the scheme in the metadata against the model."""
    from ._io import load as _load, load_metadata
    meta = _read_scheme(load_metadata(f).get(_META_KEY, "{}"), f)
    have = {name for name, m in model.named_modules() if isinstance(m, DynamicQuantizedLinear)}
    if set(meta) != have:
        raise ValueError("quantization.load_into: the file quantizes %s, the model %s" % (sorted(meta), sorted(have)))
    for name, s in meta.items():
        if s.get("dtype") != "qint8" or s.get("qscheme") != per_channel_symmetric:
            raise ValueError("quantization.load_into: %s has scheme %r; expected qint8 per_channel_symmetric" % (name, s))
        dict(model.named_modules())[name].reduce_range = bool(s.get("reduce_range", True))
    model.load_state_dict(_load(f))
    return model
