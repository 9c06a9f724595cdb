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

#include "ff/ff.h"
#include "mnist_train.h"

typedef struct work {
    ff_module *net;
    ff_optimizer *opt;
    ff_tensor *x, *y, *a, *b, *c;
    bool ce;
} work;

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

/* forward, loss, zero_grad, backward, step: the loss, or NULL */
static ff_tensor *step(work *w)
{
    ff_tensor *out = ff_module_forward(w->net, w->x);
    ff_tensor *loss = out ? (w->ce ? ff_cross_entropy(out, w->y) : ff_mse_loss(out, w->y)) : NULL;
    if (loss && (ff_optimizer_zero_grad(w->opt) || ff_backward(loss, NULL, NULL) || ff_optimizer_step(w->opt))) {
        ff_tensor_release(loss);
        loss = NULL;
    }
    ff_tensor_release(out);
    return loss;
}

static ff_tensor *relu_mul_add(work *w)
{
    ff_tensor *ab = ff_mul(w->a, w->b), *abc = ab ? ff_add(ab, w->c) : NULL, *y = abc ? ff_relu(abc) : NULL;
    ff_tensor_release(ab);
    ff_tensor_release(abc);
    return y;
}

/* An MLP of n_dims - 1 Linear layers with ReLU between them. */
static int mlp(work *w, int n_dims, const int64_t *dims, int64_t batch, bool ce, bool adamw)
{
    ff_module *mods[8];
    int n = 0;
    for (int i = 0; i + 1 < n_dims; i++) {
        if (i) mods[n++] = ff_relu_module();
        mods[n++] = ff_linear(dims[i], dims[i + 1], true, (uint64_t)(11 + i));
    }
    w->net = ff_sequential_take(n, mods);
    int64_t xs[2] = {batch, dims[0]}, ys[2] = {batch, dims[n_dims - 1]};
    w->x = ff_rand_uniform(2, xs, FF_F32, -1, 1, 21);
    w->ce = ce;
    if (ce) {
        int64_t *lab = malloc(sizeof *lab * (size_t)batch);
        for (int64_t i = 0; lab && i < batch; i++) lab[i] = (i * 7) % dims[n_dims - 1];
        w->y = lab ? ff_from_data(lab, 1, &batch, FF_I64) : NULL;
        free(lab);
    } else {
        w->y = ff_rand_uniform(2, ys, FF_F32, -1, 1, 22);
    }
    ff_tensor *ps[16];
    int np = w->net ? ff_module_parameters(w->net, ps, 16) : -1;
    if (np <= 0 || !w->x || !w->y) return -1;
    if (adamw) {
        ff_adam_opts ao = ff_adam_defaults(2e-3);
        ao.weight_decay = 1e-4;
        w->opt = ff_adamw(ps, np, &ao);
    } else {
        ff_sgd_opts so = ff_sgd_defaults(0.01);
        w->opt = ff_sgd(ps, np, &so);
    }
    return w->opt ? 0 : -1;
}

static void work_free(work *w)
{
    ff_optimizer_release(w->opt);
    ff_module_release(w->net);
    ff_tensor *t[] = {w->x, w->y, w->a, w->b, w->c};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) ff_tensor_release(t[i]);
}

/* Captures region (after one eager call: an optimizer's state exists), then alternates
 * `per` eager calls and `per` replays in `blocks` blocks. */
static int compare(const char *name, work *w, ff_tensor *(*region)(work *), int per, int blocks)
{
    ff_tensor_release(region(w));
    if (ff_graph_capture_begin()) return -1;
    ff_tensor *r = region(w), *kept = r ? ff_detach(r) : NULL;
    ff_tensor_release(r);
    ff_graph *g = ff_graph_capture_end();
    if (!kept || !g) {
        fprintf(stderr, "ff-bench-graph: %s: capture failed: %s\n", name, ff_last_error());
        ff_tensor_release(kept);
        ff_graph_release(g);
        return -1;
    }
    double *te = malloc(sizeof(double) * 3 * (size_t)blocks), *tg = te + blocks, *ratio = tg + blocks;
    int rc = te ? 0 : -1;
    for (int k = 0; k < blocks && !rc; k++) {
        double t0 = cpu_now();
        for (int i = 0; i < per && !rc; i++) {
            ff_tensor *o = region(w);
            rc = o ? 0 : -1;
            ff_tensor_release(o);
        }
        double t1 = cpu_now();
        for (int i = 0; i < per && !rc; i++) rc = ff_graph_replay(g) ? -1 : 0;
        double t2 = cpu_now();
        te[k] = (t1 - t0) / per, tg[k] = (t2 - t1) / per, ratio[k] = tg[k] / te[k];
    }
    if (rc) {
        fprintf(stderr, "ff-bench-graph: %s: %s\n", name, ff_last_error());
    } else {
        qsort(te, (size_t)blocks, sizeof *te, cmp_double);
        qsort(tg, (size_t)blocks, sizeof *tg, cmp_double);
        qsort(ratio, (size_t)blocks, sizeof *ratio, cmp_double);
        printf("%-22s eager %10.1f us  graph %10.1f us  graph/eager %.3f (quartiles %.3f %.3f)\n", name,
               1e6 * te[blocks / 2], 1e6 * tg[blocks / 2], ratio[blocks / 2], ratio[blocks / 4], ratio[3 * blocks / 4]);
    }
    free(te);
    ff_tensor_release(kept);
    ff_graph_release(g);
    return rc;
}

static double mnist_epoch_cpu(const mnist_split *train, bool graph)
{
    ff_module *net = mnist_mlp(42);
    mnist_train_cfg cfg = {.epochs = 1, .batch = 128, .lr = 2e-3, .weight_decay = 1e-4, .seed = 42, .graph = graph};
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
    qsort(te, (size_t)blocks, sizeof *te, cmp_double);
    qsort(tg, (size_t)blocks, sizeof *tg, cmp_double);
    qsort(ratio, (size_t)blocks, sizeof *ratio, cmp_double);
    printf("%-22s eager %10.1f ms  graph %10.1f ms  graph/eager %.3f (quartiles %.3f %.3f)\n", "fashion_mnist_epoch",
           1e3 * te[blocks / 2], 1e3 * tg[blocks / 2], ratio[blocks / 2], ratio[blocks / 4], ratio[3 * blocks / 4]);
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
    if (SELECTED("mlp_4_16_1_step")) {
        work w = {0};
        fails += mlp(&w, 3, (int64_t[]){4, 16, 1}, 8, false, false) || compare("mlp_4_16_1_step", &w, step, 2000, blocks);
        work_free(&w);
    }
    if (SELECTED("mlp_784_256_10_step")) {
        work w = {0};
        fails += mlp(&w, 3, (int64_t[]){784, 256, 10}, 64, true, false) || compare("mlp_784_256_10_step", &w, step, 40, blocks);
        work_free(&w);
    }
    if (SELECTED("demo_step")) {
        work w = {0};
        fails += mlp(&w, 4, (int64_t[]){784, 256, 128, 10}, 128, true, true) || compare("demo_step", &w, step, 20, blocks);
        work_free(&w);
    }
    if (SELECTED("relu_mul_add_f32_16M")) {
        int64_t n = 1 << 24;
        work w = {.a = ff_rand_uniform(1, &n, FF_F32, -5, 5, 1), .b = ff_rand_uniform(1, &n, FF_F32, -5, 5, 2),
                  .c = ff_rand_uniform(1, &n, FF_F32, -5, 5, 3)};
        fails += !w.a || !w.b || !w.c || compare("relu_mul_add_f32_16M", &w, relu_mul_add, 3, blocks);
        work_free(&w);
    }
    if (mnist && SELECTED("fashion_mnist_epoch")) fails += mnist_compare(blocks / 4 > 3 ? blocks / 4 : 3) != 0;
    return fails ? 1 : 0;
}
