#!/usr/bin/env python3
"""A nanoGPT-size training step in bf16 autocast, FusionFlow beside PyTorch on the same
device (issue 52's "nanoGPT bf16 step" row; scripts/gpu-check.sh runs it on the GPU).

The model is examples/tiny_gpt.py's GPT (nanoGPT's: tied embeddings, pre-LN blocks, causal
scaled_dot_product_attention, GELU MLP), written once and built on each library with the
same weights (copied from PyTorch's). A step is nanoGPT's train.py step: the forward and
the loss under autocast(bfloat16), backward and AdamW (betas 0.9/0.95, weight decay 0.1)
outside it. Three sides, timed in alternation, a sample each in turn, medians of the
per-step time (wall time with a device sync on a GPU; process CPU time on the CPU):
  torch     PyTorch eager;
  ff        FusionFlow eager;
  ff_graph  the same FusionFlow step through fusionflow.compile (one captured graph,
            replayed; on cuda its runs go through CUDA graphs).
Before timing, the first steps' losses are compared: FusionFlow's against PyTorch's
(bf16 autocast on both sides: within --loss-tol, relative) and the compiled step's against
FusionFlow's eager ones (the same kernels: equal). The exit status is 1 when they differ.

    python3 benchmarks/bench_gpt_step.py --device cuda --json out.json    # nanoGPT shakespeare-char size
    python3 benchmarks/bench_gpt_step.py --tiny --device cpu               # the smoke test's size

Sizes: n_layer 6, n_head 6, n_embd 384, block 256, batch 64, vocab 65 (nanoGPT's
config/train_shakespeare_char.py); --tiny: 2 layers, 2 heads, 64, block 32, batch 4.
Targets (gpu-check's report): ff <= 1.0x torch, ff_graph <= 0.8x torch.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from tiny_gpt import gpt_classes  # noqa: E402

FULL = dict(vocab_size=65, block_size=256, n_layer=6, n_head=6, n_embd=384, batch=64)
TINY = dict(vocab_size=65, block_size=32, n_layer=2, n_head=2, n_embd=64, batch=4)


class Side:
    """One library's model, optimizer, batch and step function on a device."""

    def __init__(self, lib, cfg, device, state=None):
        GPTConfig, GPT = gpt_classes(lib)
        self.lib, self.device = lib, device
        conf = {k: v for k, v in cfg.items() if k != "batch"}
        lib.manual_seed(1337)
        self.model = GPT(GPTConfig(**conf))
        if state is not None:  # PyTorch's weights, as numpy arrays by name
            own = self.model.state_dict()
            self.model.load_state_dict({k: lib.tensor(state[k], dtype=own[k].dtype) for k in own})
        self.model.to(device)
        self.opt = lib.optim.AdamW(self.model.parameters(), lr=6e-4, betas=(0.9, 0.95), weight_decay=0.1)
        name = str(device)  # 'cuda', 'cuda:0'; not a backend named cuda_emu
        self.dev_type = "cuda" if name == "cuda" or name.startswith("cuda:") else "cpu"

    def batch(self, x, y):
        return self.lib.tensor(x).to(self.device), self.lib.tensor(y).to(self.device)

    def step(self, x, y):
        lib = self.lib
        with lib.autocast(device_type=self.dev_type, dtype=lib.bfloat16):
            _, loss = self.model(x, y)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss

    def sync(self):
        if self.dev_type == "cuda":
            self.lib.cuda.synchronize()


def batches(cfg, n, seed=0):
    """n (x, y) batches of random tokens as nested lists (either library takes them)."""
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        rows = [[rng.randrange(cfg["vocab_size"]) for _ in range(cfg["block_size"] + 1)] for _ in range(cfg["batch"])]
        out.append(([r[:-1] for r in rows], [r[1:] for r in rows]))
    return out


def sides(torch, ff, cfg, device, ff_device=None):
    """(torch side, ff eager side, ff compiled side and its step), the ff ones with
    PyTorch's initial weights, on ff_device (default: device)."""
    t = Side(torch, cfg, device)
    state = {k: v.detach().float().cpu().numpy() for k, v in t.model.state_dict().items()}
    f = Side(ff, cfg, ff_device or device, state)
    g = Side(ff, cfg, ff_device or device, state)
    gstep = ff.compile(g.step)
    return t, f, g, gstep


def check_losses(torch, ff, cfg, device, steps, tol, ff_device=None):
    """Runs `steps` steps on each side from the same weights and batches: the losses,
    and whether FusionFlow's follow PyTorch's within tol and the compiled step's equal
    FusionFlow's eager ones."""
    t, f, g, gstep = sides(torch, ff, cfg, device, ff_device)
    data = batches(cfg, steps, seed=1)
    lt, lf, lg = [], [], []
    for x, y in data:
        lt.append(float(t.step(*t.batch(x, y))))
        lf.append(float(f.step(*f.batch(x, y))))
        lg.append(float(gstep(*g.batch(x, y))))
    rel = max(abs(a - b) / abs(b) for a, b in zip(lf, lt))
    stats = ff.graph_stats(gstep) or {}
    return {"torch": lt, "ff": lf, "ff_graph": lg, "ff_vs_torch_rel": rel, "graph_replays": stats.get("replays", 0),
            "graph_device_runs": stats.get("device_runs", 0),
            "ok": rel <= tol and lg == lf and stats.get("replays", 0) >= 1}


def per_step(side, step, data, steps, cpu):
    clock = time.process_time if cpu else time.perf_counter
    side.sync()
    t0 = clock()
    for i in range(steps):
        step(*data[i % len(data)])
    side.sync()
    return (clock() - t0) / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ff-device", help="FusionFlow's device when it differs (a backend's name, e.g. cuda_emu)")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--samples", type=int, default=7)
    ap.add_argument("--steps", type=int, default=5, help="steps a sample")
    ap.add_argument("--loss-tol", type=float, default=2e-2)
    ap.add_argument("--json")
    args = ap.parse_args()
    import torch
    import fusionflow as ff
    cfg = TINY if args.tiny else FULL
    name = "gpt_step_bf16_%s" % ("tiny" if args.tiny else "shakespeare_char")
    check = check_losses(torch, ff, cfg, args.device, 3, args.loss_tol, args.ff_device)
    print("%s losses: torch %s, ff %s, ff compiled %s (ff vs torch: %.2e relative, at most %g)"
          % (name, check["torch"], check["ff"], check["ff_graph"], check["ff_vs_torch_rel"], args.loss_tol))
    t, f, g, gstep = sides(torch, ff, cfg, args.device, args.ff_device)
    data = {k: [s.batch(x, y) for x, y in batches(cfg, 4, seed=2)] for k, s in (("torch", t), ("ff", f), ("ff_graph", g))}
    runs = {"torch": (t, t.step), "ff": (f, f.step), "ff_graph": (g, gstep)}
    cpu = args.device == "cpu"
    for k, (s, fn) in runs.items():  # warm-up: caches, autotuning, the compiled step's capture
        per_step(s, fn, data[k], 3, cpu)
    times = {k: [] for k in runs}
    order = list(runs)
    for i in range(args.samples):
        for k in order[i % 3:] + order[:i % 3]:  # who goes first rotates
            s, fn = runs[k]
            times[k].append(per_step(s, fn, data[k], args.steps, cpu))
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"workload": name, "device": args.device, "config": cfg, "clock": "process" if cpu else "wall",
           "torch_s": med["torch"], "ff_s": med["ff"], "ff_graph_s": med["ff_graph"],
           "ff_over_torch": med["ff"] / med["torch"], "ff_graph_over_torch": med["ff_graph"] / med["torch"],
           "targets": {"ff_over_torch": 1.0, "ff_graph_over_torch": 0.8}, "losses": check,
           "torch_version": torch.__version__, "ff_front_end": ff._lib.ext_status,
           "ff_graph": {k: v for k, v in (ff.graph_stats(gstep) or {}).items()
                        if k in ("kernels_captured", "launches", "host_calls", "device_runs", "device_launches",
                                 "host_launches", "fused_groups", "fused_by_backend", "replays")}}
    print("%s: torch %.2f ms, ff %.2f ms (%.2fx), ff compiled %.2f ms (%.2fx) a step"
          % (name, med["torch"] * 1e3, med["ff"] * 1e3, row["ff_over_torch"], med["ff_graph"] * 1e3,
             row["ff_graph_over_torch"]))
    print("%s: the compiled step's graph: %s" % (name, row["ff_graph"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"tool": "bench_gpt_step.py", "results": [row]}, fh, indent=2)
    return 0 if check["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
