/*
 * gather and scatter_add along one axis, with torch.gather / Tensor.scatter_add_
 * semantics.
 *
 * Supported: data (dst/src) of any of the six dtypes, the same on both sides;
 * index of dtype I64 (I32 is accepted too). dst, src and index have the same rank;
 * a 0-d call is treated as rank 1 with one element. Every index is bounds-checked:
 * negative or >= the size along axis gives FF_ERR_INDEX.
 *
 * Shapes, as in PyTorch:
 *   gather:      dst has index's shape; index.shape[d] <= src.shape[d] for d != axis.
 *   scatter_add: index.shape[d] <= src.shape[d] for every d, and <= dst.shape[d] for
 *                d != axis; the index's shape is what gets walked (the ABI passes
 *                index with src's shape, the usual case).
 *
 * Method: walk index's shape with, besides the index view, a view of the "other"
 * tensor whose stride along axis is 0; the element is then that view's offset plus
 * index value * the real stride along axis.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

static ff_status check_index(void *ctx, const char *entry, const ff_view *dst, const ff_view *src,
                             const ff_view *index, int axis)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, entry, "dst", dst)) || (st = cpu_check_view(ctx, entry, "src", src)) ||
        (st = cpu_check_view(ctx, entry, "index", index)))
        return st;
    if (dst->dtype != src->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: dst (%s) and src (%s) differ in dtype", entry,
                         cpu_dtype_name(dst->dtype), cpu_dtype_name(src->dtype));
    if (index->dtype != FF_I64 && index->dtype != FF_I32)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: index must be i64 (or i32), got %s", entry,
                         cpu_dtype_name(index->dtype));
    if (dst->ndim != src->ndim || index->ndim != src->ndim)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: ranks differ (dst %d, src %d, index %d)", entry,
                         (int)dst->ndim, (int)src->ndim, (int)index->ndim);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: axis %d out of range for rank %d", entry, axis, (int)src->ndim);
    return FF_OK;
}

/* index.shape[d] <= v.shape[d] for every d (except axis when skip_axis). */
static ff_status check_fits(void *ctx, const char *entry, const ff_view *index, const ff_view *v, const char *what,
                            int axis, int skip_axis)
{
    for (int d = 0; d < index->ndim; d++) {
        if (skip_axis && d == axis) continue;
        if (index->shape[d] > v->shape[d])
            return cpu_error(ctx, FF_ERR_INVALID, "cpu %s: index size %lld exceeds %s size %lld at dim %d", entry,
                             (long long)index->shape[d], what, (long long)v->shape[d], d);
    }
    return FF_OK;
}

static ff_status index_error(void *ctx, const char *entry, int64_t v, int64_t size, int axis)
{
    return cpu_error(ctx, FF_ERR_INDEX, "cpu %s: index %lld out of range [0, %lld) at axis %d", entry, (long long)v,
                     (long long)size, axis);
}

ff_status cpu_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    ff_status st = check_index(ctx, "gather", dst, src, index, axis);
    if (st) return st;
    ff_view t0, t1, t2;
    dst = ffb_as_rank1(dst, &t0), src = ffb_as_rank1(src, &t1), index = ffb_as_rank1(index, &t2);
    if (!cpu_same_shape(dst, index)) return cpu_shape_error(ctx, "gather", "dst", dst, "index", index);
    if ((st = check_fits(ctx, "gather", index, src, "src", axis, 1))) return st;

    ff_view src0 = *src; /* src with the gathered axis pinned to 0 */
    src0.strides[axis] = 0;
    int64_t size = src->shape[axis], step = src->strides[axis];
    const ff_view *vs[] = {dst, index, &src0};
    cpu_iter it;
    /* dst is a fresh output: stopping at a bad index leaves it partly written */
    for (cpu_iter_init(&it, index->ndim, index->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
        for (int64_t j = 0; j < it.len; j++) {
            int64_t v = cpu_load_i64(index->buf, index->dtype, it.off[1] + j * it.step[1]);
            if (v < 0 || v >= size) return index_error(ctx, "gather", v, size, axis);
            cpu_move_elem(dst->buf, it.off[0] + j * it.step[0], src->buf, it.off[2] + j * it.step[2] + v * step,
                          dst->dtype);
        }
    }
    return FF_OK;
}

ff_status cpu_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    ff_status st = check_index(ctx, "scatter_add", dst, src, index, axis);
    if (st) return st;
    ff_view t0, t1, t2;
    dst = ffb_as_rank1(dst, &t0), src = ffb_as_rank1(src, &t1), index = ffb_as_rank1(index, &t2);
    if ((st = check_fits(ctx, "scatter_add", index, src, "src", axis, 0)) ||
        (st = check_fits(ctx, "scatter_add", index, dst, "dst", axis, 1)))
        return st;

    int64_t size = dst->shape[axis], step = dst->strides[axis];
    cpu_iter it;
    /* pass 1: validate every index, so a bad one leaves dst untouched */
    const ff_view *iv[] = {index};
    for (cpu_iter_init(&it, index->ndim, index->shape, 1, iv); !it.done; cpu_iter_next(&it)) {
        for (int64_t j = 0; j < it.len; j++) {
            int64_t v = cpu_load_i64(index->buf, index->dtype, it.off[0] + j * it.step[0]);
            if (v < 0 || v >= size) return index_error(ctx, "scatter_add", v, size, axis);
        }
    }

    /* pass 2: accumulate in row-major order of index, so duplicates add up in order */
    ff_view dst0 = *dst; /* dst with the scattered axis pinned to 0 */
    dst0.strides[axis] = 0;
    ff_dtype t = dst->dtype;
    const ff_view *vs[] = {index, src, &dst0};
    for (cpu_iter_init(&it, index->ndim, index->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
        for (int64_t j = 0; j < it.len; j++) {
            int64_t v = cpu_load_i64(index->buf, index->dtype, it.off[0] + j * it.step[0]);
            int64_t at = it.off[2] + j * it.step[2] + v * step, from = it.off[1] + j * it.step[1];
            if (ff_dtype_is_complex(t)) {
                cpu_complex_add_into(dst->buf, t, at, src->buf, from);
            } else if (cpu_is_float(t)) {
                cpu_store_f64(dst->buf, t, at, cpu_load_f64(dst->buf, t, at) + cpu_load_f64(src->buf, t, from));
            } else {
                uint64_t sum = (uint64_t)cpu_load_i64(dst->buf, t, at) + (uint64_t)cpu_load_i64(src->buf, t, from);
                cpu_store_i64(dst->buf, t, at, ffb_u64_to_i64(sum)); /* wraps; bool: or */
            }
        }
    }
    return FF_OK;
}
