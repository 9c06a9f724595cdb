#!/usr/bin/env python3
"""Which of the PyTorch functions programs call most (shared/api/pytorch_functions.txt)
fusionflow offers: a name counts when it is on `fusionflow`, on `fusionflow.Tensor` or in
`fusionflow.nn.functional`, as PyTorch has it on torch, torch.Tensor or
torch.nn.functional. Prints the count, the missing names, and exits 0.

    PYTHONPATH=python python3 python/tools/api_coverage.py [path/to/pytorch_functions.txt]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import fusionflow as ff  # noqa: E402
import fusionflow.nn.functional as F  # noqa: E402


def main(argv):
    default = os.path.join(HERE, "..", "..", "..", "shared", "api", "pytorch_functions.txt")
    path = argv[1] if len(argv) > 1 else default
    with open(path) as f:
        names = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    have = [n for n in names if hasattr(ff, n) or hasattr(ff.Tensor, n) or hasattr(F, n)]
    missing = [n for n in names if n not in have]
    print("fusionflow offers %d of %d functions" % (len(have), len(names)))
    if missing:
        print("missing: " + " ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
