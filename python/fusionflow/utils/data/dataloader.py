"""DataLoader as torch.utils.data's: batches from a map-style dataset through a sampler and
a BatchSampler, or from an iterable dataset, collated by default_collate.

num_workers = 0 loads in this process. num_workers = k > 0 starts k worker processes
(_multiprocess.py, _worker.py): the batches come in the order PyTorch gives them, each
worker seeded from a base seed drawn from `generator` (or the global one), worker_init_fn
and get_worker_info() as on PyTorch, an IterableDataset iterated once per worker (shard it
by worker id), tensors handed back through shared memory (_shared.py). pin_memory is
accepted and does nothing (there is no pinned host memory to ask for).

An exception from the dataset or collate_fn is raised from that batch's next(), and the
next call goes on with the next batch, as PyTorch 1.13 (in a worker: raised again here with
the worker's traceback in the message). A worker that dies raises RuntimeError within
0.1 s, as does a wait longer than timeout (when > 0).

What a worker may do. Under fork (the default on Linux, as PyTorch's) the child inherits
the parent's C state, and two parts of it are not fork-safe: OpenCL/CUDA contexts, which
a forked worker must not use (a batch holding a device tensor raises; return CPU tensors
or use multiprocessing_context='spawn'), and cpu_blas's thread pool: its threads are not
copied by fork, so an op the pool would split (32K elements and more, e.g. ff.ones(1 << 17))
waits forever in a forked worker when the parent runs cpu_blas with 2+ threads. Per-sample
work on small tensors runs serially and is safe; the loader's own stacking downloads each
sample's bytes into shared memory, which the pool never splits. A dataset that runs big
tensor ops per sample needs multiprocessing_context='spawn' (or FF_NUM_THREADS=1) until
cpu_blas resets its pool in a forked child (a pthread_atfork handler in
backends/cpu_blas/blas_threads.c)."""
from ..._generator import numpy_rng
from ._collate import default_collate, default_convert
from ._multiprocess import MultiProcessIter, WorkerPool, resolve_context
from ._worker import make_fetcher
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
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        if num_workers == 0 and prefetch_factor != 2:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in multiprocessing; let "
                             "num_workers > 0 to enable multiprocessing (got prefetch_factor=%r)" % (prefetch_factor,))
        if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor < 1:
            raise ValueError("DataLoader: prefetch_factor should be a positive integer, got %r" % (prefetch_factor,))
        if multiprocessing_context is not None:
            if num_workers == 0:
                raise ValueError("DataLoader: multiprocessing_context can only be used with multi-process loading "
                                 "(num_workers > 0), but got num_workers=0")
            resolve_context(multiprocessing_context)  # a bad name or object raises now, as torch
        self.dataset = dataset
        self.num_workers = num_workers
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.multiprocessing_context = multiprocessing_context
        self._pool = None  # the persistent workers, once started
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
            return _SingleProcessIter(self)
        if self._pool is not None and self._pool.alive:
            return MultiProcessIter(self, self._pool, self._keys())
        pool = WorkerPool(self, self._base_seed())
        if self.persistent_workers:
            self._pool = pool
        return MultiProcessIter(self, pool, self._keys())

    def _keys(self):
        """What the tasks carry: batches of indices or indices; None for an iterable dataset."""
        if self._iterable:
            return None
        return iter(self.batch_sampler if self._auto_collation else self.sampler)

    def _base_seed(self):
        return int(numpy_rng(self.generator).integers(0, 2 ** 62))

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            try:
                pool.shutdown()
            except Exception:  # at interpreter exit the modules it needs may be gone
                pass


class _SingleProcessIter:
    """num_workers = 0. Not a generator, so an exception from one batch leaves the
    iterator usable: the next call fetches the next batch, as PyTorch's does."""

    def __init__(self, loader):
        self.loader = loader
        self.keys, self.fetcher = loader._keys(), make_fetcher(loader)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def __next__(self):
        key = None if self.keys is None else next(self.keys)
        return self.fetcher.fetch(key)
