/* fill, copy (with dtype conversion) and where. Conversion rules: cpu_impl.h. */
#include "cpu_impl.h"
#include "cpu_iter.h"

/* Every dtype the backend computes on, and F16/BF16 (value.f rounded once). */
ff_status cpu_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    ff_status st = cpu_check_storage_view(ctx, "fill", "dst", dst);
    if (st) return st;
    void *db = dst->buf;
    ff_dtype dt = dst->dtype;
    const ff_view *vs[] = {dst};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 1, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0];
        if (ff_dtype_is_complex(dt)) {
            for (int64_t j = 0; j < n; j++) cpu_complex_fill_one(db, dt, od + j * sd, value);
        } else if (ff_dtype_is_float(dt)) {
            for (int64_t j = 0; j < n; j++) cpu_store_f64(db, dt, od + j * sd, value.f);
        } else {
            /* integers take value.i (wrapped into I32/U8), bool takes value.i != 0 */
            for (int64_t j = 0; j < n; j++) cpu_store_i64(db, dt, od + j * sd, value.i);
        }
    }
    return FF_OK;
}

/* Any source dtype to any destination dtype among the eight (the six and F16/BF16).
 * Same dtype copies bits; a float source converts through double (exact for every
 * float dtype; NaN -> 0, truncation, saturation for integer destinations; one rounding
 * into f32/f16/bf16); an integer or bool source converts through int64. */
ff_status cpu_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ff_status st;
    if ((st = cpu_check_storage_view(ctx, "copy", "dst", dst)) || (st = cpu_check_storage_view(ctx, "copy", "src", src)))
        return st;
    if (!cpu_same_shape(dst, src)) return cpu_shape_error(ctx, "copy", "dst", dst, "src", src);
    void *db = dst->buf;
    const void *sb = src->buf;
    ff_dtype dt = dst->dtype, tsrc = src->dtype;
    const ff_view *vs[] = {dst, src};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 2, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0], os = it.off[1], ss = it.step[1];
        if (dt == tsrc && sd == 1 && ss == 1) { /* contiguous rows: one block move */
            size_t sz = ff_dtype_size(dt);
            memmove((char *)db + (size_t)od * sz, (const char *)sb + (size_t)os * sz, (size_t)n * sz);
        } else if (dt == tsrc) {
            for (int64_t j = 0; j < n; j++) cpu_move_elem(db, od + j * sd, sb, os + j * ss, dt);
        } else if (ff_dtype_is_complex(dt) || ff_dtype_is_complex(tsrc)) {
            for (int64_t j = 0; j < n; j++) cpu_complex_copy_one(db, dt, od + j * sd, sb, tsrc, os + j * ss);
        } else if (ff_dtype_is_float(tsrc)) {
            for (int64_t j = 0; j < n; j++) cpu_store_f64(db, dt, od + j * sd, cpu_load_f64(sb, tsrc, os + j * ss));
        } else {
            for (int64_t j = 0; j < n; j++) cpu_store_i64(db, dt, od + j * sd, cpu_load_i64(sb, tsrc, os + j * ss));
        }
    }
    return FF_OK;
}

/* dst = cond ? a : b. cond is BOOL (any non-zero byte is true); a, b and dst share
 * one dtype, any of the six; all four views have dst's shape. */
ff_status cpu_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "where", "dst", dst)) || (st = cpu_check_view(ctx, "where", "cond", cond)) ||
        (st = cpu_check_view(ctx, "where", "a", a)) || (st = cpu_check_view(ctx, "where", "b", b)))
        return st;
    if (cond->dtype != FF_BOOL)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu where: cond must be bool, got %s", cpu_dtype_name(cond->dtype));
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu where: a (%s) and b (%s) must have dst's dtype %s",
                         cpu_dtype_name(a->dtype), cpu_dtype_name(b->dtype), cpu_dtype_name(dst->dtype));
    if (!cpu_same_shape(dst, cond)) return cpu_shape_error(ctx, "where", "dst", dst, "cond", cond);
    if (!cpu_same_shape(dst, a)) return cpu_shape_error(ctx, "where", "dst", dst, "a", a);
    if (!cpu_same_shape(dst, b)) return cpu_shape_error(ctx, "where", "dst", dst, "b", b);

    void *db = dst->buf;
    const uint8_t *cb = cond->buf;
    const void *ab = a->buf, *bb = b->buf;
    ff_dtype t = dst->dtype;
    const ff_view *vs[] = {dst, cond, a, b};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 4, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0], oc = it.off[1], sc = it.step[1];
        int64_t oa = it.off[2], sa = it.step[2], ob = it.off[3], sb = it.step[3];
        for (int64_t j = 0; j < n; j++) {
            if (cb[oc + j * sc] != 0) cpu_move_elem(db, od + j * sd, ab, oa + j * sa, t);
            else cpu_move_elem(db, od + j * sd, bb, ob + j * sb, t);
        }
    }
    return FF_OK;
}
