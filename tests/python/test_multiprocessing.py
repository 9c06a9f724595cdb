"""fusionflow.multiprocessing: torch.multiprocessing's names (Python's multiprocessing plus
spawn), as imagenet/main.py imports them; spawn runs fn(i, *args) per process and raises
with the child's traceback."""
import pytest

import fusionflow as ff
import fusionflow.multiprocessing as mp


def _square_into(i, q):
    q.put((i, float((ff.tensor([float(i)]) ** 2).item())))


def _fail_on_one(i):
    if i == 1:
        raise ValueError("boom in process %d" % i)


def test_spawn_runs_every_rank_with_fusionflow():
    q = mp.get_context("spawn").SimpleQueue()
    assert mp.spawn(_square_into, args=(q,), nprocs=3) is None
    assert sorted(q.get() for _ in range(3)) == [(0, 0.0), (1, 1.0), (2, 4.0)]


def test_spawn_reports_the_childs_error():
    with pytest.raises(mp.ProcessRaisedException, match="boom in process 1"):
        mp.spawn(_fail_on_one, nprocs=2)


def test_python_names_and_sharing_strategy():
    assert mp.Process is not None and mp.Queue is not None and callable(mp.get_context)
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    with pytest.raises(RuntimeError, match="unknown strategy"):
        mp.set_sharing_strategy("carrier_pigeon")
