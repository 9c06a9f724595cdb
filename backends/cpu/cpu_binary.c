/*
 * Binary elementwise ops. a and b share one dtype; dst has it too for arithmetic
 * (ADD..FMOD) and is BOOL for comparisons and logical ops.
 *
 * Supported (op, dtype):
 *   F32, F64: every op (f32 computed in double, rounded once: exact for + - * /).
 *     MAXIMUM/MINIMUM propagate NaN; comparisons with NaN are false except NE;
 *     logical ops treat any non-zero (NaN included) as true.
 *   I32, I64, U8: every op. ADD/SUB/MUL/POW wrap around. DIV truncates toward zero,
 *     x / 0 = 0, INT_MIN / -1 = INT_MIN. FMOD has the sign of the dividend, x % 0 = 0.
 *     POW with a negative exponent: 1 for base 1, +-1 for base -1, else 0 (PyTorch
 *     refuses this case; we define it rather than fail).
 *   BOOL: ADD (or), MUL (and), MAXIMUM (or), MINIMUM (and), comparisons (false <
 *     true) and logical ops. SUB, DIV, POW, FMOD are unsupported.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

static int writes_bool(ff_binary_op op) { return op >= FF_BINARY_EQ; }

int cpu_binary_supported(ff_binary_op op, ff_dtype t)
{
    if ((unsigned)op >= FF_BINARY_COUNT || !cpu_dtype_ok(t)) return 0;
    if (t == FF_BOOL)
        return !(op == FF_BINARY_SUB || op == FF_BINARY_DIV || op == FF_BINARY_POW || op == FF_BINARY_FMOD);
    return 1;
}

static double binary_f(ff_binary_op op, double x, double y)
{
    switch (op) {
    case FF_BINARY_ADD: return x + y;
    case FF_BINARY_SUB: return x - y;
    case FF_BINARY_MUL: return x * y;
    case FF_BINARY_DIV: return x / y;
    case FF_BINARY_POW: return pow(x, y);
    case FF_BINARY_MAXIMUM:
        if (isnan(x) || isnan(y)) return isnan(x) ? x : y;
        if (x == y) return signbit(x) ? y : x; /* maximum(-0, +0) = +0 */
        return x > y ? x : y;
    case FF_BINARY_MINIMUM:
        if (isnan(x) || isnan(y)) return isnan(x) ? x : y;
        if (x == y) return signbit(x) ? x : y; /* minimum(-0, +0) = -0 */
        return x < y ? x : y;
    case FF_BINARY_FMOD: return fmod(x, y);
    case FF_BINARY_EQ: return x == y;
    case FF_BINARY_NE: return x != y;
    case FF_BINARY_LT: return x < y;
    case FF_BINARY_LE: return x <= y;
    case FF_BINARY_GT: return x > y;
    case FF_BINARY_GE: return x >= y;
    case FF_BINARY_LOGICAL_AND: return (x != 0) && (y != 0);
    case FF_BINARY_LOGICAL_OR: return (x != 0) || (y != 0);
    case FF_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    default: return 0.0;
    }
}

/* base^e by repeated squaring, wrapping modulo 2^64 (and so modulo 2^32 / 2^8 once
 * the store narrows it, since multiplication commutes with the reduction). */
static int64_t ipow(int64_t base, int64_t e)
{
    if (e < 0) {
        if (base == 1) return 1;
        if (base == -1) return e % 2 != 0 ? -1 : 1;
        return 0;
    }
    uint64_t r = 1, b = (uint64_t)base;
    while (e > 0) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return cpu_u64_to_i64(r);
}

/* Integer and bool ops on the values widened to int64 (U8 as 0..255, bool as 0/1).
 * Results wrap when the store narrows them to dst's dtype. */
static int64_t binary_i(ff_binary_op op, int64_t x, int64_t y)
{
    switch (op) {
    case FF_BINARY_ADD: return cpu_u64_to_i64((uint64_t)x + (uint64_t)y);
    case FF_BINARY_SUB: return cpu_u64_to_i64((uint64_t)x - (uint64_t)y);
    case FF_BINARY_MUL: return cpu_u64_to_i64((uint64_t)x * (uint64_t)y);
    case FF_BINARY_DIV:
        if (y == 0) return 0;
        if (y == -1) return cpu_u64_to_i64(0u - (uint64_t)x); /* INT64_MIN / -1 wraps */
        return x / y;
    case FF_BINARY_POW: return ipow(x, y);
    case FF_BINARY_MAXIMUM: return x > y ? x : y;
    case FF_BINARY_MINIMUM: return x < y ? x : y;
    case FF_BINARY_FMOD:
        if (y == 0 || y == -1) return 0; /* INT64_MIN % -1 is undefined in C */
        return x % y;
    case FF_BINARY_EQ: return x == y;
    case FF_BINARY_NE: return x != y;
    case FF_BINARY_LT: return x < y;
    case FF_BINARY_LE: return x <= y;
    case FF_BINARY_GT: return x > y;
    case FF_BINARY_GE: return x >= y;
    case FF_BINARY_LOGICAL_AND: return (x != 0) && (y != 0);
    case FF_BINARY_LOGICAL_OR: return (x != 0) || (y != 0);
    case FF_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    default: return 0;
    }
}

ff_status cpu_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "binary", "dst", dst)) || (st = cpu_check_view(ctx, "binary", "a", a)) ||
        (st = cpu_check_view(ctx, "binary", "b", b)))
        return st;
    if ((unsigned)op >= FF_BINARY_COUNT) return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: invalid op %d", (int)op);
    if (a->dtype != b->dtype)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu binary: %s operands differ in dtype (%s and %s)",
                         cpu_binary_name(op), cpu_dtype_name(a->dtype), cpu_dtype_name(b->dtype));
    if (!cpu_binary_supported(op, a->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu binary: %s is not supported on %s", cpu_binary_name(op),
                         cpu_dtype_name(a->dtype));
    ff_dtype want = writes_bool(op) ? FF_BOOL : a->dtype;
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
                cpu_store_f64(db, dt, od + j * sd, binary_f(op, x, y));
            }
        } else {
            for (int64_t j = 0; j < n; j++) {
                int64_t x = cpu_load_i64(ab, t, oa + j * sa), y = cpu_load_i64(bb, t, ob + j * sb);
                cpu_store_i64(db, dt, od + j * sd, binary_i(op, x, y));
            }
        }
    }
    return FF_OK;
}
