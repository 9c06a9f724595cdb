"""What runs inside a DataLoader worker process, and get_worker_info().

get_worker_info() is None in the main process; in a worker it is that worker's WorkerInfo
(id, num_workers, seed, dataset), so an IterableDataset can shard itself by worker id.

A worker seeds its random sources as PyTorch 1.13's do: seed = base_seed + worker_id for
fusionflow (manual_seed) and Python's random, and NumPy's legacy global generator from a
SeedSequence of (worker_id, base_seed's low and high 32-bit words) - the state torch's
workers give np.random, so a dataset that draws from np.random gets the same numbers for
the same base seed. Then worker_init_fn(worker_id) runs, then the worker serves tasks:

    index queue -> (epoch, idx, key)     key: a batch of indices, an index, or None (stream)
    result queue <- (epoch, idx, kind, payload, blocks)
        kind DATA:      payload = pickled batch whose tensors live in shared memory (_shared.py)
        kind ERROR:     payload = ExceptionWrapper (the worker's traceback as text)
        kind EXHAUSTED: the worker's IterableDataset iterator has ended this epoch

A task of a new epoch restarts the dataset iterator (persistent workers); None ends the
worker, as does the main process going away."""
import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

from . import _collate, _shared

__all__ = ["WorkerInfo", "get_worker_info"]

DATA, ERROR, EXHAUSTED = 0, 1, 2
_POLL_S = 0.2  # how often an idle worker checks that its main process is still there

_current = None


class WorkerInfo:
    __initialized = False

    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002  (torch's field name)
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError("Cannot assign attributes to %s objects" % type(self).__name__)
        super().__setattr__(key, val)

    def __repr__(self):
        return "WorkerInfo(id=%d, num_workers=%d, seed=%d, dataset=%r)" % (
            self.id, self.num_workers, self.seed, self.dataset)


def get_worker_info():
    return _current


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process as its type and the
    worker's traceback text, and raised there again (reraise) with that text."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        try:
            pickle.dumps(exc_type)
            self.exc_type = exc_type
        except Exception:  # a class the main process cannot import (local to a function)
            self.exc_type = RuntimeError
        self.msg = "Caught %s %s.\nOriginal %s" % (exc_type.__name__, where,
                                                    "".join(traceback.format_exception(exc_type, exc, tb)))

    def reraise(self):
        # KeyError's str() is the repr of its argument: give it one that prints as the text
        msg = _AsIs(self.msg) if issubclass(self.exc_type, KeyError) else self.msg
        try:
            err = self.exc_type(msg)
        except Exception:  # an exception type whose constructor wants other arguments
            err = RuntimeError(self.msg)
        try:
            raise err
        finally:
            del err  # no cycle err -> traceback -> this frame -> err: the iterator dies when dropped


class _AsIs(str):
    def __repr__(self):
        return str(self)


def numpy_worker_state(base_seed, worker_id):
    """The 4 uint32 words torch 1.13's worker seeds np.random with (a SeedSequence hash)."""
    words = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32, 0]
    return np.random.SeedSequence(words).generate_state(4, np.uint32)


def _seed_worker(base_seed, worker_id):
    from ... import _generator
    seed = base_seed + worker_id
    random.seed(seed)
    _generator.default_generator.manual_seed(seed)
    np.random.seed(numpy_worker_state(base_seed, worker_id))
    return seed


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, key):
        if self.auto_collation:
            return self.collate_fn([self.dataset[i] for i in key])
        return self.collate_fn(self.dataset[key])


class StreamFetcher:
    """One batch (or sample) per fetch from an iterator; StopIteration once it has ended.
    Not a generator: an exception raised by the dataset's iterator passes through and the
    next fetch asks that iterator again, as PyTorch's fetcher does."""

    def __init__(self, it, auto_collation, collate_fn, batch_size, drop_last):
        self.it, self.auto_collation, self.collate_fn = it, auto_collation, collate_fn
        self.batch_size, self.drop_last, self.ended = batch_size, drop_last, False

    def fetch(self, key=None):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.it))
            except StopIteration:
                self.ended = True
                raise
        chunk = []
        while len(chunk) < self.batch_size:
            try:
                chunk.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not chunk or (self.drop_last and len(chunk) < self.batch_size):
            self.ended = True
            raise StopIteration
        return self.collate_fn(chunk)


def make_fetcher(src):
    """The fetcher of a DataLoader or WorkerSpec (src): a new dataset iterator each call."""
    if src._iterable:
        return StreamFetcher(iter(src.dataset), src._auto_collation, src.collate_fn, src.batch_size, src.drop_last)
    return MapFetcher(src.dataset, src._auto_collation, src.collate_fn)


class WorkerSpec:
    """What every worker of a pool gets (pickled under spawn and forkserver)."""

    def __init__(self, loader, base_seed, block_prefix, forked):
        self.dataset, self._iterable = loader.dataset, loader._iterable
        self._auto_collation, self.collate_fn = loader._auto_collation, loader.collate_fn
        self.batch_size, self.drop_last = loader.batch_size, loader.drop_last
        self.num_workers, self.init_fn = loader.num_workers, loader.worker_init_fn
        self.base_seed, self.block_prefix, self.forked = base_seed, block_prefix, forked
        self.parent_pid = os.getpid()


def worker_loop(spec, worker_id, index_queue, result_queue, done_event):
    """The body of worker process worker_id."""
    global _current
    try:
        seed = _seed_worker(spec.base_seed, worker_id)
        _current = WorkerInfo(worker_id, spec.num_workers, seed, spec.dataset)
        shipper = _shared.Shipper(spec.block_prefix, spec.forked)
        _collate._worker_stack = _shared.stack_into_block
        init_error = None
        if spec.init_fn is not None:
            try:
                spec.init_fn(worker_id)
            except Exception:
                init_error = ExceptionWrapper("in DataLoader worker process %d" % worker_id)
        _serve(spec, worker_id, index_queue, result_queue, done_event, shipper, init_error)
    except KeyboardInterrupt:
        pass  # the main process decides what an interrupt means
    finally:
        result_queue.close()
        result_queue.join_thread()  # everything put reaches the pipe before the process ends


def _serve(spec, worker_id, index_queue, result_queue, done_event, shipper, init_error):
    runner = _TaskRunner(spec, worker_id, shipper, init_error)
    while True:
        try:
            task = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != spec.parent_pid:
                return
            continue
        if task is None:
            return
        epoch, idx, key = task
        result_queue.put((epoch, idx) + runner.run(epoch, key))


class _TaskRunner:
    """Runs tasks in one worker; the fetcher (and so a dataset iterator) lives per epoch."""

    def __init__(self, spec, worker_id, shipper, init_error):
        self.spec, self.shipper, self.init_error = spec, shipper, init_error
        self.where = "in DataLoader worker process %d" % worker_id
        self.fetcher, self.epoch = None, None

    def run(self, epoch, key):
        """(kind, payload, blocks) for one task."""
        if self.init_error is not None:
            return ERROR, self.init_error, []
        try:
            if self.fetcher is None or (epoch != self.epoch and self.spec._iterable):
                self.fetcher, self.epoch = make_fetcher(self.spec), epoch
            data = self.fetcher.fetch(key)
            payload, blocks = self.shipper.dumps(data)
        except StopIteration:
            return EXHAUSTED, None, []
        except Exception:
            return ERROR, ExceptionWrapper(self.where), []
        return DATA, payload, blocks
