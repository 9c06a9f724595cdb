/*
 * cpu_blas's bf16 matmul through oneDNN (blas_half_dnnl.c) against the reference backend
 * on the layouts the path must take apart: odd sizes, transposed operands (passed with
 * their strides), operands stepped in both dims (copied dense first), a transposed and a
 * stepped dst (written through the rounding copy), batched products with broadcast batch
 * dims on either side, and an operand holding a subnormal (declined: the f32 gemm). The
 * plugin runs on 16 threads (set before it loads), so products of few rows are also cut
 * into column blocks (blas_half_dnnl.c): small-M cases check that, and two exact cases put
 * the only nonzero product of a row (a column) on a subnormal in A (in B's last column
 * block), so a flushed subnormal, one no slice scanned, fails the tolerance. Every
 * element within 2 bf16 epsilons of the reference plus the f32 accumulation bound
 * (2^-23 K sum|a b|), the conformance suite's "product" tolerance. On a CPU without
 * AMX/AVX512-BF16 (or with ONEDNN_MAX_CPU_ISA capping it) the same cases check the path
 * that is taken instead. f16 has no oneDNN CPU matmul in 2.6; one f16 case checks it
 * still goes the f32 way.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "ff_backend_scalar.h"
#include "ff_impl.h"
#include "ff_test.h"

static ff_backend *ref, *fast;

typedef struct spec {
    int ndim;
    int64_t shape[4], strides[4];
} spec;

static int64_t span(const spec *s)
{
    int64_t e = 1;
    for (int d = 0; d < s->ndim; d++) e += (s->shape[d] - 1) * s->strides[d];
    return e;
}

/* Element offset of the index idx (broadcast dims have stride 0). */
static int64_t at(const spec *s, const int64_t *idx)
{
    int64_t o = 0;
    for (int d = 0; d < s->ndim; d++) o += idx[d] * s->strides[d];
    return o;
}

static uint16_t value(int64_t i, int salt)
{
    uint64_t h = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)salt * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return ffb_f64_to_bf16(((double)((h >> 11) % 20001) - 10000.0) / 2500.0); /* [-4, 4] */
}

static double f(ff_dtype t, uint16_t h) { return t == FF_F16 ? ffb_f16_to_f32(h) : ffb_bf16_to_f32(h); }

/* dst = a @ b on both backends; returns the number of elements out of tolerance. */
static int run_case(const char *name, ff_dtype t, spec sa, spec sb, spec sd, int subnormal)
{
    int64_t na = span(&sa), nb = span(&sb), nd = span(&sd);
    uint16_t *ha = malloc((size_t)na * 2), *hb = malloc((size_t)nb * 2), *hr = calloc((size_t)nd, 2), *hf = calloc((size_t)nd, 2);
    for (int64_t i = 0; i < na; i++) ha[i] = t == FF_F16 ? ffb_f64_to_f16(f(FF_BF16, value(i, 1))) : value(i, 1);
    for (int64_t i = 0; i < nb; i++) hb[i] = t == FF_F16 ? ffb_f64_to_f16(f(FF_BF16, value(i, 2))) : value(i, 2);
    uint16_t sub = ffb_f64_to_bf16(0x1p-130);
    int r0 = sa.ndim; /* 2-D exact cases: row M/2 of A is zero but a subnormal at K/3; column
                       * N-1 of B zero but a subnormal at K/3 */
    int64_t M0 = sa.shape[r0 - 2], K0 = sa.shape[r0 - 1], N0 = sb.shape[r0 - 1];
    if (subnormal == 1) ha[na / 2] = sub;
    for (int64_t k = 0; subnormal == 2 && k < K0; k++) ha[(M0 / 2) * sa.strides[0] + k * sa.strides[1]] = k == K0 / 3 ? sub : 0;
    for (int64_t k = 0; subnormal == 3 && k < K0; k++) hb[k * sb.strides[0] + (N0 - 1) * sb.strides[1]] = k == K0 / 3 ? sub : 0;
    ff_backend *bes[2] = {ref, fast};
    /* the reference computes no half dtype: it gets the core's detour, f32 operands (exact)
     * and the f32 result rounded once */
    float *fa = malloc((size_t)na * 4), *fb = malloc((size_t)nb * 4), *fd = calloc((size_t)nd, 4);
    for (int64_t i = 0; i < na; i++) fa[i] = (float)f(t, ha[i]);
    for (int64_t i = 0; i < nb; i++) fb[i] = (float)f(t, hb[i]);
    for (int k = 0; k < 2; k++) {
        ff_backend *be = bes[k];
        ff_dtype dt = k ? t : FF_F32;
        size_t es = k ? 2 : 4;
        void *a = be->vt->alloc(be->ctx, (size_t)na * es), *b = be->vt->alloc(be->ctx, (size_t)nb * es);
        void *d = be->vt->alloc(be->ctx, (size_t)nd * es);
        CHECK(a && b && d);
        be->vt->upload(be->ctx, a, 0, k ? (void *)ha : (void *)fa, (size_t)na * es);
        be->vt->upload(be->ctx, b, 0, k ? (void *)hb : (void *)fb, (size_t)nb * es);
        be->vt->upload(be->ctx, d, 0, k ? (void *)hf : (void *)fd, (size_t)nd * es);
        ff_view va = {.buf = a, .dtype = dt, .ndim = sa.ndim}, vb = {.buf = b, .dtype = dt, .ndim = sb.ndim};
        ff_view vd = {.buf = d, .dtype = dt, .ndim = sd.ndim};
        memcpy(va.shape, sa.shape, sizeof sa.shape), memcpy(va.strides, sa.strides, sizeof sa.strides);
        memcpy(vb.shape, sb.shape, sizeof sb.shape), memcpy(vb.strides, sb.strides, sizeof sb.strides);
        memcpy(vd.shape, sd.shape, sizeof sd.shape), memcpy(vd.strides, sd.strides, sizeof sd.strides);
        ff_status st = be->vt->matmul(be->ctx, &vd, &va, &vb);
        if (st) fprintf(stderr, "%s: %s matmul failed: %s\n", name, k ? "cpu_blas" : "cpu", ff_last_error());
        CHECK(st == FF_OK);
        be->vt->download(be->ctx, d, 0, k ? (void *)hf : (void *)fd, (size_t)nd * es);
        be->vt->free(be->ctx, a), be->vt->free(be->ctx, b), be->vt->free(be->ctx, d);
    }
    for (int64_t i = 0; i < nd; i++) hr[i] = t == FF_F16 ? ffb_f64_to_f16(fd[i]) : ffb_f64_to_bf16(fd[i]);
    free(fa), free(fb), free(fd);
    int r = sd.ndim, bad = 0;
    int64_t M = sd.shape[r - 2], N = sd.shape[r - 1], K = sa.shape[r - 1], total = 1;
    for (int d = 0; d < r; d++) total *= sd.shape[d];
    double eps = t == FF_F16 ? 0x1p-10 : 0x1p-7;
    for (int64_t e = 0; e < total; e++) {
        int64_t idx[4], rem = e;
        for (int d = r - 1; d >= 0; d--) idx[d] = rem % sd.shape[d], rem /= sd.shape[d];
        double mag = 0;
        int64_t ia[4], ib[4];
        memcpy(ia, idx, sizeof ia), memcpy(ib, idx, sizeof ib);
        for (int64_t k = 0; k < K; k++) {
            ia[r - 1] = k, ib[r - 2] = k;
            mag += fabs(f(t, ha[at(&sa, ia)]) * f(t, hb[at(&sb, ib)]));
        }
        double g = f(t, hf[at(&sd, idx)]), w = f(t, hr[at(&sd, idx)]);
        if (!(fabs(g - w) <= 2 * eps * fabs(w) + 0x1p-23 * (double)K * mag) && bad++ < 3)
            fprintf(stderr, "%s: element %lld (of %lld x %lld x K %lld): cpu_blas %g, cpu %g\n", name, (long long)e,
                    (long long)M, (long long)N, (long long)K, g, w);
    }
    /* elements outside the dst view stay untouched (zero, as they started) */
    char *inview = calloc((size_t)nd, 1);
    for (int64_t e = 0; e < total; e++) {
        int64_t idx[4], rem = e;
        for (int d = r - 1; d >= 0; d--) idx[d] = rem % sd.shape[d], rem /= sd.shape[d];
        inview[at(&sd, idx)] = 1;
    }
    int64_t touched = 0;
    for (int64_t i = 0; i < nd; i++) touched += !inview[i] && hf[i] != 0;
    CHECK(touched == 0);
    free(inview);
    free(ha), free(hb), free(hr), free(hf);
    return bad;
}

#define S2(m, n, rs, cs) {2, {m, n}, {rs, cs}}

static void test_layouts(void)
{
    enum { M = 67, N = 45, K = 131 }; /* 395k multiply-adds: past the oneDNN threshold, odd everywhere */
    spec a = S2(M, K, K, 1), b = S2(K, N, N, 1), d = S2(M, N, N, 1);
    CHECK(run_case("plain", FF_BF16, a, b, d, 0) == 0);
    CHECK(run_case("a transposed", FF_BF16, (spec)S2(M, K, 1, M), b, d, 0) == 0);
    CHECK(run_case("b transposed", FF_BF16, a, (spec)S2(K, N, 1, K), d, 0) == 0);
    CHECK(run_case("leading dims", FF_BF16, (spec)S2(M, K, K + 5, 1), (spec)S2(K, N, 1, K + 3), (spec)S2(M, N, N + 7, 1), 0) == 0);
    CHECK(run_case("a stepped", FF_BF16, (spec)S2(M, K, 2 * K * 2, 2), b, d, 0) == 0);
    CHECK(run_case("b stepped", FF_BF16, a, (spec)S2(K, N, 3 * N, 3), d, 0) == 0);
    CHECK(run_case("dst transposed", FF_BF16, a, b, (spec)S2(M, N, 1, M), 0) == 0);
    CHECK(run_case("dst stepped", FF_BF16, a, b, (spec)S2(M, N, 2 * N * 2, 2), 0) == 0);
    CHECK(run_case("subnormal in a", FF_BF16, a, b, d, 1) == 0);
    CHECK(run_case("f16", FF_F16, (spec)S2(M, K, 1, M), b, d, 0) == 0);
    CHECK(run_case("big", FF_BF16, (spec)S2(256, 320, 320, 1), (spec)S2(320, 192, 192, 1), (spec)S2(256, 192, 192, 1), 0) == 0);
}

/* Few rows on 16 threads: the columns are cut into blocks, each slice a (block, rows) run,
 * where oneDNN runs a block on brgemm too: B column-major (a Linear's W^T); a row-major B
 * keeps whole rows (its blocks would be strided, which oneDNN 2.6 sends to its jit gemm). */
static void test_column_blocks(void)
{
    enum { M = 11, N = 400, K = 384 }; /* 1.7M multiply-adds, one row slice: 7 blocks of 64 */
    spec a = S2(M, K, K, 1), b = S2(K, N, N, 1), d = S2(M, N, N, 1);
    CHECK(run_case("blocks plain", FF_BF16, a, b, d, 0) == 0);
    CHECK(run_case("blocks b transposed", FF_BF16, a, (spec)S2(K, N, 1, K), d, 0) == 0);
    CHECK(run_case("blocks dst stepped", FF_BF16, a, b, (spec)S2(M, N, 2 * N, 2), 0) == 0);
    CHECK(run_case("blocks subnormal alone in a row of a", FF_BF16, a, b, d, 2) == 0);
    CHECK(run_case("blocks subnormal alone in the last column of b", FF_BF16, a, b, d, 3) == 0);
    CHECK(run_case("blocks b transposed, subnormal in b", FF_BF16, a, (spec)S2(K, N, 1, K), d, 3) == 0);
    CHECK(run_case("rows and blocks", FF_BF16, (spec)S2(100, K, K, 1), (spec)S2(K, 256, 256, 1), (spec)S2(100, 256, 256, 1), 3) == 0);
    /* batched: each batch element's blocks */
    spec a3 = {3, {3, M, K}, {M * K, K, 1}}, b3 = {3, {3, K, N}, {0, N, 1}}, d3 = {3, {3, M, N}, {M * N, N, 1}};
    CHECK(run_case("blocks batched, b broadcast", FF_BF16, a3, b3, d3, 0) == 0);
}

static void test_batched(void)
{
    enum { M = 33, N = 50, K = 40 };
    /* a batched, b broadcast over the batch */
    spec a = {3, {3, M, K}, {M * K, K, 1}}, b = {3, {3, K, N}, {0, N, 1}}, d = {3, {3, M, N}, {M * N, N, 1}};
    CHECK(run_case("batch, b broadcast", FF_BF16, a, b, d, 0) == 0);
    /* a broadcast, b transposed per batch element */
    spec a1 = {3, {3, M, K}, {0, K, 1}}, b1 = {3, {3, K, N}, {K * N, 1, K}};
    CHECK(run_case("batch, a broadcast, b transposed", FF_BF16, a1, b1, d, 0) == 0);
    /* 4-D: broadcast in dim 0 of a and dim 1 of b, a stepped (dense copy), dst permuted batch */
    spec a4 = {4, {2, 3, M, K}, {0, M * K * 2, K * 2, 2}}, b4 = {4, {2, 3, K, N}, {K * N, 0, N, 1}};
    spec d4 = {4, {2, 3, M, N}, {M * N, 2 * M * N, N, 1}};
    CHECK(run_case("4-d broadcast both", FF_BF16, a4, b4, d4, 0) == 0);
}

static void setup(void)
{
    setenv("FF_NUM_THREADS", "16", 1); /* read when cpu_blas loads: products of few rows get column blocks */
    ref = ff_backend_load("cpu");
    fast = ff_backend_load("cpu_blas");
    if (!ref || !fast) {
        fprintf(stderr, "cannot load cpu / cpu_blas: %s\n", ff_last_error());
        exit(1);
    }
}

FF_TEST_MAIN("cpu_blas_half_dnnl", TEST(setup), TEST(test_layouts), TEST(test_column_blocks), TEST(test_batched))
