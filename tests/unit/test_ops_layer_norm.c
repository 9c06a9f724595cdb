/* ff_layer_norm on the cpu reference's layer_norm entry (ops/layer_norm.c): the entry
 * against the composition it replaces (FF_LAYER_NORM=compose's switch), the refusals of
 * ff_kernel_layer_norm and of the backend's checks (outputs left as they were), and a
 * captured graph replaying the entry with new inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ff/graph.h"
#include "ff_impl.h"
#include "ff_test.h"

/* A tensor of the shape with values from a fixed pseudo-random sequence in [-2, 2]. */
static ff_tensor *rnd(ff_dtype dt, int nd, const int64_t *shape, unsigned seed)
{
    return ff_test_lcg_tensor(dt, nd, shape, seed, -2, 2);
}

static void setup(void)
{
    ff_backend *cpu = ff_backend_load("cpu");
    CHECK(cpu && ff_backend_set_default(cpu) == FF_OK);
    CHECK(ff_backend_supports(cpu, FF_KIND_LAYER_NORM, 0, FF_F32) && ff_backend_supports(cpu, FF_KIND_LAYER_NORM, 1, FF_BF16));
    CHECK(!ff_backend_supports(cpu, FF_KIND_LAYER_NORM, 2, FF_F32) && !ff_backend_supports(cpu, FF_KIND_LAYER_NORM, 0, FF_I32));
}

/* y and the gradients of sum(y c) w.r.t. x, w, b: out[0..3]; composed or on the entry. */
static void run(bool composed, ff_dtype dt, ff_tensor *const *in, const ff_tensor *c, ff_tensor **out)
{
    ff_ops_force_compose(FF_KIND_LAYER_NORM, composed);
    ff_tensor *y = ff_layer_norm(in[0], 2, in[1], in[2], 1e-5);
    ff_ops_force_compose(FF_KIND_LAYER_NORM, false);
    CHECK(y && ff_tensor_dtype(y) == dt);
    CHECK(y && (strcmp(ff_grad_fn_name(y), "layer_norm") == 0) == !composed);
    ff_tensor *yc = y ? ff_mul(y, c) : NULL, *s = yc ? ff_sum(yc, 0, NULL, false) : NULL;
    out[1] = out[2] = out[3] = NULL;
    CHECK(s && ff_autograd_grad(s, NULL, 3, (ff_tensor **)in, out + 1, NULL) == FF_OK);
    out[0] = y ? ff_detach(y) : NULL;
    RELEASE(y, yc, s);
}

static void entry_vs_composition(void)
{
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_BF16};
    for (int k = 0; k < 3; k++) {
        ff_dtype dt = dts[k];
        ff_tensor *in[3] = {rnd(dt, 3, SHAPE(4, 3, 5), 1), rnd(dt, 2, SHAPE(3, 5), 2), rnd(dt, 2, SHAPE(3, 5), 3)};
        ff_tensor *c = rnd(dt, 3, SHAPE(4, 3, 5), 4), *a[4], *b[4];
        for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
        run(false, dt, in, c, a);
        run(true, dt, in, c, b);
        double tol = dt == FF_BF16 ? 0.07 : dt == FF_F32 ? 2e-5 : 1e-12; /* bf16: one ulp at 8 */
        for (int i = 0; i < 4; i++) CHECK(ff_test_max_diff(a[i], b[i]) <= tol);
        RELEASE(in[0], in[1], in[2], c, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]);
    }
}

static void refusals(void)
{
    ff_tensor *x = rnd(FF_F32, 2, SHAPE(3, 7), 5), *x3 = rnd(FF_F32, 3, SHAPE(1, 3, 7), 5);
    ff_tensor *w = ff_full(1, SHAPE(7), FF_F32, 1.0), *b = ff_full(1, SHAPE(7), FF_F32, 0.0);
    ff_tensor *w6 = ff_full(1, SHAPE(6), FF_F32, 1.0);
    ff_tensor *y = ff_full(2, SHAPE(3, 7), FF_F32, 9.0), *m = ff_full(1, SHAPE(3), FF_F64, 9.0);
    ff_tensor *v = ff_full(1, SHAPE(3), FF_F64, 9.0), *m32 = ff_full(1, SHAPE(3), FF_F32, 9.0);
    ff_tensor *out[3] = {y, m, v};
    const ff_tensor *src[3] = {x, w, b};
    CHECK_ERROR(ff_kernel_layer_norm(2, out, 3, src, 3, 1e-5, "t") != FF_OK, FF_ERR_INVALID, "t: internal: layer_norm op 2");
    CHECK_ERROR(ff_kernel_layer_norm(0, out, 3, src, 2, 1e-5, "t") != FF_OK, FF_ERR_INVALID, "2 inputs (want 3 and 3)");
    ff_tensor *out32[3] = {y, m32, v};
    CHECK_ERROR(ff_kernel_layer_norm(0, out32, 3, src, 3, 1e-5, "t") != FF_OK, FF_ERR_INVALID,
                "t: layer_norm's mean and invstd must be 1-D f64, got f32");
    const ff_tensor *src3[3] = {x3, w, b};
    CHECK_ERROR(ff_kernel_layer_norm(0, out, 3, src3, 3, 1e-5, "t") != FF_OK, FF_ERR_INVALID,
                "t: layer_norm takes x as [R, D], got rank 3");
    const ff_tensor *srcw[3] = {x, w6, b};
    CHECK_ERROR(ff_kernel_layer_norm(0, out, 3, srcw, 3, 1e-5, "t") != FF_OK, FF_ERR_INVALID,
                "cpu layer_norm: view 1 must be f32 [7], got f32 of rank 1");
    /* the outputs are as they were */
    ff_tensor *nine = ff_full(2, SHAPE(3, 7), FF_F32, 9.0), *nine1 = ff_full(1, SHAPE(3), FF_F64, 9.0);
    CHECK(ff_test_max_diff(y, nine) == 0 && ff_test_max_diff(m, nine1) == 0 && ff_test_max_diff(v, nine1) == 0);
    /* and the op still works, with the entry */
    ff_tensor *r = ff_layer_norm(x, 1, w, b, 1e-5);
    CHECK(r && strcmp(ff_grad_fn_name(r) ? ff_grad_fn_name(r) : "", "") == 0); /* no grad: no node */
    RELEASE(x, x3, w, b, w6, y, m, v, m32, nine, nine1, r);
}

static void graph_replays_the_entry(void)
{
    ff_tensor *in[3] = {rnd(FF_F32, 2, SHAPE(5, 9), 1), rnd(FF_F32, 1, SHAPE(9), 2), rnd(FF_F32, 1, SHAPE(9), 3)};
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    CHECK(ff_graph_capture_begin() == FF_OK);
    ff_tensor *y = ff_layer_norm(in[0], 1, in[1], in[2], 1e-5);
    ff_tensor *sq = y ? ff_square(y) : NULL, *s = sq ? ff_sum(sq, 0, NULL, false) : NULL, *g[3] = {NULL, NULL, NULL};
    CHECK(s && ff_autograd_grad(s, NULL, 3, in, g, NULL) == FF_OK);
    ff_graph *gr = ff_graph_capture_end();
    CHECK(gr != NULL && y && strcmp(ff_grad_fn_name(y), "layer_norm") == 0);
    ff_tensor *x2 = rnd(FF_F32, 2, SHAPE(5, 9), 21), *w2 = rnd(FF_F32, 1, SHAPE(9), 22);
    bool prev = ff_set_grad_enabled(false); /* the leaves change in place, as under no_grad */
    CHECK(ff_copy_(in[0], x2) == FF_OK && ff_copy_(in[1], w2) == FF_OK);
    ff_set_grad_enabled(prev);
    CHECK(gr && ff_graph_replay(gr) == FF_OK);
    ff_tensor *ey = ff_layer_norm(in[0], 1, in[1], in[2], 1e-5);
    ff_tensor *esq = ey ? ff_square(ey) : NULL, *es = esq ? ff_sum(esq, 0, NULL, false) : NULL, *eg[3] = {NULL};
    CHECK(es && ff_autograd_grad(es, NULL, 3, in, eg, NULL) == FF_OK);
    CHECK(ff_test_max_diff(y, ey) == 0);
    for (int i = 0; i < 3; i++) CHECK(ff_test_max_diff(g[i], eg[i]) == 0);
    ff_graph_release(gr);
    RELEASE(in[0], in[1], in[2], y, sq, s, g[0], g[1], g[2], x2, w2, ey, esq, es, eg[0], eg[1], eg[2]);
}

#if FF_TEST_HAVE_CPU_BLAS
/* y of cpu_blas (b) against the reference's (r): f32 bit for bit (both round the same
 * double once; the sums' order differs only in its last bits); halves, which cpu_blas's
 * forward computes in f32, each within one half ulp of the reference's (where the exact
 * value sits next to a rounding boundary) plus f32's error on terms below 8, and nearly
 * all of them equal. */
static void check_y(ff_dtype dt, const ff_tensor *r, const ff_tensor *b)
{
    if (dt == FF_F32) {
        CHECK(ff_test_max_diff(r, b) == 0);
        return;
    }
    int64_t n = r ? ff_tensor_numel(r) : 0, same = 0, far = 0;
    double *v = malloc(sizeof(double) * 2 * (size_t)(n ? n : 1));
    int ok = v && n > 0 && ff_test_values(r, v, n) == 0 && ff_test_values(b, v + n, n) == 0;
    CHECK(ok);
    for (int64_t i = 0; ok && i < n; i++) {
        int e;
        frexp(v[i], &e);
        double ulp = ldexp(1.0, e - 1 - (dt == FF_F16 ? 10 : 7));
        same += v[i] == v[n + i];
        far += !(fabs(v[i] - v[n + i]) <= ulp + 0x1p-15);
    }
    CHECK(ok && far == 0 && same >= n - n / 100);
    if (far || same < n - n / 100)
        fprintf(stderr, "%s y: %lld of %lld equal, %lld past one ulp\n", ff_dtype_name(dt), (long long)same,
                (long long)n, (long long)far);
    free(v);
}

/* cpu_blas's fast rows (halves widened by blas_half.c; F32 and the backward in double,
 * rounded once; the half forward in f32) against the reference's per-element double
 * loops: y as check_y says, gradients within a few half ulps of the largest value. */
static void cpu_blas_rows_match_the_reference(void)
{
    ff_backend *cpu = ff_backend_load("cpu"), *blas = ff_backend_load("cpu_blas");
    CHECK(cpu && blas);
    if (!cpu || !blas) return;
    static const ff_dtype dts[] = {FF_BF16, FF_F16, FF_F32};
    for (int k = 0; k < 3; k++) {
        ff_tensor *h[4] = {rnd(dts[k], 2, SHAPE(33, 384), 7), rnd(dts[k], 1, SHAPE(384), 8), rnd(dts[k], 1, SHAPE(384), 9),
                           rnd(dts[k], 2, SHAPE(33, 384), 10)};
        ff_tensor *out[2][4] = {{NULL}};
        for (int b = 0; b < 2; b++) {
            ff_tensor *in[3], *c = ff_to(h[3], b ? blas : cpu);
            for (int i = 0; i < 3; i++) in[i] = ff_to(h[i], b ? blas : cpu), ff_set_requires_grad(in[i], true);
            CHECK(ff_backend_supports(b ? blas : cpu, FF_KIND_LAYER_NORM, 1, dts[k]));
            ff_tensor *y = ff_layer_norm(in[0], 1, in[1], in[2], 1e-5), *yc = y ? ff_mul(y, c) : NULL;
            ff_tensor *s = yc ? ff_sum(yc, 0, NULL, false) : NULL;
            CHECK(s && ff_autograd_grad(s, NULL, 3, in, out[b] + 1, NULL) == FF_OK);
            out[b][0] = y ? ff_to(y, cpu) : NULL;
            for (int i = 1; i < 4; i++) {
                ff_tensor *t = out[b][i] ? ff_to(out[b][i], cpu) : NULL;
                ff_tensor_release(out[b][i]);
                out[b][i] = t;
            }
            RELEASE(in[0], in[1], in[2], c, y, yc, s);
        }
        check_y(dts[k], out[0][0], out[1][0]);
        double tol = dts[k] == FF_F32 ? 1e-4 : 0.25; /* gw, gb: sums of 33 terms near 10 */
        for (int i = 1; i < 4; i++) CHECK(ff_test_max_diff(out[0][i], out[1][i]) <= tol);
        for (int b = 0; b < 2; b++) RELEASE(out[b][0], out[b][1], out[b][2], out[b][3]);
        RELEASE(h[0], h[1], h[2], h[3]);
    }
}
#endif

#if FF_TEST_HAVE_CPU_BLAS
#define BLAS_TESTS , TEST(cpu_blas_rows_match_the_reference)
#else
#define BLAS_TESTS
#endif

FF_TEST_MAIN("ops_layer_norm", TEST(setup), TEST(entry_vs_composition), TEST(refusals),
             TEST(graph_replays_the_entry) BLAS_TESTS)
