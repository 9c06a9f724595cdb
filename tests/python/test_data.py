"""fusionflow.utils.data against torch.utils.data (PyTorch 1.13): the same batches from the
same dataset where the order is deterministic; for shuffling, a permutation that repeats
under the same seed (the numbers are not torch's: a different generator)."""
import collections

import numpy as np
import pytest

import fusionflow as ff
from fusionflow.utils import data as fd

torch = pytest.importorskip("torch")
td = torch.utils.data


def same(got, want):
    """got (ours) has want's (torch's) structure, types, dtypes and values."""
    if isinstance(want, torch.Tensor):
        assert isinstance(got, ff.Tensor), type(got)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (got.dtype, want.dtype)
        assert got.shape == tuple(want.shape) and np.array_equal(got.numpy(), want.numpy()), (got, want)
    elif isinstance(want, dict):
        assert type(got).__name__ == type(want).__name__ and list(got) == list(want)
        for k in want:
            same(got[k], want[k])
    elif isinstance(want, (list, tuple)):
        assert type(got).__name__ == type(want).__name__ and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert type(got) is type(want) and got == want, (got, want)


def run_both(make, **kw):
    """Batches of DataLoader(make(mod)) on both sides, with the same keyword arguments."""
    ours = list(fd.DataLoader(make(ff), **kw))
    theirs = list(td.DataLoader(make(torch), **kw))
    assert len(ours) == len(theirs)
    for g, w in zip(ours, theirs):
        same(g, w)
    return ours


def tensors(mod):
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    return mod.utils.data.TensorDataset(mod.tensor(x), mod.tensor(np.arange(7)))


@pytest.mark.parametrize("kw", [dict(batch_size=2), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_size=7), dict(batch_size=10)])
def test_tensor_dataset_batches_as_torch(kw):
    run_both(tensors, **kw)
    assert len(fd.DataLoader(tensors(ff), **kw)) == len(td.DataLoader(tensors(torch), **kw))


Point = collections.namedtuple("Point", "x y")


class Samples:
    """A map-style dataset of every kind of sample default_collate takes."""

    def __init__(self, mod, kind):
        self.mod, self.kind = mod, kind

    def __len__(self):
        return 5

    def __getitem__(self, i):
        m = self.mod
        return {
            "tensor": lambda: m.tensor([float(i), 2.0 * i]),
            "numpy": lambda: np.full((2, 2), i, dtype=np.float32),
            "numpy_int": lambda: np.arange(3, dtype=np.int64) + i,
            "np_scalar": lambda: np.float32(i) / 2,
            "float": lambda: i / 3,
            "int": lambda: i,
            "bool": lambda: i % 2 == 0,
            "str": lambda: "s%d" % i,
            "bytes": lambda: b"b%d" % i,
            "dict": lambda: {"a": i, "b": np.float64(i), "c": "k"},
            "ordered": lambda: collections.OrderedDict(z=float(i), a=[i, i + 1]),
            "tuple": lambda: (m.tensor([i]), i, "t"),
            "list": lambda: [i, float(i)],
            "namedtuple": lambda: Point(i, np.array([i, i])),
            "nested": lambda: {"p": (i, [np.int64(i), {"q": 1.5 * i}])},
        }[self.kind]()


@pytest.mark.parametrize("kind", ["tensor", "numpy", "numpy_int", "np_scalar", "float", "int", "bool", "str",
                                  "bytes", "dict", "ordered", "tuple", "list", "namedtuple", "nested"])
def test_default_collate_as_torch(kind):
    run_both(lambda mod: Samples(mod, kind), batch_size=2)
    run_both(lambda mod: Samples(mod, kind), batch_size=None)  # default_convert


def test_default_collate_errors_as_torch():
    for bad in ([object(), object()], [np.array(["a"]), np.array(["b"])]):
        with pytest.raises(TypeError, match="default_collate"):
            fd.default_collate(bad)
        with pytest.raises(TypeError, match="default_collate"):
            td.default_collate(bad)
    with pytest.raises(RuntimeError, match="equal size"):
        fd.default_collate([[1, 2], [3]])


def test_concat_subset_and_operators():
    a, b = tensors(ff), fd.TensorDataset(ff.tensor([[100.0, 101.0]]), ff.tensor([100]))
    c = a + b
    assert isinstance(c, fd.ConcatDataset) and len(c) == 8 and c.cumulative_sizes == [7, 8]
    assert c[7][1].item() == 100 and c[-1][1].item() == 100 and c[-8][1].item() == 0 and c[3][1].item() == 3
    with pytest.raises(IndexError):
        c[8]
    with pytest.raises(ValueError):
        c[-9]
    s = fd.Subset(a, [6, 0, 3])
    assert len(s) == 3 and [s[i][1].item() for i in range(3)] == [6, 0, 3]
    run_both(lambda mod: mod.utils.data.ConcatDataset([tensors(mod), mod.utils.data.Subset(tensors(mod), [5, 1])]),
             batch_size=3)
    with pytest.raises(ValueError, match="size mismatch"):
        fd.TensorDataset(ff.zeros(3), ff.zeros(4))


def test_samplers_as_torch():
    for cls in ("SequentialSampler",):
        assert list(getattr(fd, cls)(range(5))) == list(getattr(td, cls)(range(5)))
    for bs, dl in ((2, False), (2, True), (5, False), (6, True)):
        assert list(fd.BatchSampler(range(5), bs, dl)) == list(td.BatchSampler(range(5), bs, dl))
        assert len(fd.BatchSampler(range(5), bs, dl)) == len(td.BatchSampler(range(5), bs, dl))
    for bad in ((range(3), 0, False), (range(3), True, False), (range(3), 2, 1)):
        with pytest.raises(ValueError):
            fd.BatchSampler(*bad)
        with pytest.raises(ValueError):
            td.BatchSampler(*bad)
    run_both(tensors, batch_sampler=[[3, 1], [0], [6, 5, 4]])
    run_both(tensors, sampler=[6, 2, 2], batch_size=2)


def test_shuffle_is_a_permutation_reproducible_under_a_seed():
    def order(**kw):
        return [int(v) for _, y in fd.DataLoader(tensors(ff), batch_size=3, shuffle=True, **kw) for v in y.tolist()]
    ff.manual_seed(7)
    a, b = order(), order()
    ff.manual_seed(7)
    assert order() == a and order() == b                 # each epoch draws anew, from the global generator
    assert sorted(a) == sorted(b) == list(range(7))
    g = ff.Generator().manual_seed(3)
    c = order(generator=g)
    assert order(generator=ff.Generator().manual_seed(3)) == c and sorted(c) == list(range(7))
    state = g.get_state()
    d = order(generator=g)
    assert order(generator=ff.Generator().set_state(state)) == d
    assert g.initial_seed() == 3 and ff.Generator().initial_seed() == torch.Generator().initial_seed()


def test_random_samplers():
    g = ff.Generator().manual_seed(0)
    r = list(fd.RandomSampler(range(4), num_samples=10, generator=g))
    assert len(r) == 10 and sorted(r[:4]) == sorted(r[4:8]) == [0, 1, 2, 3] and len(set(r[8:])) == 2
    rr = list(fd.RandomSampler(range(4), replacement=True, num_samples=50, generator=g))
    assert len(rr) == 50 and set(rr) <= {0, 1, 2, 3} and len(set(rr)) > 1
    s = list(fd.SubsetRandomSampler([10, 20, 30, 40], generator=g))
    assert sorted(s) == [10, 20, 30, 40]
    w = list(fd.WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 400, generator=g))
    assert set(w) == {1, 2} and 0.6 < w.count(2) / 400 < 0.9
    u = list(fd.WeightedRandomSampler(ff.tensor([1.0, 1.0, 5.0]), 3, replacement=False, generator=g))
    assert sorted(u) == [0, 1, 2]
    with pytest.raises(ValueError, match="num_samples"):
        fd.RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="without replacement"):
        fd.WeightedRandomSampler([1.0, 0.0], 2, replacement=False)
    with pytest.raises(ValueError, match="weights"):
        fd.WeightedRandomSampler([1.0, -1.0], 2)


@pytest.mark.parametrize("lengths", [[3, 4], [0.5, 0.5], [0.3, 0.3, 0.4], [0.1, 0.9], [7]])
def test_random_split_sizes_as_torch(lengths):
    ours = fd.random_split(range(7), lengths, generator=ff.Generator().manual_seed(1))
    theirs = td.random_split(range(7), lengths, generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert sorted(i for s in ours for i in s) == list(range(7))
    with pytest.raises(ValueError):
        fd.random_split(range(7), [3, 3])


def test_loader_argument_errors_as_torch():
    cases = [dict(sampler=[0], shuffle=True), dict(batch_sampler=[[0]], batch_size=2),
             dict(batch_sampler=[[0]], drop_last=True), dict(batch_size=None, drop_last=True),
             dict(num_workers=-1)]
    for kw in cases:
        with pytest.raises(ValueError):
            td.DataLoader(tensors(torch), **kw)
        with pytest.raises(ValueError):
            fd.DataLoader(tensors(ff), **kw)


def sharded(mod):
    """An IterableDataset that shards by worker (the pattern PyTorch's docs give), worker 0
    with more items than the others."""
    class S(mod.utils.data.IterableDataset):
        def __iter__(self):
            w = mod.utils.data.get_worker_info()
            if w is None:
                return iter(range(9))
            return iter(range(w.id, 9 if w.id == 0 else 5, w.num_workers))
    return S()


@pytest.mark.parametrize("workers,bs,drop", [(0, 2, False), (2, 2, False), (2, 3, True), (2, None, False)])
def test_iterable_dataset_with_workers_as_torch(workers, bs, drop):
    run_both(sharded, batch_size=bs, num_workers=workers, drop_last=drop)


def test_map_dataset_with_workers_as_torch_and_worker_info():
    import multiprocessing
    seen = multiprocessing.get_context("fork").SimpleQueue()  # workers are processes: they report through a queue
    ours = list(fd.DataLoader(tensors(ff), batch_size=2, num_workers=2,
                              worker_init_fn=lambda i: seen.put((i, fd.get_worker_info().id))))
    assert sorted(seen.get() for _ in range(2)) == [(0, 0), (1, 1)] and fd.get_worker_info() is None
    for g, w in zip(ours, td.DataLoader(tensors(torch), batch_size=2, num_workers=2)):
        same(g, w)
    assert len(ours) == 4


def test_distributed_sampler_in_a_loader_single_process():
    from fusionflow.utils.data.distributed import DistributedSampler
    assert DistributedSampler is fd.DistributedSampler is ff.distributed.DistributedSampler
    ds = tensors(ff)
    s = fd.DistributedSampler(ds, shuffle=True, seed=3)
    s.set_epoch(1)
    got = [int(v) for _, y in fd.DataLoader(ds, batch_size=3, sampler=s) for v in y.tolist()]
    assert sorted(got) == list(range(7)) and len(s) == 7
    s.set_epoch(1)
    assert [int(v) for _, y in fd.DataLoader(ds, batch_size=3, sampler=s) for v in y.tolist()] == got
    plain = fd.DistributedSampler(ds, shuffle=False)
    assert list(plain) == list(td.DistributedSampler(range(7), num_replicas=1, rank=0, shuffle=False))
