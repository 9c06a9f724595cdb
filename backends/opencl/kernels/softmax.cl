/*
 * softmax / log_softmax along one axis: one work-item per row, three passes in double
 * (max, sum of exp(x - max), then the store), each element read before it is written,
 * so dst may be src itself. `rows` is the view's shape with the axis set to 1.
 */
__kernel void ff_softmax(kview d, __global uchar *db, kview s, __global const uchar *sb, kview rows, int axis,
                         int want_log, long nrows)
{
    long len = s.shape[axis], ss = s.strides[axis], sd = d.strides[axis];
    for (long n = get_global_id(0); n < nrows; n += get_global_size(0)) {
        long os, od;
        line_start(&rows, &s, &d, n, &os, &od);
        double m = -INFINITY, sum = 0.0;
        for (long j = 0; j < len; j++) {
            double x = ld_f(sb, s.dtype, os + j * ss);
            if (isnan(x) || x > m) m = isnan(m) ? m : x;
        }
        for (long j = 0; j < len; j++) sum += exp(ld_f(sb, s.dtype, os + j * ss) - m);
        double ls = log(sum);
        for (long j = 0; j < len; j++) {
            double z = ld_f(sb, s.dtype, os + j * ss) - m;
            st_f(db, d.dtype, od + j * sd, want_log ? z - ls : exp(z) / sum);
        }
    }
}
