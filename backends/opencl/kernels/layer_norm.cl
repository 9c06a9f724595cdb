/*
 * Layer normalization over the last dim of x viewed as [R, D] (backend_abi.h's
 * layer_norm entry). The row kernels run one work-group of L lanes (a power of two) per
 * row (no loop over rows: PoCL runs barriers inside loops markedly slower): each lane folds the columns lid, lid + L, ... in double,
 * then the lanes add up in a tree in local memory, so every row is summed in the same
 * order on every run. Two passes for the statistics (mean, then the squares about it),
 * as the contract asks: one pass of sums and squares cancels when |mean| >> std.
 * Every result is computed in double and rounded once at the store (halves included).
 *
 * gw and gb are column sums over R: ff_layer_norm_cols sums blocks of LN_RB rows per
 * column into a scratch of doubles, ff_layer_norm_cols_sum adds the blocks in order.
 * No element is written by two work-items: no atomics, the same bits every run.
 */
#define LN_RB 32 /* rows per block of the column sums (the host's ocl_layer_norm.c too) */

inline long ln_at(const kview *v, long i, long k) { return v->offset + i * v->strides[0] + k * v->strides[1]; }
inline long ln_vec(const kview *v, long i) { return v->offset + i * v->strides[0]; }

/* The sum over the work-group of each lane's s (lanes' slots in red, L a power of two);
 * every lane gets it. The trailing barrier lets red be reused at once. */
inline double ln_group_sum(__local double *red, double s)
{
    long lid = get_local_id(0), L = get_local_size(0);
    red[lid] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long h = L / 2; h > 0; h /= 2) {
        if (lid < h) red[lid] += red[lid + h];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    double total = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return total;
}

/* op 0: y = (x - mean) invstd w + b, with mean and invstd of the row stored as F64. */
__kernel void ff_layer_norm_fwd(kview x, __global const uchar *xb, kview w, __global const uchar *wb, kview b,
                                __global const uchar *bb, kview y, __global uchar *yb, kview mean,
                                __global uchar *mb, kview inv, __global uchar *ib, double eps,
                                __local double *red)
{
    long R = x.shape[0], D = x.shape[1], lid = get_local_id(0), L = get_local_size(0);
    long i = get_group_id(0);
    if (i >= R) return; /* the whole group leaves: the barriers stay uniform */
    double s = 0.0;
    for (long k = lid; k < D; k += L) s += ld_f(xb, x.dtype, ln_at(&x, i, k));
    double mu = ln_group_sum(red, s) / (double)D, q = 0.0;
    for (long k = lid; k < D; k += L) {
        double e = ld_f(xb, x.dtype, ln_at(&x, i, k)) - mu;
        q += e * e;
    }
    double is = 1.0 / sqrt(ln_group_sum(red, q) / (double)D + eps);
    for (long k = lid; k < D; k += L) {
        double xh = (ld_f(xb, x.dtype, ln_at(&x, i, k)) - mu) * is;
        double v = xh * ld_f(wb, w.dtype, ln_vec(&w, k)) + ld_f(bb, b.dtype, ln_vec(&b, k));
        st_f(yb, y.dtype, ln_at(&y, i, k), v);
    }
    if (lid == 0) {
        st_f(mb, T_F64, ln_vec(&mean, i), mu);
        st_f(ib, T_F64, ln_vec(&inv, i), is);
    }
}

/* op 1, gx: with gxhat = g w, gx = invstd (gxhat - mean_D(gxhat) - xhat mean_D(gxhat xhat)). */
__kernel void ff_layer_norm_bwd(kview g, __global const uchar *gb, kview x, __global const uchar *xb, kview mean,
                                __global const uchar *mb, kview inv, __global const uchar *ib, kview w,
                                __global const uchar *wb, kview gx, __global uchar *gxb, __local double *red)
{
    long R = x.shape[0], D = x.shape[1], lid = get_local_id(0), L = get_local_size(0);
    long i = get_group_id(0);
    if (i >= R) return;
    double mu = ld_f(mb, T_F64, ln_vec(&mean, i)), is = ld_f(ib, T_F64, ln_vec(&inv, i)), sa = 0.0, sb = 0.0;
    for (long k = lid; k < D; k += L) {
        double gh = ld_f(gb, g.dtype, ln_at(&g, i, k)) * ld_f(wb, w.dtype, ln_vec(&w, k));
        sa += gh;
        sb += gh * (ld_f(xb, x.dtype, ln_at(&x, i, k)) - mu) * is;
    }
    double a = ln_group_sum(red, sa) / (double)D, c = ln_group_sum(red, sb) / (double)D;
    for (long k = lid; k < D; k += L) {
        double gh = ld_f(gb, g.dtype, ln_at(&g, i, k)) * ld_f(wb, w.dtype, ln_vec(&w, k));
        double xh = (ld_f(xb, x.dtype, ln_at(&x, i, k)) - mu) * is;
        st_f(gxb, gx.dtype, ln_at(&gx, i, k), is * (gh - a - xh * c));
    }
}

/* One work-item per (block of LN_RB rows, column k): part[blk D + k] = sum g xhat and
 * part[(nblk + blk) D + k] = sum g over the block's rows, in row order. */
__kernel void ff_layer_norm_cols(kview g, __global const uchar *gb, kview x, __global const uchar *xb, kview mean,
                                 __global const uchar *mb, kview inv, __global const uchar *ib,
                                 __global double *part, long nblk)
{
    long R = x.shape[0], D = x.shape[1];
    for (long n = get_global_id(0); n < nblk * D; n += get_global_size(0)) {
        long blk = n / D, k = n % D, end = (blk + 1) * LN_RB < R ? (blk + 1) * LN_RB : R;
        double sw = 0.0, sb = 0.0;
        for (long i = blk * LN_RB; i < end; i++) {
            double gv = ld_f(gb, g.dtype, ln_at(&g, i, k));
            double xh = (ld_f(xb, x.dtype, ln_at(&x, i, k)) - ld_f(mb, T_F64, ln_vec(&mean, i))) *
                        ld_f(ib, T_F64, ln_vec(&inv, i));
            sw += gv * xh;
            sb += gv;
        }
        part[n] = sw;
        part[nblk * D + n] = sb;
    }
}

/* One work-item per column: gw and gb = the blocks' sums in block order (zeros for R = 0). */
__kernel void ff_layer_norm_cols_sum(__global const double *part, long nblk, long D, kview gw, __global uchar *gwb,
                                     kview gbv, __global uchar *gbb)
{
    for (long k = get_global_id(0); k < D; k += get_global_size(0)) {
        double sw = 0.0, sb = 0.0;
        for (long blk = 0; blk < nblk; blk++) {
            sw += part[blk * D + k];
            sb += part[(nblk + blk) * D + k];
        }
        st_f(gwb, gw.dtype, ln_vec(&gw, k), sw);
        st_f(gbb, gbv.dtype, ln_vec(&gbv, k), sb);
    }
}
