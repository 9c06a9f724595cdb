/* ff_conv and ff_conv_transpose (ops/conv_nd.c, conv_transpose.c): 1 to 3 spatial dims
 * with stride, padding, dilation and groups against a naive loop, on the default
 * backend's entries (cpu_blas: oneDNN, f32) and on the composition; conv_transpose as the
 * adjoint of conv; gradients by ff_gradcheck (f64); empty batches; error messages. */
#include <math.h>
#include <stdlib.h>

#include "ff_impl.h" /* ff_ops_force_compose */
#include "ff_test.h"

/* One problem: nd spatial dims (unused dims of size 1), x [N, C, S], w [O, C / G, K]. */
typedef struct prob {
    int nd;
    int64_t n, c, o, g, s[3], k[3];
    ff_conv_opts opts;
} prob;

static int64_t out_size(const prob *p, int d)
{
    const ff_conv_opts *o = &p->opts;
    return (p->s[d] + 2 * o->padding[d] - o->dilation[d] * (p->k[d] - 1) - 1) / o->stride[d] + 1;
}

static int64_t numel(int nd, const int64_t *v)
{
    int64_t r = 1;
    for (int d = 0; d < nd; d++) r *= v[d];
    return r;
}

/* y = conv(x, w) + b by the definition, in double; spatial dims past nd have size 1. */
static void naive(const prob *p, const double *x, const double *w, const double *b, double *y)
{
    int64_t os[3] = {1, 1, 1}, s[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pd[3] = {0}, dl[3] = {1, 1, 1};
    for (int d = 0; d < p->nd; d++)
        os[d] = out_size(p, d), s[d] = p->s[d], k[d] = p->k[d], st[d] = p->opts.stride[d],
        pd[d] = p->opts.padding[d], dl[d] = p->opts.dilation[d];
    int64_t cg = p->c / p->g, og = p->o / p->g, ks = k[0] * k[1] * k[2], ss = s[0] * s[1] * s[2];
    for (int64_t n = 0; n < p->n; n++)
        for (int64_t o = 0; o < p->o; o++)
            for (int64_t i0 = 0; i0 < os[0]; i0++)
                for (int64_t i1 = 0; i1 < os[1]; i1++)
                    for (int64_t i2 = 0; i2 < os[2]; i2++) {
                        double acc = b ? b[o] : 0;
                        for (int64_t c = 0; c < cg; c++)
                            for (int64_t q = 0; q < ks; q++) {
                                int64_t q0 = q / (k[1] * k[2]), q1 = q / k[2] % k[1], q2 = q % k[2];
                                int64_t r0 = i0 * st[0] + q0 * dl[0] - pd[0], r1 = i1 * st[1] + q1 * dl[1] - pd[1],
                                        r2 = i2 * st[2] + q2 * dl[2] - pd[2];
                                if (r0 < 0 || r0 >= s[0] || r1 < 0 || r1 >= s[1] || r2 < 0 || r2 >= s[2]) continue;
                                int64_t xc = o / og * cg + c;
                                acc += x[(n * p->c + xc) * ss + (r0 * s[1] + r1) * s[2] + r2] * w[(o * cg + c) * ks + q];
                            }
                        y[(((n * p->o + o) * os[0] + i0) * os[1] + i1) * os[2] + i2] = acc;
                    }
}

static void shapes(const prob *p, int64_t *xs, int64_t *ws, int64_t *ys)
{
    xs[0] = p->n, xs[1] = p->c, ws[0] = p->o, ws[1] = p->c / p->g, ys[0] = p->n, ys[1] = p->o;
    for (int d = 0; d < p->nd; d++) xs[2 + d] = p->s[d], ws[2 + d] = p->k[d], ys[2 + d] = out_size(p, d);
}

static const prob PROBS[] = {
    {1, 2, 4, 6, 2, {11}, {3}, {{2}, {1}, {2}, {0}, 2}},
    {1, 2, 3, 3, 3, {7}, {4}, {{1}, {2}, {1}, {0}, 3}},
    {2, 2, 4, 6, 2, {7, 6}, {3, 2}, {{2, 1}, {1, 2}, {2, 1}, {0, 0}, 2}},
    {2, 1, 6, 6, 6, {9, 8}, {3, 3}, {{2, 2}, {1, 1}, {1, 1}, {0, 0}, 6}}, /* depthwise */
    {2, 2, 3, 4, 1, {6, 5}, {2, 3}, {{1, 2}, {0, 1}, {3, 1}, {0, 0}, 1}},
    {3, 1, 4, 2, 2, {4, 5, 3}, {2, 3, 2}, {{1, 2, 1}, {1, 0, 1}, {1, 1, 2}, {0, 0, 0}, 2}},
};

static void check_against_naive(ff_dtype dt, double tol)
{
    for (size_t i = 0; i < sizeof PROBS / sizeof *PROBS; i++) {
        const prob *p = &PROBS[i];
        int64_t xs[5], ws[5], ys[5];
        shapes(p, xs, ws, ys);
        int64_t nx = numel(2 + p->nd, xs), nw = numel(2 + p->nd, ws), ny = numel(2 + p->nd, ys);
        ff_tensor *x = ff_rand_normal(2 + p->nd, xs, dt, 0, 1, 100 + i), *w = ff_rand_normal(2 + p->nd, ws, dt, 0, 1, 200 + i);
        ff_tensor *b = ff_rand_normal(1, &p->o, dt, 0, 1, 300 + i);
        double *xv = malloc(sizeof(double) * nx), *wv = malloc(sizeof(double) * nw), bv[8], *ref = malloc(sizeof(double) * ny);
        CHECK(xv && wv && ref && ff_test_values(x, xv, nx) == 0 && ff_test_values(w, wv, nw) == 0 &&
              ff_test_values(b, bv, p->o) == 0);
        naive(p, xv, wv, bv, ref);
        for (int compose = 0; compose < 2; compose++) {
            ff_ops_force_compose(FF_KIND_CONV2D, compose);
            ff_tensor *y = ff_conv(x, w, b, &p->opts);
            CHECK_TENSOR(y, 2 + p->nd, ys, ref, tol);
            ff_tensor_release(y);
        }
        ff_ops_force_compose(FF_KIND_CONV2D, false);
        free(xv), free(wv), free(ref);
        RELEASE(x, w, b);
    }
}

static void check_naive_f32(void) { check_against_naive(FF_F32, 1e-4); }
static void check_naive_f64(void) { check_against_naive(FF_F64, 1e-10); }

static double dot(const ff_tensor *a, const ff_tensor *b)
{
    ff_tensor *m = ff_mul(a, b), *s = m ? ff_sum(m, 0, NULL, false) : NULL;
    double v = NAN;
    CHECK(s && ff_test_values(s, &v, 1) == 0);
    RELEASE(m, s);
    return v;
}

/* <conv(x, w), y> = <x, conv_transpose(y, w)>: the transposed convolution is the adjoint,
 * with output_padding making its output x's size where the stride leaves rows over. */
static void check_transpose_is_adjoint(void)
{
    for (int compose = 0; compose < 2; compose++) {
        ff_ops_force_compose(FF_KIND_CONV2D, compose);
        for (size_t i = 0; i < sizeof PROBS / sizeof *PROBS; i++) {
            prob p = PROBS[i];
            int64_t xs[5], ws[5], ys[5];
            shapes(&p, xs, ws, ys);
            for (int d = 0; d < p.nd; d++) { /* the rows the last window leaves over */
                int64_t reach = (ys[2 + d] - 1) * p.opts.stride[d] + p.opts.dilation[d] * (p.k[d] - 1) + 1;
                p.opts.output_padding[d] = p.s[d] + 2 * p.opts.padding[d] - reach;
            }
            ff_tensor *x = ff_rand_normal(2 + p.nd, xs, FF_F32, 0, 1, 1 + i), *w = ff_rand_normal(2 + p.nd, ws, FF_F32, 0, 1, 2 + i);
            ff_tensor *y = ff_rand_normal(2 + p.nd, ys, FF_F32, 0, 1, 3 + i);
            ff_tensor *cx = ff_conv(x, w, NULL, &p.opts), *ty = ff_conv_transpose(y, w, NULL, &p.opts);
            CHECK(cx && ty && ff_tensor_ndim(ty) == 2 + p.nd);
            for (int d = 0; ty && d < 2 + p.nd; d++) CHECK(ff_tensor_dim(ty, d) == xs[d]);
            if (cx && ty) {
                double a = dot(cx, y), b = dot(x, ty);
                CHECK(fabs(a - b) <= 1e-4 * (fabs(a) + 1));
            }
            RELEASE(x, w, y, cx, ty);
        }
    }
    ff_ops_force_compose(FF_KIND_CONV2D, false);
}

static ff_tensor *f_conv(int n, ff_tensor *const *in, void *u) { return ff_conv(in[0], in[1], n > 2 ? in[2] : NULL, u); }
static ff_tensor *f_conv_t(int n, ff_tensor *const *in, void *u)
{
    return ff_conv_transpose(in[0], in[1], n > 2 ? in[2] : NULL, u);
}

static void check_gradients(void)
{
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    const prob *cases[] = {&PROBS[0], &PROBS[2], &PROBS[5]};
    for (int i = 0; i < 3; i++) {
        const prob *p = cases[i];
        int64_t xs[5], ws[5], ys[5], tw[5];
        shapes(p, xs, ws, ys);
        ff_tensor *x = ff_rand_normal(2 + p->nd, xs, FF_F64, 0, 1, 7), *w = ff_rand_normal(2 + p->nd, ws, FF_F64, 0, 1, 8);
        ff_tensor *b = ff_rand_normal(1, &p->o, FF_F64, 0, 1, 9);
        CHECK(ff_gradcheck(f_conv, (void *)&p->opts, 3, (ff_tensor *[]){x, w, b}, &o) == FF_OK);
        /* transposed: x plays y [N, O, OUT], w [O, C / G, K] (as conv's), bias [C] */
        for (int d = 0; d < 2 + p->nd; d++) tw[d] = ws[d];
        ff_tensor *xt = ff_rand_normal(2 + p->nd, ys, FF_F64, 0, 1, 10), *bt = ff_rand_normal(1, &p->c, FF_F64, 0, 1, 11);
        ff_tensor *wt = ff_rand_normal(2 + p->nd, tw, FF_F64, 0, 1, 12);
        CHECK(ff_gradcheck(f_conv_t, (void *)&p->opts, 3, (ff_tensor *[]){xt, wt, bt}, &o) == FF_OK);
        RELEASE(x, w, b, xt, bt, wt);
    }
}

static void check_empty_batch(void)
{
    const prob *p = &PROBS[3];
    int64_t xs[4], ws[4], ys[4];
    shapes(p, xs, ws, ys);
    xs[0] = ys[0] = 0;
    ff_tensor *x = ff_zeros(4, xs, FF_F32), *w = ff_rand_normal(4, ws, FF_F32, 0, 1, 1);
    CHECK(ff_set_requires_grad(w, true) == FF_OK);
    ff_tensor *y = ff_conv(x, w, NULL, &p->opts), *s = y ? ff_sum(y, 0, NULL, false) : NULL;
    CHECK(y && ff_tensor_dim(y, 0) == 0 && ff_tensor_dim(y, 1) == p->o && ff_tensor_dim(y, 2) == ys[2]);
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    double g[6 * 9];
    ff_tensor *gw = ff_grad(w);
    CHECK(gw && ff_test_values(gw, g, 6 * 9) == 0 && g[0] == 0 && g[6 * 9 - 1] == 0);
    RELEASE(x, w, y, s, gw);
}

static void check_errors(void)
{
    ff_tensor *x = ff_zeros(4, SHAPE(1, 4, 5, 5), FF_F32), *w = ff_zeros(4, SHAPE(4, 3, 3, 3), FF_F32);
    ff_tensor *w2 = ff_zeros(4, SHAPE(3, 2, 3, 3), FF_F32), *x1 = ff_zeros(3, SHAPE(1, 4, 5), FF_F32);
    ff_tensor *w4 = ff_zeros(4, SHAPE(4, 2, 3, 3), FF_F32);
    ff_conv_opts o = {{1, 1}, {0, 0}, {1, 1}, {0, 0}, 2};
    CHECK_ERROR(ff_conv(x, w, NULL, &o) == NULL, FF_ERR_INVALID, "ff_conv: x [1, 4, 5, 5] has 4 channels but w [4, 3, 3, 3] expects 6 (groups 2)");
    CHECK_ERROR(ff_conv(x, w2, NULL, &o) == NULL, FF_ERR_INVALID, "w [3, 2, 3, 3]'s dim 0 is not divisible by groups 2");
    CHECK_ERROR(ff_conv(x1, w2, NULL, &o) == NULL, FF_ERR_INVALID, "ff_conv: expected x [N, C, S...]");
    o.groups = 0;
    CHECK_ERROR(ff_conv(x, w2, NULL, &o) == NULL, FF_ERR_INVALID, "ff_conv: groups 0 must be >= 1");
    o.groups = 2, o.dilation[1] = 0;
    CHECK_ERROR(ff_conv(x, w4, NULL, &o) == NULL, FF_ERR_INVALID, "ff_conv: dilation (1, 0) must be >= 1");
    o.dilation[1] = 3;
    CHECK_ERROR(ff_conv(x, w4, NULL, &o) == NULL, FF_ERR_INVALID, "kernel (3, 7) (dilated) is larger than the padded input (5, 5)");
    o.groups = 1, o.dilation[1] = 1, o.stride[0] = 2, o.output_padding[0] = 2;
    CHECK_ERROR(ff_conv_transpose(x, w, NULL, &o) == NULL, FF_ERR_INVALID,
                "ff_conv_transpose: output_padding 2 in spatial dim 0 must be smaller than stride (2) or dilation (1)");
    CHECK_ERROR(ff_conv(x, w, NULL, NULL) == NULL, FF_ERR_INVALID, "ff_conv: x, w and the options must not be NULL");
    RELEASE(x, w, w2, x1, w4);
}

/* y = conv(x, w) grouped and dilated, z = conv_transpose(y, w), and the gradients of
 * sum(y) + sum(z^2) to x and w, into out[0..3] (numel each at most cap). */
enum { GP_MAX = 8 * 64 * 20 * 20 }; /* y's size, the largest of the four */
static void grouped_pass(ff_tensor *x, ff_tensor *w, double (*out)[GP_MAX], int64_t cap)
{
    ff_conv_opts o = {{1, 1}, {2, 2}, {2, 2}, {0, 0}, 4};
    ff_tensor *y = ff_conv(x, w, NULL, &o), *z = y ? ff_conv_transpose(y, w, NULL, &o) : NULL;
    ff_tensor *zz = z ? ff_mul(z, z) : NULL, *s1 = y ? ff_sum(y, 0, NULL, false) : NULL;
    ff_tensor *s2 = zz ? ff_sum(zz, 0, NULL, false) : NULL, *l = s1 && s2 ? ff_add(s1, s2) : NULL;
    CHECK(l && ff_backward(l, NULL, NULL) == FF_OK);
    ff_tensor *gx = ff_grad(x), *gw = ff_grad(w);
    CHECK(ff_test_values(y, out[0], cap) == 0 && ff_test_values(z, out[1], cap) == 0 &&
          ff_test_values(gx, out[2], cap) == 0 && ff_test_values(gw, out[3], cap) == 0);
    CHECK(ff_zero_grad(x) == FF_OK && ff_zero_grad(w) == FF_OK);
    RELEASE(y, z, zz, s1, s2, l, gx, gw);
}

/* Large enough for cpu_blas to split the passes over its threads (the _2threads run):
 * the entries agree with the composition. */
static void check_grouped_entries_threads(void)
{
    enum { NX = 8 * 32 * 20 * 20 };
    ff_tensor *x = ff_rand_normal(4, SHAPE(8, 32, 20, 20), FF_F32, 0, 1, 61);
    ff_tensor *w = ff_rand_normal(4, SHAPE(64, 8, 3, 3), FF_F32, 0, 1, 62);
    CHECK(ff_set_requires_grad(x, true) == FF_OK && ff_set_requires_grad(w, true) == FF_OK);
    static double r[2][4][GP_MAX];
    int64_t n[4] = {GP_MAX, NX, NX, 64 * 8 * 9};
    for (int c = 0; c < 2; c++) {
        ff_ops_force_compose(FF_KIND_CONV2D, c);
        grouped_pass(x, w, r[c], GP_MAX);
    }
    ff_ops_force_compose(FF_KIND_CONV2D, false);
    for (int k = 0; k < 4; k++) {
        double worst = 0, scale = 0;
        for (int64_t i = 0; i < n[k]; i++) scale = fmax(scale, fabs(r[1][k][i]));
        for (int64_t i = 0; i < n[k]; i++) worst = fmax(worst, fabs(r[0][k][i] - r[1][k][i]));
        CHECK(worst <= 1e-5 * scale);
    }
    RELEASE(x, w);
}

/* The modules: torch.nn's parameter shapes, init bound, forward = ff_conv with them. */
static void check_modules(void)
{
    ff_conv_opts o = {{2, 1}, {1, 0}, {1, 2}, {1, 0}, 2};
    int64_t k[2] = {3, 2};
    for (int t = 0; t < 2; t++) {
        ff_module *m = t ? ff_conv_transpose_module(2, 4, 6, k, &o, true, 5) : ff_conv_module(2, 4, 6, k, &o, true, 5);
        ff_tensor *ps[2] = {NULL, NULL};
        CHECK(m && ff_module_parameters(m, ps, 2) == 2);
        if (!m) continue;
        CHECK(ff_tensor_dim(ps[0], 0) == (t ? 4 : 6) && ff_tensor_dim(ps[0], 1) == (t ? 3 : 2) &&
              ff_tensor_dim(ps[0], 2) == 3 && ff_tensor_dim(ps[0], 3) == 2 && ff_tensor_dim(ps[1], 0) == 6);
        double wv[72], bound = 1.0 / sqrt((t ? 3.0 : 2.0) * 6), most = 0;
        CHECK(ff_test_values(ps[0], wv, 72) == 0);
        for (int i = 0; i < 72; i++) most = fmax(most, fabs(wv[i]));
        CHECK(most <= bound && most > 0.5 * bound);
        ff_tensor *x = ff_rand_normal(4, t ? SHAPE(2, 4, 3, 4) : SHAPE(2, 4, 7, 6), FF_F32, 0, 1, 9);
        ff_tensor *y = ff_module_forward(m, x);
        ff_tensor *want = t ? ff_conv_transpose(x, ps[0], ps[1], &o) : ff_conv(x, ps[0], ps[1], &o);
        ff_tensor *d = y && want ? ff_sub(y, want) : NULL, *a = d ? ff_abs(d) : NULL;
        ff_tensor *mx = a ? ff_amax(a, 0, NULL, false) : NULL;
        double diff = 1;
        CHECK(mx && ff_test_values(mx, &diff, 1) == 0 && diff == 0);
        ff_tensor *xbad = ff_zeros(3, SHAPE(2, 4, 7), FF_F32);
        CHECK_ERROR(ff_module_forward(m, xbad) == NULL, FF_ERR_INVALID, t ? "ConvTranspose2d expects x [N, 4, ...] with 2 spatial dims"
                                                                          : "Conv2d expects x [N, 4, ...] with 2 spatial dims");
        RELEASE(x, y, want, d, a, mx, xbad);
        ff_module_release(m);
    }
    o.groups = 3;
    CHECK_ERROR(ff_conv_module(2, 4, 6, k, &o, true, 5) == NULL, FF_ERR_INVALID, "ff_conv_module: channels (4, 6) must be > 0 and divisible by groups 3");
}

FF_TEST_MAIN("ops_conv_ex", TEST(check_grouped_entries_threads), TEST(check_modules), TEST(check_naive_f32), TEST(check_naive_f64), TEST(check_transpose_is_adjoint),
             TEST(check_gradients), TEST(check_empty_batch), TEST(check_errors))
