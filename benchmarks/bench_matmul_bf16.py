#!/usr/bin/python3
"""bf16 matmul side by side in one process (issue 35): FusionFlow on bf16 (cpu_blas:
oneDNN's matmul primitive where it runs on bf16 hardware), FusionFlow's own f32 path on
the same shape, and torch.mm on bf16 (oneDNN inside PyTorch), one thread each, the three
interleaved round by round so that a loaded machine slows all of them alike; medians.

    FF_NUM_THREADS=1 OMP_NUM_THREADS=1 FUSIONFLOW_LIB=build/lib/libfusionflow.so \\
        PYTHONPATH=python /usr/bin/python3 benchmarks/bench_matmul_bf16.py [--sizes 512,1024,2048] [--rounds 15]

oneDNN called directly (no framework around it, bf16 dst, primitive made once) is the
"onednn" column: ff-dnnl-probe (built beside ff-bench where oneDNN is; --probe, default
the bin/ beside FUSIONFLOW_LIB's lib/) run once per round between the others, its own
median of a short burst taken as that round's sample. Without the probe the column is
left out.
"""
import argparse
import os
import statistics
import subprocess

os.environ.setdefault("FF_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import fusionflow as ff  # noqa: E402
import torch  # noqa: E402

from burst import timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--burst", type=int, default=5, help="back-to-back calls per contender and round")
    lib = os.environ.get("FUSIONFLOW_LIB", "build/lib/libfusionflow.so")
    ap.add_argument("--probe", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "bin",
                                                    "ff-dnnl-probe"))
    a = ap.parse_args()
    probe = a.probe if os.access(a.probe, os.X_OK) else None
    torch.set_num_threads(1)
    cpu = open("/proc/cpuinfo").read()
    model = next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("model name")), "?")
    flags = [f for f in ("amx_bf16", "avx512_bf16", "avx512f", "avx2") if " %s" % f in cpu]
    print("CPU: %s (%s); 1 thread; medians of %d interleaved rounds of %d calls each" % (
        model, " ".join(flags), a.rounds, a.burst))
    print("%-18s %12s %12s %12s %12s %8s %9s %10s" % ("workload", "ff bf16", "ff f32", "torch bf16", "onednn",
                                                     "vs f32", "vs torch", "vs onednn"))
    for n in [int(s) for s in a.sizes.split(",")]:
        t32 = torch.rand(n, n) * 10 - 5, torch.rand(n, n) * 10 - 5
        tb = [x.bfloat16() for x in t32]
        fb = [ff.tensor(x.float().numpy()).to(ff.bfloat16) for x in tb]
        f32 = [ff.tensor(x.float().numpy()) for x in tb]
        runs = {"ff": (lambda: ff.matmul(*fb).numel()), "f32": (lambda: ff.matmul(*f32).numel()),
                "torch": (lambda: torch.mm(*tb))}
        if probe:  # its own timing of the primitive alone, not this process's clock
            runs["onednn"] = lambda n=n: float(subprocess.run([probe, str(n), "1", "0.1", "quick"], check=True,
                                                              capture_output=True, text=True).stdout.split("\t")[4])
        got = ff.matmul(*fb).to(ff.float32).numpy()
        want = torch.mm(tb[0].float(), tb[1].float()).numpy()
        err = abs(got - want).max() / (abs(want).max() + 1e-30)
        for fn in runs.values():
            fn()  # warm-up: primitives, allocator
        t = {k: [] for k in runs}
        for _ in range(a.rounds):
            for k, fn in runs.items():
                t[k].append(fn() if k == "onednn" else timed(fn, a.burst))
        m = {k: statistics.median(v) for k, v in t.items()}
        od = m.get("onednn", float("nan"))
        print("%-18s %9.3f ms %9.3f ms %9.3f ms %9.3f ms %7.2fx %8.2fx %9.2fx   (max rel. err %.1e)" % (
            "matmul_bf16_%d" % n, m["ff"] * 1e3, m["f32"] * 1e3, m["torch"] * 1e3, od * 1e3, m["f32"] / m["ff"],
            m["torch"] / m["ff"], od / m["ff"], err))


if __name__ == "__main__":
    main()
