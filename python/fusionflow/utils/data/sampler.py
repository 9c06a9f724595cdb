"""Samplers as torch.utils.data's: they yield dataset indices (BatchSampler: lists of them).
Random draws come from a fusionflow.Generator, else from a seed the global generator gives
(_generator.py): reproducible under fusionflow.manual_seed, not torch's numbers."""
import numpy as np

from ..._generator import numpy_rng

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


class Sampler:
    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError("%s.__iter__ is not implemented" % type(self).__name__)


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _positive_int(name, what, v):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError("%s: %s should be a positive integer, got %r" % (name, what, v))


def _boolean(name, what, v):
    if not isinstance(v, bool):
        raise ValueError("%s: %s should be a boolean, got %r" % (name, what, v))


class RandomSampler(Sampler):
    """A permutation per pass (several, then a part of one, when num_samples > len), or
    num_samples independent picks with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _boolean("RandomSampler", "replacement", replacement)
        _positive_int("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, k = len(self.data_source), self.num_samples
        rng = numpy_rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=k).tolist()
            return
        for _ in range(k // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:k % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in numpy_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices drawn with probability proportional to weights."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _positive_int("WeightedRandomSampler", "num_samples", num_samples)
        _boolean("WeightedRandomSampler", "replacement", replacement)
        w = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be a 1-d sequence of finite non-negative "
                             "numbers with a positive sum, got shape %s" % (w.shape,))
        if not replacement and num_samples > np.count_nonzero(w):
            raise ValueError("WeightedRandomSampler: cannot draw %d samples without replacement from %d "
                             "non-zero weights" % (num_samples, np.count_nonzero(w)))
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = numpy_rng(self.generator)
        p = self.weights / self.weights.sum()
        yield from rng.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler; the last one shorter unless drop_last."""

    def __init__(self, sampler, batch_size, drop_last):
        _positive_int("BatchSampler", "batch_size", batch_size)
        _boolean("BatchSampler", "drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
