"""F.conv1d/2d/3d and F.conv_transpose1d/2d/3d with torch 1.13's signatures, over the C ops
ff_conv / ff_conv_transpose (one call each: the backend's conv2d entries serve 1-d and 2-d,
the rest is the C composition). Imported at the end of nn/functional.py."""
import ctypes

from .._lib import C
from .._tensor import as_tensor, wrap


class _ConvOpts(ctypes.Structure):
    """ff_conv_opts (include/ff/ops.h)."""
    _fields_ = [("stride", ctypes.c_int64 * 3), ("padding", ctypes.c_int64 * 3), ("dilation", ctypes.c_int64 * 3),
                ("output_padding", ctypes.c_int64 * 3), ("groups", ctypes.c_int64)]


def _ntuple(v, n, name):
    """An int or a sequence of n ints, as n ints (torch's _single/_pair/_triple)."""
    if isinstance(v, int):
        return (int(v),) * n
    v = tuple(int(e) for e in v)
    if len(v) != n:
        raise ValueError("%s must be an int or %d ints, got %r" % (name, n, v))
    return v


def _opts(n, stride, padding, dilation, output_padding, groups):
    o = _ConvOpts()
    o.stride[:n] = _ntuple(stride, n, "stride")
    o.padding[:n] = _ntuple(padding, n, "padding")
    o.dilation[:n] = _ntuple(dilation, n, "dilation")
    o.output_padding[:n] = _ntuple(output_padding, n, "output_padding")
    o.groups = int(groups)
    return o


def _batched(input, n, name):
    """input with its batch dim (an unbatched [C, S...] gets one) and whether it had none."""
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s"
                           % (n + 1, n + 2, name, list(input.shape)))
    return (input.unsqueeze(0), True) if input.ndim == n + 1 else (input, False)


def _check_not_empty(x, weight, transposed, name):
    """torch's rules (RuntimeError): only the batch or the input channels may be empty (an
    empty plane has no windows), and the weight must have output channels: a transposed
    weight [C, O / groups, ...] none of its dims empty, a direct one [O, C / groups, ...] a
    nonzero O."""
    if any(d == 0 for d in x.shape[2:]):
        raise RuntimeError("%s: Only zero batch or zero channel inputs are supported, but got input shape: %s"
                           % (name, list(x.shape)))
    if (weight.numel() == 0) if transposed else (weight.shape[0] == 0):
        raise RuntimeError("%s: expected a weight with output channels and no empty dim, but got weight of "
                           "size %s" % (name, list(weight.shape)))


def _call(fn, input, weight, bias, opts, n, name):
    x, unbatched = _batched(input, n, name)
    _check_not_empty(x, weight, name.startswith("conv_transpose"), name)
    b = None if bias is None else as_tensor(bias)
    y = wrap(fn(x._ptr, weight._ptr, b._ptr if b is not None else None, ctypes.addressof(opts)))
    return y.squeeze(0) if unbatched else y


def _same_padding(input, weight, n, stride, dilation, name):
    """padding='same' as torch: d (k - 1) in all, half before; an odd total puts the extra
    element after, which F.pad adds, the rest is symmetric."""
    if _ntuple(stride, n, "stride") != (1,) * n:
        raise RuntimeError("padding='same' is not supported for strided convolutions")  # torch's type
    dil = _ntuple(dilation, n, "dilation")
    total = [dil[d] * (weight.shape[2 + d] - 1) for d in range(n)]
    extra = []
    for d in reversed(range(n)):  # F.pad order: the last dim first
        extra += [0, total[d] % 2]
    if any(extra):
        from .functional import pad
        input = pad(input, extra)
    return input, tuple(t // 2 for t in total)


def _conv(input, weight, bias, stride, padding, dilation, groups, n, name):
    if isinstance(padding, str):
        if padding == "valid":
            padding = 0
        elif padding == "same":
            input, padding = _same_padding(input, weight, n, stride, dilation, name)
        else:
            raise RuntimeError("Invalid padding string: %r" % (padding,))
    return _call(C.ff_conv, input, weight, bias, _opts(n, stride, padding, dilation, 0, groups), n, name)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, L] (or [C, L]), weight [O, C / groups, K] -> [N, O, LO]."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, H, W] (or [C, H, W]), weight [O, C / groups, KH, KW] -> [N, O, OH, OW]."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """input [N, C, D, H, W] (or [C, D, H, W]), weight [O, C / groups, KD, KH, KW]."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, n, name):
    if isinstance(padding, str):
        raise ValueError("%s: padding must be an int or a tuple, got %r" % (name, padding))
    o = _opts(n, stride, padding, dilation, output_padding, groups)
    return _call(C.ff_conv_transpose, input, weight, bias, o, n, name)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """input [N, C, L], weight [C, O / groups, K] -> [N, O, (L - 1) s - 2 p + d (K - 1) + op + 1]."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d")


def pad_mode(x, pads, mode):
    """x padded by pads ((before, after) per spatial dim, from the first) in padding_mode
    mode (reflect, replicate, circular): F.pad, which takes the last dim's pair first, as
    torch's conv modules do."""
    from .functional import pad
    flat = []
    for before, after in reversed(pads):
        flat += [before, after]
    return pad(x, flat, mode)
