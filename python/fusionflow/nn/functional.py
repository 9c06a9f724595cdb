"""fusionflow.nn.functional: stateless ops, as torch.nn.functional."""
from .._lib import C
from .._tensor import Tensor, as_tensor, wrap
from .. import _dtype
from .._args import int_arg

__all__ = ["linear", "relu", "tanh", "sigmoid", "gelu", "silu", "softplus", "softmax", "log_softmax", "dropout",
           "mse_loss", "l1_loss", "cross_entropy", "nll_loss", "one_hot", "embedding", "layer_norm", "pad",
           "interpolate", "upsample"]


_NO_ACT = -1  # FF_LINEAR_NO_ACT


def linear(x, weight, bias=None):
    x, weight = as_tensor(x), as_tensor(weight)
    b = as_tensor(bias) if bias is not None else None
    if weight.ndim != 2 or x.ndim == 0 or (b is not None and b.ndim != 1):
        y = x @ weight.mT if weight.ndim == 2 else x @ weight  # torch's other forms: matmul's rules and errors
        if bias is None:
            return y
        ac = C.ff_autocast_get()
        if ac != _dtype.float32.code and y.dtype.code == ac and b.dtype != y.dtype:
            b = b.to(y.dtype)  # under autocast the output stays in the autocast dtype, as ff_linear_act's rule
        return y + b
    # one C op: the backend's linear entry in inference; matmul and add (autocast's bias rule) with autograd
    return wrap(C.ff_linear_act(x._ptr, weight._ptr, b._ptr if b is not None else None, _NO_ACT))


def relu(x, inplace=False):
    if not inplace:  # the common case without the import and the closure below (issue 49)
        return x.relu()
    from ._functional.activation import _act  # the in-place rule of every activation
    return _act(x, inplace, lambda t: t.relu())


def tanh(x):
    return x.tanh()


def sigmoid(x):
    return x.sigmoid()


def gelu(x, approximate="none"):
    return x.gelu(approximate)


def silu(x, inplace=False):
    y = x.silu()
    if inplace:
        x.copy_(y)
        return x
    return y


def softplus(x, beta=1.0, threshold=20.0):
    if beta == 1 and threshold == 20:
        return x.softplus()  # the core op has torch's default beta and threshold
    from ._functional.activation import softplus as composed
    return composed(x, beta, threshold)


def _softmax_input(x, dim, dtype):
    if dtype is not None:
        x = x.to(dtype)
    if dim is None:  # torch's legacy implicit dim
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return x, dim


def softmax(x, dim=None, _stacklevel=3, dtype=None):
    x, dim = _softmax_input(x, dim, dtype)
    return x.softmax(dim)


def log_softmax(x, dim=None, _stacklevel=3, dtype=None):
    x, dim = _softmax_input(x, dim, dtype)
    return x.log_softmax(dim)


def dropout(x, p=0.5, training=True, inplace=False, seed=None):
    if not 0.0 <= p <= 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %g" % p)
    if not training or p == 0:
        return x
    if seed is None:
        from .._generator import op_seed
        seed = op_seed()
    y = wrap(C.ff_dropout(x._ptr, float(p), bool(training), int(seed)))
    if inplace:
        x.copy_(y)
        return x
    return y


def _legacy_reduction(size_average, reduce, reduction):
    from ._functional.classification import _legacy_reduction as fold
    return fold(size_average, reduce, reduction)


def _reduce(loss, reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError("%r is not a valid value for reduction (mean, sum, none)" % (reduction,))
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    target = as_tensor(target, dtype=input.dtype)
    if reduction == "mean":
        return wrap(C.ff_mse_loss(input._ptr, target._ptr))
    return _reduce((input - target).square(), reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce((input - as_tensor(target, dtype=input.dtype)).abs(), reduction)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """The C layer norm: statistics of f32 inputs in f64, so huge values do not overflow."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    n = len(shape)
    if n > x.ndim or tuple(x.shape[x.ndim - n:]) != shape:
        raise ValueError("layer_norm: normalized_shape %s is not the input's last dims (input %s)"
                         % (list(shape), list(x.shape)))
    w = None if weight is None else as_tensor(weight)
    b = None if bias is None else as_tensor(bias)
    return wrap(C.ff_layer_norm(x._ptr, n, w._ptr if w is not None else None,
                                b._ptr if b is not None else None, float(eps)))


def pad(x, pad, mode="constant", value=None):
    """torch.nn.functional.pad order: pairs for the last dim first. 'reflect', 'replicate'
    and 'circular' gather with index_select (nn/_functional/shape.py)."""
    import ctypes
    if isinstance(mode, (int, float)) and value is None:  # the old pad(x, pad, value) call
        mode, value = "constant", mode
    if mode != "constant":
        if value:
            raise ValueError("Padding mode \"%s\"\" doesn't take in value argument" % mode)
        if mode not in ("reflect", "replicate", "circular"):
            raise NotImplementedError("pad: mode %r (constant, reflect, replicate, circular are offered)" % (mode,))
        from ._functional.shape import pad_index
        return pad_index(x, pad, mode)
    value = 0.0 if value is None else value
    nd = x.ndim
    if len(pad) % 2 or len(pad) // 2 > nd:
        raise ValueError("pad needs an even number of entries, at most 2 * ndim")
    pads = [0] * (2 * nd)
    for i in range(len(pad) // 2):
        d = nd - 1 - i
        pads[2 * d], pads[2 * d + 1] = int_arg("pad", "pad", pad[2 * i]), int_arg("pad", "pad", pad[2 * i + 1])
    arr = (ctypes.c_int64 * len(pads))(*pads)
    return wrap(C.ff_pad(x._ptr, arr, float(value)))


# ---- batch norm (the C op; PyTorch's argument names) -------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """PyTorch's F.batch_norm: training normalizes with the batch statistics and updates the
    running pair in place (unbiased variance); eval uses the running pair."""
    args = [None if t is None else as_tensor(t) for t in (running_mean, running_var, weight, bias)]
    if training and input.numel() == 0:  # torch: no statistics, an empty result (ff_batch_norm refuses it)
        from ._functional.normalization import affine_of_empty
        return affine_of_empty(input, args[2], args[3])
    ptrs = [t._ptr if t is not None else None for t in args]
    return wrap(C.ff_batch_norm(input._ptr, ptrs[0], ptrs[1], ptrs[2], ptrs[3], bool(training),
                                0.1 if momentum is None else float(momentum), float(eps)))


# ---- more losses and norms (compositions; PyTorch's definitions) ---------------------------------
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)), each log clamped at -100, and PyTorch's gradient
    (p - t) / max(p (1 - p), 1e-12), not the clamped logs' (0 where a log is clamped): a
    saturated sigmoid (p = 1 with t = 0) still pushes back, as in PyTorch. The target (often
    a network's output: distillation, GANs) gets PyTorch's log(1 - p) - log(p), unclamped.
    Each gradient g is attached as a term that is 0 in value, so the value is exact; it is
    not differentiable twice (PyTorch's is)."""
    from .._grad_mode import is_grad_enabled, no_grad
    from ._functional.classification import _not_differentiable
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _not_differentiable("binary_cross_entropy", "weight", weight)
    p, t = input, as_tensor(target)
    grad_on = is_grad_enabled()
    with no_grad():
        loss = -(t * p.log().clamp(min=-100.0) + (1 - t) * (1 - p).log().clamp(min=-100.0))
        g = (p - t) / (p * (1 - p)).clamp(min=1e-12) if p.requires_grad and grad_on else None
        gt = (1 - p).log() - p.log() if t.requires_grad and grad_on else None
    if g is not None:  # finite (the clamped denominator): the plain form will do
        gp = g * p
        loss = loss + (gp - gp.detach())
    if gt is not None:
        loss = _with_gradient(loss, t, gt)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _with_gradient(value, x, g):
    """value plus a term that is 0 in value and has the elementwise gradient g w.r.t. x. Where
    g is +-inf (BCE's target gradient at p = 0 or 1), (x - x) * g would be nan in value, so
    sign(g) * sqrt(x - x) stands in there: 0 in value, slope +-inf; the where() on x keeps
    sqrt's 0 / 0 off the finite entries."""
    from .._tensor import where
    held = x.detach()
    inf = g.isinf()
    finite = (x - held) * where(inf, held * 0, g)  # not g * 0: inf * 0 is nan
    at_inf = g.sign() * (where(inf, x, held) - held).sqrt()
    return value + finite + at_inf


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    """input: log-probabilities; target: probabilities (or log ones with log_target)."""
    t = as_tensor(target)
    if log_target:
        loss = t.exp() * (t - input)
    else:  # t log t, with 0 log 0 = 0 (PyTorch's xlogy): t times a finite log of t
        tiny = 1e-38 if t.dtype is _dtype.float32 else 1e-300
        loss = t * t.clamp(min=tiny).log() - t * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0]
    return _reduce(loss, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _legacy_reduction(size_average, reduce, reduction)
    d = (input - target).abs()
    if beta == 0:
        loss = d
    else:
        loss = Tensor.where(0.5 * d * d / beta, d < beta, d - 0.5 * beta)
    return _reduce(loss, reduction)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes over each group of C / num_groups channels (and the spatial dims)."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise ValueError("group_norm: %d channels do not split into %d groups" % (c, num_groups))
    rest = 1
    for d in input.shape[2:]:
        rest *= d
    if n * (c // num_groups) * rest == 1:  # torch's test (in eval too): its statistics span N, not one sample
        raise ValueError("group_norm: Expected more than 1 value per channel when training, got input size %s "
                         "with %d groups" % (list(input.shape), num_groups))
    x = input.reshape(n, num_groups, (c // num_groups) * rest)  # explicit: -1 is ambiguous for n = 0
    y = layer_norm(x, (x.shape[-1],), None, None, eps).reshape(input.shape)
    shape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """F.interpolate for 'nearest', 'linear' (3-d), 'bilinear' (4-d) and 'trilinear' (5-d)
    input, with PyTorch's size / scale_factor / align_corners rules; differentiable. 'bicubic',
    'area', 'nearest-exact' and antialias come from _functional/resample.py."""
    import ctypes
    import math
    from ._functional import resample
    x = as_tensor(input)
    ns = x.ndim - 2
    linear = {"linear": 1, "bilinear": 2, "trilinear": 3}
    composed = mode in ("bicubic", "area", "nearest-exact") or antialias
    if not composed and mode != "nearest" and linear.get(mode) != ns:
        raise NotImplementedError("interpolate: mode %r on %d-d input is not offered (nearest, linear on 3-d, "
                                  "bilinear on 4-d, trilinear on 5-d are)" % (mode, x.ndim))
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined (and not both)")
    scales = None
    if size is not None:
        out = [int(size)] * ns if isinstance(size, int) else [int(v) for v in size]
    else:
        sf = [float(scale_factor)] * ns if isinstance(scale_factor, (int, float)) else [float(v) for v in scale_factor]
        if not all(math.isfinite(v) and v > 0 for v in sf):
            raise ValueError("interpolate: scale_factor must be finite and > 0, got %r" % (scale_factor,))
        out = [int(math.floor(x.shape[2 + k] * sf[k])) for k in range(ns)]
        if not recompute_scale_factor:
            scales = [1.0 / v for v in sf]
    if len(out) != ns:
        raise ValueError("interpolate: %d sizes for %d spatial dims" % (len(out), ns))
    if composed:  # area always works from the output size, as PyTorch (which recomputes the scale)
        return resample.resize(x, out, None if mode == "area" else scales, mode, align_corners, antialias)
    sz = (ctypes.c_int64 * ns)(*out)
    sc = (ctypes.c_double * ns)(*scales) if scales else None
    return wrap(C.ff_interpolate(x._ptr, ns, sz, sc, 0 if mode == "nearest" else 1, bool(align_corners)))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


# ---- the families in nn/_functional/ (imported last: they use the helpers above) ----------------
from ._functional.classification import *  # noqa: E402,F401,F403
from ._functional.activation import *  # noqa: E402,F401,F403
from ._functional.loss import *  # noqa: E402,F401,F403
from ._functional.distance import *  # noqa: E402,F401,F403
from ._functional.sparse import *  # noqa: E402,F401,F403
from ._functional.shape import *  # noqa: E402,F401,F403
from ._functional.dropout import *  # noqa: E402,F401,F403
from ._functional.normalization import *  # noqa: E402,F401,F403
from ._functional.ctc import *  # noqa: E402,F401,F403
from ._functional.attention import *  # noqa: E402,F401,F403
from ._functional import activation as _a, classification as _c, loss as _l, distance as _d, sparse as _s, \
    shape as _sh, dropout as _dr, normalization as _n, ctc as _ctc, attention as _at  # noqa: E402
__all__ += [n for m in (_a, _c, _l, _d, _s, _sh, _dr, _n, _ctc, _at) for n in m.__all__
            if n not in __all__ and n != "pad_index"]
del _a, _c, _l, _d, _s, _sh, _dr, _n, _ctc, _at
from ._functional_conv import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d  # noqa: E402,F401,E501
from ._functional.pooling import *  # noqa: E402,F401,F403  (pooling family)
from ._functional import pooling as _p  # noqa: E402
__all__ += [n for n in _p.__all__ if n not in __all__]
from ._functional.with_indices import *  # noqa: E402,F401,F403  (the *_with_indices pools, conv_tbc)
from ._functional.fractional import *  # noqa: E402,F401,F403  (fractional max pooling)
from ._functional import with_indices as _wi, fractional as _fr  # noqa: E402
__all__ += _wi.__all__ + _fr.__all__
del _p, _wi, _fr
from ._functional.mha import multi_head_attention_forward  # noqa: E402,F401  (nn.MultiheadAttention's)
__all__ += ["multi_head_attention_forward"]


def _name_errors():
    """Every public function here names itself in its errors (fusionflow._args.named)."""
    import types
    from .._args import named
    g = globals()
    ours = (__name__, __name__.rpartition(".")[0] + "._functional")  # this file and nn/_functional/
    for n, f in list(g.items()):
        if isinstance(f, types.FunctionType) and not n.startswith("_") and f.__module__.startswith(ours):
            g[n] = named(f)


_name_errors()
