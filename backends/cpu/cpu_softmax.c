/*
 * softmax / log_softmax along one axis (the optional vtable entry).
 *
 * Supported: F32 and F64, dst and src of the same dtype and shape; `want_log` selects
 * log_softmax (supports() ignores op, the log flag: both are supported). A 0-d view
 * is one row of one element (softmax 1, log_softmax 0).
 *
 * Numerically stable, in double: m = max(x), s = sum exp(x - m), then
 *   softmax     = exp(x - m) / s
 *   log_softmax = x - m - log(s)
 * The last pass recomputes exp(x - m) from src instead of storing it in dst first,
 * which both rounds only once and keeps the in-place case (dst == src) correct:
 * every element is read before it is overwritten and never read again.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

int cpu_softmax_supported(ff_dtype t) { return cpu_is_float(t); }

/* One row of len elements: src at so + j * ss, dst at dof + j * ds. */
static void softmax_row(ff_dtype t, const void *sb, int64_t so, int64_t ss, void *db, int64_t dof, int64_t ds,
                        int64_t len, int want_log)
{
    double m = -INFINITY;
    for (int64_t j = 0; j < len; j++) {
        double x = cpu_load_f64(sb, t, so + j * ss);
        if (isnan(x) || x > m) m = x;
        if (isnan(m)) break; /* the whole row becomes NaN below */
    }
    double s = 0.0;
    for (int64_t j = 0; j < len; j++) s += exp(cpu_load_f64(sb, t, so + j * ss) - m);
    double logs = log(s);
    for (int64_t j = 0; j < len; j++) {
        double x = cpu_load_f64(sb, t, so + j * ss);
        cpu_store_f64(db, t, dof + j * ds, want_log ? x - m - logs : exp(x - m) / s);
    }
}

ff_status cpu_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "softmax", "dst", dst)) || (st = cpu_check_view(ctx, "softmax", "src", src)))
        return st;
    if (!cpu_softmax_supported(src->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu softmax: not supported on %s", cpu_dtype_name(src->dtype));
    if (dst->dtype != src->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu softmax: dst (%s) and src (%s) differ in dtype",
                         cpu_dtype_name(dst->dtype), cpu_dtype_name(src->dtype));
    if (!cpu_same_shape(dst, src)) return cpu_shape_error(ctx, "softmax", "dst", dst, "src", src);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu softmax: axis %d out of range for rank %d", axis, (int)src->ndim);

    /* a 0-d view is one row of one element */
    int64_t len = src->ndim ? src->shape[axis] : 1;
    int64_t ss = src->ndim ? src->strides[axis] : 0, ds = dst->ndim ? dst->strides[axis] : 0;
    if (len == 0) return FF_OK;
    int64_t outer[FF_MAX_DIMS]; /* the shape with the softmax axis collapsed to 1: one position per row */
    for (int d = 0; d < src->ndim; d++) outer[d] = d == axis ? 1 : src->shape[d];

    const ff_view *vs[] = {dst, src};
    cpu_iter it;
    for (cpu_iter_init(&it, src->ndim, outer, 2, vs); !it.done; cpu_iter_next(&it))
        for (int64_t r = 0; r < it.len; r++)
            softmax_row(src->dtype, src->buf, it.off[1] + r * it.step[1], ss, dst->buf, it.off[0] + r * it.step[0], ds,
                        len, want_log);
    return FF_OK;
}
