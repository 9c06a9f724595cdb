"""Datasets as torch.utils.data's: map-style (Dataset: __getitem__, __len__) and iterable
(IterableDataset: __iter__), and the ones built from others."""
import bisect
import math
import warnings

from ..._generator import numpy_rng

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]


class Dataset:
    def __getitem__(self, index):
        raise NotImplementedError("%s.__getitem__ is not implemented" % type(self).__name__)

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    def __iter__(self):
        raise NotImplementedError("%s.__iter__ is not implemented" % type(self).__name__)

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are (t[i] for t in tensors); every tensor has the same first dimension."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        sizes = [t.shape[0] if t.ndim else None for t in tensors]
        if None in sizes or any(s != sizes[0] for s in sizes):
            raise ValueError("TensorDataset: size mismatch between tensors: first dimensions %s, expected "
                             "all equal" % [tuple(t.shape)[:1] for t in tensors])
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    """The map-style datasets one after another; negative indices count from the end."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("ConcatDataset: index %d out of range for length %d" % (idx, len(self)))
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError("ConcatDataset: index %d out of range for length %d" % (idx, len(self)))
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """The iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset, got %s" % type(d).__name__)
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


def _split_lengths(n, lengths):
    """Fractions summing to 1 become counts: floor(n * f) each, then the remainder one by one
    from the first split on (PyTorch 1.13's rule)."""
    if not math.isclose(sum(lengths), 1) or sum(lengths) > 1:
        return lengths
    counts = []
    for i, f in enumerate(lengths):
        if f < 0 or f > 1:
            raise ValueError("random_split: fraction at index %d is not between 0 and 1" % i)
        counts.append(int(math.floor(n * f)))
    for i in range(n - sum(counts)):
        counts[i % len(counts)] += 1
    for i, c in enumerate(counts):
        if c == 0:
            warnings.warn("random_split: length of split at index %d is 0; this split will be empty" % i)
    return counts


def random_split(dataset, lengths, generator=None):
    """Disjoint random Subsets of the given lengths (or fractions summing to 1)."""
    lengths = _split_lengths(len(dataset), list(lengths))
    if sum(lengths) != len(dataset):
        raise ValueError("random_split: the lengths sum to %d but the dataset has %d samples"
                         % (sum(lengths), len(dataset)))
    perm = numpy_rng(generator).permutation(sum(lengths)).tolist()
    out, start = [], 0
    for n in lengths:
        out.append(Subset(dataset, perm[start:start + n]))
        start += n
    return out
