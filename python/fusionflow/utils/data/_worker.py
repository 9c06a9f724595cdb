"""get_worker_info(): None in the main process, else the WorkerInfo of the worker running.

DataLoader(num_workers=k) runs its k workers in this process, one after another in the
order PyTorch's loader takes their batches (dataloader.py); while a worker's code runs,
get_worker_info() describes it, so datasets that shard by worker id split as on PyTorch."""
import contextlib

__all__ = ["WorkerInfo", "get_worker_info"]

_current = None


class WorkerInfo:
    def __init__(self, id, num_workers, seed, dataset):  # noqa: A002  (torch's field name)
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return "WorkerInfo(id=%d, num_workers=%d, seed=%d, dataset=%r)" % (
            self.id, self.num_workers, self.seed, self.dataset)


def get_worker_info():
    return _current


@contextlib.contextmanager
def as_worker(info):
    global _current
    prev, _current = _current, info
    try:
        yield
    finally:
        _current = prev
