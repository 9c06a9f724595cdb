/*
 * Philox4x32-10 random fill: element n (row-major) takes counter counter_base + n, as
 * backend_abi.h fixes, so a seed gives the CPU backends' numbers: uniform samples bit
 * for bit (double arithmetic, one rounding), normal ones within the conformance
 * tolerance (the device's log/cos may differ from glibc's in the last bits).
 */

inline uint4 philox(ulong key, ulong counter)
{
    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0, c3 = 0;
    uint k0 = (uint)key, k1 = (uint)(key >> 32);
    for (int r = 0; r < 10; r++) {
        ulong p0 = (ulong)0xD2511F53u * c0;
        ulong p1 = (ulong)0xCD9E8D57u * c2;
        uint n0 = (uint)(p1 >> 32) ^ c1 ^ k0;
        uint n2 = (uint)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint)p1;
        c3 = (uint)p0;
        c0 = n0;
        c2 = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (uint4)(c0, c1, c2, c3);
}

__kernel void ff_random(kview d, __global uchar *db, int normal, ulong seed, ulong counter_base, double p0,
                        double p1, long numel)
{
    for (long n = get_global_id(0); n < numel; n += get_global_size(0)) {
        uint4 o = philox(seed, counter_base + (ulong)n);
        long at = view_at(&d, n);
        if (normal) {
            double u1 = ((double)o.z + 1.0) * (1.0 / 4294967296.0), u2 = (double)o.w * (1.0 / 4294967296.0);
            st_f(db, d.dtype, at, p0 + p1 * (sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2)));
        } else {
            ulong bits = ((ulong)o.x << 21) ^ ((ulong)o.y >> 11);
            double u = (double)(bits & ((1ul << 53) - 1)) * (1.0 / 9007199254740992.0);
            double v = p0 + (p1 - p0) * u;
            if (d.dtype == T_F32) {
                float f = (float)v;
                if ((double)f >= p1 && p1 > p0) f = nextafter((float)p1, (float)p0);
                ((__global float *)db)[at] = f;
            } else {
                st_f(db, d.dtype, at, v);
            }
        }
    }
}
