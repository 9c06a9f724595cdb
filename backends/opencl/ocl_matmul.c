/*
 * Batched matmul. f32/f64 go through CLBlast (when built with it; FF_OPENCL_GEMM=own
 * forces the own kernel): each operand's last two dims become a row-major matrix with a
 * leading dimension, a transposed view becomes CLBlast's transpose flag (no copy), and
 * batch dims that merge into one stride (0 for a broadcast operand included) become one
 * strided-batched call. Only views no BLAS can describe (both strides > 1) are first
 * copied to a dense temporary. Integers, and floats without CLBlast, take the own
 * kernel (kernels/matmul.cl), exact in 64-bit wrapping arithmetic as the reference.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl_impl.h"
#ifdef FF_OCL_HAVE_CLBLAST
#include <clblast_c.h>
#endif

int ocl_matmul_supported(ff_dtype t) { return ffb_dtype_ok(t) && t != FF_BOOL; }

const char *ocl_matmul_engine(void)
{
#ifdef FF_OCL_HAVE_CLBLAST
    return "CLBlast (f32/f64) and the own kernel (integers)";
#else
    return "the own kernel (built without CLBlast)";
#endif
}

static ff_status check_matmul(ocl_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    return ffb_matmul_check(c->host, "opencl", dst, a, b);
}

/* The batch dims of the three views as kernel views (offset 0), merged together. */
static void batch_views(const ff_view *dst, const ff_view *a, const ff_view *b, ocl_kview v[3])
{
    const ff_view *src[3] = {dst, a, b};
    for (int i = 0; i < 3; i++) {
        v[i] = ocl_kview_of(src[i]);
        v[i].offset = 0;
        v[i].ndim = src[i]->ndim - 2;
        for (int d = v[i].ndim; d < FF_MAX_DIMS; d++) v[i].shape[d] = v[i].strides[d] = 0;
    }
    ocl_kview_merge(v, 3);
}

/* The last two dims of v as a 2-d kernel view. */
static ocl_kview mat_view(const ff_view *v)
{
    ocl_kview k = ocl_kview_of(v);
    int r = v->ndim;
    memset(k.shape, 0, sizeof k.shape);
    memset(k.strides, 0, sizeof k.strides);
    k.ndim = 2;
    k.shape[0] = v->shape[r - 2], k.shape[1] = v->shape[r - 1];
    k.strides[0] = v->strides[r - 2], k.strides[1] = v->strides[r - 1];
    return k;
}

static ff_status matmul_own(ocl_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ocl_kview bv[3], d = mat_view(dst), av = mat_view(a), bm = mat_view(b);
    batch_views(dst, a, b, bv);
    int64_t total = ff_view_numel(dst);
    cl_long nn = total;
    cl_mem md = ocl_mem_of(dst->buf), ma = ocl_mem_of(a->buf), mb = ocl_mem_of(b->buf);
    ocl_arg args[] = {OCL_ARG(d), OCL_ARG(md), OCL_ARG(av), OCL_ARG(ma), OCL_ARG(bm), OCL_ARG(mb),
                      OCL_ARG(bv[0]), OCL_ARG(bv[1]), OCL_ARG(bv[2]), OCL_ARG(nn)};
    return ocl_launch(c, "matmul", OK_MATMUL, args, 10, ocl_grid(c, total), 0);
}

#ifdef FF_OCL_HAVE_CLBLAST
/* A [rows, cols] matrix with strides (rs, cs) as CLBlast sees it: row-major with leading
 * dimension ld, or the row-major transpose. 0 if neither describes it. */
typedef struct blas_mat { CLBlastTranspose t; size_t ld; } blas_mat;

static int blas_describe(int64_t rows, int64_t cols, int64_t rs, int64_t cs, blas_mat *m)
{
    if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols)) {
        m->t = CLBlastTransposeNo;
        m->ld = (size_t)(rows == 1 || rs < 1 ? (cols > 1 ? cols : 1) : rs);
        return 1;
    }
    if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows)) {
        m->t = CLBlastTransposeYes;
        m->ld = (size_t)(cols == 1 || cs < 1 ? (rows > 1 ? rows : 1) : cs);
        return 1;
    }
    return 0;
}

/* A dense copy of v in a new buffer (*tmp, freed by the caller), described by *out. */
static ff_status dense_copy(ocl_ctx *c, const ff_view *v, void **tmp, ff_view *out)
{
    int64_t n = ff_view_numel(v);
    *tmp = ocl_alloc(c, (size_t)n * ff_dtype_size(v->dtype));
    if (!*tmp) return FF_ERR_OOM;
    *out = *v;
    out->buf = *tmp;
    out->offset = 0;
    int64_t s = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        out->strides[d] = s;
        s *= v->shape[d];
    }
    return ocl_copy(c, out, v);
}

static int describes(const ff_view *v, blas_mat *m)
{
    int r = v->ndim;
    return blas_describe(v->shape[r - 2], v->shape[r - 1], v->strides[r - 2], v->strides[r - 1], m);
}

static ff_status gemm_call(ocl_ctx *c, ff_dtype t, blas_mat ma, blas_mat mb, size_t M, size_t N, size_t K,
                           const ff_view *a, const ff_view *b, const ff_view *dst, size_t ldc, const ocl_kview bv[3],
                           size_t batch)
{
    cl_mem xa = ocl_mem_of(a->buf), xb = ocl_mem_of(b->buf), xd = ocl_mem_of(dst->buf);
    CLBlastStatusCode s = CLBlastSuccess;
    pthread_mutex_lock(&c->launch_lock); /* CLBlast shares kernel objects between calls */
    if (bv[0].ndim <= 1 && batch > 1) {
        size_t sd = bv[0].ndim ? (size_t)bv[0].strides[0] : 0, sa = bv[1].ndim ? (size_t)bv[1].strides[0] : 0,
               sb = bv[2].ndim ? (size_t)bv[2].strides[0] : 0;
        if (t == FF_F32)
            s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ma.t, mb.t, M, N, K, 1.0f, xa, (size_t)a->offset,
                                           ma.ld, sa, xb, (size_t)b->offset, mb.ld, sb, 0.0f, xd,
                                           (size_t)dst->offset, ldc, sd, batch, &c->queue, NULL);
        else
            s = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ma.t, mb.t, M, N, K, 1.0, xa, (size_t)a->offset,
                                           ma.ld, sa, xb, (size_t)b->offset, mb.ld, sb, 0.0, xd,
                                           (size_t)dst->offset, ldc, sd, batch, &c->queue, NULL);
    } else {
        for (size_t i = 0; i < batch && s == CLBlastSuccess; i++) {
            size_t od = (size_t)dst->offset, oa = (size_t)a->offset, ob = (size_t)b->offset, rest = i;
            for (int d = bv[0].ndim - 1; d >= 0; d--) {
                size_t k = rest % (size_t)bv[0].shape[d];
                rest /= (size_t)bv[0].shape[d];
                od += k * (size_t)bv[0].strides[d], oa += k * (size_t)bv[1].strides[d], ob += k * (size_t)bv[2].strides[d];
            }
            if (t == FF_F32)
                s = CLBlastSgemm(CLBlastLayoutRowMajor, ma.t, mb.t, M, N, K, 1.0f, xa, oa, ma.ld, xb, ob, mb.ld, 0.0f, xd,
                                 od, ldc, &c->queue, NULL);
            else
                s = CLBlastDgemm(CLBlastLayoutRowMajor, ma.t, mb.t, M, N, K, 1.0, xa, oa, ma.ld, xb, ob, mb.ld, 0.0, xd,
                                 od, ldc, &c->queue, NULL);
        }
    }
    pthread_mutex_unlock(&c->launch_lock);
    if (s != CLBlastSuccess)
        return ocl_error(c, FF_ERR_BACKEND, "opencl matmul: CLBlast %sgemm failed with status %d (M %zu, N %zu, K %zu)",
                         t == FF_F32 ? "S" : "D", (int)s, M, N, K);
    return FF_OK;
}

static ff_status matmul_blas(ocl_ctx *c, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    int r = dst->ndim;
    size_t M = (size_t)dst->shape[r - 2], N = (size_t)dst->shape[r - 1], K = (size_t)a->shape[r - 1];
    void *ta = NULL, *tb = NULL, *td = NULL;
    ff_view ca, cb, cd;
    blas_mat ma, mb, md;
    ff_status st = FF_OK;
    if (!describes(a, &ma) && !(st = dense_copy(c, a, &ta, &ca))) a = &ca, describes(a, &ma);
    if (!st && !describes(b, &mb) && !(st = dense_copy(c, b, &tb, &cb))) b = &cb, describes(b, &mb);
    const ff_view *out = dst;
    if (!st && !(describes(dst, &md) && md.t == CLBlastTransposeNo)) {
        td = ocl_alloc(c, ff_view_numel(dst) * ff_dtype_size(dst->dtype));
        if (!td) st = FF_ERR_OOM;
        cd = *dst;
        cd.buf = td, cd.offset = 0;
        for (int64_t d = r - 1, s = 1; d >= 0; s *= dst->shape[d], d--) cd.strides[d] = s;
        out = &cd;
        describes(out, &md);
    }
    if (!st) {
        ocl_kview bv[3];
        batch_views(out, a, b, bv);
        size_t batch = (size_t)(ff_view_numel(dst) / (int64_t)(M * N));
        st = gemm_call(c, dst->dtype, ma, mb, M, N, K, a, b, out, md.ld, bv, batch);
    }
    if (!st && td) st = ocl_copy(c, dst, out);
    if (ta) ocl_free(c, ta);
    if (tb) ocl_free(c, tb);
    if (td) ocl_free(c, td);
    return st;
}
#endif

ff_status ocl_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ocl_ctx *c = ctx;
    ff_status st = check_matmul(c, dst, a, b);
    if (st || ff_view_numel(dst) == 0) return st;
    if (a->shape[a->ndim - 1] == 0) return ocl_fill(c, dst, (ff_scalar){0.0, 0}); /* empty sums */
#ifdef FF_OCL_HAVE_CLBLAST
    const char *gemm = getenv("FF_OPENCL_GEMM");
    if (ffb_is_float(dst->dtype) && !(gemm && !strcmp(gemm, "own"))) return matmul_blas(c, dst, a, b);
#endif
    return matmul_own(c, dst, a, b);
}
