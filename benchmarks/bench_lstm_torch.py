"""lstm_step through the Python front end beside torch.nn.LSTM, in one process: the two
steps interleaved, so both see the same load on a shared machine, and each timed by wall
clock and by process CPU time (the steadier figure when other jobs take the cores).

    FUSIONFLOW_LIB=build/lib/libfusionflow.so PYTHONPATH=python \\
        python3 benchmarks/bench_lstm_torch.py [--threads N] [--reps R]

The workload is ff-bench's lstm_step (bench_lstm.c): a 2-layer LSTM, input and hidden
256, seq 64, batch 32, output summed, backward, gradients zeroed; torch's weights are
loaded into ours."""
import argparse
import os
import statistics
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "FF_NUM_THREADS"):
        os.environ[var] = str(a.threads)  # read at load: set before either library is imported
    import torch
    import fusionflow as ff
    torch.set_num_threads(a.threads)
    torch.manual_seed(11)
    tl, tx = torch.nn.LSTM(256, 256, num_layers=2), torch.rand(64, 32, 256) * 2 - 1
    fl = ff.nn.LSTM(256, 256, num_layers=2)
    fl.load_state_dict({k: v.detach().numpy() for k, v in tl.state_dict().items()})
    fx = ff.tensor(tx.numpy())

    def tstep():
        tl(tx)[0].sum().backward()
        tl.zero_grad()

    def fstep():
        fl(fx)[0].sum().backward()
        fl.zero_grad()

    steps = {"torch": tstep, "ff": fstep}
    res = {k: [] for k in steps}
    for f in steps.values():
        f()  # warm-up
    for _ in range(a.reps):
        for name, f in steps.items():
            t0, c0 = time.perf_counter(), time.process_time()
            f()
            res[name].append((time.perf_counter() - t0, time.process_time() - c0))
    med = {k: [statistics.median(s[i] for s in v) for i in (0, 1)] for k, v in res.items()}
    for k, (w, c) in med.items():
        print("%-5s lstm_step %dT: wall median %7.1f ms, cpu median %7.1f ms" % (k, a.threads, w * 1e3, c * 1e3))
    print("ff / torch: wall %.2f, cpu %.2f" % (med["ff"][0] / med["torch"][0], med["ff"][1] / med["torch"][1]))


if __name__ == "__main__":
    main()
