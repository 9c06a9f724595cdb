"""Data-parallel training across processes on MPI, after torch.distributed: run a script
under `mpirun -np N python3 script.py`; outside mpirun (or built without MPI) it is one
process of size 1 and every collective is the identity.

    import fusionflow.distributed as dist
    dist.init_process_group()
    model = dist.DistributedDataParallel(model)      # rank 0's weights everywhere
    sampler = dist.DistributedSampler(len(data), shuffle=True, seed=0)
    for epoch in ...: sampler.set_epoch(epoch); for idx in batches(list(sampler)): ...
        loss.backward(); model.sync_gradients(); opt.step()

Differences from torch.distributed: one process group (no new_group, no backend
argument); `sync_gradients()` after backward completes the averaging (the buckets start
during backward, through the engine's post-accumulate-grad hooks, as PyTorch's do); a
shape or dtype disagreement between ranks raises on every rank instead of hanging.
Gradient accumulation as in PyTorch: several backwards, then `sync_gradients()`, give the
mean over the ranks of the accumulated .grad; `with model.no_sync():` around all but the
last backward saves the reductions in between."""
import contextlib
import ctypes

from ._lib import C, check_status
from ._tensor import as_tensor, wrap

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
           "get_world_size", "get_local_rank", "barrier", "all_reduce", "broadcast", "all_gather",
           "all_gather_tensor", "ReduceOp", "DistributedDataParallel", "DistributedSampler"]


class ReduceOp:
    SUM, AVG, MAX, MIN = 0, 1, 2, 3


_OPS = {"sum": 0, "mean": 1, "avg": 1, "max": 2, "min": 3}


def is_available():
    """True when FusionFlow was built with MPI."""
    return bool(C.ff_dist_built_with_mpi())


def init_process_group(backend=None, timeout=None):
    """Joins the MPI job (backend, when given, must be 'mpi'); timeout in seconds or a
    datetime.timedelta bounds how long a collective waits for the other ranks."""
    if backend not in (None, "mpi"):
        raise ValueError("init_process_group: only the 'mpi' backend is offered, got %r" % (backend,))
    if timeout is not None:
        C.ff_dist_set_timeout(float(getattr(timeout, "total_seconds", lambda: timeout)()))
    check_status(C.ff_dist_init())


def destroy_process_group():
    check_status(C.ff_dist_finalize())


def is_initialized():
    return bool(C.ff_dist_is_initialized())


def get_rank():
    return C.ff_dist_rank()


def get_world_size():
    return C.ff_dist_size()


def get_local_rank():
    return C.ff_dist_local_rank()


def barrier():
    check_status(C.ff_dist_barrier())


def _op(op):
    if isinstance(op, str):
        if op.lower() not in _OPS:
            raise ValueError("unknown reduce op %r" % (op,))
        return _OPS[op.lower()]
    return int(op)


def all_reduce(tensor, op=ReduceOp.SUM):
    """In place, as torch.distributed.all_reduce; op: ReduceOp or 'sum'/'mean'/'max'/'min'."""
    check_status(C.ff_dist_allreduce(tensor._ptr, _op(op)))
    return tensor


def broadcast(tensor, src=0):
    check_status(C.ff_dist_broadcast(tensor._ptr, int(src)))
    return tensor


def all_gather_tensor(tensor):
    """[world_size, *tensor.shape]: every rank's tensor, rank r at index r."""
    t = as_tensor(tensor)
    return wrap(C.ff_dist_allgather(t._ptr))


def all_gather(tensor_list, tensor):
    """As torch.distributed.all_gather: fills tensor_list (world_size tensors) in place."""
    g = all_gather_tensor(tensor)
    if len(tensor_list) != g.shape[0]:
        raise ValueError("all_gather: tensor_list has %d tensors, world size is %d" % (len(tensor_list), g.shape[0]))
    for r, t in enumerate(tensor_list):
        t.copy_(g[r])
    return tensor_list


class DistributedDataParallel:
    """Wraps a module on the C data-parallel wrapper (ff_dist_ddp): rank 0's parameters
    (and buffers) are broadcast at construction; during backward each bucket of
    bucket_cap_mb starts its allreduce as soon as backward has finished its parameters;
    `sync_gradients()` (after backward, before the optimizer step) waits for them and
    installs the mean gradients; after several backwards, the mean of the accumulated
    .grad. Calls and attribute reads go to the module."""

    def __init__(self, module, bucket_cap_mb=25):
        object.__setattr__(self, "module", module)
        object.__setattr__(self, "_ddp", None)
        from ._tensor import no_grad
        with no_grad():
            for _, b in module.named_buffers():
                broadcast(b, 0)
        params = [p for p in module.parameters() if p.requires_grad]
        holder = C.ff_identity()  # a C module holding the parameters, for ff_dist_ddp
        if not holder:
            check_status(1)
        try:
            for i, p in enumerate(params):
                check_status(C.ff_module_register_parameter(holder, b"p%d" % i, p._ptr))
            ddp = C.ff_dist_ddp_new(holder, max(1, int(bucket_cap_mb * (1 << 20))))
        finally:
            C.ff_module_release(holder)  # the wrapper keeps its own reference
        if not ddp:
            check_status(1)
        object.__setattr__(self, "_ddp", ddp)
        object.__setattr__(self, "_free", C.ff_dist_ddp_free)

    def __del__(self):
        if getattr(self, "_ddp", None):
            self._free(self._ddp)
            object.__setattr__(self, "_ddp", None)

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.module, name)

    def sync_gradients(self):
        check_status(C.ff_dist_ddp_sync_grads(self._ddp))

    @contextlib.contextmanager
    def no_sync(self):
        """As torch's DistributedDataParallel.no_sync: the backwards inside start no
        reduction and only accumulate .grad; the first backward after it (or
        sync_gradients) reduces the sum once."""
        was = C.ff_dist_ddp_no_sync(self._ddp, True)
        try:
            yield
        finally:
            C.ff_dist_ddp_no_sync(self._ddp, was)

    @property
    def num_buckets(self):
        return C.ff_dist_ddp_num_buckets(self._ddp)

    @property
    def buckets_started_in_backward(self):
        """How many buckets the last step started during backward (the rest at sync)."""
        return C.ff_dist_ddp_buckets_started_in_backward(self._ddp)


class DistributedSampler:
    """As torch.utils.data.DistributedSampler over range(n) (or a sized dataset): this rank's
    indices for the epoch set with set_epoch; the same order seed on every rank."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas not in (None, get_world_size()) or rank not in (None, get_rank()):
            raise ValueError("DistributedSampler: num_replicas and rank come from the process group")
        self.n = dataset if isinstance(dataset, int) else len(dataset)
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def __len__(self):
        return int(C.ff_dist_shard_size(self.n, self.drop_last))

    def __iter__(self):
        k = len(self)
        buf = (ctypes.c_int64 * max(k, 1))()
        check_status(C.ff_dist_shard_indices(self.n, self.seed, self.epoch, self.shuffle, self.drop_last, buf, k))
        return iter(list(buf[:k]))
