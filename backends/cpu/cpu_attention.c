/* The optional attention entry, as the oracle: for each (batch, head, query) row, the
 * scores against every key in double, the exact softmax through the row's log-sum-exp,
 * and the formulas of backend_abi.h read literally. O(Tk) scratch per call, any strides
 * (stride 0 too), every mask form. No tiling: clarity first, other backends are faster. */
#include <stdlib.h>

#include "cpu_impl.h"
#include "ff_backend_attention.h"

/* Element offsets of row (b, h, i) of a 4-D view and of element (b, h, i) of lse. */
static int64_t row4(const ff_view *v, int64_t b, int64_t h, int64_t i)
{
    return v->offset + b * v->strides[0] + h * v->strides[1] + i * v->strides[2];
}

static double ld(const ff_view *v, int64_t off) { return cpu_load_f64(v->buf, v->dtype, off); }
static void st(const ff_view *v, int64_t off, double x) { cpu_store_f64(v->buf, v->dtype, off, x); }

/* s[j] = the scores of query row i (b, h) against every key: scale q.k, then the mask
 * (-inf where a bool mask is false or causal j > i; an additive mask added). Returns
 * the row's maximum (-inf when every key is masked, or Tk = 0). */
static double scores(const ff_view *q, const ff_view *k, const ff_view *mask, const ff_attention_params *p, int64_t b,
                     int64_t h, int64_t i, double *s)
{
    int64_t tk = k->shape[2], d = q->shape[3], qo = row4(q, b, h, i);
    double m = -INFINITY;
    for (int64_t j = 0; j < tk; j++) {
        int64_t ko = row4(k, b, h, j);
        double dot = 0;
        for (int64_t c = 0; c < d; c++) dot += ld(q, qo + c * q->strides[3]) * ld(k, ko + c * k->strides[3]);
        double x = p->scale * dot;
        if (p->causal && j > i) x = -INFINITY;
        if (mask) {
            int64_t mo = row4(mask, b, h, i) + j * mask->strides[3];
            if (p->mask == FF_ATTENTION_MASK_BOOL) {
                if (!cpu_load_i64(mask->buf, mask->dtype, mo)) x = -INFINITY;
            } else {
                x += ld(mask, mo);
            }
        }
        s[j] = x;
        if (x != x || x > m) m = x; /* a NaN score stays NaN through the row */
    }
    return m;
}

/* The dropout factor of element (b, h, i, j) of [B, H, Tq, Tk] (1 without dropout). */
static double drop(const ff_attention_params *p, const ff_view *q, const ff_view *k, int64_t b, int64_t h, int64_t i,
                   int64_t j)
{
    if (p->dropout_p <= 0) return 1.0;
    uint64_t n = (uint64_t)(((b * q->shape[1] + h) * q->shape[2] + i) * k->shape[2] + j);
    return ffb_attention_dropout_factor(p, q->dtype, n);
}

/* dst {o, lse}: o[i] = sum_j drop(exp(s[j] - lse[i])) v[j]. */
static void forward(const ff_view *dst, const ff_view *src, const ff_view *mask, const ff_attention_params *p, double *s)
{
    const ff_view *q = &src[0], *k = &src[1], *v = &src[2], *o = &dst[0], *lse = &dst[1];
    int64_t nb = q->shape[0], nh = q->shape[1], tq = q->shape[2], tk = k->shape[2], dv = v->shape[3];
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < nh; h++)
            for (int64_t i = 0; i < tq; i++) {
                double m = scores(q, k, mask, p, b, h, i, s), l = -INFINITY;
                if (m != -INFINITY) { /* a fully masked row keeps lse = -inf and o = 0 */
                    double sum = 0;
                    for (int64_t j = 0; j < tk; j++) sum += exp(s[j] - m);
                    l = m + log(sum);
                    for (int64_t j = 0; j < tk; j++) s[j] = exp(s[j] - l) * drop(p, q, k, b, h, i, j);
                }
                int64_t oo = row4(o, b, h, i);
                for (int64_t c = 0; c < dv; c++) {
                    double acc = 0;
                    for (int64_t j = 0; l != -INFINITY && j < tk; j++)
                        acc += s[j] * ld(v, row4(v, b, h, j) + c * v->strides[3]);
                    st(o, oo + c * o->strides[3], acc);
                }
                st(lse, lse->offset + b * lse->strides[0] + h * lse->strides[1] + i * lse->strides[2], l);
            }
}

/* dst {gq, gk, gv}, src {go, q, k, v, o, lse}: with p = exp(s - lse), dp = go v^T and
 * ds = p (drop(dp) - rowsum(go * o)): gq = scale ds k, gk = scale ds^T q, gv = drop(p)^T go
 * (rowsum(go * o) = sum_j p drop(dp): o already holds the dropped p).
 * Scratch: s and ds (Tk each), then gk and gv summed over the queries (Tk * (D + Dv)). */
static void backward(const ff_view *dst, const ff_view *src, const ff_view *mask, const ff_attention_params *p,
                     double *s)
{
    const ff_view *go = &src[0], *q = &src[1], *k = &src[2], *v = &src[3], *o = &src[4], *lse = &src[5];
    const ff_view *gq = &dst[0], *gk = &dst[1], *gv = &dst[2];
    int64_t nb = q->shape[0], nh = q->shape[1], tq = q->shape[2], tk = k->shape[2], d = q->shape[3], dv = v->shape[3];
    double *ds = s + tk, *agk = ds + tk, *agv = agk + tk * d;
    for (int64_t b = 0; b < nb; b++)
        for (int64_t h = 0; h < nh; h++) {
            memset(agk, 0, sizeof *agk * (size_t)(tk * (d + dv)));
            for (int64_t i = 0; i < tq; i++) {
                double l = ld(lse, lse->offset + b * lse->strides[0] + h * lse->strides[1] + i * lse->strides[2]);
                int64_t qo = row4(q, b, h, i), goo = row4(go, b, h, i), oo = row4(o, b, h, i), gqo = row4(gq, b, h, i);
                if (l == -INFINITY) { /* a fully masked row: no gradient at all */
                    for (int64_t c = 0; c < d; c++) st(gq, gqo + c * gq->strides[3], 0.0);
                    continue;
                }
                scores(q, k, mask, p, b, h, i, s);
                double di = 0;
                for (int64_t e = 0; e < dv; e++) di += ld(go, goo + e * go->strides[3]) * ld(o, oo + e * o->strides[3]);
                for (int64_t j = 0; j < tk; j++) {
                    int64_t vo = row4(v, b, h, j);
                    double dp = 0;
                    for (int64_t e = 0; e < dv; e++) dp += ld(go, goo + e * go->strides[3]) * ld(v, vo + e * v->strides[3]);
                    double f = drop(p, q, k, b, h, i, j), pj = exp(s[j] - l);
                    ds[j] = pj * (f * dp - di);
                    s[j] = f * pj; /* drop(p), for gv */
                }
                for (int64_t c = 0; c < d; c++) {
                    double a = 0, qc = ld(q, qo + c * q->strides[3]);
                    for (int64_t j = 0; j < tk; j++) {
                        a += ds[j] * ld(k, row4(k, b, h, j) + c * k->strides[3]);
                        agk[j * d + c] += p->scale * ds[j] * qc;
                    }
                    st(gq, gqo + c * gq->strides[3], p->scale * a);
                }
                for (int64_t e = 0; e < dv; e++) {
                    double ge = ld(go, goo + e * go->strides[3]);
                    for (int64_t j = 0; j < tk; j++) agv[j * dv + e] += s[j] * ge;
                }
            }
            for (int64_t j = 0; j < tk; j++) {
                int64_t gko = row4(gk, b, h, j), gvo = row4(gv, b, h, j);
                for (int64_t c = 0; c < d; c++) st(gk, gko + c * gk->strides[3], agk[j * d + c]);
                for (int64_t e = 0; e < dv; e++) st(gv, gvo + e * gv->strides[3], agv[j * dv + e]);
            }
        }
}

ff_status cpu_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                        const ff_attention_params *p)
{
    const ff_host_api *host = ctx ? ((cpu_ctx *)ctx)->host : NULL;
    ff_status rc = ffb_attention_check(host, "cpu", op, dst, n_dst, src, n_src, p, 0);
    if (rc) return rc;
    const ff_view *mask = p->mask != FF_ATTENTION_MASK_NONE ? &src[n_src - 1] : NULL;
    const ff_view *k = &src[op ? 2 : 1], *v = &src[op ? 3 : 2], *q = &src[op ? 1 : 0];
    int64_t tk = k->shape[2], d = q->shape[3], dv = v->shape[3];
    /* one row of scores; the backward adds ds and its gk and gv sums over queries */
    size_t n = (size_t)(tk + (op ? tk + tk * (d + dv) : 0));
    double *s = malloc(sizeof *s * (n ? n : 1));
    if (!s) return cpu_error(ctx, FF_ERR_OOM, "cpu attention: out of memory for %zu doubles of scratch", n);
    if (op == FF_ATTENTION_FORWARD) forward(dst, src, mask, p, s);
    else backward(dst, src, mask, p, s);
    free(s);
    return FF_OK;
}
