"""torch.multiprocessing: Python's multiprocessing (every name it has), plus spawn and
start_processes, as PyTorch offers them. fusionflow tensors cross processes as any picklable
object does (they pickle to their values); DataLoader's workers share batches through
shared memory on their own (utils/data/_shared.py), so there is no tensor-sharing strategy
to choose: get/set_sharing_strategy accept PyTorch's names and change nothing."""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (Process, Queue, Pool, get_context, ...)

__all__ = [n for n in dir(_mp) if not n.startswith("_")] + [
    "spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
    "get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies"]

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"


def get_all_sharing_strategies():
    return set(_STRATEGIES)


def get_sharing_strategy():
    return _strategy


def set_sharing_strategy(new_strategy):
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise RuntimeError("set_sharing_strategy: unknown strategy %r (expected one of %s)"
                           % (new_strategy, ", ".join(_STRATEGIES)))
    _strategy = new_strategy


class ProcessException(Exception):
    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """A spawned process raised: msg holds its traceback."""


class ProcessExitedException(ProcessException):
    """A spawned process died with a non-zero exit code (or a signal)."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


def _wrap(fn, i, args, error_queue):
    import traceback
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: B902  (reported to the parent, as torch's spawn does)
        error_queue.put(traceback.format_exc())
        raise SystemExit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has ended well; raises for the first that did not."""
        for p in self.processes:
            p.join(timeout)
        if any(p.is_alive() for p in self.processes):
            return False
        for i, (p, q) in enumerate(zip(self.processes, self.error_queues)):
            if p.exitcode == 0:
                continue
            if not q.empty():
                raise ProcessRaisedException("\n\n-- Process %d terminated with the following error:\n%s"
                                             % (i, q.get()), i, p.pid)
            raise ProcessExitedException("process %d terminated with exit code %s" % (i, p.exitcode), i, p.pid,
                                         p.exitcode)
        return True


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """fn(i, *args) in nprocs new processes (i = 0 .. nprocs - 1); join waits for them and
    raises, with the child's traceback, if one failed."""
    ctx = _mp.get_context(start_method)
    queues, procs = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        queues.append(q)
        procs.append(p)
    pc = ProcessContext(procs, queues)
    if not join:
        return pc
    while not pc.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)
