/*
 * ff-bench-graph [--backend NAME] [--blocks N] [--filter SUBSTR] [--mnist]: each graph workload
 * beside its eager twin in one process (issue 14's targets). The eager region and the
 * replay of its capture alternate in N blocks (default 21); each block is timed in this
 * thread's CPU time, so load from other processes on a shared machine moves both sides of
 * a block alike; the line reports the medians and the median of the per-block ratios
 * graph / eager (below 1: the graph is faster) with its quartiles.
 *
 * One thread: FF_NUM_THREADS is set to 1 unless the environment sets it (a pool's other
 * threads would not show in this thread's CPU time).
 *
 * Workloads (the eager side is the same region ff-bench times):
 *   mlp_4_16_1_step       MSE, SGD, batch 8
 *   mlp_784_256_10_step   cross-entropy, SGD, batch 64
 *   demo_step             the demo's MLP 784-256-128-10, AdamW (lr 2e-3, wd 1e-4), batch 128
 *   relu_mul_add_f32_16M  relu(a * b + c): three allocating ops / one fused program
 *   fashion_mnist_epoch   --mnist: one epoch of the demo's training (examples/mnist_train.c)
 *                         against the same with --graph, a fresh model each, in
 *                         max(3, N / 4) blocks (an epoch takes about a second)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_work.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *p, const void *q)
{
    double a = *(const double *)p, b = *(const double *)q;
    return a < b ? -1 : a > b;
}

/* One line: the median eager and graph times (scaled to unit) and the median ratio with
 * its quartiles; sorts the three arrays. */
static void report(const char *name, const char *unit, double scale, double *te, double *tg, double *ratio, int n)
{
    qsort(te, (size_t)n, sizeof *te, cmp_double);
    qsort(tg, (size_t)n, sizeof *tg, cmp_double);
    qsort(ratio, (size_t)n, sizeof *ratio, cmp_double);
    printf("%-22s eager %10.1f %s  graph %10.1f %s  graph/eager %.3f (quartiles %.3f %.3f)\n", name, scale * te[n / 2],
           unit, scale * tg[n / 2], unit, ratio[n / 2], ratio[n / 4], ratio[3 * n / 4]);
}

/* Captures region (after one eager call: an optimizer's state exists), then alternates
 * `per` eager calls and `per` replays in `blocks` blocks. */
static int compare(const char *name, bench_state *s, ff_tensor *(*region)(bench_state *), int per, int blocks)
{
    ff_tensor_release(region(s));
    if (bench_capture(s, region)) return -1;
    double *te = malloc(sizeof(double) * 3 * (size_t)blocks), *tg = te + blocks, *ratio = tg + blocks;
    int rc = te ? 0 : -1;
    for (int k = 0; k < blocks && !rc; k++) {
        double t0 = cpu_now();
        for (int i = 0; i < per && !rc; i++) {
            ff_tensor *o = region(s);
            rc = o ? 0 : -1;
            ff_tensor_release(o);
        }
        double t1 = cpu_now();
        for (int i = 0; i < per && !rc; i++) rc = ff_graph_replay(s->g) ? -1 : 0;
        double t2 = cpu_now();
        te[k] = (t1 - t0) / per, tg[k] = (t2 - t1) / per, ratio[k] = tg[k] / te[k];
    }
    if (rc) fprintf(stderr, "ff-bench-graph: %s: %s\n", name, ff_last_error());
    else report(name, "us", 1e6, te, tg, ratio, blocks);
    free(te);
    return rc;
}

static double mnist_epoch_cpu(const mnist_split *train, bool graph)
{
    ff_module *net = mnist_mlp(42);
    mnist_train_cfg cfg = bench_mnist_cfg(false, graph);
    double t0 = cpu_now();
    int rc = net ? mnist_train(net, train, &cfg, NULL, 0, NULL, NULL) : -1;
    double t = cpu_now() - t0;
    ff_module_release(net);
    return rc ? -1 : t;
}

/* The demo's epoch, eager against --graph, alternated. */
static int mnist_compare(int blocks)
{
    static mnist_split train;
    char err[256];
    double mean = 0, std = 0;
    if (mnist_load(MNIST_DEFAULT_DIR, "train", 0, &mean, &std, &train, err, sizeof err)) {
        fprintf(stderr, "ff-bench-graph: Fashion-MNIST: %s\n", err);
        return -1;
    }
    double te[64], tg[64], ratio[64];
    if (blocks > 64) blocks = 64;
    int rc = 0;
    for (int k = 0; k < blocks && !rc; k++) {
        te[k] = mnist_epoch_cpu(&train, false);
        tg[k] = mnist_epoch_cpu(&train, true);
        rc = te[k] < 0 || tg[k] < 0 ? -1 : 0;
        ratio[k] = tg[k] / te[k];
    }
    mnist_free(&train);
    if (rc) {
        fprintf(stderr, "ff-bench-graph: fashion_mnist_epoch: %s\n", ff_last_error());
        return -1;
    }
    report("fashion_mnist_epoch", "ms", 1e3, te, tg, ratio, blocks);
    return 0;
}

int main(int argc, char **argv)
{
    const char *backend = "cpu_blas", *filter = NULL;
    int blocks = 21;
    bool mnist = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!strcmp(argv[i], "--mnist")) mnist = true;
        else {
            fprintf(stderr, "usage: ff-bench-graph [--backend NAME] [--blocks N] [--filter SUBSTR] [--mnist]\n");
            return 2;
        }
    }
    if (blocks < 1) blocks = 1;
    setenv("FF_NUM_THREADS", "1", 0);
    ff_backend *be = ff_backend_load(backend);
    if (!be || ff_backend_set_default(be)) {
        fprintf(stderr, "ff-bench-graph: %s\n", ff_last_error());
        return 1;
    }
    printf("ff-bench-graph: backend %s, FF_NUM_THREADS=%s, %d blocks, thread CPU time, medians\n", backend,
           getenv("FF_NUM_THREADS"), blocks);
    int fails = 0;
#define SELECTED(n) (!filter || strstr(n, filter))
    static const struct {
        const char *name;
        int n_dims;
        int64_t dims[4], batch;
        bool ce, adamw;
        int per; /* calls per block */
    } mlps[] = {
        {"mlp_4_16_1_step", 3, {4, 16, 1}, 8, false, false, 2000},
        {"mlp_784_256_10_step", 3, {784, 256, 10}, 64, true, false, 40},
        {"demo_step", 4, {784, 256, 128, 10}, 128, true, true, 20},
    };
    for (size_t i = 0; i < sizeof mlps / sizeof mlps[0]; i++) {
        if (!SELECTED(mlps[i].name)) continue;
        bench_state s = {0};
        fails += bench_mlp_setup(&s, mlps[i].n_dims, mlps[i].dims, mlps[i].batch, mlps[i].ce, mlps[i].adamw) ||
                 compare(mlps[i].name, &s, bench_step_loss, mlps[i].per, blocks);
        bench_state_free(&s);
    }
    if (SELECTED("relu_mul_add_f32_16M")) {
        int64_t n = 1 << 24;
        bench_state s = {.a = ff_rand_uniform(1, &n, FF_F32, -5, 5, 1), .b = ff_rand_uniform(1, &n, FF_F32, -5, 5, 2),
                         .c = ff_rand_uniform(1, &n, FF_F32, -5, 5, 3)};
        fails += !s.a || !s.b || !s.c || compare("relu_mul_add_f32_16M", &s, bench_relu_mul_add, 3, blocks);
        bench_state_free(&s);
    }
    if (mnist && SELECTED("fashion_mnist_epoch")) fails += mnist_compare(blocks / 4 > 3 ? blocks / 4 : 3) != 0;
    return fails ? 1 : 0;
}
