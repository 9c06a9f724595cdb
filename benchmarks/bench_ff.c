/*
 * FusionFlow workloads, through the public API (as a user would call it), on one
 * backend; *_out ("into an existing buffer", torch's out=) uses the destination-passing
 * forms (ff_unary_out).
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_lstm.h"
#include "bench_work.h"

const int bench_mm_sizes[] = {64, 128, 256, 512, 1024, 2048, 4096};
const int bench_mm_count = (int)(sizeof bench_mm_sizes / sizeof bench_mm_sizes[0]);

int bench_mm_max(const bench_opts *o, bool reference)
{
    if (reference) return o->quick ? 128 : 512;
    return o->quick ? 512 : o->big ? 4096 : 2048;
}

static int done(ff_tensor *r)
{
    if (!r) return -1;
    ff_tensor_release(r);
    return 0;
}

static int run_matmul(void *v) { bench_state *s = v; return done(ff_matmul(s->a, s->b)); }
static int run_add(void *v) { bench_state *s = v; return done(ff_add(s->a, s->b)); }
static int run_mul(void *v) { bench_state *s = v; return done(ff_mul(s->a, s->b)); }
static int run_exp(void *v) { bench_state *s = v; return done(ff_exp(s->a)); }
static int run_add_ip(void *v) { bench_state *s = v; return ff_add_(s->a, s->b) ? -1 : 0; }
static int run_mul_ip(void *v) { bench_state *s = v; return ff_mul_(s->a, s->c) ? -1 : 0; } /* c is all ones */
static int run_sum(void *v) { bench_state *s = v; return done(ff_sum(s->a, 0, NULL, false)); }
static int run_softmax(void *v) { bench_state *s = v; return done(ff_softmax(s->a, -1)); }

/* exp into an existing buffer (torch's out=): the public destination-passing form */
static int run_conv_fwd(void *v)
{
    bench_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    int rc = done(ff_conv2d(s->a, s->b, NULL, 1, 1, 1, 1));
    ff_set_grad_enabled(prev);
    return rc;
}

/* forward, then backward to the input and the weight (a and b require grad) from a
 * given gradient (c, ones), grads dropped after: torch's y.backward(g); x.grad = None */
static int run_conv_step(void *v)
{
    bench_state *s = v;
    ff_tensor *y = ff_conv2d(s->a, s->b, NULL, 1, 1, 1, 1);
    int rc = y && !ff_backward(y, s->c, NULL) && !ff_zero_grad(s->a) && !ff_zero_grad(s->b) ? 0 : -1;
    ff_tensor_release(y);
    return rc;
}

static int run_exp_out(void *v)
{
    bench_state *s = v;
    return ff_unary_out(FF_UNARY_EXP, s->b, s->a) ? -1 : 0;
}

static int run_forward(void *v)
{
    bench_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    int rc = done(ff_module_forward(s->net, s->a));
    ff_set_grad_enabled(prev);
    return rc;
}

static int run_step(void *v) { return done(bench_step_loss(v)); }

static int run_relu_mul_add(void *v) { return done(bench_relu_mul_add(v)); }

/* The *_graph workloads: the region captured once (bench_capture), then every timed call
 * is one replay. */
static int run_replay(void *v)
{
    bench_state *s = v;
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

static void measure(const bench_opts *o, const char *w, int (*run)(void *), void *s, double work,
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
        bench_state s = {.a = uniform(2, sh, -1, 1, 7), .b = uniform(2, sh, -1, 1, 8)};
        if (s.a && s.b) measure(o, w, run_matmul, &s, 2.0 * (double)(n * n * n), "GFLOP/s", be, threads);
        bench_state_free(&s);
    }
}

/* relu(a * b + c) over three full tensors: three eager ops, and the same captured once
 * and replayed (one fused pass: reads a, b, c, writes y) */
static void relu_mul_add_pair(ff_backend *be, int threads, const bench_opts *o, int64_t n)
{
    static const char *const names[2] = {"relu_mul_add_f32_16M", "relu_mul_add_f32_16M_graph"};
    for (int graph = 0; graph < 2; graph++) {
        if (!bench_selected(o, names[graph])) continue;
        bench_state s = {.a = uniform(1, &n, -5, 5, 1), .b = uniform(1, &n, -5, 5, 2), .c = uniform(1, &n, -5, 5, 3)};
        if (s.a && s.b && s.c && (!graph || !bench_capture(&s, bench_relu_mul_add)))
            measure(o, names[graph], graph ? run_replay : run_relu_mul_add, &s, 16.0 * (double)n, "GB/s", be, threads);
        bench_state_free(&s);
    }
}

static void elementwise(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t sizes[] = {1 << 20, 1 << 24};
    static const char *const tags[] = {"1M", "16M"};
    for (int k = 0; k < 2; k++) {
        int64_t n = o->quick ? sizes[k] / 16 : sizes[k];
        bench_state s = {.a = uniform(1, &n, -5, 5, 1), .b = uniform(1, &n, -5, 5, 2), .c = ff_ones(1, &n, FF_F32)};
        if (!s.a || !s.b || !s.c) {
            bench_state_free(&s);
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
        bench_state_free(&s);
        if (k == 1) relu_mul_add_pair(be, threads, o, n);
        if (k == 1 && bench_selected(o, "softmax_f32_16M")) {
            int64_t sh[2] = {o->quick ? 256 : 4096, 4096}; /* rows of 4096, softmax over the last axis */
            bench_state m = {.a = uniform(2, sh, -5, 5, 3)};
            if (m.a) measure(o, "softmax_f32_16M", run_softmax, &m, 8.0 * (double)(sh[0] * sh[1]), "GB/s", be, threads);
            bench_state_free(&m);
        }
    }
    int64_t four = 4;
    bench_state t = {.a = uniform(1, &four, -1, 1, 4), .b = uniform(1, &four, -1, 1, 5)};
    if (t.a && t.b && bench_selected(o, "add_f32_4")) measure(o, "add_f32_4", run_add, &t, 0, "", be, threads);
    bench_state_free(&t);
}

/* ---- half precision: native entries vs the core's f32 detour ----------------------- */
/* Each half workload twice: as is (on cpu_blas the native half entries) and as the
 * detour the core takes for a backend that declines the half dtype, written out: the
 * operands copied to f32, the f32 op, the result copied back (one rounding). Both in one
 * process, so the ratio is not at the mercy of run-to-run noise. (FF_BLAS_HALF=0 makes
 * cpu_blas decline half, so the plain rows measure the core's own detour.) */
typedef struct half_op {
    bench_state *s;
    ff_dtype t;
    int kind; /* 0 add, 1 gelu (erf), 2 sum, 3 matmul */
} half_op;

static ff_tensor *half_compute(const half_op *h, const ff_tensor *a, const ff_tensor *b)
{
    switch (h->kind) {
    case 0: return ff_add(a, b);
    case 1: return ff_gelu(a, false);
    case 2: return ff_sum(a, 0, NULL, false);
    default: return ff_matmul(a, b);
    }
}

static int run_half(void *v)
{
    const half_op *h = v;
    return done(half_compute(h, h->s->a, h->s->b));
}

static int run_half_detour(void *v)
{
    const half_op *h = v;
    ff_tensor *a = ff_astype(h->s->a, FF_F32), *b = h->s->b ? ff_astype(h->s->b, FF_F32) : NULL;
    ff_tensor *r = a && (b || !h->s->b) ? half_compute(h, a, b) : NULL, *back = r ? ff_astype(r, h->t) : NULL;
    ff_tensor_release(a), ff_tensor_release(b), ff_tensor_release(r);
    return done(back);
}

static ff_tensor *uniform_as(int ndim, const int64_t *shape, ff_dtype t, uint64_t seed)
{
    ff_tensor *f = uniform(ndim, shape, -5, 5, seed), *h = f ? ff_astype(f, t) : NULL;
    ff_tensor_release(f);
    return h;
}

static void half_pair(ff_backend *be, int threads, const bench_opts *o, const char *name, ff_dtype t, int kind,
                      int ndim, const int64_t *shape, double work, const char *unit)
{
    char w[2][64];
    snprintf(w[0], sizeof w[0], "%s", name);
    snprintf(w[1], sizeof w[1], "%s_detour", name);
    if (!bench_selected(o, w[0]) && !bench_selected(o, w[1])) return;
    bench_state s = {.a = uniform_as(ndim, shape, t, 41), .b = kind == 0 || kind == 3 ? uniform_as(ndim, shape, t, 42) : NULL};
    half_op h = {&s, t, kind};
    if (s.a && (s.b || kind == 1 || kind == 2))
        for (int d = 0; d < 2; d++)
            if (bench_selected(o, w[d])) measure(o, w[d], d ? run_half_detour : run_half, &h, work, unit, be, threads);
    bench_state_free(&s);
}

static void half_rows(ff_backend *be, int threads, const bench_opts *o)
{
    int64_t n16 = o->quick ? 1 << 20 : 1 << 24, n4 = o->quick ? 1 << 18 : 1 << 22, m = o->quick ? 256 : 1024;
    int64_t mm[2] = {m, m};
    half_pair(be, threads, o, o->quick ? "add_f16_1M" : "add_f16_16M", FF_F16, 0, 1, &n16, 6.0 * (double)n16, "GB/s");
    half_pair(be, threads, o, o->quick ? "add_bf16_1M" : "add_bf16_16M", FF_BF16, 0, 1, &n16, 6.0 * (double)n16, "GB/s");
    half_pair(be, threads, o, o->quick ? "gelu_bf16_256K" : "gelu_bf16_4M", FF_BF16, 1, 1, &n4, 4.0 * (double)n4, "GB/s");
    half_pair(be, threads, o, o->quick ? "gelu_f16_256K" : "gelu_f16_4M", FF_F16, 1, 1, &n4, 4.0 * (double)n4, "GB/s");
    half_pair(be, threads, o, o->quick ? "sum_bf16_1M" : "sum_bf16_16M", FF_BF16, 2, 1, &n16, 2.0 * (double)n16, "GB/s");
    char w[64];
    /* bf16 at the sizes of issue 35, beside torch.mm on bf16 (baselines.py) and the detour,
     * i.e. our own f32 path for the same shape */
    static const int64_t bf16_sizes[3] = {512, 1024, 2048};
    for (int i = 0; i < (o->quick ? 1 : 3); i++) {
        int64_t q = o->quick ? 256 : bf16_sizes[i], qq[2] = {q, q};
        snprintf(w, sizeof w, "matmul_bf16_%lld", (long long)q);
        half_pair(be, threads, o, w, FF_BF16, 3, 2, qq, 2.0 * (double)(q * q * q), "GFLOP/s");
    }
    snprintf(w, sizeof w, "matmul_f16_%lld", (long long)m);
    half_pair(be, threads, o, w, FF_F16, 3, 2, mm, 2.0 * (double)(m * m * m), "GFLOP/s");
}

static void models(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t big[3] = {784, 256, 10}, tiny[3] = {4, 16, 1};
    bench_state s = {0};
    if (bench_selected(o, "mlp_784_256_10_fwd") && !bench_mlp_setup(&s, 3, big, 64, true, false))
        measure(o, "mlp_784_256_10_fwd", run_forward, &s, 2.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be, threads);
    bench_state_free(&s);
    if (bench_selected(o, "mlp_784_256_10_step") && !bench_mlp_setup(&s, 3, big, 64, true, false))
        measure(o, "mlp_784_256_10_step", run_step, &s, 6.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be, threads);
    bench_state_free(&s);
    if (bench_selected(o, "mlp_4_16_1_step") && !bench_mlp_setup(&s, 3, tiny, 8, false, false))
        measure(o, "mlp_4_16_1_step", run_step, &s, 0, "", be, threads);
    bench_state_free(&s);
    /* the same steps captured (after one eager step, as SGD with momentum would need)
     * and replayed */
    if (bench_selected(o, "mlp_784_256_10_step_graph") && !bench_mlp_setup(&s, 3, big, 64, true, false) &&
        !run_step(&s) && !bench_capture(&s, bench_step_loss))
        measure(o, "mlp_784_256_10_step_graph", run_replay, &s, 6.0 * 64 * (784 * 256 + 256 * 10), "GFLOP/s", be,
                threads);
    bench_state_free(&s);
    if (bench_selected(o, "mlp_4_16_1_step_graph") && !bench_mlp_setup(&s, 3, tiny, 8, false, false) &&
        !run_step(&s) && !bench_capture(&s, bench_step_loss))
        measure(o, "mlp_4_16_1_step_graph", run_replay, &s, 0, "", be, threads);
    bench_state_free(&s);
    for (int cells = 0; cells < 2; cells++) {
        const char *w = cells ? "lstm_step_cells" : "lstm_step";
        if (!bench_selected(o, w)) continue;
        bench_lstm l;
        int64_t t = o->quick ? 8 : 64;
        /* each layer: two GEMMs of [T B, 256] by [256, 1024] forward, four backward */
        if (!bench_lstm_setup(&l, t, 32, 256, 256, cells))
            measure(o, w, bench_lstm_step, &l, 2 * 6.0 * 2 * (double)(t * 32) * 256 * 1024, "GFLOP/s", be, threads);
        bench_lstm_free(&l);
    }
    /* a 3x3 convolution, padding 1: [64, 32, 28, 28] by [64, 32, 3, 3] (1.85 GFLOP forward) */
    const double conv_flop = 2.0 * 64 * 64 * 28 * 28 * 32 * 9;
    int64_t xs[4] = {64, 32, 28, 28}, ws[4] = {64, 32, 3, 3}, ys[4] = {64, 64, 28, 28};
    if (bench_selected(o, "conv2d_64x32x28x28_k3")) {
        bench_state c = {.a = uniform(4, xs, -1, 1, 31), .b = uniform(4, ws, -1, 1, 32)};
        if (c.a && c.b) measure(o, "conv2d_64x32x28x28_k3", run_conv_fwd, &c, conv_flop, "GFLOP/s", be, threads);
        bench_state_free(&c);
    }
    if (bench_selected(o, "conv2d_64x32x28x28_k3_step")) {
        bench_state c = {.a = uniform(4, xs, -1, 1, 31), .b = uniform(4, ws, -1, 1, 32),
                      .c = ff_full(4, ys, FF_F32, 1.0)};
        if (c.a && c.b && c.c && !ff_set_requires_grad(c.a, true) && !ff_set_requires_grad(c.b, true))
            measure(o, "conv2d_64x32x28x28_k3_step", run_conv_step, &c, 3 * conv_flop, "GFLOP/s", be, threads);
        bench_state_free(&c);
    }
}

/* The rest of the convolution family (issue 33), forward, beside PyTorch's
 * (baselines.py): conv1d (the 2-D entries over H = 1), conv_transpose2d (the
 * backward-input entry run forward) and a depthwise conv2d (groups = channels). */
typedef struct conv_case {
    const char *name;
    int nd;
    int64_t xs[4], ws[4];
    ff_conv_opts opts;
    bool transposed;
    double flop;
} conv_case;

static const ff_conv_opts *conv_run_opts;
static bool conv_run_transposed;

static int run_conv_ex(void *v)
{
    bench_state *s = v;
    bool prev = ff_set_grad_enabled(false);
    int rc = done(conv_run_transposed ? ff_conv_transpose(s->a, s->b, NULL, conv_run_opts)
                                      : ff_conv(s->a, s->b, NULL, conv_run_opts));
    ff_set_grad_enabled(prev);
    return rc;
}

static void conv_family(ff_backend *be, int threads, const bench_opts *o)
{
    static const conv_case cases[] = {
        {"conv1d_32x64x512_k5", 3, {32, 64, 512}, {128, 64, 5}, {{1}, {2}, {1}, {0}, 1}, false,
         2.0 * 32 * 128 * 512 * 64 * 5},
        {"conv_transpose2d_32x64x14x14_k4s2", 4, {32, 64, 14, 14}, {64, 32, 4, 4}, {{2, 2}, {1, 1}, {1, 1}, {0, 0}, 1},
         true, 2.0 * 32 * 64 * 14 * 14 * 32 * 16},
        {"conv2d_depthwise_32x64x56x56_k3", 4, {32, 64, 56, 56}, {64, 1, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, {0, 0}, 64},
         false, 2.0 * 32 * 64 * 56 * 56 * 9},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const conv_case *c = &cases[i];
        if (!bench_selected(o, c->name)) continue;
        bench_state s = {.a = uniform(c->nd, c->xs, -1, 1, 41), .b = uniform(c->nd, c->ws, -1, 1, 42)};
        conv_run_opts = &c->opts, conv_run_transposed = c->transposed;
        if (s.a && s.b) measure(o, c->name, run_conv_ex, &s, c->flop, "GFLOP/s", be, threads);
        bench_state_free(&s);
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
    mnist_train_cfg cfg = bench_mnist_cfg(cnn, graph);
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

static int adaptive_avg(const bench_state *s, int64_t out)
{
    bool prev = ff_set_grad_enabled(false);
    int rc = done(ff_adaptive_avg_pool(s->a, 2, (const int64_t[]){out, out}));
    ff_set_grad_enabled(prev);
    return rc;
}
static int run_adaptive_avg_to1(void *v) { return adaptive_avg(v, 1); }
static int run_adaptive_avg_to7(void *v) { return adaptive_avg(v, 7); }

/* adaptive_avg_pool2d: a classifier head's global pooling ([64, 512, 7, 7] to 1 x 1) and
 * unequal overlapping windows ([32, 64, 30, 30] to 7 x 7, the general path); work = the
 * bytes of x read */
static void pool_rows(ff_backend *be, int threads, const bench_opts *o)
{
    static const int64_t head[4] = {64, 512, 7, 7}, gen[4] = {32, 64, 30, 30};
    static const char *names[2] = {"adaptive_avg_pool2d_64x512x7x7_to1", "adaptive_avg_pool2d_32x64x30x30_to7"};
    for (int k = 0; k < 2; k++) {
        if (!bench_selected(o, names[k])) continue;
        const int64_t *sh = k ? gen : head;
        bench_state c = {.a = uniform(4, sh, -1, 1, 41)};
        if (c.a)
            measure(o, names[k], k ? run_adaptive_avg_to7 : run_adaptive_avg_to1, &c,
                    4.0 * (double)(sh[0] * sh[1] * sh[2] * sh[3]), "GB/s", be, threads);
        bench_state_free(&c);
    }
}

/* ---- indexing and middle-axis sums (issue 49) --------------------------------------- */
/* work = the bytes the op must read and write at least; the c_loop column of each row is
 * a memcpy of work / 2 bytes (the same traffic), so "speed vs c_loop" is the fraction of
 * copy bandwidth at that size. copy_f32_* is the machine's copy bandwidth as its own row
 * (cpu_blas: ff_copy_ between two contiguous tensors; c_loop: memcpy). */
typedef struct copy_state {
    void *d, *s;
    size_t n;
} copy_state;

static int run_memcpy(void *v)
{
    copy_state *c = v;
    memcpy(c->d, c->s, c->n);
    return 0;
}

static void memcpy_row(const bench_opts *o, const char *w, double work, ff_backend *be, int threads)
{
    if (threads != 1 || !strcmp(ff_backend_name(be), "cpu")) return; /* C loops: measured once, one thread */
    copy_state c = {.n = (size_t)(work / 2)};
    c.d = malloc(c.n), c.s = malloc(c.n);
    if (c.d && c.s) {
        memset(c.d, 1, c.n), memset(c.s, 2, c.n);
        bench_case k = {w, run_memcpy, &c, work, "GB/s"};
        bench_result r;
        if (bench_measure(&k, o, "c_loop", 1, &r) == 0) bench_emit(&r);
    }
    free(c.d), free(c.s);
}

static int run_copy(void *v) { bench_state *s = v; return ff_copy_(s->b, s->a) ? -1 : 0; }
static int run_embedding(void *v) { bench_state *s = v; return done(ff_embedding(s->a, s->b)); }
static int run_index_select1(void *v) { bench_state *s = v; return done(ff_index_select(s->a, 1, s->b)); }
static int run_scatter_add(void *v) { bench_state *s = v; return done(ff_scatter_add(s->a, 0, s->b, s->c)); }
static int run_sum1(void *v) { bench_state *s = v; return done(ff_sum(s->a, 1, (const int[]){1}, false)); }

/* n indices uniform in [0, hi), I64 */
static ff_tensor *indices(int64_t n, int64_t hi, uint64_t seed)
{
    ff_tensor *u = uniform(1, &n, 0, (double)hi, seed);
    ff_tensor *r = u ? ff_astype(u, FF_I64) : NULL;
    ff_tensor_release(u);
    return r;
}

static void index_rows(ff_backend *be, int threads, const bench_opts *o)
{
    int64_t q = o->quick ? 16 : 1;
    {   /* copy bandwidth: 64 MiB each way */
        int64_t n = (16 << 20) / q;
        char w[64];
        snprintf(w, sizeof w, "copy_f32_%lldM", (long long)(n >> 20));
        bench_state s = {.a = uniform(1, &n, -1, 1, 51), .b = ff_zeros(1, &n, FF_F32)};
        double work = 8.0 * (double)n;
        if (bench_selected(o, w) && s.a && s.b) {
            measure(o, w, run_copy, &s, work, "GB/s", be, threads);
            memcpy_row(o, w, work, be, threads);
        }
        bench_state_free(&s);
    }
    /* embedding forward (gather of rows), [V, D] table, N indices: reads and writes N D */
    static const int64_t emb[][3] = {{1000, 64, 4096}, {50000, 256, 8192}, {50000, 256, 65536}};
    for (int k = 0; k < 3; k++) {
        int64_t V = emb[k][0], D = emb[k][1], N = emb[k][2] / q, sh[2] = {V, D};
        char w[64];
        snprintf(w, sizeof w, "embedding_f32_%lldx%lld_%lld", (long long)V, (long long)D, (long long)N);
        if (!bench_selected(o, w)) continue;
        bench_state s = {.a = uniform(2, sh, -1, 1, 52), .b = indices(N, V, 53)};
        double work = 8.0 * (double)(N * D);
        if (s.a && s.b) measure(o, w, run_embedding, &s, work, "GB/s", be, threads), memcpy_row(o, w, work, be, threads);
        bench_state_free(&s);
    }
    {   /* index_select along a middle axis: [64, 4096, 64] -> [64, 2048, 64] */
        int64_t sh[3] = {64 / q, 4096, 64}, N = 2048;
        const char *w = "index_select_f32_64x4096x64_axis1_2048";
        bench_state s = {.a = uniform(3, sh, -1, 1, 54), .b = indices(N, sh[1], 55)};
        double work = 8.0 * (double)(sh[0] * N * sh[2]);
        if (bench_selected(o, w) && s.a && s.b)
            measure(o, w, run_index_select1, &s, work, "GB/s", be, threads), memcpy_row(o, w, work, be, threads);
        bench_state_free(&s);
    }
    /* scatter_add of [N, D] rows into a copy of x [V, D] (embedding's backward, the index
     * broadcast along D): reads x and src, writes the result, and reads and writes the
     * touched rows (at most N of them) */
    static const int64_t sca[][3] = {{1000, 64, 4096}, {1000, 256, 65536}, {50000, 256, 8192}};
    for (int k = 0; k < 3; k++) {
        int64_t V = sca[k][0], D = sca[k][1], N = sca[k][2] / q, sh[2] = {V, D}, gs[2] = {N, D};
        char w[64];
        snprintf(w, sizeof w, "scatter_add_f32_%lldx%lld_%lld", (long long)V, (long long)D, (long long)N);
        if (!bench_selected(o, w)) continue;
        ff_tensor *idx = indices(N, V, 56), *col = idx ? ff_reshape(idx, 2, (const int64_t[]){N, 1}) : NULL;
        bench_state s = {.a = ff_zeros(2, sh, FF_F32), .b = col ? ff_expand(col, 2, gs) : NULL, .c = uniform(2, gs, -1, 1, 57)};
        int64_t touched = N < V ? N : V;
        double work = 4.0 * (double)(2 * V * D + N * D + 2 * touched * D);
        if (s.a && s.b && s.c) measure(o, w, run_scatter_add, &s, work, "GB/s", be, threads), memcpy_row(o, w, work, be, threads);
        ff_tensor_release(idx), ff_tensor_release(col);
        bench_state_free(&s);
    }
    /* x.sum(1) of [A, R, H, W]: the middle-axis sum (reads x, writes A H W) */
    static const int64_t red[][4] = {{4, 4, 64, 64}, {4, 4, 256, 256}, {8, 32, 256, 256}};
    for (int k = 0; k < 3; k++) {
        int64_t sh[4] = {red[k][0], red[k][1], red[k][2], red[k][3] / q};
        char w[64];
        snprintf(w, sizeof w, "sum1_f32_%lldx%lldx%lldx%lld", (long long)sh[0], (long long)sh[1], (long long)sh[2],
                 (long long)sh[3]);
        if (!bench_selected(o, w)) continue;
        bench_state s = {.a = uniform(4, sh, -1, 1, 58)};
        double work = 4.0 * (double)(sh[0] * sh[2] * sh[3]) * (double)(sh[1] + 1);
        if (s.a) measure(o, w, run_sum1, &s, work, "GB/s", be, threads), memcpy_row(o, w, work, be, threads);
        bench_state_free(&s);
    }
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
    if (!reference) half_rows(be, threads, o);
    models(be, threads, o);
    if (!reference) conv_family(be, threads, o);
    pool_rows(be, threads, o);
    index_rows(be, threads, o);
    if (!reference) bench_attention_all(be, threads, o);
    if (!reference) bench_int8_all(be, threads, o);
    if (!reference) bench_complex_all(be, threads, o);
    if (o->mnist && !reference)
        for (int k = 0; k < 4; k++) {
            bool cnn = k >= 2, graph = k % 2;
            char w[64];
            snprintf(w, sizeof w, "fashion_mnist%s_epoch%s", cnn ? "_cnn" : "", graph ? "_graph" : "");
            if (bench_selected(o, w)) mnist_epoch(be, threads, cnn, graph, w);
        }
}
