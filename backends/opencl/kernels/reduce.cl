/*
 * Reductions: one work-group per output element (grid-stride over outputs). Each lane
 * folds the reduced elements k = lid, lid + L, ... in increasing order into its own
 * accumulator (ffb_reduce_acc's rules), then the lanes combine in a tree in local
 * memory; combine keeps "the first index of the extreme" by comparing indices, so the
 * tree gives the reference's sequential answer. L = get_local_size(0), a power of two
 * <= RED_WG; L = 1 is the one-lane-per-output form the host picks for short rows.
 * float_acc: SUM/PROD accumulate in double (src or dst is a float dtype).
 */
#define RED_WG 256

typedef struct racc {
    double f;
    ulong u;
    long i;
    long arg;
} racc;

inline racc racc_init(int op)
{
    racc a;
    a.f = op == R_PROD ? 1.0 : op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : 0.0;
    a.u = op == R_PROD || op == R_ALL;
    a.i = op == R_MAX ? LONG_MIN : LONG_MAX;
    a.arg = -1;
    return a;
}

inline void racc_float(racc *a, int op, double x, long k)
{
    switch (op) {
    case R_SUM: a->f += x; break;
    case R_PROD: a->f *= x; break;
    /* MAX/MIN keep the index of the extreme too: of equal extremes (-0 and +0) the
     * reference keeps the first, and the tree needs the index to do the same */
    case R_MAX: if (!isnan(a->f) && (isnan(x) || x > a->f)) a->f = x, a->arg = k; break;
    case R_MIN: if (!isnan(a->f) && (isnan(x) || x < a->f)) a->f = x, a->arg = k; break;
    case R_ARGMAX:
    case R_ARGMIN:
        if (a->arg < 0 || (!isnan(a->f) && (isnan(x) || (op == R_ARGMAX ? x > a->f : x < a->f)))) {
            a->f = x;
            a->arg = k;
        }
        break;
    case R_ANY: a->u |= x != 0.0; break;
    case R_ALL: a->u &= x != 0.0; break;
    default: break;
    }
}

inline void racc_int(racc *a, int op, long x, long k)
{
    switch (op) {
    case R_SUM: a->u += (ulong)x; break;
    case R_PROD: a->u *= (ulong)x; break;
    case R_MAX: if (x > a->i) a->i = x; break;
    case R_MIN: if (x < a->i) a->i = x; break;
    case R_ARGMAX:
    case R_ARGMIN:
        if (a->arg < 0 || (op == R_ARGMAX ? x > a->i : x < a->i)) {
            a->i = x;
            a->arg = k;
        }
        break;
    case R_ANY: a->u |= x != 0; break;
    case R_ALL: a->u &= x != 0; break;
    default: break;
    }
}

/* Folds b into a (a and b cover disjoint sets of indices). */
inline racc racc_combine(racc a, racc b, int op, int float_acc)
{
    switch (op) {
    case R_SUM: a.f += b.f; a.u += b.u; break;
    case R_PROD: a.f *= b.f; a.u *= b.u; break;
    case R_MAX:
    case R_MIN:
        if (float_acc) {
            int first = b.arg >= 0 && (a.arg < 0 || b.arg < a.arg);
            if (!isnan(a.f) && (isnan(b.f) || (op == R_MAX ? b.f > a.f : b.f < a.f) || (b.f == a.f && first)))
                a.f = b.f, a.arg = b.arg;
        } else if (op == R_MAX ? b.i > a.i : b.i < a.i) {
            a.i = b.i;
        }
        break;
    case R_ARGMAX:
    case R_ARGMIN: {
        if (b.arg < 0) break;
        if (a.arg < 0) return b;
        int take_b;
        if (float_acc) {
            int an = isnan(a.f), bn = isnan(b.f);
            if (an || bn) take_b = an && bn ? b.arg < a.arg : bn;
            else if (a.f == b.f) take_b = b.arg < a.arg;
            else take_b = op == R_ARGMAX ? b.f > a.f : b.f < a.f;
        } else {
            if (a.i == b.i) take_b = b.arg < a.arg;
            else take_b = op == R_ARGMAX ? b.i > a.i : b.i < a.i;
        }
        if (take_b) return b;
        break;
    }
    case R_ANY: a.u |= b.u; break;
    case R_ALL: a.u &= b.u; break;
    default: break;
    }
    return a;
}

inline void racc_store(racc a, int op, int float_acc, __global uchar *p, int t, long off)
{
    if (op == R_ARGMAX || op == R_ARGMIN) st_i(p, t, off, a.arg);
    else if (op == R_ANY || op == R_ALL) st_i(p, t, off, (long)a.u);
    else if (float_acc) st_f(p, t, off, a.f);
    else if (op == R_SUM || op == R_PROD) st_i(p, t, off, (long)a.u);
    else st_i(p, t, off, a.i);
}

/* d: the output (keepdim shape); s: the source with its reduced axes' sizes set to 1
 * (so view_at over d's index gives the row's base); r: the reduced axes only (offset 0,
 * their sizes and src strides), rn elements per row.
 * Long rows with few outputs are split: work-group g takes output g / nchunks and the
 * chunk g % nchunks of `chunk` elements, and with nchunks > 1 writes its accumulator to
 * partial[g] for ff_reduce_finish, instead of the result to d. */
__kernel void ff_reduce(int op, int float_acc, kview d, __global uchar *db, kview s, __global const uchar *sb,
                        kview r, long nout, long rn, long chunk, long nchunks, __global racc *partial)
{
    __local racc part[RED_WG];
    int lid = get_local_id(0), L = get_local_size(0);
    for (long g = get_group_id(0); g < nout * nchunks; g += get_num_groups(0)) {
        long o = g / nchunks, k0 = (g % nchunks) * chunk, k1 = min(rn, k0 + chunk);
        long base = view_at(&s, o);
        racc a = racc_init(op);
        for (long k = k0 + lid; k < k1; k += L) {
            long at = base + view_at(&r, k);
            if (float_acc) racc_float(&a, op, ld_f(sb, s.dtype, at), k);
            else racc_int(&a, op, ld_i(sb, s.dtype, at), k);
        }
        if (L > 1) {
            part[lid] = a;
            barrier(CLK_LOCAL_MEM_FENCE);
            for (int h = L / 2; h > 0; h /= 2) {
                if (lid < h) part[lid] = racc_combine(part[lid], part[lid + h], op, float_acc);
                barrier(CLK_LOCAL_MEM_FENCE);
            }
            a = part[0];
        }
        if (lid == 0) {
            if (nchunks > 1) partial[g] = a;
            else racc_store(a, op, float_acc, db, d.dtype, view_at(&d, o));
        }
        if (L > 1) barrier(CLK_LOCAL_MEM_FENCE); /* part[0] is read before the next row */
    }
}

/* The second pass of a split reduction: one work-item per output folds its chunks. */
__kernel void ff_reduce_finish(int op, int float_acc, kview d, __global uchar *db, __global const racc *partial,
                               long nout, long nchunks)
{
    for (long o = get_global_id(0); o < nout; o += get_global_size(0)) {
        racc a = partial[o * nchunks];
        for (long p = 1; p < nchunks; p++) a = racc_combine(a, partial[o * nchunks + p], op, float_acc);
        racc_store(a, op, float_acc, db, d.dtype, view_at(&d, o));
    }
}

/* The sum over one middle axis ([A, R, B] over R, x.sum(1); ocl_reduce takes it for f32
 * and f64 when B is contiguous in src and dst, a multiple of W, with at most two dims
 * before it): a work-item per W consecutive outputs (dim 0; dims 1 and 2 the position in
 * the leading dims, ocl_launch_rows), adding the R rows in order into W double
 * accumulators: the reference's running double sum, so its bits. An item's own vector is
 * the SIMD: PoCL vectorizes across items only a kernel without a loop, and ff_reduce's
 * thread per output with its loop over R ran [8, 32, 256, 256].sum(1) at 38.7 ms. */
#define FF_SUM_ROWS(NAME, T, W)                                                                                  \
    __kernel void NAME(__global T *restrict db, long d0, long d1, long d2, __global const T *restrict sb, long s0, \
                       long s1, long s2, long rs, long rn)                                                        \
    {                                                                                                            \
        long e = get_global_id(0), r2 = get_global_id(1), r1 = get_global_id(2);                                 \
        __global const T *x = sb + (s0 + r1 * s1 + r2 * s2 + W * e);                                             \
        double##W acc = (double##W)(0.0);                                                                        \
        for (long k = 0; k < rn; k++) acc += convert_double##W(vload##W(0, x + k * rs));                          \
        vstore##W(convert_##T##W(acc), 0, db + (d0 + r1 * d1 + r2 * d2 + W * e));                                \
    }
FF_SUM_ROWS(ff_sum_rows_f32, float, 8)
FF_SUM_ROWS(ff_sum_rows_f64, double, 4)
