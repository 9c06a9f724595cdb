"""Runs one harness program on one side: python3 driver.py --side torch|ff|device --program NAME
--run-dir DIR --weights FILE.npz --out FILE.json. The PyTorch side writes the weights file,
the FusionFlow side reads it (run PyTorch first). The device side is PyTorch itself with the
program's device string changed to a FusionFlow backend's (--backend; fusionflow.torch_device,
rewrite.device_source): it reads the weights too, and reports the ops that fell back to
PyTorch's CPU kernels. The program's own output goes to stdout;
the result (losses, error, seconds) to --out."""
import argparse
import importlib
import json
import os
import random
import runpy
import shutil
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hooks  # noqa: E402
from programs import PROGRAMS  # noqa: E402
from rewrite import device_argv, device_source, rewrite_source  # noqa: E402

SEED_PERTURB = 5


def copy_tree(src, dst, rewrite):
    """The program as the side sees it: upstream files as they are for PyTorch, through
    `rewrite` (text -> text: the import rule for FusionFlow, the device rule for the device
    side) otherwise."""
    for root, _, files in os.walk(src):
        out = os.path.join(dst, os.path.relpath(root, src))
        os.makedirs(out, exist_ok=True)
        for f in files:
            if rewrite and f.endswith(".py"):
                with open(os.path.join(root, f)) as fi, open(os.path.join(out, f), "w") as fo:
                    fo.write(rewrite(fi.read()))
            else:
                shutil.copyfile(os.path.join(root, f), os.path.join(out, f))


def _census_mode(device_type):
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Census(TorchDispatchMode):
        """The ATen ops a program's tensors reach below autograd, by how the device runs them:
        'native' (a FusionFlow kernel), 'decomposed' (PyTorch's CompositeExplicitAutograd
        kernel, over ops of the first kind) or 'fallback' (PyTorch's CPU kernel through copies)."""
        def __init__(self):
            super().__init__()
            self.calls = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            flat = list(args) + list((kwargs or {}).values())
            flat += [t for v in flat if isinstance(v, (list, tuple)) for t in v]
            if any(isinstance(t, torch.Tensor) and t.device.type == device_type for t in flat):
                name = func.name()  # an op on the device's tensors (not on host ones)
                self.calls[name] = self.calls.get(name, 0) + 1
            return func(*args, **(kwargs or {}))

        def table(self):
            has = torch._C._dispatch_has_kernel_for_dispatch_key
            kind = lambda n: ("native" if has(n, "PrivateUse1") else  # noqa: E731
                              "decomposed" if has(n, "CompositeExplicitAutograd")
                              or has(n, "CompositeExplicitAutogradNonFunctional") else "fallback")
            return {n: [kind(n), c] for n, c in sorted(self.calls.items())}
    return Census


def torch_device_type(device):
    return device.split(":")[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", choices=("torch", "ff", "device"), required=True)
    ap.add_argument("--backend", default="cpu_blas", help="device side: the FusionFlow backend")
    ap.add_argument("--census", action="store_true",
                    help="device side: record every ATen op that reaches the device and how it ran there "
                         "(native kernel, PyTorch's decomposition, CPU fallback); slower")
    ap.add_argument("--program", choices=sorted(PROGRAMS), required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--load", action="store_true",
                    help="PyTorch side: load --weights instead of saving them (the harness's self-test)")
    ap.add_argument("--seed", type=int, default=0, help="the library's own seed")
    ap.add_argument("--perturb", type=float, default=0.0,
                    help="with --load: scale each loaded weight by 1 + PERTURB * N(0,1) (seeded), to "
                         "measure how far rounding-sized changes carry a program (pair.py --conditioning)")
    ap.add_argument("--threads", type=int, default=0, help="the library's thread count (0: its default)")
    a = ap.parse_args()
    spec = PROGRAMS[a.program]
    ff = a.side == "ff"
    load = ff or a.load or a.side == "device"
    rewrite = rewrite_source if ff else None
    argv = spec["argv"]
    ffd = None
    if a.side == "device":
        import fusionflow.torch_device as ffd
        device = str(ffd.device(a.backend))
        Census = _census_mode(torch_device_type(device))
        changed = [0]

        def rewrite(text):
            text, n = device_source(text, device)
            changed[0] += n
            return text
        argv = device_argv(argv, device)

    src, shims, work = (os.path.join(a.run_dir, d) for d in ("src", "shims", "work"))
    copy_tree(os.path.join(HERE, "..", spec.get("upstream", a.program), "upstream"), src, rewrite)
    copy_tree(os.path.join(HERE, "shims"), shims, rewrite_source if ff else None)
    if ffd is not None and not changed[0] and argv == spec["argv"]:
        with open(a.out, "w") as f:
            json.dump({"losses": [], "error": "no device string: the program never chooses a device", "seconds": 0,
                       "no_device": True}, f)
        return 0
    os.makedirs(work)
    script = os.path.join(src, spec["script"])
    sys.path[:0] = [os.path.dirname(script)] + [os.path.join(src, p) for p in spec.get("path", [])]
    sys.path.append(shims)  # after the real modules: a stand-in only where nothing else is

    lib = importlib.import_module("fusionflow" if ff else "torch")
    for name, stand_in in spec.get("modules", {}).items():  # "torch.X" -> a shims/ module
        sys.modules[lib.__name__ + name[len("torch"):]] = importlib.import_module(stand_in)
    random.seed(0)
    np.random.seed(0)
    lib.manual_seed(a.seed)
    if a.threads:
        lib.set_num_threads(a.threads)
    rec = hooks.Recorder()
    if load:
        with np.load(a.weights) as z:
            count = int(z["count"])
            rec.loaded = [[z["o%d_p%d" % (k, j)] for j in range(int(z["o%d_n" % k]))] for k in range(count)]
        if a.perturb:
            noise = np.random.RandomState(SEED_PERTURB)
            rec.loaded = [[(w * (1 + a.perturb * noise.standard_normal(w.shape))).astype(w.dtype) for w in ws]
                          for ws in rec.loaded]
    hooks.install_backward(lib, rec)
    hooks.install_weights(lib, rec, load)
    hooks.install_sampler(lib)
    hooks.install_random(lib)
    hooks.install_dropout(lib)
    hooks.install_uniform(lib)

    os.chdir(work)
    if spec.get("prepare"):
        spec["prepare"](work)
    sys.argv = [script] + argv
    error, t0 = None, time.time()
    census = Census() if a.census and ffd is not None else None  # noqa: F821 (bound with ffd)
    try:
        if census is not None:
            with census:
                runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            error = "SystemExit(%r)" % (e.code,)
    except BaseException as e:  # noqa: B902  (the report needs whatever stopped the program)
        error = "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()[-3000:])
    seconds = time.time() - t0
    sys.stdout.flush()

    if not load:
        arrays = {"count": np.array(len(rec.saved))}
        for k, ps in enumerate(rec.saved):
            arrays["o%d_n" % k] = np.array(len(ps))
            arrays.update({"o%d_p%d" % (k, j): p for j, p in enumerate(ps)})
        np.savez(a.weights, **arrays)
    with open(a.out, "w") as f:
        json.dump({"losses": rec.losses, "dtypes": rec.dtypes, "error": error, "seconds": seconds, "optimizers": rec.optimizers,
                   "cpu": rec.cpu, "fallbacks": ffd.fallback_counts() if ffd else {},
                   "census": census.table() if census is not None else None}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
