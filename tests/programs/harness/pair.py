"""Runs a program on PyTorch, then on FusionFlow from PyTorch's initial weights, and compares
the losses step by step. As a script it prints the harness's status table:
    FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python python3 tests/programs/harness/pair.py [NAME...]
With --device BACKEND it runs the device side instead of FusionFlow's front end: PyTorch itself,
the program's device string changed to fusionflow.torch_device's BACKEND.
With --conditioning it runs PyTorch alone, twice, the second time from weights moved by about an
ulp (driver.py --perturb), and prints how far apart the losses end: when that is as far as
FusionFlow's, a program's short run is chaotic (a tolerance no library can meet), not a bug."""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from programs import BLOCKED, PROGRAMS  # noqa: E402

FIRST_RTOL, LAST_RTOL = 1e-5, 1e-3


def run_side(side, name, tmp, timeout=600, extra=(), tag=None):
    tag = tag or side
    run_dir = os.path.join(tmp, tag)
    out = os.path.join(tmp, tag + ".json")
    cmd = [sys.executable, os.path.join(HERE, "driver.py"), "--side", side, "--program", name,
           "--run-dir", run_dir, "--weights", os.path.join(tmp, "weights.npz"), "--out", out] + list(extra)
    t0 = time.time()
    # one string hashing on both sides: a program that numbers its classes by iterating a set
    # of names (pygcn's encode_onehot) must number them alike
    env = dict(os.environ, PYTHONHASHSEED="0")
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, env=env)
    log = p.stdout.decode(errors="replace")
    if p.returncode != 0 or not os.path.exists(out):
        return {"error": "driver exited %d\n%s" % (p.returncode, log[-3000:]), "losses": [],
                "seconds": time.time() - t0, "log": log}
    with open(out) as f:
        res = json.load(f)
    res["log"], res["wall"] = log, time.time() - t0
    return res


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def run_pair(name, tmp):
    """-> dict(torch=..., ff=..., first=rel, last=rel, max=rel); errors are left in the sides."""
    ref = run_side("torch", name, tmp)
    if ref["error"]:
        return {"torch": ref, "ff": None}
    got = run_side("ff", name, tmp)
    res = {"torch": ref, "ff": got}
    t, f = ref["losses"], got["losses"]
    if not got["error"] and t and len(t) == len(f):
        res.update(first=rel(f[0], t[0]), last=rel(f[-1], t[-1]), max=max(rel(x, y) for x, y in zip(f, t)))
    return res


def run_device(name, tmp, backend, ref=None, census=False):
    """The device side after the PyTorch side (run here unless ref, its result, is given):
    -> dict(torch=..., device=..., first/last/max as run_pair's)."""
    ref = ref or run_side("torch", name, tmp)
    if ref["error"]:
        return {"torch": ref, "device": None}
    got = run_side("device", name, tmp, extra=["--backend", backend] + (["--census"] if census else []),
                   tag="device_" + backend)
    res = {"torch": ref, "device": got}
    t, f = ref["losses"], got["losses"]
    if not got["error"] and t and len(t) == len(f):
        res.update(first=rel(f[0], t[0]), last=rel(f[-1], t[-1]), max=max(rel(x, y) for x, y in zip(f, t)))
    return res


def main_device(names, backend, census=False):
    """The table of the device side: each program unchanged but for its device string, on
    fusionflow.torch_device's `backend`, against PyTorch's CPU, with the ops that fell back;
    with census, also how many distinct ATen ops reached the device, by how they ran."""
    for name in names or sorted(PROGRAMS):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_device(name, tmp, backend, census=census)
        ref, got = r["torch"], r["device"]
        if ref["error"]:
            print("%-22s PyTorch side failed: %s" % (name, ref["error"].splitlines()[0]))
        elif got.get("no_device"):
            print("%-22s no device string (the program never chooses a device)" % name)
        elif got["error"]:
            print("%-22s failed on %s: %s" % (name, backend, got["error"].splitlines()[0]))
        elif "first" not in r:
            print("%-22s loss counts differ: torch %d, device %d" % (name, len(ref["losses"]), len(got["losses"])))
        else:
            ok = r["first"] <= FIRST_RTOL and r["last"] <= LAST_RTOL
            fb = got.get("fallbacks", {})
            print("%-22s %s: %d losses, rel diff first %.1e last %.1e; torch %.1fs, %s %.1fs; fallbacks: %s"
                  % (name, "matches PyTorch" if ok else "DIFFERS", len(ref["losses"]), r["first"], r["last"],
                     ref["wall"], backend, got["wall"],
                     ", ".join("%s x%d" % kv for kv in sorted(fb.items())) if fb else "none"))
            if census and got.get("census"):
                kinds = {}
                for op, (kind, calls) in got["census"].items():
                    kinds.setdefault(kind, []).append(op)
                print("%-22s ATen ops: %s" % ("", "; ".join("%s %d" % (k, len(v)) for k, v in sorted(kinds.items()))))
                for k in ("decomposed", "fallback"):
                    if kinds.get(k):
                        print("%-22s   %s: %s" % ("", k, ", ".join(kinds[k])))


def main(names):
    for name in names or sorted(PROGRAMS):
        with tempfile.TemporaryDirectory() as tmp:
            r = run_pair(name, tmp)
        ref, got = r["torch"], r["ff"]
        if ref["error"]:
            print("%-22s PyTorch side failed: %s" % (name, ref["error"].splitlines()[0]))
        elif got["error"]:
            print("%-22s blocked: %s  (torch %.1fs)" % (name, got["error"].splitlines()[0], ref["wall"]))
        elif "first" not in r:
            print("%-22s loss counts differ: torch %d, ff %d" % (name, len(ref["losses"]), len(got["losses"])))
        else:
            ok = r["first"] <= FIRST_RTOL and r["last"] <= LAST_RTOL
            print("%-22s %s: %d losses, rel diff first %.1e last %.1e max %.1e; torch %.1fs, ff %.1fs%s"
                  % (name, "matches PyTorch" if ok else "DIFFERS", len(ref["losses"]), r["first"], r["last"],
                     r["max"], ref["wall"], got["wall"], "  [listed as blocked]" if name in BLOCKED else ""))


def conditioning(names, rel_size=1e-7):
    for name in names or sorted(PROGRAMS):
        with tempfile.TemporaryDirectory() as tmp:
            ref = run_side("torch", name, tmp)
            moved = run_side("torch", name, tmp, extra=["--load", "--perturb", str(rel_size)], tag="moved")
        if ref["error"] or moved["error"] or len(ref["losses"]) != len(moved["losses"]):
            print("%-22s PyTorch side failed: %s" % (name, (ref["error"] or moved["error"] or "loss counts").splitlines()[0]))
            continue
        diffs = [rel(m, t) for m, t in zip(moved["losses"], ref["losses"])]
        print("%-22s PyTorch vs PyTorch from weights moved by %.0e: rel diff first %.1e last %.1e max %.1e"
              % (name, rel_size, diffs[0], diffs[-1], max(diffs)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--conditioning"]:
        conditioning(sys.argv[2:])
    elif sys.argv[1:2] == ["--device"]:  # pair.py --device BACKEND [--census] [NAME...]
        census = sys.argv[3:4] == ["--census"]
        main_device(sys.argv[4:] if census else sys.argv[3:], sys.argv[2], census)
    else:
        main(sys.argv[1:])
