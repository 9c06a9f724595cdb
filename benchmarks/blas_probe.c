/*
 * ff-blas-probe LIB N THREADS BUDGET [quick]: times one single-precision GEMM (N x N x N,
 * row-major, no transposes) in the library LIB, loaded with dlopen in this fresh process
 * so that its start-up settings (OPENBLAS_CORETYPE, OMP_NUM_THREADS) are the ones the
 * caller put in the environment. Prints one ff-bench result line whose backend names the
 * library and kernel ("openblas:SkylakeX", "onednn", "blis"). ff-bench runs it for every
 * candidate and reports the fastest as "blas_best": the best BLAS this machine can run,
 * not only OpenBLAS as it happens to load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float,
                               float *, int);
typedef int (*dnnl_sgemm_fn)(char, char, long, long, long, float, const float *, long, const float *, long, float,
                             float *, long);
typedef void (*bli_sgemm_fn)(int, int, long, long, long, float *, float *, long, long, float *, long, long, float *,
                             float *, long, long);

typedef struct probe {
    int n;
    float *a, *b, *c;
    cblas_sgemm_fn openblas;
    dnnl_sgemm_fn onednn;
    bli_sgemm_fn blis;
} probe;

static int run(void *v)
{
    probe *p = v;
    float one = 1, zero = 0;
    if (p->openblas) p->openblas(101, 111, 111, p->n, p->n, p->n, 1.0f, p->a, p->n, p->b, p->n, 0.0f, p->c, p->n);
    else if (p->onednn) return p->onednn('N', 'N', p->n, p->n, p->n, 1.0f, p->a, p->n, p->b, p->n, 0.0f, p->c, p->n);
    else p->blis(0, 0, p->n, p->n, p->n, &one, p->a, p->n, 1, p->b, p->n, 1, &zero, p->c, p->n, 1);
    return 0;
}

static float *filled(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++) x[i] = (float)((i * 2654435761u + seed) % 2000) / 1000.0f - 1.0f;
    return x;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ff-blas-probe openblas|onednn|blis N THREADS BUDGET [quick]\n");
        return 2;
    }
    const char *lib = argv[1];
    int n = atoi(argv[2]), threads = atoi(argv[3]);
    bench_opts o = {.budget_s = atof(argv[4]), .quick = argc > 5};
    probe p = {.n = n};
    char name[64];
    void *h = NULL;
    if (!strcmp(lib, "openblas") && (h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL))) {
        void (*set)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
        char *(*core)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
        if (set) set(threads);
        p.openblas = (cblas_sgemm_fn)dlsym(h, "cblas_sgemm");
        snprintf(name, sizeof name, "openblas:%s", core ? core() : "?");
    } else if (!strcmp(lib, "onednn") && (h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL))) {
        p.onednn = (dnnl_sgemm_fn)dlsym(h, "dnnl_sgemm"); /* threads: OMP_NUM_THREADS */
        snprintf(name, sizeof name, "onednn");
    } else if (!strcmp(lib, "blis") && (h = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL))) {
        void (*set)(long) = (void (*)(long))dlsym(h, "bli_thread_set_num_threads");
        if (set) set(threads);
        p.blis = (bli_sgemm_fn)dlsym(h, "bli_sgemm");
        snprintf(name, sizeof name, "blis");
    }
    if (!p.openblas && !p.onednn && !p.blis) {
        fprintf(stderr, "ff-blas-probe: %s is not available here (%s)\n", lib, h ? "no sgemm symbol" : dlerror());
        return 3;
    }
    p.a = filled((size_t)n * n, 7), p.b = filled((size_t)n * n, 8), p.c = filled((size_t)n * n, 9);
    if (!p.a || !p.b || !p.c) return 4;
    char w[64];
    snprintf(w, sizeof w, "matmul_f32_%d", n);
    bench_case c = {w, run, &p, 2.0 * n * (double)n * n, "GFLOP/s"};
    bench_result r;
    if (bench_measure(&c, &o, name, threads, &r)) return 5;
    bench_emit(&r);
    return 0;
}
