/* nn modules: Linear (shape, values, init bounds, seeding), parameter registry and
 * dotted names, Sequential, custom modules, zero_grad, train/eval, Dropout, losses. */
#include <stdlib.h>

#include "ff_test.h"

static double sum_of(const ff_tensor *t)
{
    double v[4096];
    int64_t n = ff_tensor_numel(t);
    if (n > 4096 || ff_test_values(t, v, 4096)) return NAN;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    return s;
}

static void test_linear_forward_matches_hand_computation(void)
{
    ff_module *lin = ff_linear(3, 2, true, 7);
    CHECK(lin != NULL);
    CHECK(strcmp(ff_module_type_name(lin), "Linear") == 0);
    ff_tensor *w = ff_module_get_parameter(lin, "weight"), *b = ff_module_get_parameter(lin, "bias");
    CHECK(w && ff_tensor_ndim(w) == 2 && ff_tensor_dim(w, 0) == 2 && ff_tensor_dim(w, 1) == 3);
    CHECK(b && ff_tensor_ndim(b) == 1 && ff_tensor_dim(b, 0) == 2);
    double wv[6], bv[2];
    CHECK(ff_test_values(w, wv, 6) == 0 && ff_test_values(b, bv, 2) == 0);
    const double xv[6] = {1, 2, 3, -1, 0.5, 0};
    int64_t s2[2] = {2, 3};
    ff_tensor *x = ff_test_tensor(FF_F32, 2, s2, xv);
    ff_tensor *y = ff_module_forward(lin, x);
    double expect[4];
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < 2; o++) expect[r * 2 + o] = bv[o] + xv[r * 3] * wv[o * 3] + xv[r * 3 + 1] * wv[o * 3 + 1] + xv[r * 3 + 2] * wv[o * 3 + 2];
    int64_t ys[2] = {2, 2};
    CHECK_TENSOR(y, 2, ys, expect, 1e-5);
    /* a 1-D input works too (matmul semantics), and a wrong width is a clear error */
    ff_tensor *x1 = ff_select(x, 0, 1);
    ff_tensor *y1 = ff_module_forward(lin, x1);
    int64_t y1s[1] = {2};
    CHECK_TENSOR(y1, 1, y1s, expect + 2, 1e-5);
    int64_t bad_s[2] = {2, 4};
    ff_tensor *bad = ff_zeros(2, bad_s, FF_F32);
    CHECK_ERROR(ff_module_forward(lin, bad) == NULL, FF_ERR_INVALID, "last dim is 3");
    CHECK_ERROR(ff_linear(0, 2, true, 1) == NULL, FF_ERR_INVALID, "ff_linear");
    ff_tensor_release(bad), ff_tensor_release(x1), ff_tensor_release(y1);
    ff_tensor_release(x), ff_tensor_release(y), ff_tensor_release(w), ff_tensor_release(b);
    ff_module_release(lin);
}

static void test_linear_init_bounds_and_seeding(void)
{
    ff_module *a = ff_linear(100, 50, true, 123), *a2 = ff_linear(100, 50, true, 123), *c = ff_linear(100, 50, false, 124);
    CHECK(a && a2 && c);
    ff_tensor *w = ff_module_get_parameter(a, "weight"), *w2 = ff_module_get_parameter(a2, "weight");
    ff_tensor *b = ff_module_get_parameter(a, "bias"), *wc = ff_module_get_parameter(c, "weight");
    static double v[5000], v2[5000], vc[5000];
    CHECK(ff_test_values(w, v, 5000) == 0 && ff_test_values(w2, v2, 5000) == 0 && ff_test_values(wc, vc, 5000) == 0);
    double bound = 0.1, mx = 0, mean = 0;
    int same = 0, differ_from_c = 0;
    for (int i = 0; i < 5000; i++) {
        mx = fmax(mx, fabs(v[i]));
        mean += v[i] / 5000;
        same += v[i] == v2[i];
        differ_from_c += v[i] != vc[i];
    }
    CHECK(mx <= bound);
    CHECK(mx > 0.095); /* 5000 draws from U(-0.1, 0.1) reach past 0.095 (P(miss) ~ 0.95^5000) */
    CHECK(fabs(mean) < 0.01); /* sd of the mean is 0.0008 */
    CHECK(same == 5000);
    CHECK(differ_from_c > 4900);
    double bv[50];
    CHECK(ff_test_values(b, bv, 50) == 0);
    double bmax = 0;
    for (int i = 0; i < 50; i++) bmax = fmax(bmax, fabs(bv[i]));
    CHECK(bmax <= bound && bmax > 0.05);
    CHECK(ff_requires_grad(w) && ff_is_leaf(w) && ff_tensor_dtype(w) == FF_F32);
    CHECK_ERROR(ff_module_get_parameter(c, "bias") == NULL, FF_ERR_INVALID, "no parameter 'bias'");
    CHECK(ff_module_num_parameters(a) == 5050 && ff_module_num_parameters(c) == 5000);
    ff_tensor_release(w), ff_tensor_release(w2), ff_tensor_release(b), ff_tensor_release(wc);
    ff_module_release(a), ff_module_release(a2), ff_module_release(c);
}

typedef struct name_list {
    char names[8][32];
    ff_tensor *ts[8];
    int n;
} name_list;

static void collect(const char *name, ff_tensor *p, void *user)
{
    name_list *l = user;
    if (l->n < 8) {
        snprintf(l->names[l->n], 32, "%s", name);
        l->ts[l->n++] = p;
    }
}

static void test_sequential_names_and_forward(void)
{
    ff_module *seq = ff_sequential_take(3, (ff_module *[]){ff_linear(4, 3, true, 1), ff_relu_module(), ff_linear(3, 2, false, 3)});
    CHECK(seq && strcmp(ff_module_type_name(seq), "Sequential") == 0);
    name_list l = {0};
    CHECK(ff_module_named_parameters(seq, collect, &l) == 3);
    CHECK(l.n == 3 && !strcmp(l.names[0], "0.weight") && !strcmp(l.names[1], "0.bias") && !strcmp(l.names[2], "2.weight"));
    ff_tensor *ps[2];
    CHECK(ff_module_parameters(seq, ps, 2) == 3); /* count exceeds max: total returned */
    CHECK(ps[0] == l.ts[0] && ps[1] == l.ts[1]);
    CHECK(ff_module_num_parameters(seq) == 4 * 3 + 3 + 3 * 2);
    /* forward equals composing the children by hand */
    int64_t xs[2] = {5, 4};
    ff_tensor *x = ff_rand_uniform(2, xs, FF_F32, -1, 1, 9);
    ff_tensor *w0 = ff_module_get_parameter(seq, "0.weight"), *b0 = ff_module_get_parameter(seq, "0.bias");
    ff_tensor *w2 = ff_module_get_parameter(seq, "2.weight");
    ff_tensor *w0t = ff_mT(w0), *h = ff_matmul(x, w0t), *hb = ff_add(h, b0), *r = ff_relu(hb), *w2t = ff_mT(w2);
    ff_tensor *ref = ff_matmul(r, w2t), *y = ff_module_forward(seq, x);
    double rv[10];
    CHECK(ff_test_values(ref, rv, 10) == 0);
    int64_t ys[2] = {5, 2};
    CHECK_TENSOR(y, 2, ys, rv, 1e-6);
    ff_tensor *tmp[] = {x, w0, b0, w2, w0t, h, hb, r, w2t, ref, y};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    /* a NULL entry (failed constructor) makes take fail and release the rest */
    ff_clear_error();
    CHECK(ff_sequential_take(2, (ff_module *[]){ff_relu_module(), NULL}) == NULL);
    CHECK(ff_last_status() == FF_ERR_INVALID);
    ff_module_release(seq);
}

/* A custom module: y = scale * x + offset, with a child and user data. */
typedef struct affine {
    int *destroyed;
} affine;

static ff_tensor *affine_forward(ff_module *m, const ff_tensor *x, void *user)
{
    ff_tensor *s = ff_module_get_parameter(m, "scale"), *o = ff_module_get_parameter(m, "inner.offset");
    ff_tensor *xs = ff_mul(x, s), *y = ff_add(xs, o);
    ff_tensor_release(s), ff_tensor_release(o), ff_tensor_release(xs);
    return y;
}

static ff_tensor *offset_forward(ff_module *m, const ff_tensor *x, void *user) { return ff_tensor_retain((ff_tensor *)x); }

static void destroy_affine(void *user)
{
    affine *a = user;
    (*a->destroyed)++;
    free(a);
}

static void test_custom_module_registry(void)
{
    int destroyed = 0;
    affine *a = malloc(sizeof *a);
    a->destroyed = &destroyed;
    ff_module *m = ff_module_new("Affine", affine_forward, a, destroy_affine);
    ff_module *inner = ff_module_new("Offset", offset_forward, NULL, NULL);
    ff_tensor *scale = ff_full(1, (int64_t[]){2}, FF_F32, 3.0), *offset = ff_full(1, (int64_t[]){2}, FF_F32, 0.5);
    CHECK(ff_module_register_parameter(m, "scale", scale) == FF_OK);
    CHECK(ff_module_register_parameter(inner, "offset", offset) == FF_OK);
    CHECK(ff_module_register_module(m, "inner", inner) == FF_OK);
    CHECK(ff_requires_grad(scale));
    CHECK_ERROR(ff_module_register_parameter(m, "scale", offset) != FF_OK, FF_ERR_INVALID, "already a parameter");
    CHECK_ERROR(ff_module_register_parameter(m, "inner", offset) != FF_OK, FF_ERR_INVALID, "already a child");
    CHECK_ERROR(ff_module_register_parameter(m, "a.b", offset) != FF_OK, FF_ERR_INVALID, "no '.'");
    CHECK_ERROR(ff_module_register_module(inner, "up", m) != FF_OK, FF_ERR_INVALID, "cycle");
    ff_tensor *nonleaf = ff_mul_scalar(scale, 2.0);
    CHECK_ERROR(ff_module_register_parameter(m, "nl", nonleaf) != FF_OK, FF_ERR_INVALID, "not a leaf");
    /* a tied weight: registered twice, listed once */
    CHECK(ff_module_register_parameter(m, "tied", offset) == FF_OK);
    name_list l = {0};
    CHECK(ff_module_named_parameters(m, collect, &l) == 2);
    CHECK(l.n == 2 && !strcmp(l.names[0], "scale") && !strcmp(l.names[1], "tied"));
    ff_tensor *x = ff_full(1, (int64_t[]){2}, FF_F32, 2.0);
    ff_tensor *y = ff_module_forward(m, x);
    CHECK_TENSOR(y, 1, ((int64_t[]){2}), ((double[]){6.5, 6.5}), 1e-6);
    /* zero_grad drops every .grad of the tree */
    ff_tensor *s = ff_sum(y, 0, NULL, false);
    CHECK(ff_backward(s, NULL, NULL) == FF_OK);
    ff_tensor *g = ff_grad(offset);
    CHECK_TENSOR(g, 1, ((int64_t[]){2}), ((double[]){1, 1}), 0);
    ff_tensor_release(g);
    CHECK(ff_module_zero_grad(m) == FF_OK);
    g = ff_grad(offset);
    CHECK(g == NULL && (g = ff_grad(scale)) == NULL);
    /* train/eval propagate to children */
    CHECK(ff_module_is_training(m) && ff_module_is_training(inner));
    CHECK(ff_module_train(m, false) == FF_OK);
    CHECK(!ff_module_is_training(m) && !ff_module_is_training(inner));
    /* moving to the backend it is already on keeps values and ties */
    CHECK(ff_module_to(m, ff_tensor_backend(scale)) == FF_OK);
    CHECK(ff_module_parameters(m, NULL, 0) == 2);
    ff_tensor *y2 = ff_module_forward(m, x);
    CHECK_TENSOR(y2, 1, ((int64_t[]){2}), ((double[]){6.5, 6.5}), 1e-6);
    CHECK_ERROR(ff_loss_forward(m, x, x) == NULL, FF_ERR_INVALID, "takes one input");
    ff_tensor_release(s), ff_tensor_release(x), ff_tensor_release(y), ff_tensor_release(y2);
    ff_tensor_release(nonleaf), ff_tensor_release(scale), ff_tensor_release(offset);
    ff_module_release(inner);
    CHECK(destroyed == 0);
    ff_module_release(m);
    CHECK(destroyed == 1);
}

static void test_dropout_module(void)
{
    int64_t shape[1] = {4000};
    ff_tensor *x = ff_ones(1, shape, FF_F32);
    ff_module *d = ff_dropout_module(0.25, 5), *d2 = ff_dropout_module(0.25, 5);
    ff_tensor *y1 = ff_module_forward(d, x), *y2 = ff_module_forward(d, x), *z1 = ff_module_forward(d2, x);
    static double v1[4000], v2[4000], w1[4000];
    CHECK(ff_test_values(y1, v1, 4000) == 0 && ff_test_values(y2, v2, 4000) == 0 && ff_test_values(z1, w1, 4000) == 0);
    int zeros = 0, differ = 0, bad = 0, same_run = 0;
    for (int i = 0; i < 4000; i++) {
        zeros += v1[i] == 0;
        bad += !(v1[i] == 0 || fabs(v1[i] - 1 / 0.75) < 1e-6);
        differ += (v1[i] == 0) != (v2[i] == 0);
        same_run += v1[i] == w1[i];
    }
    CHECK(bad == 0);
    CHECK(zeros > 850 && zeros < 1150); /* 1000 expected, sd ~27 */
    CHECK(differ > 500);                /* successive calls draw fresh masks */
    CHECK(same_run == 4000);            /* same seed, same call index: same mask */
    ff_module_train(d, false);
    ff_tensor *e = ff_module_forward(d, x);
    CHECK_NEAR(sum_of(e), 4000, 0);
    CHECK_ERROR(ff_dropout_module(1.5, 0) == NULL, FF_ERR_INVALID, "p must be in [0, 1]");
    ff_tensor_release(x), ff_tensor_release(y1), ff_tensor_release(y2), ff_tensor_release(z1), ff_tensor_release(e);
    ff_module_release(d), ff_module_release(d2);
}

static void test_activations_and_losses(void)
{
    const double xv[4] = {-2, -0.5, 0, 1.5};
    int64_t s[1] = {4};
    ff_tensor *x = ff_test_tensor(FF_F32, 1, s, xv);
    ff_module *mods[] = {ff_relu_module(), ff_tanh_module(), ff_sigmoid_module(), ff_silu_module(),
                         ff_gelu_module(false), ff_identity()};
    double expect[6][4];
    for (int i = 0; i < 4; i++) {
        double v = xv[i], sg = 1 / (1 + exp(-v));
        expect[0][i] = v > 0 ? v : 0;
        expect[1][i] = tanh(v);
        expect[2][i] = sg;
        expect[3][i] = v * sg;
        expect[4][i] = 0.5 * v * (1 + erf(v / sqrt(2.0)));
        expect[5][i] = v;
    }
    for (int k = 0; k < 6; k++) {
        ff_tensor *y = ff_module_forward(mods[k], x);
        CHECK_TENSOR(y, 1, s, expect[k], 1e-5);
        ff_tensor_release(y);
        ff_module_release(mods[k]);
    }
    ff_module *sm = ff_softmax_module(-1);
    ff_tensor *p = ff_module_forward(sm, x);
    CHECK_NEAR(sum_of(p), 1.0, 1e-6);
    int64_t s3[3] = {2, 3, 4};
    ff_tensor *img = ff_zeros(3, s3, FF_F32);
    ff_module *fl = ff_flatten_module();
    ff_tensor *f = ff_module_forward(fl, img);
    CHECK(f && ff_tensor_ndim(f) == 2 && ff_tensor_dim(f, 0) == 2 && ff_tensor_dim(f, 1) == 12);
    /* losses: MSE by hand; CE of equal logits is log(C) */
    ff_module *mse = ff_mse_loss_module(), *ce = ff_cross_entropy_loss_module();
    ff_tensor *t = ff_zeros(1, s, FF_F32);
    ff_tensor *l1 = ff_loss_forward(mse, x, t);
    CHECK_TENSOR(l1, 0, NULL, ((double[]){(4 + 0.25 + 0 + 2.25) / 4}), 1e-6);
    int64_t ls[2] = {2, 5};
    ff_tensor *logits = ff_zeros(2, ls, FF_F32), *lab = ff_test_tensor(FF_I64, 1, (int64_t[]){2}, (double[]){1, 4});
    ff_tensor *l2 = ff_loss_forward(ce, logits, lab);
    CHECK_TENSOR(l2, 0, NULL, ((double[]){log(5.0)}), 1e-6);
    CHECK_ERROR(ff_module_forward(ce, logits) == NULL, FF_ERR_INVALID, "ff_loss_forward");
    ff_tensor *tmp[] = {x, p, img, f, t, l1, logits, lab, l2};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    ff_module_release(sm), ff_module_release(fl), ff_module_release(mse), ff_module_release(ce);
}

/* Moving a model from the default backend to a second one (cpu when the default is
 * cpu_blas, cpu_blas when it is cpu and was built): values, grads and ties come along, and
 * a step there gives the same numbers as on the first. */
static void test_module_to_other_backend(void)
{
    ff_backend *def = ff_backend_default();
    CHECK(def != NULL);
    if (!def) return;
    ff_backend *other = ff_backend_load(strcmp(ff_backend_name(def), "cpu") ? "cpu" : "cpu_blas");
    if (!other || other == def) {
        printf("test_module_to_other_backend: no second backend (cpu_blas not built), not tested\n");
        ff_clear_error();
        return;
    }
    ff_module *a = ff_linear(3, 2, true, 11), *b = ff_linear(3, 2, true, 11);
    ff_tensor *x = ff_rand_uniform(2, (int64_t[]){4, 3}, FF_F32, -1, 1, 3);
    ff_tensor *y = ff_module_forward(a, x), *l = ff_sum(y, 0, NULL, false);
    CHECK(ff_backward(l, NULL, NULL) == FF_OK);
    CHECK(ff_module_to(a, other) == FF_OK);
    ff_tensor *w = ff_module_get_parameter(a, "weight"), *g = ff_grad(w);
    CHECK(w && ff_tensor_backend(w) == other && ff_requires_grad(w) && ff_is_leaf(w));
    CHECK(g && ff_tensor_backend(g) == other);
    /* the same forward on both backends */
    ff_tensor *xo = ff_to(x, other), *ya = ff_module_forward(a, xo), *yb = ff_module_forward(b, x);
    double va[8], vb[8];
    CHECK(ff_test_values(ya, va, 8) == 0 && ff_test_values(yb, vb, 8) == 0);
    for (int i = 0; i < 8; i++) CHECK_NEAR(va[i], vb[i], 1e-5);
    ff_tensor *ps[2];
    ff_module_parameters(a, ps, 2);
    ff_sgd_opts o = ff_sgd_defaults(0.5);
    o.momentum = 0.9;
    ff_optimizer *opt = ff_sgd(ps, 2, &o);
    CHECK(ff_optimizer_step(opt) == FF_OK);
    double wv[6], gv[6];
    ff_tensor *w0 = ff_module_get_parameter(b, "weight");
    CHECK(ff_test_values(w, wv, 6) == 0 && ff_test_values(g, gv, 6) == 0);
    double w0v[6];
    CHECK(ff_test_values(w0, w0v, 6) == 0);
    for (int i = 0; i < 6; i++) CHECK_NEAR(wv[i], w0v[i] - 0.5 * gv[i], 1e-6);
    ff_optimizer_release(opt);
    ff_tensor *tmp[] = {x, y, l, w, g, xo, ya, yb, w0};
    for (size_t i = 0; i < sizeof tmp / sizeof tmp[0]; i++) ff_tensor_release(tmp[i]);
    ff_module_release(a), ff_module_release(b);
}

FF_TEST_MAIN("nn_modules", TEST(test_module_to_other_backend), TEST(test_linear_forward_matches_hand_computation), TEST(test_linear_init_bounds_and_seeding),
             TEST(test_sequential_names_and_forward), TEST(test_custom_module_registry), TEST(test_dropout_module),
             TEST(test_activations_and_losses))
