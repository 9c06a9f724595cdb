/*
 * ff-bench: FusionFlow side by side with OpenBLAS, plain C loops and (merged from
 * benchmarks/baselines.py) NumPy and PyTorch.
 *
 *   ff-bench [--json FILE] [--threads 1,2] [--backends cpu,cpu_blas] [--baselines-json FILE]
 *            [--filter SUBSTR] [--budget SECONDS] [--quick] [--mnist]
 *
 * Backends read FF_NUM_THREADS once, at load time, so each thread count runs in its own
 * child process (this same binary with --child N); the parent collects their result
 * lines, prints the table with ratios to every baseline and writes the JSON.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>

#include "bench.h"

#define MAX_RESULTS 1024

typedef struct args {
    const char *json, *baselines, *backends, *threads, *filter;
    double budget;
    bool quick, mnist, big;
    int child; /* > 0: run as the child for this many threads */
} args;

static void usage(void)
{
    fprintf(stderr,
            "usage: ff-bench [--json FILE] [--threads LIST] [--backends LIST] [--baselines-json FILE]\n"
            "                [--filter SUBSTR] [--budget S] [--quick] [--big] [--mnist]\n"
            "  --threads LIST   thread counts (default 1,2); each runs in a child process\n"
            "  --backends LIST  backends to measure (default cpu,cpu_blas)\n"
            "  --baselines-json FILE  merge NumPy/PyTorch results from benchmarks/baselines.py\n"
            "  --budget S       seconds per measurement (default 0.3)\n"
            "  --quick          small sizes (a smoke run)\n"
            "  --big            also matmul n = 4096 (minutes on 2 cores)\n"
            "  --mnist          also time one Fashion-MNIST epoch per backend\n");
}

static int parse(int argc, char **argv, args *a)
{
    *a = (args){.backends = "cpu,cpu_blas", .threads = "1,2", .budget = 0.3};
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--quick")) a->quick = true;
        else if (!strcmp(s, "--mnist")) a->mnist = true;
        else if (!strcmp(s, "--big")) a->big = true;
        else if (!v) return -1;
        else if (!strcmp(s, "--json")) a->json = v, i++;
        else if (!strcmp(s, "--baselines-json")) a->baselines = v, i++;
        else if (!strcmp(s, "--backends")) a->backends = v, i++;
        else if (!strcmp(s, "--threads")) a->threads = v, i++;
        else if (!strcmp(s, "--filter")) a->filter = v, i++;
        else if (!strcmp(s, "--budget")) a->budget = atof(v), i++;
        else if (!strcmp(s, "--child")) a->child = atoi(v), i++;
        else return -1;
    }
    return a->budget > 0 ? 0 : -1;
}

/* ---- child: measure everything at one thread count ------------------------------- */
/* 0.3 s of sgemm before the first measurement: clocks up, OpenBLAS's start-up done. */
static void warm_up(void)
{
    enum { N = 256 };
    static float a[N * N], b[N * N], c[N * N];
    for (int i = 0; i < N * N; i++) a[i] = b[i] = 1e-3f * (float)(i % 101);
    double t0 = bench_now();
    while (bench_now() - t0 < 0.3)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
}

static int run_child(const args *a)
{
    char n[16];
    snprintf(n, sizeof n, "%d", a->child);
    setenv("FF_NUM_THREADS", n, 1);
    bench_opts o = {.budget_s = a->quick ? a->budget / 3 : a->budget, .quick = a->quick, .mnist = a->mnist, .big = a->big,
                    .filter = a->filter};
    warm_up();
    char *list = strdup(a->backends), *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        ff_backend *be = ff_backend_load(name);
        if (!be) {
            fprintf(stderr, "ff-bench: backend %s skipped: %s\n", name, ff_last_error());
            continue;
        }
        /* the reference backend is single-threaded: measure it once */
        if (strcmp(name, "cpu") == 0 && a->child != 1) continue;
        bench_ff_all(be, a->child, &o);
    }
    free(list);
    bench_baselines_all(a->child, &o);
    ff_shutdown();
    return 0;
}

/* ---- parent: collect, merge, report ----------------------------------------------- */
static bench_result results[MAX_RESULTS];
static int nresults;

static void add_result(const bench_result *r)
{
    if (nresults < MAX_RESULTS) results[nresults++] = *r;
}

static int collect(const char *exe, const args *a, int threads)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' --child %d --backends '%s' --budget %g%s%s%s%s%s%s", exe, threads, a->backends,
             a->budget, a->quick ? " --quick" : "", a->big ? " --big" : "", a->mnist ? " --mnist" : "", a->filter ? " --filter '" : "",
             a->filter ? a->filter : "", a->filter ? "'" : "");
    /* the child's OpenBLAS (the cblas baseline) starts with the same thread count */
    char n[16];
    snprintf(n, sizeof n, "%d", threads);
    setenv("OPENBLAS_NUM_THREADS", n, 1);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        bench_result r = {0};
        char unit[16];
        if (sscanf(line, "R\t%63[^\t]\t%31[^\t]\t%d\t%lf\t%lf\t%d\t%ld\t%lf\t%15s", r.workload, r.backend, &r.threads,
                   &r.median_s, &r.min_s, &r.runs, &r.inner, &r.work, unit) == 9) {
            snprintf(r.unit, sizeof r.unit, "%s", strcmp(unit, "-") ? unit : "");
            add_result(&r);
            fprintf(stderr, "  %-24s %-9s %dT %12.6f ms\n", r.workload, r.backend, r.threads, r.median_s * 1e3);
        }
    }
    return pclose(p) == 0 ? 0 : -1;
}

/* The value of "key": in a one-object-per-line JSON record (baselines.py's format). */
static int json_field(const char *line, const char *key, char *out, size_t n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p) return -1;
    p += strlen(pat);
    while (*p == ' ') p++;
    size_t k = 0;
    if (*p == '"') {
        for (p++; *p && *p != '"' && k + 1 < n; p++) out[k++] = *p;
    } else {
        for (; *p && *p != ',' && *p != '}' && k + 1 < n; p++) out[k++] = *p;
    }
    out[k] = '\0';
    return 0;
}

static int merge_baselines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ff-bench: cannot read %s\n", path);
        return -1;
    }
    char line[2048], v[5][64];
    while (fgets(line, sizeof line, f)) {
        if (json_field(line, "workload", v[0], 64) || json_field(line, "backend", v[1], 64) ||
            json_field(line, "threads", v[2], 64) || json_field(line, "median_s", v[3], 64) ||
            json_field(line, "runs", v[4], 64))
            continue;
        bench_result r = {0};
        snprintf(r.workload, sizeof r.workload, "%.63s", v[0]);
        snprintf(r.backend, sizeof r.backend, "%.31s", v[1]);
        r.threads = atoi(v[2]);
        r.median_s = r.min_s = atof(v[3]);
        r.runs = atoi(v[4]);
        r.inner = 1;
        char w[64];
        if (!json_field(line, "min_s", w, sizeof w)) r.min_s = atof(w);
        add_result(&r);
    }
    fclose(f);
    return 0;
}

static const bench_result *find(const char *w, const char *be, int threads)
{
    for (int i = 0; i < nresults; i++)
        if (!strcmp(results[i].workload, w) && !strcmp(results[i].backend, be) && results[i].threads == threads)
            return &results[i];
    return NULL;
}

/* Baselines for a ratio: the same thread count, else (single-threaded C loops) 1. */
static const bench_result *find_base(const char *w, const char *be, int threads)
{
    const bench_result *r = find(w, be, threads);
    return r ? r : find(w, be, 1);
}

static const char *const ff_names[] = {"cpu_blas", "cpu"};
/* blas_best: the fastest of OpenBLAS under each kernel, oneDNN and BLIS (bench_base.c) */
static const char *const base_names[] = {"cblas", "blas_best", "c_loop", "numpy", "torch", "onednn"};
#define NBASE ((int)(sizeof base_names / sizeof base_names[0]))

static void fmt_time(double s, char *buf, size_t n)
{
    if (s <= 0) snprintf(buf, n, "-");
    else if (s < 1e-6) snprintf(buf, n, "%.3f us", s * 1e6);
    else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
    else if (s < 1.0) snprintf(buf, n, "%.3f ms", s * 1e3);
    else snprintf(buf, n, "%.3f s", s);
}

static void print_table(void)
{
    printf("\n%-22s %3s", "workload", "thr");
    for (int i = 0; i < 2; i++) printf(" %11s", ff_names[i]);
    for (int i = 0; i < NBASE; i++) printf(" %11s", base_names[i]);
    printf("   cpu_blas speed vs: cblas   best  c_loop  numpy  torch onednn\n");
    for (int i = 0; i < nresults; i++) {
        const bench_result *r = &results[i];
        /* one row per (workload, threads), at its first FusionFlow result */
        if (strcmp(r->backend, "cpu_blas") && strcmp(r->backend, "cpu")) continue;
        if (!strcmp(r->backend, "cpu") && find(r->workload, "cpu_blas", r->threads)) continue;
        printf("%-22s %3d", r->workload, r->threads);
        char buf[32];
        for (int k = 0; k < 2; k++) {
            const bench_result *x = find(r->workload, ff_names[k], r->threads);
            fmt_time(x ? x->median_s : 0, buf, sizeof buf);
            printf(" %11s", buf);
        }
        for (int k = 0; k < NBASE; k++) {
            const bench_result *x = find_base(r->workload, base_names[k], r->threads);
            fmt_time(x ? x->median_s : 0, buf, sizeof buf);
            printf(" %11s", buf);
        }
        const bench_result *f = find(r->workload, "cpu_blas", r->threads);
        printf("  %18s", "");
        for (int k = 0; k < NBASE; k++) {
            const bench_result *x = find_base(r->workload, base_names[k], r->threads);
            if (f && x && f->median_s > 0) printf(" %6.2fx", x->median_s / f->median_s);
            else printf(" %7s", "-");
        }
        printf("\n");
    }
    printf("(ratio = baseline time / cpu_blas time: above 1 means cpu_blas is faster; C loops are 1 thread)\n");
}

static int write_json(const char *path, const args *a)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    char host[128] = "";
    gethostname(host, sizeof host - 1);
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    fprintf(f,
            "{\n  \"tool\": \"ff-bench\",\n  \"host\": \"%s\",\n  \"openblas_coretype\": \"%s\",\n"
            "  \"openblas_kernel\": \"%s\",\n  \"quick\": %s,\n",
            host, coretype ? coretype : "", openblas_get_corename(), a->quick ? "true" : "false");
    fprintf(f, "  \"results\": [\n");
    for (int i = 0; i < nresults; i++) {
        const bench_result *r = &results[i];
        fprintf(f,
                "    {\"workload\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"median_s\": %.9g, \"min_s\": %.9g, "
                "\"runs\": %d, \"inner\": %ld, \"work\": %.9g, \"unit\": \"%s\"}%s\n",
                r->workload, r->backend, r->threads, r->median_s, r->min_s, r->runs, r->inner, r->work, r->unit,
                i + 1 < nresults ? "," : "");
    }
    fprintf(f, "  ],\n  \"ratios\": [\n");
    int first = 1;
    for (int i = 0; i < nresults; i++) {
        const bench_result *r = &results[i];
        if (strcmp(r->backend, "cpu_blas") && strcmp(r->backend, "cpu")) continue;
        for (int k = 0; k < NBASE; k++) {
            const bench_result *x = find_base(r->workload, base_names[k], r->threads);
            if (!x || r->median_s <= 0) continue;
            fprintf(f, "%s    {\"workload\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"baseline\": \"%s\", "
                       "\"speed_ratio\": %.6g}",
                    first ? "" : ",\n", r->workload, r->backend, r->threads, base_names[k], x->median_s / r->median_s);
            first = 0;
        }
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}

int main(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a)) {
        usage();
        return 2;
    }
    if (a.child > 0) return run_child(&a);

    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) {
        fprintf(stderr, "ff-bench: cannot find its own executable\n");
        return 1;
    }
    exe[len] = '\0';
    double t0 = bench_now();
    char *list = strdup(a.threads), *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int n = atoi(t);
        if (n < 1) continue;
        fprintf(stderr, "ff-bench: %d thread(s)\n", n);
        if (collect(exe, &a, n)) rc = 1;
    }
    free(list);
    if (a.baselines && merge_baselines(a.baselines)) rc = 1;
    print_table();
    printf("total %.1f s\n", bench_now() - t0);
    if (a.json && write_json(a.json, &a)) {
        fprintf(stderr, "ff-bench: cannot write %s\n", a.json);
        rc = 1;
    }
    return rc;
}
