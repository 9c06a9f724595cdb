/*
 * A device backend's attention entry (opencl's on PoCL in CI; FF_TEST_ATTENTION_BACKEND
 * names another, e.g. tests/cuda_emu runs the emulated cuda plugin) where the conformance
 * family "attention" does not reach: head dims 1 and FF_ATTENTION_MAX_HEAD_DIM, D != Dv,
 * rows past several tiles with Tq != Tk both ways, k and v broadcast over heads, and no
 * keys (Tk = 0: o = 0, zero gradients) or no queries (Tq = 0: gk = gv = 0). Values and
 * the q, k, v gradients against the op's composition on the same backend; F16 and BF16
 * against the same values in f32, and F32 against them in f64 (on cuda with
 * FF_CUDA_ATTENTION=mma the tensor-core kernels, cuda_attention_mma.cuh, F32 as 3xTF32:
 * TF32 products alone miss the f32 bound many times over), over many tiles of queries and
 * keys, and from views a block cannot copy 16 bytes at a time (a row stride of 33
 * elements at an odd offset, a d stride of T).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

/* A tensor of the shape with values from a fixed pseudo-random sequence in [-1, 1]. */
static ff_tensor *rnd(ff_dtype dt, int nd, const int64_t *shape, unsigned seed)
{
    return ff_test_lcg_tensor(dt, nd, shape, seed, -1, 1);
}

static double max_abs(const ff_tensor *a)
{
    ff_tensor *z = a ? ff_zeros_like(a) : NULL;
    double m = ff_test_max_diff(a, z);
    ff_tensor_release(z);
    return m;
}

typedef struct run_out {
    ff_tensor *o, *g[3];
} run_out;

/* o = sdpa(q, k, v), and the gradients of sum(o * w) w.r.t. q, k, v (w fixed by o's shape,
 * drawn in wdt, then in o's dtype). */
static run_out run_w(ff_tensor *const *in, bool causal, bool composed, ff_dtype wdt)
{
    run_out r = {0};
    ff_ops_force_compose(FF_KIND_ATTENTION, composed);
    for (int i = 0; i < 3; i++) ff_zero_grad(in[i]);
    r.o = ff_scaled_dot_product_attention(in[0], in[1], in[2], NULL, 0.0, causal, NAN, 0);
    ff_tensor *w0 = r.o ? rnd(wdt, ff_tensor_ndim(r.o), ff_tensor_shape(r.o), 99) : NULL;
    ff_tensor *w = w0 ? ff_astype(w0, ff_tensor_dtype(r.o)) : NULL;
    ff_tensor *ow = w ? ff_mul(r.o, w) : NULL, *s = ow ? ff_sum(ow, 0, NULL, false) : NULL;
    CHECK(s && ff_backward(s, NULL, NULL) == FF_OK);
    for (int i = 0; i < 3; i++) r.g[i] = ff_grad(in[i]); /* a new reference */
    ff_ops_force_compose(FF_KIND_ATTENTION, false);
    RELEASE(w0, w, ow, s);
    return r;
}

static run_out run(ff_tensor *const *in, bool causal, bool composed)
{
    return run_w(in, causal, composed, ff_tensor_dtype(in[0]));
}

static void run_free(run_out *r)
{
    ff_tensor_release(r->o);
    for (int i = 0; i < 3; i++) ff_tensor_release(r->g[i]);
}

/* The entry and the composition agree on o and the three gradients (a gradient of an
 * empty input may be absent on either side). */
static void agree(ff_dtype dt, const int64_t *qs, const int64_t *ks, const int64_t *vs, bool causal, double tol)
{
    ff_tensor *in[3] = {rnd(dt, 4, qs, 1), rnd(dt, 4, ks, 2), rnd(dt, 4, vs, 3)};
    for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
    run_out a = run(in, causal, false), b = run(in, causal, true);
    double d = ff_test_max_diff(a.o, b.o);
    for (int i = 0; i < 3; i++)
        if (ff_tensor_numel(in[i]) > 0) d = fmax(d, ff_test_max_diff(a.g[i], b.g[i]));
    if (!(d < tol))
        fprintf(stderr, "q [%lld, %lld, %lld, %lld], Tk %lld, Dv %lld, causal %d, %s: differs by %g\n", (long long)qs[0],
                (long long)qs[1], (long long)qs[2], (long long)qs[3], (long long)ks[2], (long long)vs[3], causal,
                ff_dtype_name(dt), d);
    CHECK(d < tol);
    run_free(&a), run_free(&b);
    RELEASE(in[0], in[1], in[2]);
}

/* Inputs (any views) against their values in the next wider dtype on the same backend
 * (f32 for the halves, f64 for f32): o and the gradients within `tol` of the largest value
 * (at least 1). The half side rounds each output once, and FlashAttention-style kernels
 * also round p and ds before their products. f32 within 4e-6: 3xTF32 on the emulation
 * differs by at most 4.4e-7, TF32 products alone by 2e-5 to 5e-4. */
static void wider_agrees(ff_tensor *const *in, bool causal, const char *what)
{
    ff_dtype dt = ff_tensor_dtype(in[0]), wide = dt == FF_F32 ? FF_F64 : FF_F32;
    double tol = dt == FF_BF16 ? 2e-2 : dt == FF_F16 ? 3e-3 : 4e-6;
    ff_tensor *win[3];
    for (int i = 0; i < 3; i++) {
        win[i] = ff_astype(in[i], wide);
        ff_set_requires_grad(in[i], true), ff_set_requires_grad(win[i], true);
    }
    run_out a = run_w(in, causal, false, dt), b = run_w(win, causal, false, dt);
    const ff_tensor *x[4] = {a.o, a.g[0], a.g[1], a.g[2]}, *y[4] = {b.o, b.g[0], b.g[1], b.g[2]};
    static const char *name[4] = {"o", "gq", "gk", "gv"};
    for (int i = 0; i < 4; i++) {
        double d = ff_test_max_diff(x[i], y[i]) / fmax(1.0, max_abs(y[i]));
        if (!(d < tol)) fprintf(stderr, "%s, %s, causal %d: %s differs by %g of its largest value\n", what, ff_dtype_name(dt),
                                causal, name[i], d);
        CHECK(d < tol);
    }
    run_free(&a), run_free(&b);
    RELEASE(win[0], win[1], win[2]);
}

static void tensor_core_dtypes(void)
{
    static const ff_dtype dts[] = {FF_F16, FF_BF16, FF_F32};
    for (int di = 0; di < 3; di++) {
        ff_dtype dt = dts[di];
        for (int causal = 0; causal < 2; causal++) {
            ff_tensor *a[3] = {rnd(dt, 4, SHAPE(2, 3, 300, 64), 1), rnd(dt, 4, SHAPE(2, 3, 300, 64), 2),
                               rnd(dt, 4, SHAPE(2, 3, 300, 64), 3)};
            wider_agrees(a, causal, "T 300, D 64");
            /* Tq > Tk, D != Dv (both padded to 128) */
            ff_tensor *b[3] = {rnd(dt, 4, SHAPE(1, 2, 200, 128), 4), rnd(dt, 4, SHAPE(1, 2, 77, 128), 5),
                               rnd(dt, 4, SHAPE(1, 2, 77, 96), 6)};
            wider_agrees(b, causal, "Tq 200, Tk 77, D 128, Dv 96");
            /* k and v over heads, Tq < Tk */
            ff_tensor *c[3] = {rnd(dt, 4, SHAPE(1, 3, 70, 40), 7), rnd(dt, 4, SHAPE(1, 1, 150, 40), 8),
                               rnd(dt, 4, SHAPE(1, 1, 150, 40), 9)};
            wider_agrees(c, causal, "k, v over heads, Tq 70, Tk 150");
            /* q batch-first ([B, T, H, D] transposed), k at an odd offset with rows 33
             * elements apart, v transposed ([B, H, D, T]: d stride T) */
            ff_tensor *q0 = rnd(dt, 4, SHAPE(2, 150, 4, 32), 10), *k0 = rnd(dt, 4, SHAPE(2, 4, 130, 33), 11);
            ff_tensor *v0 = rnd(dt, 4, SHAPE(2, 4, 32, 130), 12);
            ff_tensor *d[3] = {ff_transpose(q0, 1, 2), ff_narrow(k0, 3, 1, 32), ff_transpose(v0, 2, 3)};
            wider_agrees(d, causal, "strided views");
            for (int i = 0; i < 3; i++) RELEASE(a[i], b[i], c[i], d[i]);
            RELEASE(q0, k0, v0);
        }
    }
}

static void setup(void)
{
    const char *name = getenv("FF_TEST_ATTENTION_BACKEND");
    ff_backend *be = ff_backend_load(name && *name ? name : "opencl");
    CHECK(be && ff_backend_set_default(be) == FF_OK);
    CHECK(ff_backend_supports(be, FF_KIND_ATTENTION, FF_ATTENTION_FORWARD, FF_F32) &&
          ff_backend_supports(be, FF_KIND_ATTENTION, FF_ATTENTION_BACKWARD, FF_F64));
}

static void head_dims_and_tiles(void)
{
    for (int f64 = 0; f64 < 2; f64++) {
        ff_dtype dt = f64 ? FF_F64 : FF_F32;
        double tol = f64 ? 1e-10 : 2e-4;
        for (int causal = 0; causal < 2; causal++) {
            agree(dt, SHAPE(1, 2, 3, 256), SHAPE(1, 2, 5, 256), SHAPE(1, 2, 5, 256), causal, tol);
            agree(dt, SHAPE(2, 1, 70, 1), SHAPE(2, 1, 66, 1), SHAPE(2, 1, 66, 3), causal, tol);
            agree(dt, SHAPE(1, 3, 67, 24), SHAPE(1, 1, 130, 24), SHAPE(1, 1, 130, 200), causal, tol); /* k, v over heads */
            agree(dt, SHAPE(1, 2, 97, 40), SHAPE(1, 2, 33, 40), SHAPE(1, 2, 33, 16), causal, tol);
        }
    }
}

/* No keys: every row is fully masked (o = 0, zero gq). No queries: gk = gv = 0. */
static void empty_sides(void)
{
    for (int f64 = 0; f64 < 2; f64++) {
        ff_dtype dt = f64 ? FF_F64 : FF_F32;
        ff_tensor *in[3] = {rnd(dt, 4, SHAPE(1, 2, 5, 8), 1), rnd(dt, 4, SHAPE(1, 2, 0, 8), 2),
                            rnd(dt, 4, SHAPE(1, 2, 0, 4), 3)};
        for (int i = 0; i < 3; i++) ff_set_requires_grad(in[i], true);
        run_out r = run(in, false, false);
        CHECK(r.o && ff_tensor_numel(r.o) == 2 * 5 * 4 && max_abs(r.o) == 0.0);
        CHECK(r.g[0] && max_abs(r.g[0]) == 0.0);
        run_free(&r);
        RELEASE(in[0], in[1], in[2]);
        ff_tensor *in2[3] = {rnd(dt, 4, SHAPE(1, 2, 0, 8), 1), rnd(dt, 4, SHAPE(1, 2, 6, 8), 2),
                             rnd(dt, 4, SHAPE(1, 2, 6, 4), 3)};
        for (int i = 0; i < 3; i++) ff_set_requires_grad(in2[i], true);
        r = run(in2, true, false);
        CHECK(r.o && ff_tensor_numel(r.o) == 0);
        CHECK(r.g[1] && r.g[2] && max_abs(r.g[1]) == 0.0 && max_abs(r.g[2]) == 0.0);
        run_free(&r);
        RELEASE(in2[0], in2[1], in2[2]);
    }
}

FF_TEST_MAIN("opencl_attention", TEST(setup), TEST(head_dims_and_tiles), TEST(empty_sides),
             TEST(tensor_core_dtypes))
