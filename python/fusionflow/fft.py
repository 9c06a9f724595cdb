"""torch.fft on complex tensors: fft, ifft, rfft, irfft, fft2, ifft2, rfft2, irfft2, fftn,
ifftn, rfftn, irfftn, fftshift, ifftshift, fftfreq, rfftfreq, with PyTorch's signatures,
defaults, scaling and gradients.

The one-dimensional transforms are the core's ff_fft_* (ops/fft.c), which work on the
(re, im) pair layout that torch.view_as_real gives; here they take and return complex
tensors as PyTorch's do, through view_as_real / view_as_complex (views: no copy). A real
input to fft/ifft is a complex one with a zero imaginary part, as in PyTorch. The
multi-dimensional transforms are the one-dimensional ones applied dim after dim (the DFT is
separable)."""
from . import _dtype
from ._complex import complex as _complex, view_as_complex, view_as_real
from ._lib import C, FusionFlowError
from ._tensor import as_tensor, wrap

__all__ = ["fft", "ifft", "rfft", "irfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn",
           "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_NORMS = {None: 0, "backward": 0, "forward": 1, "ortho": 2}


def _check(name, n, norm):
    if norm not in _NORMS:
        raise FusionFlowError(f"{name}: invalid normalization mode {norm!r}: "
                              "expected None, 'backward', 'forward' or 'ortho'")
    if n is not None and int(n) < 1:
        raise FusionFlowError(f"{name}: invalid number of data points ({int(n)}) specified")


def _pairs(x):
    """x's complex values in the pair layout: a complex tensor's view_as_real, a real one
    with a zero imaginary part (ints become float32, as PyTorch's fft promotes them)."""
    if x.dtype.is_complex:
        return view_as_real(x)
    if not x.dtype.is_floating_point or x.dtype in (_dtype.float16, _dtype.bfloat16):
        x = x.to(_dtype.float32)
    return view_as_real(_complex(x, x.new_zeros(())))


def _real(x):
    if x.dtype.is_complex:
        raise FusionFlowError("rfft expects a real input tensor, but got %s" % x.dtype.name.capitalize())
    if not x.dtype.is_floating_point or x.dtype in (_dtype.float16, _dtype.bfloat16):
        x = x.to(_dtype.float32)
    return x


def _out(t, out):
    return t if out is None else out.copy_(t)


def _signal(name, x):
    if x.ndim == 0:
        raise FusionFlowError(f"{name}: x is 0-d: a transform needs a signal dim")
    return x


def _c2c(fn, name, input, n, dim, norm, out):
    _check(name, n, norm)
    x = _pairs(_signal(name, as_tensor(input)))  # held: the C call borrows its pointer
    r = wrap(fn(x._ptr, -1 if n is None else int(n), int(dim), _NORMS[norm]))
    return _out(view_as_complex(r), out)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    return _c2c(C.ff_fft_fft, "fft", input, n, dim, norm, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    return _c2c(C.ff_fft_ifft, "ifft", input, n, dim, norm, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The n // 2 + 1 non-negative frequency bins of a real signal."""
    _check("rfft", n, norm)
    x = _real(as_tensor(input))
    r = wrap(C.ff_fft_rfft(x._ptr, -1 if n is None else int(n), int(dim), _NORMS[norm]))
    return _out(view_as_complex(r), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real signal of length n (default 2 (m - 1)) whose rfft is input; the imaginary
    parts of bin 0 and, n even, bin n / 2 are ignored, as PyTorch's."""
    _check("irfft", n, norm)
    x = _pairs(_signal("irfft", as_tensor(input)))
    r = wrap(C.ff_fft_irfft(x._ptr, -1 if n is None else int(n), int(dim), _NORMS[norm]))
    return _out(r, out)


# ---- n-dimensional: one dim after the other -----------------------------------------
def _dims(x, s, dim, default_last):
    """PyTorch's (s, dim) rules: dim defaults to the last len(s) dims, or the last
    default_last dims (None: every dim)."""
    if dim is None:
        if s is not None:
            dim = tuple(range(-len(s), 0))
        elif default_last is None:
            dim = tuple(range(x.ndim))
        else:
            dim = tuple(range(-default_last, 0))
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    dim = tuple(d % x.ndim if x.ndim else d for d in dim)
    if len(set(dim)) != len(dim):
        raise FusionFlowError("FFT dims must be unique, got %s" % (dim,))
    if s is not None and len(s) != len(dim):
        raise FusionFlowError("When given, dim and shape arguments must have the same length")
    return dim, (tuple(s) if s is not None else (None,) * len(dim))


def _c2cn(one, input, s, dim, norm, out, default_last):
    x = as_tensor(input)
    dims, sizes = _dims(x, s, dim, default_last)
    for d, n in zip(dims, sizes):
        x = one(x, n=n, dim=d, norm=norm)
    return _out(x, out)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2cn(fft, input, s, dim, norm, out, None)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2cn(ifft, input, s, dim, norm, out, None)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2cn(fft, input, s, dim, norm, out, 2)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2cn(ifft, input, s, dim, norm, out, 2)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """rfft over the last of the dims, then fft over the others (PyTorch's order)."""
    x = as_tensor(input)
    dims, sizes = _dims(x, s, dim, None)
    x = rfft(x, n=sizes[-1], dim=dims[-1], norm=norm)
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = fft(x, n=n, dim=d, norm=norm)
    return _out(x, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """ifft over all of the dims but the last, then irfft over the last (of length s[-1],
    default 2 (m - 1))."""
    x = as_tensor(input)
    dims, sizes = _dims(x, s, dim, None)
    for d, n in zip(dims[:-1], sizes[:-1]):
        x = ifft(x, n=n, dim=d, norm=norm)
    return _out(irfft(x, n=sizes[-1], dim=dims[-1], norm=norm), out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


# ---- helpers ---------------------------------------------------------------------------
def _shift(input, dim, sign):
    x = as_tensor(input)
    dims = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    shifts = tuple(sign * (x.shape[d] // 2) for d in dims)
    from ._functions import roll
    return roll(x, shifts, dims)


def fftshift(input, dim=None):
    """The zero frequency moved to the middle: a roll by n // 2 along each dim."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """fftshift's inverse: a roll by -(n // 2)."""
    return _shift(input, dim, -1)


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **kwargs):
    """[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d n)"""
    from ._factories import tensor
    n = int(n)
    vals = [k if k < (n + 1) // 2 else k - n for k in range(n)]
    r = tensor([v / (d * n) for v in vals], dtype=dtype or _dtype.float32, device=device)
    return r.requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False, **kwargs):
    """[0, 1, ..., n // 2] / (d n)"""
    from ._factories import tensor
    n = int(n)
    r = tensor([k / (d * n) for k in range(n // 2 + 1)], dtype=dtype or _dtype.float32, device=device)
    return r.requires_grad_(requires_grad)
