"""Tensor.stft / istft, composed of index_select (padding, framing), rfft/irfft and
index_add (overlap-add), so differentiable; attached by _methods.py. stft returns a complex
[..., freq, frames] with return_complex=True, its view_as_real [..., freq, frames, 2] with
return_complex=False (PyTorch 1.13 insists that a real input names one); istft takes
either."""
import numpy as np

from . import _dtype
from ._factories import ones, tensor, zeros


def _window(window, win_length, n_fft, like):
    w = ones(win_length, dtype=like.dtype, device=like.device) if window is None else window.to(like.dtype)
    if w.shape[0] != win_length:
        raise RuntimeError("stft: expected a 1-D window of size %d, got shape %s" % (win_length, tuple(w.shape)))
    if win_length < n_fft:  # centred in n_fft, as torch
        left = (n_fft - win_length) // 2
        w = zeros(n_fft, dtype=like.dtype, device=like.device).index_copy(
            0, tensor(np.arange(left, left + win_length, dtype=np.int64), device=like.device), w)
    return w


def _pad_last(x, pad, mode):
    n = x.shape[-1]
    i = np.arange(-pad, n + pad)
    if mode == "reflect":
        if pad >= n:
            raise RuntimeError("stft: reflect padding of %d needs a signal longer than that, got %d" % (pad, n))
        i = np.abs(i)
        i = np.where(i >= n, 2 * (n - 1) - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, n - 1)
    elif mode == "constant":
        z = zeros(x.shape[:-1] + (pad,), dtype=x.dtype, device=x.device)
        from ._factories import cat
        return cat([z, x, z], -1)
    else:
        raise ValueError("stft: pad_mode must be 'reflect', 'replicate' or 'constant', got %r" % (mode,))
    return x.index_select(x.ndim - 1, tensor(i.astype(np.int64), device=x.device))


def stft(self, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    from . import fft
    if return_complex is None and not self.dtype.is_complex:
        raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further "
                           "require that return_complex=True in a future PyTorch release.")
    if self.dtype.is_complex:
        raise NotImplementedError("stft: complex input signals are not supported; give a real signal")
    if self.ndim not in (1, 2):
        raise RuntimeError("stft: expected a 1-D or 2-D tensor, got %d-D" % self.ndim)
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    x = self if self.dtype.is_floating_point else self.to(_dtype.float32)
    if center:
        x = _pad_last(x, n_fft // 2, pad_mode)
    frames = x.unfold(-1, n_fft, hop) * _window(window, win, n_fft, x)     # [..., frames, n_fft]
    if onesided is None or onesided:
        spec = fft.rfft(frames, dim=-1)                                    # [..., frames, freq]
    else:
        spec = fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * (n_fft ** -0.5)
    spec = spec.transpose(-2, -1)                                          # [..., freq, frames]
    return spec if return_complex else fft.view_as_real(spec)


def istft(self, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    from . import fft
    if return_complex:
        raise NotImplementedError("istft: return_complex=True (a complex signal) is not offered; the signal is real")
    if not self.dtype.is_complex:
        if self.shape[-1] != 2:
            raise RuntimeError("istft: expected a complex [..., freq, frames] or its view_as_real [..., freq, frames, "
                               "2], got shape %s" % (tuple(self.shape),))
        spec = fft.view_as_complex(self.contiguous())
    else:
        spec = self
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    spec = spec.transpose(-2, -1)                                          # [..., frames, freq]
    if normalized:
        spec = spec * (n_fft ** 0.5)
    if onesided is None or onesided:
        frames = fft.irfft(spec, n=n_fft, dim=-1)
    else:
        frames = fft.ifft(spec, dim=-1).real
    w = _window(window, win, n_fft, frames)
    frames = frames * w
    n_frames = frames.shape[-2]
    total = n_fft + hop * (n_frames - 1)
    pos = (np.arange(n_frames)[:, None] * hop + np.arange(n_fft)[None, :]).reshape(-1)
    idx = tensor(pos.astype(np.int64), device=frames.device)
    lead = frames.shape[:-2]
    flat = frames.reshape(lead + (n_frames * n_fft,))
    y = zeros(lead + (total,), dtype=frames.dtype, device=frames.device).index_add(len(lead), idx, flat)
    env = np.zeros(total)
    np.add.at(env, pos, np.tile(w.detach().numpy().astype(np.float64) ** 2, n_frames))
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    if np.any(np.abs(env[start:min(end, total)]) < 1e-11):
        raise RuntimeError("istft: window overlap-add envelope is zero somewhere (NOLA condition failed)")
    y = y.narrow(-1, start, min(end, total) - start) / tensor(env[start:min(end, total)],
                                                              device=frames.device).to(frames.dtype)
    if length is not None and length > y.shape[-1]:
        from ._factories import cat
        y = cat([y, zeros(lead + (length - y.shape[-1],), dtype=y.dtype, device=y.device)], -1)
    return y
