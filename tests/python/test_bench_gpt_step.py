"""benchmarks/bench_gpt_step.py's correctness half at its --tiny size on the CPU: the same
nanoGPT model (examples/tiny_gpt.py) built on PyTorch and on FusionFlow from the same
weights, three AdamW steps in bf16 autocast on the same batches: FusionFlow's losses follow
PyTorch's (both sides round to bf16 inside the autocast region: 2e-2 relative, the
benchmark's own bound), and the step through fusionflow.compile (warm-up, capture, a
replay) gives FusionFlow's eager losses exactly."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import fusionflow as ff  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import bench_gpt_step as bench  # noqa: E402


def test_tiny_gpt_step_matches_torch_and_replays():
    r = bench.check_losses(torch, ff, bench.TINY, "cpu", 3, 2e-2)
    assert len(r["ff"]) == 3 and all(x == x for x in r["ff"])
    assert r["ff_vs_torch_rel"] <= 2e-2, r
    assert r["ff_graph"] == r["ff"], r
    assert r["graph_replays"] >= 1, r
    assert r["ok"]
