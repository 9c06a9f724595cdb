#!/usr/bin/env python3
"""How much of PyTorch's surface fusionflow offers, counted against the lists in shared/api/:

- pytorch_functions.txt: the functions programs call most; a name counts when it is on
  `fusionflow`, on `fusionflow.Tensor` or in `fusionflow.nn.functional`, as PyTorch has it on
  torch, torch.Tensor or torch.nn.functional.
- pytorch_tensor_methods.txt: every torch.Tensor method/property; counts when on fusionflow.Tensor.
- pytorch_module_surface.txt: dotted names (nn.Conv1d, F.relu, optim.Adam,
  optim.lr_scheduler.StepLR, utils.data.DataLoader, nn.utils.rnn.pad_sequence); counts when
  fusionflow has it at the same path (F = fusionflow.nn.functional).

Prints a count and the missing names per list, and exits 0.

    PYTHONPATH=python python3 python/tools/api_coverage.py            # functions list only
    PYTHONPATH=python python3 python/tools/api_coverage.py FILE       # that functions list
    PYTHONPATH=python python3 python/tools/api_coverage.py --all [DIR]  # all three lists

The function list alone stays the default so that existing callers see the same output.
"""
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fusionflow as ff  # noqa: E402
import fusionflow.nn.functional as F  # noqa: E402

DEFAULT_DIR = os.path.join(HERE, "..", "..", "..", "shared", "api")
LISTS = ("pytorch_functions.txt", "pytorch_tensor_methods.txt", "pytorch_module_surface.txt")


def read_names(path):
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def has_function(name):
    return hasattr(ff, name) or hasattr(ff.Tensor, name) or hasattr(F, name)


def has_method(name):
    return hasattr(ff.Tensor, name)


def resolve(dotted):
    """The object at fusionflow.<dotted> (F. meaning nn.functional), or None. Subpackages are
    imported on the way, as `import torch.nn.utils.rnn` would."""
    parts = dotted.split(".")
    if parts[0] == "F":
        parts = ["nn", "functional"] + parts[1:]
    obj, path = ff, "fusionflow"
    for p in parts:
        path += "." + p
        if not hasattr(obj, p):
            try:
                importlib.import_module(path)
            except ImportError:
                return None
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def has_surface(name):
    return resolve(name) is not None


CHECKS = {
    "pytorch_functions.txt": ("functions", has_function),
    "pytorch_tensor_methods.txt": ("Tensor methods", has_method),
    "pytorch_module_surface.txt": ("module-surface names", has_surface),
}


# Why a name is not offered yet, by prefix (the first match counts); printed beside it.
WHY_MISSING = [
    (("nn.MultiheadAttention", "nn.Transformer", "F.multi_head_attention"),
     "sequence models (attention, Transformer): issue 34's fused ops, not compositions"),
    (("cdouble", "cfloat", "chalf"), "no complex dtypes"),
    (("char", "short"), "no int8/int16 dtypes"),
    (("geqrf", "orgqr", "ormqr"), "LAPACK's Householder form is not exposed (qr is)"),
    (("output_nr",), "autograd internals: a node's output index is not exposed"),
]


def why_missing(name):
    for prefixes, why in WHY_MISSING:
        if name.startswith(prefixes):
            return why
    return "not yet"


def coverage(path, check):
    """(names offered, names missing) of the list at path."""
    names = read_names(path)
    have = [n for n in names if check(n)]
    return have, [n for n in names if n not in set(have)]


def report(path, what, check):
    have, missing = coverage(path, check)
    print("fusionflow offers %d of %d %s" % (len(have), len(have) + len(missing), what))
    by_reason = {}
    for n in missing:
        by_reason.setdefault(why_missing(n), []).append(n)
    for why, names in by_reason.items():
        print("missing (%s): %s" % (why, " ".join(names)))


def main(argv):
    args = argv[1:]
    if args and args[0] == "--all":
        folder = args[1] if len(args) > 1 else DEFAULT_DIR
        for name in LISTS:
            what, check = CHECKS[name]
            report(os.path.join(folder, name), what, check)
        return 0
    path = args[0] if args else os.path.join(DEFAULT_DIR, LISTS[0])
    report(path, "functions", has_function)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
