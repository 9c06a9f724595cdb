#!/usr/bin/python3
"""Issue 48, item 7: a hostile safetensors header of N `__metadata__` entries
{"k0": "v", ..., "k<N-1>": "v"} (1M entries: a 13 MB header, within the 100 MB cap), loaded
by the C loader (ff_safetensors_load, through ctypes) and by fusionflow.load_metadata
(the C loader, then one Python str per key and value). Process time, the best of --runs.
Before the fix every entry's duplicate check was a lookup over the entries so far:
80k entries took 18 s, 1M did not finish in a minute.

    FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python \\
        /usr/bin/python3 benchmarks/bench_io_header.py [--sizes 80000,1000000] [--runs 3]
"""
import argparse
import os
import tempfile
import time

import fusionflow as ff
from fusionflow._lib import C


def write_header(path, n):
    header = ('{"__metadata__":{' + ",".join('"k%d":"v"' % i for i in range(n)) + "}}").encode()
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little") + header)
    return len(header)


def best_process_time(fn, runs):
    best = None
    for _ in range(runs):
        t = time.process_time()
        fn()
        t = time.process_time() - t
        best = t if best is None or t < best else best
    return best


def c_load(path):
    d = C.ff_safetensors_load(path.encode(), 0)
    if not d:
        raise RuntimeError("ff_safetensors_load failed")
    C.ff_tensor_dict_free(d)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="80000,1000000")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print("| entries | header | C ff_safetensors_load | fusionflow.load_metadata |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(s) for s in args.sizes.split(",")]:
            path = os.path.join(tmp, "hostile_%d.safetensors" % n)
            size = write_header(path, n)
            t_c = best_process_time(lambda: c_load(path), args.runs)
            t_py = best_process_time(lambda: ff.load_metadata(path), args.runs)
            print("| `io_header_meta_%d` | %.1f MB | %.3f s | %.3f s |" % (n, size / 1e6, t_c, t_py))
            os.unlink(path)


if __name__ == "__main__":
    main()
