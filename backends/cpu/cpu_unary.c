/*
 * Unary elementwise ops.
 *
 * Supported (op, src dtype):
 *   F32, F64: every op but BITWISE_NOT. f32 is computed in double and rounded once.
 *   I32, I64, U8: NEG, ABS, SIGN, SQUARE, RELU, FLOOR, CEIL, ROUND, ISNAN, ISINF,
 *     LOGICAL_NOT, BITWISE_NOT. NEG/ABS/SQUARE wrap around (ABS(INT_MIN) = INT_MIN, NEG
 *     on U8 is modulo 256); FLOOR/CEIL/ROUND are the identity; ISNAN/ISINF are false;
 *     BITWISE_NOT is ~x in the dtype (two's complement; U8: 255 - x).
 *   BOOL: the integer set except NEG. On {0, 1} every one of those is the identity
 *     except ISNAN/ISINF (false), LOGICAL_NOT and BITWISE_NOT (both the logical not).
 *   Transcendental ops on integers or bool: unsupported (the core promotes first).
 * dst is BOOL for ISNAN, ISINF and LOGICAL_NOT, and src's dtype otherwise.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

/* The supported set, the dtype written and the per-element formulas (in double for
 * floats, in int64 with wrap-around for integers and bool) are the shared scalar
 * rules: ffb_unary_supported, ffb_unary_writes_bool, ffb_unary_f64, ffb_unary_i64
 * (backends/common/ff_backend_scalar.h). */
int cpu_unary_supported(ff_unary_op op, ff_dtype t) { return ffb_unary_supported(op, t); }

ff_status cpu_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "unary", "dst", dst)) || (st = cpu_check_view(ctx, "unary", "src", src))) return st;
    if ((unsigned)op >= FF_UNARY_COUNT) return cpu_error(ctx, FF_ERR_INVALID, "cpu unary: invalid op %d", (int)op);
    if (ff_dtype_is_complex(src->dtype) && op == FF_UNARY_NEG) return cpu_complex_neg(ctx, dst, src);
    if (!cpu_unary_supported(op, src->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu unary: %s is not supported on %s", cpu_unary_name(op),
                         cpu_dtype_name(src->dtype));
    ff_dtype want = ffb_unary_writes_bool(op) ? FF_BOOL : src->dtype;
    if (dst->dtype != want)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu unary: %s on %s writes %s, but dst is %s", cpu_unary_name(op),
                         cpu_dtype_name(src->dtype), cpu_dtype_name(want), cpu_dtype_name(dst->dtype));
    if (!cpu_same_shape(dst, src)) return cpu_shape_error(ctx, "unary", "dst", dst, "src", src);

    op = ffb_unary_effective(op, src->dtype); /* ~bool is the logical not */
    void *db = dst->buf;
    const void *sb = src->buf;
    ff_dtype dt = dst->dtype, t = src->dtype;
    const ff_view *vs[] = {dst, src};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 2, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0], os = it.off[1], ss = it.step[1];
        if (cpu_is_float(t)) {
            for (int64_t j = 0; j < n; j++)
                cpu_store_f64(db, dt, od + j * sd, ffb_unary_f64(op, cpu_load_f64(sb, t, os + j * ss)));
        } else {
            for (int64_t j = 0; j < n; j++)
                cpu_store_i64(db, dt, od + j * sd, ffb_unary_i64(op, cpu_load_i64(sb, t, os + j * ss)));
        }
    }
    return FF_OK;
}
