#!/usr/bin/python3
"""Turns ff-bench's JSON into plots (gnuplot, SVG) and the results section of README.md.

    /usr/bin/python3 benchmarks/report.py benchmarks/results/latest.json \
        --readme benchmarks/README.md --plot-dir benchmarks/results

The README section between <!-- results:begin --> and <!-- results:end --> is replaced:
machine, the issue's targets (met or not, with the measured ratio) and every result.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess

FF = ["cpu_blas", "cpu"]
BASES = ["cblas", "c_loop", "numpy", "torch"]


def load(path):
    with open(path) as f:
        doc = json.load(f)
    res = {}
    for r in doc["results"]:
        res[(r["workload"], r["backend"], r["threads"])] = r
    return doc, res


def t(res, w, be, th, fallback_1=False):
    r = res.get((w, be, th))
    if r is None and fallback_1:
        r = res.get((w, be, 1))
    return r["median_s"] if r else None


def fmt(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return "%.2f us" % (s * 1e6)
    if s < 1:
        return "%.3f ms" % (s * 1e3)
    return "%.3f s" % s


def machine(doc):
    model = platform.processor() or "?"
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        m = re.search(r"Model name:\s*(.+)", out)
        model = m.group(1).strip() if m else model
    except OSError:
        pass
    flags = open("/proc/cpuinfo").read()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    cc = subprocess.run(["cc", "--version"], stdout=subprocess.PIPE, text=True).stdout.splitlines()[0]
    return ("%s, %d cores available, %s; OpenBLAS kernel `%s` (OPENBLAS_CORETYPE=%s); %s; %s" %
            (model, os.cpu_count(), isa, doc.get("openblas_kernel", "?"),
             doc.get("openblas_coretype") or "unset", cc, datetime.date.today().isoformat()))


def targets(res):
    rows = []

    def ratio(num, den):
        return num / den if num and den else None

    def row(name, measured, ok, note):
        rows.append("| %s | %s | %s | %s |" % (name, measured, "met" if ok else ("**not met**" if ok is not None else "n/a"), note))

    worst = None
    for n in (256, 512, 1024, 2048, 4096):
        for th in (1, 2):
            r = ratio(t(res, "matmul_f32_%d" % n, "cblas", th), t(res, "matmul_f32_%d" % n, "cpu_blas", th))
            if r is not None and (worst is None or r < worst[0]):
                worst = (r, n, th)
    row("matmul f32 n >= 256, 1 and 2 threads: >= 0.95x cblas",
        "worst %.2fx (n=%d, %dT)" % worst if worst else "-", worst[0] >= 0.95 if worst else None,
        "speed ratio cblas/cpu_blas, every n >= 256 in the table below")
    r = ratio(t(res, "add_f32_16M_inplace", "c_loop", 1), t(res, "add_f32_16M_inplace", "cpu_blas", 1))
    row("add 16M f32 in place: >= 0.9x plain C loop", "%.2fx" % r if r else "-", r >= 0.9 if r else None, "1 thread")
    r = ratio(t(res, "add_f32_16M", "cpu_blas", 1), t(res, "add_f32_16M_inplace", "cpu_blas", 1))
    row("add 16M f32 allocating: within 1.2x of in place", "%.2fx" % r if r else "-", r <= 1.2 if r else None,
        "time allocating / time in place, 1 thread")
    for lib in ("torch", "numpy"):
        r = ratio(t(res, "exp_f32_16M", lib, 1), t(res, "exp_f32_16M", "cpu_blas", 1))
        row("exp 16M f32: faster than %s" % lib, "%.2fx" % r if r else "-", r > 1 if r else None,
            "speed ratio %s/cpu_blas, 1 thread" % lib)
    r = ratio(t(res, "sum_f32_16M", "c_loop", 1), t(res, "sum_f32_16M", "cpu_blas", 1))
    row("sum 16M f32: >= 0.8x the C loop's bandwidth", "%.2fx" % r if r else "-", r >= 0.8 if r else None,
        "1 thread; accuracy: tests/unit/test_cpu_blas_vs_cpu.c (test_sum_accuracy)")
    s = t(res, "add_f32_4", "cpu_blas", 1)
    row("4-element add, allocating + freeing: <= 0.15 us", fmt(s), s <= 0.15e-6 if s else None, "1 thread")
    r = ratio(t(res, "mlp_784_256_10_step", "cpu_blas", 1), t(res, "mlp_784_256_10_step", "torch", 1))
    row("MLP 784-256-10 step, batch 64, 1 thread: <= 0.8x PyTorch's time", "%.2fx" % r if r else "-",
        r <= 0.8 if r else None, "time cpu_blas / time torch")
    r = ratio(t(res, "mlp_4_16_1_step", "cpu_blas", 1), t(res, "mlp_4_16_1_step", "torch", 1))
    row("tiny MLP 4-16-1 step: <= 0.1x PyTorch's time", "%.2fx" % r if r else "-", r <= 0.1 if r else None,
        "time cpu_blas / time torch, 1 thread")
    return rows


def table(res):
    keys = []
    for (w, be, th) in res:
        if be in FF and (w, th) not in keys:
            keys.append((w, th))
    lines = ["| workload | thr | " + " | ".join(FF + BASES) + " | vs cblas | vs c_loop | vs numpy | vs torch |",
             "|---|---|" + "---|" * (len(FF) + len(BASES) + 4)]
    for w, th in keys:
        cells = [fmt(t(res, w, be, th)) for be in FF]
        cells += [fmt(t(res, w, be, th, fallback_1=(be == "c_loop"))) for be in BASES]
        f = t(res, w, "cpu_blas", th)
        for be in BASES:
            b = t(res, w, be, th, fallback_1=(be == "c_loop"))
            cells.append("%.2fx" % (b / f) if b and f else "-")
        lines.append("| %s | %d | %s |" % (w, th, " | ".join(cells)))
    return lines


def plots(res, outdir):
    if not shutil.which("gnuplot"):
        print("report: gnuplot missing, no plots")
        return []
    os.makedirs(outdir, exist_ok=True)
    series = [(be, th) for be in FF + BASES for th in (1, 2)]
    made = []
    blocks = {}
    # matmul GFLOP/s by n
    dat = os.path.join(outdir, "matmul.dat")
    with open(dat, "w") as f:
        for be, th in series:
            pts = [(n, 2.0 * n ** 3 / s / 1e9) for n in (64, 128, 256, 512, 1024, 2048, 4096)
                   for s in [t(res, "matmul_f32_%d" % n, be, th)] if s]
            if pts:
                f.write('"%s %dT"\n' % (be, th) + "".join("%d %g\n" % p for p in pts) + "\n\n")
                blocks[dat] = blocks.get(dat, 0) + 1
    # elementwise GB/s by size, one plot per op
    edat = {}
    for op in ("add", "exp"):
        edat[op] = os.path.join(outdir, "%s.dat" % op)
        with open(edat[op], "w") as f:
            for be, th in series:
                pts = []
                for tag, n in (("1M", 1 << 20), ("16M", 1 << 24)):
                    s = t(res, "%s_f32_%s" % (op, tag), be, th)
                    if s:
                        pts.append((n, (12.0 if op == "add" else 8.0) * n / s / 1e9))
                if len(pts) == 2:
                    f.write('"%s %dT"\n' % (be, th) + "".join("%d %g\n" % p for p in pts) + "\n\n")
                    blocks[edat[op]] = blocks.get(edat[op], 0) + 1
    for name, data, title, ylab in (("matmul", dat, "matmul f32, n x n by n x n", "GFLOP/s"),
                                    ("add", edat["add"], "allocating add, f32 (c = a + b)", "GB/s (12 bytes per element / time)"),
                                    ("exp", edat["exp"], "allocating exp, f32", "GB/s (8 bytes per element / time)")):
        svg = os.path.join(outdir, name + ".svg")
        script = ("set terminal svg size 900,560 dynamic noenhanced font 'sans,11'\nset output '%s'\nset title '%s'\n"
                  "set logscale x 2\nset format x '%%.0s%%c'\nset xlabel 'n (matrix size / elements)'\nset ylabel '%s'\n"
                  "set key outside right\n"
                  "set grid\nplot for [i=0:%d] '%s' index i with linespoints "
                  "title columnheader(1)\n" % (svg, title, ylab, blocks.get(data, 1) - 1, data))
        if subprocess.run(["gnuplot"], input=script, text=True).returncode == 0:
            made.append(os.path.basename(svg))
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--readme", default=None)
    ap.add_argument("--plot-dir", default=None)
    args = ap.parse_args()
    doc, res = load(args.json)
    made = plots(res, args.plot_dir) if args.plot_dir else []
    lines = ["<!-- results:begin (written by benchmarks/report.py; do not edit by hand) -->",
             "", "Measured on: " + machine(doc) + ".", "",
             "Times are medians; ratios are baseline time / cpu_blas time (above 1: cpu_blas is faster). "
             "C loops are single-threaded (their 1-thread time is the baseline at 2 threads too).", "",
             "### Targets (issue 5)", "", "| target | measured | status | how |", "|---|---|---|---|"]
    lines += targets(res)
    lines += ["", "### All results", ""] + table(res) + [""]
    for m in made:
        lines.append("![%s](results/%s)" % (m[:-4], m))
    lines += ["", "<!-- results:end -->"]
    text = "\n".join(lines) + "\n"
    if args.readme:
        old = open(args.readme).read() if os.path.exists(args.readme) else ""
        pat = re.compile(r"<!-- results:begin.*?<!-- results:end -->\n?", re.S)
        new = pat.sub(lambda m: text, old) if pat.search(old) else old + "\n## Latest results\n\n" + text
        with open(args.readme, "w") as f:
            f.write(new)
    else:
        print(text)


if __name__ == "__main__":
    main()
