/*
 * The own matmul: integer dtypes (wrapping in 64 bits, as the reference) and floats when
 * CLBlast is absent (accumulated in double). One work-item per dst element; batch dims
 * are unravelled over `batch` (dst's batch shape) with each operand's batch strides.
 * Views are rank-2 [M,K], [K,N], [M,N] (the last two dims of each operand).
 */
__kernel void ff_matmul(kview d, __global uchar *db, kview a, __global const uchar *ab, kview b,
                        __global const uchar *bb, kview batch, kview abatch, kview bbatch, long total)
{
    long M = d.shape[0], N = d.shape[1], K = a.shape[1];
    for (long n = get_global_id(0); n < total; n += get_global_size(0)) {
        long mn = M * N, bi = n / mn, r = n % mn, i = r / N, j = r % N;
        long od = view_at(&batch, bi) + d.offset + i * d.strides[0] + j * d.strides[1];
        long oa = view_at(&abatch, bi) + a.offset + i * a.strides[0];
        long ob = view_at(&bbatch, bi) + b.offset + j * b.strides[1];
        if (is_float(d.dtype)) {
            double acc = 0.0;
            for (long k = 0; k < K; k++)
                acc += ld_f(ab, a.dtype, oa + k * a.strides[1]) * ld_f(bb, b.dtype, ob + k * b.strides[0]);
            st_f(db, d.dtype, od, acc);
        } else {
            ulong acc = 0;
            for (long k = 0; k < K; k++)
                acc += (ulong)ld_i(ab, a.dtype, oa + k * a.strides[1]) * (ulong)ld_i(bb, b.dtype, ob + k * b.strides[0]);
            st_i(db, d.dtype, od, (long)acc);
        }
    }
}
