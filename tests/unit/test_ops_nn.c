/* Neural-net ops: softmax / log_softmax (fused and composed paths), cross_entropy,
 * mse_loss, one_hot, dropout. Expected values are closed-form; gradients are checked
 * against finite differences (ff_gradcheck, f64), softmax also to second order. */
#include "ff_impl.h" /* to hide the backend's fused softmax and test the composed path */
#include "ff_test.h"

static ff_tensor *T(ff_dtype dt, int nd, const int64_t *shape, const double *v) { return ff_test_tensor(dt, nd, shape, v); }

static ff_gradcheck_opts gc_opts(void)
{
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    return o;
}

/* ---- softmax ------------------------------------------------------------------------- */
static void check_softmax_values(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 3), VALS(1, 2, 3, 0, 0, 0));
    ff_tensor *y = ff_softmax(x, -1);
    double s = exp(1) + exp(2) + exp(3);
    CHECK_TENSOR(y, 2, SHAPE(2, 3), VALS(exp(1) / s, exp(2) / s, exp(3) / s, 1.0 / 3, 1.0 / 3, 1.0 / 3), 1e-6);
    ff_tensor *rows = y ? ff_sum(y, 1, (int[]){1}, false) : NULL;
    CHECK_TENSOR(rows, 1, SHAPE(2), VALS(1, 1), 1e-6);
    /* axis 0: columns [1, 0], [2, 0], [3, 0] */
    ff_tensor *y0 = ff_softmax(x, 0);
    double a = 1 / (1 + exp(-1.0)), b = 1 / (1 + exp(-2.0)), c = 1 / (1 + exp(-3.0));
    CHECK_TENSOR(y0, 2, SHAPE(2, 3), VALS(a, b, c, 1 - a, 1 - b, 1 - c), 1e-6);
    ff_tensor *xt = ff_mT(x), *yt = xt ? ff_softmax(xt, -1) : NULL; /* non-contiguous rows */
    CHECK_TENSOR(yt, 2, SHAPE(3, 2), VALS(a, 1 - a, b, 1 - b, c, 1 - c), 1e-6);
    ff_tensor_release(xt);
    ff_tensor_release(yt);
    ff_tensor *ls = ff_log_softmax(x, 1);
    double lse = log(s);
    CHECK_TENSOR(ls, 2, SHAPE(2, 3), VALS(1 - lse, 2 - lse, 3 - lse, -log(3), -log(3), -log(3)), 1e-5);
    ff_tensor_release(x);
    ff_tensor_release(y);
    ff_tensor_release(rows);
    ff_tensor_release(y0);
    ff_tensor_release(ls);
}

static void check_softmax_stable_and_edges(void)
{
    ff_tensor *x = T(FF_F32, 2, SHAPE(2, 2), VALS(1000, 0, 1000, 1000));
    ff_tensor *ls = ff_log_softmax(x, -1), *sm = ff_softmax(x, -1);
    CHECK_TENSOR(ls, 2, SHAPE(2, 2), VALS(0, -1000, -log(2), -log(2)), 1e-4);
    CHECK_TENSOR(sm, 2, SHAPE(2, 2), VALS(1, 0, 0.5, 0.5), 1e-6);
    /* integers promote to f32 */
    ff_tensor *xi = T(FF_I32, 1, SHAPE(2), VALS(0, 0));
    ff_tensor *yi = ff_softmax(xi, 0);
    CHECK(yi && ff_tensor_dtype(yi) == FF_F32);
    CHECK_TENSOR(yi, 1, SHAPE(2), VALS(0.5, 0.5), 1e-7);
    /* 0-d: one row of one element */
    ff_tensor *s0 = ff_scalar_tensor(3.0, FF_F64), *y00 = ff_softmax(s0, 0), *l00 = ff_log_softmax(s0, -1);
    CHECK_TENSOR(y00, 0, NULL, VALS(1), 0);
    CHECK_TENSOR(l00, 0, NULL, VALS(0), 0);
    /* empty and bad axis */
    ff_tensor *e = ff_zeros(2, SHAPE(0, 3), FF_F32), *ye = ff_softmax(e, 1);
    CHECK(ye && ff_tensor_numel(ye) == 0 && ff_tensor_shape(ye)[1] == 3);
    CHECK_ERROR(ff_softmax(x, 2) == NULL, FF_ERR_INVALID, "ff_softmax");
    CHECK_ERROR(ff_log_softmax(NULL, 0) == NULL, FF_ERR_INVALID, "ff_log_softmax");
    ff_tensor *tensors[] = {x, ls, sm, xi, yi, s0, y00, l00, e, ye};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ff_tensor_release(tensors[i]);
}

/* The backend without its optional softmax entry: the core composes it. */
static void check_softmax_composed(void)
{
    ff_tensor *x = T(FF_F64, 2, SHAPE(2, 3), VALS(1, 2, 3, 1000, 0, -1000));
    ff_backend *be = ff_tensor_backend(x);
    const ff_backend_vtable *orig = be->vt;
    ff_backend_vtable patched = *orig;
    patched.softmax = NULL;
    be->vt = &patched;
    CHECK(!ff_backend_has_softmax(be));
    ff_tensor *y = ff_softmax(x, 1), *ls = ff_log_softmax(x, 1);
    be->vt = orig;
    double s = exp(1) + exp(2) + exp(3);
    CHECK_TENSOR(y, 2, SHAPE(2, 3), VALS(exp(1) / s, exp(2) / s, exp(3) / s, 1, 0, 0), 1e-12);
    CHECK_TENSOR(ls, 2, SHAPE(2, 3), VALS(1 - log(s), 2 - log(s), 3 - log(s), 0, -1000, -2000), 1e-9);
    ff_tensor_release(x);
    ff_tensor_release(y);
    ff_tensor_release(ls);
}

static ff_tensor *f_softmax(int n, ff_tensor *const *in, void *user) { return ff_softmax(in[0], *(int *)user); }
static ff_tensor *f_log_softmax(int n, ff_tensor *const *in, void *user) { return ff_log_softmax(in[0], *(int *)user); }

/* d/dx of sum(softmax(x) * w), recorded (create_graph), so gradcheck of this function
 * checks the second derivative. gradcheck's finite-difference passes run without grad
 * mode on plain inputs: the first derivative is then taken on a detached leaf. */
static ff_tensor *f_softmax_grad(int n, ff_tensor *const *in, void *user)
{
    bool log = *(bool *)user, track = ff_requires_grad(in[0]);
    bool prev = ff_set_grad_enabled(true);
    ff_tensor *x = track ? ff_tensor_retain(in[0]) : ff_detach(in[0]);
    if (x && !track) ff_set_requires_grad(x, true);
    ff_tensor *y = x ? (log ? ff_log_softmax(x, -1) : ff_softmax(x, -1)) : NULL;
    ff_tensor *w = ff_test_tensor(FF_F64, 2, SHAPE(2, 3), VALS(0.3, -1.2, 0.7, 2.0, 0.1, -0.4));
    ff_tensor *yw = y && w ? ff_mul(y, w) : NULL, *s = yw ? ff_sum(yw, 0, NULL, false) : NULL;
    ff_tensor *g = NULL;
    ff_backward_opts o = {.create_graph = track};
    if (s && ff_autograd_grad(s, NULL, 1, &x, &g, &o)) g = NULL;
    ff_set_grad_enabled(prev);
    ff_tensor_release(x);
    ff_tensor_release(y);
    ff_tensor_release(w);
    ff_tensor_release(yw);
    ff_tensor_release(s);
    return g;
}

static void check_softmax_gradients(void)
{
    ff_tensor *x = T(FF_F64, 2, SHAPE(2, 3), VALS(0.1, -0.5, 1.2, 2.0, 0.3, -1.0));
    ff_gradcheck_opts o = gc_opts();
    int axes[] = {1, 0, -1};
    for (int i = 0; i < 3; i++) {
        CHECK(ff_gradcheck(f_softmax, &axes[i], 1, &x, &o) == FF_OK);
        CHECK(ff_gradcheck(f_log_softmax, &axes[i], 1, &x, &o) == FF_OK);
    }
    bool log = false;
    CHECK(ff_gradcheck(f_softmax_grad, &log, 1, &x, &o) == FF_OK);
    log = true;
    CHECK(ff_gradcheck(f_softmax_grad, &log, 1, &x, &o) == FF_OK);
    /* one recorded node, whatever path computed it */
    CHECK(ff_set_requires_grad(x, true) == FF_OK);
    ff_tensor *y = ff_softmax(x, 1);
    CHECK(y && ff_grad_fn_name(y) && strcmp(ff_grad_fn_name(y), "softmax") == 0);
    ff_tensor_release(y);
    ff_tensor_release(x);
}

/* ---- losses ------------------------------------------------------------------------ */
static void check_cross_entropy(void)
{
    ff_tensor *logits = T(FF_F64, 2, SHAPE(2, 3), VALS(1, 2, 3, 1, 1, 1));
    ff_tensor *tgt = T(FF_I64, 1, SHAPE(2), VALS(2, 0));
    ff_tensor *loss = ff_cross_entropy(logits, tgt);
    double lse = log(exp(1) + exp(2) + exp(3));
    double want = 0.5 * ((lse - 3) + log(3));
    CHECK_TENSOR(loss, 0, NULL, VALS(want), 1e-12);
    /* the gradient: (softmax - one_hot) / N */
    CHECK(ff_set_requires_grad(logits, true) == FF_OK);
    ff_tensor *l2 = ff_cross_entropy(logits, tgt);
    CHECK(l2 && ff_backward(l2, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(logits);
    double e1 = exp(1 - lse), e2 = exp(2 - lse), e3 = exp(3 - lse);
    CHECK_TENSOR(g, 2, SHAPE(2, 3), VALS(e1 / 2, e2 / 2, (e3 - 1) / 2, (1.0 / 3 - 1) / 2, 1.0 / 6, 1.0 / 6), 1e-12);
    /* [C] logits with a 0-d target, i32 targets */
    ff_tensor *l1 = T(FF_F32, 1, SHAPE(3), VALS(1, 2, 3)), *t0 = T(FF_I32, 0, NULL, VALS(1));
    ff_tensor *loss1 = ff_cross_entropy(l1, t0);
    CHECK_TENSOR(loss1, 0, NULL, VALS(lse - 2), 1e-5);
    /* errors */
    ff_tensor *bad_t = T(FF_I64, 1, SHAPE(2), VALS(1, 3)), *ft = T(FF_F32, 1, SHAPE(2), VALS(1, 0));
    ff_tensor *short_t = T(FF_I64, 1, SHAPE(3), VALS(0, 0, 0));
    CHECK_ERROR(ff_cross_entropy(logits, bad_t) == NULL, FF_ERR_INDEX, "ff_cross_entropy");
    CHECK_ERROR(ff_cross_entropy(logits, ft) == NULL, FF_ERR_INVALID, "integer");
    CHECK_ERROR(ff_cross_entropy(logits, short_t) == NULL, FF_ERR_INVALID, "ff_cross_entropy");
    ff_tensor *tensors[] = {logits, tgt, loss, l2, g, l1, t0, loss1, bad_t, ft, short_t};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ff_tensor_release(tensors[i]);
}

static ff_tensor *f_ce(int n, ff_tensor *const *in, void *user) { return ff_cross_entropy(in[0], user); }
static ff_tensor *f_mse(int n, ff_tensor *const *in, void *user) { return ff_mse_loss(in[0], in[1]); }

static void check_loss_gradients(void)
{
    ff_tensor *logits = T(FF_F64, 2, SHAPE(3, 4), VALS(0.2, -1, 0.5, 3, 1, 1, 0, -2, 0.3, 0.3, 0.9, -0.1));
    ff_tensor *tgt = T(FF_I64, 1, SHAPE(3), VALS(3, 0, 2));
    ff_gradcheck_opts o = gc_opts();
    CHECK(ff_gradcheck(f_ce, tgt, 1, &logits, &o) == FF_OK);
    ff_tensor *p = T(FF_F64, 2, SHAPE(2, 2), VALS(1, 2, 3, 4)), *q = T(FF_F64, 2, SHAPE(2, 2), VALS(0.5, 2, -1, 7));
    ff_tensor *in[] = {p, q};
    CHECK(ff_gradcheck(f_mse, NULL, 2, in, &o) == FF_OK);
    ff_tensor_release(logits);
    ff_tensor_release(tgt);
    ff_tensor_release(p);
    ff_tensor_release(q);
}

static void check_mse(void)
{
    ff_tensor *p = T(FF_F32, 1, SHAPE(3), VALS(1, 2, 3)), *t = T(FF_F32, 1, SHAPE(3), VALS(1, 0, 0));
    ff_tensor *l = ff_mse_loss(p, t);
    CHECK_TENSOR(l, 0, NULL, VALS(13.0 / 3), 1e-6);
    ff_tensor *pi = T(FF_I32, 1, SHAPE(3), VALS(1, 2, 3)), *li = ff_mse_loss(pi, t);
    CHECK(li && ff_dtype_is_float(ff_tensor_dtype(li)));
    CHECK_TENSOR(li, 0, NULL, VALS(13.0 / 3), 1e-6);
    ff_tensor *t2 = T(FF_F32, 2, SHAPE(1, 3), VALS(1, 0, 0));
    CHECK_ERROR(ff_mse_loss(p, t2) == NULL, FF_ERR_INVALID, "same shape");
    ff_tensor_release(p);
    ff_tensor_release(t);
    ff_tensor_release(l);
    ff_tensor_release(pi);
    ff_tensor_release(li);
    ff_tensor_release(t2);
}

static void check_one_hot(void)
{
    ff_tensor *idx = T(FF_I64, 2, SHAPE(2, 2), VALS(0, 2, 1, 1));
    ff_tensor *oh = ff_one_hot(idx, -1);
    CHECK(oh && ff_tensor_dtype(oh) == FF_I64);
    CHECK_TENSOR(oh, 3, SHAPE(2, 2, 3), VALS(1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0), 0);
    ff_tensor *i32 = T(FF_I32, 1, SHAPE(2), VALS(3, 0)), *oh4 = ff_one_hot(i32, 5);
    CHECK_TENSOR(oh4, 2, SHAPE(2, 5), VALS(0, 0, 0, 1, 0, 1, 0, 0, 0, 0), 0);
    ff_tensor *s = T(FF_I64, 0, NULL, VALS(1)), *ohs = ff_one_hot(s, 2);
    CHECK_TENSOR(ohs, 1, SHAPE(2), VALS(0, 1), 0);
    ff_tensor *neg = T(FF_I64, 1, SHAPE(2), VALS(0, -1)), *f = T(FF_F32, 1, SHAPE(1), VALS(0));
    ff_tensor *empty = ff_zeros(1, SHAPE(0), FF_I64), *ohe = ff_one_hot(empty, 4);
    CHECK(ohe && ff_tensor_ndim(ohe) == 2 && ff_tensor_shape(ohe)[0] == 0 && ff_tensor_shape(ohe)[1] == 4);
    CHECK_ERROR(ff_one_hot(i32, 3) == NULL, FF_ERR_INDEX, "ff_one_hot");
    CHECK_ERROR(ff_one_hot(neg, 3) == NULL, FF_ERR_INDEX, "ff_one_hot");
    CHECK_ERROR(ff_one_hot(f, 3) == NULL, FF_ERR_INVALID, "integer");
    CHECK_ERROR(ff_one_hot(empty, -1) == NULL, FF_ERR_INVALID, "empty");
    ff_tensor *tensors[] = {idx, oh, i32, oh4, s, ohs, neg, f, empty, ohe};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ff_tensor_release(tensors[i]);
}

/* ---- dropout ------------------------------------------------------------------------- */
static void check_dropout(void)
{
    enum { N = 100000 };
    ff_tensor *x = ff_ones(1, SHAPE(N), FF_F32);
    ff_tensor *a = ff_dropout(x, 0.3, true, 42), *b = ff_dropout(x, 0.3, true, 42), *c = ff_dropout(x, 0.3, true, 43);
    CHECK(a && b && c);
    static float va[N], vb[N], vc[N];
    CHECK(ff_tensor_to_host(a, va, sizeof va) == FF_OK && ff_tensor_to_host(b, vb, sizeof vb) == FF_OK &&
          ff_tensor_to_host(c, vc, sizeof vc) == FF_OK);
    double sum = 0;
    int zeros = 0, other = 0, same = 1, differ = 0;
    for (int i = 0; i < N; i++) {
        sum += va[i];
        zeros += va[i] == 0.0f;
        other += va[i] != 0.0f && fabsf(va[i] - (float)(1 / 0.7)) > 1e-6f;
        same &= va[i] == vb[i];
        differ += va[i] != vc[i];
    }
    CHECK_NEAR(sum / N, 1.0, 0.01);
    CHECK_NEAR((double)zeros / N, 0.3, 0.01);
    CHECK(other == 0);
    CHECK(same);
    CHECK(differ > N / 10);
    /* identity cases return x itself; p = 1 zeroes */
    ff_tensor *id = ff_dropout(x, 0.3, false, 1), *p0 = ff_dropout(x, 0.0, true, 1);
    CHECK(id == x && p0 == x);
    ff_tensor *small = T(FF_F64, 1, SHAPE(3), VALS(1, -2, 3)), *p1 = ff_dropout(small, 1.0, true, 1);
    CHECK_TENSOR(p1, 1, SHAPE(3), VALS(0, 0, 0), 0);
    CHECK_ERROR(ff_dropout(x, 1.5, true, 1) == NULL, FF_ERR_INVALID, "ff_dropout");
    CHECK_ERROR(ff_dropout(x, NAN, true, 1) == NULL, FF_ERR_INVALID, "ff_dropout");
    /* the gradient is the scaled mask: for x = 1 it equals the output */
    ff_tensor *xs = ff_ones(1, SHAPE(64), FF_F64);
    CHECK(ff_set_requires_grad(xs, true) == FF_OK);
    ff_tensor *d = ff_dropout(xs, 0.5, true, 9), *s = d ? ff_sum(d, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(xs);
    double vd[64], vg[64];
    CHECK(ff_test_values(d, vd, 64) == 0 && ff_test_values(g, vg, 64) == 0);
    int match = 1;
    for (int i = 0; i < 64; i++) match &= vd[i] == vg[i] && (vg[i] == 0 || vg[i] == 2);
    CHECK(match);
    ff_tensor *tensors[] = {x, a, b, c, id, p0, small, p1, xs, d, s, g};
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) ff_tensor_release(tensors[i]);
}

FF_TEST_MAIN("ops_nn", TEST(check_softmax_values), TEST(check_softmax_stable_and_edges), TEST(check_softmax_composed),
             TEST(check_softmax_gradients), TEST(check_cross_entropy), TEST(check_loss_gradients), TEST(check_mse),
             TEST(check_one_hot), TEST(check_dropout))
