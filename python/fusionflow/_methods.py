"""Attaches the rest of torch.Tensor's surface to Tensor (as _shape.py attaches its part):
the methods of _methods_math/_linalg/_reduce/_index/_misc, their in-place `_` forms, in-place shape changes, in-place
random fills, predicates and properties, and clear errors for the sparse, quantized,
named-tensor and storage-level names (fusionflow tensors are dense, strided, unnamed, and
their storage is not exposed).

In-place rule, as the C in-place ops: compute out of place, then write into self with
_rebase_ (ff_inplace_result_: under autograd the op is recorded and self's history, or its
base's, is rebased onto the result), keeping self's dtype; a float result cannot go into an
integer tensor, as in PyTorch."""
import numpy as np

from . import _dtype
from . import _methods_math as M
from . import _methods_index, _methods_linalg, _methods_misc, _methods_reduce, _methods_stft
from ._factories import rand, cat, zeros
from ._grad_mode import is_grad_enabled
from ._tensor import Tensor, as_tensor

# torch.X(input, ...) forms of the methods that torch also has as functions; exported by
# fusionflow/__init__.py
TORCH_FUNCTIONS = [
    "absolute", "arccosh", "arcsinh", "arctanh", "multiply", "subtract", "negative", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "fix", "swapdims", "moveaxis", "ger", "divide", "true_divide", "positive",
    "split_with_sizes", "ravel", "narrow_copy", "fliplr", "flipud", "clamp_min", "clamp_max", "conj", "conj_physical",
    "resolve_conj", "resolve_neg", "angle", "adjoint", "addmm", "addmv", "addr", "addbmm", "baddbmm", "mv", "vdot",
    "hypot", "logaddexp", "logaddexp2", "erfc", "sinc", "deg2rad", "rad2deg", "logit", "i0", "mvlgamma", "xlogy",
    "float_power", "ldexp", "copysign", "signbit", "heaviside", "hardshrink", "nan_to_num", "isfinite", "isposinf",
    "isneginf", "isreal", "prelu", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "nextafter", "frexp",
    "igamma", "igammac", "nansum", "nanmean", "nanmedian", "quantile", "nanquantile", "logcumsumexp", "cummax",
    "cummin", "diff", "renorm", "cov", "corrcoef", "histogram", "unique_consecutive", "slogdet", "logdet",
    "cholesky_inverse", "cholesky_solve", "triangular_solve", "lu", "lu_solve", "pinverse", "matrix_exp", "rot90",
    "tensor_split", "hsplit", "vsplit", "dsplit", "take_along_dim", "masked_select", "argwhere", "diagflat",
    "diag_embed", "diagonal_scatter", "select_scatter", "slice_scatter", "index_fill", "index_reduce", "scatter_reduce",
    "is_nonzero", "is_same_size", "is_signed", "is_floating_point", "stft", "istft"]

__all__ = ["strided"] + TORCH_FUNCTIONS


class layout:
    """torch.layout: fusionflow has one, strided."""
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "fusionflow." + self.name


strided = layout("strided")

_COMPUTED = ["divide", "true_divide", "positive", "split_with_sizes", "unsafe_split_with_sizes", "ravel", "narrow_copy",
             "fliplr", "flipud", "clamp_min", "clamp_max", "conj", "conj_physical", "resolve_conj", "resolve_neg",
             "angle", "adjoint", "addmm", "addmv", "addr", "addbmm", "baddbmm", "mv", "vdot", "hypot", "logaddexp",
             "logaddexp2", "erfc", "sinc", "deg2rad", "rad2deg", "logit", "i0", "mvlgamma", "xlogy", "float_power",
             "ldexp", "copysign", "signbit", "heaviside", "hardshrink", "nan_to_num", "isfinite", "isposinf",
             "isneginf", "isreal", "prelu", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift", "nextafter",
             "frexp", "igamma", "igammac", "nansum", "nanmean", "nanmedian", "quantile", "nanquantile", "logcumsumexp",
             "cummax", "cummin", "diff", "sum_to_size", "renorm", "cov", "corrcoef", "histogram", "unique_consecutive",
             "slogdet", "logdet", "cholesky_inverse", "cholesky_solve", "triangular_solve", "lu", "lu_solve",
             "pinverse", "matrix_exp", "rot90", "tensor_split", "hsplit", "vsplit", "dsplit", "unfold",
             "take_along_dim", "masked_select", "argwhere", "diagflat", "diag_embed", "diagonal_scatter",
             "select_scatter", "slice_scatter", "put", "index_fill", "index_reduce", "scatter_reduce", "is_nonzero",
             "is_same_size", "is_signed", "new", "new_empty_strided", "to_dense", "pin_memory", "type", "apply_",
             "map_", "map2_", "byte", "short", "char", "conj_physical_", "resize", "resize_as", "as_subclass", "stft", "istft", "symeig",
             "lstsq", "solve", "eig", "reinforce"]

# in-place forms: name_ computes name out of place and writes it into self
_INPLACE = ["abs", "absolute", "acos", "acosh", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "addr", "arccos",
            "arccosh", "arcsin", "arcsinh", "arctan2", "arctan", "arctanh", "asin", "asinh", "atan2", "atan", "atanh",
            "baddbmm", "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
            "bitwise_xor", "ceil", "clamp_max", "clamp_min", "clip", "copysign", "cos", "cosh", "cumprod", "cumsum",
            "deg2rad", "digamma", "divide", "eq", "erf", "erfc", "erfinv", "exp2", "exp", "expm1", "fix", "float_power",
            "floor", "floor_divide", "fmod", "frac", "gcd", "ge", "greater", "greater_equal", "gt", "heaviside",
            "hypot", "i0", "igamma", "igammac", "index_fill", "index_reduce", "lcm", "ldexp", "le", "lerp", "less",
            "less_equal", "lgamma", "log10", "log1p", "log2", "log", "logical_and", "logical_not", "logical_or",
            "logical_xor", "logit", "lt", "multiply", "mvlgamma", "nan_to_num", "ne", "neg", "negative", "nextafter",
            "not_equal", "polygamma", "rad2deg", "reciprocal", "relu", "remainder", "renorm", "round", "rsqrt",
            "scatter", "scatter_add", "scatter_reduce", "sgn", "sigmoid", "sign", "sin", "sinc", "sinh", "sqrt",
            "square", "subtract", "tan", "tanh", "tril", "triu", "true_divide", "trunc", "xlogy", "put"]


def _inplace(name):
    def method(self, *args, **kwargs):
        # Under autograd, from a clone: an op composed of several (erfc = 1 - erf) may save
        # self's values deep in its graph, where the commit cannot see them to keep them
        out = getattr(self.clone() if self._needs_history(*args, *kwargs.values()) else self, name)(*args, **kwargs)
        if name == "float_power" and self.dtype is not _dtype.float64:
            raise RuntimeError("float_power_: the base given to float_power_ has dtype %s but the operation's "
                               "result requires dtype float64" % self.dtype.name)
        if out.dtype is not self.dtype:
            if out.dtype.is_floating_point and not self.dtype.is_floating_point:
                raise RuntimeError("%s_: result type %s can't be cast to the desired output type %s"
                                   % (name, out.dtype.name, self.dtype.name))
            out = out.to(self.dtype)
        if tuple(out.shape) != tuple(self.shape):
            raise RuntimeError("%s_: output with shape %s doesn't match the broadcast shape %s"
                               % (name, tuple(self.shape), tuple(out.shape)))
        return self._rebase_(out)
    method.__name__ = name + "_"
    return method


def _reshaping(name, fn):
    """An in-place shape change (squeeze_, t_, ...): self takes the view's header, keeping its
    Python identity; autograd records the view, as PyTorch does."""
    def method(self, *args, **kwargs):
        if self.requires_grad and self.is_leaf and is_grad_enabled():
            raise RuntimeError("%s: a leaf Variable that requires grad is being used in an in-place operation."
                               % name)
        out = fn(self, *args, **kwargs)
        if out is self:
            return self
        self._ptr, out._ptr = out._ptr, self._ptr  # out releases self's old header
        return self
    method.__name__ = name
    return method


def _resized(self, *sizes):
    if self.requires_grad:
        raise RuntimeError("resize_: cannot resize variables that require grad")
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    n = int(np.prod(size)) if size else 1
    flat = self.reshape(-1)
    have = flat.numel()
    if n <= have:
        flat = flat.narrow(0, 0, n)
    else:  # PyTorch leaves the new elements uninitialised; fusionflow hands out zeros
        flat = cat([flat, zeros(n - have, dtype=self.dtype, device=self.device)])
    return flat.reshape(size).clone()


_SHAPE_INPLACE = {
    "squeeze_": lambda self, dim=None: self.squeeze(dim),
    "unsqueeze_": lambda self, dim: self.unsqueeze(dim),
    "t_": lambda self: self.t(),
    "transpose_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    "swapaxes_": lambda self, axis0, axis1: self.transpose(axis0, axis1),
    "swapdims_": lambda self, dim0, dim1: self.transpose(dim0, dim1),
    "resize_": _resized,
    "resize_as_": lambda self, other: _resized(self, tuple(other.shape)),
}


# ---- in-place random fills (from the seeded global generator, like uniform_/normal_) ----
def _u(self, generator=None):
    return rand(*self.shape, dtype=_dtype.float64, device=self.device, generator=generator)


def _fill(self, values):
    return self.copy_(values.to(self.dtype))


def bernoulli_(self, p=0.5, *, generator=None):
    pr = as_tensor(p).to(_dtype.float64) if not isinstance(p, (int, float)) else p
    return _fill(self, (_u(self, generator) < pr))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    return _fill(self, ((_u(self, generator) - 0.5) * np.pi).tan() * sigma + median)


def exponential_(self, lambd=1.0, *, generator=None):
    return _fill(self, -(1 - _u(self, generator)).log() / lambd)


def geometric_(self, p, *, generator=None):
    return _fill(self, ((1 - _u(self, generator)).log() / np.log1p(-p)).ceil().clamp(min=1))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    from ._factories import randn
    z = randn(*self.shape, dtype=_dtype.float64, device=self.device, generator=generator)
    return _fill(self, (z * std + mean).exp())


def random_(self, from_=0, to=None, *, generator=None):
    """Integers uniform in [from, to); random_(to) is [0, to); random_() spans the dtype's
    mantissa (floats) or its range (integers), as PyTorch."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        to = {_dtype.float32: 2 ** 24 + 1, _dtype.float64: 2 ** 53 + 1, _dtype.float16: 2 ** 11 + 1,
              _dtype.bfloat16: 2 ** 8 + 1, _dtype.uint8: 256, _dtype.bool_: 2, _dtype.int32: 2 ** 31, _dtype.int8: 2 ** 7,
              _dtype.int16: 2 ** 15}.get(
            self.dtype, 2 ** 53)
    return _fill(self, (_u(self, generator) * (to - from_) + from_).floor())


def fill_diagonal_(self, fill_value, wrap=False):
    if self.ndim < 2:
        raise RuntimeError("fill_diagonal_: dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("fill_diagonal_: all dimensions of input must be of equal length")
    mask = np.zeros(self.shape, dtype=bool)
    n = min(self.shape)
    idx = np.arange(n)
    mask[(idx,) * self.ndim] = True
    if wrap and self.ndim == 2 and self.shape[0] > self.shape[1] + 1:
        step = self.shape[1] + 1  # numpy's fill_diagonal(wrap=True) rule, which torch follows
        flat = mask.reshape(-1)
        flat[::step] = True
    from ._factories import tensor
    return self.masked_fill_(tensor(mask, device=self.device), fill_value)


# ---- predicates and properties -----------------------------------------------------
_FALSE_PROPERTIES = ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_mkldnn", "is_mps", "is_ort",
                     "is_vulkan", "is_xpu", "is_ipu", "is_nested", "volatile"]
_FALSE_METHODS = ["is_conj", "is_neg", "is_inference", "is_pinned", "is_shared", "is_distributed"]


def _no_device(name):
    def method(self, *args, **kwargs):
        raise RuntimeError("%s: fusionflow has no %s backend; use .to(device) with a device "
                           "fusionflow.backends lists" % (name, name.upper()))
    method.__name__ = name
    return method


def has_names(self):
    return False


# ---- what dense tensors do not have: a clear error naming the method and why --------
_SPARSE = ["ccol_indices", "coalesce", "col_indices", "crow_indices", "dense_dim", "indices", "is_coalesced",
           "row_indices", "smm", "sparse_dim", "sparse_mask", "sparse_resize_", "sparse_resize_and_clear_",
           "sspaddmm", "to_sparse_bsc", "to_sparse_bsr", "to_sparse_csc",
           "to_sparse_csr", "values", "resize_as_sparse_", "to_mkldnn", "to_padded_tensor"]
_QUANTIZED = ["dequantize", "int_repr", "q_per_channel_axis", "q_per_channel_scales", "q_per_channel_zero_points",
              "q_scale", "q_zero_point", "qscheme"]
_NAMED = ["align_as", "align_to", "refine_names", "rename", "rename_"]
_STORAGE = ["storage", "storage_type", "set_", "is_set_to", "as_strided", "as_strided_", "as_strided_scatter",
            "record_stream", "share_memory_"]
_WHY = {"sparse": "fusionflow tensors are dense (strided) only; there are no sparse, mkldnn or nested layouts",
        "quantized": "fusionflow has no quantized tensors",
        "named": "fusionflow has no named tensors (names are always None)",
        "storage": "fusionflow does not expose tensor storage; use reshape/view/narrow/clone"}


def _unsupported(name, kind):
    def method(self, *args, **kwargs):
        raise NotImplementedError("Tensor.%s is a %s-tensor method: %s" % (name, kind, _WHY[kind]))
    method.__name__ = name
    return method


STUBS = _SPARSE + _QUANTIZED + _NAMED + _STORAGE  # by design, not computing


_SOURCES = (M, _methods_linalg, _methods_reduce, _methods_index, _methods_misc, _methods_stft)


def _find(name):
    for mod in _SOURCES:
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError("_methods: no module defines %s" % name)


def _attach():
    for alias, target in M.ALIASES.items():
        setattr(Tensor, alias, getattr(Tensor, target))
    for n in _COMPUTED:
        setattr(Tensor, n, _find(n))
    for n in _INPLACE:
        if not hasattr(Tensor, n + "_"):
            setattr(Tensor, n + "_", _inplace(n))
    for n, fn in _SHAPE_INPLACE.items():
        setattr(Tensor, n, _reshaping(n, fn))
    for f in (bernoulli_, cauchy_, exponential_, geometric_, log_normal_, random_, fill_diagonal_, has_names):
        setattr(Tensor, f.__name__, f)
    for n in _FALSE_PROPERTIES:
        setattr(Tensor, n, property(lambda self: False))
    for n in _FALSE_METHODS:
        setattr(Tensor, n, lambda self: False)
    for n in ("xpu", "ipu"):
        setattr(Tensor, n, _no_device(n))
    Tensor.H = property(M._H)
    Tensor.mH = property(M.adjoint)
    Tensor.layout = property(lambda self: strided)
    # x.real = v / x.imag = v write into the parts (the views share x's storage), as torch
    Tensor.real = property(M.real, lambda self, v: M.real(self).copy_(v))
    Tensor.imag = property(M.imag, lambda self, v: M.imag(self).copy_(v))
    Tensor.is_complex = lambda self: self.dtype.is_complex
    Tensor.name = property(lambda self: None)
    Tensor.names = property(lambda self: (None,) * self.ndim)
    for kind, names in (("sparse", _SPARSE), ("quantized", _QUANTIZED), ("named", _NAMED), ("storage", _STORAGE)):
        for n in names:
            setattr(Tensor, n, _unsupported(n, kind))


def _function(name):
    def f(input, *args, **kwargs):
        return getattr(as_tensor(input), name)(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = "torch.%s: Tensor.%s of input." % (name, name)
    return f


_attach()
for _n in TORCH_FUNCTIONS:
    globals()[_n] = _function(_n)
del _n
