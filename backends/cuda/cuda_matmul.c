/*
 * matmul: cuBLAS for F32/F64, a simple kernel for integers (cuda_index.cu).
 *
 * cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T, so the
 * call computes dst^T with B's matrix first. Each operand's last two dims are either
 * row-major with a leading dimension (stride of the columns 1) or column-major (a
 * transposed view: stride of the rows 1): the first needs no transpose flag in the
 * swapped call, the second CUBLAS_OP_T, and neither needs a copy. A view that is
 * neither (both strides > 1, a broadcast inside the matrix) is copied to a contiguous
 * temporary first; so is dst when it is not row-major (computed there, copied back).
 * The batch dims of dst, a and b are merged; one remaining batch dim is one
 * strided-batched call (stride 0 for a broadcast operand), more loop on the host; a
 * single product is a plain cublasSgemm / cublasDgemm.
 *
 * F16 and BF16 (issue 52): cublasGemmEx / cublasGemmStridedBatchedEx with half inputs and
 * output, CUBLAS_COMPUTE_32F (f32 products and sums, on the tensor cores), one rounding
 * to the half dtype at the store; split-K reductions in half precision are disallowed
 * (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), so every sum stays in f32 as the
 * ABI's accuracy rule asks. The layouts, copies and batching are the f32 path's. Before,
 * supports() declined halves and the core ran an f32 matmul between two conversions.
 *
 * Precision: TF32 is off (CUBLAS_DEFAULT_MATH: f32 products and sums in f32 on the
 * CUDA cores), as the ABI's accuracy rule for matmul asks; FF_CUDA_TF32=1 switches
 * cuBLAS to CUBLAS_TF32_TENSOR_OP_MATH (about 10 bits of mantissa in the products:
 * faster, and outside the conformance tolerances).
 */
#include <cublas_v2.h>
#include <limits.h>
#include <string.h>

#include "cuda_impl.h"

ff_status cuda_blas_init(cuda_ctx *c)
{
    cublasHandle_t h = NULL;
    cublasStatus_t s = cublasCreate(&h);
    if (s != CUBLAS_STATUS_SUCCESS)
        return cuda_error(c, FF_ERR_BACKEND, "cuda init: cublasCreate failed: %s", cublasGetStatusString(s));
    c->cublas = h;
    if ((s = cublasSetStream(h, c->stream)) != CUBLAS_STATUS_SUCCESS ||
        (s = cublasSetMathMode(h, (cublasMath_t)((c->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH) |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION))) !=
            CUBLAS_STATUS_SUCCESS)
        return cuda_error(c, FF_ERR_BACKEND, "cuda init: cuBLAS setup failed: %s", cublasGetStatusString(s));
    return FF_OK;
}

void cuda_blas_destroy(cuda_ctx *c)
{
    if (c->cublas) cublasDestroy((cublasHandle_t)c->cublas);
    c->cublas = NULL;
}

/* The matrix (last two dims, rows x cols) of v as cuBLAS can read it: row-major with
 * leading dimension *ld (*col_major = 0) or column-major (*col_major = 1); 0 if neither. */
int cuda_mat_layout(const ff_view *v, int64_t rows, int64_t cols, int *col_major, int64_t *ld)
{
    int r = v->ndim;
    int64_t sr = v->strides[r - 2], sc = v->strides[r - 1];
    int64_t mc = cols > 1 ? cols : 1, mr = rows > 1 ? rows : 1;
    if ((cols == 1 || sc == 1) && (rows == 1 || sr >= mc)) {
        *col_major = 0, *ld = rows == 1 ? mc : sr;
    } else if ((rows == 1 || sr == 1) && (cols == 1 || sc >= mr)) {
        *col_major = 1, *ld = cols == 1 ? mr : sc;
    } else {
        return 0;
    }
    return *ld <= INT_MAX;
}

/* A contiguous temporary holding v's values (*out views it); NULL on failure. */
void *cuda_contiguous_copy(cuda_ctx *c, const ff_view *v, ff_view *out, int fill_it)
{
    size_t bytes = (size_t)ff_view_numel(v) * ff_dtype_size(v->dtype);
    void *p = cuda_temp(c, "matmul", bytes ? bytes : 1);
    if (!p) return NULL;
    *out = *v;
    out->buf = p;
    out->offset = 0;
    int64_t s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) out->strides[d] = s, s *= v->shape[d];
    if (fill_it && cuda_copy(c, out, v)) {
        cuda_free(c, p);
        return NULL;
    }
    return p;
}

ff_status cuda_mat_operand(cuda_ctx *c, const ff_view **v, int64_t rows, int64_t cols, ff_view *copy, void **tmp,
                           int *cm, int64_t *ld)
{
    *tmp = NULL;
    if (cuda_mat_layout(*v, rows, cols, cm, ld)) return FF_OK;
    if (!(*tmp = cuda_contiguous_copy(c, *v, copy, 1))) return FF_ERR_OOM;
    *v = copy, *cm = 0, *ld = cols;
    return FF_OK;
}

typedef struct gemm_args {
    int m, n, k, lda, ldb, ldc;
    cublasOperation_t ta, tb;
    long long sa, sb, sc; /* batch strides in elements: A = b's side, B = a's side, C = dst */
} gemm_args;

static cublasStatus_t gemm(cuda_ctx *c, ff_dtype t, const gemm_args *g, const void *A, const void *B, void *C,
                           int batch)
{
    cublasHandle_t h = (cublasHandle_t)c->cublas;
    if (ffb_is_half(t)) {
        const float one = 1.0f, zero = 0.0f;
        cudaDataType ht = t == FF_F16 ? CUDA_R_16F : CUDA_R_16BF;
        if (batch == 1)
            return cublasGemmEx(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, ht, g->lda, B, ht, g->ldb, &zero, C, ht,
                                g->ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        return cublasGemmStridedBatchedEx(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, ht, g->lda, g->sa, B, ht, g->ldb,
                                          g->sb, &zero, C, ht, g->ldc, g->sc, batch, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT);
    }
    /* one product: the plain call, whose kernel choice is what a direct cuBLAS user gets */
    if (batch == 1 && t == FF_F32) {
        const float one = 1.0f, zero = 0.0f;
        return cublasSgemm(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda, B, g->ldb, &zero, C, g->ldc);
    }
    if (batch == 1) {
        const double one = 1.0, zero = 0.0;
        return cublasDgemm(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda, B, g->ldb, &zero, C, g->ldc);
    }
    if (t == FF_F32) {
        const float one = 1.0f, zero = 0.0f;
        return cublasSgemmStridedBatched(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda, g->sa, B, g->ldb, g->sb,
                                         &zero, C, g->ldc, g->sc, batch);
    }
    const double one = 1.0, zero = 0.0;
    return cublasDgemmStridedBatched(h, g->ta, g->tb, g->m, g->n, g->k, &one, A, g->lda, g->sa, B, g->ldb, g->sb, &zero,
                                     C, g->ldc, g->sc, batch);
}

/* dst = a @ b with every matrix in a layout cuBLAS reads (dst row-major). */
static ff_status gemm_views(cuda_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b, int acm, int64_t lda,
                            int bcm, int64_t ldb, int64_t ldd)
{
    int r = dst->ndim;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda matmul: [%lld x %lld] @ [%lld x %lld] exceeds cuBLAS's int sizes",
                          (long long)M, (long long)K, (long long)K, (long long)N);
    cuda_walk w;
    memset(&w, 0, sizeof w);
    w.ndim = r - 2, w.nv = 3;
    const ff_view *vs[] = {dst, a, b};
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < r - 2; d++) w.strides[i][d] = vs[i]->strides[d];
    for (int d = 0; d < r - 2; d++) w.shape[d] = dst->shape[d];
    cuda_walk_merge(&w);
    int nd = w.ndim;
    int64_t batch = nd ? w.shape[nd - 1] : 1, outer = 1;
    for (int d = 0; d + 1 < nd; d++) outer *= w.shape[d];
    if (batch > INT_MAX) return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda matmul: batch of %lld", (long long)batch);
    gemm_args g = {(int)N, (int)M, (int)K, (int)ldb, (int)lda, (int)ldd, bcm ? CUBLAS_OP_T : CUBLAS_OP_N,
                   acm ? CUBLAS_OP_T : CUBLAS_OP_N, nd ? w.strides[2][nd - 1] : 0, nd ? w.strides[1][nd - 1] : 0,
                   nd ? w.strides[0][nd - 1] : 0};
    size_t es = ff_dtype_size(dst->dtype);
    ff_status st = FF_OK;
    pthread_mutex_lock(&c->blas_lock);
    for (int64_t o = 0; o < outer && !st; o++) {
        int64_t off[3] = {dst->offset, a->offset, b->offset}, rest = o;
        for (int d = nd - 2; d >= 0; d--) { /* the outer batch index, digit by digit */
            int64_t k = rest % w.shape[d];
            rest /= w.shape[d];
            for (int i = 0; i < 3; i++) off[i] += k * w.strides[i][d];
        }
        cublasStatus_t s = gemm(c, dst->dtype, &g, (const char *)b->buf + off[2] * es, (const char *)a->buf + off[1] * es,
                                (char *)dst->buf + off[0] * es, (int)batch);
        if (s != CUBLAS_STATUS_SUCCESS)
            st = cuda_error(c, FF_ERR_BACKEND, "cuda matmul: cublas%s%s failed: %s",
                            ffb_is_half(dst->dtype) ? "GemmEx" : dst->dtype == FF_F32 ? "Sgemm" : "Dgemm",
                            batch == 1 ? "" : "StridedBatched", cublasGetStatusString(s));
    }
    pthread_mutex_unlock(&c->blas_lock);
    return st;
}

/* The ABI's matmul checks; F16/BF16 views (which ffb_matmul_check refuses: storage
 * dtypes elsewhere) are checked as storage, then for shapes as f32 ones. */
static ff_status check_matmul(cuda_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (!dst || !ffb_is_half(dst->dtype)) return ffb_matmul_check(c->host, "cuda", dst, a, b);
    ff_status st;
    if ((st = ffb_check_view_as(c->host, "cuda", "matmul", "dst", dst, 1)) ||
        (st = ffb_check_view_as(c->host, "cuda", "matmul", "a", a, 1)) ||
        (st = ffb_check_view_as(c->host, "cuda", "matmul", "b", b, 1)))
        return st;
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return ffb_fail(c->host, FF_ERR_INVALID, "cuda matmul: dtypes differ (dst %s, a %s, b %s)",
                        ffb_dtype_name(dst->dtype), ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype));
    ff_view d = *dst, x = *a, y = *b;
    d.dtype = x.dtype = y.dtype = cuda_rule_dtype(dst->dtype);
    return ffb_matmul_check(c->host, "cuda", &d, &x, &y);
}

ff_status cuda_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    cuda_ctx *c = ctx;
    ff_status st = check_matmul(c, dst, a, b);
    if (st) return st;
    int r = dst->ndim;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1];
    if (ff_view_numel(dst) == 0) return FF_OK;
    if ((st = cuda_use_device(c, "matmul"))) return st;
    if (K == 0) return cuda_fill(c, dst, (ff_scalar){0.0, 0});
    if (!ffb_is_float(dst->dtype) && !ffb_is_half(dst->dtype)) return cuda_matmul_int(c, dst, a, b);

    ff_view at, bt, dt;
    void *ta = NULL, *tb = NULL, *td = NULL;
    int acm, bcm, dcm;
    int64_t lda, ldb, ldd;
    if ((st = cuda_mat_operand(c, &a, M, K, &at, &ta, &acm, &lda))) return st;
    st = cuda_mat_operand(c, &b, K, N, &bt, &tb, &bcm, &ldb);
    const ff_view *d = dst;
    if (!st && (!cuda_mat_layout(dst, M, N, &dcm, &ldd) || dcm)) { /* computed row-major, copied back */
        if (!(td = cuda_contiguous_copy(c, dst, &dt, 0))) st = FF_ERR_OOM;
        d = &dt, ldd = N;
    }
    if (!st) st = gemm_views(c, d, a, b, acm, lda, bcm, ldb, ldd);
    if (!st && td) st = cuda_copy(c, dst, &dt);
    if (ta) cuda_free(c, ta); /* stream order: reused only by later work */
    if (tb) cuda_free(c, tb);
    if (td) cuda_free(c, td);
    return st;
}
