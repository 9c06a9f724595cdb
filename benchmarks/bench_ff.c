/*
 * FusionFlow workloads, through the public API (as a user would call it), on one
 * backend; *_out ("into an existing buffer", torch's out=) uses the destination-passing
 * forms (ff_unary_out).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mnist_train.h"

const int bench_mm_sizes[] = {64, 128, 256, 512, 1024, 2048, 4096};
const int bench_mm_count = (int)(sizeof bench_mm_sizes / sizeof bench_mm_sizes[0]);

int bench_mm_max(const bench_opts *o, bool reference)
{
    if (reference) return o->quick ? 128 : 512;
    return o->quick ? 512 : o->big ? 4096 : 2048;
}

typedef struct ff_state {
    ff_tensor *a, *b, *c, *y;
    ff_module *net;
    ff_optimizer *opt;
    bool ce; /* cross-entropy (else MSE) */
    ff_graph *g;    /* the *_graph workloads: the captured region */
    ff_tensor *out; /* and the result it keeps writing (the loss, y) */
} ff_state;

static void state_free(ff_state *s)
{
    ff_graph_release(s->g); /* before the optimizer it calls back into */
    ff_tensor_release(s->out);
    ff_tensor_release(s->a), ff_tensor_release(s->b), ff_tensor_release(s->c), ff_tensor_release(s->y);
    ff_optimizer_release(s->opt);
    ff_module_release(s->net);
    memset(s, 0, sizeof *s);
}

static int done(ff_tensor *r)
{
    if (!r) return -1;
    ff_tensor_release(r);
    return 0;
}

static int run_matmul(void *v) { ff_state *s = v; return done(ff_matmul(s->a, s->b)); }
static int run_add(void *v) { ff_state *s = v; return done(ff_add(s->a, s->b)); }
static int run_mul(void *v) { ff_state *s = v; return done(ff_mul(s->a, s->b)); }
static int run_exp(void *v) { ff_state *s = v; return done(ff_exp(s->a)); }
static int run_add_ip(void *v) { ff_state *s = v; return ff_add_(s->a, s->b) ? -1 : 0; }
static int run_mul_ip(void *v) { ff_state *s = v; return ff_mul_(s->a, s->c) ? -1 : 0; } /* c is all ones */
static int run_sum(void *v) { ff_state *s = v; return done(ff_sum(s->a, 0, NULL, false)); }
static int run_softmax(void *v) { ff_state *s = v; return done(ff_softmax(s->a, -1)); }

/* exp into an existing buffer (torch's out=): the public destination-passing form */
static int run_conv_fwd(void *v)
{
    ff_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    int rc = done(ff_conv2d(s->a, s->b, NULL, 1, 1, 1, 1));
    ff_set_grad_enabled(prev);
    return rc;
}

/* forward, then backward to the input and the weight (a and b require grad) from a
 * given gradient (c, ones), grads dropped after: torch's y.backward(g); x.grad = None */
static int run_conv_step(void *v)
{
    ff_state *s = v;
    ff_tensor *y = ff_conv2d(s->a, s->b, NULL, 1, 1, 1, 1);
    int rc = y && !ff_backward(y, s->c, NULL) && !ff_zero_grad(s->a) && !ff_zero_grad(s->b) ? 0 : -1;
    ff_tensor_release(y);
    return rc;
}

static int run_exp_out(void *v)
{
    ff_state *s = v;
    return ff_unary_out(FF_UNARY_EXP, s->b, s->a) ? -1 : 0;
}

static int run_forward(void *v)
{
    ff_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    int rc = done(ff_module_forward(s->net, s->a));
    ff_set_grad_enabled(prev);
    return rc;
}

/* forward, loss, zero_grad, backward, optimizer step: the loss, or NULL on error */
static ff_tensor *step_loss(ff_state *s)
{
    ff_tensor *out = ff_module_forward(s->net, s->a);
    ff_tensor *loss = out ? (s->ce ? ff_cross_entropy(out, s->y) : ff_mse_loss(out, s->y)) : NULL;
    if (loss && (ff_optimizer_zero_grad(s->opt) || ff_backward(loss, NULL, NULL) || ff_optimizer_step(s->opt))) {
        ff_tensor_release(loss);
        loss = NULL;
    }
    ff_tensor_release(out);
    return loss;
}

static int run_step(void *v) { return done(step_loss(v)); }

/* y = relu(a * b + c), three allocating ops, temporaries released as a user would */
static ff_tensor *relu_mul_add(ff_state *s)
{
    ff_tensor *ab = ff_mul(s->a, s->b), *abc = ab ? ff_add(ab, s->c) : NULL, *y = abc ? ff_relu(abc) : NULL;
    ff_tensor_release(ab);
    ff_tensor_release(abc);
    return y;
}

static int run_relu_mul_add(void *v) { return done(relu_mul_add(v)); }

/* The *_graph workloads: the region captured once, its result kept in s->out (as a user
 * keeps the loss to read it; detached, so the history's saved tensors die in the region
 * and are planned), then every timed call is one replay. */
static int capture(ff_state *s, ff_tensor *(*region)(ff_state *))
{
    if (ff_graph_capture_begin()) return -1;
    ff_tensor *r = region(s);
    s->out = r ? ff_detach(r) : NULL;
    ff_tensor_release(r);
    s->g = ff_graph_capture_end();
    if (!s->out || !s->g) {
        fprintf(stderr, "ff-bench: capture failed: %s\n", ff_last_error());
        return -1;
    }
    return 0;
}

static int run_replay(void *v)
{
    ff_state *s = v;
    return ff_graph_replay(s->g) ? -1 : 0;
}

static ff_tensor *uniform(int ndim, const int64_t *shape, double lo, double hi, uint64_t seed)
{
    return ff_rand_uniform(ndim, shape, FF_F32, lo, hi, seed);
}

/* A device backend returns once its work is queued: every timed run ends with a sync, so
 * the time is the work's, not the enqueue's (a no-op on host backends). */
static int (*synced_run)(void *);
static ff_backend *synced_be;

static int run_synced(void *v)
{
    int rc = synced_run(v);
    return rc || ff_backend_sync(synced_be) ? -1 : 0;
}

static void measure(const bench_opts *o, const char *w, int (*run)(void *), ff_state *s, double work,
                    const char *unit, ff_backend *be, int threads)
{
    synced_run = run, synced_be = be;
    bench_case c = {w, run_synced, s, work, unit};
    bench_result r;
    if (bench_measure(&c, o, ff_backend_name(be), threads, &r) == 0) bench_emit(&r);
}

static void matmuls(ff_backend *be, int threads, const bench_opts *o, bool reference)
{
    for (int i = 0; i < bench_mm_count; i++) {
        int64_t n = bench_mm_sizes[i];
        if (n > bench_mm_max(o, reference)) break;
        char w[64];
        snprintf(w, sizeof w, "matmul_f32_%lld", (long long)n);
        if (!bench_selected(o, w)) continue;
        int64_t sh[2] = {n, n};
        ff_state s = {.a = uniform(2, sh, -1, 1, 7), .b = uniform(2, sh, -1, 1, 8)};
        if (s.a && s.b) measure(o, w, run_matmul, &s, 2.0 * (double)(n * n * n), "GFLOP/s", be, threads);
        state_free(&s);
    }
}

/* relu(a * b + c) over three full tensors: three eager ops, and the same captured once
 * and replayed (one fused pass: reads a, b, c, writes y) */
static void relu_mul_add_pair(ff_backend *be, int threads, const bench_opts *o, int64_t n)
{
    static const char *const names[2] = {"relu_mul_add_f32_16M", "relu_mul_add_f32_16M_graph"};
    for (int graph = 0; graph < 2; graph++) {
        if (!bench_selected(o, names[graph])) continue;
        ff_state s = {.a = uniform(1, &n, -5, 5, 1), .b = uniform(1, &n, -5, 5, 2), .c = uniform(1, &n, -5, 5, 3)};
        if (s.a && s.b && s.c && (!graph || !capture(&s, relu_mul_add)))
            measure(o, names[graph], graph ? run_replay : run_relu_mul_add, &s, 16.0 * (double)n, "GB/s", be, threads);
        state_free(&s);
    }
}

static void elementwise(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t sizes[] = {1 << 20, 1 << 24};
    static const char *const tags[] = {"1M", "16M"};
    for (int k = 0; k < 2; k++) {
        int64_t n = o->quick ? sizes[k] / 16 : sizes[k];
        ff_state s = {.a = uniform(1, &n, -5, 5, 1), .b = uniform(1, &n, -5, 5, 2), .c = ff_ones(1, &n, FF_F32)};
        if (!s.a || !s.b || !s.c) {
            state_free(&s);
            continue;
        }
        double b3 = 12.0 * (double)n, b2 = 8.0 * (double)n;
        struct { const char *fmt; int (*run)(void *); double work; } t[] = {
            {"add_f32_%s", run_add, b3}, {"add_f32_%s_inplace", run_add_ip, b3}, {"mul_f32_%s", run_mul, b3},
            {"mul_f32_%s_inplace", run_mul_ip, b3}, {"exp_f32_%s", run_exp, b2}, {"exp_f32_%s_out", run_exp_out, b2},
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            char w[64];
            snprintf(w, sizeof w, t[i].fmt, tags[k]);
            if (!bench_selected(o, w)) continue;
            if (t[i].run == run_exp || t[i].run == run_exp_out) { /* fresh inputs in [-5, 5) */
                ff_tensor_release(s.a);
                s.a = uniform(1, &n, -5, 5, 1);
            }
            measure(o, w, t[i].run, &s, t[i].work, "GB/s", be, threads);
        }
        if (k == 1 && bench_selected(o, "sum_f32_16M")) measure(o, "sum_f32_16M", run_sum, &s, 4.0 * (double)n, "GB/s", be, threads);
        state_free(&s);
        if (k == 1) relu_mul_add_pair(be, threads, o, n);
        if (k == 1 && bench_selected(o, "softmax_f32_16M")) {
            int64_t sh[2] = {o->quick ? 256 : 4096, 4096}; /* rows of 4096, softmax over the last axis */
            ff_state m = {.a = uniform(2, sh, -5, 5, 3)};
            if (m.a) measure(o, "softmax_f32_16M", run_softmax, &m, 8.0 * (double)(sh[0] * sh[1]), "GB/s", be, threads);
            state_free(&m);
        }
    }
    int64_t four = 4;
    ff_state t = {.a = uniform(1, &four, -1, 1, 4), .b = uniform(1, &four, -1, 1, 5)};
    if (t.a && t.b && bench_selected(o, "add_f32_4")) measure(o, "add_f32_4", run_add, &t, 0, "", be, threads);
    state_free(&t);
}

/* An MLP in -> hidden -> out with ReLU, SGD(lr 0.01). */
static int mlp_setup(ff_state *s, int64_t in, int64_t hidden, int64_t out, int64_t batch, bool ce)
{
    s->net = ff_sequential_take(3, (ff_module *[]){ff_linear(in, hidden, true, 11), ff_relu_module(),
                                                   ff_linear(hidden, out, true, 13)});
    int64_t xs[2] = {batch, in};
    s->a = uniform(2, xs, -1, 1, 21);
    s->ce = ce;
    if (ce) {
        int64_t *lab = malloc(sizeof(int64_t) * (size_t)batch);
        for (int64_t i = 0; i < batch && lab; i++) lab[i] = (i * 7) % out;
        s->y = lab ? ff_from_data(lab, 1, &batch, FF_I64) : NULL;
        free(lab);
    } else {
        int64_t ys[2] = {batch, out};
        s->y = uniform(2, ys, -1, 1, 22);
    }
    if (!s->net || !s->a || !s->y) return -1;
    ff_tensor *ps[8];
    int np = ff_module_parameters(s->net, ps, 8);
    ff_sgd_opts so = ff_sgd_defaults(0.01);
    s->opt = np > 0 ? ff_sgd(ps, np, &so) : NULL;
    return s->opt ? 0 : -1;
}

static void models(ff_backend *be, int threads, const bench_opts *o)
{
    ff_state s = {0};
    if (bench_selected(o, "mlp_784_256_10_fwd") && !mlp_setup(&s, 784, 256, 10, 64, true))
        measure(o, "mlp_784_256_10_fwd", run_forward, &s, 2.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be, threads);
    state_free(&s);
    if (bench_selected(o, "mlp_784_256_10_step") && !mlp_setup(&s, 784, 256, 10, 64, true))
        measure(o, "mlp_784_256_10_step", run_step, &s, 6.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be, threads);
    state_free(&s);
    if (bench_selected(o, "mlp_4_16_1_step") && !mlp_setup(&s, 4, 16, 1, 8, false))
        measure(o, "mlp_4_16_1_step", run_step, &s, 0, "", be, threads);
    state_free(&s);
    /* the same steps captured (after one eager step, as SGD with momentum would need)
     * and replayed */
    if (bench_selected(o, "mlp_784_256_10_step_graph") && !mlp_setup(&s, 784, 256, 10, 64, true) && !run_step(&s) &&
        !capture(&s, step_loss))
        measure(o, "mlp_784_256_10_step_graph", run_replay, &s, 6.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be,
                threads);
    state_free(&s);
    if (bench_selected(o, "mlp_4_16_1_step_graph") && !mlp_setup(&s, 4, 16, 1, 8, false) && !run_step(&s) &&
        !capture(&s, step_loss))
        measure(o, "mlp_4_16_1_step_graph", run_replay, &s, 0, "", be, threads);
    state_free(&s);
    /* a 3x3 convolution, padding 1: [64, 32, 28, 28] by [64, 32, 3, 3] (1.85 GFLOP forward) */
    const double conv_flop = 2.0 * 64 * 64 * 28 * 28 * 32 * 9;
    int64_t xs[4] = {64, 32, 28, 28}, ws[4] = {64, 32, 3, 3}, ys[4] = {64, 64, 28, 28};
    if (bench_selected(o, "conv2d_64x32x28x28_k3")) {
        ff_state c = {.a = uniform(4, xs, -1, 1, 31), .b = uniform(4, ws, -1, 1, 32)};
        if (c.a && c.b) measure(o, "conv2d_64x32x28x28_k3", run_conv_fwd, &c, conv_flop, "GFLOP/s", be, threads);
        state_free(&c);
    }
    if (bench_selected(o, "conv2d_64x32x28x28_k3_step")) {
        ff_state c = {.a = uniform(4, xs, -1, 1, 31), .b = uniform(4, ws, -1, 1, 32),
                      .c = ff_full(4, ys, FF_F32, 1.0)};
        if (c.a && c.b && c.c && !ff_set_requires_grad(c.a, true) && !ff_set_requires_grad(c.b, true))
            measure(o, "conv2d_64x32x28x28_k3_step", run_conv_step, &c, 3 * conv_flop, "GFLOP/s", be, threads);
        state_free(&c);
    }
}

/* One epoch of the Fashion-MNIST demo: the MLP 784-256-128-10 with batch 128, or (cnn)
 * its CNN (2 x conv-BN-ReLU-pool, 1568-128-10) with batch 64; AdamW. graph: the demo's
 * --graph (the step captured after one eager step and replayed). */
static void mnist_epoch(ff_backend *be, int threads, bool cnn, bool graph, const char *name)
{
    static mnist_split train;
    static int loaded;
    char err[256];
    if (!loaded) {
        double mean = 0, std = 0;
        loaded = mnist_load(MNIST_DEFAULT_DIR, "train", 0, &mean, &std, &train, err, sizeof err) == 0 ? 1 : -1;
        if (loaded < 0) fprintf(stderr, "ff-bench: Fashion-MNIST skipped: %s\n", err);
    }
    if (loaded < 0) return;
    ff_module *net = cnn ? mnist_cnn(42) : mnist_mlp(42);
    mnist_train_cfg cfg = {.epochs = 1, .batch = cnn ? 64 : 128, .lr = 2e-3, .weight_decay = 1e-4, .seed = 42, .log = NULL,
                           .graph = graph};
    double t0 = bench_now();
    int rc = net ? mnist_train(net, &train, &cfg, NULL, 0, NULL, NULL) : -1;
    double t = bench_now() - t0;
    ff_module_release(net);
    if (rc) {
        fprintf(stderr, "ff-bench: Fashion-MNIST epoch failed: %s\n", ff_last_error());
        return;
    }
    bench_result r = {.threads = threads, .median_s = t, .min_s = t, .runs = 1, .inner = 1};
    snprintf(r.workload, sizeof r.workload, "%s", name);
    snprintf(r.backend, sizeof r.backend, "%s", ff_backend_name(be));
    bench_emit(&r);
}

void bench_ff_all(ff_backend *be, int threads, const bench_opts *o)
{
    bool reference = strcmp(ff_backend_name(be), "cpu") == 0;
    if (ff_backend_set_default(be)) {
        fprintf(stderr, "ff-bench: cannot select backend: %s\n", ff_last_error());
        return;
    }
    matmuls(be, threads, o, reference);
    elementwise(be, threads, o);
    models(be, threads, o);
    if (o->mnist && !reference)
        for (int k = 0; k < 4; k++) {
            bool cnn = k >= 2, graph = k % 2;
            char w[64];
            snprintf(w, sizeof w, "fashion_mnist%s_epoch%s", cnn ? "_cnn" : "", graph ? "_graph" : "");
            if (bench_selected(o, w)) mnist_epoch(be, threads, cnn, graph, w);
        }
}
