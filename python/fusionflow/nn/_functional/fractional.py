"""Fractional max pooling (Graham, 2014) as torch's: per (batch, channel) plane, window starts
along each axis from one uniform sample u, start_i = int((i + u) alpha) - int(u alpha) with
alpha = (in - k) / (out - 1) computed in the input's dtype (the last start is in - k); the
max of each k-window, the first maximum in scan order. Composed from gather (so autograd
comes with it); the starts are host arithmetic on the samples."""
import numpy as np

from ..._factories import rand, tensor
from ..._dtype import int64

__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]


def _tuple(v, nd, name, what):
    t = tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd
    if len(t) != nd:
        raise ValueError("%s: %s must be an int or a tuple of %d, got %r" % (name, what, nd, v))
    return t


def _starts(u, size, out, k, np_dtype):
    """torch's generate_intervals for samples u [P] -> starts [P, out]."""
    seq = np.empty(u.shape + (out,), np.int64)
    if out > 1:
        alpha = np_dtype(size - k) / np_dtype(out - 1)
        i = np.arange(out - 1, dtype=np_dtype)
        seq[:, :-1] = ((i[None, :] + u[:, None]) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)[:, None]
    if out > 0:
        seq[:, -1] = size - k
    return seq


_AXIS_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _check_fits(nd, name, input, spatial, k, out):
    """torch's errors (RuntimeError): only the batch may be empty, and each window of k
    starting at the last of out starts must lie inside the input. An output size of 0 gives
    an empty result, as torch."""
    for d in range(1, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError("%s(): Expected input to have non-zero size for non-batch dimensions, but got %s "
                               "with dimension %d being empty." % (name, list(input.shape), d))
    for axis, s, kk, o in zip(_AXIS_NAMES[nd], spatial, k, out):
        if kk < 1 or o < 0:
            raise RuntimeError("%s(): kernel_size must be positive and output_size non-negative, got kernel %s and "
                               "output size %s" % (name, k, out))
        if o + kk - 1 > s:
            raise RuntimeError("%s(): pool %s %d too large relative to input %s %d (output size %s, input %s)"
                               % (name, axis, kk, axis, s, out, list(input.shape)))


def _fractional(nd, name, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    if input.ndim not in (nd + 1, nd + 2):
        raise ValueError("%s: expected a %dD or %dD input, got %dD" % (name, nd + 1, nd + 2, input.ndim))
    unbatched = input.ndim == nd + 1
    x = input.unsqueeze(0) if unbatched else input
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    k = _tuple(kernel_size, nd, name, "kernel_size")
    if output_size is None:
        if output_ratio is None:
            raise ValueError("%s requires specifying either an output_size or an output_ratio" % name)
        ratio = _tuple(output_ratio, nd, name, "output_ratio")
        out = tuple(int(s * r) for s, r in zip(spatial, ratio))
    else:
        out = _tuple(output_size, nd, name, "output_size")
    _check_fits(nd, name, input, spatial, k, out)
    samples = _random_samples if _random_samples is not None else rand(n, c, nd, dtype=x.dtype, device=x.device)
    if tuple(samples.shape) != (n, c, nd):
        raise ValueError("%s: _random_samples must be [%d, %d, %d], got %s" % (name, n, c, nd, tuple(samples.shape)))
    np_dtype = np.float64 if x.dtype.name == "float64" else np.float32
    u = samples.to(x.dtype).numpy().astype(np_dtype).reshape(n * c, nd)
    # torch reads the 2-D samples as (W, H) and the 3-D ones as (T, H, W)
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_starts(u[:, order[d]], spatial[d], out[d], k[d], np_dtype) for d in range(nd)]
    strides = np.cumprod((1,) + spatial[::-1])[::-1][1:]  # row-major strides of the spatial dims
    flat = np.zeros((n * c,) + out + k, np.int64)
    for d in range(nd):
        shape = [n * c] + [1] * (2 * nd)
        shape[1 + d] = out[d]
        pos = starts[d].reshape(shape)
        shape_k = [1] * (1 + 2 * nd)
        shape_k[1 + nd + d] = k[d]
        flat = flat + (pos + np.arange(k[d]).reshape(shape_k)) * strides[d]
    nwin = int(np.prod(out))
    idx = tensor(flat.reshape(n, c, nwin * int(np.prod(k))), dtype=int64, device=x.device)
    # explicit sizes: -1 cannot be inferred when the batch is empty
    vals = x.reshape(n, c, int(np.prod(spatial))).gather(2, idx).reshape(n, c, nwin, int(np.prod(k)))
    arg = vals.argmax(-1, keepdim=True)
    y = vals.gather(-1, arg).reshape((n, c) + out)
    if unbatched:
        y = y.squeeze(0)
    if not return_indices:
        return y
    ind = idx.reshape(n, c, nwin, int(np.prod(k))).gather(-1, arg).reshape((n, c) + out)
    return y, (ind.squeeze(0) if unbatched else ind)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(2, "fractional_max_pool2d", input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    return _fractional(3, "fractional_max_pool3d", input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)
