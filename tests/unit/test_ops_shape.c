/* Copying shape ops: concat (incl. more inputs than a node holds), stack, split, chunk,
 * pad, flip, tril/triu, repeat, tile. Values hand-computed, including 0-size and
 * non-contiguous inputs; gradients by ff_gradcheck (f64). */
#include "ff_test.h"

static ff_tensor *T(ff_dtype dt, int nd, const int64_t *shape, const double *v) { return ff_test_tensor(dt, nd, shape, v); }

static ff_gradcheck_opts gc_opts(void)
{
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    return o;
}

/* ---- concat / stack / split / chunk ------------------------------------------------- */
static void check_concat(void)
{
    ff_tensor *a = T(FF_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4)), *b = T(FF_I32, 2, SHAPE(2, 1), VALS(5, 6));
    ff_tensor *e = ff_zeros(2, SHAPE(2, 0), FF_F32);
    ff_tensor *r = ff_concat(3, (ff_tensor *[]){a, e, b}, 1);
    CHECK(r && ff_tensor_dtype(r) == FF_F32);
    CHECK_TENSOR(r, 2, SHAPE(2, 3), VALS(1, 2, 5, 3, 4, 6), 0);
    ff_tensor *at = ff_mT(a); /* [[1, 3], [2, 4]], non-contiguous */
    ff_tensor *r0 = ff_concat(2, (ff_tensor *[]){at, a}, -2);
    CHECK_TENSOR(r0, 2, SHAPE(4, 2), VALS(1, 3, 2, 4, 1, 2, 3, 4), 0);
    ff_tensor *only_empty = ff_concat(1, &e, 1);
    CHECK(only_empty && ff_tensor_numel(only_empty) == 0 && ff_tensor_shape(only_empty)[0] == 2);
    ff_tensor *s = ff_scalar_tensor(1, FF_F32);
    CHECK_ERROR(ff_concat(2, (ff_tensor *[]){a, b}, 0) == NULL, FF_ERR_INVALID, "incompatible");
    CHECK_ERROR(ff_concat(1, &s, 0) == NULL, FF_ERR_INVALID, "0-d");
    CHECK_ERROR(ff_concat(0, &a, 0) == NULL, FF_ERR_INVALID, "ff_concat");
    CHECK_ERROR(ff_concat(2, (ff_tensor *[]){a, NULL}, 0) == NULL, FF_ERR_INVALID, "NULL");
    RELEASE(a, b, e, r, at, r0, only_empty, s);
}

/* Six inputs: two live in node->extra. Input 1 does not require grad. */
static void check_concat_many_grad(void)
{
    ff_tensor *ts[6];
    for (int i = 0; i < 6; i++) {
        ts[i] = ff_full(1, SHAPE(i + 1), FF_F64, i); /* lengths 1..6 */
        if (i != 1) CHECK(ff_set_requires_grad(ts[i], true) == FF_OK);
    }
    ff_tensor *c = ff_concat(6, ts, 0);
    CHECK(c && ff_tensor_numel(c) == 21);
    double v[21];
    CHECK(ff_test_values(c, v, 21) == 0);
    CHECK(v[0] == 0 && v[1] == 1 && v[3] == 2 && v[20] == 5);
    ff_tensor *w = ff_arange(0, 21, 1, FF_F64); /* weights: the gradient is the position */
    ff_tensor *cw = c && w ? ff_mul(c, w) : NULL, *s = cw ? ff_sum(cw, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g5 = ff_grad(ts[5]), *g0 = ff_grad(ts[0]), *g1 = ff_grad(ts[1]);
    CHECK_TENSOR(g5, 1, SHAPE(6), VALS(15, 16, 17, 18, 19, 20), 0);
    CHECK_TENSOR(g0, 1, SHAPE(1), VALS(0), 0);
    CHECK(g1 == NULL);
    RELEASE(c, w, cw, s, g5, g0, g1);
    for (int i = 0; i < 6; i++) ff_tensor_release(ts[i]);
}

static void check_stack_split_chunk(void)
{
    ff_tensor *a = T(FF_F32, 1, SHAPE(2), VALS(1, 2)), *b = T(FF_F32, 1, SHAPE(2), VALS(3, 4));
    ff_tensor *c = T(FF_F32, 1, SHAPE(2), VALS(5, 6));
    ff_tensor *s0 = ff_stack(3, (ff_tensor *[]){a, b, c}, 0), *s1 = ff_stack(3, (ff_tensor *[]){a, b, c}, -1);
    CHECK_TENSOR(s0, 2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6), 0);
    CHECK_TENSOR(s1, 2, SHAPE(2, 3), VALS(1, 3, 5, 2, 4, 6), 0);
    ff_tensor *l3 = T(FF_F32, 1, SHAPE(3), VALS(0, 0, 0));
    CHECK_ERROR(ff_stack(2, (ff_tensor *[]){a, l3}, 0) == NULL, FF_ERR_INVALID, "ff_stack");
    CHECK_ERROR(ff_stack(2, (ff_tensor *[]){a, b}, 2) == NULL, FF_ERR_INVALID, "axis");

    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 5), VALS(0, 1, 2, 3, 4, 5, 6, 7, 8, 9)), *out[6] = {NULL};
    CHECK(ff_split(x, 2, 1, NULL, 0) == 3);
    CHECK(ff_split(x, 2, 1, out, 6) == 3);
    CHECK_TENSOR(out[0], 2, SHAPE(2, 2), VALS(0, 1, 5, 6), 0);
    CHECK_TENSOR(out[2], 2, SHAPE(2, 1), VALS(4, 9), 0);
    CHECK(out[1] && ff_tensor_shares_storage(out[1], x)); /* views */
    for (int i = 0; i < 6; i++) ff_tensor_release(out[i]), out[i] = NULL;
    CHECK_ERROR(ff_split(x, 2, 1, out, 2) == -1, FF_ERR_INVALID, "max_out");
    CHECK(out[0] == NULL);
    CHECK_ERROR(ff_split(x, 0, 1, out, 6) == -1, FF_ERR_INVALID, "positive");
    CHECK(ff_chunk(x, 3, -1, out, 6) == 3);
    CHECK_TENSOR(out[1], 2, SHAPE(2, 2), VALS(2, 3, 7, 8), 0);
    CHECK_TENSOR(out[2], 2, SHAPE(2, 1), VALS(4, 9), 0);
    for (int i = 0; i < 6; i++) ff_tensor_release(out[i]), out[i] = NULL;
    ff_tensor *y = ff_zeros(1, SHAPE(6), FF_F32), *e = ff_zeros(2, SHAPE(0, 3), FF_F32);
    CHECK(ff_chunk(y, 4, 0, out, 6) == 3); /* ceil(6 / 4) = 2 per piece, as PyTorch */
    for (int i = 0; i < 6; i++) ff_tensor_release(out[i]), out[i] = NULL;
    CHECK(ff_chunk(e, 3, 0, out, 6) == 3);
    CHECK(out[2] && ff_tensor_numel(out[2]) == 0);
    for (int i = 0; i < 6; i++) ff_tensor_release(out[i]), out[i] = NULL;
    CHECK(ff_split(e, 2, 0, out, 6) == 1);
    for (int i = 0; i < 6; i++) ff_tensor_release(out[i]), out[i] = NULL;
    RELEASE(a, b, c, s0, s1, l3, x, y, e);
}

/* ---- pad / flip / tril / triu ------------------------------------------------------------ */
static void check_pad(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *p = ff_pad(x, SHAPE(1, 0, 0, 2), 9);
    CHECK_TENSOR(p, 2, SHAPE(3, 4), VALS(9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9), 0);
    ff_tensor *crop = ff_pad(x, SHAPE(0, 0, -1, 1), 0); /* negative: remove */
    CHECK_TENSOR(crop, 2, SHAPE(2, 2), VALS(2, 0, 4, 0), 0);
    ff_tensor *xt = ff_mT(x), *pt = ff_pad(xt, SHAPE(0, 1, 1, 0), -1);
    CHECK_TENSOR(pt, 2, SHAPE(3, 3), VALS(-1, 1, 3, -1, 2, 4, -1, -1, -1), 0);
    ff_tensor *e = ff_zeros(1, SHAPE(0), FF_I64), *pe = ff_pad(e, SHAPE(2, 1), 7);
    CHECK_TENSOR(pe, 1, SHAPE(3), VALS(7, 7, 7), 0);
    CHECK(pe && ff_tensor_dtype(pe) == FF_I64);
    CHECK_ERROR(ff_pad(x, SHAPE(0, 0, -2, -1), 0) == NULL, FF_ERR_INVALID, "ff_pad");
    RELEASE(x, p, crop, xt, pt, e, pe);
}

static void check_flip(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *f1 = ff_flip(x, 1, (int[]){1}), *f01 = ff_flip(x, 2, (int[]){0, -1}), *fall = ff_flip(x, 0, NULL);
    CHECK_TENSOR(f1, 2, SHAPE(2, 3), VALS(3, 2, 1, 6, 5, 4), 0);
    CHECK_TENSOR(f01, 2, SHAPE(2, 3), VALS(6, 5, 4, 3, 2, 1), 0);
    CHECK_TENSOR(fall, 2, SHAPE(2, 3), VALS(6, 5, 4, 3, 2, 1), 0);
    ff_tensor *xt = ff_mT(x), *ft = ff_flip(xt, 1, (int[]){0}); /* xt = [[1,4],[2,5],[3,6]] */
    CHECK_TENSOR(ft, 2, SHAPE(3, 2), VALS(3, 6, 2, 5, 1, 4), 0);
    ff_tensor *one = T(FF_I64, 2, SHAPE(1, 1), VALS(7)), *f_one = ff_flip(one, 0, NULL);
    CHECK_TENSOR(f_one, 2, SHAPE(1, 1), VALS(7), 0);
    CHECK(f_one && !ff_tensor_shares_storage(f_one, one));
    ff_tensor *e = ff_zeros(2, SHAPE(0, 3), FF_F32), *fe = ff_flip(e, 1, (int[]){1});
    CHECK(fe && ff_tensor_numel(fe) == 0);
    CHECK_ERROR(ff_flip(x, 2, (int[]){1, 1}) == NULL, FF_ERR_INVALID, "repeated");
    RELEASE(x, f1, f01, fall, xt, ft, one, f_one, e, fe);
}

static void check_tri(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9));
    ff_tensor *l0 = ff_tril(x, 0), *lm1 = ff_tril(x, -1), *u1 = ff_triu(x, 1), *u0 = ff_triu(x, 0);
    CHECK_TENSOR(l0, 2, SHAPE(3, 3), VALS(1, 0, 0, 4, 5, 0, 7, 8, 9), 0);
    CHECK_TENSOR(lm1, 2, SHAPE(3, 3), VALS(0, 0, 0, 4, 0, 0, 7, 8, 0), 0);
    CHECK_TENSOR(u1, 2, SHAPE(3, 3), VALS(0, 2, 3, 0, 0, 6, 0, 0, 0), 0);
    CHECK_TENSOR(u0, 2, SHAPE(3, 3), VALS(1, 2, 3, 0, 5, 6, 0, 0, 9), 0);
    /* batched, non-square, non-contiguous: b = [2, 2, 3] */
    ff_tensor *b = T(FF_I32, 3, SHAPE(2, 3, 2), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12));
    ff_tensor *bt = ff_mT(b), *tb = ff_triu(bt, 0); /* bt[0] = [[1,3,5],[2,4,6]] */
    CHECK_TENSOR(tb, 3, SHAPE(2, 2, 3), VALS(1, 3, 5, 0, 4, 6, 7, 9, 11, 0, 10, 12), 0);
    CHECK(tb && ff_tensor_dtype(tb) == FF_I32);
    ff_tensor *big = ff_tril(x, 5);
    CHECK_TENSOR(big, 2, SHAPE(3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9), 0);
    ff_tensor *v = T(FF_F32, 1, SHAPE(3), VALS(1, 2, 3));
    CHECK_ERROR(ff_tril(v, 0) == NULL, FF_ERR_INVALID, "ff_tril");
    RELEASE(x, l0, lm1, u1, u0, b, bt, tb, big, v);
}

/* ---- repeat / tile ------------------------------------------------------------------------ */
static void check_repeat_tile(void)
{
    ff_tensor *v = T(FF_F32, 1, SHAPE(2), VALS(1, 2));
    ff_tensor *r = ff_repeat(v, 2, SHAPE(2, 3));
    CHECK_TENSOR(r, 2, SHAPE(2, 6), VALS(1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2), 0);
    ff_tensor *m = T(FF_I64, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *r2 = ff_repeat(m, 2, SHAPE(2, 1));
    CHECK_TENSOR(r2, 2, SHAPE(4, 2), VALS(1, 2, 3, 4, 1, 2, 3, 4), 0);
    ff_tensor *mt = ff_mT(m), *r3 = ff_repeat(mt, 2, SHAPE(1, 2)); /* mt = [[1,3],[2,4]] */
    CHECK_TENSOR(r3, 2, SHAPE(2, 4), VALS(1, 3, 1, 3, 2, 4, 2, 4), 0);
    ff_tensor *same = ff_repeat(m, 2, SHAPE(1, 1));
    CHECK_TENSOR(same, 2, SHAPE(2, 2), VALS(1, 2, 3, 4), 0);
    CHECK(same && !ff_tensor_shares_storage(same, m));
    ff_tensor *zero = ff_repeat(m, 3, SHAPE(2, 0, 1));
    CHECK(zero && ff_tensor_ndim(zero) == 3 && ff_tensor_shape(zero)[0] == 2 && ff_tensor_shape(zero)[1] == 0 &&
          ff_tensor_shape(zero)[2] == 2);
    /* eight dims: the per-axis [P, r, s, Q] form keeps the rank within FF_MAX_DIMS */
    ff_tensor *r8 = ff_repeat(v, 8, SHAPE(2, 2, 2, 2, 2, 2, 2, 2));
    CHECK(r8 && ff_tensor_numel(r8) == 512 && ff_tensor_shape(r8)[7] == 4);
    ff_tensor *s8 = r8 ? ff_sum(r8, 0, NULL, false) : NULL;
    CHECK_TENSOR(s8, 0, NULL, VALS(768), 0);
    CHECK_ERROR(ff_repeat(m, 1, SHAPE(2)) == NULL, FF_ERR_INVALID, "ff_repeat");
    CHECK_ERROR(ff_repeat(m, 2, SHAPE(2, -1)) == NULL, FF_ERR_INVALID, "negative");

    ff_tensor *t1 = ff_tile(m, 1, SHAPE(2)); /* numpy: reps -> (1, 2) */
    CHECK_TENSOR(t1, 2, SHAPE(2, 4), VALS(1, 2, 1, 2, 3, 4, 3, 4), 0);
    ff_tensor *t3 = ff_tile(v, 3, SHAPE(2, 1, 1));
    CHECK_TENSOR(t3, 3, SHAPE(2, 1, 2), VALS(1, 2, 1, 2), 0);
    RELEASE(v, r, m, r2, mt, r3, same, zero, r8, s8, t1, t3);
}

/* ---- gradients -------------------------------------------------------------------------- */
static ff_tensor *f_concat6(int n, ff_tensor *const *in, void *user) { return ff_concat(n, in, 0); }
static ff_tensor *f_stack(int n, ff_tensor *const *in, void *user) { return ff_stack(n, in, 1); }
static ff_tensor *f_pad(int n, ff_tensor *const *in, void *user) { return ff_pad(in[0], SHAPE(1, 0, -1, 2), 3); }
static ff_tensor *f_flip(int n, ff_tensor *const *in, void *user) { return ff_flip(in[0], 2, (int[]){0, 1}); }
static ff_tensor *f_tril(int n, ff_tensor *const *in, void *user) { return ff_tril(in[0], -1); }
static ff_tensor *f_triu(int n, ff_tensor *const *in, void *user) { return ff_triu(in[0], 1); }
static ff_tensor *f_repeat(int n, ff_tensor *const *in, void *user) { return ff_repeat(in[0], 3, SHAPE(2, 1, 3)); }
static ff_tensor *f_tile(int n, ff_tensor *const *in, void *user) { return ff_tile(in[0], 1, SHAPE(2)); }

/* split pieces, recombined differently so each piece's gradient matters */
static ff_tensor *f_split(int n, ff_tensor *const *in, void *user)
{
    ff_tensor *p[3] = {NULL};
    if (ff_split(in[0], 2, 1, p, 3) != 2) return NULL;
    ff_tensor *q = ff_mul_scalar(p[1], 3.0), *r = q ? ff_concat(2, (ff_tensor *[]){q, p[0]}, 1) : NULL;
    ff_tensor_release(p[0]);
    ff_tensor_release(p[1]);
    ff_tensor_release(q);
    return r;
}

static void check_gradients(void)
{
    ff_gradcheck_opts o = gc_opts();
    ff_tensor *ins[6];
    for (int i = 0; i < 6; i++) {
        double v[4] = {0.5 * i, -1.0 + i, 2.0 - i, 0.25 * i * i};
        ins[i] = T(FF_F64, 2, SHAPE(i % 2 + 1, 2), v);
    }
    CHECK(ff_gradcheck(f_concat6, NULL, 6, ins, &o) == FF_OK);
    ff_tensor *st[3] = {ins[0], ins[2], ins[4]}; /* all [1, 2] */
    CHECK(ff_gradcheck(f_stack, NULL, 3, st, &o) == FF_OK);
    for (int i = 0; i < 6; i++) ff_tensor_release(ins[i]);

    ff_tensor *x = T(FF_F64, 2, SHAPE(3, 3), VALS(0.1, 0.2, -0.3, 1.4, -2.5, 0.6, 0.7, 8, -0.9));
    CHECK(ff_gradcheck(f_pad, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_flip, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_tril, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_triu, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_repeat, NULL, 1, &x, &o) == FF_OK);
    CHECK(ff_gradcheck(f_tile, NULL, 1, &x, &o) == FF_OK);
    ff_tensor *y = T(FF_F64, 2, SHAPE(2, 4), VALS(1, 2, 3, 4, 5, 6, 7, 8));
    CHECK(ff_gradcheck(f_split, NULL, 1, &y, &o) == FF_OK);
    RELEASE(x, y);
}

FF_TEST_MAIN("ops_shape", TEST(check_concat), TEST(check_concat_many_grad), TEST(check_stack_split_chunk),
             TEST(check_pad), TEST(check_flip), TEST(check_tri), TEST(check_repeat_tile), TEST(check_gradients))
