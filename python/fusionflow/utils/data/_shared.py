"""Tensors from DataLoader workers to the main process through shared memory.

A block is a file in /dev/shm (the memory multiprocessing.shared_memory uses on Linux),
named <prefix>-<worker pid>-<n>. The worker writes a batch tensor's bytes into a block
once - default_collate stacks the samples straight into it (stack_into_block), any other
tensor is copied in when the batch is pickled - and sends only the block's name. The
main process maps the block, unlinks its name at once and wraps the mapping as a tensor
without copying (from_numpy, through DLPack); the memory goes back to the system when that
tensor and its views die, or with the process.

The worker runs no op here that cpu_blas's thread pool could split (only
ff_tensor_to_host, a download into the block): dataloader.py says why a forked worker must
keep away from that pool.

Invariant: every block a worker creates is either unlinked by the main process when it
unpickles the message that names it (loads), or by discard / remove_leftovers when the
message is dropped; names are never reused."""
import glob
import io
import itertools
import mmap
import os
import pickle
import tempfile

import numpy as np

from ..._lib import C, check_status
from ..._backend import default_backend
from ..._device import device_of
from ..._tensor import Tensor, tensor
from ..._factories import from_numpy, stack
from ... import _dtype

__all__ = ["Shipper", "loads", "discard", "remove_leftovers", "stack_into_block"]

_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_HOST_MEMORY = 0x1  # FF_BACKEND_HOST_MEMORY (include/ff/backend_abi.h)
_FORK_UNSAFE = ("opencl", "cuda")  # device contexts a forked child must not use (its parent's)
_counter = itertools.count()
_prefix = None  # set in a worker process by Shipper: where its blocks are named
_forked = False  # set in a forked worker: device (non-host) tensors must not be touched there


def _new_block(nbytes):
    """(path, numpy uint8 array over a fresh shared mapping of nbytes)."""
    path = os.path.join(_DIR, "%s-%d-%d" % (_prefix, os.getpid(), next(_counter)))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, nbytes)
        mm = mmap.mmap(fd, nbytes)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    return path, np.frombuffer(mm, dtype=np.uint8)


def _shippable(t):
    """Whether t's bytes can go through a block: a NumPy dtype, not empty (any backend:
    ff_tensor_to_host downloads from device memory too)."""
    return t.dtype.np is not None and t.numel() > 0


def _tensor_in_block(shape, dt, device):
    """A tensor of shape and dtype viewing a fresh block (on a backend that _views_host),
    tagged with the block's path and the device the batch is to come back on."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.np.itemsize
    path, raw = _new_block(nbytes)
    t = from_numpy(raw.view(dt.np).reshape(shape))
    t.__dict__["_ff_block"] = (path, str(device))
    return t, raw.ctypes.data


def _views_host(t):
    """Whether t is on the default backend and that backend's tensors are host memory, so
    that from_numpy gives a view there (not a copy: guarded, opencl)."""
    be = C.ff_backend_default()
    return str(t.device) == str(device_of(default_backend())) and bool(C.ff_backend_flags(be) & _HOST_MEMORY)


def _refuse_in_fork(t):
    if _forked and t.device.type in _FORK_UNSAFE:
        raise RuntimeError("DataLoader worker: a batch holds a tensor on device '%s'; a forked worker may only use "
                           "host backends (cpu, cpu_ref): the device's context belongs to the parent process. "
                           "Return CPU tensors from the dataset, or use multiprocessing_context='spawn'" % t.device)


def stack_into_block(batch):
    """default_collate's stack in a worker: the samples' bytes go straight into one block.
    Samples of different shapes, dtypes or devices, not shippable, or not on the default
    backend (the one from_numpy views host memory on) take ff.stack (its rules and errors)."""
    first = batch[0]
    if _prefix is None or not _views_host(first) or not all(
            isinstance(t, Tensor) and t.shape == first.shape and t.dtype is first.dtype and t.device == first.device
            and _shippable(t) for t in batch):
        return stack(list(batch), 0)
    out, addr = _tensor_in_block((len(batch),) + tuple(first.shape), first.dtype, first.device)
    row = first.numel() * first.dtype.np.itemsize
    for i, t in enumerate(batch):
        check_status(C.ff_tensor_to_host(t._ptr, addr + i * row, row))
    return out


def _rebuild(path, shape, code, requires_grad, device):
    """Main process: the tensor over a worker's block (no copy on 'cpu'); the name goes at once."""
    dt = _dtype.from_code(code)
    fd = os.open(path, os.O_RDWR)
    try:
        nbytes = os.fstat(fd).st_size
        mm = mmap.mmap(fd, nbytes)
    finally:
        os.close(fd)
        os.unlink(path)
    arr = np.frombuffer(mm, dtype=dt.np).reshape(shape)
    if device == str(device_of(default_backend())):
        t = from_numpy(arr)  # a view of the block
    else:  # another backend (cpu_ref, opencl): a copy onto it, as the worker's tensor was there
        t = tensor(arr, dtype=dt, device=device)
    return t.requires_grad_() if requires_grad else t


class _BlockPickler(pickle.Pickler):
    """Pickles host tensors as the names of blocks holding their bytes."""

    def __init__(self, f, blocks):
        super().__init__(f, pickle.HIGHEST_PROTOCOL)
        self.blocks = blocks

    def reducer_override(self, obj):
        if not isinstance(obj, Tensor):
            return NotImplemented
        _refuse_in_fork(obj)
        device = str(obj.device)  # the batch comes back on the device it was made on
        if not _shippable(obj):
            return NotImplemented  # Tensor.__reduce__: a pickled copy (bfloat16, empty tensors)
        tag = obj.__dict__.pop("_ff_block", None)  # a block is named once: a second send copies
        if tag is None:
            nbytes = obj.numel() * obj.dtype.np.itemsize
            path, raw = _new_block(nbytes)
            check_status(C.ff_tensor_to_host(obj._ptr, raw.ctypes.data, nbytes))
            tag = (path, device)
        path, device = tag
        self.blocks.append(path)
        return (_rebuild, (path, tuple(obj.shape), obj.dtype.code, obj.requires_grad, device))


class Shipper:
    """Worker side: dumps(obj) -> (bytes, names of the blocks they refer to)."""

    def __init__(self, prefix, forked):
        global _prefix, _forked
        _prefix, _forked = prefix, forked

    @staticmethod
    def dumps(obj):
        f, blocks = io.BytesIO(), []
        try:
            _BlockPickler(f, blocks).dump(obj)
        except BaseException:
            discard(blocks)
            raise
        return f.getvalue(), blocks


def loads(payload, blocks):
    """Main side: the object; any block its pickle did not unlink is removed."""
    try:
        return pickle.loads(payload)
    finally:
        discard(blocks)


def discard(blocks):
    for path in blocks:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def remove_leftovers(prefix):
    """Blocks of a pool's workers that no message named to the main process (a worker
    killed between writing a block and sending it, messages dropped at shutdown)."""
    discard(glob.glob(os.path.join(_DIR, glob.escape(prefix) + "-*")))
