/*
 * Shared by every kernel: the view struct, element loads and stores with the ABI's
 * conversion rules, and the per-element formulas. This is the OpenCL C twin of
 * backends/common/ff_backend_scalar.h: floats are computed in double and rounded once
 * at the store, integers widened to long and wrapped through ulong (OpenCL C defines
 * signed overflow as two's complement for the ulong ops used here), so results agree
 * with the reference backend bit for bit wherever the C library and OpenCL's built-ins
 * agree (exact ops, conversions, comparisons) and within the conformance tolerances
 * elsewhere. Needs cl_khr_fp64 (the host refuses devices without it).
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
/* a * b + c must round twice, as in the reference: no fused multiply-add contraction
 * (the uniform sample p0 + (p1 - p0) * u is specified bit for bit) */
#pragma OPENCL FP_CONTRACT OFF

#define FF_MAX_DIMS 8
/* ff_dtype */
#define T_F32 0
#define T_F64 1
#define T_I32 2
#define T_I64 3
#define T_U8 4
#define T_BOOL 5
#define T_F16 6 /* storage dtypes: copy and fill only (the host declines the rest) */
#define T_BF16 7
#define T_I8 8   /* storage dtypes too (appended): the host computes on them in I32 */
#define T_I16 9

/* The host's ocl_kview, field for field (ocl_impl.h); offsets and strides in elements. */
typedef struct kview {
    long offset;
    long shape[FF_MAX_DIMS];
    long strides[FF_MAX_DIMS];
    int ndim;
    int dtype;
} kview;

inline int is_float(int t) { return t == T_F32 || t == T_F64 || t == T_F16 || t == T_BF16; }

/* Element offset of row-major logical index n of view v. The outermost dim needs no
 * modulo (n is in range), so a merged 1-d view costs one multiply-add, no division. */
inline long view_at(const kview *v, long n)
{
    long off = v->offset;
    for (int d = v->ndim - 1; d > 0; d--) {
        long s = v->shape[d];
        off += (n % s) * v->strides[d];
        n /= s;
    }
    return v->ndim > 0 ? off + n * v->strides[0] : off;
}

inline long f64_to_i64(double x)
{
    if (isnan(x)) return 0;
    if (x >= 9223372036854775808.0) return LONG_MAX;
    if (x <= -9223372036854775808.0) return LONG_MIN;
    return (long)x;
}

inline int f64_to_i32(double x)
{
    if (isnan(x)) return 0;
    if (x >= 2147483647.0) return INT_MAX;
    if (x <= -2147483648.0) return INT_MIN;
    return (int)x;
}

/* ---- half precision: ff_backend_scalar.h's conversions, on the bits (no cl_khr_fp16,
 * and independent of the device's rounding and denormal modes) ---- */
/* A double to a format with `frac` fraction bits and smallest normal exponent emin
 * (f16: 10, -14; bf16: 7, -126): to nearest even, once; subnormals; overflow to inf;
 * NaN quiet with its sign. */
inline ushort f64_to_small(double x, int frac, int emin)
{
    ulong b = as_ulong(x);
    ushort sign = (ushort)((b >> 48) & 0x8000u);
    ulong ab = b & 0x7FFFFFFFFFFFFFFFUL;
    int emax = -emin + 1;
    ulong inf = (ulong)(emax - emin + 2) << frac; /* all-ones exponent field */
    if (ab > 0x7FF0000000000000UL) return (ushort)(sign | inf | (1u << (frac - 1)));
    int e = (int)(ab >> 52) - 1023;
    if (e > emax) return (ushort)(sign | inf);
    if (e < emin - frac - 1) return sign; /* below half the smallest subnormal */
    ulong m = (ab & 0xFFFFFFFFFFFFFUL) | (1UL << 52);
    int shift = 52 - frac + (e < emin ? emin - e : 0);
    ulong r = m >> shift, rem = m & ((1UL << shift) - 1), tie = 1UL << (shift - 1);
    if (rem > tie || (rem == tie && (r & 1UL))) r++;
    ulong bits = e < emin ? r : ((ulong)(e - emin + 1) << frac) + (r - (1UL << frac));
    if (bits >= inf) bits = inf;
    return (ushort)(sign | bits);
}

/* Exact: every f16 and bf16 value is a double (built on the bits, so bf16 subnormals
 * survive a device that flushes float denormals). */
inline double small_to_f64(ushort h, int frac, int emin)
{
    ulong sign = (ulong)(h >> 15) << 63;
    uint emask = (1u << (15 - frac)) - 1u, ex = (h >> frac) & emask, fr = h & ((1u << frac) - 1u);
    if (ex == 0) {
        double v = ldexp((double)fr, emin - frac);
        return sign ? -v : v;
    }
    ulong dex = ex == emask ? 0x7FFUL : (ulong)((int)ex - 1 + emin + 1023);
    return as_double(sign | (dex << 52) | ((ulong)fr << (52 - frac)));
}

/* int64 -> double with the bits past 53 folded into a sticky last bit (round to odd),
 * so the conversion to 11 or 8 bits then rounds as from the integer itself. */
inline double i64_to_f64_odd(long v)
{
    ulong u = v < 0 ? 0UL - (ulong)v : (ulong)v, sticky = 0;
    int sh = 0;
    while (u >> 53) {
        sticky |= u & 1UL;
        u >>= 1;
        sh++;
    }
    double d = ldexp((double)(u | sticky), sh);
    return v < 0 ? -d : d;
}

inline double ld_f(__global const uchar *p, int t, long off)
{
    switch (t) {
    case T_F32: return ((__global const float *)p)[off];
    case T_F64: return ((__global const double *)p)[off];
    case T_I32: return ((__global const int *)p)[off];
    case T_I64: return (double)((__global const long *)p)[off];
    case T_U8: return p[off];
    case T_BOOL: return p[off] != 0;
    case T_F16: return small_to_f64(((__global const ushort *)p)[off], 10, -14);
    case T_BF16: return small_to_f64(((__global const ushort *)p)[off], 7, -126);
    case T_I8: return ((__global const char *)p)[off];
    case T_I16: return ((__global const short *)p)[off];
    default: return 0.0;
    }
}

inline long ld_i(__global const uchar *p, int t, long off)
{
    switch (t) {
    case T_F32: return f64_to_i64(((__global const float *)p)[off]);
    case T_F64: return f64_to_i64(((__global const double *)p)[off]);
    case T_I32: return ((__global const int *)p)[off];
    case T_I64: return ((__global const long *)p)[off];
    case T_U8: return p[off];
    case T_BOOL: return p[off] != 0;
    case T_F16: return f64_to_i64(small_to_f64(((__global const ushort *)p)[off], 10, -14));
    case T_BF16: return f64_to_i64(small_to_f64(((__global const ushort *)p)[off], 7, -126));
    case T_I8: return ((__global const char *)p)[off];
    case T_I16: return ((__global const short *)p)[off];
    default: return 0;
    }
}

inline void st_f(__global uchar *p, int t, long off, double v)
{
    switch (t) {
    case T_F32: ((__global float *)p)[off] = (float)v; break;
    case T_F64: ((__global double *)p)[off] = v; break;
    case T_I32: ((__global int *)p)[off] = f64_to_i32(v); break;
    case T_I64: ((__global long *)p)[off] = f64_to_i64(v); break;
    case T_U8: p[off] = (uchar)(ulong)f64_to_i64(v); break;
    case T_BOOL: p[off] = v != 0.0; break;
    case T_F16: ((__global ushort *)p)[off] = f64_to_small(v, 10, -14); break;
    case T_BF16: ((__global ushort *)p)[off] = f64_to_small(v, 7, -126); break;
    case T_I8: ((__global char *)p)[off] = (char)(uchar)(ulong)f64_to_i64(v); break;
    case T_I16: ((__global short *)p)[off] = (short)(ushort)(ulong)f64_to_i64(v); break;
    default: break;
    }
}

inline void st_i(__global uchar *p, int t, long off, long v)
{
    switch (t) {
    case T_F32: ((__global float *)p)[off] = (float)v; break;
    case T_F64: ((__global double *)p)[off] = (double)v; break;
    case T_I32: ((__global int *)p)[off] = (int)(uint)(ulong)v; break;
    case T_I64: ((__global long *)p)[off] = v; break;
    case T_U8: p[off] = (uchar)(ulong)v; break;
    case T_BOOL: p[off] = v != 0; break;
    case T_F16: ((__global ushort *)p)[off] = f64_to_small(i64_to_f64_odd(v), 10, -14); break;
    case T_BF16: ((__global ushort *)p)[off] = f64_to_small(i64_to_f64_odd(v), 7, -126); break;
    case T_I8: ((__global char *)p)[off] = (char)(uchar)(ulong)v; break;
    case T_I16: ((__global short *)p)[off] = (short)(ushort)(ulong)v; break;
    default: break;
    }
}

/* Moves one element between two views of the same dtype, bits unchanged. */
inline void mv(__global uchar *d, long od, __global const uchar *s, long os, int t)
{
    switch (t) {
    case T_F32: case T_I32: ((__global uint *)d)[od] = ((__global const uint *)s)[os]; break;
    case T_F64: case T_I64: ((__global ulong *)d)[od] = ((__global const ulong *)s)[os]; break;
    case T_F16: case T_BF16: case T_I16: ((__global ushort *)d)[od] = ((__global const ushort *)s)[os]; break;
    default: d[od] = s[os]; break;
    }
}

/* Where line n (row-major over `lines`, a shape with the line's axis set to 1) starts in
 * views a and b (same shape): the per-line kernels (softmax, scan, argsort). */
inline void line_start(const kview *lines, const kview *a, const kview *b, long n, long *oa, long *ob)
{
    long rest = n;
    *oa = a->offset, *ob = b->offset;
    for (int k = lines->ndim - 1; k >= 0; k--) {
        long c = rest % lines->shape[k];
        rest /= lines->shape[k];
        *oa += c * a->strides[k];
        *ob += c * b->strides[k];
    }
}
