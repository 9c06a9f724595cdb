"""The pooling functions of torch.nn.functional, with torch 1.13's signatures and options,
over the C ops of include/ff/pool.h: max/avg pooling in 1-3 D (ceil_mode, dilation,
count_include_pad, divisor_override, return_indices; max_pool2d and avg_pool2d here replace
nn/functional.py's, which refused the options) and adaptive average and max pooling."""
from ctypes import Structure, addressof, byref, c_bool, c_int64, c_void_p

from ..._lib import C
from ..._tensor import wrap

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d", "unfold", "fold", "grid_sample", "affine_grid"]


def _out_sizes(input, output_size, nd, name):
    """output_size: an int or nd entries, None keeping the input's size (as torch)."""
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise ValueError("%s: output_size must be an int or %d values, got %r" % (name, nd, output_size))
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError("%s: expected a %dD or %dD input, got %dD" % (name, nd + 1, nd + 2, input.ndim))
    spatial = input.shape[input.ndim - nd:]
    return (c_int64 * nd)(*[spatial[d] if s is None else int(s) for d, s in enumerate(sizes)])


def _adaptive_avg(input, output_size, nd, name):
    return wrap(C.ff_adaptive_avg_pool(input._ptr, nd, _out_sizes(input, output_size, nd, name)))


def _adaptive_max(input, output_size, return_indices, nd, name):
    sizes = _out_sizes(input, output_size, nd, name)
    if not return_indices:
        return wrap(C.ff_adaptive_max_pool(input._ptr, nd, sizes, None))
    ix = c_void_p()
    y = wrap(C.ff_adaptive_max_pool(input._ptr, nd, sizes, byref(ix)))
    return y, wrap(ix.value)


class _PoolOptions(Structure):
    """ff_pool_options (include/ff/pool.h)."""
    _fields_ = [("kernel", c_int64 * 3), ("stride", c_int64 * 3), ("padding", c_int64 * 3), ("dilation", c_int64 * 3),
                ("ceil_mode", c_bool), ("count_include_pad", c_bool), ("divisor_override", c_int64)]


def _ntuple(v, nd, name):
    t = (v,) * nd if isinstance(v, int) else tuple(v)
    if len(t) == 1:
        t = t * nd
    if len(t) != nd:
        raise ValueError("%s must be an int or %d values, got %r" % (name, nd, v))
    return [int(e) for e in t]


def _options(nd, name, kernel_size, stride, padding, dilation=1, ceil_mode=False, count_include_pad=True,
             divisor_override=None):
    k = _ntuple(kernel_size, nd, name + ": kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else _ntuple(stride, nd,
                                                                                              name + ": stride")
    o = _PoolOptions()
    o.kernel[:nd], o.stride[:nd] = k, s
    o.padding[:nd] = _ntuple(padding, nd, name + ": padding")
    o.dilation[:nd] = _ntuple(dilation, nd, name + ": dilation")
    o.ceil_mode, o.count_include_pad = bool(ceil_mode), bool(count_include_pad)
    o.divisor_override = 0 if divisor_override is None else int(divisor_override)
    if divisor_override is not None and o.divisor_override <= 0:
        raise ValueError("%s: divisor_override must be positive, got %r" % (name, divisor_override))
    return o


def _max_pool(nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    o = _options(nd, "max_pool%dd" % nd, kernel_size, stride, padding, dilation, ceil_mode)
    if not return_indices:
        return wrap(C.ff_max_pool(input._ptr, nd, addressof(o), None))
    ix = c_void_p()
    y = wrap(C.ff_max_pool(input._ptr, nd, addressof(o), byref(ix)))
    return y, wrap(ix.value)


def _avg_pool(nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    o = _options(nd, "avg_pool%dd" % nd, kernel_size, stride, padding, 1, ceil_mode, count_include_pad,
                 divisor_override)
    return wrap(C.ff_avg_pool(input._ptr, nd, addressof(o)))


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(input, output_size, 3, "adaptive_avg_pool3d")


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def _lp_pool(nd, input, norm_type, kernel_size, stride, ceil_mode):
    """torch's lp_pool: (sum of x^p over each window)^(1/p), through avg pooling."""
    from ..functional import relu
    k = _ntuple(kernel_size, nd, "lp_pool%dd: kernel_size" % nd)
    out = _avg_pool(nd, input.pow(norm_type), kernel_size, stride, 0, ceil_mode, True, None)
    area = 1
    for e in k:
        area *= e
    return (out.sign() * relu(out.abs())).mul(area).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def _check_unpool_input(name, input, nd):
    """torch's rule (RuntimeError): a [N, C, *spatial] or [C, *spatial] input whose first
    dim alone may be empty."""
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError("%s: expected a %dD or %dD (batch mode) input, got %s"
                           % (name, nd + 1, nd + 2, list(input.shape)))
    for d in range(1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError("%s(): Expected input to have non-zero size for non-batch dimensions, but got %s "
                               "with dimension %d being empty." % (name, list(input.shape), d))


def _max_unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    """torch's max_unpool: zeros of the output size with input written at indices (flat
    within each plane's spatial axes, as return_indices gives them); a repeated index keeps
    one value, as torch. Its gradient gathers at the indices."""
    from ..._sorting import scatter
    name = "max_unpool%dd" % nd
    k = _ntuple(kernel_size, nd, name + ": kernel_size")
    s = k if stride is None else _ntuple(stride, nd, name + ": stride")
    p = _ntuple(padding, nd, name + ": padding")
    spatial, lead = tuple(input.shape[input.ndim - nd:]), tuple(input.shape[:input.ndim - nd])
    if output_size is None:
        out = [(spatial[d] - 1) * s[d] - 2 * p[d] + k[d] for d in range(nd)]
    else:
        out = [int(e) for e in tuple(output_size)[-nd:]]
    _check_unpool_input(name, input, nd)
    n = 1
    for e in out:
        n *= e
    plane = 1
    for e in spatial:
        plane *= e
    # explicit sizes: -1 cannot be inferred when the batch is empty
    x, ix = input.reshape(*lead, plane), indices.reshape(*lead, plane)
    zeros = x.new_zeros(*lead, n)
    y = scatter(zeros, -1, ix, x.detach())
    if x.requires_grad:  # torch's gradient gathers at every index, repeated ones too: scatter_add's
        added = zeros.scatter_add(-1, ix, x)
        y = y + (added - added.detach())
    return y.reshape(*lead, *out)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


class _UnfoldParams(Structure):
    """ff_unfold_params (include/ff/unfold.h)."""
    _fields_ = [("kernel", c_int64 * 2), ("dilation", c_int64 * 2), ("padding", c_int64 * 2), ("stride", c_int64 * 2)]


def _unfold_params(name, kernel_size, dilation, padding, stride):
    p = _UnfoldParams()
    p.kernel[:] = _ntuple(kernel_size, 2, name + ": kernel_size")
    p.dilation[:] = _ntuple(dilation, 2, name + ": dilation")
    p.padding[:] = _ntuple(padding, 2, name + ": padding")
    p.stride[:] = _ntuple(stride, 2, name + ": stride")
    return p


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch's F.unfold (im2col): [N, C, H, W] (or [C, H, W]) -> [N, C kh kw, L]."""
    p = _unfold_params("unfold", kernel_size, dilation, padding, stride)
    unbatched = input.ndim == 3
    x = input.unsqueeze(0) if unbatched else input
    y = wrap(C.ff_unfold(x._ptr, addressof(p)))
    return y.squeeze(0) if unbatched else y


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch's F.fold (col2im): [N, C kh kw, L] (or [C kh kw, L]) -> [N, C, H, W]."""
    p = _unfold_params("fold", kernel_size, dilation, padding, stride)
    out = (c_int64 * 2)(*_ntuple(output_size, 2, "fold: output_size"))
    unbatched = input.ndim == 2
    x = input.unsqueeze(0) if unbatched else input
    y = wrap(C.ff_fold(x._ptr, out, addressof(p)))
    return y.squeeze(0) if unbatched else y


_MODES, _PADDINGS = {"bilinear": 0, "nearest": 1}, {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """torch's F.grid_sample (bilinear / nearest / bicubic; zeros / border / reflection): 4-D
    bilinear and nearest by the C op, 5-D input and bicubic composed in resample.py.
    align_corners=None means False, as torch (which warns)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("grid_sample: mode must be 'bilinear', 'nearest' or 'bicubic', got %r" % (mode,))
    if padding_mode not in _PADDINGS:
        raise ValueError("grid_sample: padding_mode must be zeros, border or reflection, got %r" % (padding_mode,))
    if mode == "bicubic" or input.ndim != 4:
        from . import resample
        return resample.grid_sample(input, grid, mode, padding_mode, bool(align_corners))
    return wrap(C.ff_grid_sample(input._ptr, grid._ptr, _MODES[mode], _PADDINGS[padding_mode], bool(align_corners)))


def _check_affine_grid(theta, size):
    """PyTorch's checks, with its exception types: theta floating, [N, 2, 3] for a 4-D size or
    [N, 3, 4] for a 5-D one, every size positive."""
    if not theta.dtype.is_floating_point:
        raise ValueError("affine_grid: expected theta to have a floating point type, got %s" % (theta.dtype,))
    if len(size) not in (4, 5):
        raise NotImplementedError("affine_grid: only 4-D and 5-D sizes are supported (2-D and 3-D images), "
                                  "got size %r" % (list(size),))
    rows = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (rows, rows + 1):
        raise ValueError("affine_grid: expected a batch of %d-D affine matrices of shape Nx%dx%d for size %r, "
                         "got theta %s" % (rows, rows, rows + 1, list(size), tuple(theta.shape)))
    if min(size) <= 0:
        raise ValueError("affine_grid: expected a non-zero, positive output size, got %r" % (list(size),))
    if theta.shape[0] != size[0]:
        raise RuntimeError("affine_grid: theta holds %d matrices but size asks for N = %d" % (theta.shape[0], size[0]))


def affine_grid(theta, size, align_corners=None):
    """torch's F.affine_grid: theta [N, 2, 3] for size [N, C, H, W] (the C op), theta [N, 3, 4]
    for size [N, C, D, H, W] (composed in resample.py)."""
    _check_affine_grid(theta, size)
    if len(size) == 5:
        from . import resample
        return resample.affine_grid_3d(theta, size, bool(align_corners))
    return wrap(C.ff_affine_grid(theta._ptr, (c_int64 * 4)(*[int(e) for e in size]), bool(align_corners)))
