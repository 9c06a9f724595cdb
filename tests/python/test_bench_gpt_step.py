"""benchmarks/bench_gpt_step.py's correctness half at its --tiny size on the CPU: the same
nanoGPT model (examples/tiny_gpt.py) built on PyTorch and on FusionFlow from the same
weights, three AdamW steps in bf16 autocast on the same batches: FusionFlow's losses follow
PyTorch's (both sides round to bf16 inside the autocast region: 2e-2 relative, the
benchmark's own bound), and the step through fusionflow.compile (warm-up, capture, a
replay) gives FusionFlow's eager losses exactly. FF_TEST_GPT_FF_DEVICE runs FusionFlow's
side on another device (tests/cuda_emu: 'cuda_emu', the emulated cuda plugin, where the
replay goes through recorded CUDA-graph runs and the attention through the tensor-core
kernels), PyTorch's staying on the CPU."""
import os
import sys

import pytest

torch = pytest.importorskip("torch")
import fusionflow as ff  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
import bench_gpt_step as bench  # noqa: E402


FF_DEVICE = os.environ.get("FF_TEST_GPT_FF_DEVICE") or None


def test_tiny_gpt_step_matches_torch_and_replays():
    r = bench.check_losses(torch, ff, bench.TINY, "cpu", 3, 2e-2, FF_DEVICE)
    assert len(r["ff"]) == 3 and all(x == x for x in r["ff"])
    assert r["ff_vs_torch_rel"] <= 2e-2, r
    assert r["ff_graph"] == r["ff"], r
    assert r["graph_replays"] >= 1, r
    if FF_DEVICE == "cuda_emu":
        assert r["graph_device_runs"] >= 1, r
    assert r["ok"]
