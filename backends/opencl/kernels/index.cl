/*
 * gather, scatter_add (torch.gather / Tensor.scatter_add_ along one axis) and the
 * index check. The "other" view (src for gather, dst for scatter) arrives with its
 * stride along axis set to 0 by the host, so view_at over the index's shape gives the
 * element's base and the index value times `step` (the real stride) picks it out.
 * A bad index sets bad[0] = 1 and bad[1] = the value (a benign race: any bad value
 * will do); the host reads both back and names the value in its message.
 */

__kernel void ff_index_check(kview ix, __global const uchar *ib, long size, long numel, __global long *bad)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long v = ld_i(ib, ix.dtype, view_at(&ix, n));
        if (v < 0 || v >= size) bad[0] = 1, bad[1] = v;
    }
}

__kernel void ff_gather(kview d, __global uchar *db, kview s0, __global const uchar *sb, long step, kview ix,
                        __global const uchar *ib, long size, long numel, __global long *bad)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        long v = ld_i(ib, ix.dtype, view_at(&ix, n));
        if (v < 0 || v >= size) {
            bad[0] = 1, bad[1] = v;
            continue;
        }
        mv(db, view_at(&d, n), sb, view_at(&s0, n) + v * step, d.dtype);
    }
}

/* One work-item per line of the index along axis (the index's shape with axis set to 1
 * in `lines`): the line's elements add into dst in order, and two lines never share a
 * dst element (they differ in a coordinate off the axis), so duplicates add up in the
 * reference's order without atomics. */
__kernel void ff_scatter_add(kview d0, __global uchar *db, long step, kview ix, __global const uchar *ib,
                             kview s, __global const uchar *sb, kview lines, int axis, long nlines)
{
    long len = ix.shape[axis], six = ix.strides[axis], ss = s.strides[axis];
    int t = d0.dtype;
    for (long n = get_global_id(0); n < nlines; n += get_global_size(0)) {
        /* the line's start: unravel n over `lines`, apply each view's strides */
        long rest = n, oi = ix.offset, os = s.offset, od = d0.offset;
        for (int dd = lines.ndim - 1; dd >= 0; dd--) {
            long c = rest % lines.shape[dd];
            rest /= lines.shape[dd];
            oi += c * ix.strides[dd];
            os += c * s.strides[dd];
            od += c * d0.strides[dd];
        }
        for (long j = 0; j < len; j++) {
            long v = ld_i(ib, ix.dtype, oi + j * six);
            long at = od + v * step, from = os + j * ss;
            if (is_float(t)) st_f(db, t, at, ld_f(db, t, at) + ld_f(sb, t, from));
            else st_i(db, t, at, (long)((ulong)ld_i(db, t, at) + (ulong)ld_i(sb, t, from)));
        }
    }
}
