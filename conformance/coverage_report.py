#!/usr/bin/env python3
"""Branch coverage of the reference backend under the conformance suite.

gcov reports a header (ff_backend_scalar.h, where the formulas and their thresholds
live) once per file that includes it; this merges every .gcda's JSON report by
(file, line, branch) so a branch counts as taken if any file took it, then prints
per-file figures and each line with a branch the suite never takes.
Usage: coverage_report.py BUILD_DIR [SOURCE_PREFIX ...]  (see coverage.sh)
"""
import collections
import glob
import gzip
import json
import os
import subprocess
import sys


def reports(objdir):
    for gcda in sorted(glob.glob(os.path.join(objdir, "*.gcda"))):
        out = subprocess.run(["gcov", "--json-format", "--branch-probabilities", "--stdout", gcda],
                             cwd=objdir, capture_output=True, check=True).stdout
        if out[:2] == b"\x1f\x8b":
            out = gzip.decompress(out)
        yield json.loads(out)


def main():
    build, prefixes = sys.argv[1], sys.argv[2:] or ["backends/cpu/", "backends/common/"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    objdir = os.path.abspath(os.path.join(build, "backends/cpu/CMakeFiles/ff_backend_cpu.dir"))
    lines = collections.defaultdict(int)                  # (file, line) -> count
    branches = collections.defaultdict(int)               # (file, line, i) -> count
    for rep in reports(objdir):
        for f in rep["files"]:
            name = os.path.relpath(f["file"], root)
            if not any(name.startswith(p) for p in prefixes):
                continue
            for ln in f["lines"]:
                lines[name, ln["line_number"]] += ln["count"]
                for i, b in enumerate(ln["branches"]):
                    branches[name, ln["line_number"], i] += b["count"]
    files = sorted({k[0] for k in lines})
    total_b = total_t = 0
    print("%-40s %12s %16s" % ("file", "lines run", "branches taken"))
    for name in files:
        ls = [c for (f, _), c in lines.items() if f == name]
        bs = [c for (f, _, _), c in branches.items() if f == name]
        total_b += len(bs)
        total_t += sum(1 for c in bs if c)
        print("%-40s %5d of %4d %7d of %4d" % (name, sum(1 for c in ls if c), len(ls), sum(1 for c in bs if c), len(bs)))
    print("total: %d of %d branches taken (%.1f%%)" % (total_t, total_b, 100.0 * total_t / max(total_b, 1)))
    print("\nlines with a branch never taken (file:line: source):")
    seen = set()
    for (name, ln, _), c in sorted(branches.items()):
        if c or (name, ln) in seen:
            continue
        seen.add((name, ln))
        with open(os.path.join(root, name)) as fh:
            src = fh.read().splitlines()[ln - 1].strip()
        print("  %s:%d: %s" % (name, ln, src[:100]))


if __name__ == "__main__":
    main()
