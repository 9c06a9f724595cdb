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

/* The row forms (ocl_index.c takes them when an I64 index is constant along the innermost
 * run, which dst and the other view hold contiguous, and at most two dims lie before it:
 * index_select, embedding and their backward). A 3-D range (ocl_launch_rows): dim 0 the
 * element e of a row, dims 1 and 2 the row's position (r2, r1) in the two leading dims,
 * whose offsets and strides come as scalars. Each work-item moves one element with one
 * index load and no division or dtype switch, and the range is exactly the rows (the
 * groups divide it), so no item is out of range and nothing but a bad index branches.
 * On PoCL, embedding [50000, 256] x 65536 took 52 ms through the generic kernels above
 * (three view_at walks and two switches per element), 30 with a row kernel over kviews,
 * 19 with scalar strides and a range guard (the guard's early return kept PoCL from
 * vectorizing across items), 3.3 ms as it is. */
#define FF_GATHER_ROWS(NAME, T)                                                                                 \
    __kernel void NAME(__global T *restrict db, long d0, long d1, long d2, __global const T *restrict sb, long s0,   \
                       long s1, long s2, long step, __global const long *restrict ib, long i0, long i1, long i2,  \
                       long size, __global long *bad)                                                             \
    {                                                                                                            \
        long e = get_global_id(0), r2 = get_global_id(1), r1 = get_global_id(2);                                 \
        long v = ib[i0 + r1 * i1 + r2 * i2];                                                                     \
        __global const T *row = sb + (s0 + r1 * s1 + r2 * s2 + v * step);                                        \
        if (v < 0 || v >= size) {                                                                                \
            bad[0] = 1, bad[1] = v;                                                                              \
            return;                                                                                              \
        }                                                                                                        \
        db[d0 + r1 * d1 + r2 * d2 + e] = row[e];                                                                 \
    }
FF_GATHER_ROWS(ff_gather_rows_u8, uchar)
FF_GATHER_ROWS(ff_gather_rows_u16, ushort)
FF_GATHER_ROWS(ff_gather_rows_u32, uint)
FF_GATHER_ROWS(ff_gather_rows_u64, ulong)

/* scatter_add's row form in f32 / f64, the same 3-D range over the dims before the axis:
 * a work-item adds the nidx source rows' element e into dst in index order (the
 * reference's order: duplicates accumulate as its loop does). The add is in double,
 * rounded once, as the reference's (and safe where a device flushes f32 subnormals).
 * Items never share a dst element, so no atomics. */
#define FF_SCATTER_ADD_ROWS(NAME, T)                                                                             \
    __kernel void NAME(__global T *db, long d0, long d1, long d2, long step, __global const long *ib, long i0,     \
                       long i1, long i2, long iax, __global const T *sb, long s0, long s1, long s2, long sax,     \
                       long nidx)                                                                                 \
    {                                                                                                            \
        long e = get_global_id(0), r2 = get_global_id(1), r1 = get_global_id(2);                                 \
        long oi = i0 + r1 * i1 + r2 * i2, os = s0 + r1 * s1 + r2 * s2 + e, od = d0 + r1 * d1 + r2 * d2 + e;      \
        for (long j = 0; j < nidx; j++) {                                                                        \
            long at = od + ib[oi + j * iax] * step;                                                              \
            db[at] = (T)((double)db[at] + (double)sb[os + j * sax]);                                             \
        }                                                                                                        \
    }
FF_SCATTER_ADD_ROWS(ff_scatter_add_rows_f32, float)
FF_SCATTER_ADD_ROWS(ff_scatter_add_rows_f64, double)

/* The same on a CPU device (PoCL), shaped for a few wide cores: a work-item per part p
 * of the destination's slots (dim 0; parts a power of two, about one per core) and per
 * row position (dims 1 and 2), walking the index in order and adding each source row
 * whose slot is p modulo parts into its destination row, a loop along the row that the
 * compiler vectorizes. Every source row is read once, contiguously: the per-element form
 * above reads each row's elements from different items, and on PoCL, where an item's
 * loop runs to its end before the next item starts, that is every row from memory once
 * per element (embedding [1000, 256]'s backward of 65536 rows: ~100 ms). Parts never
 * share a slot; the add in double, rounded once, as above. */
#define FF_SCATTER_ADD_ROWS_CPU(NAME, T)                                                                         \
    __kernel void NAME(__global T *restrict db, long d0, long d1, long d2, long step,                            \
                       __global const long *restrict ib, long i0, long i1, long i2, long iax,                    \
                       __global const T *restrict sb, long s0, long s1, long s2, long sax, long nidx, long len,   \
                       long parts)                                                                                \
    {                                                                                                            \
        long p = get_global_id(0), r2 = get_global_id(1), r1 = get_global_id(2);                                 \
        long oi = i0 + r1 * i1 + r2 * i2, os = s0 + r1 * s1 + r2 * s2, od = d0 + r1 * d1 + r2 * d2;              \
        for (long j = 0; j < nidx; j++) {                                                                        \
            long v = ib[oi + j * iax];                                                                           \
            if ((v & (parts - 1)) != p) continue;                                                                \
            __global T *to = db + od + v * step;                                                                 \
            __global const T *from = sb + os + j * sax;                                                          \
            for (long e = 0; e < len; e++) to[e] = (T)((double)to[e] + (double)from[e]);                          \
        }                                                                                                        \
    }
FF_SCATTER_ADD_ROWS_CPU(ff_scatter_add_rows_cpu_f32, float)
FF_SCATTER_ADD_ROWS_CPU(ff_scatter_add_rows_cpu_f64, double)
