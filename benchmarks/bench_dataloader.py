"""A data-bound training loop through fusionflow's DataLoader and PyTorch 1.13's, with
num_workers=0 and num_workers=2 (issue 48 item 12).

Each sample is stored as text and decoded in pure Python in __getitem__ (numbers parsed,
scaled, flipped, jittered, then a tensor of the library being measured), so one epoch is
dominated by per-sample Python work, which only worker processes can run in parallel. The training step
is a small Linear + cross-entropy + SGD, the same on both sides.

Wall time per epoch (workers are other processes, so CPU time of this one says nothing),
workers started per epoch (persistent_workers=False, PyTorch's default) and included. The
eight configurations (train / load only, two libraries, 0 / 2 workers) run in turn, their
order reversed every round, over --rounds rounds; the table gives medians and the ratios.
On a machine other jobs share, wall time shows how many cores were free more than what
the workers do, so the CPU seconds of the main process and of the workers are given too,
and "2 idle cores" = CPU(workers=0) / max(main CPU, (main + workers CPU) / 2): the speed-up
that work would have where two cores are free. Both sides run with one intra-op thread (PyTorch's
workers use one too), so the main process and the workers do not fight over the cores.

    /usr/bin/python3 benchmarks/bench_dataloader.py [--rounds 5] [--samples 4096] [--json out.json]

(from the repository root, with FUSIONFLOW_LIB and PYTHONPATH=python set as for the tests)."""
import argparse
import json
import os
import resource
import statistics
import time

os.environ.setdefault("FF_NUM_THREADS", "1")  # read once, when cpu_blas loads

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fusionflow as ff  # noqa: E402

FEATURES, CLASSES = 784, 10


class Encoded:
    """Samples as text (a 28x28 image as comma-separated numbers, then the label), decoded,
    normalised and augmented (a flip of every other sample, a brightness jitter) in pure
    Python per access: ~1 ms a sample, the kind of work image decoding does."""

    def __init__(self, lib, n, seed=0):
        rng = np.random.default_rng(seed)
        self.lib = lib
        self.raw = [b",".join(b"%d" % v for v in rng.integers(0, 256, FEATURES + 1)) for _ in range(n)]

    def __len__(self):
        return len(self.raw)

    def __getitem__(self, i):
        values = [int(v) for v in self.raw[i].split(b",")]
        label, pixels = values[FEATURES] % CLASSES, values[:FEATURES]
        rows = [pixels[r * 28:(r + 1) * 28] for r in range(28)]
        if i % 2:
            rows = [row[::-1] for row in rows]
        gain = 0.9 + 0.2 * ((i * 7919) % 101) / 100.0
        out = []
        for row in rows:
            for v in row:
                x = (v / 255.0 - 0.5) * 2.0 * gain
                out.append(x if -1.0 < x < 1.0 else (1.0 if x > 0 else -1.0))
        return self.lib.tensor(out, dtype=self.lib.float32), label


def make_step(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(FEATURES, CLASSES)
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = lib.nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)  # workers count once joined (end of the epoch)
    return r.ru_utime + r.ru_stime


def epoch_seconds(lib, dataset, workers, batch_size, train):
    """(wall s, CPU s of this process, CPU s of the workers) of one epoch."""
    loader = lib.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers)
    step = make_step(lib) if train else (lambda x, y: None)
    cpu, kids, start = time.process_time(), _children_cpu(), time.perf_counter()
    batches = 0
    for x, y in loader:
        step(x, y)
        batches += 1
    elapsed = time.perf_counter() - start
    assert batches == len(loader)
    return elapsed, time.process_time() - cpu, _children_cpu() - kids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--json", help="write the medians here")
    args = ap.parse_args()
    torch.set_num_threads(1)
    data = {"fusionflow": Encoded(ff, args.samples), "torch": Encoded(torch, args.samples)}
    libs = {"fusionflow": ff, "torch": torch}
    configs = [(mode, lib, w) for mode in ("train", "load") for w in (0, 2) for lib in libs]
    times = {c: [] for c in configs}
    for lib in libs:  # warm-up: imports, first-call costs, one epoch each
        epoch_seconds(libs[lib], data[lib], 0, args.batch_size, True)
    for r in range(args.rounds):
        for mode, lib, w in (configs if r % 2 == 0 else configs[::-1]):
            times[(mode, lib, w)].append(epoch_seconds(libs[lib], data[lib], w, args.batch_size, mode == "train"))
    med = {c: statistics.median(t[0] for t in ts) for c, ts in times.items()}
    cpu = {c: (statistics.median(t[1] for t in ts), statistics.median(t[2] for t in ts)) for c, ts in times.items()}
    print("epoch of %d samples, batch %d, per-sample Python decoding; wall s, median of %d rounds; %d cores, "
          "load average %.1f" % (args.samples, args.batch_size, args.rounds, len(os.sched_getaffinity(0)),
                                 os.getloadavg()[0]))
    for mode, what in (("train", "training loop (Linear + cross-entropy + SGD step per batch)"),
                       ("load", "loading only (the loop body does nothing)")):
        print(what)
        print("  %-12s %10s %10s %9s   %-22s %s" % ("", "workers=0", "workers=2", "speed-up",
                                                  "CPU s main+workers 0/2", "2 idle cores"))
        for lib in libs:
            a, b = med[(mode, lib, 0)], med[(mode, lib, 2)]
            (m0, _), (m2, k2) = cpu[(mode, lib, 0)], cpu[(mode, lib, 2)]
            bound = max(m2, (m2 + k2) / 2)  # the wall time 2 free cores would need for that CPU work
            print("  %-12s %10.3f %10.3f %8.2fx   %5.2f / %5.2f+%5.2f     %.2fx" % (lib, a, b, a / b, m0, m2, k2,
                                                                               m0 / bound))
        print("  %-12s %9.2fx %9.2fx" % ("ff / torch", med[(mode, "fusionflow", 0)] / med[(mode, "torch", 0)],
                                          med[(mode, "fusionflow", 2)] / med[(mode, "torch", 2)]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"%s_%s_w%d" % c: {"median_wall_s": med[c], "median_cpu_main_s": cpu[c][0],
                                         "median_cpu_workers_s": cpu[c][1], "runs_wall_cpu_workers_s": times[c]}
                       for c in configs}, f, indent=1)


if __name__ == "__main__":
    main()
