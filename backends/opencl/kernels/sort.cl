/*
 * Stable argsort along one axis: one work-item per line, a bottom-up merge sort of the
 * line's indices in tmp (2 * len longs per line), comparing src values (NaN above every
 * number, -0 == +0, integers exactly). `lines` is the view's shape with the axis set to 1.
 */
inline int sort_before(__global const uchar *sb, int t, long os, long ss, long a, long b, int desc)
{
    if (is_float(t)) {
        double x = ld_f(sb, t, os + a * ss), y = ld_f(sb, t, os + b * ss);
        int xn = isnan(x), yn = isnan(y);
        if (xn || yn) return desc ? (xn && !yn) : (!xn && yn);
        return desc ? x > y : x < y;
    }
    long x = ld_i(sb, t, os + a * ss), y = ld_i(sb, t, os + b * ss);
    return desc ? x > y : x < y;
}

__kernel void ff_argsort(kview d, __global uchar *db, kview s, __global const uchar *sb, __global long *tmp,
                         kview lines, int axis, int desc, long nlines)
{
    long len = s.shape[axis], ss = s.strides[axis], sd = d.strides[axis];
    for (long n = get_global_id(0); n < nlines; n += get_global_size(0)) {
        long os, od;
        line_start(&lines, &s, &d, n, &os, &od);
        __global long *from = tmp + n * 2 * len, *to = from + len;
        for (long j = 0; j < len; j++) from[j] = j;
        for (long w = 1; w < len; w *= 2) {
            for (long lo = 0; lo < len; lo += 2 * w) {
                long mid = min(lo + w, len), hi = min(lo + 2 * w, len), i = lo, j = mid, o = lo;
                while (i < mid && j < hi)
                    to[o++] = sort_before(sb, s.dtype, os, ss, from[j], from[i], desc) ? from[j++] : from[i++];
                while (i < mid) to[o++] = from[i++];
                while (j < hi) to[o++] = from[j++];
            }
            __global long *t = from;
            from = to;
            to = t;
        }
        for (long j = 0; j < len; j++) ((__global long *)db)[od + j * sd] = from[j];
    }
}
