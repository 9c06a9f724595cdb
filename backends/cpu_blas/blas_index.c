/*
 * gather and scatter_add along one axis (torch.gather / Tensor.scatter_add_), with the
 * reference's rules: data of any computable dtype (dst and src alike), index I64 (or
 * I32), equal ranks (0-d treated as one element of rank 1), every index bounds-checked
 * (FF_ERR_INDEX); scatter_add validates all indices before writing and accumulates in
 * index row-major order, so duplicates add up in order.
 *
 * Row form (blas_index_rows.c): an index constant over the dims after axis with both
 * data views contiguous there (index_select, embedding and their backward, as the core
 * hands them) moves whole rows, one bounds check per row, threaded. Anything else takes
 * the element path: walk index's shape together with the "other" tensor's view whose
 * stride along axis is pinned to 0; the element is then that offset + value *
 * stride(axis). f32 accumulation is done in double and rounded once, as in the
 * reference. Serial: a per-element index is small in every model we run.
 */
#include "blas_impl.h"

/* half_ok: gather moves F16/BF16 elements as they are; scatter_add declines them (the
 * core's detour sums in f32 and rounds once). */
static ff_status check_index(void *ctx, const char *entry, const ff_view *dst, const ff_view *src,
                             const ff_view *index, int axis, int half_ok)
{
    ff_status st;
    ff_status (*check)(void *, const char *, const char *, const ff_view *) =
        half_ok ? blas_check_storage_view : blas_check_view;
    if ((st = check(ctx, entry, "dst", dst)) || (st = check(ctx, entry, "src", src)) ||
        (st = blas_check_view(ctx, entry, "index", index)))
        return st;
    if (dst->dtype != src->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: dst (%s) and src (%s) differ in dtype", entry,
                          blas_dtype_name(dst->dtype), blas_dtype_name(src->dtype));
    if (index->dtype != FF_I64 && index->dtype != FF_I32)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: index must be i64 (or i32), got %s", entry,
                          blas_dtype_name(index->dtype));
    if (dst->ndim != src->ndim || index->ndim != src->ndim)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: ranks differ (dst %d, src %d, index %d)", entry,
                          (int)dst->ndim, (int)src->ndim, (int)index->ndim);
    int rank = src->ndim > 0 ? src->ndim : 1;
    if (axis < 0 || axis >= rank)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: axis %d out of range for rank %d", entry, axis,
                          (int)src->ndim);
    return FF_OK;
}

static ff_status check_fits(void *ctx, const char *entry, const ff_view *index, const ff_view *v, int axis,
                            int skip_axis)
{
    for (int d = 0; d < index->ndim; d++) {
        if (skip_axis && d == axis) continue;
        if (index->shape[d] > v->shape[d])
            return blas_error(ctx, FF_ERR_INVALID, "cpu_blas %s: index size %lld exceeds size %lld at dim %d", entry,
                              (long long)index->shape[d], (long long)v->shape[d], d);
    }
    return FF_OK;
}

static ff_status index_error(void *ctx, const char *entry, int64_t v, int64_t size, int axis)
{
    return blas_error(ctx, FF_ERR_INDEX, "cpu_blas %s: index %lld out of range [0, %lld) at axis %d", entry,
                      (long long)v, (long long)size, axis);
}

static int64_t load_index(const ff_view *index, int64_t off)
{
    if (index->dtype == FF_I64) return ((const int64_t *)index->buf)[off];
    return ((const int32_t *)index->buf)[off];
}

/* Row-major walk over shape (rank nd) of up to three views' offsets. */
typedef struct nd_walk {
    int nd;
    int64_t shape[FF_MAX_DIMS], idx[FF_MAX_DIMS];
    const ff_view *v[3];
    int64_t off[3];
} nd_walk;

static void walk_start(nd_walk *w, const ff_view *shape_of, const ff_view *a, const ff_view *b, const ff_view *c)
{
    w->nd = shape_of->ndim;
    w->v[0] = a, w->v[1] = b, w->v[2] = c;
    for (int d = 0; d < w->nd; d++) w->shape[d] = shape_of->shape[d], w->idx[d] = 0;
    for (int k = 0; k < 3; k++) w->off[k] = w->v[k]->offset;
}

static void walk_next(nd_walk *w)
{
    for (int d = w->nd - 1; d >= 0; d--) {
        if (++w->idx[d] < w->shape[d]) {
            for (int k = 0; k < 3; k++) w->off[k] += w->v[k]->strides[d];
            return;
        }
        w->idx[d] = 0;
        for (int k = 0; k < 3; k++) w->off[k] -= w->v[k]->strides[d] * (w->shape[d] - 1);
    }
}

ff_status blas_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    ff_status st = check_index(ctx, "gather", dst, src, index, axis, 1);
    if (st) return st;
    ff_view t0, t1, t2;
    dst = ffb_as_rank1(dst, &t0), src = ffb_as_rank1(src, &t1), index = ffb_as_rank1(index, &t2);
    if (!blas_same_shape(dst, index)) return blas_shape_error(ctx, "gather", dst, index);
    if ((st = check_fits(ctx, "gather", index, src, axis, 1))) return st;
    int64_t size = src->shape[axis], step = src->strides[axis], n = ff_view_numel(index), bad;
    blas_index_rows f;
    if (n > 0 && blas_index_rows_init(&f, dst, src, index, axis)) {
        if (blas_index_rows_bad(&f, &bad)) return index_error(ctx, "gather", bad, size, axis);
        blas_gather_rows(ctx, &f);
        return FF_OK;
    }
    ff_view src0 = *src;
    src0.strides[axis] = 0;
    size_t es = ff_dtype_size(dst->dtype);
    nd_walk w;
    walk_start(&w, index, dst, index, &src0);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t v = load_index(index, w.off[1]);
        if (v < 0 || v >= size) return index_error(ctx, "gather", v, size, axis);
        memcpy((char *)dst->buf + (size_t)w.off[0] * es, (const char *)src->buf + (size_t)(w.off[2] + v * step) * es, es);
    }
    return FF_OK;
}

ff_status blas_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    ff_status st = check_index(ctx, "scatter_add", dst, src, index, axis, 0);
    if (st) return st;
    ff_view t0, t1, t2;
    dst = ffb_as_rank1(dst, &t0), src = ffb_as_rank1(src, &t1), index = ffb_as_rank1(index, &t2);
    if ((st = check_fits(ctx, "scatter_add", index, src, axis, 0)) ||
        (st = check_fits(ctx, "scatter_add", index, dst, axis, 1)))
        return st;
    int64_t size = dst->shape[axis], step = dst->strides[axis], n = ff_view_numel(index), bad;
    blas_index_rows f;
    if (n > 0 && blas_index_rows_init(&f, src, dst, index, axis)) {
        if (blas_index_rows_bad(&f, &bad)) return index_error(ctx, "scatter_add", bad, size, axis);
        blas_scatter_add_rows(ctx, &f);
        return FF_OK;
    }
    ff_view dst0 = *dst;
    dst0.strides[axis] = 0;
    nd_walk w;
    /* pass 1: validate every index, so a bad one leaves dst untouched */
    walk_start(&w, index, index, src, &dst0);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        int64_t v = load_index(index, w.off[0]);
        if (v < 0 || v >= size) return index_error(ctx, "scatter_add", v, size, axis);
    }
    /* pass 2: accumulate in index row-major order */
    ff_dtype t = dst->dtype;
    int64_t es = (int64_t)ff_dtype_size(t);
    char *db = dst->buf;
    const char *sb = src->buf;
    walk_start(&w, index, index, src, &dst0);
    for (int64_t i = 0; i < n; i++, walk_next(&w)) {
        char *at = db + (w.off[2] + load_index(index, w.off[0]) * step) * es;
        const char *from = sb + w.off[1] * es;
        if (t == FF_F32) {
            float x, y;
            memcpy(&x, at, 4), memcpy(&y, from, 4);
            x = (float)((double)x + (double)y);
            memcpy(at, &x, 4);
        } else if (blas_is_float(t)) {
            ffb_st_f64(at, t, ffb_ld_f64(at, t) + ffb_ld_f64(from, t));
        } else {
            ffb_st_i64(at, t, ffb_u64_to_i64((uint64_t)ffb_ld_i64(at, t) + (uint64_t)ffb_ld_i64(from, t)));
        }
    }
    return FF_OK;
}
