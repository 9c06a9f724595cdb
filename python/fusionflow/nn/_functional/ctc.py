"""ctc_loss: the CTC forward (alpha) recursion in log space over the blank-extended targets,
one step per time frame, each a logsumexp of three shifted copies; autograd differentiates
it. An impossible alignment gives inf and a nan gradient, as torch (0 and 0 with zero_infinity)."""
import numpy as np

from ..._tensor import as_tensor, cat, full, stack, where

__all__ = ["ctc_loss"]

_NEG = -1e30  # log(0) stand-in: finite, so logsumexp and its gradient stay nan-free


def _ints(v):
    if hasattr(v, "numpy"):
        v = v.cpu().numpy() if hasattr(v, "cpu") else v.numpy()
    return np.asarray(v, dtype=np.int64).reshape(-1)


def _check_length_kinds(input_lengths, target_lengths):
    """torch takes both lengths as tensors or both as int sequences, never one of each."""
    a, b = hasattr(input_lengths, "numpy"), hasattr(target_lengths, "numpy")
    if a != b:
        raise TypeError("ctc_loss: input_lengths and target_lengths must both be tensors or both be sequences "
                        "of ints, got %s and %s" % (type(input_lengths).__name__, type(target_lengths).__name__))


def _nan_gradient(lp, frames, dead):
    """Per sample [N]: 0 in value, nan in gradient on the frames in use of the dead samples
    (torch's gradient for an infinite loss). sqrt(z * z) at z = 0 has slope inf, and the
    chain rule then multiplies it by z = 0; the where() on lp keeps the nan off the samples
    and frames that are alive, whatever gradient reaches this term."""
    held = lp.detach()
    mask = ((frames > 0) & dead.reshape(1, -1)).unsqueeze(2).expand(*lp.shape)
    z = where(mask, lp, held) - held
    return (z * z).sqrt().sum((0, 2))


def _extended(targets, target_lengths, n):
    """Per sample, [blank, l1, blank, l2, ..., blank] (labels stay >= 0; blank is filled in
    by the caller) as an [N, 2 * Smax + 1] array, padded with the last blank."""
    t = np.asarray(targets.cpu().numpy() if hasattr(targets, "cpu") else targets, dtype=np.int64)
    if t.ndim == 1:  # concatenated targets (also the unbatched [S])
        offs = np.concatenate([[0], np.cumsum(target_lengths)])
        rows = [t[offs[i]:offs[i + 1]] for i in range(n)]
    else:
        t = t.reshape(n, -1)
        rows = [t[i, :target_lengths[i]] for i in range(n)]
    smax = max([len(r) for r in rows] + [0])
    return rows, smax


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """log_probs [T, N, C] (or [T, C]); targets [N, S] padded or 1-D concatenated; lengths as
    tensors or sequences. 'mean' divides each loss by its target length, then averages."""
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    t_max, n, c = lp.shape
    _check_length_kinds(input_lengths, target_lengths)
    in_len, tg_len = _ints(input_lengths), _ints(target_lengths)
    if len(in_len) != n or len(tg_len) != n:
        raise RuntimeError("ctc_loss: %d input lengths and %d target lengths for a batch of %d"
                           % (len(in_len), len(tg_len), n))
    if (in_len > t_max).any() or (in_len < 0).any():
        raise RuntimeError("ctc_loss: input lengths must be in 0..%d, got %s" % (t_max, in_len.tolist()))
    rows, smax = _extended(targets, tg_len, n)
    width = 2 * smax + 1
    ext = np.full((n, width), blank, np.int64)
    skip = np.zeros((n, width), bool)
    for i, r in enumerate(rows):
        if ((r < 0) | (r >= c) | (r == blank)).any():
            raise RuntimeError("ctc_loss: targets of sample %d must be classes in 0..%d other than blank %d"
                               % (i, c - 1, blank))
        ext[i, 1:2 * len(r):2] = r
        for s in range(3, 2 * len(r), 2):  # a label may follow the one before it past a blank
            skip[i, s] = r[s // 2] != r[s // 2 - 1]
    dev = lp.device
    idx = as_tensor(ext).to(dev).unsqueeze(0).expand(t_max, n, width)
    emit = lp.gather(2, idx)  # [T, N, W]
    neg = full((n, 1), _NEG, dtype=lp.dtype, device=dev)
    skip_t = as_tensor(skip).to(dev)
    start = np.full((n, width), _NEG, np.float32)
    start[:, 0] = 0.0
    if width > 1:  # else every target is empty: only the blank row exists
        start[tg_len > 0, 1] = 0.0
    alpha = as_tensor(start).to(lp.dtype).to(dev) + emit[0]
    for t in range(1, t_max):
        a1 = cat([neg, alpha[:, :-1]], 1)
        a2 = cat([neg, neg, alpha[:, :-2]], 1) if width > 2 else alpha * 0 + _NEG
        a2 = where(skip_t, a2, a2 * 0 + _NEG)
        new = stack([alpha, a1, a2], 0).logsumexp(0) + emit[t]
        live = as_tensor((t < in_len).astype(np.float32)).to(dev).reshape(n, 1) > 0
        alpha = where(live, new, alpha)
    last = as_tensor(2 * tg_len).to(dev).reshape(n, 1)
    end1 = alpha.gather(1, last).squeeze(1)
    end2 = alpha.gather(1, (last - 1).clamp(min=0)).squeeze(1)
    end2 = where(as_tensor(tg_len > 0).to(dev), end2, end2 * 0 + _NEG)
    nll = -stack([end1, end2], 0).logsumexp(0)
    # torch's gradient is exp(log_probs) - posterior over the frames in use: the gradient for
    # logits under a log_softmax, not the derivative in log_probs (that is -posterior). Adding
    # sum(exp(lp)) - its detached value changes no value and gives torch's gradient; under a
    # log_softmax its gradient vanishes (the softmax sums to 1), so either way ends the same.
    frames = as_tensor((np.arange(t_max)[:, None] < in_len[None, :]).astype(np.float32)).to(lp.dtype).to(dev)
    mass = (lp.exp().sum(2) * frames).sum(0)
    nll = nll + (mass - mass.detach())
    # no frames: an empty target is aligned with certainty (loss 0), any other cannot be
    # (the recursion above started on frame 0, which such a sample does not have)
    nll = where(as_tensor((in_len == 0) & (tg_len == 0)).to(dev), nll * 0, nll)
    dead = (nll > -_NEG / 10) | as_tensor((in_len == 0) & (tg_len > 0)).to(dev)
    if zero_infinity:
        nll = where(dead, nll * 0, nll)
    else:
        nll = where(dead, _nan_gradient(lp, frames, dead) + float("inf"), nll)
    if reduction == "none":
        return nll.squeeze(0) if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    if reduction == "mean":
        return (nll / as_tensor(np.maximum(tg_len, 1).astype(np.float32)).to(nll.dtype).to(dev)).mean()
    raise ValueError("ctc_loss: %r is not a valid value for reduction (mean, sum, none)" % (reduction,))
