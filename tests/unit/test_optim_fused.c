/* The optimizers' fused step (nn/optim_fused.c, core/kernel_fused.c): Adam, AdamW and
 * SGD run fused give p and their state (m, v; the momentum buffer) bit for bit as the
 * composition does (weight decay on and off, momentum, dampening, Nesterov, a changing lr,
 * a transposed gradient, a 0-d parameter, f32 and f64, on cpu and cpu_blas), and the
 * fused path is counted, so none of this passes without it running.
 * A capture still sees (and replays) the composition; unsafe aliasing falls back; the
 * in-place write is visible to autograd; the wrapper refuses malformed programs. */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"
#include "../../nn/nn_impl.h" /* the optimizer's state tensors m and v */

/* FF_TEST_OPTIM_BACKEND names one other backend to run on instead (ctest runs opencl so) */
static const char *const *backends;
static int n_backends(void) { return ff_test_backends("FF_TEST_OPTIM_BACKEND", &backends); }
static ff_status use(const char *name) { return ff_backend_set_default(ff_backend_load(name)); }

/* Bitwise equality of two tensors of one dtype and shape (any layout). */
static bool same_bits(const ff_tensor *a, const ff_tensor *b)
{
    if (!a || !b || ff_tensor_dtype(a) != ff_tensor_dtype(b) || ff_tensor_numel(a) != ff_tensor_numel(b)) return false;
    size_t n = (size_t)ff_tensor_numel(a) * ff_dtype_size(ff_tensor_dtype(a));
    char *x = malloc(n + 1), *y = malloc(n + 1);
    bool ok = x && y && !ff_tensor_to_host(a, x, n) && !ff_tensor_to_host(b, y, n) && !memcmp(x, y, n);
    free(x);
    free(y);
    return ok;
}

#define NP 3 /* parameters: [37, 29] with a transposed gradient, 0-d, [70000] (cpu_blas splits it) */

typedef struct run {
    ff_tensor *p[NP], *m[NP], *v[NP];
} run;

static void run_release(run *r)
{
    for (int i = 0; i < NP; i++) RELEASE(r->p[i], r->m[i], r->v[i]);
}

/* Gradient k of parameter i at step s: the same values in every run. */
static ff_tensor *grad_for(int i, int s, ff_dtype dt)
{
    uint64_t seed = 1000u + 10u * (uint64_t)s + (uint64_t)i;
    if (i == 0) { /* a transposed (strided) view */
        ff_tensor *g = ff_rand_uniform(2, SHAPE(29, 37), dt, -1, 1, seed), *t = ff_transpose(g, 0, 1);
        ff_tensor_release(g);
        return t;
    }
    return i == 1 ? ff_rand_uniform(0, NULL, dt, -1, 1, seed) : ff_rand_uniform(1, SHAPE(70000), dt, -1, 1, seed);
}

/* An optimizer over ps: family 0, variant 0 Adam, 1 Adam + weight decay, 2 AdamW, 3 AdamW
 * without decay; family 1 SGD, variant 0 plain, 1 weight decay, 2 momentum + dampening +
 * decay, 3 Nesterov + decay. */
static ff_optimizer *make_opt(int family, int variant, ff_tensor *const *ps)
{
    if (family == 0) {
        ff_adam_opts o = ff_adam_defaults(1e-2);
        o.weight_decay = variant == 1 || variant == 2 ? 0.05 : 0.0;
        return variant < 2 ? ff_adam(ps, NP, &o) : ff_adamw(ps, NP, &o);
    }
    ff_sgd_opts o = ff_sgd_defaults(0.1);
    o.weight_decay = variant > 0 ? 0.01 : 0.0;
    o.momentum = variant > 1 ? 0.9 : 0.0;
    o.dampening = variant == 2 ? 0.25 : 0.0; /* 1 - dampening != momentum */
    o.nesterov = variant == 3;
    return ff_sgd(ps, NP, &o);
}

/* Four steps, the lr halved before the third; returns clones of p and the state. */
static run run_opt(int family, int variant, ff_dtype dt, bool fused, int64_t *fused_steps)
{
    run r;
    memset(&r, 0, sizeof r);
    ff_tensor *ps[NP] = {ff_rand_uniform(2, SHAPE(37, 29), dt, -1, 1, 1), ff_rand_uniform(0, NULL, dt, -1, 1, 2),
                         ff_rand_uniform(1, SHAPE(70000), dt, -1, 1, 3)};
    for (int i = 0; i < NP; i++) CHECK(ps[i] && ff_set_requires_grad(ps[i], true) == FF_OK);
    ff_optimizer *opt = make_opt(family, variant, ps);
    CHECK(opt != NULL);
    ff_optim_fused_allow(fused);
    int64_t before = ff_optim_fused_count();
    for (int s = 0; s < 4 && opt; s++) {
        if (s == 2) CHECK(ff_optimizer_set_lr(opt, 0.5 * ff_optimizer_get_lr(opt)) == FF_OK);
        for (int i = 0; i < NP; i++) {
            ff_tensor *g = grad_for(i, s, dt);
            CHECK(ff_set_grad(ps[i], g) == FF_OK);
            ff_tensor_release(g);
        }
        CHECK(ff_optimizer_step(opt) == FF_OK);
    }
    *fused_steps = ff_optim_fused_count() - before;
    ff_optim_fused_allow(true);
    for (int i = 0; i < NP && opt; i++) {
        r.p[i] = ff_clone(ps[i]);
        if (opt->state[0][i]) r.m[i] = ff_clone(opt->state[0][i]);
        if (opt->state[1][i]) r.v[i] = ff_clone(opt->state[1][i]);
    }
    ff_optimizer_release(opt);
    for (int i = 0; i < NP; i++) ff_tensor_release(ps[i]);
    return r;
}

/* Both NULL (no such state), or the same bits. */
static bool same_state(const ff_tensor *a, const ff_tensor *b) { return (!a && !b) || same_bits(a, b); }

static void test_fused_matches_composition_bit_for_bit(void)
{
    const ff_dtype dts[2] = {FF_F32, FF_F64};
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        for (int d = 0; d < 2; d++)
            for (int family = 0; family < 2; family++)
                for (int variant = 0; variant < 4; variant++) {
                    int64_t nf = -1, nc = -1;
                    run f = run_opt(family, variant, dts[d], true, &nf), c = run_opt(family, variant, dts[d], false, &nc);
                    /* every parameter's every step took the program; SGD's first with momentum
                     * creates the buffer, composed */
                    CHECK(nf == (family == 1 && variant > 1 ? 3 : 4) * NP);
                    CHECK(nc == 0);
                    bool want_m = family == 0 || variant > 1, want_v = family == 0; /* SGD: buf with momentum */
                    CHECK((f.m[0] != NULL) == want_m && (f.v[0] != NULL) == want_v);
                    for (int i = 0; i < NP; i++) {
                        bool ok = same_bits(f.p[i], c.p[i]) && same_state(f.m[i], c.m[i]) && same_state(f.v[i], c.v[i]);
                        if (!ok)
                            fprintf(stderr, "  %s %s %s variant %d parameter %d: fused differs from composed\n",
                                    backends[k], ff_dtype_name(dts[d]), family ? "SGD" : "Adam", variant, i);
                        CHECK(ok);
                    }
                    /* the parameters moved (a step that did nothing would also compare equal) */
                    ff_tensor *p0 = ff_rand_uniform(1, SHAPE(70000), dts[d], -1, 1, 3);
                    CHECK(ff_test_max_diff(p0, f.p[2]) > 1e-3);
                    ff_tensor_release(p0);
                    run_release(&f);
                    run_release(&c);
                }
    }
}

/* A two-layer net: eager fused steps on a, a captured step replayed on b. */
typedef struct net {
    ff_module *m;
    ff_optimizer *opt;
    ff_tensor *ps[4];
} net;

static net make_net(bool decoupled)
{
    net n = {0};
    n.m = ff_sequential_take(3, (ff_module *[]){ff_linear(6, 16, true, 5), ff_relu_module(), ff_linear(16, 3, true, 6)});
    CHECK(ff_module_parameters(n.m, n.ps, 4) == 4);
    ff_adam_opts o = ff_adam_defaults(1e-2);
    o.weight_decay = 1e-2;
    n.opt = decoupled ? ff_adamw(n.ps, 4, &o) : ff_adam(n.ps, 4, &o);
    return n;
}

static ff_status train_step(net *n, const ff_tensor *x, const ff_tensor *y)
{
    ff_optimizer_zero_grad(n->opt);
    ff_tensor *logits = ff_module_forward(n->m, x), *loss = logits ? ff_cross_entropy(logits, y) : NULL;
    ff_status st = !loss ? ff_last_status() : ff_backward(loss, NULL, NULL);
    if (!st) st = ff_optimizer_step(n->opt);
    RELEASE(logits, loss);
    return st;
}

static void test_capture_records_the_composition_and_replays_it(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        for (int decoupled = 0; decoupled < 2; decoupled++) {
            net a = make_net(decoupled), b = make_net(decoupled);
            ff_tensor *x = ff_rand_uniform(2, SHAPE(10, 6), FF_F32, -1, 1, 40);
            ff_tensor *y = ff_from_data((int64_t[]){0, 1, 2, 0, 1, 2, 2, 1, 0, 0}, 1, SHAPE(10), FF_I64);
            int64_t c0 = ff_optim_fused_count();
            CHECK(train_step(&a, x, y) == FF_OK && train_step(&b, x, y) == FF_OK);
            CHECK(ff_optim_fused_count() - c0 == 8);
            c0 = ff_optim_fused_count();
            CHECK(ff_graph_capture_begin() == FF_OK);
            CHECK(train_step(&b, x, y) == FF_OK);
            ff_graph *g = ff_graph_capture_end();
            CHECK(g != NULL);
            CHECK(ff_optim_fused_count() == c0); /* the capture saw the plain ops */
            ff_graph_info info;
            CHECK(g && ff_graph_stats(g, &info) == FF_OK && info.fused_groups > 0);
            CHECK(train_step(&a, x, y) == FF_OK);
            for (int s = 0; s < 3; s++) {
                CHECK(train_step(&a, x, y) == FF_OK);
                CHECK(g && ff_graph_replay(g) == FF_OK);
            }
            CHECK(ff_optim_fused_count() - c0 == 16);
            for (int i = 0; i < 4; i++) {
                CHECK(same_bits(a.ps[i], b.ps[i]));
                CHECK(same_bits(a.opt->state[0][i], b.opt->state[0][i]));
                CHECK(same_bits(a.opt->state[1][i], b.opt->state[1][i]));
            }
            ff_graph_release(g);
            RELEASE(x, y);
            ff_optimizer_release(a.opt), ff_optimizer_release(b.opt);
            ff_module_release(a.m), ff_module_release(b.m);
        }
    }
}

/* A gradient that is the parameter itself: AdamW's decay writes p before the
 * composition reads g, which one element-wise pass would read unwritten. It must compose. */
static void test_gradient_aliasing_the_parameter_composes(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        ff_tensor *out[2] = {0};
        int64_t taken[2] = {0};
        for (int fused = 0; fused < 2; fused++) {
            ff_tensor *p = ff_rand_uniform(1, SHAPE(300), FF_F32, -1, 1, 9);
            CHECK(ff_set_requires_grad(p, true) == FF_OK);
            ff_adam_opts o = ff_adam_defaults(0.1);
            o.weight_decay = 0.5;
            ff_optimizer *opt = ff_adamw(&p, 1, &o);
            ff_optim_fused_allow(fused);
            int64_t c0 = ff_optim_fused_count();
            for (int s = 0; s < 3; s++) {
                CHECK(ff_set_grad(p, p) == FF_OK);
                CHECK(ff_optimizer_step(opt) == FF_OK);
            }
            taken[fused] = ff_optim_fused_count() - c0;
            ff_optim_fused_allow(true);
            out[fused] = ff_clone(p);
            CHECK(ff_set_grad(p, NULL) == FF_OK); /* p.grad = p is a cycle */
            ff_optimizer_release(opt);
            ff_tensor_release(p);
        }
        CHECK(taken[0] == 0 && taken[1] == 0);
        CHECK(same_bits(out[0], out[1]));
        RELEASE(out[0], out[1]);
    }
}

/* The fused write bumps p's version: a value saved for backward is known stale. */
static void test_fused_step_is_seen_by_autograd(void)
{
    n_backends();
    CHECK(use(backends[0]) == FF_OK);
    ff_tensor *p = ff_rand_uniform(1, SHAPE(8), FF_F32, -1, 1, 4);
    CHECK(ff_set_requires_grad(p, true) == FF_OK);
    ff_adam_opts o = ff_adam_defaults(0.1);
    ff_optimizer *opt = ff_adam(&p, 1, &o);
    ff_tensor *sq = ff_mul(p, p), *l = ff_sum(sq, 0, NULL, false); /* saves p */
    ff_tensor *g = ff_ones_like(p);
    CHECK(ff_set_grad(p, g) == FF_OK);
    int64_t c0 = ff_optim_fused_count();
    CHECK(ff_optimizer_step(opt) == FF_OK);
    CHECK(ff_optim_fused_count() == c0 + 1);
    CHECK_ERROR(ff_backward(l, NULL, NULL) != FF_OK, FF_ERR_AUTOGRAD, "");
    ff_optimizer_release(opt);
    RELEASE(sq, l, g, p);
}

/* An empty parameter steps (fused, if the backend takes it) without error. */
static void test_empty_parameter_steps(void)
{
    for (int k = 0; k < n_backends(); k++) {
        CHECK(use(backends[k]) == FF_OK);
        ff_tensor *p = ff_zeros(2, SHAPE(0, 3), FF_F32), *g = ff_zeros(2, SHAPE(0, 3), FF_F32);
        CHECK(ff_set_requires_grad(p, true) == FF_OK && ff_set_grad(p, g) == FF_OK);
        ff_adam_opts o = ff_adam_defaults(0.1);
        ff_optimizer *opt = ff_adamw(&p, 1, &o);
        CHECK(opt && ff_optimizer_step(opt) == FF_OK && ff_optimizer_step(opt) == FF_OK);
        CHECK(ff_optimizer_step_count(opt) == 2);
        ff_optimizer_release(opt);
        RELEASE(p, g);
    }
}

/* The wrapper: malformed programs are errors; overlapping writes are declined. */
static void test_kernel_fused_checks(void)
{
    n_backends();
    CHECK(use(backends[0]) == FF_OK);
    ff_tensor *a = ff_rand_uniform(1, SHAPE(16), FF_F32, -1, 1, 1), *b = ff_rand_uniform(1, SHAPE(16), FF_F64, -1, 1, 2);
    ff_fused_inst add = {FF_KIND_BINARY, FF_BINARY_ADD, 0, {0, 1}};
    ff_tensor *ab[2] = {a, b};
    CHECK_ERROR(ff_kernel_fused(ab, 2, 2, &add, 1, "t") == FF_ERR_INVALID, FF_ERR_INVALID, "program's dtype is f32");
    ff_fused_inst bad = {FF_KIND_BINARY, FF_BINARY_ADD, 5, {0, 1}};
    CHECK_ERROR(ff_kernel_fused(ab, 2, 2, &bad, 1, "t") == FF_ERR_INVALID, FF_ERR_INVALID, "malformed");
    /* a written view over elements another view reads, shifted by one: declined, no message */
    ff_tensor *lo = ff_slice(a, 0, 0, 8, 1), *hi = ff_slice(a, 0, 1, 9, 1);
    ff_tensor *lh[2] = {lo, hi};
    CHECK(ff_kernel_fused(lh, 2, 2, &add, 1, "t") == FF_ERR_UNSUPPORTED && ff_last_status() == FF_OK);
    /* disjoint halves of one storage run */
    ff_tensor *h2 = ff_slice(a, 0, 8, 16, 1), *want = ff_add(lo, h2);
    ff_tensor *lh2[2] = {lo, h2};
    CHECK(ff_kernel_fused(lh2, 2, 2, &add, 1, "t") == FF_OK);
    CHECK(same_bits(lo, want));
    RELEASE(a, b, lo, hi, h2, want);
}

FF_TEST_MAIN("optim_fused", TEST(test_fused_matches_composition_bit_for_bit),
             TEST(test_capture_records_the_composition_and_replays_it),
             TEST(test_gradient_aliasing_the_parameter_composes), TEST(test_fused_step_is_seen_by_autograd), TEST(test_empty_parameter_steps),
             TEST(test_kernel_fused_checks))
