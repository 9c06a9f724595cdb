/*
 * Unary elementwise ops.
 *
 * Supported (op, src dtype):
 *   F32, F64: every op. f32 is computed in double and rounded once.
 *   I32, I64, U8: NEG, ABS, SIGN, SQUARE, RELU, FLOOR, CEIL, ROUND, ISNAN, ISINF,
 *     LOGICAL_NOT. NEG/ABS/SQUARE wrap around (ABS(INT_MIN) = INT_MIN, NEG on U8 is
 *     modulo 256); FLOOR/CEIL/ROUND are the identity; ISNAN/ISINF are false.
 *   BOOL: the integer set except NEG. On {0, 1} every one of those is the identity
 *     except ISNAN/ISINF (false) and LOGICAL_NOT.
 *   Transcendental ops on integers or bool: unsupported (the core promotes first).
 * dst is BOOL for ISNAN, ISINF and LOGICAL_NOT, and src's dtype otherwise.
 */
#include "cpu_impl.h"
#include "cpu_iter.h"

static int writes_bool(ff_unary_op op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

static int int_op(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_SQUARE: case FF_UNARY_RELU:
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND:
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: case FF_UNARY_LOGICAL_NOT:
        return 1;
    default:
        return 0;
    }
}

int cpu_unary_supported(ff_unary_op op, ff_dtype t)
{
    if ((unsigned)op >= FF_UNARY_COUNT || !cpu_dtype_ok(t)) return 0;
    if (cpu_is_float(t)) return 1;
    if (t == FF_BOOL) return int_op(op) && op != FF_UNARY_NEG;
    return int_op(op);
}

static double sigmoid(double x)
{
    /* never exp() of a large positive number: exact 0/1 limits, no overflow */
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

static double unary_f(ff_unary_op op, double x)
{
    switch (op) {
    case FF_UNARY_NEG: return -x;
    case FF_UNARY_ABS: return fabs(x);
    case FF_UNARY_SIGN: return isnan(x) ? x : (double)((x > 0) - (x < 0)); /* sign(+-0) = 0 */
    case FF_UNARY_EXP: return exp(x);
    case FF_UNARY_LOG: return log(x);
    case FF_UNARY_LOG1P: return log1p(x);
    case FF_UNARY_EXPM1: return expm1(x);
    case FF_UNARY_SQRT: return sqrt(x);
    case FF_UNARY_RSQRT: return 1.0 / sqrt(x);
    case FF_UNARY_SQUARE: return x * x;
    case FF_UNARY_RECIPROCAL: return 1.0 / x;
    case FF_UNARY_SIN: return sin(x);
    case FF_UNARY_COS: return cos(x);
    case FF_UNARY_TANH: return tanh(x);
    case FF_UNARY_SIGMOID: return sigmoid(x);
    case FF_UNARY_RELU: return isnan(x) ? x : (x > 0 ? x : 0.0);
    case FF_UNARY_GELU_TANH: {
        const double k = 0.7978845608028654; /* sqrt(2 / pi) */
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    case FF_UNARY_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); /* x / sqrt(2) */
    case FF_UNARY_SILU: return x * sigmoid(x);
    case FF_UNARY_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x)); /* torch's threshold */
    case FF_UNARY_FLOOR: return floor(x);
    case FF_UNARY_CEIL: return ceil(x);
    case FF_UNARY_ROUND: return nearbyint(x); /* default rounding mode: half to even */
    case FF_UNARY_ISNAN: return isnan(x) ? 1.0 : 0.0;
    case FF_UNARY_ISINF: return isinf(x) ? 1.0 : 0.0;
    case FF_UNARY_LOGICAL_NOT: return x == 0.0 ? 1.0 : 0.0;
    case FF_UNARY_ERF: return erf(x);
    default: return 0.0;
    }
}

/* Integer and bool ops, in int64 with wrap-around through uint64; the store into
 * dst wraps I32/U8 and maps bool to != 0. */
static int64_t unary_i(ff_unary_op op, int64_t x)
{
    switch (op) {
    case FF_UNARY_NEG: return cpu_u64_to_i64(0u - (uint64_t)x);
    case FF_UNARY_ABS: return x < 0 ? cpu_u64_to_i64(0u - (uint64_t)x) : x;
    case FF_UNARY_SIGN: return (x > 0) - (x < 0);
    case FF_UNARY_SQUARE: return cpu_u64_to_i64((uint64_t)x * (uint64_t)x);
    case FF_UNARY_RELU: return x > 0 ? x : 0;
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: return x;
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: return 0;
    case FF_UNARY_LOGICAL_NOT: return x == 0;
    default: return 0;
    }
}

ff_status cpu_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ff_status st;
    if ((st = cpu_check_view(ctx, "unary", "dst", dst)) || (st = cpu_check_view(ctx, "unary", "src", src))) return st;
    if ((unsigned)op >= FF_UNARY_COUNT) return cpu_error(ctx, FF_ERR_INVALID, "cpu unary: invalid op %d", (int)op);
    if (!cpu_unary_supported(op, src->dtype))
        return cpu_error(ctx, FF_ERR_UNSUPPORTED, "cpu unary: %s is not supported on %s", cpu_unary_name(op),
                         cpu_dtype_name(src->dtype));
    ff_dtype want = writes_bool(op) ? FF_BOOL : src->dtype;
    if (dst->dtype != want)
        return cpu_error(ctx, FF_ERR_INVALID, "cpu unary: %s on %s writes %s, but dst is %s", cpu_unary_name(op),
                         cpu_dtype_name(src->dtype), cpu_dtype_name(want), cpu_dtype_name(dst->dtype));
    if (!cpu_same_shape(dst, src)) return cpu_shape_error(ctx, "unary", "dst", dst, "src", src);

    void *db = dst->buf;
    const void *sb = src->buf;
    ff_dtype dt = dst->dtype, t = src->dtype;
    const ff_view *vs[] = {dst, src};
    cpu_iter it;
    for (cpu_iter_init(&it, dst->ndim, dst->shape, 2, vs); !it.done; cpu_iter_next(&it)) {
        int64_t n = it.len, od = it.off[0], sd = it.step[0], os = it.off[1], ss = it.step[1];
        if (cpu_is_float(t)) {
            for (int64_t j = 0; j < n; j++)
                cpu_store_f64(db, dt, od + j * sd, unary_f(op, cpu_load_f64(sb, t, os + j * ss)));
        } else {
            for (int64_t j = 0; j < n; j++)
                cpu_store_i64(db, dt, od + j * sd, unary_i(op, cpu_load_i64(sb, t, os + j * ss)));
        }
    }
    return FF_OK;
}
