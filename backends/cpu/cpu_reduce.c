/*
 * Reductions over the axes in axes_mask; dst is in keepdim form (src's rank, size 1
 * on reduced axes).
 *
 * Supported: every op on every source dtype (F32, F64, I32, I64, U8, BOOL), with
 * these destination dtypes:
 *   SUM, PROD: any of the six. The accumulator is a double when src or dst is a
 *     float dtype (so f32 sums accumulate in double and round once), else a 64-bit
 *     integer that wraps around; it is converted to dst with the copy rules.
 *   MAX, MIN: dst has src's dtype; NaN propagates.
 *   ARGMAX, ARGMIN: dst is I64; at most one axis in the mask (none: every index is
 *     0); the first index of the extreme wins, and NaN counts as the extreme.
 *   ANY, ALL: dst is BOOL; any non-zero value (NaN included) is true.
 * Empty sets: SUM 0, PROD 1, ANY false, ALL true; MAX/MIN/ARG* refuse them.
 *
 * Method: one accumulator per dst element, then a single pass over src in its
 * row-major order (cache-friendly for contiguous src whichever axes are reduced),
 * then a pass writing the accumulators to dst. Visiting src in row-major order
 * meets each output's elements in increasing index along every axis, which is what
 * makes "first index of the extreme" come out right.
 */
#include <stdlib.h>

#include "cpu_impl.h"
#include "cpu_iter.h"

/* One accumulator per dst element; its fields, initial values, folding rules and
 * final store are the shared ones (ffb_reduce_acc in backends/common/ff_backend_scalar.h). */
typedef ffb_reduce_acc reduce_acc;

int cpu_reduce_supported(ff_reduce_op op, ff_dtype src) { return ffb_reduce_supported(op, src); }

static int is_arg(ff_reduce_op op) { return ffb_reduce_is_arg(op); }

/* Validates dtypes, the mask and the keepdim shape. On success *axis is the one
 * reduced axis for ARG* (-1 when the mask is empty). */
static ff_status check_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask,
                              int *axis)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "reduce", "dst", dst)) || (st = cpu_check_view(ctx, "reduce", "src", src))) return st;
    if ((unsigned)op >= FF_REDUCE_COUNT) return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: invalid op %d", (int)op);
    const char *name = cpu_reduce_name(op);
    ff_dtype want = dst->dtype; /* SUM/PROD: any */
    if (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN) want = src->dtype;
    if (is_arg(op)) want = FF_I64;
    if (op == FF_REDUCE_ANY || op == FF_REDUCE_ALL) want = FF_BOOL;
    if (dst->dtype != want)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: %s of %s writes %s, but dst is %s", name,
                         cpu_dtype_name(src->dtype), cpu_dtype_name(want), cpu_dtype_name(dst->dtype));
    if ((mask >> src->ndim) != 0) /* ndim <= FF_MAX_DIMS < 32: a defined shift */
        return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: axes mask 0x%x names axes beyond rank %d", (unsigned)mask,
                         (int)src->ndim);
    if (dst->ndim != src->ndim)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: dst rank %d != src rank %d (dst must be in keepdim form)",
                         (int)dst->ndim, (int)src->ndim);
    int naxes = 0;
    *axis = -1;
    for (int d = 0; d < src->ndim; d++) {
        int reduced = (mask >> d) & 1u;
        if (reduced) naxes++, *axis = d;
        if (dst->shape[d] != (reduced ? 1 : src->shape[d]))
            return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: dst size %lld at dim %d, expected %lld",
                             (long long)dst->shape[d], d, reduced ? 1LL : (long long)src->shape[d]);
    }
    if (is_arg(op) && naxes > 1)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: %s reduces exactly one axis, mask 0x%x has %d", name,
                         (unsigned)mask, naxes);
    return FF_OK;
}

ff_status cpu_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    int axis = -1;
    ff_status st = check_reduce(ctx, op, dst, src, axes_mask, &axis);
    if (st) return st;
    int64_t nout = ff_view_numel(dst);
    if (nout == 0) return FF_OK;
    if (ff_dtype_is_complex(src->dtype)) {
        if (op != FF_REDUCE_SUM || dst->dtype != src->dtype)
            return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu reduce: %s is not supported on %s", cpu_reduce_name(op),
                             cpu_dtype_name(src->dtype));
        return cpu_complex_sum(ctx, dst, src, axes_mask);
    }
    if (ff_view_numel(src) == 0 && (op == FF_REDUCE_MAX || op == FF_REDUCE_MIN || is_arg(op)))
        return cpu_error(ctx, FF_ERR_INVALID, "cpu reduce: %s of an empty set", cpu_reduce_name(op));

    reduce_acc *acc = malloc((size_t)nout * sizeof *acc);
    if (!acc) return cpu_error(ctx, FF_ERR_OOM, "cpu reduce: out of memory for %lld accumulators", (long long)nout);
    for (int64_t j = 0; j < nout; j++) ffb_reduce_acc_init(&acc[j], op);

    /* accumulator j for dst's row-major index; stride 0 on reduced axes maps every
     * src element onto the accumulator of its output */
    ff_view accv = {.buf = acc, .offset = 0, .dtype = dst->dtype, .ndim = dst->ndim};
    int64_t stride = 1;
    for (int d = dst->ndim - 1; d >= 0; d--) {
        accv.shape[d] = dst->shape[d];
        accv.strides[d] = ((axes_mask >> d) & 1u) ? 0 : stride;
        stride *= dst->shape[d];
    }

    /* SUM/PROD accumulate in double when either side is a float dtype; the
     * comparisons and flags follow src's kind */
    int float_src = cpu_is_float(src->dtype);
    int float_acc = float_src || ((op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) && cpu_is_float(dst->dtype));
    const void *sb = src->buf;
    ff_dtype t = src->dtype;
    int row_axis = axis >= 0 && axis == src->ndim - 1; /* ARG* axis runs along the row */
    const ff_view *in[] = {src, &accv};
    cpu_iter it;
    for (cpu_iter_init(&it, src->ndim, src->shape, 2, in); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, os = it.off[0], ss = it.step[0], oa = it.off[1], sa = it.step[1];
        int64_t k0 = axis >= 0 && !row_axis ? it.idx[axis] : 0; /* index along the ARG* axis */
        for (int64_t j = 0; j < n; j++) {
            int64_t k = row_axis ? j : k0;
            if (float_acc) ffb_reduce_acc_float(&acc[oa + j * sa], op, cpu_load_f64(sb, t, os + j * ss), k);
            else ffb_reduce_acc_int(&acc[oa + j * sa], op, cpu_load_i64(sb, t, os + j * ss), k);
        }
    }

    const ff_view *out[] = {dst, &accv};
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 2, out); !it.done; cpu_iter_next(&it))
        for (int64_t j = 0; j < it.len; j++)
            ffb_reduce_acc_store(&acc[it.off[1] + j * it.step[1]], op, float_acc,
                                 (char *)cpu_elem(dst->buf, dst->dtype, it.off[0] + j * it.step[0]), dst->dtype);
    free(acc);
    return FF_OK;
}
