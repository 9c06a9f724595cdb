/*
 * cpu_blas against the cpu reference, entry by entry.
 *
 * Both plugins are loaded at once; each case builds the same random storage on both,
 * views it with the same (often non-contiguous) layout, calls the same vtable entry on
 * each and compares the whole destination storage (so writes outside the view are
 * caught too). Integer and bool results must match exactly; float results within a
 * small relative tolerance (cpu_blas's f32 exp/log/tanh/sigmoid are polynomial, its
 * sums pairwise and its sgemm accumulates in float). Runs with FF_NUM_THREADS=2 and
 * sizes above the threading threshold, so the threaded paths are compared too.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *ref_be, *fast_be;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}
static double next_unit(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

static ff_backend *be_of(int side) { return side ? fast_be : ref_be; }

/* Same random storage on both backends. */
typedef struct arr {
    void *buf[2];
    int64_t n;
    ff_dtype t;
} arr;

/* kind: 0 general values, 1 positive floats, 2 with special values (NaN, inf, -0) */
static arr arr_new(int64_t n, ff_dtype t, int kind)
{
    arr a = {{NULL, NULL}, n, t};
    size_t es = ff_dtype_size(t), nb = (size_t)(n ? n : 1) * es;
    unsigned char *host = malloc(nb);
    for (int64_t i = 0; i < n; i++) {
        double u = next_unit();
        char *p = (char *)host + (size_t)i * es;
        switch (t) {
        case FF_F32: case FF_F64: {
            double v = kind == 1 ? 0.01 + 4.0 * u : 8.0 * u - 4.0;
            if (kind == 2 && next_u64() % 16 == 0) {
                static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 100.0, -100.0};
                v = sp[next_u64() % 7];
            }
            if (t == FF_F32) { float f = (float)v; memcpy(p, &f, 4); } else memcpy(p, &v, 8);
            break;
        }
        case FF_I32: { int32_t v = (int32_t)(next_u64() % 41) - 20; if (kind == 2 && i % 17 == 0) v = INT32_MIN; memcpy(p, &v, 4); break; }
        case FF_I64: { int64_t v = (int64_t)(next_u64() % 41) - 20; if (kind == 2 && i % 17 == 0) v = INT64_MAX; memcpy(p, &v, 8); break; }
        case FF_U8: *(uint8_t *)p = (uint8_t)next_u64(); break;
        case FF_BOOL: *(uint8_t *)p = (uint8_t)(next_u64() & 1); break;
        default: break;
        }
    }
    for (int s = 0; s < 2; s++) {
        ff_backend *be = be_of(s);
        a.buf[s] = be->vt->alloc(be->ctx, nb);
        be->vt->upload(be->ctx, a.buf[s], 0, host, nb);
    }
    free(host);
    return a;
}

static void arr_free(arr *a)
{
    for (int s = 0; s < 2; s++) be_of(s)->vt->free(be_of(s)->ctx, a->buf[s]);
}

/* A layout over `shape`: 0 contiguous, 1 transposed storage (reversed dim order),
 * 2 every dim stepped by 2 with an offset, 3 contiguous with dim 0 broadcast (stride 0). */
typedef struct lay {
    int ndim;
    int64_t shape[FF_MAX_DIMS], strides[FF_MAX_DIMS], offset, span;
} lay;

static lay make_lay(int ndim, const int64_t *shape, int mode)
{
    lay l = {.ndim = ndim, .offset = mode == 2 ? 3 : 0};
    int64_t st = 1;
    for (int i = 0; i < ndim; i++) {
        int d = mode == 1 ? i : ndim - 1 - i; /* mode 1 lays out dim 0 fastest */
        l.shape[d] = shape[d];
        l.strides[d] = mode == 2 ? 2 * st : st;
        st *= shape[d] * (mode == 2 ? 2 : 1);
    }
    if (mode == 3 && ndim > 0) l.strides[0] = 0;
    l.span = l.offset + 1;
    for (int d = 0; d < ndim; d++) l.span += (shape[d] - 1) * l.strides[d];
    return l;
}

static ff_view view_of(const arr *a, int side, const lay *l)
{
    ff_view v = {.buf = a->buf[side], .offset = l->offset, .dtype = a->t, .ndim = l->ndim};
    for (int d = 0; d < l->ndim; d++) v.shape[d] = l->shape[d], v.strides[d] = l->strides[d];
    return v;
}

static double elem(const void *host, ff_dtype t, int64_t i)
{
    switch (t) {
    case FF_F32: return ((const float *)host)[i];
    case FF_F64: return ((const double *)host)[i];
    case FF_I32: return ((const int32_t *)host)[i];
    case FF_I64: return (double)((const int64_t *)host)[i];
    default: return ((const uint8_t *)host)[i];
    }
}

/* Compares the whole storage of a on both sides. */
static int same_storage(const arr *a, double rtol, double atol, const char *what)
{
    size_t nb = (size_t)a->n * ff_dtype_size(a->t);
    void *h[2];
    for (int s = 0; s < 2; s++) {
        h[s] = malloc(nb ? nb : 1);
        be_of(s)->vt->download(be_of(s)->ctx, a->buf[s], 0, h[s], nb);
    }
    int ok = 1;
    for (int64_t i = 0; i < a->n && ok; i++) {
        double r = elem(h[0], a->t, i), f = elem(h[1], a->t, i);
        int same = (r != r && f != f) || r == f;
        if (!same && ff_dtype_is_float(a->t) && !isinf(r)) same = fabs(r - f) <= atol + rtol * fabs(r);
        if (a->t == FF_I64 && !same) same = ((const int64_t *)h[0])[i] == ((const int64_t *)h[1])[i];
        if (!same) {
            fprintf(stderr, "%s: element %lld: cpu %.9g, cpu_blas %.9g\n", what, (long long)i, r, f);
            ok = 0;
        }
    }
    free(h[0]);
    free(h[1]);
    return ok;
}

static const ff_dtype all_dtypes[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8, FF_BOOL};
static const int64_t shape3[] = {7, 5, 96}; /* 3360 elements */
static const int64_t big2[] = {300, 130};   /* 39000: above the threading threshold */

/* Every kind but CONV2D: the reference's conv2d entries (its loops, dilation and
 * groups too) take f32 and f64, cpu_blas's (oneDNN) f32 only; both are checked against
 * the composition by ff-conformance. On
 * F16/BF16 cpu_blas computes some entries the reference leaves to the core's f32
 * detour (tests/unit/test_cpu_blas_half.c): there it may say yes only where the
 * reference takes the F32 form. */
static void test_supports_agree(void)
{
    for (int op = 0; op <= FF_CONV2D_DILATION_GROUPS; op++) {
        CHECK(ref_be->vt->supports(ref_be->ctx, FF_KIND_CONV2D, op, FF_F32) &&
              ref_be->vt->supports(ref_be->ctx, FF_KIND_CONV2D, op, FF_F64));
        CHECK(!ref_be->vt->supports(ref_be->ctx, FF_KIND_CONV2D, op, FF_I32));
    }
    CHECK(!ref_be->vt->supports(ref_be->ctx, FF_KIND_CONV2D, FF_CONV2D_DILATION_GROUPS + 1, FF_F32));
    /* attention: cpu_blas's entry lands on its own branch (h-attn-blas), which drops this */
    for (int k = 0; k < FF_KIND_COUNT; k++)
        if (k != FF_KIND_CONV2D && k != FF_KIND_ATTENTION)
        for (int op = 0; op < 32; op++)
            for (int t = 0; t < FF_DTYPE_COUNT; t++) {
                int r = ref_be->vt->supports(ref_be->ctx, (ff_op_kind)k, op, (ff_dtype)t);
                int f = fast_be->vt->supports(fast_be->ctx, (ff_op_kind)k, op, (ff_dtype)t);
                if ((t == FF_F16 || t == FF_BF16) && k != FF_KIND_FILL && k != FF_KIND_COPY && f)
                    r = ref_be->vt->supports(ref_be->ctx, (ff_op_kind)k, op, FF_F32);
                /* complex: the reference takes every complex entry (it is the oracle of the
                 * core's composition); cpu_blas takes a subset and leaves the rest to the
                 * core, so only "cpu_blas takes it, the reference must too" holds */
                if (ff_dtype_is_complex((ff_dtype)t) || (k == FF_KIND_COPY && ff_dtype_is_complex((ff_dtype)op))) {
                    CHECK(!f || r);
                    continue;
                }
                if (r != f) fprintf(stderr, "supports(kind %d, op %d, dtype %d): cpu %d, cpu_blas %d\n", k, op, t, r, f);
                CHECK(r == f);
            }
}

static void test_unary(void)
{
    for (int ti = 0; ti < 6; ti++)
        for (int op = 0; op < FF_UNARY_COUNT; op++) {
            ff_dtype t = all_dtypes[ti];
            if (!ref_be->vt->supports(ref_be->ctx, FF_KIND_UNARY, op, t)) continue;
            ff_dtype dt = (op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT) ? FF_BOOL : t;
            for (int mode = 0; mode < 3; mode++) {
                const int64_t *shape = mode == 0 ? big2 : shape3;
                int nd = mode == 0 ? 2 : 3;
                lay ls = make_lay(nd, shape, mode), ld = make_lay(nd, shape, mode == 1 ? 0 : mode);
                arr src = arr_new(ls.span, t, 2), dst = arr_new(ld.span, dt, 0);
                for (int s = 0; s < 2; s++) {
                    ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls);
                    CHECK(be_of(s)->vt->unary(be_of(s)->ctx, (ff_unary_op)op, &vd, &vs) == FF_OK);
                }
                char what[64];
                snprintf(what, sizeof what, "unary op %d dtype %d mode %d", op, (int)t, mode);
                CHECK(same_storage(&dst, 2e-6, 1e-30, what));
                arr_free(&src);
                arr_free(&dst);
            }
        }
}

static void test_unary_inplace(void)
{
    static const int ops[] = {FF_UNARY_EXP, FF_UNARY_TANH, FF_UNARY_SIGMOID, FF_UNARY_NEG, FF_UNARY_RELU};
    for (int i = 0; i < 5; i++) {
        lay l = make_lay(2, big2, 0);
        arr x = arr_new(l.span, FF_F32, 0);
        for (int s = 0; s < 2; s++) {
            ff_view v = view_of(&x, s, &l);
            CHECK(be_of(s)->vt->unary(be_of(s)->ctx, (ff_unary_op)ops[i], &v, &v) == FF_OK);
        }
        CHECK(same_storage(&x, 2e-6, 1e-30, "unary in place"));
        arr_free(&x);
    }
}

static void test_binary(void)
{
    for (int ti = 0; ti < 6; ti++)
        for (int op = 0; op < FF_BINARY_COUNT; op++) {
            ff_dtype t = all_dtypes[ti];
            if (!ref_be->vt->supports(ref_be->ctx, FF_KIND_BINARY, op, t)) continue;
            ff_dtype dt = ff_binary_op_writes_bool((ff_binary_op)op) ? FF_BOOL : t;
            /* a, b layouts: contiguous/contiguous, strided/broadcast, transposed/contig,
             * contiguous/scalar (b broadcast on every dim) */
            for (int mode = 0; mode < 4; mode++) {
                const int64_t *shape = mode == 0 ? big2 : shape3;
                int nd = mode == 0 ? 2 : 3;
                lay la = make_lay(nd, shape, mode == 1 ? 2 : mode == 2 ? 1 : 0);
                lay lb = make_lay(nd, shape, mode == 1 ? 3 : 0);
                if (mode == 3) {
                    for (int d = 0; d < nd; d++) lb.strides[d] = 0;
                    lb.span = 1;
                }
                lay ld = make_lay(nd, shape, 0);
                arr a = arr_new(la.span, t, 2), b = arr_new(lb.span, t, 2), dst = arr_new(ld.span, dt, 0);
                for (int s = 0; s < 2; s++) {
                    ff_view vd = view_of(&dst, s, &ld), va = view_of(&a, s, &la), vb = view_of(&b, s, &lb);
                    CHECK(be_of(s)->vt->binary(be_of(s)->ctx, (ff_binary_op)op, &vd, &va, &vb) == FF_OK);
                }
                char what[64];
                snprintf(what, sizeof what, "binary op %d dtype %d mode %d", op, (int)t, mode);
                CHECK(same_storage(&dst, 1e-15, 0, what));
                arr_free(&a);
                arr_free(&b);
                arr_free(&dst);
            }
        }
}

static void test_fill_copy_where(void)
{
    for (int ti = 0; ti < 6; ti++) {
        ff_dtype t = all_dtypes[ti];
        lay l = make_lay(3, shape3, 2);
        arr d = arr_new(l.span, t, 0);
        ff_scalar v = {-2.75, -3};
        for (int s = 0; s < 2; s++) {
            ff_view vd = view_of(&d, s, &l);
            CHECK(be_of(s)->vt->fill(be_of(s)->ctx, &vd, v) == FF_OK);
        }
        CHECK(same_storage(&d, 0, 0, "fill"));
        arr_free(&d);
        for (int si = 0; si < 6; si++) {
            ff_dtype st = all_dtypes[si];
            lay ls = make_lay(3, shape3, 1 + (si % 2)), ld = make_lay(3, shape3, ti % 3);
            arr src = arr_new(ls.span, st, 2), dst = arr_new(ld.span, t, 0);
            for (int s = 0; s < 2; s++) {
                ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls);
                CHECK(be_of(s)->vt->copy(be_of(s)->ctx, &vd, &vs) == FF_OK);
            }
            CHECK(same_storage(&dst, 0, 0, "copy"));
            arr_free(&src);
            arr_free(&dst);
        }
        { /* a large transposed 2-D copy: the tiled path */
            lay ls = make_lay(2, big2, 1), ld = make_lay(2, big2, 0);
            arr src = arr_new(ls.span, t, 0), dst = arr_new(ld.span, t, 0);
            for (int s = 0; s < 2; s++) {
                ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls);
                CHECK(be_of(s)->vt->copy(be_of(s)->ctx, &vd, &vs) == FF_OK);
            }
            CHECK(same_storage(&dst, 0, 0, "transposed copy"));
            arr_free(&src);
            arr_free(&dst);
        }
        lay lc = make_lay(2, big2, 3), la = make_lay(2, big2, 1), lb = make_lay(2, big2, 0);
        arr c = arr_new(lc.span, FF_BOOL, 0), a = arr_new(la.span, t, 0), b = arr_new(lb.span, t, 0);
        arr dst = arr_new(lb.span, t, 0);
        for (int s = 0; s < 2; s++) {
            ff_view vd = view_of(&dst, s, &lb), vc = view_of(&c, s, &lc), va = view_of(&a, s, &la), vb = view_of(&b, s, &lb);
            CHECK(be_of(s)->vt->where(be_of(s)->ctx, &vd, &vc, &va, &vb) == FF_OK);
        }
        CHECK(same_storage(&dst, 0, 0, "where"));
        arr_free(&c), arr_free(&a), arr_free(&b), arr_free(&dst);
    }
}

static void test_reduce(void)
{
    static const uint32_t masks[] = {0x7, 0x4, 0x1, 0x2, 0x6, 0x3, 0x5, 0x0};
    for (int ti = 0; ti < 6; ti++)
        for (int op = 0; op < FF_REDUCE_COUNT; op++)
            for (int mi = 0; mi < 8; mi++)
                for (int mode = 0; mode < 3; mode++) {
                    ff_dtype t = all_dtypes[ti];
                    uint32_t m = masks[mi];
                    int arg = op == FF_REDUCE_ARGMAX || op == FF_REDUCE_ARGMIN;
                    if (arg && __builtin_popcount(m) > 1) continue;
                    ff_dtype dt = arg ? FF_I64 : (op == FF_REDUCE_ANY || op == FF_REDUCE_ALL) ? FF_BOOL
                                  : (op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) ? (ff_dtype_is_float(t) ? t : FF_I64) : t;
                    int64_t shape[3] = {7, 5, mode == 0 ? 4000 : 96}, dshape[3];
                    for (int d = 0; d < 3; d++) dshape[d] = (m >> d) & 1u ? 1 : shape[d];
                    lay ls = make_lay(3, shape, mode), ld = make_lay(3, dshape, 0);
                    arr src = arr_new(ls.span, t, op == FF_REDUCE_PROD ? 1 : (mode == 2 ? 2 : 0));
                    arr dst = arr_new(ld.span, dt, 0);
                    for (int s = 0; s < 2; s++) {
                        ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls);
                        CHECK(be_of(s)->vt->reduce(be_of(s)->ctx, (ff_reduce_op)op, &vd, &vs, m) == FF_OK);
                    }
                    char what[80];
                    snprintf(what, sizeof what, "reduce op %d dtype %d mask %u mode %d", op, (int)t, m, mode);
                    CHECK(same_storage(&dst, t == FF_F32 ? 1e-6 : 1e-12, 1e-9, what));
                    arr_free(&src);
                    arr_free(&dst);
                }
}

/* A far f32 sum's columns against the reference's: finite results within the ABI's
 * accuracy rule (f32 pairwise summation: log2(R) roundings deep, 4 * 2^-24 * sum |x| for
 * these 13 rows), everything else (inf, NaN) the same. */
static int far_sums_close(const arr *src, const arr *dst, const int64_t *shape)
{
    size_t ns = (size_t)src->n * 4, nd = (size_t)dst->n * 4;
    float *x = malloc(ns), *d[2] = {malloc(nd), malloc(nd)};
    be_of(0)->vt->download(be_of(0)->ctx, src->buf[0], 0, x, ns);
    for (int s = 0; s < 2; s++) be_of(s)->vt->download(be_of(s)->ctx, dst->buf[s], 0, d[s], nd);
    int ok = 1, bits = 1;
    for (int64_t k = 0; k < shape[0] && ok; k++)
        for (int64_t j = 0; j < shape[2] && ok; j++) {
            double mag = 0.0, r = d[0][k * shape[2] + j], f = d[1][k * shape[2] + j];
            for (int64_t i = 0; i < shape[1]; i++) mag += fabs((double)x[(k * shape[1] + i) * shape[2] + j]);
            if (isfinite(r)) ok = fabs(f - r) <= 4.0 * 0x1p-24 * mag;
            else ok = (r != r && f != f) || r == f;
            bits &= r == f || (r != r && f != f);
            if (!ok) fprintf(stderr, "far sum [%lld, :, %lld]: %.9g, the reference %.9g (sum |x| %.9g)\n", (long long)k,
                             (long long)j, f, r, mag);
        }
    /* and not the reference's bits everywhere: the f32 pairs are taken */
    if (ok && bits) fprintf(stderr, "far sum: every column equals the reference's bits (the pairs path not taken?)\n");
    free(x), free(d[0]), free(d[1]);
    return ok && !bits;
}

/* x.sum(1) (and max/min) of [A, R, B] past 16 MiB of source, where cpu_blas reads wider
 * column tiles (FAR_TILE in blas_reduce.c) and adds f32 rows in pairs: B with a partial
 * last tile that is no multiple of 16, R with a pass of 8 rows and 5 left over, NaN and
 * infinities (kind 2). MAX/MIN and f64 SUM give the reference's bits; f32 SUM its
 * accuracy (far_sums_close). */
static void test_reduce_middle_far(void)
{
    static const ff_dtype ts[] = {FF_F32, FF_F64};
    static const int ops[] = {FF_REDUCE_SUM, FF_REDUCE_MAX, FF_REDUCE_MIN};
    for (int ti = 0; ti < 2; ti++)
        for (int oi = 0; oi < 3; oi++) {
            ff_dtype t = ts[ti];
            int64_t shape[3] = {3, 13, t == FF_F32 ? 110017 : 55009}, dshape[3] = {3, 1, shape[2]};
            lay ls = make_lay(3, shape, 0), ld = make_lay(3, dshape, 0);
            CHECK(ls.span * (int64_t)ff_dtype_size(t) > ((int64_t)16 << 20));
            arr src = arr_new(ls.span, t, 2), dst = arr_new(ld.span, t, 0);
            for (int s = 0; s < 2; s++) {
                ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls);
                CHECK(be_of(s)->vt->reduce(be_of(s)->ctx, (ff_reduce_op)ops[oi], &vd, &vs, 0x2) == FF_OK);
            }
            char what[80];
            snprintf(what, sizeof what, "far middle-axis reduce op %d dtype %d", ops[oi], (int)t);
            if (t == FF_F32 && ops[oi] == FF_REDUCE_SUM) CHECK(far_sums_close(&src, &dst, shape));
            else CHECK(same_storage(&dst, 0.0, 0.0, what));
            arr_free(&src);
            arr_free(&dst);
        }
}

static void test_matmul(void)
{
    static const ff_dtype mt[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8};
    /* {B, M, K, N}; from index 5 on, the few-row products blas_gemm_skinny.c takes with a
     * transposed b (W^T, modes 3 and 4): M from 1 to its limit of 32, K with and without a
     * tail of 16 (and of 8, for the ymm form: 1, 3, 4, 6 and 7 left over), N with a partial
     * last block of 16 and one split across the threads */
    static const int64_t sizes[][4] = {{2, 3, 4, 5},       {3, 40, 70, 50},    {1, 128, 96, 64},
                                       {2, 160, 100, 130}, {1, 40, 300, 200},  {1, 11, 384, 1152},
                                       {2, 32, 100, 700},  {1, 1, 1000, 70},   {1, 7, 17, 4000},
                                       {3, 13, 300, 333},  {1, 6, 255, 300},   {1, 33, 300, 300},
                                       {1, 5, 262, 260},   {2, 10, 299, 250}};
    for (int ti = 0; ti < 5; ti++)
        for (int si = 0; si < (int)(sizeof sizes / sizeof sizes[0]); si++)
            for (int mode = 0; mode < 5; mode++) {
                ff_dtype t = mt[ti];
                if (si >= 3 && !ff_dtype_is_float(t)) continue; /* threaded gemm paths: floats only */
                int64_t B = sizes[si][0], M = sizes[si][1], K = sizes[si][2], N = sizes[si][3];
                int64_t sa[3] = {B, M, K}, sb[3] = {B, K, N}, sd[3] = {B, M, N};
                /* a: contiguous / transposed / stepped; b: contiguous / batch-broadcast / transposed;
                 * mode 4 is a Linear's x W^T: a and d contiguous, b transposed */
                lay la = make_lay(3, sa, mode == 1 ? 1 : mode == 2 ? 2 : 0);
                lay lb = make_lay(3, sb, mode == 1 ? 3 : mode >= 3 ? 1 : 0);
                lay ld = make_lay(3, sd, mode == 3 ? 1 : 0);
                if (mode == 1) { /* a is [B, M, K] laid out as its transpose per batch */
                    la.strides[0] = M * K, la.strides[1] = 1, la.strides[2] = M;
                    la.span = B * M * K;
                }
                if (mode == 4) { /* b is [B, K, N] laid out as its transpose per batch: W^T */
                    lb.strides[0] = K * N, lb.strides[1] = 1, lb.strides[2] = K;
                    lb.span = B * K * N;
                }
                arr a = arr_new(la.span, t, 0), b = arr_new(lb.span, t, 0), d = arr_new(ld.span, t, 0);
                for (int s = 0; s < 2; s++) {
                    ff_view vd = view_of(&d, s, &ld), va = view_of(&a, s, &la), vb = view_of(&b, s, &lb);
                    CHECK(be_of(s)->vt->matmul(be_of(s)->ctx, &vd, &va, &vb) == FF_OK);
                }
                char what[64];
                snprintf(what, sizeof what, "matmul dtype %d size %d mode %d", (int)t, si, mode);
                CHECK(same_storage(&d, 2e-5, 1e-3, what));
                arr_free(&a), arr_free(&b), arr_free(&d);
            }
}

static void test_gather_scatter(void)
{
    for (int ti = 0; ti < 6; ti++)
        for (int axis = 0; axis < 2; axis++) {
            ff_dtype t = all_dtypes[ti];
            int64_t ss[2] = {6, 9}, is[2] = {axis ? 6 : 4, axis ? 5 : 9};
            lay ls = make_lay(2, ss, 1), li = make_lay(2, is, 2), ld = make_lay(2, is, 0);
            arr src = arr_new(ls.span, t, 0), dst = arr_new(ld.span, t, 0);
            arr idx = {{NULL, NULL}, li.span, FF_I64};
            int64_t *h = malloc((size_t)li.span * 8);
            for (int64_t i = 0; i < li.span; i++) h[i] = (int64_t)(next_u64() % (uint64_t)ss[axis]);
            for (int s = 0; s < 2; s++) {
                idx.buf[s] = be_of(s)->vt->alloc(be_of(s)->ctx, (size_t)li.span * 8);
                be_of(s)->vt->upload(be_of(s)->ctx, idx.buf[s], 0, h, (size_t)li.span * 8);
            }
            for (int s = 0; s < 2; s++) {
                ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls), vi = view_of(&idx, s, &li);
                CHECK(be_of(s)->vt->gather(be_of(s)->ctx, &vd, &vs, &vi, axis) == FF_OK);
                /* scatter dst's values back into src along the same axis */
                CHECK(be_of(s)->vt->scatter_add(be_of(s)->ctx, &vs, &vi, &vd, axis) == FF_OK);
            }
            CHECK(same_storage(&dst, 0, 0, "gather"));
            CHECK(same_storage(&src, 1e-7, 0, "scatter_add"));
            /* an out-of-range index is an error on both */
            h[li.offset] = 99;
            for (int s = 0; s < 2; s++) {
                be_of(s)->vt->upload(be_of(s)->ctx, idx.buf[s], 0, h, (size_t)li.span * 8);
                ff_view vd = view_of(&dst, s, &ld), vs = view_of(&src, s, &ls), vi = view_of(&idx, s, &li);
                CHECK(be_of(s)->vt->gather(be_of(s)->ctx, &vd, &vs, &vi, axis) == FF_ERR_INDEX);
            }
            free(h);
            arr_free(&src), arr_free(&dst), arr_free(&idx);
        }
}

static void test_random_softmax(void)
{
    for (int ti = 0; ti < 2; ti++)
        for (int dist = 0; dist < 2; dist++) {
            lay l = make_lay(2, big2, 1);
            arr d = arr_new(l.span, all_dtypes[ti], 0);
            for (int s = 0; s < 2; s++) {
                ff_view v = view_of(&d, s, &l);
                CHECK(be_of(s)->vt->random(be_of(s)->ctx, &v, (ff_random_dist)dist, 1234, 77, -1.5, 2.0) == FF_OK);
            }
            CHECK(same_storage(&d, 0, 0, "random"));
            arr_free(&d);
        }
    for (int ti = 0; ti < 2; ti++)
        for (int axis = 0; axis < 2; axis++)
            for (int lg = 0; lg < 2; lg++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    lay l = make_lay(2, big2, 0);
                    arr x = arr_new(l.span, all_dtypes[ti], 0), y = arr_new(l.span, all_dtypes[ti], 0);
                    for (int s = 0; s < 2; s++) {
                        ff_view vx = view_of(&x, s, &l), vy = view_of(&y, s, &l);
                        ff_status (*sm)(void *, const ff_view *, const ff_view *, int, int) = be_of(s)->vt->softmax;
                        CHECK(sm(be_of(s)->ctx, inplace ? &vx : &vy, &vx, axis, lg) == FF_OK);
                    }
                    CHECK(same_storage(inplace ? &x : &y, 2e-6, 1e-30, "softmax"));
                    arr_free(&x), arr_free(&y);
                }
}

/* The batch_norm and pool2d entries, contiguous (cpu_blas's fast paths, channels and
 * planes split across its 2 threads) and stepped (its strided fallback). */
static void test_batch_norm_pool(void)
{
    static const int64_t xs[] = {8, 6, 10, 12}, cs[] = {6};
    for (int ti = 0; ti < 2; ti++)
        for (int mode = 0; mode < 3; mode += 2) {
            ff_dtype t = all_dtypes[ti];
            lay lx = make_lay(4, xs, mode), lc = make_lay(1, cs, 0);
            arr x = arr_new(lx.span, t, 0), y = arr_new(lx.span, t, 0), g = arr_new(lx.span, t, 0);
            arr gx = arr_new(lx.span, t, 0), w = arr_new(lc.span, t, 1), b = arr_new(lc.span, t, 0);
            arr st[4], gs[2];
            for (int i = 0; i < 4; i++) st[i] = arr_new(lc.span, t, 0);
            for (int i = 0; i < 2; i++) gs[i] = arr_new(lc.span, t, 0);
            for (int s = 0; s < 2; s++) {
                ff_status (*bn)(void *, int, const ff_view *, int, const ff_view *, int, double) = be_of(s)->vt->batch_norm;
                ff_view src[3] = {view_of(&x, s, &lx), view_of(&w, s, &lc), view_of(&b, s, &lc)};
                ff_view dst[4] = {view_of(&y, s, &lx), view_of(&st[0], s, &lc), view_of(&st[1], s, &lc),
                                  view_of(&st[2], s, &lc)};
                CHECK(bn(be_of(s)->ctx, 0, dst, 4, src, 3, 1e-5) == FF_OK);
                ff_view bsrc[5] = {view_of(&g, s, &lx), view_of(&x, s, &lx), view_of(&st[0], s, &lc),
                                   view_of(&st[1], s, &lc), view_of(&w, s, &lc)};
                ff_view bdst[3] = {view_of(&gx, s, &lx), view_of(&gs[0], s, &lc), view_of(&gs[1], s, &lc)};
                CHECK(bn(be_of(s)->ctx, 1, bdst, 3, bsrc, 5, 1e-5) == FF_OK);
            }
            CHECK(same_storage(&y, 1e-5, 1e-6, "batch_norm y"));
            CHECK(same_storage(&gx, 1e-4, 1e-5, "batch_norm gx"));
            CHECK(same_storage(&gs[0], 1e-4, 1e-4, "batch_norm gw"));
            /* pooling, 2 x 2 tiles and overlapping padded windows ({kernel, stride, padding}):
             * strides 1, 2 and 3 through the first-max backward's rows of windows */
            static const int64_t pks[][3] = {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {3, 3, 1}, {5, 2, 2}, {4, 1, 0}};
            for (int pk = 0; pk < (int)(sizeof pks / sizeof pks[0]); pk++) {
                int64_t k = pks[pk][0], sd = pks[pk][1], pd = pks[pk][2];
                ff_pool2d_params p = {{k, k}, {sd, sd}, {pd, pd}};
                int64_t ys[4] = {8, 6, (10 + 2 * pd - k) / sd + 1, (12 + 2 * pd - k) / sd + 1};
                lay ly = make_lay(4, ys, 0);
                /* forward and backward ops: max (split evenly), avg, max (first max) */
                static const int fb[3][2] = {{FF_POOL2D_MAX_FORWARD, FF_POOL2D_MAX_BACKWARD},
                                             {FF_POOL2D_AVG_FORWARD, FF_POOL2D_AVG_BACKWARD},
                                             {FF_POOL2D_MAX_FORWARD, FF_POOL2D_MAX_BACKWARD_FIRST}};
                for (int pi = 0; pi < 3; pi++) {
                    int op = fb[pi][0], is_max = op == FF_POOL2D_MAX_FORWARD;
                    arr py = arr_new(ly.span, t, 0), pg = arr_new(ly.span, t, 0), px = arr_new(lx.span, t, 0);
                    for (int s = 0; s < 2; s++) {
                        ff_status (*pool)(void *, int, const ff_view *, const ff_view *, int, const ff_pool2d_params *) =
                            be_of(s)->vt->pool2d;
                        ff_view vx = view_of(&x, s, &lx), vy = view_of(&py, s, &ly), vg = view_of(&pg, s, &ly);
                        ff_view vgx = view_of(&px, s, &lx);
                        CHECK(pool(be_of(s)->ctx, op, &vy, &vx, 1, &p) == FF_OK);
                        ff_view bs[3] = {vg, vx, vy};
                        CHECK(pool(be_of(s)->ctx, fb[pi][1], &vgx, bs, is_max ? 3 : 1, &p) == FF_OK);
                    }
                    char what[96];
                    snprintf(what, sizeof what, "pool2d op %d kernel %lld stride %lld padding %lld", op, (long long)k,
                             (long long)sd, (long long)pd);
                    CHECK(same_storage(&py, 1e-6, 1e-7, what));
                    snprintf(what, sizeof what, "pool2d backward op %d kernel %lld stride %lld padding %lld", fb[pi][1],
                             (long long)k, (long long)sd, (long long)pd);
                    /* overlapping windows add up to k * k gradients in f32 (the reference: in its own
                     * order), so the absolute bound is that sum's rounding, not a wrong pick's size */
                    CHECK(same_storage(&px, 1e-6, 1e-5, what));
                    arr_free(&py), arr_free(&pg), arr_free(&px);
                }
            }
            for (int i = 0; i < 4; i++) arr_free(&st[i]);
            for (int i = 0; i < 2; i++) arr_free(&gs[i]);
            arr_free(&x), arr_free(&y), arr_free(&g), arr_free(&gx), arr_free(&w), arr_free(&b);
        }
}

static void test_allocator(void)
{
    void *ctx = fast_be->ctx;
    const ff_backend_vtable *vt = fast_be->vt;
    CHECK(vt->memory_stats && vt->empty_cache);
    CHECK(vt->empty_cache(ctx) == FF_OK);
    size_t in0, c0, p0;
    CHECK(vt->memory_stats(ctx, &in0, &c0, &p0) == FF_OK);
    CHECK(c0 == 0);
    size_t big = (size_t)3 << 20;
    void *p = vt->alloc(ctx, big);
    CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
    memset(p, 1, big);
    size_t in1, c1, p1;
    vt->memory_stats(ctx, &in1, &c1, &p1);
    CHECK(in1 == in0 + big);
    CHECK(p1 >= in0 + big);
    vt->free(ctx, p);
    size_t in2, c2, p2;
    vt->memory_stats(ctx, &in2, &c2, &p2);
    CHECK(in2 == in0);
    CHECK(c2 >= big);  /* kept for reuse */
    CHECK(p2 == p1);   /* the peak stays */
    void *q = vt->alloc(ctx, big - 1000); /* same size class: the cached block comes back */
    CHECK(q == p);
    vt->free(ctx, q);
    CHECK(vt->empty_cache(ctx) == FF_OK);
    size_t in3, c3;
    vt->memory_stats(ctx, &in3, &c3, NULL);
    CHECK(c3 == 0 && in3 == in0);
    void *z = vt->alloc(ctx, 0); /* zero bytes is a valid, freeable block */
    CHECK(z != NULL);
    vt->free(ctx, z);
}

/* 16M values of 0.1f: the pairwise/blocked sum lands within an ulp of the exact value;
 * a serial float loop is off by thousands. */
static void test_sum_accuracy(void)
{
    int64_t n = (int64_t)1 << 24;
    float *h = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) h[i] = 0.1f;
    double exact = (double)n * (double)0.1f;
    float serial = 0.0f;
    for (int64_t i = 0; i < n; i++) serial += h[i];
    void *buf = fast_be->vt->alloc(fast_be->ctx, (size_t)n * 4);
    void *out = fast_be->vt->alloc(fast_be->ctx, 8);
    fast_be->vt->upload(fast_be->ctx, buf, 0, h, (size_t)n * 4);
    ff_view src = {.buf = buf, .dtype = FF_F32, .ndim = 1, .shape = {n}, .strides = {1}};
    ff_view dst = {.buf = out, .dtype = FF_F32, .ndim = 1, .shape = {1}, .strides = {1}};
    CHECK(fast_be->vt->reduce(fast_be->ctx, FF_REDUCE_SUM, &dst, &src, 1u) == FF_OK);
    float got;
    fast_be->vt->download(fast_be->ctx, out, 0, &got, 4);
    CHECK(fabs((double)got - exact) < fabs((double)serial - exact));
    CHECK(fabs((double)got - exact) <= 0.125); /* within one f32 ulp at 1.6e6 */
    free(h);
    fast_be->vt->free(fast_be->ctx, buf);
    fast_be->vt->free(fast_be->ctx, out);
}

/* The vectorized f32 exp/log/tanh/sigmoid over a dense sweep, against double libm. */
static void test_math_accuracy(void)
{
    int64_t n = 200000;
    float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
    void *buf = fast_be->vt->alloc(fast_be->ctx, (size_t)n * 4);
    static const int ops[] = {FF_UNARY_EXP, FF_UNARY_LOG, FF_UNARY_TANH, FF_UNARY_SIGMOID};
    static const double lo[] = {-103.0, 1e-30, -12.0, -80.0}, hi[] = {88.7, 1e30, 12.0, 80.0};
    for (int k = 0; k < 4; k++) {
        for (int64_t i = 0; i < n; i++) {
            double u = (double)i / (double)(n - 1);
            x[i] = (float)(ops[k] == FF_UNARY_LOG ? exp(log(lo[k]) + u * (log(hi[k]) - log(lo[k]))) : lo[k] + u * (hi[k] - lo[k]));
        }
        fast_be->vt->upload(fast_be->ctx, buf, 0, x, (size_t)n * 4);
        ff_view v = {.buf = buf, .dtype = FF_F32, .ndim = 1, .shape = {n}, .strides = {1}};
        CHECK(fast_be->vt->unary(fast_be->ctx, (ff_unary_op)ops[k], &v, &v) == FF_OK);
        fast_be->vt->download(fast_be->ctx, buf, 0, y, (size_t)n * 4);
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++) {
            double xd = x[i], ref;
            switch (ops[k]) {
            case FF_UNARY_EXP: ref = exp(xd); break;
            case FF_UNARY_LOG: ref = log(xd); break;
            case FF_UNARY_TANH: ref = tanh(xd); break;
            default: ref = xd >= 0 ? 1.0 / (1.0 + exp(-xd)) : exp(xd) / (1.0 + exp(xd)); break;
            }
            if (fabs(ref) < 1e-37) continue; /* subnormal results: absolute error only */
            double rel = fabs((double)y[i] - ref) / fabs(ref);
            if (rel > worst) worst = rel;
        }
        printf("unary op %d: max relative error %.3g\n", ops[k], worst);
        CHECK(worst < 1e-6);
    }
    /* specials */
    float sp[6] = {NAN, INFINITY, -INFINITY, 0.0f, -200.0f, 200.0f}, out[6];
    fast_be->vt->upload(fast_be->ctx, buf, 0, sp, sizeof sp);
    ff_view v = {.buf = buf, .dtype = FF_F32, .ndim = 1, .shape = {6}, .strides = {1}};
    CHECK(fast_be->vt->unary(fast_be->ctx, FF_UNARY_EXP, &v, &v) == FF_OK);
    fast_be->vt->download(fast_be->ctx, buf, 0, out, sizeof out);
    CHECK(isnan(out[0]) && isinf(out[1]) && out[2] == 0.0f && out[3] == 1.0f && out[4] == 0.0f && isinf(out[5]));
    free(x), free(y);
    fast_be->vt->free(fast_be->ctx, buf);
}

static void test_errors(void)
{
    /* f16 compute where cpu_blas declines it (scatter_add: the core's detour sums it) is
     * refused with UNSUPPORTED, a half op into the wrong dtype and mismatched shapes are
     * INVALID; never a crash */
    void *buf = fast_be->vt->alloc(fast_be->ctx, 64);
    int64_t zero[8] = {0};
    fast_be->vt->upload(fast_be->ctx, buf, 0, zero, sizeof zero);
    ff_view h = {.buf = buf, .dtype = FF_F16, .ndim = 1, .shape = {4}, .strides = {1}};
    ff_view f = {.buf = buf, .dtype = FF_F32, .ndim = 1, .shape = {4}, .strides = {1}};
    ff_view g = {.buf = buf, .dtype = FF_F32, .ndim = 1, .shape = {3}, .strides = {1}};
    ff_view x = {.buf = buf, .dtype = FF_I64, .ndim = 1, .shape = {4}, .strides = {1}};
    CHECK(fast_be->vt->unary(fast_be->ctx, FF_UNARY_EXP, &h, &h) == FF_OK);
    CHECK(fast_be->vt->unary(fast_be->ctx, FF_UNARY_EXP, &f, &h) == FF_ERR_INVALID);
    CHECK(fast_be->vt->scatter_add(fast_be->ctx, &h, &x, &h, 0) == FF_ERR_UNSUPPORTED);
    CHECK(fast_be->vt->binary(fast_be->ctx, FF_BINARY_ADD, &f, &f, &g) == FF_ERR_INVALID);
    CHECK(fast_be->vt->matmul(fast_be->ctx, &f, &f, &f) == FF_ERR_INVALID);
    fast_be->vt->free(fast_be->ctx, buf);
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 1);
    ref_be = ff_backend_load("cpu");
    fast_be = ff_backend_load("cpu_blas");
    CHECK(ref_be != NULL);
    CHECK(fast_be != NULL);
    if (!ref_be || !fast_be) {
        fprintf(stderr, "cannot load backends: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(strcmp(ff_backend_name(fast_be), "cpu_blas") == 0);
    CHECK(ff_backend_flags(fast_be) & FF_BACKEND_HOST_MEMORY);
}

FF_TEST_MAIN("cpu_blas_vs_cpu", TEST(setup), TEST(test_supports_agree), TEST(test_unary), TEST(test_unary_inplace),
             TEST(test_binary), TEST(test_fill_copy_where), TEST(test_reduce), TEST(test_reduce_middle_far), TEST(test_matmul),
             TEST(test_gather_scatter), TEST(test_random_softmax), TEST(test_batch_norm_pool), TEST(test_allocator), TEST(test_sum_accuracy),
             TEST(test_math_accuracy), TEST(test_errors))
