"""set_num_threads / get_num_threads: cpu_blas's thread count (FF_NUM_THREADS).

cpu_blas reads FF_NUM_THREADS once, when it loads, and sizes its pool then; there is no
call to resize it later. So set_num_threads works before the first tensor is made (where
PyTorch programs call it) and raises after cpu_blas has loaded, unless the count is the
one it already has."""
import os

from ._lib import C

__all__ = ["set_num_threads", "get_num_threads"]


def _cpu_blas_loaded():
    return any(C.ff_backend_name(C.ff_backend_at(i)) == b"cpu_blas" for i in range(C.ff_backend_count()))


def get_num_threads():
    env = os.environ.get("FF_NUM_THREADS")
    if env and env.isdigit():
        return int(env)
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def set_num_threads(n):
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 256:
        raise ValueError("set_num_threads: expected a thread count in [1, 256], got %r" % (n,))
    if n == get_num_threads():
        return
    if _cpu_blas_loaded():
        raise RuntimeError("set_num_threads(%d): cpu_blas has already started with %d thread(s) and cannot resize "
                           "its pool; call it before the first tensor is made, or set FF_NUM_THREADS"
                           % (n, get_num_threads()))
    os.environ["FF_NUM_THREADS"] = str(n)
