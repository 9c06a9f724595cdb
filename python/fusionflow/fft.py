"""torch.fft's one-dimensional transforms, fft, ifft, rfft and irfft, on the core's
ff_fft_* (ops/fft.c), with PyTorch's signatures, defaults, scaling and gradients.

FusionFlow has no complex dtype. Complex values are real tensors whose last dim has size 2
(re, im), exactly what torch.view_as_real gives, so where PyTorch takes or returns a
complex tensor of shape S, these take or return a real one of shape S + (2,):

    torch.view_as_real(torch.fft.fft(torch.view_as_complex(x)))  ==  fusionflow.fft.fft(x)

`dim` counts the complex tensor's dims (the trailing 2 is not one of them: -1 is the dim
before it). fft, ifft and irfft always read their input that way and refuse a last dim
other than 2; a real signal goes to rfft, or gets a zero imaginary part
(`fusionflow.stack([x, fusionflow.zeros_like(x)], -1)`) for fft. There is no guessing from
the shape: a real tensor whose last dim happens to be 2 is read as complex. The other
differences from PyTorch are listed in docs/semantics.md ("FFT")."""
from ._lib import C, FusionFlowError
from ._tensor import as_tensor, wrap

__all__ = ["fft", "ifft", "rfft", "irfft"]

_NORMS = {None: 0, "backward": 0, "forward": 1, "ortho": 2}


def _call(fn, name, input, n, dim, norm):
    if norm not in _NORMS:
        raise FusionFlowError(f"{name}: invalid normalization mode {norm!r}: "
                              "expected None, 'backward', 'forward' or 'ortho'")
    if n is not None and int(n) < 1:
        raise FusionFlowError(f"{name}: invalid number of data points ({int(n)}) specified")
    x = as_tensor(input)  # held: the C call borrows its pointer
    return wrap(fn(x._ptr, -1 if n is None else int(n), int(dim), _NORMS[norm]))


def fft(input, n=None, dim=-1, norm=None):
    """torch.fft.fft on the complex layout (last dim 2); returns the same layout."""
    return _call(C.ff_fft_fft, "fft", input, n, dim, norm)


def ifft(input, n=None, dim=-1, norm=None):
    """torch.fft.ifft on the complex layout (last dim 2); returns the same layout."""
    return _call(C.ff_fft_ifft, "ifft", input, n, dim, norm)


def rfft(input, n=None, dim=-1, norm=None):
    """torch.fft.rfft of a real tensor: n // 2 + 1 bins in the complex layout."""
    return _call(C.ff_fft_rfft, "rfft", input, n, dim, norm)


def irfft(input, n=None, dim=-1, norm=None):
    """torch.fft.irfft of the complex layout (last dim 2): a real tensor of length n
    (default 2 * (m - 1)); the imaginary parts of bin 0 and, n even, bin n / 2 are ignored."""
    return _call(C.ff_fft_irfft, "irfft", input, n, dim, norm)
