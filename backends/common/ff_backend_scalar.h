/*
 * Scalar semantics shared by the in-tree backends (header-only: everything is static
 * inline, so a plugin that includes it still depends only on include/ff/backend_abi.h
 * and the C library). These are the rules the ABI fixes; writing them once here keeps
 * every backend bit-for-bit in agreement with the reference (backends/cpu):
 *   - Integer arithmetic wraps around (two's complement), computed through uint64_t so
 *     that no signed overflow (undefined behaviour in C) ever happens.
 *   - double -> integer: NaN -> 0, truncate toward zero, saturate to the int64 range;
 *     I32 then clamps to its own range; U8, I8 and I16 wrap modulo 2^8 / 2^16 from that
 *     int64 (like the C cast (uint8_t)(int64_t)x, and like PyTorch on x86: -1.0 -> 255). Any value ->
 *     BOOL is (x != 0), so NaN -> true.
 *   - int64 -> narrower integer wraps modulo 2^32 / 2^16 / 2^8; int64 -> float rounds to nearest.
 *   - F16 (IEEE binary16) and BF16 (bfloat16) are storage dtypes: every value converts
 *     to them once, from double, to nearest even (f64 -> f16 never passes through f32,
 *     which would round twice); past the largest finite value (65504 for f16: 65520 and
 *     up is +inf) to +-inf; f16 subnormals exact; NaN -> a quiet NaN of the same sign;
 *     -0 stays -0. int64 -> half rounds once too. f16/bf16 -> f32 and f64 are exact.
 *   - Per-element op formulas (unary, binary, reduction accumulators) for the generic,
 *     non-vectorized paths: floats in double (f32 rounded once at the store), integers
 *     and bool widened to int64 (U8 as 0..255, bool as 0/1).
 *
 * The functions are compiled in each including file with that file's flags. The
 * argument checks built on them are in ff_backend_checks.h. An out-of-tree backend may
 * copy both files.
 */
#ifndef FF_BACKEND_SCALAR_H
#define FF_BACKEND_SCALAR_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff/backend_abi.h"

/* The per-element formulas (conversions, loads and stores, unary, binary, reduction
 * accumulators) are also the device code of the cuda backend: under nvcc they are
 * __host__ __device__, so its kernels compute with these very functions. */
#if defined(__CUDACC__)
#define FFB_HD __host__ __device__
#else
#define FFB_HD
#endif
#if defined(__cplusplus)
#define FFB_STATIC_ASSERT static_assert
#else
#define FFB_STATIC_ASSERT _Static_assert
#endif

/* ---- dtypes ------------------------------------------------------------------ */

/* The dtypes the CPU backends compute on in every entry: F32, F64, I32, I64, U8, BOOL.
 * F16/BF16 they copy and fill (ffb_dtype_storage_ok); cpu_blas computes some entries on
 * them too (its supports() says which), the core computes the rest in f32. */
static inline int ffb_dtype_ok(ff_dtype t)
{
    return t == FF_F32 || t == FF_F64 || t == FF_I32 || t == FF_I64 || t == FF_U8 || t == FF_BOOL;
}

static inline FFB_HD int ffb_is_float(ff_dtype t) { return t == FF_F32 || t == FF_F64; }

/* The 2-byte float dtypes: the CPU backends copy and fill them (every dtype pair). */
static inline FFB_HD int ffb_is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

/* The narrow integers (appended dtypes): copied and filled; the core computes on them in I32. */
static inline int ffb_is_narrow_int(ff_dtype t) { return t == FF_I8 || t == FF_I16; }

/* What copy and fill take: the computable dtypes, the two half ones and the narrow integers. */
static inline int ffb_dtype_storage_ok(ff_dtype t) { return ffb_dtype_ok(t) || ffb_is_half(t) || ffb_is_narrow_int(t); }

/* Name of a dtype for messages. */
static inline const char *ffb_dtype_name(ff_dtype t)
{
    static const char *const names[FF_DTYPE_COUNT] = {"f32", "f64", "i32", "i64", "u8", "bool", "f16", "bf16", "i8", "i16",
                                                        "c64", "c128"};
    return (unsigned)t < FF_DTYPE_COUNT ? names[t] : "invalid dtype";
}

/* Short names of the op codes ("exp", "atan2"), for messages and support tables: the one
 * list the cpu backend, ff-conformance and ff-info share, so appending an op code is one
 * edit here (the asserts fail the build if a name is missing). NULL if out of range. */
static inline const char *ffb_unary_name(int op)
{
    static const char *const names[] = {
        "neg", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square",
        "reciprocal", "sin", "cos", "tanh", "sigmoid", "relu", "gelu_tanh", "gelu_erf", "silu",
        "softplus", "floor", "ceil", "round", "isnan", "isinf", "logical_not", "erf", "bitwise_not",
        "atan", "asin", "acos", "erfinv", "lgamma", "digamma", "trigamma"};
    FFB_STATIC_ASSERT(sizeof names / sizeof names[0] == FF_UNARY_COUNT, "a unary op code has no name");
    return (unsigned)op < FF_UNARY_COUNT ? names[op] : NULL;
}

static inline const char *ffb_binary_name(int op)
{
    static const char *const names[] = {
        "add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "eq", "ne", "lt", "le", "gt", "ge",
        "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "atan2"};
    FFB_STATIC_ASSERT(sizeof names / sizeof names[0] == FF_BINARY_COUNT, "a binary op code has no name");
    return (unsigned)op < FF_BINARY_COUNT ? names[op] : NULL;
}

static inline const char *ffb_reduce_name(int op)
{
    static const char *const names[] = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"};
    FFB_STATIC_ASSERT(sizeof names / sizeof names[0] == FF_REDUCE_COUNT, "a reduce op code has no name");
    return (unsigned)op < FF_REDUCE_COUNT ? names[op] : NULL;
}

/* ---- wrap-around integers and saturating conversions ---------------------------- */

/* uint64 -> int64 modulo 2^64 without implementation-defined conversions. */
static inline FFB_HD int64_t ffb_u64_to_i64(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : (int64_t)(u - ((uint64_t)INT64_MAX + 1)) + INT64_MIN;
}

/* Low 8 / 16 bits of v as a signed integer (two's complement wrap). */
static inline FFB_HD int8_t ffb_wrap_i8(int64_t v)
{
    uint8_t w = (uint8_t)(uint64_t)v;
    return w <= 127u ? (int8_t)w : (int8_t)((int)w - 256);
}

static inline FFB_HD int16_t ffb_wrap_i16(int64_t v)
{
    uint16_t w = (uint16_t)(uint64_t)v;
    return w <= 32767u ? (int16_t)w : (int16_t)((int32_t)w - 65536);
}

/* Low 32 bits of v as a signed int32 (two's complement wrap). */
static inline FFB_HD int32_t ffb_wrap_i32(int64_t v)
{
    uint32_t w = (uint32_t)(uint64_t)v;
    return w <= (uint32_t)INT32_MAX ? (int32_t)w : (int32_t)(w - 0x80000000u) + INT32_MIN;
}

/* double -> int64: NaN -> 0, truncate toward zero, saturate. */
static inline FFB_HD int64_t ffb_f64_to_i64(double x)
{
    if (isnan(x)) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

/* double -> int32: NaN -> 0, truncate toward zero, saturate. */
static inline FFB_HD int32_t ffb_f64_to_i32(double x)
{
    if (isnan(x)) return 0;
    if (x >= 2147483647.0) return INT32_MAX;
    if (x <= -2147483648.0) return INT32_MIN;
    return (int32_t)x;
}

/* ---- half precision ------------------------------------------------------------------ */
/* IEEE-style rounding of a double to a float format with `frac` fraction bits and
 * smallest normal exponent emin (f16: 10, -14; bf16: 7, -126), on the bits: round to
 * nearest, ties to even, once; subnormals; overflow to inf; NaN quiet with its sign.
 * Works on the double's significand as an integer, so it is independent of the FPU's
 * rounding mode and of flush-to-zero. */
static inline FFB_HD uint16_t ffb_f64_to_small_float(double x, int frac, int emin)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    uint16_t sign = (uint16_t)((b >> 48) & 0x8000u);
    uint64_t ab = b & 0x7FFFFFFFFFFFFFFFull;
    int emax = -emin + 1;
    uint64_t inf = (uint64_t)(emax - emin + 2) << frac; /* all-ones exponent field */
    if (ab > 0x7FF0000000000000ull) return (uint16_t)(sign | inf | (1u << (frac - 1))); /* quiet NaN */
    int e = (int)(ab >> 52) - 1023;             /* unbiased exponent (subnormal doubles: tiny, -> 0) */
    if (e > emax) return (uint16_t)(sign | inf); /* inf, or at least 2^(emax+1) */
    if (e < emin - frac - 1) return sign;        /* below half the smallest subnormal: +-0 */
    uint64_t m = (ab & 0xFFFFFFFFFFFFFull) | (1ull << 52); /* 53-bit significand: |x| = m 2^(e-52) */
    int shift = 52 - frac + (e < emin ? emin - e : 0);     /* in [52 - frac, 53] */
    uint64_t r = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) r++;
    /* subnormal: r is the field as it stands (a carry to 1 << frac is the smallest normal);
     * normal: the exponent field plus the fraction, where a carry moves up one binade */
    uint64_t bits = e < emin ? r : ((uint64_t)(e - emin + 1) << frac) + (r - (1ull << frac));
    if (bits >= inf) bits = inf;
    return (uint16_t)(sign | bits);
}

static inline FFB_HD uint16_t ffb_f64_to_f16(double x) { return ffb_f64_to_small_float(x, 10, -14); }
static inline FFB_HD uint16_t ffb_f64_to_bf16(double x) { return ffb_f64_to_small_float(x, 7, -126); }

/* Exact: every f16 and bf16 value is a float. */
static inline FFB_HD float ffb_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, ex = (h >> 10) & 0x1Fu, fr = h & 0x3FFu, bits;
    if (ex == 0x1F) {
        bits = sign | 0x7F800000u | (fr << 13); /* inf, or NaN keeping its payload */
    } else if (ex == 0) {
        float v = (float)fr * 0x1p-24f; /* subnormal (or zero): exact */
        return sign ? -v : v;
    } else {
        bits = sign | ((ex + 112u) << 23) | (fr << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline FFB_HD float ffb_bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* int64 -> half, rounded once: beyond 2^53 the integer is first cut to 53 bits with a
 * sticky last bit (round to odd), which the conversion to 11 or 8 bits then rounds
 * exactly as from the integer itself. */
static inline FFB_HD double ffb_i64_to_f64_odd(int64_t v)
{
    uint64_t u = v < 0 ? 0u - (uint64_t)v : (uint64_t)v, sticky = 0;
    int sh = 0;
    while (u >> 53) sticky |= u & 1u, u >>= 1, sh++;
    double d = ldexp((double)(u | sticky), sh);
    return v < 0 ? -d : d;
}

/* ---- element loads and stores ------------------------------------------------------ */
/* p is the byte address of the element (any alignment). */

/* Element as double. Exact for every dtype except I64 beyond 2^53. */
static inline FFB_HD double ffb_ld_f64(const char *p, ff_dtype t)
{
    switch (t) {
    case FF_F32: { float v; memcpy(&v, p, 4); return v; }
    case FF_F64: { double v; memcpy(&v, p, 8); return v; }
    case FF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case FF_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case FF_U8: return *(const uint8_t *)p;
    case FF_BOOL: return *(const uint8_t *)p != 0;
    case FF_F16: { uint16_t h; memcpy(&h, p, 2); return ffb_f16_to_f32(h); }
    case FF_BF16: { uint16_t h; memcpy(&h, p, 2); return ffb_bf16_to_f32(h); }
    case FF_I8: return *(const int8_t *)p;
    case FF_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    default: return 0.0;
    }
}

/* Element as int64. Bool bytes read as 0/1 (any non-zero byte is true); float
 * elements convert with ffb_f64_to_i64. */
static inline FFB_HD int64_t ffb_ld_i64(const char *p, ff_dtype t)
{
    switch (t) {
    case FF_F32: { float v; memcpy(&v, p, 4); return ffb_f64_to_i64(v); }
    case FF_F64: { double v; memcpy(&v, p, 8); return ffb_f64_to_i64(v); }
    case FF_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case FF_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case FF_U8: return *(const uint8_t *)p;
    case FF_BOOL: return *(const uint8_t *)p != 0;
    case FF_F16: case FF_BF16: return ffb_f64_to_i64(ffb_ld_f64(p, t));
    case FF_I8: return *(const int8_t *)p;
    case FF_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    default: return 0;
    }
}

/* Stores a double with the conversion rules at the top of this file. */
static inline FFB_HD void ffb_st_f64(char *p, ff_dtype t, double v)
{
    switch (t) {
    case FF_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case FF_F64: memcpy(p, &v, 8); break;
    case FF_I32: { int32_t i = ffb_f64_to_i32(v); memcpy(p, &i, 4); break; }
    case FF_I64: { int64_t i = ffb_f64_to_i64(v); memcpy(p, &i, 8); break; }
    case FF_U8: *(uint8_t *)p = (uint8_t)(uint64_t)ffb_f64_to_i64(v); break;
    case FF_BOOL: *(uint8_t *)p = v != 0.0; break;
    case FF_F16: { uint16_t h = ffb_f64_to_f16(v); memcpy(p, &h, 2); break; }
    case FF_BF16: { uint16_t h = ffb_f64_to_bf16(v); memcpy(p, &h, 2); break; }
    case FF_I8: *(int8_t *)p = ffb_wrap_i8(ffb_f64_to_i64(v)); break;
    case FF_I16: { int16_t i = ffb_wrap_i16(ffb_f64_to_i64(v)); memcpy(p, &i, 2); break; }
    default: break;
    }
}

/* Stores an int64: wraps into I32/U8/I8/I16, rounds to nearest (once) into floats, != 0 for BOOL. */
static inline FFB_HD void ffb_st_i64(char *p, ff_dtype t, int64_t v)
{
    switch (t) {
    case FF_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    case FF_F64: { double d = (double)v; memcpy(p, &d, 8); break; }
    case FF_I32: { int32_t i = ffb_wrap_i32(v); memcpy(p, &i, 4); break; }
    case FF_I64: memcpy(p, &v, 8); break;
    case FF_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; break;
    case FF_BOOL: *(uint8_t *)p = v != 0; break;
    case FF_F16: case FF_BF16: ffb_st_f64(p, t, ffb_i64_to_f64_odd(v)); break;
    case FF_I8: *(int8_t *)p = ffb_wrap_i8(v); break;
    case FF_I16: { int16_t i = ffb_wrap_i16(v); memcpy(p, &i, 2); break; }
    default: break;
    }
}

/* ---- unary ops ----------------------------------------------------------------------- */
/* Supported (op, src dtype): F32/F64 every op but BITWISE_NOT; I32/I64/U8 NEG ABS SIGN
 * SQUARE RELU FLOOR CEIL ROUND ISNAN ISINF LOGICAL_NOT BITWISE_NOT; BOOL the same minus
 * NEG (BITWISE_NOT on bool is the logical not, as PyTorch's ~ on a bool tensor; the core
 * sends LOGICAL_NOT for it, but a backend that accepts it must not compute ~1 = -2).
 * ISNAN, ISINF and LOGICAL_NOT write BOOL, every other op writes src's dtype.
 *
 * Every predicate below names the op codes it accepts: an op code appended to the ABI
 * after this file was written is declined (see "Growing the op enums" in backend_abi.h). */

static inline FFB_HD int ffb_unary_writes_bool(ff_unary_op op)
{
    return op == FF_UNARY_ISNAN || op == FF_UNARY_ISINF || op == FF_UNARY_LOGICAL_NOT;
}

/* The ops defined on integers and bool. */
static inline int ffb_unary_int_op(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_SQUARE: case FF_UNARY_RELU:
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND:
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: case FF_UNARY_LOGICAL_NOT: case FF_UNARY_BITWISE_NOT:
        return 1;
    default:
        return 0;
    }
}

/* The ops defined on floats: every op code of ABI 1's first release (NEG..ERF),
 * ATAN/ASIN/ACOS/ERFINV (third step) and LGAMMA/DIGAMMA/TRIGAMMA (fourth step). */
static inline int ffb_unary_float_op(ff_unary_op op)
{
    switch (op) {
    case FF_UNARY_NEG: case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_EXP: case FF_UNARY_LOG:
    case FF_UNARY_LOG1P: case FF_UNARY_EXPM1: case FF_UNARY_SQRT: case FF_UNARY_RSQRT: case FF_UNARY_SQUARE:
    case FF_UNARY_RECIPROCAL: case FF_UNARY_SIN: case FF_UNARY_COS: case FF_UNARY_TANH: case FF_UNARY_SIGMOID:
    case FF_UNARY_RELU: case FF_UNARY_GELU_TANH: case FF_UNARY_GELU_ERF: case FF_UNARY_SILU: case FF_UNARY_SOFTPLUS:
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: case FF_UNARY_ISNAN: case FF_UNARY_ISINF:
    case FF_UNARY_LOGICAL_NOT: case FF_UNARY_ERF: case FF_UNARY_ATAN: case FF_UNARY_ASIN: case FF_UNARY_ACOS:
    case FF_UNARY_ERFINV: case FF_UNARY_LGAMMA: case FF_UNARY_DIGAMMA: case FF_UNARY_TRIGAMMA:
        return 1;
    default:
        return 0;
    }
}

static inline int ffb_unary_supported(ff_unary_op op, ff_dtype t)
{
    if (!ffb_dtype_ok(t)) return 0;
    if (ffb_is_float(t)) return ffb_unary_float_op(op);
    if (t == FF_BOOL) return ffb_unary_int_op(op) && op != FF_UNARY_NEG;
    return ffb_unary_int_op(op);
}

/* The op a kernel computes for (op, src dtype): BITWISE_NOT on bool is LOGICAL_NOT
 * (ffb_unary_i64 sees bool as 0/1 and ~1 would store as true). */
static inline FFB_HD ff_unary_op ffb_unary_effective(ff_unary_op op, ff_dtype t)
{
    return op == FF_UNARY_BITWISE_NOT && t == FF_BOOL ? FF_UNARY_LOGICAL_NOT : op;
}

static inline FFB_HD double ffb_sigmoid(double x)
{
    /* never exp() of a large positive number: exact 0/1 limits, no overflow */
    if (x >= 0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* erf's inverse: Giles' single-precision approximation ("Approximating the erfinv
 * function", GPU Computing Gems, 2011) as the start, then Newton steps on erf, or past
 * 0.5 on log(erfc), where 1 - |x| is exact and erf has no digits left (x = 1 - 2^-53:
 * the start is far off there, and log(erfc) is close to linear in the tail). */
static inline FFB_HD double ffb_erfinv(double x)
{
    if (isnan(x) || x < -1.0 || x > 1.0) return NAN;
    if (x == 1.0 || x == -1.0) return x * INFINITY;
    if (x == 0.0) return x; /* keeps -0 */
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
    double a = fabs(x), y = p * a, c = 1.0 - a; /* c is exact for a >= 0.5 */
    for (int i = 0; i < 12; i++) { /* erf'(y) = -erfc'(y) = 2/sqrt(pi) exp(-y^2) */
        double d = 1.1283791670955126 * exp(-y * y), e = erfc(y);
        if (d == 0.0 || e == 0.0) break;
        double step = a > 0.5 ? (log(e) - log(c)) * e / d : (a - erf(y)) / d;
        y += step;
        if (fabs(step) <= 1e-17 * y) break;
    }
    return copysign(y, x);
}

/* log|Gamma(x)| through lgamma_r: lgamma itself writes the global signgam, a data race
 * when the backends' threads call it at once. lgamma_r is not ISO C (glibc, musl and the
 * BSDs export it): <math.h> hides its prototype under -std=c11 without _DEFAULT_SOURCE,
 * which a header cannot define for its includer (feature macros must precede the first
 * system header), so it is declared here, as glibc declares it where that is visible.
 * +inf at 0, the negative integers and +-inf. */
#if !defined(__cplusplus)
extern double lgamma_r(double x, int *sign); /* C++ (g++ defines _GNU_SOURCE) sees glibc's */
#endif

static inline FFB_HD double ffb_lgamma(double x)
{
#if defined(__CUDA_ARCH__)
    return lgamma(x); /* device code: CUDA's lgamma has no global signgam to race on */
#else
    int sign;
    return lgamma_r(x, &sign);
#endif
}

#define FFB_PI 3.141592653589793

/* digamma for x > 0 (and +inf, NaN): the recurrence psi(x) = psi(x + 1) - 1/x up to
 * x >= 10, then the asymptotic series log x - 1/(2x) - sum B_2k / (2k x^2k) to B_14
 * (Cephes' psi, as PyTorch: the first term left out is below 5e-17 at x = 10). */
static inline FFB_HD double ffb_digamma_pos(double x)
{
    double r = 0.0;
    while (x < 10.0) {
        r -= 1.0 / x;
        x += 1.0;
    }
    if (x == 10.0) return r + 2.25175258906672110764; /* psi(10), exactly as PyTorch */
    double z = x < 1e17 ? 1.0 / (x * x) : 0.0;
    double y = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return r + log(x) - 0.5 / x - y;
}

/* digamma = Gamma'/Gamma, PyTorch's values at the edges: -inf at +0, +inf at -0, NaN at
 * the negative integers and -inf. Below 0 the reflection psi(1 - x) - pi cot(pi x), the
 * cotangent (period pi) taken on r = x - round(x), exact and in [-1/2, 1/2]: pi x would
 * lose x's integer digits, and x's fraction next to -1 (x = -2.99998) would put pi r next
 * to -pi, where its rounding error is large against tan's small value (PyTorch's modf:
 * 1e-11 relative off there). */
static inline FFB_HD double ffb_digamma(double x)
{
    if (x == 0.0) return copysign(INFINITY, -x);
    if (x < 0.0) {
        if (x == trunc(x)) return NAN;
        return ffb_digamma_pos(1.0 - x) - FFB_PI / tan(FFB_PI * (x - round(x)));
    }
    return ffb_digamma_pos(x);
}

/* trigamma = digamma' = polygamma(1, x) for x > 0 (and +inf, NaN): the recurrence
 * psi1(x) = psi1(x + 1) + 1/x^2 up to x >= 12 (every term positive: no cancellation),
 * then 1/x + 1/(2x^2) + sum B_2k / x^(2k+1) to B_14 (the first term left out is below
 * 3e-17 relative at x = 12). */
static inline FFB_HD double ffb_trigamma_pos(double x)
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

/* trigamma: +inf at 0 and the negative integers (its poles: +inf from both sides; PyTorch
 * gives large finite values there), NaN at -inf, 0 at +inf. Below 0 the reflection
 * pi^2 / sin^2(pi x) - psi1(1 - x), both terms positive and the first the larger; the sine
 * on x - round(x), as digamma's cotangent. */
static inline FFB_HD double ffb_trigamma(double x)
{
    if (x == -INFINITY) return NAN;
    if (x <= 0.0 && x == trunc(x)) return INFINITY;
    if (x < 0.0) {
        double s = sin(FFB_PI * (x - round(x)));
        return FFB_PI * FFB_PI / (s * s) - ffb_trigamma_pos(1.0 - x);
    }
    return ffb_trigamma_pos(x);
}

/* A unary op on a float value, in double. */
static inline FFB_HD double ffb_unary_f64(ff_unary_op op, double x)
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
    case FF_UNARY_SIGMOID: return ffb_sigmoid(x);
    case FF_UNARY_RELU: return x < 0 ? 0.0 : x; /* keeps NaN and -0, as PyTorch */
    case FF_UNARY_GELU_TANH: {
        const double k = 0.7978845608028654; /* sqrt(2 / pi) */
        return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
    }
    case FF_UNARY_GELU_ERF: return 0.5 * x * (1.0 + erf(x * 0.7071067811865476)); /* x / sqrt(2) */
    case FF_UNARY_SILU: return x * ffb_sigmoid(x);
    case FF_UNARY_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x)); /* torch's threshold */
    case FF_UNARY_FLOOR: return floor(x);
    case FF_UNARY_CEIL: return ceil(x);
    case FF_UNARY_ROUND: return nearbyint(x); /* default rounding mode: half to even */
    case FF_UNARY_ISNAN: return isnan(x) ? 1.0 : 0.0;
    case FF_UNARY_ISINF: return isinf(x) ? 1.0 : 0.0;
    case FF_UNARY_LOGICAL_NOT: return x == 0.0 ? 1.0 : 0.0;
    case FF_UNARY_ERF: return erf(x);
    case FF_UNARY_ATAN: return atan(x);
    case FF_UNARY_ASIN: return asin(x);
    case FF_UNARY_ACOS: return acos(x);
    case FF_UNARY_ERFINV: return ffb_erfinv(x);
    case FF_UNARY_LGAMMA: return ffb_lgamma(x);
    case FF_UNARY_DIGAMMA: return ffb_digamma(x);
    case FF_UNARY_TRIGAMMA: return ffb_trigamma(x);
    default: return 0.0;
    }
}

/* A unary op on an integer or bool value widened to int64, wrapping through uint64
 * (ABS(INT_MIN) = INT_MIN); the store into dst wraps I32/U8 and maps bool to != 0.
 * FLOOR/CEIL/ROUND are the identity, ISNAN/ISINF false. */
static inline FFB_HD int64_t ffb_unary_i64(ff_unary_op op, int64_t x)
{
    switch (op) {
    case FF_UNARY_NEG: return ffb_u64_to_i64(0u - (uint64_t)x);
    case FF_UNARY_ABS: return x < 0 ? ffb_u64_to_i64(0u - (uint64_t)x) : x;
    case FF_UNARY_SIGN: return (x > 0) - (x < 0);
    case FF_UNARY_SQUARE: return ffb_u64_to_i64((uint64_t)x * (uint64_t)x);
    case FF_UNARY_RELU: return x > 0 ? x : 0;
    case FF_UNARY_FLOOR: case FF_UNARY_CEIL: case FF_UNARY_ROUND: return x;
    case FF_UNARY_ISNAN: case FF_UNARY_ISINF: return 0;
    case FF_UNARY_LOGICAL_NOT: return x == 0;
    case FF_UNARY_BITWISE_NOT: return ffb_u64_to_i64(~(uint64_t)x); /* integers (bool: ffb_unary_effective) */
    default: return 0;
    }
}

/* ---- binary ops ---------------------------------------------------------------------- */
/* a and b share one dtype. ADD..LOGICAL_XOR on F32/F64/I32/I64/U8, and on BOOL all but
 * SUB, DIV, POW, FMOD; BITWISE_AND/OR/XOR on I32/I64/U8/BOOL only (two's complement bits;
 * on bool's 0/1 the logical ops). Comparisons and logical ops (ff_binary_op_writes_bool)
 * write BOOL, everything else a's dtype. */

static inline FFB_HD int ffb_binary_writes_bool(ff_binary_op op) { return ff_binary_op_writes_bool(op); }

static inline int ffb_binary_is_bitwise(ff_binary_op op)
{
    return op == FF_BINARY_BITWISE_AND || op == FF_BINARY_BITWISE_OR || op == FF_BINARY_BITWISE_XOR;
}

/* The op codes of ABI 1's first release (ADD..LOGICAL_XOR), named one by one. */
static inline int ffb_binary_arith_or_compare(ff_binary_op op)
{
    switch (op) {
    case FF_BINARY_ADD: case FF_BINARY_SUB: case FF_BINARY_MUL: case FF_BINARY_DIV: case FF_BINARY_POW:
    case FF_BINARY_MAXIMUM: case FF_BINARY_MINIMUM: case FF_BINARY_FMOD: case FF_BINARY_EQ: case FF_BINARY_NE:
    case FF_BINARY_LT: case FF_BINARY_LE: case FF_BINARY_GT: case FF_BINARY_GE: case FF_BINARY_LOGICAL_AND:
    case FF_BINARY_LOGICAL_OR: case FF_BINARY_LOGICAL_XOR:
        return 1;
    default:
        return 0;
    }
}

static inline int ffb_binary_supported(ff_binary_op op, ff_dtype t)
{
    if (!ffb_dtype_ok(t)) return 0;
    if (ffb_binary_is_bitwise(op)) return !ffb_is_float(t); /* integers and bool only */
    if (op == FF_BINARY_ATAN2) return ffb_is_float(t);      /* third step: floats only */
    if (!ffb_binary_arith_or_compare(op)) return 0;
    if (t == FF_BOOL)
        return !(op == FF_BINARY_SUB || op == FF_BINARY_DIV || op == FF_BINARY_POW || op == FF_BINARY_FMOD);
    return 1;
}

/* A binary op on float values, in double. MAXIMUM/MINIMUM propagate NaN; comparisons
 * with NaN are false except NE; logical ops treat any non-zero (NaN included) as true. */
static inline FFB_HD double ffb_binary_f64(ff_binary_op op, double x, double y)
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
    default: return 0.0;
    }
}

/* base^e by repeated squaring, wrapping modulo 2^64 (and so modulo 2^32 / 2^8 once
 * the store narrows it, since multiplication commutes with the reduction). A negative
 * exponent gives 1 for base 1, +-1 for base -1, else 0. */
static inline FFB_HD int64_t ffb_ipow(int64_t base, int64_t e)
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
    return ffb_u64_to_i64(r);
}

/* A binary op on integer or bool values widened to int64. ADD/SUB/MUL/POW wrap; DIV
 * truncates toward zero, x / 0 = 0, INT_MIN / -1 = INT_MIN; FMOD has the sign of the
 * dividend, x % 0 = 0. Results wrap when the store narrows them to dst's dtype. */
static inline FFB_HD int64_t ffb_binary_i64(ff_binary_op op, int64_t x, int64_t y)
{
    switch (op) {
    case FF_BINARY_ADD: return ffb_u64_to_i64((uint64_t)x + (uint64_t)y);
    case FF_BINARY_SUB: return ffb_u64_to_i64((uint64_t)x - (uint64_t)y);
    case FF_BINARY_MUL: return ffb_u64_to_i64((uint64_t)x * (uint64_t)y);
    case FF_BINARY_DIV:
        if (y == 0) return 0;
        if (y == -1) return ffb_u64_to_i64(0u - (uint64_t)x); /* INT64_MIN / -1 wraps */
        return x / y;
    case FF_BINARY_POW: return ffb_ipow(x, y);
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
    /* two's complement bits; on bool (0/1) these are the logical ops */
    case FF_BINARY_BITWISE_AND: return ffb_u64_to_i64((uint64_t)x & (uint64_t)y);
    case FF_BINARY_BITWISE_OR: return ffb_u64_to_i64((uint64_t)x | (uint64_t)y);
    case FF_BINARY_BITWISE_XOR: return ffb_u64_to_i64((uint64_t)x ^ (uint64_t)y);
    default: return 0;
    }
}

/* ---- reduction accumulators ----------------------------------------------------------- */
/* SUM/PROD accumulate in double when src or dst is a float dtype, else in a wrapping
 * 64-bit integer. MAX/MIN: NaN propagates. ARGMAX/ARGMIN: the first index of the
 * extreme wins, NaN counts as the extreme. ANY/ALL: any non-zero (NaN included) is true.
 * Empty sets: SUM 0, PROD 1, ANY false, ALL true. */

typedef struct ffb_reduce_acc {
    double f;    /* float accumulator / float extreme */
    uint64_t u;  /* wrapping integer accumulator, or the ANY/ALL flag */
    int64_t i;   /* integer extreme */
    int64_t arg; /* ARG*: index of the extreme so far, -1 before the first element */
} ffb_reduce_acc;

/* Every reduce op on every computable dtype; op codes named one by one. */
static inline int ffb_reduce_supported(ff_reduce_op op, ff_dtype t)
{
    if (!ffb_dtype_ok(t)) return 0;
    switch (op) {
    case FF_REDUCE_SUM: case FF_REDUCE_PROD: case FF_REDUCE_MAX: case FF_REDUCE_MIN: case FF_REDUCE_ARGMAX:
    case FF_REDUCE_ARGMIN: case FF_REDUCE_ANY: case FF_REDUCE_ALL:
        return 1;
    default:
        return 0;
    }
}

static inline FFB_HD int ffb_reduce_is_arg(ff_reduce_op op) { return op == FF_REDUCE_ARGMAX || op == FF_REDUCE_ARGMIN; }

static inline FFB_HD void ffb_reduce_acc_init(ffb_reduce_acc *a, ff_reduce_op op)
{
    a->f = op == FF_REDUCE_PROD ? 1.0 : op == FF_REDUCE_MAX ? -INFINITY : op == FF_REDUCE_MIN ? INFINITY : 0.0;
    a->u = op == FF_REDUCE_PROD || op == FF_REDUCE_ALL;
    a->i = op == FF_REDUCE_MAX ? INT64_MIN : INT64_MAX;
    a->arg = -1;
}

/* Folds one float element x at index k (along the reduced axis) into a. */
static inline FFB_HD void ffb_reduce_acc_float(ffb_reduce_acc *a, ff_reduce_op op, double x, int64_t k)
{
    switch (op) {
    case FF_REDUCE_SUM: a->f += x; break;
    case FF_REDUCE_PROD: a->f *= x; break;
    case FF_REDUCE_MAX: if (!isnan(a->f) && (isnan(x) || x > a->f)) a->f = x; break;
    case FF_REDUCE_MIN: if (!isnan(a->f) && (isnan(x) || x < a->f)) a->f = x; break;
    case FF_REDUCE_ARGMAX:
    case FF_REDUCE_ARGMIN:
        if (a->arg < 0 || (!isnan(a->f) && (isnan(x) || (op == FF_REDUCE_ARGMAX ? x > a->f : x < a->f))))
            a->f = x, a->arg = k;
        break;
    case FF_REDUCE_ANY: a->u |= x != 0.0; break;
    case FF_REDUCE_ALL: a->u &= x != 0.0; break;
    default: break;
    }
}

/* Folds one integer (or bool) element x at index k into a. */
static inline FFB_HD void ffb_reduce_acc_int(ffb_reduce_acc *a, ff_reduce_op op, int64_t x, int64_t k)
{
    switch (op) {
    case FF_REDUCE_SUM: a->u += (uint64_t)x; break;
    case FF_REDUCE_PROD: a->u *= (uint64_t)x; break;
    case FF_REDUCE_MAX: if (x > a->i) a->i = x; break;
    case FF_REDUCE_MIN: if (x < a->i) a->i = x; break;
    case FF_REDUCE_ARGMAX:
    case FF_REDUCE_ARGMIN:
        if (a->arg < 0 || (op == FF_REDUCE_ARGMAX ? x > a->i : x < a->i)) a->i = x, a->arg = k;
        break;
    case FF_REDUCE_ANY: a->u |= x != 0; break;
    case FF_REDUCE_ALL: a->u &= x != 0; break;
    default: break;
    }
}

/* Writes the result held in a to the element at p (dtype t). float_acc: a->f holds it. */
static inline FFB_HD void ffb_reduce_acc_store(const ffb_reduce_acc *a, ff_reduce_op op, int float_acc, char *p, ff_dtype t)
{
    if (ffb_reduce_is_arg(op)) ffb_st_i64(p, t, a->arg);
    else if (op == FF_REDUCE_ANY || op == FF_REDUCE_ALL) ffb_st_i64(p, t, (int64_t)a->u);
    else if (float_acc) ffb_st_f64(p, t, a->f);
    else if (op == FF_REDUCE_SUM || op == FF_REDUCE_PROD) ffb_st_i64(p, t, ffb_u64_to_i64(a->u));
    else ffb_st_i64(p, t, a->i);
}

#endif /* FF_BACKEND_SCALAR_H */
