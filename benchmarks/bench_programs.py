#!/usr/bin/python3
"""The public programs of the CI harness (tests/programs), timed on both sides (issue 49):
process CPU time per training step on PyTorch 1.13 and on FusionFlow, the same program, the
same initial weights and data order (the harness's driver and hooks), 1 thread each.

    FUSIONFLOW_LIB=$PWD/build/lib/libfusionflow.so PYTHONPATH=$PWD/python \\
        /usr/bin/python3 benchmarks/bench_programs.py [--rounds 3] [--threads 1] [NAME...] [--json FILE]

A step is the time between two recorded backward() calls (driver.py stamps process CPU time
at each): the optimizer's step, the next batch (the program's Dataset, DataLoader or batch
function), the forward and the backward. Its median over a run skips the odd step that also
evaluates, samples or saves. Each round runs every program once per side, in a separate
process each, the sides' order swapped every round; the table gives each side's median over
rounds and ff / torch (below 1: FusionFlow is faster), then the median of those ratios.
Every run's losses are checked against PyTorch's as the test does (FIRST_RTOL, LAST_RTOL):
a number from a run that computed something else would mean nothing.

--device BACKEND times the harness's device side instead of FusionFlow's front end (issue 51):
PyTorch itself, the program's device string changed to fusionflow.torch_device's BACKEND, so
the ratio is PyTorch on a FusionFlow backend against PyTorch on its own CPU kernels.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "programs", "harness"))
from pair import FIRST_RTOL, LAST_RTOL, rel, run_side  # noqa: E402
from programs import BLOCKED, DEVICE_BLOCKED, DIFFERS, PROGRAMS  # noqa: E402


def step_cpu(res):
    """Median process CPU seconds between consecutive backward calls, the first step (warm-up:
    first calls, allocations, caches) left out."""
    stamps = res.get("cpu") or []
    steps = [b - a for a, b in zip(stamps[1:], stamps[2:])]
    return statistics.median(steps) if steps else None


def agree(ref, got):
    t, f = ref["losses"], got["losses"]
    return bool(t) and len(t) == len(f) and rel(f[0], t[0]) <= FIRST_RTOL and rel(f[-1], t[-1]) <= LAST_RTOL


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="programs (default: every one that runs on both sides)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--device", metavar="BACKEND", help="time the device side on this FusionFlow backend")
    a = ap.parse_args()
    other = "device" if a.device else "ff"
    if a.device:
        names = a.names or sorted(n for n in PROGRAMS if n not in DEVICE_BLOCKED)
    else:
        names = a.names or sorted(n for n in PROGRAMS if n not in BLOCKED and n not in DIFFERS)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "FF_NUM_THREADS"):
        os.environ[var] = str(a.threads)
    extra = ["--threads", str(a.threads)]

    times = {n: {"torch": [], other: []} for n in names}
    failed = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for n in names:
                if n in failed:
                    continue
                d = os.path.join(tmp, n)
                os.makedirs(d, exist_ok=True)
                # the first PyTorch run writes the weights; every later run of either side loads them
                order = ("torch", other) if r % 2 == 0 else (other, "torch")
                res = {}
                for side in order:
                    load = ["--load"] if side == "torch" and r > 0 else []
                    backend = ["--backend", a.device] if side == "device" else []
                    res[side] = run_side(side, n, d, extra=extra + load + backend, tag="%s%d" % (side, r))
                if res[other].get("no_device"):
                    failed[n] = "no device string (the program never chooses a device)"
                    continue
                err = res["torch"]["error"] or res[other]["error"]
                if err or not agree(res["torch"], res[other]):
                    failed[n] = (err or "losses differ from PyTorch's").splitlines()[0]
                    continue
                for side in order:
                    times[n][side].append(step_cpu(res[side]))
            print("round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)

    label = "dev" if a.device else "ff"
    print("%-22s %12s %12s %9s" % ("program", "torch ms", label + " ms", label + "/torch"))
    ratios, table = [], {}
    for n in names:
        if n in failed:
            print("%-22s not timed: %s" % (n, failed[n]))
            continue
        t, f = (statistics.median(times[n][s]) * 1e3 for s in ("torch", other))
        ratios.append(f / t)
        table[n] = {"torch_ms": t, "ff_ms": f, "ratio": f / t}
        print("%-22s %12.3f %12.3f %8.2fx" % (n, t, f, f / t))
    if ratios:
        print("%-22s %12s %12s %8.2fx  (worst %.2fx, %d programs, %d rounds, %d thread%s, process CPU time per step)"
              % ("median", "", "", statistics.median(ratios), max(ratios), len(ratios), a.rounds, a.threads,
                 "" if a.threads == 1 else "s"))
    if a.json:
        with open(a.json, "w") as fo:
            json.dump({"programs": table, "failed": failed, "rounds": a.rounds, "threads": a.threads, "device": a.device,
                       "median": statistics.median(ratios) if ratios else None}, fo, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
