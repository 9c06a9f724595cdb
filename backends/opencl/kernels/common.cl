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

/* The host's ocl_kview, field for field (ocl_impl.h); offsets and strides in elements. */
typedef struct kview {
    long offset;
    long shape[FF_MAX_DIMS];
    long strides[FF_MAX_DIMS];
    int ndim;
    int dtype;
} kview;

inline int is_float(int t) { return t == T_F32 || t == T_F64; }

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

inline double ld_f(__global const uchar *p, int t, long off)
{
    switch (t) {
    case T_F32: return ((__global const float *)p)[off];
    case T_F64: return ((__global const double *)p)[off];
    case T_I32: return ((__global const int *)p)[off];
    case T_I64: return (double)((__global const long *)p)[off];
    case T_U8: return p[off];
    case T_BOOL: return p[off] != 0;
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
    default: break;
    }
}

/* Moves one element between two views of the same dtype, bits unchanged. */
inline void mv(__global uchar *d, long od, __global const uchar *s, long os, int t)
{
    switch (t) {
    case T_F32: case T_I32: ((__global uint *)d)[od] = ((__global const uint *)s)[os]; break;
    case T_F64: case T_I64: ((__global ulong *)d)[od] = ((__global const ulong *)s)[os]; break;
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
