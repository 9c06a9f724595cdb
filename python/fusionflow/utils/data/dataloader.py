"""DataLoader as torch.utils.data's: batches from a map-style dataset through a sampler and
a BatchSampler, or from an iterable dataset, collated by default_collate.

num_workers > 0 does not start processes: the workers run in this process, in turn (no
parallel loading, no pinned memory). What a program sees is what PyTorch gives it: the same
batches in the same order, worker_init_fn called per worker, get_worker_info() set while a
worker's code runs, and an IterableDataset iterated once per worker (shard it by worker id,
as on PyTorch)."""
import itertools

from ..._generator import numpy_rng
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, as_worker
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader"]


class DataLoader:
    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=2, persistent_workers=False,
                 pin_memory_device=""):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("DataLoader: num_workers should be a non-negative integer, got %r" % (num_workers,))
        if timeout < 0:
            raise ValueError("DataLoader: timeout should be non-negative, got %r" % (timeout,))
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle option, got "
                                 "shuffle=%r" % (shuffle,))
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler and "
                                 "batch_sampler options")
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        auto = batch_sampler is not None or (self._iterable and batch_size is not None)
        self.collate_fn = collate_fn if collate_fn is not None else (default_collate if auto else default_convert)
        self._auto_collation = auto

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)  # TypeError for an iterable dataset without __len__, as torch
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    def __iter__(self):
        if self.num_workers == 0:
            return self._iter_map() if not self._iterable else self._iter_stream(iter(self.dataset))
        return self._iter_workers()

    # ---- one process -------------------------------------------------------------------
    def _iter_map(self):
        keys = self.batch_sampler if self._auto_collation else self.sampler
        for k in keys:
            yield self._fetch(k)

    def _fetch(self, key):
        if self._auto_collation:
            return self.collate_fn([self.dataset[i] for i in key])
        return self.collate_fn(self.dataset[key])

    def _batches(self, it):
        """The batches (or single converted samples) of one stream of samples."""
        if not self._auto_collation:
            for x in it:
                yield self.collate_fn(x)
            return
        while True:
            chunk = list(itertools.islice(it, self.batch_size))
            if not chunk or (self.drop_last and len(chunk) < self.batch_size):
                return
            yield self.collate_fn(chunk)

    def _iter_stream(self, it):
        yield from self._batches(it)

    # ---- workers, run in turn in this process ----------------------------------------------
    def _iter_workers(self):
        k = self.num_workers
        base = int(numpy_rng(self.generator).integers(0, 2 ** 62))
        infos = [WorkerInfo(w, k, base + w, self.dataset) for w in range(k)]
        for info in infos:
            if self.worker_init_fn is not None:
                with as_worker(info):
                    self.worker_init_fn(info.id)
        if not self._iterable:
            # PyTorch hands batch i to worker i % k and yields the batches in order
            keys = self.batch_sampler if self._auto_collation else self.sampler
            for i, key in enumerate(keys):
                with as_worker(infos[i % k]):
                    out = self._fetch(key)
                yield out
            return
        # each worker iterates its own copy of the stream; batches are taken round-robin,
        # skipping workers that have finished
        streams = []
        for info in infos:
            with as_worker(info):
                streams.append(self._batches(iter(self.dataset)))
        live = list(range(k))
        while live:
            for w in list(live):
                with as_worker(infos[w]):
                    try:
                        out = next(streams[w])
                    except StopIteration:
                        live.remove(w)
                        continue
                yield out
