/*
 * Batched matmul: dst[..., M, N] = a[..., M, K] @ b[..., K, N].
 *
 * F32/F64 go to OpenBLAS sgemm/dgemm, one call per batch element (f32 to blas_gemm.c
 * instead when OpenBLAS runs a generic kernel, see there), C split across the pool. An operand whose
 * matrix is row-major (column stride 1) is passed as is with its row stride as the
 * leading dimension; one that is column-major (row stride 1: a transposed view) is
 * passed with the transpose flag, no copy. Any other layout (broadcast rows, steps)
 * is first copied to a contiguous scratch matrix. A column-major dst is handled by
 * computing dst^T = b^T a^T. Very small products skip BLAS (its call overhead is
 * larger than the work) and use a direct i-k-j loop accumulating in double.
 *
 * I32/I64/U8 use their own i-k-j kernel, accumulating in uint64 (wrap-around, as the
 * reference). BOOL is unsupported, as in the reference. C64/C128 go to cgemm/zgemm
 * (the layouts as for F32/F64; never the direct loop, which has no complex form).
 */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"

/* Row slices for the own sgemm are multiples of its 12-row micro-tile. */
#define MR_ALIGN 12

/* Below this many multiply-adds the direct loop wins over a BLAS call. */
#define SMALL_MNK 4096

static ff_status check_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    return ffb_matmul_check(ctx ? ((blas_ctx *)ctx)->host : NULL, "cpu_blas", dst, a, b);
}

/* A matrix operand as BLAS sees it. */
typedef struct mat {
    const char *p;  /* first element */
    int64_t rs, cs; /* element strides of rows and columns */
} mat;

/* How BLAS can read a rows x cols matrix: 0 = row-major (ld = *ld), 1 = column-major
 * (transposed, ld = *ld), -1 = needs a copy. */
static int blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, int64_t *ld)
{
    if (cols == 1) cs = 1;    /* a stride over one element is meaningless */
    if (rows == 1) rs = cols; /* likewise */
    if (cs == 1 && rs >= (cols > 1 ? cols : 1)) { *ld = rs; return 0; }
    if (rs == 1 && cs >= (rows > 1 ? rows : 1)) { *ld = cs; return 1; }
    return -1;
}

/* Copies a strided rows x cols matrix into a dense row-major buffer. */
static void pack(char *out, const mat *m, int64_t rows, int64_t cols, int64_t es)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) memcpy(out + (i * cols + j) * es, m->p + (i * m->rs + j * m->cs) * es, (size_t)es);
}

static void gemm(const blas_ctx *c, ff_dtype t, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                 int64_t lda, const void *B, int64_t ldb, void *C, int64_t ldc)
{
    enum CBLAS_TRANSPOSE TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
    if (t == FF_C64) {
        const float one[2] = {1.0f, 0.0f}, zero[2] = {0.0f, 0.0f};
        cblas_cgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, one, A, (blasint)lda, B, (blasint)ldb,
                    zero, C, (blasint)ldc);
    } else if (t == FF_C128) {
        const double one[2] = {1.0, 0.0}, zero[2] = {0.0, 0.0};
        cblas_zgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, one, A, (blasint)lda, B, (blasint)ldb,
                    zero, C, (blasint)ldc);
    } else if (t == FF_F32 && c->dnnl_gemm)
        blas_sgemm_dnnl(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);
    else if (t == FF_F32)
        cblas_sgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, 1.0f, A, (blasint)lda, B, (blasint)ldb,
                    0.0f, C, (blasint)ldc);
    else
        cblas_dgemm(CblasRowMajor, TA, TB, (blasint)M, (blasint)N, (blasint)K, 1.0, A, (blasint)lda, B, (blasint)ldb,
                    0.0, C, (blasint)ldc);
}

/* Direct i-k-j product, any strides; floats accumulate in double, integers in uint64. */
static void small_kernel(ff_dtype t, int64_t M, int64_t N, int64_t K, const mat *a, const mat *b, char *d,
                         int64_t drs, int64_t dcs, void *row)
{
    int64_t es = (int64_t)ff_dtype_size(t);
    if (t == FF_F32) { /* the tiny-model case: typed loads, same double accumulation */
        double *acc = row;
        const float *ap = (const float *)a->p, *bp = (const float *)b->p;
        float *dp = (float *)d;
        if (b->cs != 1 || N < 8) {
            /* B's rows are strided or short: a dot product per element, the sum in a register
             * (the i-k-j form below would chain every k through a store and a load of acc[j]);
             * each element still sums over k in order, so the bits are the same */
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    double s = 0.0;
                    const float *ar = ap + i * a->rs, *bc = bp + j * b->cs;
                    for (int64_t k = 0; k < K; k++) s += (double)ar[k * a->cs] * (double)bc[k * b->rs];
                    dp[i * drs + j * dcs] = (float)s;
                }
            return;
        }
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < N; j++) acc[j] = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double aik = ap[i * a->rs + k * a->cs];
                const float *brow = bp + k * b->rs;
                for (int64_t j = 0; j < N; j++) acc[j] += aik * (double)brow[j * b->cs];
            }
            for (int64_t j = 0; j < N; j++) dp[i * drs + j * dcs] = (float)acc[j];
        }
        return;
    }
    for (int64_t i = 0; i < M; i++) {
        if (blas_is_float(t)) {
            double *acc = row;
            for (int64_t j = 0; j < N; j++) acc[j] = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double aik = ffb_ld_f64(a->p + (i * a->rs + k * a->cs) * es, t);
                const char *brow = b->p + k * b->rs * es;
                if (t == FF_F32 && b->cs == 1) {
                    const float *bf = (const float *)brow;
                    for (int64_t j = 0; j < N; j++) acc[j] += aik * bf[j];
                } else {
                    for (int64_t j = 0; j < N; j++) acc[j] += aik * ffb_ld_f64(brow + j * b->cs * es, t);
                }
            }
            for (int64_t j = 0; j < N; j++) ffb_st_f64(d + (i * drs + j * dcs) * es, t, acc[j]);
        } else {
            uint64_t *acc = row;
            for (int64_t j = 0; j < N; j++) acc[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                uint64_t aik = (uint64_t)ffb_ld_i64(a->p + (i * a->rs + k * a->cs) * es, t);
                const char *brow = b->p + k * b->rs * es;
                for (int64_t j = 0; j < N; j++) acc[j] += aik * (uint64_t)ffb_ld_i64(brow + j * b->cs * es, t);
            }
            for (int64_t j = 0; j < N; j++) ffb_st_i64(d + (i * drs + j * dcs) * es, t, ffb_u64_to_i64(acc[j]));
        }
    }
}

typedef struct mm_scratch {
    char *a, *b, *d; /* packed copies when needed */
    void *row;       /* N accumulators for the direct kernel */
} mm_scratch;

/* A BLAS-ready product, split across the pool by rows of C (or by columns when C is
 * wide): every thread calls a single-threaded gemm on its slice. One pool for every
 * entry means OpenBLAS's own threads never run, so they never spin against ours. */
typedef struct gemm_job {
    blas_ctx *ctx;
    ff_dtype t;
    int la, lb, lt, by_rows, own;
    atomic_int failed; /* a slice ran out of memory */
    int64_t M, N, K, es, lda, ldb, ldc;
    mat A, B;
    char *C;
    int64_t crs, ccs; /* element strides of C's rows and columns */
} gemm_job;

static void gemm_slice(void *arg, int64_t b, int64_t e)
{
    const gemm_job *j = arg;
    const char *A = j->A.p, *B = j->B.p;
    char *C = j->C;
    int64_t m = j->M, n = j->N;
    if (j->by_rows) {
        m = e - b;
        A += b * j->A.rs * j->es, C += b * j->crs * j->es;
    } else {
        n = e - b;
        B += b * j->B.cs * j->es, C += b * j->ccs * j->es;
    }
    if (j->own) {
        if (blas_sgemm_own(j->ctx, m, n, j->K, (const float *)A, j->A.rs, j->A.cs, (const float *)B, j->B.rs, j->B.cs,
                           (float *)C, j->crs, j->ccs))
            atomic_store(&((gemm_job *)j)->failed, 1);
        return;
    }
    if (j->lt == 1) /* C column-major: C^T (n x m, row-major) = B^T A^T */
        gemm(j->ctx, j->t, !j->lb, !j->la, n, m, j->K, B, j->ldb, A, j->lda, C, j->ldc);
    else
        gemm(j->ctx, j->t, j->la, j->lb, m, n, j->K, A, j->lda, B, j->ldb, C, j->ldc);
}

/* One product C = A B of M x K by K x N; returns non-zero on OOM. */
static int matmul_one(blas_ctx *c, ff_dtype t, int64_t M, int64_t N, int64_t K, mat A, mat B, char *dp, int64_t drs,
                       int64_t dcs, mm_scratch *s)
{
    int64_t es = (int64_t)ff_dtype_size(t);
    if (!ff_dtype_is_complex(t) && (!blas_is_float(t) || M * N * K <= SMALL_MNK)) {
        small_kernel(t, M, N, K, &A, &B, dp, drs, dcs, s->row);
        return 0;
    }
    if (t == FF_F32 && blas_skinny_ok(c, M, N, K, A.cs, B.rs)) /* x W^T at a few rows: W read in place */
        return blas_sgemm_skinny(c, M, N, K, (const float *)A.p, A.rs, (const float *)B.p, B.cs, (float *)dp, drs, dcs);
    gemm_job j = {.ctx = c, .t = t, .M = M, .N = N, .K = K, .es = es};
    if (t == FF_F32 && c->own_gemm) { /* any strides: the kernel packs them itself */
        j.own = 1, j.A = A, j.B = B, j.C = dp, j.crs = drs, j.ccs = dcs;
        j.by_rows = M >= N;
        int64_t min_par = M * N * K >= (1 << 20) ? 64 : INT64_MAX;
        blas_parallel_for(c, j.by_rows ? M : N, min_par, j.by_rows ? MR_ALIGN : 32, gemm_slice, &j);
        return atomic_load(&j.failed);
    }
    j.la = blas_layout(M, K, A.rs, A.cs, &j.lda);
    j.lb = blas_layout(K, N, B.rs, B.cs, &j.ldb);
    if (j.la < 0) {
        pack(s->a, &A, M, K, es);
        A = (mat){s->a, K, 1}, j.la = 0, j.lda = K;
    }
    if (j.lb < 0) {
        pack(s->b, &B, K, N, es);
        B = (mat){s->b, N, 1}, j.lb = 0, j.ldb = N;
    }
    j.A = A, j.B = B;
    j.lt = blas_layout(M, N, drs, dcs, &j.ldc);
    j.C = j.lt < 0 ? s->d : dp;
    j.crs = j.lt < 0 ? N : drs, j.ccs = j.lt < 0 ? 1 : dcs;
    if (j.lt < 0) j.lt = 0, j.ldc = N;
    /* split the longer side of C; a slice of at least 32 rows/columns, 16-aligned */
    j.by_rows = M >= N;
    int64_t len = j.by_rows ? M : N, min_par = M * N * K >= (1 << 20) ? 64 : INT64_MAX;
    blas_parallel_for(c, len, min_par, 16, gemm_slice, &j);
    if (j.C == s->d)
        for (int64_t i = 0; i < M; i++)
            for (int64_t q = 0; q < N; q++) memcpy(dp + (i * drs + q * dcs) * es, s->d + (i * N + q) * es, (size_t)es);
    return 0;
}

ff_status blas_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if (dst && ffb_is_half(dst->dtype)) return blas_half_matmul(ctx, dst, a, b);
    ff_status st = check_matmul(ctx, dst, a, b);
    if (st) return st;
    if (ff_view_numel(dst) == 0) return FF_OK;
    int r = dst->ndim;
    ff_dtype t = dst->dtype;
    int64_t M = dst->shape[r - 2], N = dst->shape[r - 1], K = a->shape[r - 1], es = (int64_t)ff_dtype_size(t);
    if (K == 0 && ff_dtype_is_complex(t)) { /* zeros: every byte of both parts */
        int64_t idx[FF_MAX_DIMS] = {0}, n = ff_view_numel(dst);
        for (int64_t e = 0; e < n; e++) {
            int64_t o = dst->offset;
            for (int d = 0; d < r; d++) o += idx[d] * dst->strides[d];
            memset((char *)dst->buf + o * es, 0, (size_t)es);
            for (int d = r - 1; d >= 0 && ++idx[d] == dst->shape[d]; d--) idx[d] = 0;
        }
        return FF_OK;
    }
    if (K == 0) {
        ff_scalar zero = {0.0, 0};
        return blas_fill(ctx, dst, zero);
    }
    /* the layout is the same for every batch element: size the scratch once */
    int64_t lda, ldb, ldd;
    int small = !ff_dtype_is_complex(t) && (!blas_is_float(t) || M * N * K <= SMALL_MNK);
    int own = !small && t == FF_F32 && ((blas_ctx *)ctx)->own_gemm; /* packs by itself */
    int pa = !small && !own && blas_layout(M, K, a->strides[r - 2], a->strides[r - 1], &lda) < 0;
    int pb = !small && !own && blas_layout(K, N, b->strides[r - 2], b->strides[r - 1], &ldb) < 0;
    int pd = !small && !own && blas_layout(M, N, dst->strides[r - 2], dst->strides[r - 1], &ldd) < 0;
    size_t need_a = pa ? (size_t)(M * K * es) : 0, need_b = pb ? (size_t)(K * N * es) : 0;
    size_t need_d = pd ? (size_t)(M * N * es) : 0, need_r = small ? (size_t)N * 8 : 0;
    size_t total = need_a + need_b + need_d + need_r;
    mm_scratch s = {0};
    char *mem = NULL;
    if (total) {
        mem = blas_scratch(ctx, total);
        if (!mem) return FF_ERR_OOM;
        s.a = mem, s.b = mem + need_a, s.d = s.b + need_b, s.row = s.d + need_d;
    }

    /* walk the batch dims in row-major order (none: once) */
    int nb = r - 2;
    int64_t idx[FF_MAX_DIMS] = {0}, ao = a->offset, bo = b->offset, dof = dst->offset, nbatch = 1;
    for (int d = 0; d < nb; d++) nbatch *= dst->shape[d];
    for (int64_t n = 0; n < nbatch; n++) {
        mat A = {(const char *)a->buf + ao * es, a->strides[r - 2], a->strides[r - 1]};
        mat B = {(const char *)b->buf + bo * es, b->strides[r - 2], b->strides[r - 1]};
        if (matmul_one(ctx, t, M, N, K, A, B, (char *)dst->buf + dof * es, dst->strides[r - 2], dst->strides[r - 1], &s)) {
            blas_free(ctx, mem);
            return blas_error(ctx, FF_ERR_OOM, "cpu_blas matmul: out of memory for packing buffers");
        }
        for (int d = nb - 1; d >= 0; d--) {
            if (++idx[d] < dst->shape[d]) {
                ao += a->strides[d], bo += b->strides[d], dof += dst->strides[d];
                break;
            }
            idx[d] = 0;
            ao -= a->strides[d] * (a->shape[d] - 1);
            bo -= b->strides[d] * (b->shape[d] - 1);
            dof -= dst->strides[d] * (dst->shape[d] - 1);
        }
    }
    blas_free(ctx, mem);
    return FF_OK;
}
