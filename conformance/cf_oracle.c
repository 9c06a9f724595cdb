/* The host oracle: an independent, obviously-right scalar implementation of every
 * unary and binary op code, in double (floats) and wrapping int64 (integers), used
 * for the closed-form expectations. It follows the ABI comments in backend_abi.h and
 * the semantics table in conformance/README.md, not the reference's source. */
#include <math.h>

#include "cf.h"
#include "ff_backend_scalar.h"

/* The op names are the backends' shared list (ff_backend_scalar.h). */
const char *cf_unary_name(int op) { return ffb_unary_name(op) ? ffb_unary_name(op) : "?"; }
const char *cf_binary_name(int op) { return ffb_binary_name(op) ? ffb_binary_name(op) : "?"; }
const char *cf_reduce_name(int op) { return ffb_reduce_name(op) ? ffb_reduce_name(op) : "?"; }

const char *cf_kind_name(int kind)
{
    static const char *const n[FF_KIND_COUNT] = {"fill", "copy", "unary", "binary", "reduce", "matmul",
                                                 "where", "gather", "scatter_add", "random", "softmax", "conv2d", "scan", "sort",
                                                 "linalg", "fft", "batch_norm", "pool2d", "fused", "collective", "attention",
                                                 "qmatmul", "layer_norm", "linear"};
    return (unsigned)kind < FF_KIND_COUNT ? n[kind] : "?";
}

static double sigm(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

/* lgamma, digamma and trigamma in long double, by another road than the backends' (libm's
 * lgamma_r; double, shifted to 10 or 12): shifted up to z >= 20 by the recurrences, the
 * asymptotic series there to B_14 (the first term left out is below 1e-21), and the
 * reflection formulas below 0.5 (lgamma), below 0 (digamma, trigamma). The sine, cotangent
 * and sine squared of pi x are taken on x's distance to the nearest integer. */
static const long double PI_L = 3.14159265358979323846264338327950288L;

static long double lgamma_pos_l(long double x) /* x >= 0.5 */
{
    long double p = 1;
    for (; x < 20; x += 1) p *= x;
    long double z = 1 / (x * x);
    long double s = (1.0L / 12 - z * (1.0L / 360 - z * (1.0L / 1260 - z * (1.0L / 1680 - z * (1.0L / 1188 - z * (691.0L / 360360 - z / 156)))))) / x;
    return (x - 0.5L) * logl(x) - x + 0.5L * logl(2 * PI_L) + s - logl(p);
}

static double lgamma_ref(double x)
{
    if (isnan(x)) return x;
    if (isinf(x) || (x <= 0 && x == floor(x))) return INFINITY;
    if (x >= 0.5) return (double)lgamma_pos_l(x);
    long double r = (long double)x - nearbyintl(x); /* |sin(pi x)| = |sin(pi r)| */
    return (double)(logl(PI_L / fabsl(sinl(PI_L * r))) - lgamma_pos_l(1 - (long double)x));
}

static long double digamma_pos_l(long double x) /* x > 0 */
{
    long double s = 0;
    for (; x < 20; x += 1) s -= 1 / x;
    long double z = 1 / (x * x);
    return s + logl(x) - 0.5L / x -
           z * (1.0L / 12 - z * (1.0L / 120 - z * (1.0L / 252 - z * (1.0L / 240 - z * (1.0L / 132 - z * (691.0L / 32760 - z / 12))))));
}

static double digamma_ref(double x)
{
    if (isnan(x) || x == INFINITY) return x;
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY; /* PyTorch: -inf at +0, +inf at -0 */
    if (x < 0 && x == floor(x)) return NAN; /* the poles, and -inf */
    if (x > 0) return (double)digamma_pos_l(x);
    long double r = (long double)x - nearbyintl(x);
    return (double)(digamma_pos_l(1 - (long double)x) - PI_L / tanl(PI_L * r)); /* cot has period pi */
}

static long double trigamma_pos_l(long double x) /* x > 0 */
{
    long double s = 0;
    for (; x < 20; x += 1) s += 1 / (x * x);
    long double z = 1 / (x * x);
    long double b = 1.0L / 6 - z * (1.0L / 30 - z * (1.0L / 42 - z * (1.0L / 30 - z * (5.0L / 66 - z * (691.0L / 2730 - z * 7 / 6)))));
    return s + 1 / x + 1 / (2 * x * x) + b / (x * x * x);
}

static double trigamma_ref(double x)
{
    if (isnan(x) || x == -INFINITY) return NAN;
    if (x == INFINITY) return 0;
    if (x <= 0 && x == floor(x)) return INFINITY; /* the poles: +inf from both sides */
    if (x > 0) return (double)trigamma_pos_l(x);
    long double sn = sinl(PI_L * ((long double)x - nearbyintl(x)));
    return (double)(PI_L * PI_L / (sn * sn) - trigamma_pos_l(1 - (long double)x));
}

double cf_unary_ref(ff_unary_op op, double x)
{
    switch (op) {
    case FF_UNARY_NEG: return -x;
    case FF_UNARY_ABS: return fabs(x);
    case FF_UNARY_SIGN: return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0;
    case FF_UNARY_EXP: return exp(x);
    case FF_UNARY_LOG: return log(x);
    case FF_UNARY_LOG1P: return log1p(x);
    case FF_UNARY_EXPM1: return expm1(x);
    case FF_UNARY_SQRT: return sqrt(x);
    case FF_UNARY_RSQRT: return 1 / sqrt(x);
    case FF_UNARY_SQUARE: return x * x;
    case FF_UNARY_RECIPROCAL: return 1 / x;
    case FF_UNARY_SIN: return sin(x);
    case FF_UNARY_COS: return cos(x);
    case FF_UNARY_TANH: return tanh(x);
    case FF_UNARY_SIGMOID: return sigm(x);
    case FF_UNARY_RELU: return isnan(x) ? x : x == 0 ? x : x > 0 ? x : 0.0; /* relu(-0) = -0 (PyTorch) */
    case FF_UNARY_GELU_TANH: return 0.5 * x * (1 + tanh(0.7978845608028654 /* sqrt(2 / pi) */ * (x + 0.044715 * x * x * x)));
    case FF_UNARY_GELU_ERF: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case FF_UNARY_SILU: return x * sigm(x);
    case FF_UNARY_SOFTPLUS: return x > 20 ? x : log1p(exp(x));
    case FF_UNARY_FLOOR: return floor(x);
    case FF_UNARY_CEIL: return ceil(x);
    case FF_UNARY_ROUND: {
        /* half to even, written out rather than trusting the rounding mode */
        if (!isfinite(x)) return x;
        double f = floor(x), d = x - f;
        double r = d < 0.5 ? f : d > 0.5 ? f + 1 : (fmod(f, 2.0) == 0 ? f : f + 1);
        return r == 0 ? copysign(0.0, x) : r;
    }
    case FF_UNARY_ISNAN: return isnan(x);
    case FF_UNARY_ISINF: return isinf(x);
    case FF_UNARY_LOGICAL_NOT: return x == 0;
    case FF_UNARY_ERF: return erf(x);
    case FF_UNARY_ATAN: return atan(x);
    case FF_UNARY_ASIN: return asin(x);
    case FF_UNARY_ACOS: return acos(x);
    case FF_UNARY_ERFINV: { /* bisection on erf: slow, plain, independent of the backend's method */
        if (isnan(x) || x < -1 || x > 1) return NAN;
        if (x == 1 || x == -1) return x * INFINITY;
        if (x == 0) return x;
        double a = fabs(x), c = 1 - a, lo = 0, hi = 27; /* erfc(27) is below the smallest double */
        for (int i = 0; i < 200; i++) { /* on erfc past 0.5, where erf has no digits left */
            double mid = 0.5 * (lo + hi);
            if (mid == lo || mid == hi) break;
            if (a > 0.5 ? erfc(mid) > c : erf(mid) < a) lo = mid;
            else hi = mid;
        }
        return copysign(0.5 * (lo + hi), x);
    }
    case FF_UNARY_LGAMMA: return lgamma_ref(x);
    case FF_UNARY_DIGAMMA: return digamma_ref(x);
    case FF_UNARY_TRIGAMMA: return trigamma_ref(x);
    default: return NAN;
    }
}

static int64_t wrap(uint64_t u) { return u <= (uint64_t)INT64_MAX ? (int64_t)u : (int64_t)(u - (uint64_t)INT64_MAX - 1) + INT64_MIN; }

int64_t cf_unary_ref_i(ff_unary_op op, int64_t x, ff_dtype dt)
{
    switch (op) {
    case FF_UNARY_NEG: return wrap(0u - (uint64_t)x);
    case FF_UNARY_ABS: return x < 0 ? wrap(0u - (uint64_t)x) : x;
    case FF_UNARY_SIGN: return (x > 0) - (x < 0);
    case FF_UNARY_SQUARE: return wrap((uint64_t)x * (uint64_t)x);
    case FF_UNARY_RELU: return x > 0 ? x : 0;
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: return x;
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: return 0;
    case FF_UNARY_LOGICAL_NOT: return x == 0;
    case FF_UNARY_BITWISE_NOT: /* PyTorch's ~: not on bool, 255 - x on u8, two's complement -x - 1 else */
        if (dt == FF_BOOL) return x == 0;
        if (dt == FF_U8) return 255 - x;
        return x < 0 ? -(x + 1) : -x - 1; /* without overflow: ~INT_MIN = INT_MAX, ~INT_MAX = INT_MIN */
    default: return 0;
    }
}

double cf_binary_ref(ff_binary_op op, double x, double y)
{
    switch (op) {
    case FF_BINARY_ADD: return x + y;
    case FF_BINARY_SUB: return x - y;
    case FF_BINARY_MUL: return x * y;
    case FF_BINARY_DIV: return x / y;
    case FF_BINARY_POW: return pow(x, y);
    case FF_BINARY_MAXIMUM:
        if (isnan(x) || isnan(y)) return NAN;
        if (x == y) return signbit(x) ? y : x;
        return x > y ? x : y;
    case FF_BINARY_MINIMUM:
        if (isnan(x) || isnan(y)) return NAN;
        if (x == y) return signbit(x) ? x : y;
        return x < y ? x : y;
    case FF_BINARY_FMOD: return fmod(x, y);
    case FF_BINARY_ATAN2: return atan2(x, y);
    case FF_BINARY_EQ: return x == y;
    case FF_BINARY_NE: return x != y;
    case FF_BINARY_LT: return x < y;
    case FF_BINARY_LE: return x <= y;
    case FF_BINARY_GT: return x > y;
    case FF_BINARY_GE: return x >= y;
    case FF_BINARY_LOGICAL_AND: return (x != 0) && (y != 0);
    case FF_BINARY_LOGICAL_OR: return (x != 0) || (y != 0);
    case FF_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    default: return NAN;
    }
}

static int64_t ipow(int64_t b, int64_t e)
{
    if (e < 0) return b == 1 ? 1 : b == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, bb = (uint64_t)b;
    for (; e; e >>= 1, bb *= bb)
        if (e & 1) r *= bb;
    return wrap(r);
}

int64_t cf_binary_ref_i(ff_binary_op op, int64_t x, int64_t y, ff_dtype dt)
{
    if (dt == FF_BOOL) { /* bool arithmetic: add = or, mul = and */
        if (op == FF_BINARY_ADD || op == FF_BINARY_MAXIMUM) return x || y;
        if (op == FF_BINARY_MUL || op == FF_BINARY_MINIMUM) return x && y;
    }
    switch (op) {
    case FF_BINARY_ADD: return wrap((uint64_t)x + (uint64_t)y);
    case FF_BINARY_SUB: return wrap((uint64_t)x - (uint64_t)y);
    case FF_BINARY_MUL: return wrap((uint64_t)x * (uint64_t)y);
    case FF_BINARY_DIV: return y == 0 ? 0 : (x == INT64_MIN && y == -1) ? INT64_MIN : x / y;
    case FF_BINARY_POW: return ipow(x, y);
    case FF_BINARY_MAXIMUM: return x > y ? x : y;
    case FF_BINARY_MINIMUM: return x < y ? x : y;
    case FF_BINARY_FMOD: return y == 0 ? 0 : (y == -1 ? 0 : x % y);
    case FF_BINARY_EQ: return x == y;
    case FF_BINARY_NE: return x != y;
    case FF_BINARY_LT: return x < y;
    case FF_BINARY_LE: return x <= y;
    case FF_BINARY_GT: return x > y;
    case FF_BINARY_GE: return x >= y;
    case FF_BINARY_LOGICAL_AND: return x && y;
    case FF_BINARY_LOGICAL_OR: return x || y;
    case FF_BINARY_LOGICAL_XOR: return (x != 0) != (y != 0);
    /* C's & | ^ on int64 act on two's complement bits on every target we build for; the
     * i32/u8 operands arrive sign-/zero-extended, so the low bits are the dtype's. On
     * bool (0/1) they are the logical and, or, xor. */
    case FF_BINARY_BITWISE_AND: return dt == FF_BOOL ? (x && y) : x & y;
    case FF_BINARY_BITWISE_OR: return dt == FF_BOOL ? (x || y) : x | y;
    case FF_BINARY_BITWISE_XOR: return dt == FF_BOOL ? (x != 0) != (y != 0) : x ^ y;
    default: return 0;
    }
}
