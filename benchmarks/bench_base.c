/*
 * In-process baselines: a direct cblas_sgemm on preallocated, pre-touched buffers, and
 * plain C loops (compiled with the project's flags, no -march: what a user would write).
 *   add/mul_f32_N         c[i] = a[i] op b[i] into an existing c (an allocating op's best case)
 *   add/mul_f32_N_inplace a[i] op= b[i]
 *   exp_f32_N, _out       c[i] = expf(a[i]) (glibc)
 *   sum_f32_16M           16 independent float accumulators: memory bound, the fastest
 *                         plain loop (one serial accumulator is latency bound instead)
 *   add_f32_4             malloc + 4 adds + free: the floor for an allocating tiny op
 */
#define _GNU_SOURCE /* popen, readlink */
#include <cblas.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct loop_state {
    int64_t n;
    float *a, *b, *c;
    int mode; /* see run functions */
} loop_state;

static int run_add(void *s_) { loop_state *s = s_; for (int64_t i = 0; i < s->n; i++) s->c[i] = s->a[i] + s->b[i]; return 0; }
static int run_mul(void *s_) { loop_state *s = s_; for (int64_t i = 0; i < s->n; i++) s->c[i] = s->a[i] * s->b[i]; return 0; }
static int run_add_ip(void *s_) { loop_state *s = s_; for (int64_t i = 0; i < s->n; i++) s->a[i] += s->b[i]; return 0; }
static int run_mul_ip(void *s_)
{
    loop_state *s = s_;
    /* b is all ones (set up below) so repeated runs keep a finite */
    for (int64_t i = 0; i < s->n; i++) s->a[i] *= s->b[i];
    return 0;
}
static int run_exp(void *s_) { loop_state *s = s_; for (int64_t i = 0; i < s->n; i++) s->c[i] = expf(s->a[i]); return 0; }

static volatile float sink;
static int run_sum(void *s_)
{
    loop_state *s = s_;
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= s->n; i += 16)
        for (int j = 0; j < 16; j++) acc[j] += s->a[i + j];
    float t = 0;
    for (int j = 0; j < 16; j++) t += acc[j];
    for (; i < s->n; i++) t += s->a[i];
    sink = t;
    return 0;
}

static int run_tiny(void *s_)
{
    loop_state *s = s_;
    float *c = malloc(4 * sizeof(float));
    if (!c) return -1;
    for (int i = 0; i < 4; i++) c[i] = s->a[i] + s->b[i];
    sink = c[3];
    free(c);
    return 0;
}

typedef struct gemm_state {
    int n;
    float *a, *b, *c;
} gemm_state;

static int run_gemm(void *s_)
{
    gemm_state *s = s_;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->n, s->n, s->n, 1.0f, s->a, s->n, s->b, s->n, 0.0f, s->c,
                s->n);
    return 0;
}

static float *filled(int64_t n, float lo, float hi, uint64_t seed)
{
    float *p = malloc((size_t)n * sizeof(float));
    if (!p) return NULL;
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = lo + (hi - lo) * (float)((double)(x >> 11) / 9007199254740992.0);
    }
    return p;
}

static void measure_emit(const bench_opts *o, const char *workload, int (*run)(void *), void *state, double work,
                         const char *unit, const char *name, int threads)
{
    if (!bench_selected(o, workload)) return;
    bench_case c = {workload, run, state, work, unit};
    bench_result r;
    if (bench_measure(&c, o, name, threads, &r) == 0) bench_emit(&r);
}

/* The C loops are single-threaded: measured once, at threads == 1. */
static void loops(const bench_opts *o)
{
    static const int64_t sizes[] = {1 << 20, 1 << 24};
    static const char *const tags[] = {"1M", "16M"};
    for (int k = 0; k < 2; k++) {
        int64_t n = o->quick ? sizes[k] / 16 : sizes[k];
        loop_state s = {n, filled(n, -5, 5, 1), filled(n, -5, 5, 2), filled(n, 0, 0, 3), 0};
        if (!s.a || !s.b || !s.c) goto done;
        char w[64];
        double bytes3 = 12.0 * (double)n, bytes2 = 8.0 * (double)n;
        snprintf(w, sizeof w, "add_f32_%s", tags[k]);
        measure_emit(o, w, run_add, &s, bytes3, "GB/s", "c_loop", 1);
        snprintf(w, sizeof w, "add_f32_%s_inplace", tags[k]);
        measure_emit(o, w, run_add_ip, &s, bytes3, "GB/s", "c_loop", 1);
        snprintf(w, sizeof w, "mul_f32_%s", tags[k]);
        measure_emit(o, w, run_mul, &s, bytes3, "GB/s", "c_loop", 1);
        for (int64_t i = 0; i < n; i++) s.b[i] = 1.0f;
        snprintf(w, sizeof w, "mul_f32_%s_inplace", tags[k]);
        measure_emit(o, w, run_mul_ip, &s, bytes3, "GB/s", "c_loop", 1);
        for (int64_t i = 0; i < n; i++) s.a[i] = 10.0f * (float)(i % 1000) / 1000.0f - 5.0f;
        snprintf(w, sizeof w, "exp_f32_%s", tags[k]);
        measure_emit(o, w, run_exp, &s, bytes2, "GB/s", "c_loop", 1);
        snprintf(w, sizeof w, "exp_f32_%s_out", tags[k]);
        measure_emit(o, w, run_exp, &s, bytes2, "GB/s", "c_loop", 1);
        if (k == 1) {
            measure_emit(o, "sum_f32_16M", run_sum, &s, 4.0 * (double)n, "GB/s", "c_loop", 1);
        }
    done:
        free(s.a), free(s.b), free(s.c);
    }
    loop_state t = {4, filled(4, -1, 1, 4), filled(4, -1, 1, 5), NULL, 0};
    if (t.a && t.b) measure_emit(o, "add_f32_4", run_tiny, &t, 0, "", "c_loop", 1);
    free(t.a), free(t.b);
}

/* The best BLAS this machine runs: OpenBLAS under every kernel the CPU can take (each
 * OPENBLAS_CORETYPE in a fresh ff-blas-probe process), oneDNN and BLIS; each candidate's
 * line is forwarded, and the fastest median is emitted again as "blas_best". */
static void blas_best(int n, int threads, const bench_opts *o)
{
    char self[4096], probe[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return;
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(probe, sizeof probe, "%s/ff-blas-probe", self);
    __builtin_cpu_init();
    const char *cands[8];
    int nc = 0;
    cands[nc++] = "openblas:"; /* as it loads: the environment's OPENBLAS_CORETYPE or OpenBLAS's own detection */
    if (__builtin_cpu_supports("avx2")) cands[nc++] = "openblas:Haswell";
    if (__builtin_cpu_supports("avx512f")) cands[nc++] = "openblas:SkylakeX", cands[nc++] = "openblas:Cooperlake";
    cands[nc++] = "onednn";
    cands[nc++] = "blis";
    bench_result best = {0};
    for (int i = 0; i < nc; i++) {
        char cmd[8192];
        const char *core = strchr(cands[i], ':');
        snprintf(cmd, sizeof cmd, "%s%s%s OMP_NUM_THREADS=%d '%s' %.*s %d %d %g%s 2>/dev/null",
                 core && core[1] ? "OPENBLAS_CORETYPE=" : "", core && core[1] ? core + 1 : "", core && core[1] ? "" : "",
                 threads, probe, core ? (int)(core - cands[i]) : (int)strlen(cands[i]), cands[i], n, threads,
                 o->budget_s, o->quick ? " quick" : "");
        FILE *p = popen(cmd, "r");
        char line[1024];
        while (p && fgets(line, sizeof line, p)) {
            bench_result r = {0};
            char unit[16];
            if (sscanf(line, "R\t%63[^\t]\t%31[^\t]\t%d\t%lf\t%lf\t%d\t%ld\t%lf\t%15s", r.workload, r.backend,
                       &r.threads, &r.median_s, &r.min_s, &r.runs, &r.inner, &r.work, unit) != 9)
                continue;
            snprintf(r.unit, sizeof r.unit, "%s", unit);
            fputs(line, stdout); /* the candidate's own row */
            if (!best.runs || r.median_s < best.median_s) best = r;
        }
        if (p) pclose(p);
    }
    if (!best.runs) return;
    fprintf(stderr, "  blas_best for n=%d, %d thread(s): %s\n", n, threads, best.backend);
    snprintf(best.backend, sizeof best.backend, "blas_best");
    bench_emit(&best);
}

/* oneDNN's bf16 (or int8) matmul called directly (ff-dnnl-probe, beside ff-bench; absent
 * where oneDNN is not built in): its line is forwarded as the "onednn" baseline. */
static void dnnl_direct(int n, int threads, const bench_opts *o, int int8)
{
    char self[4096], cmd[8400];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return;
    self[len] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return;
    *slash = '\0';
    snprintf(cmd, sizeof cmd, "'%s/ff-dnnl-probe' %d %d %g%s%s", self, n, threads, o->budget_s, o->quick ? " quick" : "",
             int8 ? " int8" : "");
    FILE *p = popen(cmd, "r");
    char line[1024];
    while (p && fgets(line, sizeof line, p)) {
        bench_result r = {0};
        char unit[16];
        if (sscanf(line, "R\t%63[^\t]\t%31[^\t]\t%d\t%lf\t%lf\t%d\t%ld\t%lf\t%15s", r.workload, r.backend, &r.threads,
                   &r.median_s, &r.min_s, &r.runs, &r.inner, &r.work, unit) == 9)
            fputs(line, stdout);
    }
    if (p) pclose(p);
}

void bench_baselines_all(int threads, const bench_opts *o)
{
    static const int bf16_sizes[3] = {512, 1024, 2048}; /* as bench_ff.c's matmul_bf16_* rows */
    for (int i = 0; i < (o->quick ? 1 : 3); i++) {
        int n = o->quick ? 256 : bf16_sizes[i];
        char w[64];
        snprintf(w, sizeof w, "matmul_bf16_%d", n);
        if (bench_selected(o, w)) dnnl_direct(n, threads, o, 0);
    }
    static const int int8_sizes[2] = {1024, 2048}; /* as bench_int8.c's matmul_int8_* rows */
    for (int i = 0; i < (o->quick ? 1 : 2); i++) {
        int n = o->quick ? 256 : int8_sizes[i];
        char w[64];
        snprintf(w, sizeof w, "matmul_int8_%d", n);
        if (bench_selected(o, w)) dnnl_direct(n, threads, o, 1);
    }
    openblas_set_num_threads(threads);
    for (int i = 0; i < bench_mm_count; i++) {
        int n = bench_mm_sizes[i];
        if (n > bench_mm_max(o, false)) break;
        char w[64];
        snprintf(w, sizeof w, "matmul_f32_%d", n);
        if (!bench_selected(o, w)) continue;
        gemm_state s = {n, filled((int64_t)n * n, -1, 1, 7), filled((int64_t)n * n, -1, 1, 8),
                        filled((int64_t)n * n, 0, 0, 9)};
        if (s.a && s.b && s.c) measure_emit(o, w, run_gemm, &s, 2.0 * n * (double)n * n, "GFLOP/s", "cblas", threads);
        free(s.a), free(s.b), free(s.c);
        blas_best(n, threads, o);
    }
    if (threads == 1) loops(o);
}
