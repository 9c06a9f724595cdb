"""DataLoader(num_workers=k > 0): k worker processes and the iterator that feeds them.

WorkerPool starts the processes (fork, spawn or forkserver: multiprocessing_context), one
index queue each and one result queue shared by all (the protocol is in _worker.py).
MultiProcessIter hands tasks out round-robin over the workers still active, at most
prefetch_factor * k not yet delivered, and delivers results in task order whatever order
they arrive in, as PyTorch's loader does. A task whose worker's IterableDataset has ended
is skipped; a task that raised is raised again here, and the next call goes on with the
next task.

While waiting it polls every _POLL_S: a worker that has died raises RuntimeError (the
"killed by signal" text of PyTorch for a signal), and timeout > 0 bounds each wait."""
import multiprocessing
import os
import queue
import secrets
import signal
import time

from . import _shared
from ._worker import DATA, ERROR, EXHAUSTED, WorkerSpec, worker_loop

__all__ = ["WorkerPool", "MultiProcessIter", "resolve_context"]

_POLL_S = 0.1
_JOIN_S = 2.0  # how long shutdown waits for a worker to finish its task before terminating it


def resolve_context(ctx):
    """multiprocessing_context -> a multiprocessing context (None: the platform default,
    fork on Linux, as torch)."""
    if ctx is None:
        return multiprocessing.get_context()
    if isinstance(ctx, str):
        if ctx not in multiprocessing.get_all_start_methods():
            raise ValueError("DataLoader: multiprocessing_context option should specify a valid start method in %r, "
                             "but got multiprocessing_context=%r" % (multiprocessing.get_all_start_methods(), ctx))
        return multiprocessing.get_context(ctx)
    if not isinstance(ctx, multiprocessing.context.BaseContext):
        raise TypeError("DataLoader: multiprocessing_context option should be a valid context object or a string "
                        "specifying the start method, but got multiprocessing_context=%r" % (ctx,))
    return ctx


def _death_message(p):
    if p.exitcode < 0:
        try:
            name = signal.strsignal(-p.exitcode) or "signal %d" % -p.exitcode
        except ValueError:
            name = "signal %d" % -p.exitcode
        return "DataLoader worker (pid %d) is killed by signal: %s. " % (p.pid, name)
    return "DataLoader worker (pid(s) %d) exited unexpectedly" % p.pid


class WorkerPool:
    """The processes, their queues and the block names of one set of workers."""

    def __init__(self, loader, base_seed):
        ctx = resolve_context(loader.multiprocessing_context)
        self.n = loader.num_workers
        self.prefix = "ffdl-%d-%s" % (os.getpid(), secrets.token_hex(4))
        spec = WorkerSpec(loader, base_seed, self.prefix, ctx.get_start_method() == "fork")
        self.results = ctx.Queue()
        self.done = ctx.Event()
        self.index_queues, self.procs = [], []
        self.epoch = 0
        self.alive = True
        try:
            for w in range(self.n):
                q = ctx.Queue()
                q.cancel_join_thread()  # a dead worker never drains it: do not wait on it at exit
                p = ctx.Process(target=worker_loop, args=(spec, w, q, self.results, self.done), daemon=True)
                self.index_queues.append(q)
                p.start()  # spawn: pickles spec here (a lambda in it raises here)
                self.procs.append(p)
        except BaseException:
            self.shutdown(force=True)
            raise

    def check_alive(self):
        for p in self.procs:
            if p.exitcode is not None:
                msg = _death_message(p)
                self.shutdown(force=True)
                raise RuntimeError(msg)

    def shutdown(self, force=False):
        """Ends the workers: asks them (waiting up to _JOIN_S for a task in progress), or,
        with force (an error: a worker died, a timeout), terminates them at once."""
        if not self.alive:
            return
        self.alive = False
        self.done.set()
        for q, p in zip(self.index_queues, self.procs):
            if p.exitcode is None:
                q.put(None)
        deadline = time.monotonic() + (0.0 if force else _JOIN_S)
        for p in self.procs:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.exitcode is None:
                p.terminate()
                p.join(_JOIN_S)
        self._drain()
        for q in self.index_queues:
            q.close()
        self.results.cancel_join_thread()
        self.results.close()
        _shared.remove_leftovers(self.prefix)

    def _drain(self):
        """Unlinks the blocks of results nobody will read."""
        while True:
            try:
                msg = self.results.get(timeout=0.01)
            except (queue.Empty, OSError, EOFError, ValueError):
                return
            if msg[2] == DATA:
                _shared.discard(msg[4])

    def __del__(self):
        try:
            self.shutdown()
        except Exception:
            pass


class MultiProcessIter:
    """One epoch over a WorkerPool; the pool is shut down at the end unless persistent."""

    def __init__(self, loader, pool, keys):
        self.loader, self.pool = loader, pool
        pool.epoch += 1
        self.epoch = pool.epoch
        self.keys = keys  # batches of indices or indices (map-style), None for a stream
        self.limit = loader.prefetch_factor * pool.n
        self.active = [True] * pool.n
        self.next_worker = 0
        self.sent = self.delivered = 0
        self.worker_of = {}  # task idx -> worker, for tasks not yet delivered or skipped
        self.arrived = {}  # task idx -> message that came before its turn
        self.finished = False
        self._fill()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self.loader)

    def _pick_worker(self):
        for _ in range(self.pool.n):
            w = self.next_worker
            self.next_worker = (w + 1) % self.pool.n
            if self.active[w]:
                return w
        return None

    def _fill(self):
        while self.sent - self.delivered < self.limit:
            w = self._pick_worker()
            if w is None:
                return
            if self.keys is None:
                key = None
            else:
                key = next(self.keys, _END)
                if key is _END:
                    return
            self.pool.index_queues[w].put((self.epoch, self.sent, key))
            self.worker_of[self.sent] = w
            self.sent += 1

    def __next__(self):
        while not self.finished:
            if self.delivered == self.sent:
                self._finish()
                break
            idx = self.delivered
            msg = self.arrived.pop(idx, None)
            if msg is None and self.active[self.worker_of[idx]]:
                msg = self._receive(idx)
            if msg is None:  # its worker's stream has ended: nothing comes for this task
                self._advance(idx)
                continue
            self._advance(idx)
            kind, payload, blocks = msg[2:]
            if kind == ERROR:
                payload.reraise()
            return _shared.loads(payload, blocks)
        raise StopIteration

    def _advance(self, idx):
        del self.worker_of[idx]
        self.delivered += 1
        self._fill()

    def _receive(self, idx):
        """Messages until task idx's; None if that one says its worker's stream ended."""
        while True:
            msg = self._get()
            epoch, got, kind = msg[:3]
            if epoch != self.epoch or got not in self.worker_of:  # an abandoned epoch's, or a skipped task's
                if kind == DATA:
                    _shared.discard(msg[4])
                continue
            if kind == EXHAUSTED:
                self.active[self.worker_of[got]] = False
                if got == idx:
                    return None
                continue
            if got == idx:
                return msg
            self.arrived[got] = msg

    def _get(self):
        timeout = self.loader.timeout
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            try:
                return self.pool.results.get(timeout=wait)
            except queue.Empty:
                pass
            self._check_pool()
            if deadline is not None and time.monotonic() >= deadline:
                self._finish(force=True)
                raise RuntimeError("DataLoader timed out after %s seconds" % timeout)

    def _check_pool(self):
        try:
            self.pool.check_alive()
        except RuntimeError:
            self._finish(force=True)
            raise

    def _finish(self, force=False):
        """The epoch is over: shut the workers down, unless they persist (and are well)."""
        if self.finished:
            return
        self.finished = True
        for msg in self.arrived.values():
            if msg[2] == DATA:
                _shared.discard(msg[4])
        self.arrived.clear()
        if force or not self.loader.persistent_workers:
            self.pool.shutdown(force)
            if self.loader._pool is self.pool:
                self.loader._pool = None

    def __del__(self):
        try:
            if not self.finished:
                self._finish()
        except Exception:
            pass


_END = object()
