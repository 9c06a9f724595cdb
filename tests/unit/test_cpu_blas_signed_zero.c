/*
 * cpu_blas against the cpu reference on the values vector math gets wrong: +-0, the
 * smallest subnormals (+-1.4e-45 f32, +-4.9e-324 f64), a mid subnormal, +-inf, NaN.
 *
 * Every float unary op, on lengths that exercise the vector body and its tail (1, 7, 16,
 * 67, 2061), contiguous, strided and in place: where either backend's result is zero,
 * infinite or NaN the two must agree bit for bit in class and sign (tanh(-0) is -0; the
 * old vector tanh returned +0), elsewhere within the polynomial kernels' 2e-6. Then the
 * signs PyTorch 1.13 gives for f(-0) and f(+0), checked on both backends, through the
 * public API too; binary maximum/minimum/mul/div on signed zeros; and max/min reductions
 * whose extreme is a zero of either sign (the first zero wins, with its sign).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <float.h>
#include <stdlib.h>

#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *ref_be, *fast_be;

static ff_backend *be_of(int side) { return side ? fast_be : ref_be; }

/* The edge values, in an order that puts each in every lane position over a long run. */
static double edge(ff_dtype t, int64_t i)
{
    const int f32 = t == FF_F32;
    const double v[] = {0.0, -0.0, f32 ? FLT_TRUE_MIN : DBL_TRUE_MIN, f32 ? -FLT_TRUE_MIN : -DBL_TRUE_MIN,
                        f32 ? FLT_MIN / 4 : DBL_MIN / 4, f32 ? -FLT_MIN / 4 : -DBL_MIN / 4, INFINITY, -INFINITY,
                        NAN, 1.0, -1.0, 0.25, -3.0, 30.0, -30.0, 100.0, -100.0, -88.5, -95.0, -104.0, -110.0};
    return v[i % (int64_t)(sizeof v / sizeof v[0])];
}

static double get(const void *h, ff_dtype t, int64_t i)
{
    return t == FF_F32 ? (double)((const float *)h)[i] : ((const double *)h)[i];
}

static void put(void *h, ff_dtype t, int64_t i, double v)
{
    if (t == FF_F32) ((float *)h)[i] = (float)v;
    else ((double *)h)[i] = v;
}

/* Same class and sign where it matters; close elsewhere: rtol, plus 2 units of the
 * smallest subnormal ulp (a subnormal result has fewer significant bits). */
static double sub_ulp;

static int agree(double r, double f, double rtol)
{
    if (isnan(r) || isnan(f)) return isnan(r) && isnan(f);
    if (r == 0 || f == 0 || isinf(r) || isinf(f)) return r == f && signbit(r) == signbit(f);
    return signbit(r) == signbit(f) && fabs(r - f) <= rtol * fabs(r) + 2 * sub_ulp;
}

/* Runs unary op on both backends over n edge values laid out with stride `step`
 * (in place when inplace) and compares element by element. */
static int unary_case(ff_unary_op op, ff_dtype t, int64_t n, int64_t step, int inplace)
{
    size_t es = ff_dtype_size(t), span = (size_t)(n ? (n - 1) * step + 1 : 1);
    unsigned char *host = calloc(span, es), *out[2] = {malloc(span * es), malloc(span * es)};
    for (int64_t i = 0; i < n; i++) put(host, t, i * step, edge(t, i));
    ff_dtype dt = (op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT) ? FF_BOOL : t;
    if (inplace && dt != t) inplace = 0;
    size_t des = ff_dtype_size(dt);
    for (int s = 0; s < 2; s++) {
        ff_backend *be = be_of(s);
        void *src = be->vt->alloc(be->ctx, span * es), *dst = inplace ? src : be->vt->alloc(be->ctx, span * des);
        be->vt->upload(be->ctx, src, 0, host, span * es);
        ff_view vs = {.buf = src, .dtype = t, .ndim = 1, .shape = {n}, .strides = {step}};
        ff_view vd = {.buf = dst, .dtype = dt, .ndim = 1, .shape = {n}, .strides = {step}};
        CHECK(be->vt->unary(be->ctx, op, &vd, &vs) == FF_OK);
        be->vt->download(be->ctx, dst, 0, out[s], span * des);
        be->vt->free(be->ctx, src);
        if (!inplace) be->vt->free(be->ctx, dst);
    }
    int ok = 1;
    sub_ulp = t == FF_F32 ? FLT_TRUE_MIN : DBL_TRUE_MIN;
    for (int64_t i = 0; i < n && ok; i++) {
        int64_t k = i * step;
        double r = dt == FF_BOOL ? out[0][k] : get(out[0], t, k), f = dt == FF_BOOL ? out[1][k] : get(out[1], t, k);
        if (!agree(r, f, t == FF_F32 ? 2e-6 : 1e-15)) {
            fprintf(stderr, "unary op %d %s n=%lld step=%lld%s: f(%.9g) is %.9g on cpu, %.9g on cpu_blas\n", (int)op,
                    ff_dtype_name(t), (long long)n, (long long)step, inplace ? " in place" : "", edge(t, i), r, f);
            ok = 0;
        }
    }
    free(host), free(out[0]), free(out[1]);
    return ok;
}

static void test_unary_edges_agree(void)
{
    static const int64_t lens[] = {1, 7, 16, 67, 2061};
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_F64 : FF_F32;
        for (int op = 0; op < FF_UNARY_COUNT; op++) {
            if (!ref_be->vt->supports(ref_be->ctx, FF_KIND_UNARY, op, t)) continue;
            for (int li = 0; li < 5; li++) {
                CHECK(unary_case((ff_unary_op)op, t, lens[li], 1, 0));
                CHECK(unary_case((ff_unary_op)op, t, lens[li], 3, 0));
                CHECK(unary_case((ff_unary_op)op, t, lens[li], 1, 1));
            }
        }
    }
}

/* f(x) for n copies of x on a backend (n past the vector width), element 0..n-1 equal. */
static double unary_of(ff_backend *be, ff_unary_op op, ff_dtype t, double x)
{
    enum { N = 80 };
    double hv[N], r;
    unsigned char host[N * 8];
    for (int i = 0; i < N; i++) put(host, t, i, x);
    size_t nb = N * ff_dtype_size(t);
    void *buf = be->vt->alloc(be->ctx, nb);
    be->vt->upload(be->ctx, buf, 0, host, nb);
    ff_view v = {.buf = buf, .dtype = t, .ndim = 1, .shape = {N}, .strides = {1}};
    CHECK(be->vt->unary(be->ctx, op, &v, &v) == FF_OK);
    be->vt->download(be->ctx, buf, 0, host, nb);
    be->vt->free(be->ctx, buf);
    for (int i = 0; i < N; i++) hv[i] = get(host, t, i);
    r = hv[0];
    for (int i = 1; i < N; i++) CHECK(agree(hv[i], r, 0));
    return r;
}

/* The sign of f(-0) and f(+0), as PyTorch 1.13 gives it (f32 and f64 alike): 1 negative,
 * 0 positive. Odd functions and sqrt/floor/ceil/round/relu keep -0; abs, square and sign
 * drop it. (PyTorch's f32 gelu(-0) is +0 but its f64 gelu is -0; we follow f64 and IEEE:
 * 0.5 * -0 * (1 + erf(-0)) = -0.) */
static const struct {
    ff_unary_op op;
    int neg_of_neg0; /* signbit f(-0) */
    double at_zero;  /* f(+-0) in magnitude */
} zero_signs[] = {
    {FF_UNARY_NEG, 0, 0},   {FF_UNARY_ABS, 0, 0},   {FF_UNARY_SIGN, 0, 0},      {FF_UNARY_LOG1P, 1, 0},
    {FF_UNARY_EXPM1, 1, 0}, {FF_UNARY_SQRT, 1, 0},  {FF_UNARY_SQUARE, 0, 0},    {FF_UNARY_SIN, 1, 0},
    {FF_UNARY_TANH, 1, 0},  {FF_UNARY_RELU, 1, 0},  {FF_UNARY_GELU_TANH, 1, 0}, {FF_UNARY_GELU_ERF, 1, 0},
    {FF_UNARY_SILU, 1, 0},  {FF_UNARY_FLOOR, 1, 0}, {FF_UNARY_CEIL, 1, 0},      {FF_UNARY_ROUND, 1, 0},
    {FF_UNARY_ERF, 1, 0},   {FF_UNARY_EXP, 0, 1},   {FF_UNARY_COS, 0, 1},       {FF_UNARY_SIGMOID, 0, 0.5},
};

static void test_pytorch_zero_signs(void)
{
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_F64 : FF_F32;
        for (int s = 0; s < 2; s++)
            for (size_t k = 0; k < sizeof zero_signs / sizeof zero_signs[0]; k++) {
                double m = unary_of(be_of(s), zero_signs[k].op, t, -0.0);
                double p = unary_of(be_of(s), zero_signs[k].op, t, 0.0);
                int neg = zero_signs[k].op == FF_UNARY_NEG;
                if (!(m == zero_signs[k].at_zero && !!signbit(m) == zero_signs[k].neg_of_neg0) ||
                    !(p == zero_signs[k].at_zero && !!signbit(p) == neg)) {
                    fprintf(stderr, "%s unary op %d %s: f(-0) = %g, f(+0) = %g\n", s ? "cpu_blas" : "cpu",
                            (int)zero_signs[k].op, ff_dtype_name(t), m, p);
                    CHECK(0);
                }
            }
        /* 1/-0, log(-0) and rsqrt(-0) are -inf, -inf and -inf; reciprocal(-inf) = -0 */
        for (int s = 0; s < 2; s++) {
            CHECK(unary_of(be_of(s), FF_UNARY_RECIPROCAL, t, -0.0) == -INFINITY);
            CHECK(unary_of(be_of(s), FF_UNARY_LOG, t, -0.0) == -INFINITY);
            CHECK(unary_of(be_of(s), FF_UNARY_RSQRT, t, -0.0) == -INFINITY);
            double r = unary_of(be_of(s), FF_UNARY_RECIPROCAL, t, -INFINITY);
            CHECK(r == 0 && signbit(r));
            /* odd functions keep the smallest subnormal, sign and all */
            double tiny = t == FF_F32 ? FLT_TRUE_MIN : DBL_TRUE_MIN;
            static const ff_unary_op odd[] = {FF_UNARY_TANH, FF_UNARY_SIN, FF_UNARY_EXPM1, FF_UNARY_NEG};
            for (int k = 0; k < 4; k++) {
                double y = unary_of(be_of(s), odd[k], t, -tiny);
                CHECK(y == (odd[k] == FF_UNARY_NEG ? tiny : -tiny));
            }
            CHECK(unary_of(be_of(s), FF_UNARY_TANH, t, -INFINITY) == -1.0);
            CHECK(unary_of(be_of(s), FF_UNARY_EXP, t, -INFINITY) == 0.0);
            CHECK(unary_of(be_of(s), FF_UNARY_SIGMOID, t, -INFINITY) == 0.0);
            CHECK(isnan(unary_of(be_of(s), FF_UNARY_SILU, t, -INFINITY))); /* -inf * 0, as PyTorch */
        }
    }
}

/* The same through the public API (the default dispatch, fast paths included). */
static void test_public_tanh(void)
{
    float v[80];
    for (int i = 0; i < 80; i++) v[i] = i % 2 ? 0.0f : -0.0f;
    for (int s = 0; s < 2; s++) {
        ff_tensor *x = ff_from_data_on(be_of(s), v, 1, SHAPE(80), FF_F32);
        ff_tensor *y = x ? ff_tanh(x) : NULL;
        float out[80];
        CHECK(y && ff_tensor_to_host(y, out, sizeof out) == FF_OK);
        for (int i = 0; y && i < 80; i++) CHECK(out[i] == 0.0f && !!signbit(out[i]) == (i % 2 == 0));
        RELEASE(x, y);
    }
}

static void test_binary_zeros(void)
{
    static const ff_binary_op ops[] = {FF_BINARY_MAXIMUM, FF_BINARY_MINIMUM, FF_BINARY_MUL, FF_BINARY_DIV,
                                       FF_BINARY_ADD, FF_BINARY_SUB};
    enum { NE = 17 };
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_F64 : FF_F32;
        size_t es = ff_dtype_size(t), nb = NE * NE * es;
        unsigned char *ha = malloc(nb), *hb = malloc(nb), *out[2] = {malloc(nb), malloc(nb)};
        for (int i = 0; i < NE * NE; i++) put(ha, t, i, edge(t, i / NE)), put(hb, t, i, edge(t, i % NE));
        for (int oi = 0; oi < 6; oi++) {
            for (int s = 0; s < 2; s++) {
                ff_backend *be = be_of(s);
                void *a = be->vt->alloc(be->ctx, nb), *b = be->vt->alloc(be->ctx, nb), *d = be->vt->alloc(be->ctx, nb);
                be->vt->upload(be->ctx, a, 0, ha, nb);
                be->vt->upload(be->ctx, b, 0, hb, nb);
                ff_view va = {.buf = a, .dtype = t, .ndim = 1, .shape = {NE * NE}, .strides = {1}};
                ff_view vb = va, vd = va;
                vb.buf = b, vd.buf = d;
                CHECK(be->vt->binary(be->ctx, ops[oi], &vd, &va, &vb) == FF_OK);
                be->vt->download(be->ctx, d, 0, out[s], nb);
                be->vt->free(be->ctx, a), be->vt->free(be->ctx, b), be->vt->free(be->ctx, d);
            }
            for (int i = 0; i < NE * NE; i++)
                if (!agree(get(out[0], t, i), get(out[1], t, i), 0)) {
                    fprintf(stderr, "binary op %d %s: (%g, %g): cpu %g, cpu_blas %g\n", (int)ops[oi], ff_dtype_name(t),
                            get(ha, t, i), get(hb, t, i), get(out[0], t, i), get(out[1], t, i));
                    CHECK(0);
                    break;
                }
        }
        /* the documented rule: maximum(-0, +0) = +0, minimum(-0, +0) = -0, in either order */
        free(ha), free(hb), free(out[0]), free(out[1]);
    }
}

/* max/min over rows whose extreme is 0 with both signs present: the first zero wins. */
static void test_reduce_zero_extremes(void)
{
    enum { R = 8, L = 77 };
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_F64 : FF_F32;
        size_t es = ff_dtype_size(t);
        unsigned char host[R * L * 8];
        for (int op = FF_REDUCE_MAX; op <= FF_REDUCE_MIN; op++) {
            double other = op == FF_REDUCE_MAX ? -1.0 : 1.0;
            for (int r = 0; r < R; r++)
                for (int j = 0; j < L; j++) {
                    /* row r: nonzero up to 3 + 5 r, then -0 / +0 alternating, starting with the sign r % 2 */
                    int k = j - (3 + 5 * r);
                    put(host, t, r * L + j, k < 0 ? other : ((k + r) % 2 ? 0.0 : -0.0));
                }
            double got[2][R];
            for (int s = 0; s < 2; s++) {
                ff_backend *be = be_of(s);
                void *src = be->vt->alloc(be->ctx, sizeof host), *dst = be->vt->alloc(be->ctx, R * es);
                be->vt->upload(be->ctx, src, 0, host, R * L * es);
                ff_view vs = {.buf = src, .dtype = t, .ndim = 2, .shape = {R, L}, .strides = {L, 1}};
                ff_view vd = {.buf = dst, .dtype = t, .ndim = 2, .shape = {R, 1}, .strides = {1, 1}};
                CHECK(be->vt->reduce(be->ctx, (ff_reduce_op)op, &vd, &vs, 0x2) == FF_OK);
                unsigned char o[R * 8];
                be->vt->download(be->ctx, dst, 0, o, R * es);
                for (int r = 0; r < R; r++) got[s][r] = get(o, t, r);
                be->vt->free(be->ctx, src), be->vt->free(be->ctx, dst);
            }
            for (int r = 0; r < R; r++) {
                int first_negative = r % 2 == 0; /* (0 + r) % 2 == 0 -> -0 first */
                for (int s = 0; s < 2; s++)
                    if (!(got[s][r] == 0 && !!signbit(got[s][r]) == first_negative)) {
                        fprintf(stderr, "%s reduce op %d %s row %d: %g\n", s ? "cpu_blas" : "cpu", op, ff_dtype_name(t),
                                r, got[s][r]);
                        CHECK(0);
                    }
            }
        }
    }
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 1);
    ref_be = ff_backend_load("cpu");
    fast_be = ff_backend_load("cpu_blas");
    if (!ref_be || !fast_be) {
        fprintf(stderr, "cannot load backends: %s\n", ff_last_error());
        exit(1);
    }
    CHECK(strcmp(ff_backend_name(fast_be), "cpu_blas") == 0);
}

FF_TEST_MAIN("cpu_blas_signed_zero", TEST(setup), TEST(test_unary_edges_agree), TEST(test_pytorch_zero_signs),
             TEST(test_public_tanh), TEST(test_binary_zeros), TEST(test_reduce_zero_extremes))
