/*
 * softmax / log_softmax along one axis (the optional entry), F32, F64, F16, BF16, threaded
 * over rows. Same definition as the reference: m = max(x), s = sum exp(x - m) (in
 * double), softmax = exp(x - m) / s, log_softmax = (x - m) - log(s); a NaN anywhere in a
 * row makes the whole row NaN; dst may be src itself.
 *
 * Fast path (f32, the axis contiguous in src and dst): vectorized max, then
 * blas_vexp_shift_sum writes exp(x - m) and returns its sum, then one scaling pass. For
 * log_softmax exp(x - m) goes to a small stack buffer (dst may alias src, which must
 * survive until the last pass). Other cases run the reference's per-element loop in
 * double.
 */
#include "blas_impl.h"

typedef struct sm_arg {
    const ff_view *dst, *src;
    int axis, want_log;
    int64_t len, ss, ds; /* along the axis */
    int64_t outer_shape[FF_MAX_DIMS];
} sm_arg;

/* Element offsets of row r's first element in src and dst (axis index 0). */
static void row_offsets(const sm_arg *a, int64_t r, int64_t *so, int64_t *dof)
{
    *so = a->src->offset, *dof = a->dst->offset;
    for (int d = a->src->ndim - 1; d >= 0; d--) {
        int64_t n = a->outer_shape[d], i = r % n;
        r /= n;
        *so += i * a->src->strides[d];
        *dof += i * a->dst->strides[d];
    }
}

static void row_f32(const sm_arg *a, const float *x, float *d)
{
    int64_t n = a->len;
    float m = blas_vmax_f32(n, x);
    if (!a->want_log) {
        double s = blas_vexp_shift_sum_f32(n, d, x, m);
        double inv = 1.0 / s;
        for (int64_t i = 0; i < n; i++) d[i] = (float)((double)d[i] * inv);
        return;
    }
    float buf[1024];
    double s = 0.0;
    for (int64_t i = 0; i < n; i += 1024) s += blas_vexp_shift_sum_f32(n - i < 1024 ? n - i : 1024, buf, x + i, m);
    /* (x - m) - log(s), in this order: m + log(s) first would drop log(s) next to a huge
     * m (logits near 3e38 tied at the max gave 0 instead of -log(ties)) */
    double logs = log(s);
    for (int64_t i = 0; i < n; i++) d[i] = (float)(((double)x[i] - (double)m) - logs);
}

static void row_generic(const sm_arg *a, int64_t so, int64_t dof)
{
    ff_dtype t = a->src->dtype;
    int64_t es = (int64_t)ff_dtype_size(t);
    const char *x = (const char *)a->src->buf + so * es;
    char *d = (char *)a->dst->buf + dof * es;
    int64_t n = a->len, xs = a->ss * es, dstep = a->ds * es;
    double m = -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        double v = ffb_ld_f64(x + j * xs, t);
        if (v != v || v > m) m = v;
        if (m != m) break;
    }
    double s = 0.0;
    for (int64_t j = 0; j < n; j++) s += exp(ffb_ld_f64(x + j * xs, t) - m);
    double logs = log(s);
    for (int64_t j = 0; j < n; j++) {
        double v = ffb_ld_f64(x + j * xs, t);
        ffb_st_f64(d + j * dstep, t, a->want_log ? v - m - logs : exp(v - m) / s);
    }
}

/* F16/BF16 rows of up to HALF_ROW elements: widened into a buffer, the f32 fast path in
 * place, rounded back once: the core's f32 detour bit for bit (its f32 temporaries are
 * dense, so the detour takes row_f32 too). Longer rows take row_generic (double, one
 * rounding: within the transcendental tolerance of the detour). */
#define HALF_ROW 8192

static void row_half(const sm_arg *a, int64_t so, int64_t dof)
{
    float buf[HALF_ROW];
    ff_dtype t = a->src->dtype;
    const uint16_t *x = (const uint16_t *)a->src->buf + so;
    uint16_t *d = (uint16_t *)a->dst->buf + dof;
    if (a->ss == 1) blas_half_to_f32(t, a->len, buf, x);
    else for (int64_t j = 0; j < a->len; j++) buf[j] = (float)ffb_ld_f64((const char *)(x + j * a->ss), t);
    row_f32(a, buf, buf);
    if (a->ds == 1) blas_f32_to_half(t, a->len, d, buf);
    else for (int64_t j = 0; j < a->len; j++) ffb_st_f64((char *)(d + j * a->ds), t, buf[j]);
}

static void rows_task(void *varg, int64_t begin, int64_t end)
{
    const sm_arg *a = varg;
    int fast = a->src->dtype == FF_F32 && a->ss == 1 && a->ds == 1;
    int half = ffb_is_half(a->src->dtype) && a->len <= HALF_ROW;
    for (int64_t r = begin; r < end; r++) {
        int64_t so, dof;
        row_offsets(a, r, &so, &dof);
        if (fast) row_f32(a, (const float *)a->src->buf + so, (float *)a->dst->buf + dof);
        else if (half) row_half(a, so, dof);
        else row_generic(a, so, dof);
    }
}

ff_status blas_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "softmax", "dst", dst)) ||
        (st = blas_check_storage_view(ctx, "softmax", "src", src)))
        return st;
    if (!blas_is_float(src->dtype) && !ffb_is_half(src->dtype))
        return blas_error(ctx, FF_ERR_UNSUPPORTED, "cpu_blas softmax: not supported on %s", blas_dtype_name(src->dtype));
    if (dst->dtype != src->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas softmax: dst (%s) and src (%s) differ in dtype",
                          blas_dtype_name(dst->dtype), blas_dtype_name(src->dtype));
    if (!blas_same_shape(dst, src)) return blas_shape_error(ctx, "softmax", dst, src);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas softmax: axis %d out of range for rank %d", axis,
                          (int)src->ndim);
    sm_arg a = {.dst = dst, .src = src, .axis = axis, .want_log = want_log};
    a.len = src->ndim ? src->shape[axis] : 1;
    a.ss = src->ndim ? src->strides[axis] : 0;
    a.ds = dst->ndim ? dst->strides[axis] : 0;
    if (a.len == 1) a.ss = a.ds = 1; /* one element per row: treat as contiguous */
    int64_t rows = 1;
    for (int d = 0; d < src->ndim; d++) {
        a.outer_shape[d] = d == axis ? 1 : src->shape[d];
        rows *= a.outer_shape[d];
    }
    if (a.len == 0 || rows == 0) return FF_OK;
    int64_t min_rows = a.len >= BLAS_PAR_MIN ? 2 : (BLAS_PAR_MIN / 2 + a.len - 1) / a.len;
    blas_parallel_for(ctx, rows, min_rows, 1, rows_task, &a);
    return FF_OK;
}
