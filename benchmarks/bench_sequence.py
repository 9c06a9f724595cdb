#!/usr/bin/python3
"""Sequence-model workloads of issue 34 through the Python front end, beside PyTorch 1.13:
medians of the step times at 1 and 2 threads, each (library, workload, threads) in a fresh
subprocess.

  nanogpt_step        nanoGPT's model (examples/tiny_gpt.py: 4 layers, 4 heads, d = 128,
                      T = 128, batch 12, vocab 65, no dropout), forward + backward + AdamW
                      step; identical initial weights (each parameter drawn by NumPy from its
                      name) and batch, so the first losses must agree (checked).
  attention_fwd_T     F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v
  attention_step_T    [4, 8, T, 64] f32; _step adds the backward of a fixed upstream gradient.

Ours calls F.scaled_dot_product_attention; PyTorch 1.13 has no fused attention on CPU, so
its side is a composition: in nanogpt_step the one nanoGPT writes (matmul, masked_fill,
softmax, matmul: tiny_gpt.composed_attention); in attention_* its fastest form here, baddbmm
with the causal mask as an additive -inf matrix and the scale as alpha, softmax, bmm
(--torch-attention composed: nanoGPT's form there too).

Peak memory of one attention step (the first, in a fresh process, inputs already made):
  ours  the backend's memory stats (ff_backend_memory_stats: the peak of bytes in use,
        minus the bytes in use before the step);
  both  the process's peak RSS (getrusage's ru_maxrss after the step) minus its RSS before
        the step (/proc/self/statm): the same yardstick for the two libraries.

    /usr/bin/python3 benchmarks/bench_sequence.py [--threads 1,2] [--runs 10] [--T 512,2048]
                                                  [--only nanogpt|attention] [--backend NAME]
                                                  [--torch-attention baddbmm|composed] [--load N]

--load N runs N busy-loop processes meanwhile (a loaded machine): with --load 1 on 2 cores
one core is taken, and 2 threads must still be no slower than 1 (issue 49).

--backend sets FF_BACKEND for our side (default: the library's default, cpu_blas).

Threads: FF_NUM_THREADS / OMP_NUM_THREADS / OPENBLAS_NUM_THREADS = n in the child's
environment, fusionflow.set_num_threads(n) and torch.set_num_threads(n). Needs PyTorch and
a built library (FUSIONFLOW_LIB, else build/lib/libfusionflow.so).
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
import zlib

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "examples"))

GPT_CFG = dict(vocab_size=65, block_size=128, n_layer=4, n_head=4, n_embd=128)
GPT_BATCH = 12
ATT_B, ATT_H, ATT_D = 4, 8, 64


def load(lib_name, threads):
    if lib_name == "torch":
        import torch
        torch.set_num_threads(threads)
        return torch
    import fusionflow
    fusionflow.set_num_threads(threads)  # before the first tensor: cpu_blas sizes its pool at load
    return fusionflow


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def maxrss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def ff_memory_stats(ff):
    """(in use, peak) bytes of the default backend (ff_backend_memory_stats)."""
    import ctypes
    from fusionflow._lib import C, check_status
    v = [ctypes.c_size_t(0) for _ in range(3)]
    check_status(C.ff_backend_memory_stats(C.ff_backend_default(), *(ctypes.byref(x) for x in v)))
    return v[0].value, v[2].value


CPU_TIMES = []  # the process CPU time of each timed run, beside its wall time


def timed(fn, warmup, runs):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        times.append(time.perf_counter() - t0)
        CPU_TIMES.append(time.process_time() - c0)
    return times


def nanogpt_step(lib, runs):
    from tiny_gpt import gpt_classes
    GPTConfig, GPT = gpt_classes(lib)
    model = GPT(GPTConfig(**GPT_CFG))
    with lib.no_grad():
        for name, p in model.named_parameters():  # the same numbers on both sides
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            shape = tuple(p.shape)
            if p.dim() == 2:
                value = rng.normal(0.0, 0.02, shape)
            else:
                value = np.ones(shape) if "ln" in name and name.endswith("weight") else np.zeros(shape)
            p.copy_(lib.tensor(value.astype(np.float32)))
    rng = np.random.default_rng(0)
    data = rng.integers(0, GPT_CFG["vocab_size"], (GPT_BATCH, GPT_CFG["block_size"] + 1))
    x, y = lib.tensor(data[:, :-1]), lib.tensor(data[:, 1:])
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    losses = []

    def step():
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    times = timed(step, 2, runs)
    return {"times": times, "first_loss": losses[0], "last_loss": losses[-1]}


def baddbmm_attention(torch):
    """Causal attention as baddbmm (additive -inf mask, scale as alpha), softmax, bmm."""
    masks = {}

    def sdpa(q, k, v, is_causal=True):
        B, H, T, D = q.shape
        if T not in masks:
            masks[T] = torch.full((T, T), float("-inf")).triu(1)
        s = torch.baddbmm(masks[T], q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2),
                          alpha=1.0 / math.sqrt(D))
        return torch.bmm(torch.softmax(s, dim=-1), v.reshape(B * H, T, D)).view(B, H, T, D)
    return sdpa


def attention(lib, T, backward, runs, torch_form):
    from tiny_gpt import composed_attention
    F = lib.nn.functional
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is None:
        sdpa = baddbmm_attention(lib) if torch_form == "baddbmm" else composed_attention(lib)
    rng = np.random.default_rng(T)
    q, k, v, go = (lib.tensor(rng.standard_normal((ATT_B, ATT_H, T, ATT_D)).astype(np.float32)) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(backward)

    def step():
        if backward:
            sdpa(q, k, v, is_causal=True).backward(go)
            float(q.grad[0, 0, 0, 0])  # the work is done when its result is read
            q.grad = k.grad = v.grad = None
        else:
            with lib.no_grad():
                float(sdpa(q, k, v, is_causal=True)[0, 0, 0, 0])
    out = {}
    # peak memory of the first step, before any warm-up
    ours = lib.__name__ == "fusionflow"
    rss0, (in_use0, _) = rss_bytes(), ff_memory_stats(lib) if ours else (0, 0)
    step()
    out["rss_peak_delta"] = max(0, maxrss_bytes() - rss0)
    if ours:
        out["ff_peak_delta"] = ff_memory_stats(lib)[1] - in_use0
    out["times"] = timed(step, 1, runs)
    return out


def child(spec):
    lib_name, workload, threads, runs, torch_form = spec.split(":")
    lib = load(lib_name, int(threads))
    if workload == "nanogpt_step":
        res = nanogpt_step(lib, int(runs))
    else:
        kind, T = workload.rsplit("_T", 1)
        res = attention(lib, int(T), kind == "attention_step", int(runs), torch_form)
    res["cpu"] = CPU_TIMES
    print("RESULT " + json.dumps(res))


def run_child(lib_name, workload, threads, runs, backend=None, torch_form="baddbmm"):
    env = dict(os.environ, FF_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    if backend:
        env["FF_BACKEND"] = backend
    spec = "%s:%s:%d:%d:%s" % (lib_name, workload, threads, runs, torch_form)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", spec], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode or not lines:
        sys.exit("bench_sequence: %s failed (exit %d):\n%s%s" % (spec, p.returncode, p.stdout, p.stderr))
    return json.loads(lines[-1][len("RESULT "):])


def mib(n):
    return "%.1f MiB" % (n / 2.0 ** 20)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=10, help="timed steps per measurement (T = 2048: a third)")
    ap.add_argument("--T", default="512,2048")
    ap.add_argument("--only", choices=("nanogpt", "attention"))
    ap.add_argument("--backend", help="FF_BACKEND for our side")
    ap.add_argument("--torch-attention", choices=("baddbmm", "composed"), default="baddbmm",
                    help="PyTorch's form in attention_*: baddbmm (its fastest here) or nanoGPT's composition")
    ap.add_argument("--load", type=int, default=0,
                    help="busy-loop processes run meanwhile: a loaded machine (issue 49's threads)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.load)]
    try:
        report(args)
    finally:
        for h in hogs:
            h.kill()
            h.wait()


def report(args):

    workloads = []
    if args.only != "attention":
        workloads.append("nanogpt_step")
    if args.only != "nanogpt":
        for T in (int(t) for t in args.T.split(",")):
            workloads += ["attention_fwd_T%d" % T, "attention_step_T%d" % T]
    print("%-20s %3s %12s %12s %8s   %s" % ("workload", "thr", "fusionflow", "pytorch", "ff/pt",
                                             "notes (backend: %s; PyTorch's attention: %s)"
                                             % (args.backend or "default", args.torch_attention)))
    for w in workloads:
        for n in (int(t) for t in args.threads.split(",")):
            runs = max(3, args.runs // 3) if w.endswith("T2048") else args.runs
            ours = run_child("fusionflow", w, n, runs, args.backend)
            theirs = run_child("torch", w, n, runs, torch_form=args.torch_attention)
            a, b = statistics.median(ours["times"]), statistics.median(theirs["times"])
            notes = "%d runs; CPU time ff %.1f ms, pt %.1f ms; spread ff %.0f-%.0f ms, pt %.0f-%.0f ms" % (
                runs, 1e3 * statistics.median(ours["cpu"]), 1e3 * statistics.median(theirs["cpu"]),
                1e3 * min(ours["times"]), 1e3 * max(ours["times"]),
                1e3 * min(theirs["times"]), 1e3 * max(theirs["times"]))
            if w == "nanogpt_step":
                if not math.isclose(ours["first_loss"], theirs["first_loss"], rel_tol=1e-4):
                    sys.exit("bench_sequence: the two models differ: first loss %.6f vs %.6f"
                             % (ours["first_loss"], theirs["first_loss"]))
                notes += "; first loss %.4f both" % ours["first_loss"]
            if w.startswith("attention_step"):
                notes += "; peak: ff stats %s, ff RSS +%s, pt RSS +%s" % (
                    mib(ours["ff_peak_delta"]), mib(ours["rss_peak_delta"]), mib(theirs["rss_peak_delta"]))
            print("%-20s %3d %9.1f ms %9.1f ms %7.2fx   %s" % (w, n, 1e3 * a, 1e3 * b, a / b, notes), flush=True)
    print("load average: %.1f %.1f %.1f (2-core machine; %d busy-loop processes of this run)"
          % (os.getloadavg() + (args.load,)))


if __name__ == "__main__":
    main()
