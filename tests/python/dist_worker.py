"""Run by tests/python/test_distributed.py under `mpirun -np N`: fusionflow.distributed's collectives,
the DistributedDataParallel wrapper (N ranks with batch b end where one process with batch
N b ends; gradient accumulation with and without no_sync) and the DistributedSampler. Exits non-zero on the first failed check."""
import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import numpy as np  # noqa: E402

import fusionflow as ff  # noqa: E402
import fusionflow.distributed as dist  # noqa: E402
import fusionflow.nn as nn  # noqa: E402
import fusionflow.nn.functional as F  # noqa: E402

dist.init_process_group()
r, n = dist.get_rank(), dist.get_world_size()

t = ff.tensor([1.0, 2.0]) * (r + 1)
dist.all_reduce(t, "sum")
assert t.tolist() == [n * (n + 1) / 2, n * (n + 1)], t
assert dist.all_gather_tensor(ff.tensor([r])).reshape(-1).tolist() == list(range(n))
outs = [ff.zeros(1) for _ in range(n)]
dist.all_gather(outs, ff.tensor([float(r)]))
assert [o.item() for o in outs] == list(range(n))
b = ff.full((3,), float(r))
dist.broadcast(b, src=n - 1)
assert b.tolist() == [n - 1.0] * 3

# data parallel: every rank starts from its own random weights; DDP makes them rank 0's
B, STEPS = 4, 10
rng = np.random.default_rng(5)
X = rng.normal(size=(STEPS * n * B, 6)).astype(np.float64)
Y = rng.normal(size=(STEPS * n * B, 2)).astype(np.float64)


def model(seed):
    return nn.Linear(6, 2, dtype=ff.float64, seed=seed)


def train(m, ddp, row0, rows):
    opt = ff.optim.SGD(list(m.parameters()), lr=0.1, momentum=0.9)
    for s in range(STEPS):
        start = s * n * B + row0
        loss = F.mse_loss(m(ff.tensor(X[start:start + rows])), ff.tensor(Y[start:start + rows]))
        opt.zero_grad()
        loss.backward()
        if ddp is not None:
            ddp.sync_gradients()
            assert ddp.buckets_started_in_backward == ddp.num_buckets == 2, (ddp.buckets_started_in_backward,
                                                                              ddp.num_buckets)
        opt.step()


dp, one = model(100 + r), model(100)
ddp = dist.DistributedDataParallel(dp, bucket_cap_mb=0.00005)  # tiny buckets: weight and bias apart
train(dp, ddp, r * B, B)
train(one, None, 0, n * B)
for a, c in ((dp.weight, one.weight), (dp.bias, one.bias)):
    diff = np.abs(a.detach().numpy() - c.detach().numpy()).max() / max(np.abs(c.detach().numpy()).max(), 1e-3)
    assert diff < 1e-6, diff

# gradient accumulation (issue 30): K backwards then one sync give every rank what one
# process gets from the same micro-batches over all ranks' rows, with no_sync or without
K = 3
XA = rng.normal(size=(K * n * B, 6)).astype(np.float64)
YA = rng.normal(size=(K * n * B, 2)).astype(np.float64)


def accumulate(m, ddp, form, row0, rows):
    ff.optim.SGD(list(m.parameters()), lr=0.1).zero_grad()
    for k in range(K):
        held = ddp is not None and (form == "no_sync" or (form == "no_sync_but_last" and k < K - 1))
        with ddp.no_sync() if held else contextlib.nullcontext():
            start = k * n * B + row0
            F.mse_loss(m(ff.tensor(XA[start:start + rows])), ff.tensor(YA[start:start + rows])).backward()
    if ddp is not None:
        ddp.sync_gradients()
        assert ddp.buckets_started_in_backward == (0 if form == "no_sync" else 2), (form, ddp.buckets_started_in_backward)


dpa, onea = model(200 + r), model(200)
ddpa = dist.DistributedDataParallel(dpa, bucket_cap_mb=0.00005)
for form in ("plain", "no_sync_but_last", "no_sync"):
    accumulate(dpa, ddpa, form, r * B, B)
    accumulate(onea, None, form, 0, n * B)
    for a, c in ((dpa.weight, onea.weight), (dpa.bias, onea.bias)):
        ga, gc = a.grad.numpy(), c.grad.numpy()
        diff = np.abs(ga - gc).max() / max(np.abs(gc).max(), 1e-6)
        assert diff < 1e-9, (form, diff)

s = dist.DistributedSampler(10, seed=1)
s.set_epoch(2)
mine = list(s)
seen = dist.all_gather_tensor(ff.tensor(mine)).reshape(-1).tolist()
assert len(mine) == (10 + n - 1) // n and set(seen) == set(range(10)), seen

try:
    dist.all_reduce(ff.ones(r + 1))
    raise SystemExit("rank %d: a shape disagreement did not raise" % r)
except ff.FusionFlowError as e:
    assert "disagree" in str(e), e
dist.barrier()
print("rank %d of %d: ok" % (r, n))
dist.destroy_process_group()
