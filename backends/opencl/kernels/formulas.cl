/*
 * The per-element formulas of the unary and binary ops, float (in double) and integer
 * (in long), shared by the elementwise kernels and the fused entry's generated kernels
 * (ocl_fused.c), which are built from common.cl and this file alone. Op codes (U_*, B_*)
 * come from the host's prelude, generated from backend_abi.h.
 */

inline double sigmoid_f(double x)
{
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* ffb_erfinv: Giles' start, then Newton on erf, or past 0.5 on log(erfc). */
inline double erfinv_f(double x)
{
    if (isnan(x) || x < -1.0 || x > 1.0) return NAN;
    if (x == 1.0 || x == -1.0) return x * INFINITY;
    if (x == 0.0) return x;
    double w = -log((1.0 - x) * (1.0 + x)), p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double a = fabs(x), y = p * a, c = 1.0 - a;
    for (int i = 0; i < 12; i++) {
        double d = 1.1283791670955126 * exp(-y * y), e = erfc(y);
        if (d == 0.0 || e == 0.0) break;
        double step = a > 0.5 ? (log(e) - log(c)) * e / d : (a - erf(y)) / d;
        y += step;
        if (fabs(step) <= 1e-17 * y) break;
    }
    return copysign(y, x);
}

/* ffb_digamma / ffb_trigamma (ff_backend_scalar.h) line for line: the reflection below 0
 * calls the x > 0 helper, never itself (OpenCL C has no recursion). */
inline double digamma_pos_f(double x)
{
    double r = 0.0;
    while (x < 10.0) {
        r -= 1.0 / x;
        x += 1.0;
    }
    if (x == 10.0) return r + 2.25175258906672110764;
    double z = x < 1e17 ? 1.0 / (x * x) : 0.0;
    double y = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return r + log(x) - 0.5 / x - y;
}

inline double digamma_f(double x)
{
    if (x == 0.0) return signbit(x) ? (double)INFINITY : -(double)INFINITY; /* -inf at +0, +inf at -0 */
    if (x < 0.0) {
        if (x == trunc(x)) return NAN;
        return digamma_pos_f(1.0 - x) - M_PI / tan(M_PI * (x - round(x)));
    }
    return digamma_pos_f(x);
}

inline double trigamma_pos_f(double x)
{
    double r = 0.0;
    while (x < 12.0) {
        r += 1.0 / (x * x);
        x += 1.0;
    }
    double z = 1.0 / (x * x);
    double s = 1.0 / 6 - z * (1.0 / 30 - z * (1.0 / 42 - z * (1.0 / 30 - z * (5.0 / 66 - z * (691.0 / 2730 - z * 7.0 / 6)))));
    return r + (1.0 + (0.5 + s / x) / x) / x;
}

inline double trigamma_f(double x)
{
    if (x == -INFINITY) return NAN;
    if (x <= 0.0 && x == trunc(x)) return INFINITY;
    if (x < 0.0) {
        double s = sin(M_PI * (x - round(x)));
        return M_PI * M_PI / (s * s) - trigamma_pos_f(1.0 - x);
    }
    return trigamma_pos_f(x);
}

inline double unary_f(int op, double x)
{
    switch (op) {
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SIGN: return isnan(x) ? x : (double)((x > 0) - (x < 0));
    case U_EXP: return exp(x);
    case U_LOG: return log(x);
    case U_LOG1P: return fabs(x) < 0x1p-54 ? x : log1p(x); /* PoCL flushes subnormal x to 0 */
    case U_EXPM1: return expm1(x);
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1.0 / sqrt(x);
    case U_SQUARE: return x * x;
    case U_RECIPROCAL: return 1.0 / x;
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_TANH: return tanh(x);
    case U_SIGMOID: return sigmoid_f(x);
    case U_RELU: return x < 0 ? 0.0 : x;
    case U_GELU_TANH: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case U_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case U_SILU: return x * sigmoid_f(x);
    case U_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x));
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_ROUND: return rint(x); /* half to even */
    case U_ISNAN: return isnan(x) ? 1.0 : 0.0;
    case U_ISINF: return isinf(x) ? 1.0 : 0.0;
    case U_LOGICAL_NOT: return x == 0.0 ? 1.0 : 0.0;
    case U_ERF: return erf(x);
    case U_ATAN: return atan(x);
    case U_ASIN: return asin(x);
    case U_ACOS: return acos(x);
    case U_ERFINV: return erfinv_f(x);
    case U_LGAMMA: return lgamma(x); /* OpenCL C's: no global sign to race on */
    case U_DIGAMMA: return digamma_f(x);
    case U_TRIGAMMA: return trigamma_f(x);
    default: return 0.0;
    }
}

inline long unary_i(int op, long x)
{
    switch (op) {
    case U_NEG: return (long)(0ul - (ulong)x);
    case U_ABS: return x < 0 ? (long)(0ul - (ulong)x) : x;
    case U_SIGN: return (x > 0) - (x < 0);
    case U_SQUARE: return (long)((ulong)x * (ulong)x);
    case U_RELU: return x > 0 ? x : 0;
    case U_FLOOR: case U_CEIL: case U_ROUND: return x;
    case U_ISNAN: case U_ISINF: return 0;
    case U_LOGICAL_NOT: return x == 0;
    case U_BITWISE_NOT: return (long)~(ulong)x;
    default: return 0;
    }
}

inline double binary_f(int op, double x, double y)
{
    switch (op) {
    case B_ADD: return x + y;
    case B_SUB: return x - y;
    case B_MUL: return x * y;
    case B_DIV: return x / y;
    case B_POW: return pow(x, y);
    case B_MAXIMUM:
        if (isnan(x) || isnan(y)) return isnan(x) ? x : y;
        if (x == y) return signbit(x) ? y : x;
        return x > y ? x : y;
    case B_MINIMUM:
        if (isnan(x) || isnan(y)) return isnan(x) ? x : y;
        if (x == y) return signbit(x) ? x : y;
        return x < y ? x : y;
    case B_FMOD: return fmod(x, y);
    case B_ATAN2: return atan2(x, y);
    case B_EQ: return x == y;
    case B_NE: return x != y;
    case B_LT: return x < y;
    case B_LE: return x <= y;
    case B_GT: return x > y;
    case B_GE: return x >= y;
    case B_LOGICAL_AND: return (x != 0) && (y != 0);
    case B_LOGICAL_OR: return (x != 0) || (y != 0);
    case B_LOGICAL_XOR: return (x != 0) != (y != 0);
    default: return 0.0;
    }
}

inline long ipow(long base, long e)
{
    if (e < 0) {
        if (base == 1) return 1;
        if (base == -1) return e % 2 != 0 ? -1 : 1;
        return 0;
    }
    ulong r = 1, b = (ulong)base;
    while (e > 0) {
        if (e & 1) r *= b;
        b *= b;
        e >>= 1;
    }
    return (long)r;
}

inline long binary_i(int op, long x, long y)
{
    switch (op) {
    case B_ADD: return (long)((ulong)x + (ulong)y);
    case B_SUB: return (long)((ulong)x - (ulong)y);
    case B_MUL: return (long)((ulong)x * (ulong)y);
    case B_DIV:
        if (y == 0) return 0;
        if (y == -1) return (long)(0ul - (ulong)x);
        return x / y;
    case B_POW: return ipow(x, y);
    case B_MAXIMUM: return x > y ? x : y;
    case B_MINIMUM: return x < y ? x : y;
    case B_FMOD:
        if (y == 0 || y == -1) return 0;
        return x % y;
    case B_EQ: return x == y;
    case B_NE: return x != y;
    case B_LT: return x < y;
    case B_LE: return x <= y;
    case B_GT: return x > y;
    case B_GE: return x >= y;
    case B_LOGICAL_AND: return (x != 0) && (y != 0);
    case B_LOGICAL_OR: return (x != 0) || (y != 0);
    case B_LOGICAL_XOR: return (x != 0) != (y != 0);
    case B_BITWISE_AND: return (long)((ulong)x & (ulong)y);
    case B_BITWISE_OR: return (long)((ulong)x | (ulong)y);
    case B_BITWISE_XOR: return (long)((ulong)x ^ (ulong)y);
    default: return 0;
    }
}
