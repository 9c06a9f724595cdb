/*
 * Binary elementwise ops. a and b share one dtype; dst has it too for arithmetic
 * (ADD..FMOD) and the bitwise ops, and is BOOL for comparisons and logical ops
 * (ff_binary_op_writes_bool).
 *
 * Supported (op, dtype):
 *   F32, F64: every op but the bitwise ones (f32 computed in double, rounded once:
 *     exact for + - * /).
 *     MAXIMUM/MINIMUM propagate NaN; comparisons with NaN are false except NE;
 *     logical ops treat any non-zero (NaN included) as true.
 *   I32, I64, U8: every op. ADD/SUB/MUL/POW wrap around. BITWISE_AND/OR/XOR work on
 *     the two's complement bits in the operands' dtype. DIV truncates toward zero,
 *     x / 0 = 0, INT_MIN / -1 = INT_MIN. FMOD has the sign of the dividend, x % 0 = 0.
 *     POW with a negative exponent: 1 for base 1, +-1 for base -1, else 0 (PyTorch
 *     refuses this case; we define it rather than fail).
 *   BOOL: ADD (or), MUL (and), MAXIMUM (or), MINIMUM (and), comparisons (false <
 *     true), logical ops and BITWISE_AND/OR/XOR (and, or, xor of 0/1, writing BOOL).
 *     SUB, DIV, POW, FMOD are unsupported.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

/* The supported set, the dtype written and the per-element formulas (in double for
 * floats, in int64 with wrap-around for integers and bool) are the shared scalar
 * rules: ffb_binary_supported, ffb_binary_writes_bool, ffb_binary_f64, ffb_binary_i64
 * (backends/common/ff_backend_scalar.h). */
int cpu_binary_supported(ff_binary_op op, ff_dtype t) { return ffb_binary_supported(op, t); }

ff_status cpu_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "binary", "dst", dst)) || (st = cpu_check_view(ctx, "binary", "a", a)) ||
        (st = cpu_check_view(ctx, "binary", "b", b)))
        return st;
    if ((unsigned)op >= FF_BINARY_COUNT) return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: invalid op %d", (int)op);
    if (ff_dtype_is_complex(a->dtype) && cpu_complex_supported(FF_KIND_BINARY, (int)op))
        return cpu_complex_binary(ctx, op, dst, a, b);
    if (a->dtype != b->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: %s operands differ in dtype (%s and %s)",
                         cpu_binary_name(op), cpu_dtype_name(a->dtype), cpu_dtype_name(b->dtype));
    if (!cpu_binary_supported(op, a->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu binary: %s is not supported on %s", cpu_binary_name(op),
                         cpu_dtype_name(a->dtype));
    ff_dtype want = ffb_binary_writes_bool(op) ? FF_BOOL : a->dtype;
    if (dst->dtype != want)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: %s on %s writes %s, but dst is %s", cpu_binary_name(op),
                         cpu_dtype_name(a->dtype), cpu_dtype_name(want), cpu_dtype_name(dst->dtype));
    if (!cpu_same_shape(dst, a)) return cpu_shape_error(ctx, "binary", "dst", dst, "a", a);
    if (!cpu_same_shape(dst, b)) return cpu_shape_error(ctx, "binary", "dst", dst, "b", b);

    void *db = dst->buf;
    const void *ab = a->buf, *bb = b->buf;
    ff_dtype dt = dst->dtype, t = a->dtype;
    const ff_view *vs[] = {dst, a, b};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 3, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0];
        int64_t oa = it.off[1], sa = it.step[1], ob = it.off[2], sb = it.step[2];
        if (cpu_is_float(t)) {
            for (int64_t j = 0; j < n; j++) {
                double x = cpu_load_f64(ab, t, oa + j * sa), y = cpu_load_f64(bb, t, ob + j * sb);
                cpu_store_f64(db, dt, od + j * sd, ffb_binary_f64(op, x, y));
            }
        } else {
            for (int64_t j = 0; j < n; j++) {
                int64_t x = cpu_load_i64(ab, t, oa + j * sa), y = cpu_load_i64(bb, t, ob + j * sb);
                cpu_store_i64(db, dt, od + j * sd, ffb_binary_i64(op, x, y));
            }
        }
    }
    return FF_OK;
}
