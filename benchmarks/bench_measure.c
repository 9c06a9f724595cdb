/* The measurement loop: medians of adaptive repeats, tiny workloads batched. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool bench_selected(const bench_opts *o, const char *workload)
{
    return !o->filter || !*o->filter || strstr(workload, o->filter) != NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int bench_measure(const bench_case *c, const bench_opts *o, const char *backend, int threads, bench_result *r)
{
    /* warm-up: first-touch page faults, allocator caches, lazy init */
    double t0 = bench_now();
    if (c->run(c->state)) goto fail;
    double first = bench_now() - t0;
    if (first < 0.05 && c->run(c->state)) goto fail;
    t0 = bench_now();
    if (c->run(c->state)) goto fail;
    double one = bench_now() - t0;
    if (one <= 0) one = 1e-9;

    /* a sample lasts at least ~1 ms; as many samples as the budget allows, 3..200 */
    long inner = one >= 1e-3 ? 1 : (long)(1e-3 / one) + 1;
    double per_sample = one * (double)inner;
    int samples = (int)(o->budget_s / per_sample);
    if (samples < 3) samples = 3;
    if (samples > 200) samples = 200;
    if (per_sample > 2.0 && samples > 3) samples = 3; /* big matmuls: keep the whole run under budget */
    double *t = malloc(sizeof(double) * (size_t)samples);
    if (!t) return -1;
    for (int s = 0; s < samples; s++) {
        double a = bench_now();
        for (long i = 0; i < inner; i++)
            if (c->run(c->state)) {
                free(t);
                goto fail;
            }
        t[s] = (bench_now() - a) / (double)inner;
    }
    qsort(t, (size_t)samples, sizeof *t, cmp_double);
    memset(r, 0, sizeof *r);
    snprintf(r->workload, sizeof r->workload, "%s", c->workload);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->unit, sizeof r->unit, "%s", c->unit ? c->unit : "");
    r->threads = threads;
    r->median_s = samples % 2 ? t[samples / 2] : 0.5 * (t[samples / 2 - 1] + t[samples / 2]);
    r->min_s = t[0];
    r->runs = samples;
    r->inner = inner;
    r->work = c->work;
    free(t);
    return 0;
fail:
    fprintf(stderr, "ff-bench: %s on %s failed: %s\n", c->workload, backend, ff_last_error());
    return -1;
}

void bench_emit(const bench_result *r)
{
    printf("R\t%s\t%s\t%d\t%.9g\t%.9g\t%d\t%ld\t%.9g\t%s\n", r->workload, r->backend, r->threads, r->median_s, r->min_s,
           r->runs, r->inner, r->work, r->unit[0] ? r->unit : "-");
    fflush(stdout);
}
