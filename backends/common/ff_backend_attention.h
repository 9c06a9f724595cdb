/*
 * The attention entry's argument checks (backend_abi.h, "Scaled dot-product attention"),
 * shared by every backend so that each refuses the same calls with the same messages.
 * Header-only; the reference's loops are backends/cpu/cpu_attention.c.
 */
#ifndef FF_BACKEND_ATTENTION_H
#define FF_BACKEND_ATTENTION_H

#include "ff_backend_checks.h"

/* The dtype lse has for inputs of dtype t: F64 for F64, else F32. */
static inline ff_dtype ffb_attention_lse_dtype(ff_dtype t) { return t == FF_F64 ? FF_F64 : FF_F32; }

/* Whether view v is 4-D with the given shape. */
static inline int ffb_attention_shape_is(const ff_view *v, int64_t b, int64_t h, int64_t t, int64_t d)
{
    return v->ndim == 4 && v->shape[0] == b && v->shape[1] == h && v->shape[2] == t && v->shape[3] == d;
}

/* Checks one call: op, counts, views, dtypes and every shape against q's [B, H, Tq, D],
 * k's Tk and v's Dv. half_ok: the backend computes F16/BF16 itself (else they are refused
 * as FF_ERR_UNSUPPORTED, the core's f32 detour handles them). Messages:
 * "<backend> attention: ...". */
static inline ff_status ffb_attention_check(const ff_host_api *host, const char *backend, int op, const ff_view *dst,
                                            int n_dst, const ff_view *src, int n_src, const ff_attention_params *p,
                                            int half_ok)
{
    if (op != FF_ATTENTION_FORWARD && op != FF_ATTENTION_BACKWARD)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: invalid op %d", backend, op);
    if (!p || p->mask < FF_ATTENTION_MASK_NONE || p->mask > FF_ATTENTION_MASK_ADD)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: bad params (mask kind %d)", backend, p ? (int)p->mask : -1);
    if (!(p->dropout_p >= 0 && p->dropout_p < 1))
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: dropout_p %g must be in [0, 1)", backend, p->dropout_p);
    int has_mask = p->mask != FF_ATTENTION_MASK_NONE;
    int want_dst = op ? 3 : 2, want_src = (op ? 6 : 3) + has_mask;
    if (!dst || !src || n_dst != want_dst || n_src != want_src)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: op %d with mask kind %d takes %d outputs and %d inputs, got %d and %d",
                        backend, op, (int)p->mask, want_dst, want_src, n_dst, n_src);
    ff_status st;
    for (int i = 0; i < n_src; i++)
        if ((st = ffb_check_view_as(host, backend, "attention", "src", &src[i], half_ok))) return st;
    for (int i = 0; i < n_dst; i++)
        if ((st = ffb_check_view_as(host, backend, "attention", "dst", &dst[i], half_ok))) return st;
    const ff_view *q = &src[op ? 1 : 0], *k = q + 1, *v = q + 2;
    ff_dtype t = q->dtype;
    if (!ffb_is_float(t) && !(half_ok && ffb_is_half(t)))
        return ffb_fail(host, FF_ERR_UNSUPPORTED, "%s attention: not supported on %s", backend, ffb_dtype_name(t));
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: q, k, v must be 4-D [B, H, T, D], got ranks %d, %d, %d",
                        backend, (int)q->ndim, (int)k->ndim, (int)v->ndim);
    int64_t b = q->shape[0], h = q->shape[1], tq = q->shape[2], d = q->shape[3], tk = k->shape[2], dv = v->shape[3];
    if (!ffb_attention_shape_is(k, b, h, tk, d) || !ffb_attention_shape_is(v, b, h, tk, dv))
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: k must be [B, H, Tk, D] and v [B, H, Tk, Dv] for q [%lld, %lld, %lld, %lld]",
                        backend, (long long)b, (long long)h, (long long)tq, (long long)d);
    if (d < 1 || d > FF_ATTENTION_MAX_HEAD_DIM || dv < 1 || dv > FF_ATTENTION_MAX_HEAD_DIM)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: head dims D = %lld, Dv = %lld must be in [1, %d]", backend,
                        (long long)d, (long long)dv, FF_ATTENTION_MAX_HEAD_DIM);
    ff_dtype lt = ffb_attention_lse_dtype(t);
    const ff_view *lse = op ? &src[5] : &dst[1], *o = op ? &src[4] : &dst[0];
    if (o->dtype != t || !ffb_attention_shape_is(o, b, h, tq, dv))
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: o must be %s [B, H, Tq, Dv]", backend, ffb_dtype_name(t));
    if (lse->dtype != lt || lse->ndim != 3 || lse->shape[0] != b || lse->shape[1] != h || lse->shape[2] != tq)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: lse must be %s [B, H, Tq]", backend, ffb_dtype_name(lt));
    if (k->dtype != t || v->dtype != t)
        return ffb_fail(host, FF_ERR_INVALID, "%s attention: q, k, v must share one dtype, got %s, %s, %s", backend,
                        ffb_dtype_name(t), ffb_dtype_name(k->dtype), ffb_dtype_name(v->dtype));
    if (op) {
        if (src[0].dtype != t || !ffb_attention_shape_is(&src[0], b, h, tq, dv))
            return ffb_fail(host, FF_ERR_INVALID, "%s attention: go must be %s [B, H, Tq, Dv]", backend, ffb_dtype_name(t));
        for (int i = 0; i < 3; i++) {
            const ff_view *g = &dst[i], *like = q + i;
            if (g->dtype != t || !ffb_same_shape(g, like))
                return ffb_fail(host, FF_ERR_INVALID, "%s attention: gradient %d must have %s's dtype and shape", backend, i,
                                i == 0 ? "q" : i == 1 ? "k" : "v");
            for (int a = 0; a < 4; a++)
                if (g->strides[a] == 0 && g->shape[a] > 1)
                    return ffb_fail(host, FF_ERR_INVALID, "%s attention: gradient %d is broadcast (stride 0 on dim %d)",
                                    backend, i, a);
        }
    }
    if (has_mask) {
        const ff_view *m = &src[n_src - 1];
        ff_dtype mt = p->mask == FF_ATTENTION_MASK_BOOL ? FF_BOOL : t;
        if (m->dtype != mt || !ffb_attention_shape_is(m, b, h, tq, tk))
            return ffb_fail(host, FF_ERR_INVALID, "%s attention: the mask must be %s [B, H, Tq, Tk] = [%lld, %lld, %lld, %lld]",
                            backend, ffb_dtype_name(mt), (long long)b, (long long)h, (long long)tq, (long long)tk);
    }
    return FF_OK;
}

/* The dropout rule of backend_abi.h for element n of [B, H, Tq, Tk] with inputs of dtype
 * t (F32 or F64): the factor p[i,j] takes, 0 or 1 / (1 - dropout_p) rounded to t. Rounded
 * as ff_dropout rounds, so that the mask equals the composition's bit for bit. */
static inline double ffb_attention_dropout_factor(const ff_attention_params *p, ff_dtype t, uint64_t n)
{
    double keep = 1.0 / (1.0 - p->dropout_p);
    if (t == FF_F64) return ff_random_uniform01(p->seed, n) >= p->dropout_p ? keep : 0.0;
    return ff_random_uniform_f32(p->seed, n, 0.0, 1.0) >= (float)p->dropout_p ? (double)(float)keep : 0.0;
}

#endif /* FF_BACKEND_ATTENTION_H */
