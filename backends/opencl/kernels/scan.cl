/*
 * cumsum / cumprod along one axis: one work-item per line, in order, floats accumulated
 * in double and each prefix rounded once, integers wrapped in 64 bits (the reference's
 * rules). `lines` is the view's shape with the axis set to 1; dst may be src itself.
 */
__kernel void ff_scan(int op, kview d, __global uchar *db, kview s, __global const uchar *sb, kview lines, int axis,
                      long nlines)
{
    long len = s.shape[axis], ss = s.strides[axis], sd = d.strides[axis];
    for (long n = get_global_id(0); n < nlines; n += get_global_size(0)) {
        long os, od;
        line_start(&lines, &s, &d, n, &os, &od);
        if (is_float(s.dtype)) {
            double acc = op ? 1.0 : 0.0;
            for (long j = 0; j < len; j++) {
                double x = ld_f(sb, s.dtype, os + j * ss);
                acc = op ? acc * x : acc + x;
                st_f(db, d.dtype, od + j * sd, acc);
            }
        } else {
            ulong acc = op ? 1 : 0;
            for (long j = 0; j < len; j++) {
                ulong x = (ulong)ld_i(sb, s.dtype, os + j * ss);
                acc = op ? acc * x : acc + x;
                st_i(db, d.dtype, od + j * sd, (long)acc);
            }
        }
    }
}
