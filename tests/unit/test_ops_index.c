/* Indexing ops: gather, scatter_add (duplicates accumulate), index_select, embedding;
 * out-of-range indices fail with FF_ERR_INDEX and a message naming the op. Gradients
 * by ff_gradcheck (f64), including through gather <-> scatter_add to second order. */
#include "ff_test.h"

static ff_tensor *T(ff_dtype dt, int nd, const int64_t *shape, const double *v) { return ff_test_tensor(dt, nd, shape, v); }

static ff_gradcheck_opts gc_opts(void)
{
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    return o;
}

static void check_gather(void)
{
    /* torch.gather docs: [[1, 2], [3, 4]], axis 1, index [[0, 0], [1, 0]] */
    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *idx = T(FF_I64, 2, SHAPE(2, 2), VALS(0, 0, 1, 0));
    ff_tensor *g1 = ff_gather(x, 1, idx);
    CHECK_TENSOR(g1, 2, SHAPE(2, 2), VALS(1, 1, 4, 3), 0);
    ff_tensor *g0 = ff_gather(x, -2, idx); /* out[i][j] = x[idx[i][j]][j] */
    CHECK_TENSOR(g0, 2, SHAPE(2, 2), VALS(1, 2, 3, 2), 0);
    /* a smaller index, i32, on a transposed (non-contiguous) input */
    ff_tensor *xt = ff_mT(x), *i32 = T(FF_I32, 2, SHAPE(1, 2), VALS(1, 1));
    ff_tensor *g2 = ff_gather(xt, 1, i32); /* xt = [[1, 3], [2, 4]] */
    CHECK_TENSOR(g2, 2, SHAPE(1, 2), VALS(3, 3), 0);
    /* integer data */
    ff_tensor *xi = T(FF_I64, 1, SHAPE(3), VALS(7, 8, 9)), *ii = T(FF_I64, 1, SHAPE(4), VALS(2, 2, 0, 1));
    ff_tensor *gi = ff_gather(xi, 0, ii);
    CHECK_TENSOR(gi, 1, SHAPE(4), VALS(9, 9, 7, 8), 0);
    /* errors: out of range, float index, rank mismatch, index too large */
    ff_tensor *oob = T(FF_I64, 2, SHAPE(2, 2), VALS(0, 5, 1, 0)), *neg = T(FF_I64, 1, SHAPE(1), VALS(-1));
    ff_tensor *fidx = T(FF_F32, 2, SHAPE(2, 2), VALS(0, 0, 0, 0)), *big = T(FF_I64, 2, SHAPE(3, 1), VALS(0, 0, 0));
    CHECK_ERROR(ff_gather(x, 1, oob) == NULL, FF_ERR_INDEX, "ff_gather");
    CHECK(strstr(ff_last_error(), "5") != NULL);
    CHECK_ERROR(ff_gather(xi, 0, neg) == NULL, FF_ERR_INDEX, "ff_gather");
    CHECK_ERROR(ff_gather(x, 1, fidx) == NULL, FF_ERR_INVALID, "integer");
    CHECK_ERROR(ff_gather(x, 1, ii) == NULL, FF_ERR_INVALID, "rank");
    CHECK_ERROR(ff_gather(x, 1, big) == NULL, FF_ERR_INVALID, "does not fit");
    CHECK_ERROR(ff_gather(x, 2, idx) == NULL, FF_ERR_INVALID, "axis");
    RELEASE(x, idx, g1, g0, xt, i32, g2, xi, ii, gi, oob, neg, fidx, big);
}

static void check_scatter_add(void)
{
    ff_tensor *z = ff_zeros(1, SHAPE(3), FF_F64);
    ff_tensor *idx = T(FF_I64, 1, SHAPE(5), VALS(0, 1, 0, 2, 0)), *src = T(FF_F64, 1, SHAPE(5), VALS(1, 2, 3, 4, 5));
    ff_tensor *r = ff_scatter_add(z, 0, idx, src);
    CHECK_TENSOR(r, 1, SHAPE(3), VALS(9, 2, 4), 0); /* duplicates accumulate */
    CHECK_TENSOR(z, 1, SHAPE(3), VALS(0, 0, 0), 0); /* out of place */
    /* 2-D along axis 1 onto a non-zero base */
    ff_tensor *base = T(FF_F32, 2, SHAPE(2, 3), VALS(1, 1, 1, 1, 1, 1));
    ff_tensor *i2 = T(FF_I64, 2, SHAPE(2, 2), VALS(2, 2, 0, 1)), *s2 = T(FF_F32, 2, SHAPE(2, 2), VALS(1, 2, 3, 4));
    ff_tensor *r2 = ff_scatter_add(base, 1, i2, s2);
    CHECK_TENSOR(r2, 2, SHAPE(2, 3), VALS(1, 1, 4, 4, 5, 1), 0);
    ff_tensor *bad = T(FF_I64, 1, SHAPE(5), VALS(0, 1, 3, 0, 0));
    CHECK_ERROR(ff_scatter_add(z, 0, bad, src) == NULL, FF_ERR_INDEX, "ff_scatter_add");
    ff_tensor *short_src = T(FF_F64, 1, SHAPE(2), VALS(1, 2));
    CHECK_ERROR(ff_scatter_add(z, 0, idx, short_src) == NULL, FF_ERR_INVALID, "does not fit");
    RELEASE(z, idx, src, r, base, i2, s2, r2, bad, short_src);
}

static void check_index_select_embedding(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6));
    ff_tensor *idx = T(FF_I64, 1, SHAPE(3), VALS(2, 0, 2));
    ff_tensor *r0 = ff_index_select(x, 0, idx);
    CHECK_TENSOR(r0, 2, SHAPE(3, 2), VALS(5, 6, 1, 2, 5, 6), 0);
    ff_tensor *i1 = T(FF_I32, 1, SHAPE(3), VALS(1, 1, 0)), *r1 = ff_index_select(x, -1, i1);
    CHECK_TENSOR(r1, 2, SHAPE(3, 3), VALS(2, 2, 1, 4, 4, 3, 6, 6, 5), 0);
    ff_tensor *xt = ff_mT(x), *rt = ff_index_select(xt, 1, idx); /* xt = [[1,3,5],[2,4,6]] */
    CHECK_TENSOR(rt, 2, SHAPE(2, 3), VALS(5, 1, 5, 6, 2, 6), 0);
    ff_tensor *empty = ff_zeros(1, SHAPE(0), FF_I64), *re = ff_index_select(x, 0, empty);
    CHECK(re && ff_tensor_ndim(re) == 2 && ff_tensor_shape(re)[0] == 0 && ff_tensor_shape(re)[1] == 2);
    ff_tensor *oob = T(FF_I64, 1, SHAPE(1), VALS(3)), *i2d = T(FF_I64, 2, SHAPE(1, 1), VALS(0));
    CHECK_ERROR(ff_index_select(x, 0, oob) == NULL, FF_ERR_INDEX, "ff_index_select");
    CHECK_ERROR(ff_index_select(x, 0, i2d) == NULL, FF_ERR_INVALID, "1-D");

    ff_tensor *w = T(FF_F32, 2, SHAPE(4, 2), VALS(0, 1, 10, 11, 20, 21, 30, 31));
    ff_tensor *ids = T(FF_I32, 2, SHAPE(2, 2), VALS(3, 0, 1, 1));
    ff_tensor *e = ff_embedding(w, ids);
    CHECK_TENSOR(e, 3, SHAPE(2, 2, 2), VALS(30, 31, 0, 1, 10, 11, 10, 11), 0);
    ff_tensor *id0 = T(FF_I64, 0, NULL, VALS(2)), *e0 = ff_embedding(w, id0);
    CHECK_TENSOR(e0, 1, SHAPE(2), VALS(20, 21), 0);
    /* gradient wrt weight: how often each row was used */
    CHECK(ff_set_requires_grad(w, true) == FF_OK);
    ff_tensor *e2 = ff_embedding(w, ids), *s = e2 ? ff_sum(e2, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *gw = ff_grad(w);
    CHECK_TENSOR(gw, 2, SHAPE(4, 2), VALS(1, 1, 2, 2, 0, 0, 1, 1), 0);
    ff_tensor *bad = T(FF_I64, 1, SHAPE(2), VALS(0, 4)), *fi = T(FF_F32, 1, SHAPE(1), VALS(0));
    CHECK_ERROR(ff_embedding(w, bad) == NULL, FF_ERR_INDEX, "ff_embedding");
    CHECK_ERROR(ff_embedding(w, fi) == NULL, FF_ERR_INVALID, "integer");
    CHECK_ERROR(ff_embedding(idx, ids) == NULL, FF_ERR_INVALID, "weight");
    RELEASE(x, idx, r0, i1, r1, xt, rt, empty, re, oob, i2d, w, ids, e, id0, e0, e2, s, gw, bad, fi);
}

/* ---- gradients ------------------------------------------------------------------------ */
static ff_tensor *f_gather(int n, ff_tensor *const *in, void *user) { return ff_gather(in[0], 1, user); }
static ff_tensor *f_scatter(int n, ff_tensor *const *in, void *user) { return ff_scatter_add(in[0], 1, user, in[1]); }
static ff_tensor *f_index_select(int n, ff_tensor *const *in, void *user) { return ff_index_select(in[0], 0, user); }
static ff_tensor *f_embedding(int n, ff_tensor *const *in, void *user) { return ff_embedding(in[0], user); }

/* d/d(x, src) of sum(scatter_add(x, src) ** 2), recorded: second order through the
 * pair. gradcheck's finite-difference passes run without grad mode on plain inputs:
 * the first derivative is then taken on detached leaves. */
static ff_tensor *f_scatter_grad(int n, ff_tensor *const *in, void *user)
{
    bool track = ff_requires_grad(in[0]) && ff_requires_grad(in[1]); /* else a finite-difference pass */
    bool prev = ff_set_grad_enabled(true);
    ff_tensor *xs[2];
    for (int i = 0; i < 2; i++) {
        xs[i] = track ? ff_tensor_retain(in[i]) : ff_detach(in[i]);
        if (xs[i] && !track) ff_set_requires_grad(xs[i], true);
    }
    ff_tensor *r = xs[0] && xs[1] ? ff_scatter_add(xs[0], 1, user, xs[1]) : NULL;
    ff_tensor *sq = r ? ff_square(r) : NULL, *s = sq ? ff_sum(sq, 0, NULL, false) : NULL;
    ff_tensor *g[2] = {NULL, NULL};
    ff_backward_opts o = {.create_graph = track};
    if (s && ff_autograd_grad(s, NULL, 2, xs, g, &o)) g[0] = g[1] = NULL;
    ff_set_grad_enabled(prev);
    ff_tensor *out = g[0] && g[1] ? ff_concat(2, g, 1) : NULL;
    ff_tensor *all[] = {xs[0], xs[1], r, sq, s, g[0], g[1]};
    ff_test_release_all(all, sizeof all / sizeof *all);
    return out;
}

static void check_gradients(void)
{
    ff_gradcheck_opts o = gc_opts();
    ff_tensor *x = T(FF_F64, 2, SHAPE(2, 3), VALS(0.5, -1, 2, 3, 0.25, -0.75));
    ff_tensor *gidx = T(FF_I64, 2, SHAPE(2, 4), VALS(0, 2, 2, 1, 1, 1, 0, 2));
    CHECK(ff_gradcheck(f_gather, gidx, 1, &x, &o) == FF_OK);
    ff_tensor *src = T(FF_F64, 2, SHAPE(2, 3), VALS(1, 2, 3, -1, -2, -3));
    ff_tensor *sidx = T(FF_I64, 2, SHAPE(2, 2), VALS(2, 2, 0, 1)); /* smaller than src: padding path */
    ff_tensor *in[] = {x, src};
    CHECK(ff_gradcheck(f_scatter, sidx, 2, in, &o) == FF_OK);
    CHECK(ff_gradcheck(f_scatter_grad, sidx, 2, in, &o) == FF_OK);
    ff_tensor *rows = T(FF_I64, 1, SHAPE(3), VALS(1, 1, 0));
    CHECK(ff_gradcheck(f_index_select, rows, 1, &x, &o) == FF_OK);
    ff_tensor *ids = T(FF_I64, 2, SHAPE(2, 2), VALS(1, 0, 1, 1));
    CHECK(ff_gradcheck(f_embedding, ids, 1, &x, &o) == FF_OK);
    RELEASE(x, gidx, src, sidx, rows, ids);
}

FF_TEST_MAIN("ops_index", TEST(check_gather), TEST(check_scatter_add), TEST(check_index_select_embedding),
             TEST(check_gradients))
