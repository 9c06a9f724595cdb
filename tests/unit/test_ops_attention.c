/* ff_scaled_dot_product_attention on the cpu reference backend: its entry against the
 * composition (FF_ATTENTION=compose's path, forced here) in values and gradients, the
 * node's O(T) saved state, fully masked rows, broadcasting, finite differences through
 * the entry and through create_graph, and the refusals. The conformance suite
 * (conformance/cases_attention.c) crosses backends, dtypes and sizes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff/amp.h"
#include "ff/graph.h"
#include "ff_impl.h"
#include "ff_test.h"

/* A tensor of the shape with values from a fixed pseudo-random sequence in [-1, 1]. */
static ff_tensor *rnd(ff_dtype dt, int nd, const int64_t *shape, unsigned seed)
{
    return ff_test_lcg_tensor(dt, nd, shape, seed, -1, 1);
}

/* The tests run on cpu, whose entry they compare with the composition. */
static void setup(void)
{
    ff_backend *cpu = ff_backend_load("cpu");
    CHECK(cpu && ff_backend_set_default(cpu) == FF_OK);
    CHECK(ff_backend_supports(cpu, FF_KIND_ATTENTION, FF_ATTENTION_FORWARD, FF_F64) &&
          ff_backend_supports(cpu, FF_KIND_ATTENTION, FF_ATTENTION_BACKWARD, FF_F32));
}

typedef struct run_out {
    ff_tensor *o, *g[3];
} run_out;

/* o = sdpa(q, k, v, mask), and the gradients of sum(o * w) w.r.t. q, k, v. */
static run_out run(ff_tensor *const *in, const ff_tensor *mask, bool causal, bool composed)
{
    run_out r = {0};
    ff_ops_force_compose(FF_KIND_ATTENTION, composed);
    for (int i = 0; i < 3; i++) ff_zero_grad(in[i]);
    r.o = ff_scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, causal, NAN, 0);
    ff_tensor *w = r.o ? rnd(ff_tensor_dtype(r.o), ff_tensor_ndim(r.o), ff_tensor_shape(r.o), 99) : NULL;
    ff_tensor *ow = w ? ff_mul(r.o, w) : NULL, *s = ow ? ff_sum(ow, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    for (int i = 0; i < 3; i++) r.g[i] = ff_grad(in[i]);
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    RELEASE(w, ow, s);
    return r;
}

static void run_free(run_out *r)
{
    ff_tensor_release(r->o);
    for (int i = 0; i < 3; i++) ff_tensor_release(r->g[i]);
}

/* The entry and the composition agree on o and the three gradients. */
static void agree(const int64_t *qs, int nq, const int64_t *ks, int nk, const int64_t *vs, int nv,
                  const ff_tensor *mask, bool causal, double tol)
{
    ff_tensor *in[3] = {rnd(FF_F64, nq, qs, 1), rnd(FF_F64, nk, ks, 2), rnd(FF_F64, nv, vs, 3)};
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    run_out a = run(in, mask, causal, false), b = run(in, mask, causal, true);
    CHECK(a.o && b.o);
    CHECK(ff_test_max_diff(a.o, b.o) < tol);
    for (int i = 0; i < 3; i++) {
        CHECK(a.g[i] && b.g[i]);
        CHECK(ff_test_max_diff(a.g[i], b.g[i]) < tol);
    }
    run_free(&a), run_free(&b);
    RELEASE(in[0], in[1], in[2]);
}

static void entry_vs_composition(void)
{
    agree(SHAPE(2, 3, 7, 5), 4, SHAPE(2, 3, 9, 5), 4, SHAPE(2, 3, 9, 4), 4, NULL, false, 1e-12);
    agree(SHAPE(2, 3, 7, 5), 4, SHAPE(2, 3, 9, 5), 4, SHAPE(2, 3, 9, 4), 4, NULL, true, 1e-12);
    agree(SHAPE(9, 3, 5), 3, SHAPE(9, 4, 5), 3, SHAPE(9, 4, 6), 3, NULL, true, 1e-12); /* batch-first 3-D */
    agree(SHAPE(6, 8), 2, SHAPE(6, 8), 2, SHAPE(6, 8), 2, NULL, false, 1e-12);         /* 2-D */
    /* k and v broadcast over heads (stride 0 in the entry's views); q over a batch of 3 */
    agree(SHAPE(2, 4, 5, 8), 4, SHAPE(2, 1, 6, 8), 4, SHAPE(1, 1, 6, 3), 4, NULL, false, 1e-12);
    agree(SHAPE(3, 2, 4, 5, 8), 5, SHAPE(2, 1, 6, 8), 4, SHAPE(6, 3), 2, NULL, true, 1e-12);
    /* additive mask broadcast over batch, bool mask over heads with fully masked rows */
    ff_tensor *add = rnd(FF_F64, 2, SHAPE(7, 9), 5);
    agree(SHAPE(2, 3, 7, 5), 4, SHAPE(2, 3, 9, 5), 4, SHAPE(2, 3, 9, 4), 4, add, false, 1e-12);
    double mv[2 * 1 * 7 * 9];
    for (int i = 0; i < 2 * 7 * 9; i++) mv[i] = (i / 9) % 3 == 1 ? 0 : (i * 7 % 5) != 0; /* rows 1, 4 empty */
    ff_tensor *bm = ff_test_tensor(FF_BOOL, 4, SHAPE(2, 1, 7, 9), mv);
    agree(SHAPE(2, 3, 7, 5), 4, SHAPE(2, 3, 9, 5), 4, SHAPE(2, 3, 9, 4), 4, bm, false, 1e-12);
    RELEASE(add, bm);
}

/* Fully masked rows: 0, not NaN, with zero gradients (PyTorch 2.5's SDPA). */
static void masked_rows_are_zero(void)
{
    ff_tensor *q = rnd(FF_F32, 3, SHAPE(1, 2, 4), 1), *k = rnd(FF_F32, 3, SHAPE(1, 3, 4), 2),
              *v = rnd(FF_F32, 3, SHAPE(1, 3, 4), 3);
    ff_set_requires_grad(q, true);
    ff_tensor *m = ff_test_tensor(FF_BOOL, 2, SHAPE(2, 3), VALS(0, 0, 0, 1, 0, 1));
    for (int c = 0; c < 2; c++) {
        ff_ops_force_compose(FF_KIND_ATTENTION, c);
        ff_zero_grad(q);
        ff_tensor *o = ff_scaled_dot_product_attention(q, k, v, m, 0, false, NAN, 0);
        ff_tensor *s = o ? ff_sum(o, 0, NULL, false) : NULL;
        CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
        double ov[8], gv[8];
        ff_tensor *gq = ff_grad(q);
        CHECK(o && ff_test_values(o, ov, 8) == 0 && ff_test_values(gq, gv, 8) == 0);
        ff_tensor_release(gq);
        for (int i = 0; i < 4; i++) CHECK(ov[i] == 0 && gv[i] == 0);
        for (int i = 4; i < 8; i++) CHECK(isfinite(ov[i]) && ov[i] != 0);
        RELEASE(o, s);
    }
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    RELEASE(q, k, v, m);
}

static ff_tensor *f_sdpa(int n, ff_tensor *const *in, void *user)
{
    (void)n;
    return ff_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0, user != NULL, 0.7, 0);
}

/* Second-order: the gradient of the gradient runs through the composition's formulas. */
static ff_tensor *f_grad_q(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    /* gradcheck's perturbed evaluations run with grad mode off on inputs without
     * history: q as a leaf then, grad mode on inside */
    bool prev = ff_set_grad_enabled(true);
    ff_tensor *q = ff_requires_grad(in[0]) ? ff_tensor_retain(in[0]) : ff_detach(in[0]);
    if (q && !ff_requires_grad(q)) ff_set_requires_grad(q, true);
    ff_tensor *o = q ? ff_scaled_dot_product_attention(q, in[1], in[2], NULL, 0, true, NAN, 0) : NULL;
    ff_tensor *sq = o ? ff_square(o) : NULL, *s = sq ? ff_sum(sq, 0, NULL, false) : NULL, *g = NULL;
    ff_backward_opts opts = {.create_graph = true};
    if (s && ff_autograd_grad(s, NULL, 1, &q, &g, &opts)) g = NULL;
    RELEASE(q, o, sq, s);
    ff_set_grad_enabled(prev);
    return g;
}

static void finite_differences(void)
{
    ff_tensor *in[3] = {rnd(FF_F64, 4, SHAPE(1, 2, 3, 4), 7), rnd(FF_F64, 4, SHAPE(1, 2, 5, 4), 8),
                        rnd(FF_F64, 4, SHAPE(1, 2, 5, 3), 9)};
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    CHECK(ff_gradcheck(f_sdpa, NULL, 3, in, &o) == FF_OK);
    CHECK(ff_gradcheck(f_sdpa, (void *)1, 3, in, &o) == FF_OK);
    CHECK(ff_gradcheck(f_grad_q, NULL, 3, in, &o) == FF_OK);
    RELEASE(in[0], in[1], in[2]);
}

/* Dropout inside the entry (the cpu reference honors it): one node, values and first
 * and second-order gradients equal to the composition's, which draws ff_dropout's mask
 * with the same seed; and finite differences (the mask is fixed by the seed). */
static ff_tensor *f_sdpa_drop(int n, ff_tensor *const *in, void *user)
{
    (void)n, (void)user;
    return ff_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0.3, true, 0.7, 77);
}

static void dropout_in_the_entry(void)
{
    ff_tensor *in[3] = {rnd(FF_F64, 4, SHAPE(2, 3, 7, 5), 1), rnd(FF_F64, 4, SHAPE(2, 3, 9, 5), 2),
                        rnd(FF_F64, 4, SHAPE(2, 3, 9, 4), 3)};
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    ff_tensor *o[2] = {NULL, NULL}, *g[2][3] = {{NULL}}, *gg[2] = {NULL, NULL};
    for (int c = 0; c < 2; c++) {
        ff_ops_force_compose(FF_KIND_ATTENTION, c);
        o[c] = ff_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0.3, true, NAN, 77);
        CHECK(o[c] && (strcmp(ff_grad_fn_name(o[c]), "scaled_dot_product_attention") == 0) == (c == 0));
        ff_tensor *sq = o[c] ? ff_square(o[c]) : NULL, *s = sq ? ff_sum(sq, 0, NULL, false) : NULL;
        ff_backward_opts opts = {.create_graph = true};
        CHECK(s && ff_autograd_grad(s, NULL, 3, in, g[c], &opts) == FF_OK);
        ff_tensor *s2 = g[c][0] ? ff_sum(g[c][0], 0, NULL, false) : NULL; /* d(sum gq)/dv */
        CHECK(s2 && ff_autograd_grad(s2, NULL, 1, &in[2], &gg[c], NULL) == FF_OK);
        RELEASE(sq, s, s2);
    }
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    CHECK(ff_test_max_diff(o[0], o[1]) < 1e-12 && ff_test_max_diff(gg[0], gg[1]) < 1e-12);
    for (int i = 0; i < 3; i++) CHECK(ff_test_max_diff(g[0][i], g[1][i]) < 1e-12);
    ff_tensor *plain = ff_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0.0, true, NAN, 77);
    CHECK(ff_test_max_diff(o[0], plain) > 1e-3); /* dropout did drop */
    ff_gradcheck_opts go = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    CHECK(ff_gradcheck(f_sdpa_drop, NULL, 3, in, &go) == FF_OK);
    RELEASE(o[0], o[1], gg[0], gg[1], plain, in[0], in[1], in[2]);
    for (int c = 0; c < 2; c++) RELEASE(g[c][0], g[c][1], g[c][2]);
}

/* The same seed gives the same result, and p = 0 matches no dropout. */
static void dropout_is_seeded(void)
{
    ff_tensor *q = rnd(FF_F32, 3, SHAPE(2, 5, 4), 1), *k = rnd(FF_F32, 3, SHAPE(2, 6, 4), 2),
              *v = rnd(FF_F32, 3, SHAPE(2, 6, 3), 3);
    ff_tensor *a = ff_scaled_dot_product_attention(q, k, v, NULL, 0.5, false, NAN, 42);
    ff_tensor *b = ff_scaled_dot_product_attention(q, k, v, NULL, 0.5, false, NAN, 42);
    ff_tensor *c = ff_scaled_dot_product_attention(q, k, v, NULL, 0.0, false, NAN, 42);
    CHECK(a && b && c && ff_test_max_diff(a, b) == 0 && ff_test_max_diff(a, c) > 0);
    RELEASE(q, k, v, a, b, c);
}

static void refusals(void)
{
    ff_tensor *q = rnd(FF_F32, 3, SHAPE(2, 5, 4), 1), *k = rnd(FF_F32, 3, SHAPE(2, 6, 4), 2),
              *v = rnd(FF_F32, 3, SHAPE(2, 6, 3), 3), *k3 = rnd(FF_F32, 3, SHAPE(2, 6, 3), 4),
              *k64 = rnd(FF_F64, 3, SHAPE(2, 6, 4), 5), *kb = rnd(FF_F32, 3, SHAPE(3, 6, 4), 6),
              *m = rnd(FF_F32, 2, SHAPE(5, 6), 7), *mbad = rnd(FF_F32, 2, SHAPE(4, 6), 8),
              *mi = ff_zeros(2, SHAPE(5, 6), FF_I32), *q1 = rnd(FF_F32, 1, SHAPE(4), 9);
    const char *f = "ff_scaled_dot_product_attention";
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k3, v, NULL, 0, false, NAN, 0), FF_ERR_INVALID, f);
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k64, v, NULL, 0, false, NAN, 0), FF_ERR_INVALID, "dtype");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, kb, v, NULL, 0, false, NAN, 0), FF_ERR_INVALID, "broadcast");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k, v, m, 0, true, NAN, 0), FF_ERR_INVALID, "is_causal");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k, v, mbad, 0, false, NAN, 0), FF_ERR_INVALID, "attn_mask");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k, v, mi, 0, false, NAN, 0), FF_ERR_INVALID, "attn_mask");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, k, v, NULL, 1.5, false, NAN, 0), FF_ERR_INVALID, "dropout_p");
    CHECK_ERROR(!ff_scaled_dot_product_attention(q1, k, v, NULL, 0, false, NAN, 0), FF_ERR_INVALID, f);
    CHECK_ERROR(!ff_scaled_dot_product_attention(q, NULL, v, NULL, 0, false, NAN, 0), FF_ERR_INVALID, f);
    RELEASE(q, k, v, k3, k64, kb, m, mbad, mi, q1);
}

/* The entry's node keeps O(T) state: at T = 512 the step's peak stays far below the
 * composition's, which holds T x T scores and weights. The backend's peak never goes
 * down, so the entry runs first (the earlier tests' tensors are tiny). */
static void entry_memory_is_linear(void)
{
    ff_backend *be = ff_backend_default();
    size_t base = 0, peak[2] = {0, 0}, peak0 = 0;
    CHECK(ff_backend_memory_stats(be, &base, NULL, &peak0) == FF_OK);
    CHECK(peak0 < (size_t)1 << 20);
    for (int c = 0; c < 2; c++) {
        ff_tensor *in[3] = {rnd(FF_F32, 4, SHAPE(1, 2, 512, 16), 1), rnd(FF_F32, 4, SHAPE(1, 2, 512, 16), 2),
                            rnd(FF_F32, 4, SHAPE(1, 2, 512, 16), 3)};
        for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
        run_out r = run(in, NULL, true, c == 1);
        CHECK(ff_backend_memory_stats(be, NULL, NULL, &peak[c]) == FF_OK);
        run_free(&r);
        RELEASE(in[0], in[1], in[2]);
    }
    fprintf(stderr, "peak above the start: entry %zu bytes, composition %zu bytes\n", peak[0] - base, peak[1] - base);
    /* 2 x 512 x 512 f32 scores are 2 MiB; the entry's whole step needs well under 1 MiB */
    CHECK(peak[0] - base < (size_t)1 << 20);
    CHECK(peak[1] - base > (size_t)4 << 20);
}

/* Under autocast, q, k, v and an additive mask run in the autocast dtype (the entry
 * through its f32 detour); the gradients reach the f32 leaves in f32. */
static void autocast_runs_in_half(void)
{
    ff_tensor *in[3] = {rnd(FF_F32, 3, SHAPE(2, 5, 8), 1), rnd(FF_F32, 3, SHAPE(2, 6, 8), 2),
                        rnd(FF_F32, 3, SHAPE(2, 6, 4), 3)};
    ff_tensor *m = rnd(FF_F32, 2, SHAPE(5, 6), 4);
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    ff_tensor *want = ff_scaled_dot_product_attention(in[0], in[1], in[2], m, 0, false, NAN, 0);
    CHECK(ff_autocast_set(FF_BF16) == FF_OK);
    ff_tensor *o = ff_scaled_dot_product_attention(in[0], in[1], in[2], m, 0, false, NAN, 0);
    CHECK(ff_autocast_set(FF_F32) == FF_OK);
    CHECK(o && ff_tensor_dtype(o) == FF_BF16);
    CHECK(ff_test_max_diff(o, want) < 0.05);
    ff_tensor *s = o ? ff_sum(o, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gq = ff_grad(in[0]);
    CHECK(gq && ff_tensor_dtype(gq) == FF_F32);
    RELEASE(in[0], in[1], in[2], m, want, o, s, gq);
}

/* A captured training step through the entry (forward, backward) replays to what eager
 * computes on new inputs, bit for bit: graph/replay.c calls the attention entry. */
static void graph_replays_the_entry(void)
{
    ff_tensor *in[3] = {rnd(FF_F32, 4, SHAPE(2, 2, 9, 8), 1), rnd(FF_F32, 4, SHAPE(2, 2, 7, 8), 2),
                        rnd(FF_F32, 4, SHAPE(2, 2, 7, 8), 3)};
    double mv[63];
    for (int i = 0; i < 63; i++) mv[i] = i % 7 == 0 || i % 3 != 0;
    ff_tensor *m = ff_test_tensor(FF_BOOL, 2, SHAPE(9, 7), mv);
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *o = ff_scaled_dot_product_attention(in[0], in[1], in[2], m, 0, false, NAN, 0);
    ff_tensor *sq = o ? ff_square(o) : NULL, *s = sq ? ff_sum(sq, 0, NULL, false) : NULL, *g[3] = {NULL, NULL, NULL};
    CHECK(s && ff_autograd_grad(s, NULL, 3, in, g, NULL) == FF_OK);
    ff_graph *gr = ff_graph_capture_end();
    CHECK(gr != NULL);
    /* new values in q and k, then replay vs eager */
    ff_tensor *q2 = rnd(FF_F32, 4, SHAPE(2, 2, 9, 8), 21), *k2 = rnd(FF_F32, 4, SHAPE(2, 2, 7, 8), 22);
    bool prev = ff_set_grad_enabled(false); /* the leaves change in place, as under no_grad */
    CHECK(ff_copy_(in[0], q2) == FF_OK && ff_copy_(in[1], k2) == FF_OK);
    ff_set_grad_enabled(prev);
    CHECK(gr && ff_graph_replay(gr) == FF_OK);
    ff_tensor *eo = ff_scaled_dot_product_attention(in[0], in[1], in[2], m, 0, false, NAN, 0);
    ff_tensor *esq = eo ? ff_square(eo) : NULL, *es = esq ? ff_sum(esq, 0, NULL, false) : NULL, *eg[3] = {NULL};
    CHECK(es && ff_autograd_grad(es, NULL, 3, in, eg, NULL) == FF_OK);
    CHECK(ff_test_max_diff(o, eo) == 0);
    for (int i = 0; i < 3; i++) CHECK(ff_test_max_diff(g[i], eg[i]) == 0);
    CHECK(ff_test_max_diff(q2, in[0]) == 0);
    ff_graph_release(gr);
    RELEASE(in[0], in[1], in[2], m, o, sq, s, g[0], g[1], g[2], q2, k2, eo, esq, es, eg[0], eg[1], eg[2]);
}

FF_TEST_MAIN("ops_attention", TEST(setup), TEST(entry_vs_composition), TEST(masked_rows_are_zero), TEST(finite_differences),
             TEST(dropout_is_seeded), TEST(dropout_in_the_entry), TEST(refusals), TEST(autocast_runs_in_half), TEST(graph_replays_the_entry),
             TEST(entry_memory_is_linear))
