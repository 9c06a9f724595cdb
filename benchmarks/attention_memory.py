#!/usr/bin/python3
"""Peak memory of one attention training step (issue 34): F.scaled_dot_product_attention
forward + backward to q, k and v (batch 4, 8 heads, head dim 64, causal, f32), FusionFlow
beside PyTorch 1.13's composition (baselines.py's: baddbmm with an additive causal mask,
softmax, bmm). Each measurement runs in a fresh process:

  FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python \\
      /usr/bin/python3 benchmarks/attention_memory.py [--T 512,2048]

The inputs (q, k, v, the output's gradient) are made and one small step (T = 16) warms up
the code paths first; then the step's peak is measured as what it needs beyond that state:
  ff (stats):  the backend's memory_stats, peak - in_use before the step (the library's own
               count of live tensor and scratch bytes; the allocator's cache is not counted)
  ff / torch (HWM): VmHWM - VmRSS before the step, from /proc/self/status (the process's
               resident high-water mark: also the allocator's slack and any page it touched)
The ratio uses the same method on both sides (HWM); the stats figure shows that the
library's own count agrees.
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys

B, H, D = 4, 8, 64


def proc_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def run_ff(T):
    import fusionflow as ff
    import fusionflow.nn.functional as F
    from fusionflow._lib import C

    def step(T):
        q, k, v = (ff.rand(B, H, T, D, requires_grad=True) for _ in range(3))
        g = ff.ones(B, H, T, D)
        return q, k, v, g

    q, k, v, g = step(16)
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    del q, k, v, g
    q, k, v, g = step(T)
    be = C.ff_backend_default()
    use, cached, peak = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
    C.ff_backend_memory_stats(be, ctypes.byref(use), ctypes.byref(cached), ctypes.byref(peak))
    use0, rss0 = use.value, proc_kib("VmRSS")
    F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    C.ff_backend_memory_stats(be, ctypes.byref(use), ctypes.byref(cached), ctypes.byref(peak))
    return {"stats": peak.value - use0, "hwm": proc_kib("VmHWM") - rss0, "inputs": use0}


def run_torch(T):
    import torch
    torch.set_num_threads(1)

    def make(T):
        q, k, v = (torch.rand(B * H, T, D).requires_grad_() for _ in range(3))
        return q, k, v, torch.ones(B * H, T, D), torch.full((T, T), float("-inf")).triu(1).expand(B * H, T, T)

    def attn(q, k, v, causal):
        s = torch.baddbmm(causal, q, k.transpose(1, 2), alpha=D ** -0.5)
        return torch.bmm(torch.softmax(s, -1), v)

    q, k, v, g, c = make(16)
    attn(q, k, v, c).backward(g)
    del q, k, v, g, c
    q, k, v, g, c = make(T)
    rss0 = proc_kib("VmRSS")
    attn(q, k, v, c).backward(g)
    return {"hwm": proc_kib("VmHWM") - rss0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", default="512,2048")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        side, T = a.child.split(":")
        print(json.dumps(run_ff(int(T)) if side == "ff" else run_torch(int(T))))
        return 0
    env = dict(os.environ, FF_NUM_THREADS="1", OMP_NUM_THREADS="1")
    mib = 1024.0 * 1024.0
    print("%-22s %14s %14s %14s %8s" % ("workload", "ff stats", "ff HWM", "torch HWM", "ff/torch"))
    for T in [int(t) for t in a.T.split(",")]:
        r = {}
        for side in ("ff", "torch"):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "%s:%d" % (side, T)], env=env,
                                 stdout=subprocess.PIPE, check=True).stdout
            r[side] = json.loads(out)
        print("%-22s %10.1f MiB %10.1f MiB %10.1f MiB %8.3f" % (
            "attention_step_T%d" % T, r["ff"]["stats"] / mib, r["ff"]["hwm"] / mib, r["torch"]["hwm"] / mib,
            r["ff"]["hwm"] / max(r["torch"]["hwm"], 1)))
        print("  (inputs q, k, v, grad: %.1f MiB on both sides, not counted)" % (r["ff"]["inputs"] / mib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
