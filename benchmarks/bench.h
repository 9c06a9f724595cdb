/*
 * ff-bench internals: the measurement loop, the result record, and the workload
 * tables (bench_ff.c runs FusionFlow, bench_base.c the in-process baselines: direct
 * cblas_sgemm and plain C loops).
 */
#ifndef FF_BENCH_H
#define FF_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ff/ff.h"

/* One timed workload instance: run() is called repeatedly; state is its own. */
typedef struct bench_case {
    const char *workload; /* "matmul_f32_1024" */
    int (*run)(void *state); /* 0 on success */
    void *state;
    double work;          /* flops or bytes per call, for throughput (0: none) */
    const char *unit;     /* "GFLOP/s", "GB/s" or "" */
} bench_case;

typedef struct bench_result {
    char workload[64];
    char backend[32]; /* "cpu_blas", "cpu", "cblas", "c_loop", "numpy", "torch" */
    int threads;
    double median_s, min_s;
    int runs;         /* samples taken */
    long inner;       /* calls per sample (tiny workloads are batched) */
    double work;
    char unit[16];
} bench_result;

typedef struct bench_opts {
    double budget_s; /* time per measurement (default 0.3) */
    bool quick;      /* smaller sizes, shorter budget (CI smoke run) */
    bool mnist;      /* Fashion-MNIST epoch time */
    bool big;        /* matmul n = 4096 too */
    const char *filter; /* only workloads containing this */
} bench_opts;

double bench_now(void);
/* Times c->run: warm-up, adaptive inner count and sample count, median. Returns 0 and
 * fills r, or -1 if run failed (the message is printed). */
int bench_measure(const bench_case *c, const bench_opts *o, const char *backend, int threads, bench_result *r);
/* Prints r as one machine-readable line on stdout (the parent process parses it). */
void bench_emit(const bench_result *r);
bool bench_selected(const bench_opts *o, const char *workload);

/* Workload families. Each measures and emits its results for one thread count. */
void bench_ff_all(ff_backend *be, int threads, const bench_opts *o);
void bench_baselines_all(int threads, const bench_opts *o);
/* bench_attention.c: attention_fwd_T* and attention_step_T* (issue 34) */
void bench_attention_all(ff_backend *be, int threads, const bench_opts *o);
/* bench_int8.c: matmul_int8_N, the dynamic quantized Linear (issue 35) */
void bench_int8_all(ff_backend *be, int threads, const bench_opts *o);
/* bench_complex.c: matmul_c64_N and fft_c64_2^20 (issue 45) */
void bench_complex_all(ff_backend *be, int threads, const bench_opts *o);

/* The matmul sizes measured (quick: fewer), and the largest size the cpu reference
 * backend is given (its plain loops would take minutes beyond). */
extern const int bench_mm_sizes[];
extern const int bench_mm_count;
int bench_mm_max(const bench_opts *o, bool reference);

#endif
