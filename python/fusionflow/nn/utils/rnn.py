"""torch.nn.utils.rnn: PackedSequence and pad_sequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence; composed of narrow/cat/index_select, so differentiable.
nn.RNN, nn.LSTM and nn.GRU take and return PackedSequence (nn/modules/rnn.py)."""
import collections

import numpy as np

from ... import _dtype
from ..._tensor import Tensor, as_tensor, cat, full, stack, tensor


class PackedSequence(collections.namedtuple("PackedSequence",
                                            ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data [sum(lengths), *]: the time steps' rows of the batch, longest sequence first;
    batch_sizes[t]: how many sequences are longer than t (an int64 tensor, as torch's)."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _invert(perm):
    p = perm.numpy()
    inv = np.empty_like(p)
    inv[p] = np.arange(len(p))
    return tensor(inv, device=perm.device)


def pad_sequence(sequences, batch_first=False, padding_value=0.0):
    """[L_i, *] tensors -> [max L, B, *] (or [B, max L, *]), padded with padding_value."""
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    n = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        if s.shape[0] < n:
            pad = full((n - s.shape[0],) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, pad], 0)
        rows.append(s)
    return stack(rows, 0 if batch_first else 1)


def _lengths(lengths):
    a = np.asarray(lengths.tolist() if isinstance(lengths, Tensor) else lengths, dtype=np.int64).reshape(-1)
    return a


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    x = as_tensor(input)
    if x.numel() == 0:  # torch's first check, before the lengths: a 0-size time, batch or feature dim
        raise RuntimeError("pack_padded_sequence: Cannot pack empty tensors, got input of shape %s"
                           % (list(x.shape),))
    lens = _lengths(lengths)
    if batch_first:
        x = x.transpose(0, 1)
    if x.shape[1] != len(lens):
        raise ValueError("pack_padded_sequence: %d lengths for a batch of %d" % (len(lens), x.shape[1]))
    if (lens <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    sorted_indices = None
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                               "sidestep this requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = tensor(order.astype(np.int64), device=x.device)
        x = x.index_select(1, sorted_indices)
        lens = lens[order]
    if lens[0] > x.shape[0]:
        raise ValueError("pack_padded_sequence: length %d exceeds the %d time steps" % (lens[0], x.shape[0]))
    sizes = np.array([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64)
    data = cat([x[t].narrow(0, 0, int(b)) for t, b in enumerate(sizes)], 0)
    return PackedSequence(data, tensor(sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded [T, B, *] or [B, T, *], lengths int64 [B]): the inverse of pack_padded_sequence,
    in the batch's original order."""
    data, sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    b = int(sizes[0])
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             "but got total_length=%d and max sequence length being %d" % (total_length, steps))
    rows, pos = [], 0
    for n in sizes:
        r = data.narrow(0, pos, int(n))
        if n < b:
            r = cat([r, full((b - int(n),) + tuple(data.shape[1:]), padding_value, dtype=data.dtype,
                             device=data.device)], 0)
        rows.append(r)
        pos += int(n)
    if total_length is not None and total_length > steps:
        rows += [full((b,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)] * \
            (total_length - steps)
    out = stack(rows, 0)
    lens = np.array([(sizes > i).sum() for i in range(b)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lens = lens[sequence.unsorted_indices.numpy()]
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensor(lens).to(_dtype.int64)


def pack_sequence(sequences, enforce_sorted=True):
    seqs = list(sequences)
    return pack_padded_sequence(pad_sequence(seqs), [s.shape[0] for s in seqs], enforce_sorted=enforce_sorted)
