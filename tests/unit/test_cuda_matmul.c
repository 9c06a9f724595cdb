/* The cuda backend's matmul planning on the host (built only with FF_BUILD_CUDA): which
 * operands cuBLAS reads in place (row-major, or transposed through CUBLAS_OP_T), which
 * are copied first, leading dimensions, the row-major <-> column-major swap, merged batch
 * strides (0 for broadcast), the strided-batched and plain calls. The cuBLAS calls of
 * backends/cuda/cuda_matmul.c land in a column-major GEMM written here over host memory,
 * which also rejects what cuBLAS rejects (lda < rows, a batch stride of 0 on C), and the
 * results are compared with a naive product of the views, for random layouts. */
#include <stdlib.h>

#include "cuda_impl.h"
#include "ff_test.h"

/* cuBLAS: tests/cuda_emu/cuda_emu_blas.c, a column-major GEMM over host memory */
extern int cuda_emu_gemm_calls, cuda_emu_gemm_batched;

static double at(const void *p, int f32, int64_t i) { return f32 ? ((const float *)p)[i] : ((const double *)p)[i]; }

/* ---- the rest of the backend, on the host ------------------------------------------------ */

extern char cuda_emu_last_msg[]; /* cuda_error, cuda_use_device: tests/cuda_emu/cuda_emu_messages.c */
void *cuda_temp(cuda_ctx *c, const char *entry, size_t n) { (void)c, (void)entry; return malloc(n); }
void cuda_free(void *ctx, void *buf) { (void)ctx, free(buf); }
ff_status cuda_matmul_int(cuda_ctx *c, const ff_view *d, const ff_view *a, const ff_view *b)
{
    (void)d, (void)a, (void)b;
    return cuda_error(c, FF_ERR_UNSUPPORTED, "not in this test");
}

/* element offset of v at the row-major index n */
static int64_t elem(const ff_view *v, int64_t n)
{
    int64_t off = v->offset;
    for (int d = v->ndim - 1; d >= 0; d--) off += (n % v->shape[d]) * v->strides[d], n /= v->shape[d];
    return off;
}

ff_status cuda_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    (void)ctx;
    size_t es = ff_dtype_size(dst->dtype);
    for (int64_t n = 0; n < ff_view_numel(dst); n++)
        memcpy((char *)dst->buf + elem(dst, n) * es, (const char *)src->buf + elem(src, n) * es, es);
    return FF_OK;
}

ff_status cuda_fill(void *ctx, const ff_view *dst, ff_scalar v)
{
    (void)ctx;
    for (int64_t n = 0; n < ff_view_numel(dst); n++) {
        if (dst->dtype == FF_F32) ((float *)dst->buf)[elem(dst, n)] = (float)v.f;
        else ((double *)dst->buf)[elem(dst, n)] = v.f;
    }
    return FF_OK;
}

/* ---- tests -------------------------------------------------------------------------------- */

static uint64_t rng = 77;
static int64_t rnd(int64_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (int64_t)(rng % (uint64_t)n);
}

/* A view of shape over a fresh buffer: batch dims contiguous or broadcast (stride 0), the
 * matrix row-major, transposed, stepped, or with a broadcast row/column. */
static void *make(ff_view *v, ff_dtype t, int r, const int64_t *shape, int is_dst)
{
    memset(v, 0, sizeof *v);
    v->ndim = r, v->dtype = t, v->offset = rnd(4);
    int64_t R = shape[r - 2], Cn = shape[r - 1];
    int mode = (int)rnd(is_dst ? 3 : 5);
    int64_t pad = rnd(3);
    if (mode == 0) v->strides[r - 1] = 1, v->strides[r - 2] = Cn + pad;          /* row-major, maybe lda > cols */
    else if (mode == 1) v->strides[r - 2] = 1, v->strides[r - 1] = R + pad;      /* transposed */
    else if (mode == 2) v->strides[r - 1] = 2, v->strides[r - 2] = 2 * Cn + 1;   /* stepped: copied */
    else if (mode == 3) v->strides[r - 1] = 1, v->strides[r - 2] = 0;            /* a broadcast row */
    else v->strides[r - 2] = 1, v->strides[r - 1] = 0;                           /* a broadcast column */
    int64_t span = v->offset + 1 + (R - 1) * v->strides[r - 2] + (Cn - 1) * v->strides[r - 1];
    if (span < 1) span = 1; /* K = 0: no element */
    for (int d = r - 3; d >= 0; d--) {
        v->shape[d] = shape[d];
        v->strides[d] = !is_dst && rnd(3) == 0 ? 0 : span;
        span += (shape[d] - 1) * v->strides[d];
    }
    v->shape[r - 2] = R, v->shape[r - 1] = Cn;
    size_t bytes = (size_t)(span + 1) * ff_dtype_size(t);
    void *p = calloc(1, bytes);
    v->buf = p;
    for (size_t i = 0; i < bytes / ff_dtype_size(t); i++) {
        double x = (double)(rnd(17) - 8);
        if (t == FF_F32) ((float *)p)[i] = (float)x;
        else ((double *)p)[i] = x;
    }
    return p;
}

static void test_random_layouts(void)
{
    cuda_ctx c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.blas_lock, NULL);
    CHECK(cuda_blas_init(&c) == FF_OK);
    int bad = 0, batched_before = cuda_emu_gemm_batched;
    for (int iter = 0; iter < 2000 && !bad; iter++) {
        ff_dtype t = rnd(2) ? FF_F32 : FF_F64;
        int r = 2 + (int)rnd(3);
        int64_t M = 1 + rnd(5), N = 1 + rnd(5), K = rnd(6), sd[FF_MAX_DIMS], sa[FF_MAX_DIMS], sb[FF_MAX_DIMS];
        for (int d = 0; d < r - 2; d++) sd[d] = sa[d] = sb[d] = 1 + rnd(3);
        sd[r - 2] = sa[r - 2] = M, sd[r - 1] = sb[r - 1] = N, sa[r - 1] = sb[r - 2] = K;
        ff_view dv, av, bv;
        void *pd = make(&dv, t, r, sd, 1), *pa = make(&av, t, r, sa, 0), *pb = make(&bv, t, r, sb, 0);
        if (cuda_matmul(&c, &dv, &av, &bv)) {
            fprintf(stderr, "iteration %d: %s\n", iter, cuda_emu_last_msg);
            bad = 1;
        }
        int64_t batches = ff_view_numel(&dv) / (M * N);
        for (int64_t bt = 0; bt < batches && !bad; bt++)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0;
                    for (int64_t p = 0; p < K; p++)
                        s += at(av.buf, t == FF_F32, elem(&av, (bt * M + i) * K + p)) *
                             at(bv.buf, t == FF_F32, elem(&bv, (bt * K + p) * N + j));
                    double got = at(dv.buf, t == FF_F32, elem(&dv, (bt * M + i) * N + j));
                    if (got != s && !bad) {
                        fprintf(stderr, "iteration %d: rank %d M %lld N %lld K %lld: [%lld][%lld][%lld] got %g want %g\n",
                                iter, r, (long long)M, (long long)N, (long long)K, (long long)bt, (long long)i,
                                (long long)j, got, s);
                        bad = 1;
                    }
                }
        free(pd), free(pa), free(pb);
    }
    CHECK(!bad);
    CHECK(cuda_emu_gemm_batched > batched_before); /* batched calls were made, not only plain ones */
    cuda_blas_destroy(&c);
}

FF_TEST_MAIN("cuda_matmul", TEST(test_random_layouts))
