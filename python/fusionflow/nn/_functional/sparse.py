"""one_hot, embedding (padding_idx, max_norm, scale_grad_by_freq) and embedding_bag, over
the C embedding gather and index_add."""
import numpy as np

from ..._lib import C
from ..._tensor import as_tensor, no_grad, wrap, zeros, where

__all__ = ["one_hot", "embedding", "embedding_bag"]


def one_hot(tensor, num_classes=-1):
    idx = as_tensor(tensor)
    if num_classes == -1:
        num_classes = int(idx.max().item()) + 1 if idx.numel() else 0
    return wrap(C.ff_one_hot(idx._ptr, int(num_classes)))


def _host_ids(idx):
    return np.asarray(idx.cpu().numpy(), dtype=np.int64)


def _renorm_(weight, ids, max_norm, norm_type):
    """torch's embedding_renorm_: rows looked up whose norm exceeds max_norm are scaled
    (in place, no history) to max_norm / (norm + 1e-7)."""
    used = np.zeros(weight.shape[0], np.float32)
    used[np.unique(ids)] = 1.0
    with no_grad():
        norms = weight.norm(norm_type, dim=1)
        over = (norms > max_norm) & (as_tensor(used).to(weight.device) > 0)
        scale = where(over, max_norm / (norms + 1e-7), norms * 0 + 1)
        weight.mul_(scale.unsqueeze(1).to(weight.dtype))


def _grad_scale(ids, num, padding_idx, by_freq):
    """Per lookup: 0 at padding_idx, 1 / (count in the batch) with scale_grad_by_freq."""
    s = np.ones(ids.shape, np.float32)
    if by_freq:
        counts = np.bincount(ids.reshape(-1), minlength=num)
        s = 1.0 / counts[ids].astype(np.float32)
    if padding_idx is not None:
        s = np.where(ids == padding_idx, 0.0, s).astype(np.float32)
    return s


def _with_grad_scale(out, scale):
    """out's values, with its gradient multiplied by scale (per row)."""
    d = out.detach()
    return d + (out - d) * scale


def _padding_idx(padding_idx, num):
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num if padding_idx < 0 else padding_idx


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of weight; sparse=True gives a dense gradient (the engine has no sparse grads)."""
    idx = as_tensor(input)
    num = weight.shape[0]
    padding_idx = _padding_idx(padding_idx, num)
    ids = _host_ids(idx) if (max_norm is not None or padding_idx is not None or scale_grad_by_freq) else None
    if max_norm is not None:
        _renorm_(weight, ids, max_norm, norm_type)
    out = wrap(C.ff_embedding(weight._ptr, idx._ptr))
    if ids is not None and (padding_idx is not None or scale_grad_by_freq) and out.requires_grad:
        s = _grad_scale(ids, num, padding_idx, scale_grad_by_freq)
        out = _with_grad_scale(out, as_tensor(s).to(out.dtype).to(out.device).unsqueeze(-1))
    return out


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum / mean / max of the rows of each bag: a 2-D input's rows, or a 1-D input cut at
    offsets. padding_idx entries do not count; an empty bag gives zeros, as torch."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("embedding_bag: mode has to be one of sum, mean or max, got %r" % (mode,))
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  "supported for mode='sum' (got mode='%s'). Please open a feature request on "
                                  "GitHub." % mode)
    idx = as_tensor(input)
    num, dim = weight.shape
    padding_idx = _padding_idx(padding_idx, num)
    ids = _host_ids(idx)
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             "fixed length sequences. However, found offsets of type %s" % type(offsets).__name__)
        b, length = ids.shape
        starts = np.arange(b) * length
        ends = starts + length
        flat_ids = ids.reshape(-1)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        offs = _host_ids(as_tensor(offsets)).reshape(-1)
        if offs.size and offs[0] != 0:
            raise ValueError("embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                             "has to start from position 0. However, got %d" % offs[0])
        flat_ids = ids
        starts = offs[:-1] if include_last_offset else offs
        ends = np.append(offs[1:], len(ids)) if not include_last_offset else offs[1:]
        b = len(starts)
    else:
        raise ValueError("input has to be 1D or 2D Tensor, but got Tensor of dimension %d" % idx.ndim)
    if max_norm is not None:
        _renorm_(weight, flat_ids, max_norm, norm_type)
    t = len(flat_ids)
    bag = np.zeros(t, np.int64)
    for i, (s, e) in enumerate(zip(starts, ends)):
        bag[s:e] = i
    keep = np.ones(t, np.float32) if padding_idx is None else (flat_ids != padding_idx).astype(np.float32)
    flat = as_tensor(flat_ids).to(weight.device)
    rows = wrap(C.ff_embedding(weight._ptr, flat._ptr))  # [T, D]
    if scale_grad_by_freq and rows.requires_grad:
        rows = _with_grad_scale(rows, as_tensor(_grad_scale(flat_ids, num, None, True)).to(rows.dtype)
                                .to(rows.device).unsqueeze(-1))
    keep_t = as_tensor(keep).to(rows.dtype).to(rows.device).unsqueeze(-1)
    if mode == "max":
        outs = []
        for s, e in zip(starts, ends):
            sel = [j for j in range(s, e) if keep[j]]
            if sel:
                outs.append(rows.index_select(0, as_tensor(sel).to(rows.device)).amax(0))
            else:
                outs.append(zeros(dim, dtype=rows.dtype, device=rows.device))
        from ..._tensor import stack
        return stack(outs) if outs else zeros(0, dim, dtype=rows.dtype, device=rows.device)
    if per_sample_weights is not None:
        rows = rows * as_tensor(per_sample_weights).reshape(-1).to(rows.dtype).unsqueeze(-1)
    rows = rows * keep_t
    out = zeros(b, dim, dtype=rows.dtype, device=rows.device).index_add(0, as_tensor(bag).to(rows.device), rows)
    if mode == "mean":
        counts = np.zeros(b, np.float32)
        np.add.at(counts, bag, keep)
        out = out / as_tensor(np.maximum(counts, 1.0)).to(rows.dtype).to(rows.device).unsqueeze(-1)
    return out
