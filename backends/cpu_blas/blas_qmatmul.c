/*
 * Quantized matmul (backend_abi.h, ff_qmatmul_params) through oneDNN's int8 matmul
 * primitive: u8 x s8 -> s32, AMX-INT8 or AVX512/AVX-VNNI, whichever oneDNN picks; the
 * zero point, the scales and the bias are applied here, in one pass over y.
 *
 * Why oneDNN gets a bare u8 x s8 -> s32 product (no attributes): with a source zero
 * point or output scales, oneDNN 2.6 leaves its AMX brgemm kernels for the jit gemm and
 * runs the zero-point compensation in plain C++: 640 x 384 x 1536 took 9 ms that way,
 * 1 ms bare on AMX. The zero point is exact afterwards in integers,
 *   sum_k (a - za) b = sum_k a b - za * sum_k b[n, k],
 * and the s32 sums land in y's own memory (f32 and s32 are both 4 bytes), converted in
 * place by the thread that computed them, right after (q_finish), while they are still
 * in its cache.
 *
 * Why the implementation is checked: without VNNI, oneDNN's u8 x s8 kernels pair
 * products in s16 (vpmaddubsw) and saturate, which the ABI forbids (and which is why
 * fbgemm quantizes activations to 7 bits). The call goes ahead only when oneDNN's pick
 * uses VNNI or AMX (impl_exact); anything else, and layouts with a step in both dims,
 * take the exact loop below. Primitives are kept between calls in blas_dnnl_cache.c
 * (shared with the bf16 matmul), keyed by shape, strides and oneDNN's ISA.
 *
 * Dynamic mode (a float x, FF_QMATMUL_DYNAMIC): each row slice quantizes its own rows
 * of x (blas_qdyn.c) into scratch right before its oneDNN call, so the pass over x is
 * parallel and its u8 rows are still cached when oneDNN reads them; the exact loop gets
 * the whole x quantized first.
 */
#include <stdlib.h>
#include <string.h>

#include "blas_impl.h"

typedef struct q_args {
    int64_t M, N, K;
    const uint8_t *a, *b;
    int64_t ars, acs, brs, bcs;
    float *y; /* holds s32 sums until q_finish */
    int64_t yrs, ycs;
    int32_t zero;
    /* for q_finish: per column n, dense */
    const int32_t *zc;  /* zero * sum_k b[n, k] */
    const float *scale; /* a's scale (unless per row) times b's */
    const float *bias;  /* NULL for none */
    const float *row;   /* a's per-row scales (stride row_s), NULL for none */
    int64_t row_s;
    const blas_qx *qx;  /* dynamic mode: a is quantized from this per slice; else NULL */
} q_args;

/* y = (float)(s32 - zc[n]) * scale[n] * row[m] (+ bias[n]) on rows [rb, re), in place:
 * run by the thread that just wrote those sums, while they are in its cache (a separate
 * pass over y was a quarter of a 1024^3 product's time). */
BLAS_CLONES static void q_finish(const q_args *q, int64_t rb, int64_t re)
{
    const int32_t *restrict zc = q->zc;
    const float *restrict sc = q->scale, *restrict pb = q->bias;
    int64_t N = q->N, cs = q->ycs;
    for (int64_t m = rb; m < re; m++) {
        float r = q->row ? q->row[m * q->row_s] : 1.0f, *restrict y = q->y + m * q->yrs;
        int32_t acc;
        if (cs == 1 && pb)
            for (int64_t n = 0; n < N; n++) {
                memcpy(&acc, &y[n], 4);
                y[n] = (float)(acc - zc[n]) * sc[n] * r + pb[n];
            }
        else if (cs == 1)
            for (int64_t n = 0; n < N; n++) {
                memcpy(&acc, &y[n], 4);
                y[n] = (float)(acc - zc[n]) * sc[n] * r;
            }
        else
            for (int64_t n = 0; n < N; n++) {
                memcpy(&acc, &y[n * cs], 4);
                float v = (float)(acc - zc[n]) * sc[n] * r;
                y[n * cs] = pb ? v + pb[n] : v;
            }
    }
}

/* Rows [rb, re) of the exact sums sum_k a b (the zero point comes off in q_finish, as
 * for oneDNN's sums), finished (the ABI bounds K, so no s32 sum overflows). */
static void q_rows(void *arg, int64_t rb, int64_t re)
{
    const q_args *q = arg;
    for (int64_t m = rb; m < re; m++) {
        const uint8_t *ar = q->a + m * q->ars;
        for (int64_t n = 0; n < q->N; n++) {
            const uint8_t *br = q->b + n * q->brs;
            int32_t acc = 0;
            if (q->acs == 1 && q->bcs == 1)
                for (int64_t k = 0; k < q->K; k++) acc += (int32_t)ar[k] * (int8_t)br[k];
            else
                for (int64_t k = 0; k < q->K; k++) acc += (int32_t)ar[k * q->acs] * (int8_t)br[k * q->bcs];
            memcpy(&q->y[m * q->yrs + n * q->ycs], &acc, 4);
        }
    }
    q_finish(q, rb, re);
}

/* zc[n] = zero * sum_k (int8) b[n, k]: what the zero point takes from the sums. */
BLAS_CLONES static void zero_comp(const q_args *q, int32_t *zc)
{
    if (!q->zero) {
        memset(zc, 0, (size_t)q->N * sizeof *zc);
        return;
    }
    for (int64_t n = 0; n < q->N; n++) {
        const uint8_t *br = q->b + n * q->brs;
        int32_t s = 0;
        if (q->bcs == 1) /* 16-bit partial sums (256 x -128 still fits): half the widening */
            for (int64_t k0 = 0; k0 < q->K; k0 += 256) {
                int64_t ke = q->K - k0 < 256 ? q->K : k0 + 256;
                int16_t t = 0;
                for (int64_t k = k0; k < ke; k++) t = (int16_t)(t + (int8_t)br[k]);
                s += t;
            }
        else
            for (int64_t k = 0; k < q->K; k++) s += (int8_t)br[k * q->bcs];
        zc[n] = q->zero * s;
    }
}

#ifdef FF_BLAS_HAVE_DNNL
#include <pthread.h>

#include "blas_dnnl_cache.h"

/* A matrix oneDNN takes: one stride 1 and the other at least that dim's extent. */
static int plain(int64_t rows, int64_t cols, int64_t *rs, int64_t *cs)
{
    if (cols == 1) *cs = 1;
    if (rows == 1) *rs = cols > 1 ? cols : 1;
    return (*cs == 1 && *rs >= cols) || (*rs == 1 && *cs >= rows);
}

/* FF_QMATMUL_DNNL=0 turns the path off (the exact loop then serves every call). */
static int enabled;
static pthread_once_t enabled_once = PTHREAD_ONCE_INIT;

static void enabled_init(void)
{
    const char *env = getenv("FF_QMATMUL_DNNL");
    enabled = !(env && !strcmp(env, "0")) && blas_dnnl_engine() != NULL;
}

/* oneDNN's pick sums u8 x s8 without an s16 step: a brgemm kernel on VNNI or AMX, or
 * the jit gemm while oneDNN may use VNNI (the CPU has it and ONEDNN_MAX_CPU_ISA allows
 * it: the 0x40 / 0x400 bits of dnnl_cpu_isa_t). */
static int impl_exact(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl) return 0;
    if (!strncmp(impl, "brg:", 4)) return strstr(impl, "vnni") != NULL || strstr(impl, "amx") != NULL;
    unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    int cpu = (blas_cpu_flags() & BLAS_CPU_VNNI) != 0;
    return !strcmp(impl, "gemm:jit") && cpu && ((isa & 0x40u) || (isa & 0x400u));
}

/* Rows [rb, re) of the s32 sums sum_k a b into y through oneDNN on one OpenMP thread (the
 * pool splits the rows, as for the half and f32 products: no OpenMP team is started,
 * whose threads LeakSanitizer cannot stop at exit). The primitive comes from the cache
 * (blas_dnnl_cache.h), impl_exact asked once per shape. A decline or a failure sets
 * failed. */
typedef struct q_job {
    blas_ctx *ctx;
    const q_args *q;
    int64_t ars, acs, brs, bcs, yrs, ycs; /* plain() strides */
    atomic_int failed;
} q_job;

static void q_dnnl_rows(void *arg, int64_t rb, int64_t re)
{
    q_job *j = arg;
    const q_args *q = j->q;
    blas_dnnl_threads(1);
    /* b is [N, K]: oneDNN's [K, N] weights with the strides swapped */
    blas_dnnl_key key = {.kind = BLAS_DNNL_U8S8_S32, .threads = 1, .m = re - rb, .n = q->N, .k = q->K,
                         .ars = j->ars, .acs = j->acs, .brs = j->bcs, .bcs = j->brs, .crs = j->yrs, .ccs = j->ycs};
    blas_dnnl_prim *p = blas_dnnl_acquire(&key, impl_exact);
    void *sp = p && p->scratch_bytes ? blas_scratch(j->ctx, p->scratch_bytes) : NULL;
    uint8_t *qa = p && p->accepted && q->qx ? blas_scratch(j->ctx, (size_t)((re - rb) * q->K)) : NULL;
    const uint8_t *a = q->qx ? qa : q->a + rb * q->ars; /* the slice's rows, quantized here when dynamic */
    int ok = p && p->accepted && (sp || !p->scratch_bytes) && a && (!q->qx || !blas_qx_rows(q->qx, rb, re, qa)) &&
             blas_dnnl_execute(p, a, q->b, NULL, q->y + rb * q->yrs, sp) == dnnl_success;
    blas_free(j->ctx, sp), blas_free(j->ctx, qa);
    blas_dnnl_release(p);
    if (ok) q_finish(q, rb, re); /* while this thread's sums are still in its cache */
    else atomic_store(&j->failed, 1);
}

/* 1 when oneDNN wrote the s32 sums sum_k a b into y, 0 when it declined (y is then
 * rewritten whole by the loop). */
static int q_dnnl(blas_ctx *c, const q_args *q)
{
    q_job j = {c, q, q->ars, q->acs, q->brs, q->bcs, q->yrs, q->ycs, 0};
    if (!plain(q->M, q->K, &j.ars, &j.acs) || !plain(q->N, q->K, &j.brs, &j.bcs) || !plain(q->M, q->N, &j.yrs, &j.ycs))
        return 0;
    /* a row slice of a column-major a or y keeps its strides; one row keeps plain()'s */
    pthread_once(&enabled_once, enabled_init);
    if (!enabled) return 0;
    blas_parallel_for(c, q->M, 64, 16, q_dnnl_rows, &j);
    return !atomic_load(&j.failed);
}
#else
static int q_dnnl(blas_ctx *c, const q_args *q)
{
    (void)c, (void)q;
    return 0;
}
#endif

static int shape_ok(const ff_view *v, ff_dtype dt, int rank, int64_t r, int64_t cols)
{
    return v->dtype == dt && v->ndim == rank && v->shape[0] == r && (rank == 1 || v->shape[1] == cols);
}

static ff_status qmatmul_u8(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p,
                            blas_qx *qx);

/* Dynamic mode: x's parameters chosen (per tensor: its range, in parallel), then the u8
 * path with a standing for the quantized x, which the slices fill. */
static ff_status qmatmul_dynamic(void *ctx, const ff_view *dst, const ff_view *src, int n_src,
                                 const ff_qmatmul_params *p)
{
    blas_ctx *c = ctx;
    const ff_view *x = &src[0];
    int want = 3 + (p->has_bias != 0);
    if (n_src != want || dst->ndim != 2 || !shape_ok(x, FF_F32, 2, dst->shape[0], x->ndim == 2 ? x->shape[1] : 0))
        return blas_error(ctx, FF_ERR_INVALID,
                          "cpu_blas qmatmul (dynamic): %d inputs, dst rank %d, x %s of rank %d; expected %d inputs, "
                          "y [M, N], x F32 [M, K]",
                          n_src, (int)dst->ndim, ffb_dtype_name(x->dtype), (int)x->ndim, want);
    int64_t M = x->shape[0], K = x->shape[1];
    ff_qmatmul_params u = {.has_bias = p->has_bias, .a_per_row = p->a_per_row, .a_zero = 128};
    blas_qx qx = {(const float *)x->buf + x->offset, x->strides[0], x->strides[1], K, p->a_per_row != 0, 0, 0, 0, NULL};
    float lo, hi;
    if (!p->a_per_row && blas_qx_range(c, &qx, M, &lo, &hi))
        return blas_error(ctx, FF_ERR_OOM, "cpu_blas qmatmul (dynamic): out of memory gathering x's rows (K=%lld)",
                          (long long)K);
    if (!p->a_per_row) ff_qmatmul_choose(lo, hi, p->reduce_range != 0, &u.a_scale, &u.a_zero);
    qx.inv = 1.0f / u.a_scale, qx.zero = (float)u.a_zero, qx.qmax = p->reduce_range ? 127.0f : 255.0f;
    qx.row = p->a_per_row ? blas_scratch(c, ((size_t)M + 1) * sizeof(float)) : NULL;
    if (p->a_per_row && !qx.row)
        return blas_error(ctx, FF_ERR_OOM, "cpu_blas qmatmul (dynamic): out of memory for %lld row scales", (long long)M);
    ff_view s[5];
    for (int i = 1; i < n_src; i++) s[i] = src[i];
    s[0] = (ff_view){.dtype = FF_U8, .ndim = 2, .shape = {M, K}, .strides = {K, 1}}; /* filled per slice */
    s[n_src] = (ff_view){.buf = qx.row, .dtype = FF_F32, .ndim = 1, .shape = {M}, .strides = {1}};
    ff_status st = qmatmul_u8(ctx, dst, s, n_src + (p->a_per_row != 0), &u, &qx);
    blas_free(c, qx.row);
    return st;
}

ff_status blas_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    return p->a_dynamic ? qmatmul_dynamic(ctx, dst, src, n_src, p) : qmatmul_u8(ctx, dst, src, n_src, p, NULL);
}

/* qx: dynamic mode (a's view has no memory yet; the row slices or the loop fill it). */
static ff_status qmatmul_u8(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p,
                            blas_qx *qx)
{
    blas_ctx *c = ctx;
    int want = 3 + (p->has_bias != 0) + (p->a_per_row != 0);
    if (n_src != want || dst->ndim != 2 || src[0].ndim != 2)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas qmatmul: %d inputs, dst rank %d, a rank %d; expected %d, 2, 2",
                          n_src, (int)dst->ndim, (int)src[0].ndim, want);
    const ff_view *a = &src[0], *b = &src[1], *sb = &src[2], *bias = p->has_bias ? &src[3] : NULL;
    const ff_view *sa = p->a_per_row ? &src[want - 1] : NULL;
    int64_t M = dst->shape[0], N = dst->shape[1], K = a->shape[1];
    if (!shape_ok(dst, FF_F32, 2, M, N) || !shape_ok(a, FF_U8, 2, M, K) || !shape_ok(b, FF_U8, 2, N, K) ||
        !shape_ok(sb, FF_F32, 1, N, 0) || (bias && !shape_ok(bias, FF_F32, 1, N, 0)) ||
        (sa && !shape_ok(sa, FF_F32, 1, M, 0)))
        return blas_error(ctx, FF_ERR_INVALID,
                          "cpu_blas qmatmul: expected y F32 [M, N], a U8 [M, K], b U8 [N, K], scales (and bias) F32 [N], "
                          "per-row scales F32 [M] (M=%lld N=%lld K=%lld)",
                          (long long)M, (long long)N, (long long)K);
    if (M == 0 || N == 0) return FF_OK;
    float *scale = blas_scratch(c, (size_t)N * (2 * sizeof(float) + sizeof(int32_t)));
    if (!scale) return blas_error(ctx, FF_ERR_OOM, "cpu_blas qmatmul: out of memory for %lld scales", (long long)N);
    int32_t *zc = (int32_t *)(scale + N);
    float *pbias = (float *)(zc + N);
    const float *ps = (const float *)sb->buf + sb->offset;
    for (int64_t n = 0; n < N; n++) scale[n] = (sa ? 1.0f : p->a_scale) * ps[n * sb->strides[0]];
    if (bias)
        for (int64_t n = 0; n < N; n++) pbias[n] = ((const float *)bias->buf + bias->offset)[n * bias->strides[0]];
    q_args q = {M, N, K, (const uint8_t *)a->buf + a->offset, (const uint8_t *)b->buf + b->offset,
                a->strides[0], a->strides[1], b->strides[0], b->strides[1],
                (float *)dst->buf + dst->offset, dst->strides[0], dst->strides[1], p->a_zero,
                zc, scale, bias ? pbias : NULL, sa ? (const float *)sa->buf + sa->offset : NULL, sa ? sa->strides[0] : 0,
                qx};
    zero_comp(&q, zc);
    ff_status st = FF_OK;
    /* oneDNN's slices finish their rows; when any declined, the loop redoes all of y */
    if (!(K > 0 && q_dnnl(c, &q))) {
        uint8_t *qa = qx ? blas_scratch(c, (size_t)(M * K) + 1) : NULL;
        if (qx && (!qa || blas_qx_rows(qx, 0, M, qa)))
            st = blas_error(ctx, FF_ERR_OOM, "cpu_blas qmatmul (dynamic): out of memory quantizing x [%lld, %lld]",
                            (long long)M, (long long)K);
        else {
            if (qx) q.a = qa, q.qx = NULL;
            blas_parallel_for(c, M, 4, 1, q_rows, &q);
        }
        blas_free(c, qa);
    }
    blas_free(c, scale);
    return st;
}
