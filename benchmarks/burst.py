"""The side-by-side scripts' timer (bench_matmul_bf16.py, bench_layer_norm.py): the median
of `burst` back-to-back calls, a contender's steady state within one interleaved round."""
import statistics
import time


def timed(fn, burst):
    ts = []
    for _ in range(burst):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)
