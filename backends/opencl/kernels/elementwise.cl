/*
 * fill, copy, unary, binary and where. One work-item per element in a grid-stride loop
 * (n < numel); the host has merged dims that are contiguous in every operand, so the
 * usual case reaches view_at with ndim 1 and costs one multiply-add per operand.
 * The per-element formulas (unary_f, binary_f, ...) are in formulas.cl.
 */

__kernel void ff_fill(kview d, __global uchar *db, double f, long i, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long od = view_at(&d, n);
        if (is_float(d.dtype)) st_f(db, d.dtype, od, f);
        else st_i(db, d.dtype, od, i);
    }
}

__kernel void ff_copy(kview d, __global uchar *db, kview s, __global const uchar *sb, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long od = view_at(&d, n), os = view_at(&s, n);
        if (d.dtype == s.dtype) mv(db, od, sb, os, d.dtype);
        else if (is_float(s.dtype)) st_f(db, d.dtype, od, ld_f(sb, s.dtype, os));
        else st_i(db, d.dtype, od, ld_i(sb, s.dtype, os));
    }
}

__kernel void ff_unary(int op, kview d, __global uchar *db, kview s, __global const uchar *sb, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long od = view_at(&d, n), os = view_at(&s, n);
        if (is_float(s.dtype)) st_f(db, d.dtype, od, unary_f(op, ld_f(sb, s.dtype, os)));
        else st_i(db, d.dtype, od, unary_i(op, ld_i(sb, s.dtype, os)));
    }
}

/* f32 contiguous fast path of the hottest unary ops (the host sends it only when dst and
 * src are dense f32 with one merged dim): same double formulas, no dtype switches. */
__kernel void ff_unary_f32(int op, __global float *d, long od, __global const float *s, long os, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0))
        d[od + n] = (float)unary_f(op, s[os + n]);
}

__kernel void ff_binary(int op, kview d, __global uchar *db, kview a, __global const uchar *ab, kview b,
                        __global const uchar *bb, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long od = view_at(&d, n), oa = view_at(&a, n), ob = view_at(&b, n);
        if (is_float(a.dtype))
            st_f(db, d.dtype, od, binary_f(op, ld_f(ab, a.dtype, oa), ld_f(bb, b.dtype, ob)));
        else
            st_i(db, d.dtype, od, binary_i(op, ld_i(ab, a.dtype, oa), ld_i(bb, b.dtype, ob)));
    }
}

/* f32 fast path for arithmetic binaries on dense dst with one merged dim; a and b may be
 * dense (stride 1) or a broadcast scalar (stride 0). */
__kernel void ff_binary_f32(int op, __global float *d, long od, __global const float *a, long oa, long sa,
                            __global const float *b, long ob, long sb, long numel)
{
    long n = get_global_id(0);
    if (n >= numel) return; /* one element per work-item (ocl_grid) */
    float x = a[oa + n * sa], y = b[ob + n * sb];
    /* OpenCL's float + - * are correctly rounded, so they equal the double computation
     * rounded once (53 >= 2 * 24 + 2 bits): no detour through double for them. Float
     * division may be off by 2.5 ulp on a device, so it stays in double. */
    switch (op) {
    case B_ADD: d[od + n] = x + y; break;
    case B_SUB: d[od + n] = x - y; break;
    case B_MUL: d[od + n] = x * y; break;
    default: d[od + n] = (float)binary_f(op, x, y); break;
    }
}

__kernel void ff_where(kview d, __global uchar *db, kview c, __global const uchar *cb, kview a,
                       __global const uchar *ab, kview b, __global const uchar *bb, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long od = view_at(&d, n), oc = view_at(&c, n);
        if (cb[oc]) mv(db, od, ab, view_at(&a, n), d.dtype);
        else mv(db, od, bb, view_at(&b, n), d.dtype);
    }
}
