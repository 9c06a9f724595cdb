"""Issue 48 items 6 and 12, against torch.utils.data (PyTorch 1.13): a dataset error is
raised from its batch and the loader goes on with the next one; num_workers > 0 starts
real worker processes (seeds, worker_init_fn, get_worker_info, persistent workers,
prefetch_factor, timeout, in-order delivery, sharding) whose batches come back through
shared memory, and a worker that dies or raises is reported as PyTorch reports it.

Every test runs under a SIGALRM deadline, so a loader that hangs fails instead."""
import gc
import multiprocessing
import os
import random
import re
import signal
import time

import numpy as np
import pytest

import fusionflow as ff
from fusionflow.utils import data as fd

from conftest import DEVICES, DEFAULT_IS_CPU
from _spawn_dataset import OnDevices

torch = pytest.importorskip("torch")
td = torch.utils.data
FORK = multiprocessing.get_context("fork")
HOST = [d for d in DEVICES if d in ("cpu_ref", "cpu_blas")]


@pytest.fixture(autouse=True)
def deadline():
    def hung(signum, frame):
        raise TimeoutError("test_round4_dataloader: the loader hung (10 s deadline)")
    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def outcomes(loader, n=10):
    """What successive next() calls give: values, the exception's type and last line, 'stop'."""
    it, out = iter(loader), []
    for _ in range(n):
        try:
            b = next(it)
        except StopIteration:
            return out + ["stop"]
        except Exception as e:  # noqa: BLE001  (the type is what is compared)
            out.append((type(e).__name__, str(e).strip().splitlines()[-1]))
            continue
        out.append(np.asarray(b.numpy() if hasattr(b, "numpy") else b).tolist())
    return out


# ---- datasets at module level: spawn pickles them by name --------------------------------------
class Failing:
    """Samples 1 and 4 raise; the rest are i as a float tensor of the library given."""

    def __init__(self, mod):
        self.mod = mod

    def __len__(self):
        return 6

    def __getitem__(self, i):
        if i in (1, 4):
            raise ValueError("bad sample %d" % i)
        return self.mod.full((2,), float(i))


def failing_stream(mod):
    class S(mod.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(5):
                if i == 2:
                    raise ValueError("stream broke at %d" % i)
                yield i
    return S()


class WhoAmI(fd.Dataset):
    """Sample i: [pid, worker id, seed, random.random(), np.random.randint, ff.rand] of the worker."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        w = fd.get_worker_info()
        return [os.getpid(), w.id, w.seed, random.random(), int(np.random.randint(0, 2 ** 31)),
                float(ff.rand(1).item())]


# ---- item 6: an error is one batch's, not the epoch's ----------------------------------------------
@pytest.mark.parametrize("workers", [0, 2])
def test_dataset_error_is_raised_per_batch_and_the_epoch_goes_on_as_torch(workers):
    ours = outcomes(fd.DataLoader(Failing(ff), batch_size=1, num_workers=workers))
    theirs = outcomes(td.DataLoader(Failing(torch), batch_size=1, num_workers=workers))
    assert ours == theirs
    assert ours[1] == ("ValueError", "ValueError: bad sample 1" if workers else "bad sample 1")
    assert ours[-1] == "stop" and len(ours) == 7


@pytest.mark.parametrize("workers", [0, 1])
def test_iterable_dataset_error_ends_that_stream_as_torch(workers):
    # the dataset's generator is finished by its own exception: next() gives StopIteration
    ours = outcomes(fd.DataLoader(failing_stream(ff), batch_size=None, num_workers=workers))
    theirs = outcomes(td.DataLoader(failing_stream(torch), batch_size=None, num_workers=workers))
    assert ours == theirs == [0, 1, ("ValueError", ours[2][1]), "stop"]


def test_worker_exception_carries_the_worker_traceback_as_torch():
    def message(mod):
        """The first error's text; the loader is run to its end (so torch's workers end at once)."""
        first = None
        it = iter(mod.utils.data.DataLoader(Failing(mod), batch_size=2, num_workers=1))
        while True:
            try:
                next(it)
            except ValueError as e:
                first = first or str(e)
            except StopIteration:
                return first
    ours, theirs = message(ff), message(torch)
    head = "Caught ValueError in DataLoader worker process 0.\nOriginal Traceback (most recent call last):\n"
    assert ours.startswith(head) and theirs.startswith(head)
    assert ours.strip().splitlines()[-1] == theirs.strip().splitlines()[-1] == "ValueError: bad sample 1"
    assert 'raise ValueError("bad sample %d" % i)' in ours and __file__ in ours


# ---- item 12: worker processes ---------------------------------------------------------------------
class Sleepy(fd.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        start = time.monotonic()
        time.sleep(0.25)
        return [os.getpid(), start, time.monotonic()]


def test_workers_are_processes_that_run_at_the_same_time():
    rows = list(fd.DataLoader(Sleepy(), batch_size=None, num_workers=2))
    pids = {int(r[0]) for r in rows}
    assert len(pids) == 2 and os.getpid() not in pids
    a, b = ([r for r in rows if int(r[0]) == pid] for pid in pids)
    overlaps = [1 for x in a for y in b if x[1] < y[2] and y[1] < x[2]]
    assert overlaps, "no sample of one worker overlapped one of the other in time: %r" % rows


class BigOps(fd.Dataset):
    """Each sample runs ops big enough for cpu_blas's thread pool to split them."""
    def __len__(self):
        return 4

    def __getitem__(self, i):
        x = ff.ones(1 << 21) * (i + 1)
        return (x.exp().sum() / (1 << 21)).reshape(1)


def test_forked_worker_runs_ops_the_thread_pool_would_split():
    """fork copies only the calling thread: the child's pool has no workers, so its jobs
    run serially (blas_threads.c) instead of waiting forever for them."""
    ff.ones(1 << 21).sum()  # the parent's pool has served a job before the fork
    got = [float(b) for b in fd.DataLoader(BigOps(), batch_size=None, num_workers=2)]
    assert np.allclose(got, [np.exp(k) for k in (1, 2, 3, 4)], rtol=1e-4)


def test_seeds_worker_info_and_init_fn_as_torch():
    g = ff.Generator().manual_seed(7)
    init = FORK.SimpleQueue()

    def init_fn(i):
        w = fd.get_worker_info()
        init.put((i, w.id, w.num_workers, type(w.dataset).__name__))
        with pytest.raises(RuntimeError):
            w.id = 5  # frozen, as torch's WorkerInfo
    rows = [b for b in fd.DataLoader(WhoAmI(), batch_size=None, num_workers=2, generator=g, worker_init_fn=init_fn)]
    assert sorted(init.get() for _ in range(2)) == [(0, 0, 2, "WhoAmI"), (1, 1, 2, "WhoAmI")]
    assert fd.get_worker_info() is None
    by_worker = {}
    for r in rows:
        by_worker.setdefault(int(r[1]), r)  # each worker's first sample: the first draws after seeding
    base = int(by_worker[0][2])
    for w, r in by_worker.items():
        seed = base + w
        assert int(r[2]) == seed and r[3] == random.Random(seed).random()
        np_state = torch.utils.data._utils.worker._generate_state(base, w)  # what torch seeds np.random with
        assert int(r[4]) == np.random.RandomState(np_state).randint(0, 2 ** 31)
        ff.manual_seed(seed)
        assert float(r[5]) == float(ff.rand(1).item())
    again = [b for b in fd.DataLoader(WhoAmI(), batch_size=None, num_workers=2,
                                      generator=ff.Generator().manual_seed(7))]
    assert [r[2:] for r in again] == [r[2:] for r in rows]  # the same generator seed: the same worker streams


def test_numpy_worker_state_is_torchs():
    from fusionflow.utils.data._worker import numpy_worker_state
    for base, w in [(0, 0), (1, 3), (2 ** 40 + 12345, 1), (2 ** 62 - 1, 7)]:
        want = torch.utils.data._utils.worker._generate_state(base, w)
        assert numpy_worker_state(base, w).tolist() == list(want)


def sharded(mod):
    class S(mod.utils.data.IterableDataset):
        def __iter__(self):
            w = mod.utils.data.get_worker_info()
            return iter(range(w.id, 9 if w.id == 0 else 5, w.num_workers))
    return S()


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")  # torch's, on 2 cores
def test_persistent_workers_keep_their_processes_and_restart_streams_as_torch():
    loader = fd.DataLoader(WhoAmI(), batch_size=None, num_workers=2, persistent_workers=True)
    pids = [{int(r[0]) for r in loader} for _ in range(2)]
    assert pids[0] == pids[1] and len(pids[0]) == 2
    fresh = fd.DataLoader(WhoAmI(), batch_size=None, num_workers=2)
    assert {int(r[0]) for r in fresh}.isdisjoint({int(r[0]) for r in fresh})
    ours = fd.DataLoader(sharded(ff), batch_size=2, num_workers=3, persistent_workers=True)
    theirs = td.DataLoader(sharded(torch), batch_size=2, num_workers=3, persistent_workers=True)
    for _ in range(2):
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs] == [[0, 3], [1, 4], [2], [6]]


class Counted:
    """Counts fetches in a counter shared with the forked workers."""

    def __init__(self, mod, counter):
        self.mod, self.counter = mod, counter

    def __len__(self):
        return 12

    def __getitem__(self, i):
        with self.counter.get_lock():
            self.counter.value += 1
        return i


@pytest.mark.parametrize("prefetch", [1, 3])
def test_prefetch_factor_bounds_the_tasks_in_flight_as_torch(prefetch):
    def in_flight(mod):
        counter = FORK.Value("i", 0)
        it = iter(mod.utils.data.DataLoader(Counted(mod, counter), num_workers=2, prefetch_factor=prefetch))
        next(it)
        give_up = time.monotonic() + 5  # a loaded machine may be slow to run the prefetched tasks
        while counter.value < 2 * prefetch + 1 and time.monotonic() < give_up:
            time.sleep(0.02)
        time.sleep(0.2)  # and a bound that holds does not move
        n = counter.value
        del it
        return n
    assert in_flight(ff) == in_flight(torch) == 2 * prefetch + 1


class SlowFirst:
    def __init__(self, mod):
        self.mod = mod

    def __len__(self):
        return 6

    def __getitem__(self, i):
        time.sleep(0.2 if i == 0 else 0.01)
        return i


def test_batches_come_in_order_whatever_order_workers_finish_as_torch():
    ours = [b.tolist() for b in fd.DataLoader(SlowFirst(ff), batch_size=1, num_workers=2)]
    theirs = [b.tolist() for b in td.DataLoader(SlowFirst(torch), batch_size=1, num_workers=2)]
    assert ours == theirs == [[i] for i in range(6)]


class Stuck(fd.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(30)


def test_timeout_raises_torchs_error():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.3 seconds$"):
        next(iter(fd.DataLoader(Stuck(), num_workers=1, timeout=0.3)))
    assert time.monotonic() - start < 3


class Killer(fd.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_killed_worker_raises_torchs_error_without_hang():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"^DataLoader worker \(pid \d+\) is killed by signal: Killed\. $") as e:
        list(fd.DataLoader(Killer(), num_workers=1))
    assert time.monotonic() - start < 3
    dead = re.search(r"pid (\d+)", str(e.value)).group(1)
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("ffdl-%d-" % os.getpid()) and "-%s-" % dead in n]


def _mapping_of(addr):
    """The /proc/self/maps line of the mapping that holds addr, or None."""
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                return line.strip()
    return None


@pytest.mark.parametrize("device", HOST)
def test_batches_are_views_of_shared_memory_freed_with_the_tensor(device):
    x = ff.arange(24.0, device=device).reshape(6, 4)
    ds = fd.TensorDataset(x, ff.arange(6, device=device))
    batches = list(fd.DataLoader(ds, batch_size=3, num_workers=2))
    want = list(td.DataLoader(td.TensorDataset(torch.arange(24.0).reshape(6, 4), torch.arange(6)), batch_size=3))
    for (bx, by), (wx, wy) in zip(batches, want):
        assert np.array_equal(bx.numpy(), wx.numpy()) and np.array_equal(by.numpy(), wy.numpy())
        assert str(bx.device) == str(x.device) and by.dtype == ff.int64
    if device != "cpu_blas" or not DEFAULT_IS_CPU:
        return  # batches for another backend than the default one are copied onto it
    addr = batches[0][0].data_ptr()
    line = _mapping_of(addr)
    assert line is not None and re.search(r"/dev/shm/ffdl-%d-\S+ \(deleted\)$" % os.getpid(), line), line
    del batches, bx, by
    gc.collect()
    assert _mapping_of(addr) is None or "ffdl-" not in _mapping_of(addr)
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("ffdl-%d-" % os.getpid())]


def test_dtypes_and_structures_through_workers_as_torch():
    def make(mod):
        return mod.utils.data.TensorDataset(mod.tensor(np.arange(10, dtype=np.float16)),
                                            mod.tensor(np.arange(10) % 3 == 0), mod.tensor(np.arange(10) * 7))
    ours = list(fd.DataLoader(make(ff), batch_size=4, num_workers=2, pin_memory=True))
    theirs = list(td.DataLoader(make(torch), batch_size=4, num_workers=2, pin_memory=True))
    assert len(ours) == len(theirs) == 3
    for g, w in zip(ours, theirs):
        assert type(g) is type(w) is list
        for a, b in zip(g, w):
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            assert np.array_equal(a.numpy(), b.numpy())


def test_multiprocessing_context_arguments_as_torch():
    for kw, err in [(dict(num_workers=0, multiprocessing_context="fork"), ValueError),
                    (dict(num_workers=1, multiprocessing_context="nope"), ValueError),
                    (dict(num_workers=1, multiprocessing_context=3), TypeError),
                    (dict(num_workers=0, prefetch_factor=3), ValueError)]:
        with pytest.raises(err):
            td.DataLoader(range(4), **kw)
        with pytest.raises(err):
            fd.DataLoader(range(4), **kw)


def test_spawned_worker_returns_tensors_on_their_devices():
    # spawn: a fresh process, no C state inherited from this one. Host devices only: PoCL's
    # start-up in a fresh process takes seconds here (opencl tensors come back too, on opencl)
    batches = list(fd.DataLoader(OnDevices(HOST), batch_size=2, num_workers=1, multiprocessing_context="spawn"))
    assert len(batches) == 2
    for b, first in zip(batches, (0.0, 2.0)):
        for t, d in zip(b, HOST):
            assert t.device == (ff.device("cpu") if d == "cpu_blas" else ff.device(d))
            assert t.numpy().tolist() == [[first] * 3, [first + 1] * 3]


@pytest.mark.skipif("opencl" not in DEVICES, reason="the opencl backend is not built or has no platform")
def test_forked_worker_refuses_device_tensors():
    ds = fd.TensorDataset(ff.zeros(4, 2, device="opencl"))

    class Whole(fd.Dataset):  # hands back the parent's tensor itself: no OpenCL call in the child
        def __len__(self):
            return 1

        def __getitem__(self, i):
            return ds.tensors[0]
    with pytest.raises(RuntimeError, match="forked worker may only use host backends"):
        list(fd.DataLoader(Whole(), batch_size=None, num_workers=1))
