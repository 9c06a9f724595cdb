/*
 * cpu_blas's native F16/BF16 against the core's f32 detour, which the backend's half
 * entries promise to reproduce: widen the operands (exact), run the f32 entry, round the
 * result once (ffb_f64_to_f16 / ffb_f64_to_bf16). The detour is done here by hand on
 * the same backend, so each check compares the half entry with the f32 entry it stands
 * for:
 *   - every unary and binary op (comparisons writing bool too), contiguous, strided and
 *     broadcast, on edge values (NaN, +-inf, +-0, the smallest and a mid subnormal, the
 *     largest finite, values whose square or exp overflows the half range) mixed with
 *     ordinary ones, over lengths with vector bodies and tails: bit for bit;
 *   - where and gather: bit for bit; softmax and log_softmax rows: bit for bit;
 *   - reductions (sum, prod, max, min, argmax, argmin, any, all) over either axis and all:
 *     bit for bit with the detour, and within 2 half epsilons of the sum in double;
 *   - matmul, small (the direct kernel) and large (the f32 gemm, or for bf16 on AVX512-BF16
 *     the vdpbf16ps kernel), transposed operands: within 2 half epsilons + the f32
 *     accumulation bound of the product in double; on edge operands NaN and inf where the
 *     f32 gemm on widened copies has them;
 *   - the conversions themselves (cpu_blas copy): every f16/bf16 to f32, and 2^24 f32
 *     bit patterns spread over the whole range to f16/bf16, equal to the shared scalar
 *     rules. ctest runs this once per conversion path (FF_HALF_ISA=scalar, avx2, and what
 *     the CPU has).
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <float.h>
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *be;

/* ---- buffers on the backend ------------------------------------------------------- */
static void *dev(const void *host, size_t nb)
{
    void *b = be->vt->alloc(be->ctx, nb ? nb : 1);
    CHECK(b != NULL);
    if (nb && host) be->vt->upload(be->ctx, b, 0, host, nb);
    return b;
}

static void back(void *b, void *host, size_t nb)
{
    if (nb) be->vt->download(be->ctx, b, 0, host, nb);
    be->vt->free(be->ctx, b);
}

static ff_view view1(void *buf, ff_dtype t, int64_t n, int64_t step)
{
    ff_view v = {.buf = buf, .dtype = t, .ndim = 1, .shape = {n}, .strides = {step}};
    return v;
}

static uint16_t to_half(ff_dtype t, double x) { return t == FF_F16 ? ffb_f64_to_f16(x) : ffb_f64_to_bf16(x); }
static float from_half(ff_dtype t, uint16_t h) { return t == FF_F16 ? ffb_f16_to_f32(h) : ffb_bf16_to_f32(h); }

/* Edge values mixed with ordinary ones (which ones land where depends on salt). */
static double value(ff_dtype t, int64_t i, int salt)
{
    const int f16 = t == FF_F16;
    const double edges[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, f16 ? 0x1p-24 : 0x1p-133, f16 ? -0x1p-24 : -0x1p-133,
                            f16 ? 0x1p-17 : 0x1p-129, f16 ? 65504.0 : 0x1.fep127, f16 ? -65504.0 : -0x1.fep127,
                            f16 ? 300.0 : 1e20, 90.0, -90.0, 12.0, 0.5, -2.5, 1.0, -1.0};
    uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)salt * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (h % 3 == 0) return edges[(h >> 8) % (sizeof edges / sizeof edges[0])];
    return ((double)((h >> 11) % 20001) - 10000.0) / 2500.0; /* [-4, 4] */
}

static uint16_t *half_data(ff_dtype t, int64_t n, int salt)
{
    uint16_t *h = malloc((size_t)(n ? n : 1) * 2);
    for (int64_t i = 0; i < n; i++) h[i] = to_half(t, value(t, i, salt));
    return h;
}

/* ---- elementwise -------------------------------------------------------------------- */
/* erf or GELU of x in double, as the half kernels must approach it: GELU through erfc,
 * since the reference's 0.5 x (1 + erf(x / sqrt 2)) cancels below x = -7 (1% off at -7.8,
 * exactly 0 from -8.3 on) where the f32 kernel keeps the true tiny value (conformance's
 * atol, 1e-6, covers both) down to f32's normal range. */
static double erf_want(ff_unary_op op, double x)
{
    if (x != x) return ffb_unary_f64(op, x); /* the reference's NaN, sign included */
    if (op != FF_UNARY_GELU_ERF) return erf(x);
    double y = 0.5 * x * erfc(-x * 0.7071067811865476);
    /* below f32's normal range (x < -12.9) -0, as the reference has it: never a subnormal
     * activation for the next matmul */
    return x < -1 && fabs(y) < FLT_MIN ? -0.0 : y;
}

/* Distance of two finite-or-inf halves in units in the last place (sign-magnitude bits
 * mapped to a line; +0 and -0 are 0 apart). */
static unsigned half_ulps(unsigned a, unsigned b)
{
    long x = a & 0x8000 ? -(long)(a & 0x7FFF) : (long)a, y = b & 0x8000 ? -(long)(b & 0x7FFF) : (long)b;
    return (unsigned)labs(x - y);
}

/* Runs op on the half data (strides sa, sb; sb = 0: b broadcast) natively and through the
 * f32 entry, and compares every element bit for bit. */
static int elementwise_case(ff_op_kind kind, int op, ff_dtype t, int64_t n, int64_t sa, int64_t sb)
{
    int bin = kind == FF_KIND_BINARY;
    int to_bool = bin ? ff_binary_op_writes_bool((ff_binary_op)op) : ffb_unary_writes_bool((ff_unary_op)op);
    int64_t la = n ? (n - 1) * sa + 1 : 0, lb = n ? (sb ? (n - 1) * sb + 1 : 1) : 0;
    uint16_t *ha = half_data(t, la, 1 + op), *hb = half_data(t, lb, 100 + op);
    float *fa = malloc((size_t)(la + 1) * 4), *fb = malloc((size_t)(lb + 1) * 4), *fo = malloc((size_t)(n + 1) * 4);
    unsigned char *native = malloc((size_t)(n + 1) * 2), *wide = malloc((size_t)(n + 1) * 4);
    for (int64_t i = 0; i < la; i++) fa[i] = from_half(t, ha[i]);
    for (int64_t i = 0; i < lb; i++) fb[i] = from_half(t, hb[i]);
    ff_dtype dt = to_bool ? FF_BOOL : t, dwt = to_bool ? FF_BOOL : FF_F32;
    size_t dn = (size_t)n * ff_dtype_size(dt), dwn = (size_t)n * ff_dtype_size(dwt);
    /* native */
    void *a = dev(ha, (size_t)la * 2), *b = dev(hb, (size_t)lb * 2), *d = dev(NULL, dn);
    ff_view va = view1(a, t, n, sa), vb = view1(b, t, n, sb), vd = view1(d, dt, n, 1);
    ff_status st = bin ? be->vt->binary(be->ctx, (ff_binary_op)op, &vd, &va, &vb) : be->vt->unary(be->ctx, (ff_unary_op)op, &vd, &va);
    back(a, ha, 0), back(b, hb, 0), back(d, native, dn);
    /* the detour */
    a = dev(fa, (size_t)la * 4), b = dev(fb, (size_t)lb * 4), d = dev(NULL, dwn);
    va = view1(a, FF_F32, n, sa), vb = view1(b, FF_F32, n, sb), vd = view1(d, dwt, n, 1);
    ff_status sw = bin ? be->vt->binary(be->ctx, (ff_binary_op)op, &vd, &va, &vb) : be->vt->unary(be->ctx, (ff_unary_op)op, &vd, &va);
    back(a, fa, 0), back(b, fb, 0), back(d, wide, dwn);
    int ok = st == FF_OK && sw == FF_OK;
    /* erf and GELU on halves run f32-accurate kernels, not the f32 entry's: within one
     * half ulp of the exact value rounded once (erf_want), NaNs bit for bit */
    int loose = !bin && (op == FF_UNARY_ERF || op == FF_UNARY_GELU_ERF);
    for (int64_t i = 0; i < n && ok; i++) {
        unsigned want = to_bool ? wide[i] : to_half(t, ((float *)(void *)wide)[i]);
        unsigned got = to_bool ? native[i] : ((uint16_t *)(void *)native)[i];
        if (loose) want = to_half(t, erf_want((ff_unary_op)op, fa[i * sa]));
        unsigned inf = t == FF_F16 ? 0x7C00u : 0x7F80u;
        int nan = (got & 0x7FFF) > inf || (want & 0x7FFF) > inf;
        if (got != want && (!loose || nan || half_ulps(got, want) > 1)) {
            fprintf(stderr, "%s op %d %s n=%lld strides %lld/%lld: element %lld of (%g, %g) is 0x%04x, the detour's 0x%04x\n",
                    bin ? "binary" : "unary", op, ff_dtype_name(t), (long long)n, (long long)sa, (long long)sb,
                    (long long)i, fa[i * sa], fb[i * sb], got, want);
            ok = 0;
        }
    }
    free(ha), free(hb), free(fa), free(fb), free(fo), free(native), free(wide);
    return ok;
}

static void test_elementwise_bitwise(void)
{
    static const int64_t lens[] = {1, 7, 16, 67, 2061};
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        for (int kind = FF_KIND_UNARY; kind <= FF_KIND_BINARY; kind++) {
            int count = kind == FF_KIND_UNARY ? FF_UNARY_COUNT : FF_BINARY_COUNT;
            for (int op = 0; op < count; op++) {
                int f32 = be->vt->supports(be->ctx, (ff_op_kind)kind, op, FF_F32);
                CHECK(be->vt->supports(be->ctx, (ff_op_kind)kind, op, t) == f32); /* every op f32 takes */
                if (!f32) continue;
                for (int li = 0; li < 5; li++) {
                    CHECK(elementwise_case((ff_op_kind)kind, op, t, lens[li], 1, 1));
                    CHECK(elementwise_case((ff_op_kind)kind, op, t, lens[li], 3, kind == FF_KIND_BINARY ? 0 : 2));
                }
            }
        }
        CHECK(elementwise_case(FF_KIND_BINARY, FF_BINARY_ADD, t, 300000, 1, 1)); /* threads */
        CHECK(elementwise_case(FF_KIND_UNARY, FF_UNARY_GELU_ERF, t, 300000, 1, 1));
    }
}

/* A [R, C] op b repeated along one dim (a bias row [C] with strides {0, 1}, a column
 * [R] with {1, 0}): the half entry widens such an operand once up front; bit for bit with
 * the f32 entry on the same views widened, a bool result (LT) included. */
static void test_broadcast_operand(void)
{
    enum { R = 37, C = 67 };
    static const ff_binary_op ops[] = {FF_BINARY_ADD, FF_BINARY_MUL, FF_BINARY_SUB, FF_BINARY_LT};
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        uint16_t *ha = half_data(t, R * C, 11), *hb = half_data(t, C, 12);
        float fa[R * C], fb[C], fo[R * C];
        for (int i = 0; i < R * C; i++) fa[i] = from_half(t, ha[i]);
        for (int i = 0; i < C; i++) fb[i] = from_half(t, hb[i]);
        for (int oi = 0; oi < 4; oi++)
            for (int col = 0; col < 2; col++) {
                int to_bool = ops[oi] == FF_BINARY_LT;
                int64_t n = col ? R : C; /* b's length: a row of C, or a column of R */
                ff_dtype dt = to_bool ? FF_BOOL : t, dwt = to_bool ? FF_BOOL : FF_F32;
                void *a = dev(ha, R * C * 2), *b = dev(hb, (size_t)n * 2), *d = dev(NULL, R * C * 2);
                ff_view va = {.buf = a, .dtype = t, .ndim = 2, .shape = {R, C}, .strides = {C, 1}};
                ff_view vb = {.buf = b, .dtype = t, .ndim = 2, .shape = {R, C}, .strides = {col ? 1 : 0, col ? 0 : 1}};
                ff_view vd = {.buf = d, .dtype = dt, .ndim = 2, .shape = {R, C}, .strides = {C, 1}};
                unsigned char native[R * C * 2], wide[R * C * 4];
                CHECK(be->vt->binary(be->ctx, ops[oi], &vd, &va, &vb) == FF_OK);
                back(a, NULL, 0), back(b, NULL, 0), back(d, native, (size_t)R * C * ff_dtype_size(dt));
                a = dev(fa, R * C * 4), b = dev(fb, (size_t)n * 4), d = dev(NULL, R * C * 4);
                va.buf = a, va.dtype = FF_F32, vb.buf = b, vb.dtype = FF_F32, vd.buf = d, vd.dtype = dwt;
                CHECK(be->vt->binary(be->ctx, ops[oi], &vd, &va, &vb) == FF_OK);
                back(a, NULL, 0), back(b, NULL, 0), back(d, wide, (size_t)R * C * ff_dtype_size(dwt));
                int bad = 0;
                for (int i = 0; i < R * C; i++) {
                    uint16_t h = 0;
                    if (!to_bool) memcpy(&fo[i], wide + 4 * i, 4), memcpy(&h, native + 2 * i, 2);
                    unsigned want = to_bool ? wide[i] : to_half(t, fo[i]);
                    unsigned got = to_bool ? native[i] : h;
                    if (got != want && bad++ < 3)
                        fprintf(stderr, "%s op %d, b a %s: element %d is 0x%04x, want 0x%04x\n", ff_dtype_name(t),
                                (int)ops[oi], col ? "column" : "row", i, got, want);
                }
                CHECK(bad == 0);
            }
        free(ha), free(hb);
    }
}

/* erf and GELU on every one of the 65536 halves: within one half ulp of the exact value
 * rounded once (erf_want; the f32-accurate kernels blas_half.c runs for them), NaN where
 * it is NaN; the worst distance is printed. */
static void test_erf_every_half(void)
{
    enum { N = 65536 };
    static const ff_unary_op ops[] = {FF_UNARY_ERF, FF_UNARY_GELU_ERF};
    uint16_t *h = malloc(N * 2), *out = malloc(N * 2);
    for (int i = 0; i < N; i++) h[i] = (uint16_t)i;
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        unsigned inf = t == FF_F16 ? 0x7C00u : 0x7F80u;
        for (int k = 0; k < 2; k++) {
            void *a = dev(h, N * 2), *d = dev(NULL, N * 2);
            ff_view va = view1(a, t, N, 1), vd = view1(d, t, N, 1);
            CHECK(be->vt->unary(be->ctx, ops[k], &vd, &va) == FF_OK);
            back(a, h, 0), back(d, out, N * 2);
            unsigned worst = 0, bad = 0;
            for (int i = 0; i < N; i++) {
                unsigned want = to_half(t, erf_want(ops[k], from_half(t, h[i]))), got = out[i];
                int nan = (got & 0x7FFF) > inf || (want & 0x7FFF) > inf;
                unsigned u = got == want ? 0 : nan ? 99 : half_ulps(got, want);
                /* bf16's far negative tail is -0, never a subnormal (f16's subnormals are
                 * GELU's values near x = -4.5, as the reference's) */
                if (k && t == FF_BF16 && from_half(t, h[i]) < -1 && (got & 0x7FFF) && (got & inf) == 0) u = 98;
                if (u > worst) worst = u;
                if (u > 1 && bad++ < 5)
                    fprintf(stderr, "%s op %d of 0x%04x: 0x%04x, want 0x%04x\n", ff_dtype_name(t), (int)ops[k], h[i], got, want);
            }
            fprintf(stderr, "%s %s: at most %u ulp from the exact value\n", ff_dtype_name(t), k ? "gelu" : "erf", worst);
            CHECK(bad == 0);
        }
    }
    free(h), free(out);
}

/* ---- where, gather ------------------------------------------------------------------ */
static void test_where_gather(void)
{
    enum { N = 301 };
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        uint16_t *ha = half_data(t, N, 7), *hb = half_data(t, N, 8), out[N];
        unsigned char cond[N];
        int64_t idx[N];
        for (int i = 0; i < N; i++) cond[i] = (unsigned char)(i % 3 == 0), idx[i] = (i * 37) % N;
        void *a = dev(ha, N * 2), *b = dev(hb, N * 2), *c = dev(cond, N), *d = dev(NULL, N * 2), *x = dev(idx, sizeof idx);
        ff_view va = view1(a, t, N, 1), vb = view1(b, t, N, 1), vc = view1(c, FF_BOOL, N, 1), vd = view1(d, t, N, 1);
        ff_view vx = view1(x, FF_I64, N, 1);
        CHECK(be->vt->where(be->ctx, &vd, &vc, &va, &vb) == FF_OK);
        be->vt->download(be->ctx, d, 0, out, N * 2);
        for (int i = 0; i < N; i++) CHECK(out[i] == (cond[i] ? ha[i] : hb[i]));
        CHECK(be->vt->gather(be->ctx, &vd, &va, &vx, 0) == FF_OK);
        be->vt->download(be->ctx, d, 0, out, N * 2);
        for (int i = 0; i < N; i++) CHECK(out[i] == ha[idx[i]]);
        back(a, ha, 0), back(b, hb, 0), back(c, cond, 0), back(d, out, 0), back(x, idx, 0);
        free(ha), free(hb);
    }
}

/* ---- reductions and softmax over a rows x cols matrix ----------------------------------- */
/* Ordinary values in [-1, 1] (domain 0), or the edge mix (domain 1). */
static uint16_t *matrix(ff_dtype t, int64_t n, int domain, int salt)
{
    uint16_t *h = half_data(t, n, salt);
    if (!domain)
        for (int64_t i = 0; i < n; i++) h[i] = to_half(t, ((double)((i * 7919 + salt * 104729) % 2001) - 1000.0) / 1000.0);
    return h;
}

/* Runs reduce op (mask) or, with op < 0, softmax (log = -op - 1) along axis 1 natively
 * and through the f32 entry; returns 1 when they agree bit for bit (dst in *out). */
static int rows_case(int op, ff_dtype t, int64_t rows, int64_t cols, uint32_t mask, int domain, double *maxrel)
{
    int64_t n = rows * cols;
    uint16_t *h = matrix(t, n, domain, op + 20);
    float *f = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) f[i] = from_half(t, h[i]);
    int sm = op < 0;
    ff_reduce_op rop = (ff_reduce_op)(sm ? 0 : op);
    ff_dtype dt = sm ? t : ffb_reduce_is_arg(rop) ? FF_I64 : rop == FF_REDUCE_ANY || rop == FF_REDUCE_ALL ? FF_BOOL : t;
    ff_dtype dwt = dt == t ? FF_F32 : dt;
    int64_t orow = (mask & 1u) ? 1 : rows, ocol = (mask & 2u) ? 1 : cols, on = sm ? n : orow * ocol;
    unsigned char *r[2];
    for (int side = 0; side < 2; side++) {
        ff_dtype st = side ? FF_F32 : t, ot = side ? dwt : dt;
        size_t es = ff_dtype_size(st), os = ff_dtype_size(ot);
        void *s = dev(side ? (void *)f : (void *)h, (size_t)n * es), *d = dev(NULL, (size_t)on * os);
        ff_view vs = {.buf = s, .dtype = st, .ndim = 2, .shape = {rows, cols}, .strides = {cols, 1}};
        ff_view vd = {.buf = d, .dtype = ot, .ndim = 2, .shape = {sm ? rows : orow, sm ? cols : ocol},
                      .strides = {sm ? cols : ocol, 1}};
        ff_status stt = sm ? be->vt->softmax(be->ctx, &vd, &vs, 1, -op - 1) : be->vt->reduce(be->ctx, rop, &vd, &vs, mask);
        CHECK(stt == FF_OK);
        r[side] = malloc((size_t)on * os);
        back(s, h, 0), back(d, r[side], (size_t)on * os);
    }
    int ok = 1;
    for (int64_t i = 0; i < on && ok; i++) {
        if (dt == t) {
            uint16_t got = ((uint16_t *)(void *)r[0])[i], want = to_half(t, ((float *)(void *)r[1])[i]);
            ok = got == want;
            if (!ok) fprintf(stderr, "%s %d %s [%lld x %lld] mask %u: element %lld is 0x%04x, the detour's 0x%04x\n",
                             sm ? "softmax" : "reduce", op, ff_dtype_name(t), (long long)rows, (long long)cols, mask,
                             (long long)i, got, want);
        } else {
            size_t os = ff_dtype_size(dt);
            ok = memcmp(r[0] + i * os, r[1] + i * os, os) == 0;
        }
    }
    /* sums against double: relative to the half epsilon (one pass over the elements, each
     * added to its output's sum: a loop over the outputs times the elements took minutes) */
    if (ok && !sm && rop == FF_REDUCE_SUM && maxrel) {
        double *s = calloc((size_t)on * 2, sizeof *s), *mag = s + on;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                int64_t o = ((mask & 1u) ? 0 : i) * ocol + ((mask & 2u) ? 0 : j);
                s[o] += f[i * cols + j], mag[o] += fabs(f[i * cols + j]);
            }
        for (int64_t o = 0; o < on; o++) {
            double got = from_half(t, ((uint16_t *)(void *)r[0])[o]), e = fabs(got - s[o]) / (fabs(s[o]) + 1e-3 * mag[o] + 1e-30);
            if (e > *maxrel) *maxrel = e;
        }
        free(s);
    }
    free(h), free(f), free(r[0]), free(r[1]);
    return ok;
}

static void test_reduce_softmax(void)
{
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        double eps = t == FF_F16 ? 0x1p-10 : 0x1p-7, maxrel = 0;
        for (int op = 0; op < FF_REDUCE_COUNT; op++) {
            CHECK(be->vt->supports(be->ctx, FF_KIND_REDUCE, op, t));
            for (uint32_t mask = 1; mask <= 3; mask++) {
                if (ffb_reduce_is_arg((ff_reduce_op)op) && mask == 3) continue;
                for (int dom = 0; dom < 2; dom++) {
                    if (dom && (op == FF_REDUCE_SUM || op == FF_REDUCE_PROD)) continue; /* inf - inf: order */
                    CHECK(rows_case(op, t, 37, 61, mask, dom, &maxrel));
                    CHECK(rows_case(op, t, 3, 70001, mask, dom, &maxrel));
                }
            }
        }
        CHECK(maxrel <= 2 * eps);
        for (int lg = 0; lg < 2; lg++) {
            CHECK(rows_case(-1 - lg, t, 37, 61, 0, 0, NULL));
            CHECK(rows_case(-1 - lg, t, 9, 4100, 0, 1, NULL));
        }
    }
}

/* ---- matmul --------------------------------------------------------------------------- */
static void matmul_case(ff_dtype t, int64_t M, int64_t N, int64_t K, int trans_a)
{
    uint16_t *ha = matrix(t, M * K, 0, 3), *hb = matrix(t, K * N, 0, 4), *hc = malloc((size_t)(M * N) * 2);
    void *a = dev(ha, (size_t)(M * K) * 2), *b = dev(hb, (size_t)(K * N) * 2), *c = dev(NULL, (size_t)(M * N) * 2);
    /* trans_a: the buffer holds A^T (K x M) row-major, seen as M x K with strides (1, M) */
    ff_view va = {.buf = a, .dtype = t, .ndim = 2, .shape = {M, K}, .strides = {trans_a ? 1 : K, trans_a ? M : 1}};
    ff_view vb = {.buf = b, .dtype = t, .ndim = 2, .shape = {K, N}, .strides = {N, 1}};
    ff_view vc = {.buf = c, .dtype = t, .ndim = 2, .shape = {M, N}, .strides = {N, 1}};
    CHECK(be->vt->matmul(be->ctx, &vc, &va, &vb) == FF_OK);
    back(a, ha, 0), back(b, hb, 0), back(c, hc, (size_t)(M * N) * 2);
    double eps = t == FF_F16 ? 0x1p-10 : 0x1p-7, worst = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double x = from_half(t, ha[trans_a ? k * M + i : i * K + k]) * (double)from_half(t, hb[k * N + j]);
                s += x, mag += fabs(x);
            }
            double err = fabs(from_half(t, hc[i * N + j]) - s) - (2 * 0x1p-24 * (double)K * mag);
            double rel = err / (fabs(s) + 0x1p-24 * mag + 1e-30);
            if (rel > worst) worst = rel;
        }
    if (worst > 2 * eps) fprintf(stderr, "matmul %s %lldx%lldx%lld: %g half epsilons\n", ff_dtype_name(t), (long long)M,
                                 (long long)N, (long long)K, worst / eps);
    CHECK(worst <= 2 * eps);
    free(ha), free(hb), free(hc);
}

/* Edge operands (NaN, +-inf, +-0, subnormals, ordinary values; no values near the top of
 * the range, whose sums overflow or not by summation order) through the native matmul
 * (on AVX512-BF16 the vdpbf16ps kernel; with subnormal operands, which it would read as
 * zero, the f32 gemm) and through the f32 gemm on widened copies: NaN and inf where the other has them, with their signs;
 * finite results within 2 half epsilons plus the subnormal products the kernel drops. */
static void matmul_edges(ff_dtype t, int with_subnormals)
{
    enum { M = 40, N = 48, K = 200 }; /* 384000 multiply-adds: past the bf16 kernel's threshold */
    double sub = t == FF_F16 ? 0x1p-24 : 0x1p-133; /* the bf16 kernel leaves such operands to the f32 gemm */
    const double ev[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, with_subnormals ? sub : 0.5, 1.0, -2.5, 0.75};
    uint16_t *ha = malloc(M * K * 2), *hb = malloc(K * N * 2), *hc = malloc(M * N * 2);
    float *fa = malloc(M * K * 4), *fb = malloc(K * N * 4), *fc = malloc(M * N * 4);
    for (int i = 0; i < M * K; i++) {
        uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull >> 40;
        ha[i] = to_half(t, h % 61 == 0 ? ev[h % 9] : ev[3 + h % 6]), fa[i] = from_half(t, ha[i]);
    }
    for (int i = 0; i < K * N; i++) hb[i] = to_half(t, ev[3 + (i * 7) % 6]), fb[i] = from_half(t, hb[i]);
    for (int side = 0; side < 2; side++) {
        ff_dtype dt = side ? FF_F32 : t;
        size_t es = ff_dtype_size(dt);
        void *a = dev(side ? (void *)fa : (void *)ha, M * K * es), *b = dev(side ? (void *)fb : (void *)hb, K * N * es);
        void *c = dev(NULL, M * N * es);
        ff_view va = {.buf = a, .dtype = dt, .ndim = 2, .shape = {M, K}, .strides = {K, 1}};
        ff_view vb = {.buf = b, .dtype = dt, .ndim = 2, .shape = {K, N}, .strides = {N, 1}};
        ff_view vc = {.buf = c, .dtype = dt, .ndim = 2, .shape = {M, N}, .strides = {N, 1}};
        CHECK(be->vt->matmul(be->ctx, &vc, &va, &vb) == FF_OK);
        back(a, ha, 0), back(b, hb, 0), back(c, side ? (void *)fc : (void *)hc, M * N * es);
    }
    double eps = t == FF_F16 ? 0x1p-10 : 0x1p-7;
    int bad = 0;
    for (int i = 0; i < M * N; i++) {
        double g = from_half(t, hc[i]), w = from_half(t, to_half(t, fc[i]));
        int ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= 2 * eps * fabs(w) + K * 2.5 * 0x1p-126;
        if (!ok && bad++ < 3) fprintf(stderr, "matmul edges %s element %d: %g, the f32 gemm's %g\n", ff_dtype_name(t), i, g, w);
    }
    CHECK(bad == 0);
    free(ha), free(hb), free(hc), free(fa), free(fb), free(fc);
}

static void test_matmul(void)
{
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        CHECK(be->vt->supports(be->ctx, FF_KIND_MATMUL, 0, t));
        matmul_case(t, 5, 7, 3, 0);
        matmul_case(t, 33, 45, 70, 1);
        matmul_case(t, 200, 150, 300, 0);
        matmul_case(t, 130, 129, 257, 1);
        matmul_edges(t, 0);
        matmul_edges(t, 1);
    }
}

/* ---- the conversions (cpu_blas copy) ----------------------------------------------------- */
static void test_conversions(void)
{
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        /* every half to f32 */
        uint16_t *h = malloc(0x10000 * 2);
        float *f = malloc(0x10000 * 4);
        for (uint32_t i = 0; i < 0x10000u; i++) h[i] = (uint16_t)i;
        void *s = dev(h, 0x10000 * 2), *d = dev(NULL, 0x10000 * 4);
        ff_view vs = view1(s, t, 0x10000, 1), vd = view1(d, FF_F32, 0x10000, 1);
        CHECK(be->vt->copy(be->ctx, &vd, &vs) == FF_OK);
        back(s, h, 0), back(d, f, 0x10000 * 4);
        int bad = 0;
        for (uint32_t i = 0; i < 0x10000u; i++) {
            float w = from_half(t, (uint16_t)i);
            bad += memcmp(&w, &f[i], 4) != 0 && !(isnan(w) && isnan(f[i]));
        }
        CHECK(bad == 0);
        free(h), free(f);
        /* 2^24 f32 bit patterns, every 256th, offset so each lands on new low bits */
        const int64_t n = (int64_t)1 << 24;
        uint32_t *bits = malloc((size_t)n * 4);
        uint16_t *out = malloc((size_t)n * 2);
        for (int64_t i = 0; i < n; i++) bits[i] = (uint32_t)(i * 256 + (i * 37 & 255));
        s = dev(bits, (size_t)n * 4), d = dev(NULL, (size_t)n * 2);
        vs = view1(s, FF_F32, n, 1), vd = view1(d, t, n, 1);
        CHECK(be->vt->copy(be->ctx, &vd, &vs) == FF_OK);
        back(s, bits, 0), back(d, out, (size_t)n * 2);
        bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, &bits[i], 4);
            uint16_t w = to_half(t, x);
            if (out[i] != w && bad++ < 5) fprintf(stderr, "%s: f32 0x%08x -> 0x%04x, want 0x%04x\n", ff_dtype_name(t), bits[i], out[i], w);
        }
        CHECK(bad == 0);
        free(bits), free(out);
    }
}

/* Transposed casts (autocast's cast of W^T): the tiled path, both directions, against
 * the scalar conversions, on a shape with partial tiles. */
static void test_transposed_casts(void)
{
    enum { R = 77, C = 301 }; /* src is [R, C]; dst [C, R] reads it transposed */
    for (int ti = 0; ti < 2; ti++) {
        ff_dtype t = ti ? FF_BF16 : FF_F16;
        float *f = malloc(sizeof(float) * R * C), *fb = malloc(sizeof(float) * R * C);
        uint16_t *h = malloc(2 * R * C);
        for (int64_t i = 0; i < R * C; i++) f[i] = (float)value(t, i, 3);
        void *s = dev(f, sizeof(float) * R * C), *d = dev(NULL, 2 * R * C);
        ff_view vs = {.buf = s, .dtype = FF_F32, .ndim = 2, .shape = {C, R}, .strides = {1, C}};
        ff_view vd = {.buf = d, .dtype = t, .ndim = 2, .shape = {C, R}, .strides = {R, 1}};
        CHECK(be->vt->copy(be->ctx, &vd, &vs) == FF_OK);
        be->vt->download(be->ctx, d, 0, h, 2 * R * C);
        int bad = 0;
        for (int64_t j = 0; j < C; j++)
            for (int64_t i = 0; i < R; i++) bad += h[j * R + i] != to_half(t, f[i * C + j]);
        CHECK(bad == 0);
        /* and back: the half [C, R] read transposed into f32 [R, C] */
        void *d2 = dev(NULL, sizeof(float) * R * C);
        ff_view hs = {.buf = d, .dtype = t, .ndim = 2, .shape = {R, C}, .strides = {1, R}};
        ff_view fd = {.buf = d2, .dtype = FF_F32, .ndim = 2, .shape = {R, C}, .strides = {C, 1}};
        CHECK(be->vt->copy(be->ctx, &fd, &hs) == FF_OK);
        back(d2, fb, sizeof(float) * R * C);
        bad = 0;
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                float w = from_half(t, h[j * R + i]);
                bad += memcmp(&w, &fb[i * C + j], 4) != 0 && !(isnan(w) && isnan(fb[i * C + j]));
            }
        CHECK(bad == 0);
        back(s, NULL, 0), back(d, NULL, 0);
        free(f), free(fb), free(h);
    }
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "2", 1);
    be = ff_backend_load("cpu_blas");
    if (!be) {
        fprintf(stderr, "cannot load cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
}

FF_TEST_MAIN("cpu_blas_half", TEST(setup), TEST(test_conversions), TEST(test_transposed_casts), TEST(test_elementwise_bitwise),
             TEST(test_broadcast_operand),
             TEST(test_erf_every_half), TEST(test_where_gather), TEST(test_reduce_softmax), TEST(test_matmul))
