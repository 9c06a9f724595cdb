/* Graphs (include/ff/graph.h): a captured region replays to the bits eager gives, on
 * new input values; training steps (SGD, Adam, AdamW) replayed match eager steps bit for
 * bit, learning-rate changes included; fusion and planning happen and change nothing;
 * random ops draw anew; misuse gives clear errors and nothing leaks; where the backend
 * records entry calls (cuda's CUDA graphs), replays go through recorded runs with the
 * same values, and FF_GRAPH_DEVICE=0 turns that off. Runs on every in-tree host backend
 * (cpu, cpu_blas), or on FF_TEST_GRAPH_BACKEND alone. */
#define _GNU_SOURCE /* setenv, mkstemp */
#include <stdlib.h>

#include "ff_impl.h" /* the checked capture ff-conformance uses */
#include "ff_test.h"

static const char *const *backends;
/* FF_TEST_GRAPH_BACKEND: one plugin instead (tests/cuda_emu: replays through CUDA-graph runs) */
static int n_backends(void) { return ff_test_backends("FF_TEST_GRAPH_BACKEND", &backends); }
static ff_status use(const char *name) { return ff_backend_set_default(ff_backend_load(name)); }

static ff_tensor *uniform(int nd, const int64_t *shape, double lo, double hi, uint64_t seed)
{
    return ff_rand_uniform(nd, shape, FF_F32, lo, hi, seed);
}

/* Bitwise equality of two f32 tensors of one shape. */
static bool same_bits(const ff_tensor *a, const ff_tensor *b)
{
    int64_t n = ff_tensor_numel(a);
    if (n != ff_tensor_numel(b)) return false;
    float *x = malloc(sizeof *x * (size_t)(n + 1)), *y = malloc(sizeof *y * (size_t)(n + 1));
    bool ok = x && y && !ff_tensor_to_host(a, x, sizeof *x * (size_t)n) && !ff_tensor_to_host(b, y, sizeof *y * (size_t)n) &&
              !memcmp(x, y, sizeof *x * (size_t)n);
    free(x);
    free(y);
    return ok;
}

/* relu(a * b + c) (c broadcast over rows) captured, then replayed on new values. */
static void test_elementwise_chain_fuses_and_replays_exactly(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        int64_t sh[2] = {300, 257}, row[1] = {257};
        ff_tensor *a = uniform(2, sh, -2, 2, 1), *b = uniform(2, sh, -2, 2, 2), *c = uniform(1, row, -1, 1, 3);
        CHECK(ff_graph_capture_begin() == FF_OK);
        CHECK(ff_graph_is_capturing());
        ff_tensor *ab = ff_mul(a, b), *abc = ff_add(ab, c), *y = ff_relu(abc);
        ff_tensor_release(ab), ff_tensor_release(abc);
        ff_graph *g = ff_graph_capture_end();
        CHECK(g != NULL);
        CHECK(!ff_graph_is_capturing());
        ff_graph_info info;
        CHECK(ff_graph_stats(g, &info) == FF_OK);
        CHECK(info.kernels_captured == 3);
        CHECK(info.fused_groups == 1 && info.fused_kernels == 3 && info.launches == 1);
        CHECK(info.intermediates == 0 && info.outputs == 1 && info.inputs == 3);
        /* new values in the inputs: the replay must match eager on them */
        ff_tensor *a2 = uniform(2, sh, -3, 3, 11), *c2 = uniform(1, row, -1, 1, 13);
        CHECK(ff_copy_(a, a2) == FF_OK && ff_copy_(c, c2) == FF_OK);
        CHECK(ff_graph_replay(g) == FF_OK);
        ff_tensor *e1 = ff_mul(a, b), *e2 = ff_add(e1, c), *want = ff_relu(e2);
        CHECK(same_bits(y, want));
        CHECK(ff_graph_stats(g, &info) == FF_OK && info.replays == 1);
        ff_graph_release(g);
        RELEASE(a, b, c, y, a2, c2, e1, e2, want);
    }
}

/* Comparisons and casts fuse too (the core's tiles: the ABI's programs are one dtype). */
static void test_casts_and_comparisons_fuse(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        int64_t sh[2] = {70, 1001};
        ff_tensor *x = uniform(2, sh, -1, 1, 8), *y = uniform(2, sh, -1, 1, 9);
        CHECK(ff_graph_capture_begin() == FF_OK);
        ff_tensor *pos = ff_gt(x, y), *pf = ff_astype(pos, FF_F64), *xd = ff_astype(x, FF_F64), *z = ff_mul(pf, xd);
        RELEASE(pos, pf, xd);
        ff_graph *g = ff_graph_capture_end();
        CHECK(g != NULL);
        ff_graph_info info;
        CHECK(ff_graph_stats(g, &info) == FF_OK && info.fused_groups == 1 && info.fused_kernels == 4 && info.launches == 1);
        CHECK(info.fused_by_backend == 0);
        ff_tensor *x2 = uniform(2, sh, -1, 1, 18);
        CHECK(ff_copy_(x, x2) == FF_OK && ff_graph_replay(g) == FF_OK);
        ff_tensor *e1 = ff_gt(x, y), *e2 = ff_astype(e1, FF_F64), *e3 = ff_astype(x, FF_F64), *want = ff_mul(e2, e3);
        ff_tensor *diff = ff_sub(z, want), *ad = ff_abs(diff), *mx = ff_amax(ad, 0, NULL, false);
        double d = 1;
        CHECK(ff_tensor_item(mx, &d) == FF_OK && d == 0.0);
        ff_graph_release(g);
        RELEASE(x, y, z, x2, e1, e2, e3, want, diff, ad, mx);
    }
}

/* A chain with intermediates used twice and a reduction: fusion, constants, the arena. */
static void test_planning_reuses_memory(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        int64_t sh[1] = {100000};
        ff_tensor *x = uniform(1, sh, -1, 1, 5);
        ff_tensor *out = NULL;
        CHECK(ff_graph_capture_begin() == FF_OK);
        ff_tensor *cur = ff_tensor_retain(x);
        for (int i = 0; i < 8; i++) { /* each step: t = tanh(cur) * 0.5 + cur; sum kept alive separately */
            ff_tensor *t = ff_tanh(cur), *h = ff_mul_scalar(t, 0.5), *s = ff_add(h, cur);
            ff_tensor *m = ff_sum(s, 0, NULL, false), *n = ff_div(s, m); /* a reduction breaks the chain */
            RELEASE(t, h, s, m, cur);
            cur = n;
        }
        out = cur;
        ff_graph *g = ff_graph_capture_end();
        CHECK(g != NULL);
        ff_graph_info info;
        CHECK(ff_graph_stats(g, &info) == FF_OK);
        CHECK(info.constants_hoisted == 8);               /* the 0.5 fills */
        CHECK(info.fused_groups >= 8);
        CHECK(info.intermediates > 0);
        CHECK(info.arena_bytes < info.intermediate_bytes); /* slots are reused */
        CHECK(info.planned_peak_bytes <= info.eager_peak_bytes);
        if (info.planned_peak_bytes > info.eager_peak_bytes)
            fprintf(stderr, "planned %zu arena %zu eager %zu inter %zu\n", info.planned_peak_bytes, info.arena_bytes,
                    info.eager_peak_bytes, info.intermediate_bytes);
        ff_tensor *x2 = uniform(1, sh, -1, 1, 6);
        CHECK(ff_copy_(x, x2) == FF_OK);
        CHECK(ff_graph_replay(g) == FF_OK);
        ff_tensor *e = ff_tensor_retain(x);
        for (int i = 0; i < 8; i++) {
            ff_tensor *t = ff_tanh(e), *h = ff_mul_scalar(t, 0.5), *s = ff_add(h, e);
            ff_tensor *m = ff_sum(s, 0, NULL, false), *n = ff_div(s, m);
            RELEASE(t, h, s, m, e);
            e = n;
        }
        CHECK(same_bits(out, e));
        char path[] = "/tmp/ff_test_graph_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        CHECK(ff_graph_dump(g, path) == FF_OK);
        FILE *f = fopen(path, "r");
        char buf[4096] = {0};
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        CHECK(got > 0 && strstr(buf, "digraph") && strstr(buf, "cluster_") && strstr(buf, "arena @"));
        if (f) fclose(f);
        remove(path);
        CHECK_ERROR(ff_graph_dump(g, "/nonexistent-dir/x.dot") != FF_OK, FF_ERR_IO, "/nonexistent-dir/x.dot");
        ff_graph_release(g);
        RELEASE(x, x2, out, e);
    }
}

/* ---- training steps ------------------------------------------------------------------ */

typedef struct net {
    ff_module *m;
    ff_optimizer *opt;
    ff_tensor *ps[8];
    int np;
} net;

static net make_net(int kind, int seed)
{
    net n = {0};
    n.m = ff_sequential_take(3, (ff_module *[]){ff_linear(6, 16, true, (uint64_t)seed), ff_relu_module(),
                                               ff_linear(16, 3, true, (uint64_t)seed + 1)});
    n.np = ff_module_parameters(n.m, n.ps, 8);
    if (kind == 0) {
        ff_sgd_opts o = ff_sgd_defaults(0.05);
        o.momentum = 0.9;
        o.weight_decay = 1e-3;
        n.opt = ff_sgd(n.ps, n.np, &o);
    } else {
        ff_adam_opts o = ff_adam_defaults(1e-2);
        o.weight_decay = 1e-2;
        n.opt = kind == 1 ? ff_adam(n.ps, n.np, &o) : ff_adamw(n.ps, n.np, &o);
    }
    return n;
}

static ff_tensor *train_step(net *n, const ff_tensor *x, const ff_tensor *y)
{
    ff_optimizer_zero_grad(n->opt);
    ff_tensor *logits = ff_module_forward(n->m, x), *loss = logits ? ff_cross_entropy(logits, y) : NULL;
    if (!loss || ff_backward(loss, NULL, NULL) || ff_optimizer_step(n->opt)) {
        RELEASE(logits, loss);
        return NULL;
    }
    ff_tensor_release(logits);
    return loss;
}

/* Two nets made alike, one eager step each (SGD's momentum buffers), then b's next step
 * captured (its loss *loss_b, written by every replay) while a takes the same step
 * eagerly: the twins stay in step, and their losses agree bit for bit. */
static ff_graph *capture_twin(int kind, int seed, const ff_tensor *x, const ff_tensor *y, net *a, net *b,
                              ff_tensor **loss_b)
{
    *a = make_net(kind, seed), *b = make_net(kind, seed);
    CHECK(a->opt && b->opt && a->np == 4);
    ff_tensor *la = train_step(a, x, y), *lb = train_step(b, x, y);
    CHECK(la && lb);
    RELEASE(la, lb);
    CHECK(ff_graph_capture_begin() == FF_OK);
    *loss_b = train_step(b, x, y);
    ff_graph *g = ff_graph_capture_end();
    CHECK(g && *loss_b);
    la = train_step(a, x, y);
    CHECK(same_bits(la, *loss_b));
    ff_tensor_release(la);
    return g;
}

/* `steps` new batches (seeds from seed): a steps eagerly, b's graph replays, their losses
 * and, at the end, their parameters equal bit for bit; both learning rates halve before
 * step halve_at (-1: never). */
static void step_alongside(net *a, net *b, ff_graph *g, ff_tensor *x, const ff_tensor *y, const ff_tensor *loss_b,
                           int steps, uint64_t seed, int halve_at)
{
    const int64_t *xs = ff_tensor_shape(x);
    for (int s = 0; s < steps; s++) {
        ff_tensor *xn = uniform(2, xs, -1, 1, seed + (uint64_t)s);
        if (s == halve_at) {
            CHECK(ff_optimizer_set_lr(a->opt, 0.5 * ff_optimizer_get_lr(a->opt)) == FF_OK);
            CHECK(ff_optimizer_set_lr(b->opt, 0.5 * ff_optimizer_get_lr(b->opt)) == FF_OK);
        }
        CHECK(ff_copy_(x, xn) == FF_OK);
        ff_tensor *la = train_step(a, x, y);
        CHECK(ff_graph_replay(g) == FF_OK);
        CHECK(la && same_bits(la, loss_b));
        RELEASE(la, xn);
    }
    for (int i = 0; i < a->np; i++) CHECK(same_bits(a->ps[i], b->ps[i]));
}

static void release_twins(net *a, net *b)
{
    ff_optimizer_release(a->opt), ff_optimizer_release(b->opt);
    ff_module_release(a->m), ff_module_release(b->m);
}

static void test_training_steps_replay_bit_for_bit(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        for (int kind = 0; kind < 3; kind++) {
            net a, b;
            int64_t xs[2] = {10, 6}, ys[1] = {10};
            ff_tensor *x = uniform(2, xs, -1, 1, 40);
            int64_t lab[10] = {0, 1, 2, 0, 1, 2, 2, 1, 0, 0};
            ff_tensor *y = ff_from_data(lab, 1, ys, FF_I64);
            ff_tensor *loss_b;
            ff_graph *g = capture_twin(kind, 7, x, y, &a, &b, &loss_b);
            step_alongside(&a, &b, g, x, y, loss_b, 5, 100, 3); /* a schedule's change must reach the replay */
            CHECK(ff_optimizer_step_count(a.opt) == ff_optimizer_step_count(b.opt));
            ff_graph_info info;
            CHECK(ff_graph_stats(g, &info) == FF_OK);
            CHECK(info.host_calls == 4 + 1); /* one per parameter, one step count */
            CHECK(info.launches < info.kernels_captured);
            ff_graph_release(g);
            RELEASE(loss_b, x, y);
            release_twins(&a, &b);
        }
    }
}

/* Turning fusion and planning off changes launches and memory, not values. */
static void test_fusion_and_planning_switches_give_same_values(void)
{
    CHECK(use("cpu") == FF_OK);
    ff_tensor *out[3] = {0};
    const char *fuse[3] = {"1", "0", "1"}, *plan[3] = {"1", "1", "0"};
    int64_t launches[3] = {0};
    for (int m = 0; m < 3; m++) {
        setenv("FF_GRAPH_FUSE", fuse[m], 1);
        setenv("FF_GRAPH_PLAN", plan[m], 1);
        net n = make_net(1, 3);
        int64_t xs[2] = {10, 6}, ys[1] = {10}, lab[10] = {0};
        ff_tensor *x = uniform(2, xs, -1, 1, 41), *y = ff_from_data(lab, 1, ys, FF_I64);
        ff_tensor *l0 = train_step(&n, x, y);
        CHECK(ff_graph_capture_begin() == FF_OK);
        ff_tensor *l = train_step(&n, x, y);
        ff_graph *g = ff_graph_capture_end();
        CHECK(g && l);
        for (int s = 0; s < 3; s++) CHECK(ff_graph_replay(g) == FF_OK);
        ff_graph_info info;
        ff_graph_stats(g, &info);
        launches[m] = info.launches;
        out[m] = ff_clone(n.ps[0]);
        ff_graph_release(g);
        RELEASE(l0, l, x, y);
        ff_optimizer_release(n.opt);
        ff_module_release(n.m);
    }
    unsetenv("FF_GRAPH_FUSE");
    unsetenv("FF_GRAPH_PLAN");
    CHECK(launches[1] > launches[0]);
    CHECK(same_bits(out[0], out[1]) && same_bits(out[0], out[2]));
    RELEASE(out[0], out[1], out[2]);
}

/* Random ops draw new numbers on every replay: the global generator's next ones, as
 * eager would, and explicit seeds moved on. */
static void test_random_draws_anew(void)
{
    CHECK(use("cpu") == FF_OK);
    int64_t sh[1] = {64};
    ff_manual_seed(9);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *r = ff_rand(1, sh, FF_F32);
    ff_tensor *ones = ff_ones(1, sh, FF_F32), *d = ff_dropout(ones, 0.5, true, 1234);
    ff_graph *g = ff_graph_capture_end();
    CHECK(g && r && d);
    ff_tensor *r0 = ff_clone(r), *d0 = ff_clone(d);
    CHECK(ff_graph_replay(g) == FF_OK);
    /* eager: the same seed gives first r0, then what the replay drew */
    ff_manual_seed(9);
    ff_tensor *e0 = ff_rand(1, sh, FF_F32), *e1 = ff_rand(1, sh, FF_F32);
    CHECK(same_bits(e0, r0));
    CHECK(same_bits(e1, r));
    CHECK(!same_bits(d, d0)); /* a new mask */
    double s = 0;
    ff_tensor *sum = ff_sum(d, 0, NULL, false);
    CHECK(ff_tensor_item(sum, &s) == FF_OK && s > 20 && s < 108); /* still a p = 0.5 mask, scaled by 2 */
    ff_graph_release(g);
    RELEASE(r, ones, d, r0, d0, e0, e1, sum);
}

static void test_errors(void)
{
    CHECK(use("cpu") == FF_OK);
    CHECK_ERROR(ff_graph_capture_end() == NULL, FF_ERR_INVALID, "not capturing");
    CHECK(ff_graph_capture_begin() == FF_OK);
    CHECK_ERROR(ff_graph_capture_begin() != FF_OK, FF_ERR_INVALID, "already capturing");
    ff_graph_capture_abort();
    CHECK(!ff_graph_is_capturing());
    /* a failing kernel inside the region: capture_end names it */
    int64_t sh[2] = {2, 3}, ish[2] = {2, 1};
    ff_tensor *x = ff_ones(2, sh, FF_F32);
    int64_t bad[2] = {0, 7};
    ff_tensor *idx = ff_from_data(bad, 2, ish, FF_I64);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *gx = ff_gather(x, 1, idx);
    CHECK(gx == NULL);
    CHECK_ERROR(ff_graph_capture_end() == NULL, FF_ERR_INVALID, "a kernel failed while capturing");
    /* SGD momentum without a warm-up step */
    net n = make_net(0, 1);
    int64_t xs[2] = {4, 6}, ys[1] = {4}, lab[4] = {0, 1, 2, 0};
    ff_tensor *in = ff_ones(2, xs, FF_F32), *y = ff_from_data(lab, 1, ys, FF_I64);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *l = train_step(&n, in, y);
    CHECK(l == NULL && strstr(ff_last_error(), "run one step before capturing"));
    ff_graph_capture_abort();
    /* replay_with checks shapes before writing anything */
    ff_tensor *l1 = train_step(&n, in, y);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *l2 = train_step(&n, in, y);
    ff_graph *g = ff_graph_capture_end();
    CHECK(g && l1 && l2);
    int64_t xs2[2] = {5, 6};
    ff_tensor *wrong = ff_zeros(2, xs2, FF_F32), *right = ff_zeros(2, xs, FF_F32);
    ff_tensor *before = ff_clone(in);
    CHECK_ERROR(ff_graph_replay_with(g, 1, &in, (const ff_tensor *const *)&wrong) != FF_OK, FF_ERR_INVALID, "[5, 6]");
    CHECK(same_bits(before, in));
    CHECK(ff_graph_replay_with(g, 1, &in, (const ff_tensor *const *)&right) == FF_OK);
    double lv = -1;
    CHECK(ff_tensor_item(l2, &lv) == FF_OK && lv > 0); /* cross entropy of the zero batch */
    CHECK(ff_graph_capture_begin() == FF_OK);
    CHECK_ERROR(ff_graph_replay(g) != FF_OK, FF_ERR_INVALID, "capturing");
    ff_graph_capture_abort();
    CHECK_ERROR(ff_graph_replay(NULL) != FF_OK, FF_ERR_INVALID, "NULL");
    ff_graph_release(g);
    RELEASE(x, idx, in, y, l1, l2, wrong, right, before);
    ff_optimizer_release(n.opt);
    ff_module_release(n.m);
}

/* Outputs stay valid after the caller lets go of its handles; nothing leaks. */
static void test_graph_owns_what_it_needs(void)
{
    CHECK(use("cpu") == FF_OK);
    long live0 = ff_debug_live_tensors();
    int64_t sh[1] = {1000};
    ff_tensor *a = ff_ones(1, sh, FF_F32);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *b = ff_exp(a), *c = ff_add_scalar(b, 1.0);
    CHECK(ff_add_(a, c) == FF_OK); /* in place on an input: replays keep growing a */
    ff_graph *g = ff_graph_capture_end();
    CHECK(g != NULL);
    RELEASE(b, c);
    CHECK(ff_graph_replay(g) == FF_OK);
    double v = 0;
    CHECK(ff_tensor_get(a, (int64_t[]){0}, &v) == FF_OK);
    double want = 1.0;
    for (int i = 0; i < 2; i++) want = want + (double)(float)((float)exp((float)want) + 1.0f);
    CHECK_NEAR(v, want, 1e-3 * want);
    ff_tensor_release(a);
    CHECK(ff_graph_replay(g) == FF_OK); /* a's storage is the graph's now too */
    ff_graph_release(g);
    CHECK(ff_debug_live_tensors() == live0);
}

/* The checked capture behind ff-conformance --graph: reads are replayed and compared;
 * other backends' kernels run unrecorded. */
static void test_checked_capture_compares_reads(void)
{
    CHECK(use("cpu") == FF_OK);
    ff_backend *other = ff_backend_load(FF_TEST_HAVE_CPU_BLAS ? "cpu_blas" : "cpu");
    int64_t sh[1] = {50};
    ff_tensor *a = uniform(1, sh, -1, 1, 3);
    CHECK(ff_graph_capture_begin_checked(ff_backend_load("cpu")) == FF_OK);
    ff_tensor *b = ff_exp(a), *s = ff_sum(b, 0, NULL, false), *o = ff_to(b, other), *so = ff_sum(o, 0, NULL, false);
    double v = 0, w = 0;
    CHECK(ff_tensor_item(s, &v) == FF_OK && ff_tensor_item(so, &w) == FF_OK);
    CHECK_NEAR(v, w, 1e-4);
    RELEASE(b, s, o, so);
    ff_graph *g = ff_graph_capture_end();
    CHECK(g != NULL);
    char msg[300] = "";
    CHECK(ff_graph_check_replay(g, msg, sizeof msg) == 0);
    CHECK(ff_fill_(a, 0.25) == FF_OK); /* now the replay reads something else */
    CHECK(ff_graph_check_replay(g, msg, sizeof msg) > 0 && strstr(msg, "differs from eager"));
    ff_graph_release(g);
    ff_tensor_release(a);
}

/* A checked read matches NaN with any NaN: a GPU's float and double units return
 * different NaN bits (the cuda backend's plain f32 kernels and its fused kernel did, on an
 * H100), and NaN's sign and payload are not values. A number still has to match bit for bit. */
static void test_checked_replay_matches_nan_with_nan(void)
{
    CHECK(use("cpu") == FF_OK);
    uint32_t bits[4] = {0x7fc00001u, 0x3f800000u, 0xffc00000u, 0x80000000u}; /* NaN, 1, -NaN, -0 */
    int64_t sh[1] = {4};
    ff_tensor *a = ff_from_data(bits, 1, sh, FF_F32);
    CHECK(ff_graph_capture_begin_checked(ff_backend_load("cpu")) == FF_OK);
    ff_tensor *b = ff_mul_scalar(a, 2.0);
    uint32_t out[4];
    CHECK(ff_tensor_to_host(b, out, sizeof out) == FF_OK);
    ff_tensor_release(b);
    ff_graph *g = ff_graph_capture_end();
    CHECK(g != NULL);
    char msg[300] = "";
    CHECK(ff_graph_check_replay(g, msg, sizeof msg) == 0);
    uint32_t other_nans[4] = {0xffc12345u, 0x3f800000u, 0x7fc00000u, 0x80000000u};
    CHECK(ff_copy_from_host_(a, other_nans, sizeof other_nans) == FF_OK);
    CHECK(ff_graph_check_replay(g, msg, sizeof msg) == 0); /* only NaN bits changed */
    uint32_t plus_zero[4] = {0x7fc00001u, 0x3f800000u, 0xffc00000u, 0x00000000u};
    CHECK(ff_copy_from_host_(a, plus_zero, sizeof plus_zero) == FF_OK);
    CHECK(ff_graph_check_replay(g, msg, sizeof msg) > 0 && strstr(msg, "at byte 15")); /* -0 became +0 */
    ff_graph_release(g);
    ff_tensor_release(a);
}

/* A training step's replays through the backend's recorded runs (where it has
 * graph_record: the launches between host calls, minus any it could not record) equal an
 * eager twin's steps bit for bit; FF_GRAPH_DEVICE=0 keeps every launch host-driven. */
static void test_device_runs(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        bool records = FF_VT_OPT(ff_backend_default(), graph_record) != NULL;
        for (int device = 1; device >= 0; device--) {
            if (!device) CHECK(setenv("FF_GRAPH_DEVICE", "0", 1) == 0);
            net a, b;
            int64_t xs[2] = {10, 6}, ys[1] = {10};
            ff_tensor *x = uniform(2, xs, -1, 1, 60);
            int64_t lab[10] = {2, 1, 0, 0, 1, 2, 2, 1, 0, 1};
            ff_tensor *y = ff_from_data(lab, 1, ys, FF_I64);
            ff_tensor *loss_b;
            ff_graph *g = capture_twin(0, 5, x, y, &a, &b, &loss_b);
            step_alongside(&a, &b, g, x, y, loss_b, 4, 200, -1);
            ff_graph_info info;
            CHECK(ff_graph_stats(g, &info) == FF_OK);
            CHECK(info.device_launches + info.host_launches == info.launches);
            if (records && device) {
                CHECK(info.device_runs >= 1 && info.device_launches >= 2 * info.device_runs);
                CHECK(info.host_launches >= info.host_calls); /* the optimizer's host calls stay on the host */
            } else {
                CHECK(info.device_runs == 0 && info.device_launches == 0);
            }
            ff_graph_release(g);
            RELEASE(loss_b, x, y);
            release_twins(&a, &b);
            unsetenv("FF_GRAPH_DEVICE");
        }
    }
}

FF_TEST_MAIN("graph", TEST(test_device_runs), TEST(test_checked_capture_compares_reads), TEST(test_checked_replay_matches_nan_with_nan), TEST(test_casts_and_comparisons_fuse), TEST(test_elementwise_chain_fuses_and_replays_exactly), TEST(test_planning_reuses_memory),
             TEST(test_training_steps_replay_bit_for_bit), TEST(test_fusion_and_planning_switches_give_same_values),
             TEST(test_random_draws_anew), TEST(test_errors), TEST(test_graph_owns_what_it_needs))
