/*
 * Scaled dot-product attention (backend_abi.h, "Scaled dot-product attention"), flash
 * style: the T x T scores never reach memory. One work-group per (b, h, tile of rows),
 * one work-item per row; tiles of the other side (K and V for the forward and gq, Q and
 * go for gk and gv) stream through local memory, loaded once per work-group. Sums run in
 * double as in every kernel of this backend (F16/BF16 load as double and round once at
 * the store), which is at least the ABI's F32.
 *
 * The forward keeps a running maximum m and sum l per row (the online softmax): a tile's
 * scores rescale what came before by exp(m_old - m_new) once per tile. The backward
 * recomputes p = exp(s - lse) from the forward's lse, in two kernels so that nothing is
 * accumulated by two work-groups (deterministic, no atomics): ff_attention_dq over query
 * tiles (gq, and delta = rowsum(go * o), saved for the second), ff_attention_dkv over key
 * tiles (gk, gv). Rows with lse = -inf (every key masked) get p = 0: o = 0, zero gradients.
 * Dropout (drop > 0) scales p by att_drop's factor after the softmax (lse stays the
 * undropped one's); the backward redraws it: gv sums drop(p) go, ds = p (drop(dp) - delta).
 *
 * Per-row state lives in private arrays of ATT_DMAX doubles: the host never sends a head
 * dim above it (FF_ATTENTION_MAX_HEAD_DIM), nor a tile of more than ATT_TMAX rows.
 */
#define ATT_DMAX 256
#define ATT_TMAX 64
#define ATT_MASK_BOOL 1 /* ff_attention_mask */
#define ATT_MASK_ADD 2

/* Element offset of [b, h, t, d] in a 4-D view (stride 0 where it is broadcast). */
inline long att_at(const kview *v, long b, long h, long t, long d)
{
    return v->offset + b * v->strides[0] + h * v->strides[1] + t * v->strides[2] + d * v->strides[3];
}

/* Score s of (i, j) with the mask applied: -inf where the key takes no part. */
inline double att_mask(double s, int kind, int causal, const kview *m, __global const uchar *mb, long b, long h,
                       long i, long j)
{
    if (causal && j > i) return -INFINITY;
    if (kind == ATT_MASK_BOOL) return mb[att_at(m, b, h, i, j)] ? s : -INFINITY;
    if (kind == ATT_MASK_ADD) return s + ld_f(mb, m->dtype, att_at(m, b, h, i, j));
    return s;
}

/* backend_abi.h's dropout factor of element n of [B, H, Tq, Tk]: random.cl's uniform
 * (philox counter n, as ff_random fills a contiguous tensor), compared and scaled in q's
 * dtype, so the mask is ff_dropout's bit for bit. */
inline double att_drop(double drop, ulong seed, int dtype, long n)
{
    if (drop <= 0.0) return 1.0;
    uint4 o = philox(seed, (ulong)n);
    ulong bits = ((ulong)o.x << 21) ^ ((ulong)o.y >> 11);
    double u = (double)(bits & ((1ul << 53) - 1)) * (1.0 / 9007199254740992.0), keep = 1.0 / (1.0 - drop);
    if (dtype == T_F64) return u >= drop ? keep : 0.0;
    float f = (float)u;
    if ((double)f >= 1.0) f = nextafter(1.0f, 0.0f);
    return f >= (float)drop ? (double)(float)keep : 0.0;
}

/* Loads rows r0 .. r0+n-1 of a [B,H,T,D] view into tile (row-major n x D), the
 * work-group's items sharing the elements. */
inline void att_load(__local double *tile, const kview *v, __global const uchar *vb, long b, long h, long r0, long n,
                     long D)
{
    long L = get_local_size(0);
    for (long e = get_local_id(0); e < n * D; e += L) tile[e] = ld_f(vb, v->dtype, att_at(v, b, h, r0 + e / D, e % D));
}

/* Which (b, h, first row) this work-group has: groups run over B * H * ceil(T / L). */
inline long att_group(long T, long H, long *b, long *h)
{
    long L = get_local_size(0), tiles = (T + L - 1) / L, g = get_group_id(0), bh = g / tiles;
    *b = bh / H, *h = bh % H;
    return (g % tiles) * L;
}

/* lt: the key tile's rows (<= ATT_TMAX); ks: lt x D, vs: lt x Dv */
__kernel void ff_attention_fwd(kview q, __global const uchar *qb, kview k, __global const uchar *kb, kview v,
                               __global const uchar *vb, kview m, __global const uchar *mb, int kind, int causal,
                               double scale, double drop, ulong seed, kview o, __global uchar *ob, kview l, __global uchar *lb, long lt,
                               __local double *ks, __local double *vs)
{
    long H = q.shape[1], Tq = q.shape[2], D = q.shape[3], Tk = k.shape[2], Dv = v.shape[3], b, h;
    long i0 = att_group(Tq, H, &b, &h), i = i0 + get_local_id(0);
    int live = i < Tq;
    double qr[ATT_DMAX], acc[ATT_DMAX], sc[ATT_TMAX], mrow = -INFINITY, lsum = 0.0;
    for (long d = 0; d < D; d++) qr[d] = live ? ld_f(qb, q.dtype, att_at(&q, b, h, i, d)) : 0.0;
    for (long d = 0; d < Dv; d++) acc[d] = 0.0;
    /* causal: no key past the group's last row takes part */
    long kend = causal && i0 + (long)get_local_size(0) < Tk ? i0 + (long)get_local_size(0) : Tk;
    for (long j0 = 0; j0 < kend; j0 += lt) {
        long n = kend - j0 < lt ? kend - j0 : lt;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous tile is consumed */
        att_load(ks, &k, kb, b, h, j0, n, D);
        att_load(vs, &v, vb, b, h, j0, n, Dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        double tmax = -INFINITY;
        for (long jj = 0; jj < n; jj++) {
            double s = 0.0;
            for (long d = 0; d < D; d++) s += qr[d] * ks[jj * D + d];
            sc[jj] = att_mask(s * scale, kind, causal, &m, mb, b, h, i, j0 + jj);
            tmax = fmax(tmax, sc[jj]);
        }
        if (tmax == -INFINITY) continue; /* nothing in this tile: m, l and acc stay */
        double mnew = fmax(mrow, tmax), corr = mrow == -INFINITY ? 0.0 : exp(mrow - mnew);
        lsum *= corr;
        for (long d = 0; d < Dv; d++) acc[d] *= corr;
        for (long jj = 0; jj < n; jj++) {
            double p = sc[jj] == -INFINITY ? 0.0 : exp(sc[jj] - mnew);
            lsum += p;
            p *= att_drop(drop, seed, q.dtype, ((b * H + h) * Tq + i) * Tk + j0 + jj);
            for (long d = 0; d < Dv; d++) acc[d] += p * vs[jj * Dv + d];
        }
        mrow = mnew;
    }
    if (!live) return;
    for (long d = 0; d < Dv; d++) st_f(ob, o.dtype, att_at(&o, b, h, i, d), lsum > 0.0 ? acc[d] / lsum : 0.0);
    st_f(lb, l.dtype, l.offset + b * l.strides[0] + h * l.strides[1] + i * l.strides[2],
         lsum > 0.0 ? mrow + log(lsum) : -INFINITY);
}

/* p of one score given its row's lse (0 for a fully masked row or a masked key). */
inline double att_p(double s, double lse) { return s == -INFINITY || lse == -INFINITY ? 0.0 : exp(s - lse); }

/* gq over query tiles; writes delta[(b * H + h) * Tq + i] = rowsum(go * o) for ff_attention_dkv. */
__kernel void ff_attention_dq(kview go, __global const uchar *gob, kview q, __global const uchar *qb, kview k,
                              __global const uchar *kb, kview v, __global const uchar *vb, kview o,
                              __global const uchar *obuf, kview l, __global const uchar *lb, kview m,
                              __global const uchar *mb, int kind, int causal, double scale, double drop, ulong seed,
                              kview gq,
                              __global uchar *gqb, __global double *delta, long lt, __local double *ks,
                              __local double *vs)
{
    long H = q.shape[1], Tq = q.shape[2], D = q.shape[3], Tk = k.shape[2], Dv = v.shape[3], b, h;
    long i0 = att_group(Tq, H, &b, &h), i = i0 + get_local_id(0);
    int live = i < Tq;
    double qr[ATT_DMAX], gor[ATT_DMAX], acc[ATT_DMAX], dl = 0.0, lse = -INFINITY;
    if (live) {
        for (long d = 0; d < D; d++) qr[d] = ld_f(qb, q.dtype, att_at(&q, b, h, i, d)), acc[d] = 0.0;
        for (long d = 0; d < Dv; d++) {
            gor[d] = ld_f(gob, go.dtype, att_at(&go, b, h, i, d));
            dl += gor[d] * ld_f(obuf, o.dtype, att_at(&o, b, h, i, d));
        }
        lse = ld_f(lb, l.dtype, l.offset + b * l.strides[0] + h * l.strides[1] + i * l.strides[2]);
        delta[(b * H + h) * Tq + i] = dl;
    }
    long kend = causal && i0 + (long)get_local_size(0) < Tk ? i0 + (long)get_local_size(0) : Tk;
    for (long j0 = 0; j0 < kend; j0 += lt) {
        long n = kend - j0 < lt ? kend - j0 : lt;
        barrier(CLK_LOCAL_MEM_FENCE);
        att_load(ks, &k, kb, b, h, j0, n, D);
        att_load(vs, &v, vb, b, h, j0, n, Dv);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live || lse == -INFINITY) continue;
        for (long jj = 0; jj < n; jj++) {
            double s = 0.0, dp = 0.0;
            for (long d = 0; d < D; d++) s += qr[d] * ks[jj * D + d];
            double p = att_p(att_mask(s * scale, kind, causal, &m, mb, b, h, i, j0 + jj), lse);
            if (p == 0.0) continue;
            for (long d = 0; d < Dv; d++) dp += gor[d] * vs[jj * Dv + d];
            double ds = p * (att_drop(drop, seed, q.dtype, ((b * H + h) * Tq + i) * Tk + j0 + jj) * dp - dl);
            for (long d = 0; d < D; d++) acc[d] += ds * ks[jj * D + d];
        }
    }
    if (!live) return;
    for (long d = 0; d < D; d++) st_f(gqb, gq.dtype, att_at(&gq, b, h, i, d), lse == -INFINITY ? 0.0 : scale * acc[d]);
}

/* gk, gv over key tiles: each work-item one key row; qs: lt x D, gos: lt x Dv, and the
 * tile's lse and delta in ls (2 x lt). */
__kernel void ff_attention_dkv(kview go, __global const uchar *gob, kview q, __global const uchar *qb, kview k,
                               __global const uchar *kb, kview v, __global const uchar *vb, kview l,
                               __global const uchar *lb, kview m, __global const uchar *mb, int kind, int causal,
                               double scale, double drop, ulong seed, kview gk, __global uchar *gkb, kview gv, __global uchar *gvb,
                               __global const double *delta, long lt, __local double *qs, __local double *gos,
                               __local double *ls)
{
    long H = q.shape[1], Tq = q.shape[2], D = q.shape[3], Tk = k.shape[2], Dv = v.shape[3], b, h;
    long j0 = att_group(Tk, H, &b, &h), j = j0 + get_local_id(0), L = get_local_size(0);
    int live = j < Tk;
    double kr[ATT_DMAX], vr[ATT_DMAX], ak[ATT_DMAX], av[ATT_DMAX];
    for (long d = 0; d < D; d++) kr[d] = live ? ld_f(kb, k.dtype, att_at(&k, b, h, j, d)) : 0.0, ak[d] = 0.0;
    for (long d = 0; d < Dv; d++) vr[d] = live ? ld_f(vb, v.dtype, att_at(&v, b, h, j, d)) : 0.0, av[d] = 0.0;
    /* causal: query i sees key j only when i >= j, so the group starts at its first key */
    for (long i0 = causal ? j0 : 0; i0 < Tq; i0 += lt) {
        long n = Tq - i0 < lt ? Tq - i0 : lt;
        barrier(CLK_LOCAL_MEM_FENCE);
        att_load(qs, &q, qb, b, h, i0, n, D);
        att_load(gos, &go, gob, b, h, i0, n, Dv);
        for (long e = get_local_id(0); e < n; e += L) {
            ls[e] = ld_f(lb, l.dtype, l.offset + b * l.strides[0] + h * l.strides[1] + (i0 + e) * l.strides[2]);
            ls[lt + e] = delta[(b * H + h) * Tq + i0 + e];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (!live) continue;
        for (long ii = 0; ii < n; ii++) {
            double s = 0.0, dp = 0.0;
            for (long d = 0; d < D; d++) s += qs[ii * D + d] * kr[d];
            double p = att_p(att_mask(s * scale, kind, causal, &m, mb, b, h, i0 + ii, j), ls[ii]);
            if (p == 0.0) continue;
            double f = att_drop(drop, seed, q.dtype, ((b * H + h) * Tq + i0 + ii) * Tk + j), pd = f * p;
            for (long d = 0; d < Dv; d++) dp += gos[ii * Dv + d] * vr[d], av[d] += pd * gos[ii * Dv + d];
            double ds = p * (f * dp - ls[lt + ii]);
            for (long d = 0; d < D; d++) ak[d] += ds * qs[ii * D + d];
        }
    }
    if (!live) return;
    for (long d = 0; d < D; d++) st_f(gkb, gk.dtype, att_at(&gk, b, h, j, d), scale * ak[d]);
    for (long d = 0; d < Dv; d++) st_f(gvb, gv.dtype, att_at(&gv, b, h, j, d), av[d]);
}
