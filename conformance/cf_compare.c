/* The tolerance table and the element comparator. Integers, bool, copies and casts
 * compare exactly; floats compare with |got - want| <= atol + rtol * |want|, NaN
 * matching NaN and infinities matching exactly. The table is documented in
 * conformance/README.md: change both together. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cf.h"

const char *cf_tol_class_name(cf_tol_class cls)
{
    static const char *const n[CF_TOL_COUNT] = {"exact", "rounded", "transcendental", "accumulate", "product"};
    return (unsigned)cls < CF_TOL_COUNT ? n[cls] : "?";
}

/* F16/BF16: a half result is an f32 computation rounded once, so the tolerances are one
 * or two of the half dtype's epsilons (eps, the ulp of 1: f16 2^-10, bf16 2^-7) on top
 * of what the f32 computation may differ by; subnormal results get the smallest
 * subnormal as atol. */
static cf_tol half_tolerance(ff_dtype dt, cf_tol_class cls, double kk)
{
    const double eps = dt == FF_F16 ? 0x1p-10 : 0x1p-7, tiny = cf_dtype_true_min(dt);
    cf_tol t = {0, 0, false, false};
    switch (cls) {
    case CF_TOL_EXACT: break;
    case CF_TOL_ROUNDED: break; /* exact: the rounding through f32 is innocuous (24 >= 2 * 11 + 2 bits) */
    case CF_TOL_TRANSCEND: t.rtol = eps, t.atol = 1e-6 + tiny; break; /* 1 ulp past f32's atol */
    case CF_TOL_ACCUM: t.rtol = 2 * eps, t.atol = 2 * 1.1920929e-7 * kk + tiny; break;
    case CF_TOL_PROD: t.rtol = 2 * 1.1920929e-7 * kk + 2 * eps, t.atol = tiny; break;
    default: break;
    }
    return t;
}

cf_tol cf_tolerance(ff_dtype dt, cf_tol_class cls, int64_t k)
{
    if (dt == FF_F16 || dt == FF_BF16) return half_tolerance(dt, cls, k < 1 ? 1.0 : (double)k);
    if (ff_dtype_is_complex(dt)) { /* its part dtype's, measured against |want| (cf_compare) */
        cf_tol t = cf_tolerance(dt == FF_C64 ? FF_F32 : FF_F64, cls, k);
        /* a product's part is a difference of two rounded products, which may cancel: the
         * composition from real kernels rounds each, the reference rounds once */
        if (cls == CF_TOL_ROUNDED) t.rtol *= 4;
        return t;
    }
    const bool f32 = dt == FF_F32;
    const double eps = f32 ? 1.1920929e-7 : 2.220446049250313e-16;
    double kk = k < 1 ? 1.0 : (double)k;
    cf_tol t = {0, 0, false, false};
    switch (cls) {
    case CF_TOL_EXACT: break;
    case CF_TOL_ROUNDED: t.rtol = 2 * eps; break;
    case CF_TOL_TRANSCEND:
        t.rtol = f32 ? 1e-5 : 1e-12;
        t.atol = f32 ? 1e-6 : 1e-13;
        break;
    case CF_TOL_ACCUM:
        t.rtol = f32 ? 1e-5 : 1e-12;
        t.atol = 2 * eps * kk;
        break;
    case CF_TOL_PROD:
        t.rtol = 2 * eps * kk + (f32 ? 1e-6 : 1e-13);
        t.atol = f32 ? 1e-30 : 1e-300;
        break;
    default: break;
    }
    return t;
}

static void note(cf_diff *d, int64_t i, double got, double want)
{
    if (d->n_bad++ == 0) {
        d->first = i;
        d->got = got;
        d->want = want;
    }
}

/* Complex elements: both parts exact (exact), or max(|d re|, |d im|) <= atol + rtol |want|
 * (a part's error is measured against the complex number's size: a part that cancels to
 * near zero is as accurate as the whole); NaN in either part matches NaN in either part. */
static bool compare_complex(const void *got, const void *want, ff_dtype dt, int64_t n, cf_tol tol, bool exact,
                            cf_diff *d)
{
    ff_dtype pt = dt == FF_C64 ? FF_F32 : FF_F64;
    for (int64_t i = 0; i < n; i++) {
        double gr = cf_get_f(got, pt, 2 * i), gi = cf_get_f(got, pt, 2 * i + 1);
        double wr = cf_get_f(want, pt, 2 * i), wi = cf_get_f(want, pt, 2 * i + 1);
        bool gn = isnan(gr) || isnan(gi), wn = isnan(wr) || isnan(wi), ok;
        if (gn || wn) ok = gn && wn;
        else if (exact) ok = gr == wr && gi == wi && signbit(gr) == signbit(wr) && signbit(gi) == signbit(wi);
        else {
            double ad = fmax(fabs(gr - wr), fabs(gi - wi)), mag = hypot(wr, wi);
            if (isinf(gr) || isinf(gi) || isinf(wr) || isinf(wi)) ad = gr == wr && gi == wi ? 0 : INFINITY;
            double rd = mag != 0 ? ad / mag : (ad > 0 ? INFINITY : 0);
            if (ad > d->max_abs) d->max_abs = ad;
            if (rd > d->max_rel) d->max_rel = rd;
            ok = ad <= tol.atol + tol.rtol * mag;
        }
        if (!ok) note(d, i, fabs(gr - wr) >= fabs(gi - wi) ? gr : gi, fabs(gr - wr) >= fabs(gi - wi) ? wr : wi);
    }
    return d->n_bad == 0;
}

bool cf_compare(const void *got, const void *want, ff_dtype dt, int64_t n, cf_tol tol, bool exact, cf_diff *d)
{
    memset(d, 0, sizeof *d);
    d->first = -1;
    if (ff_dtype_is_complex(dt)) return compare_complex(got, want, dt, n, tol, exact, d);
    if (!ff_dtype_is_float(dt)) {
        for (int64_t i = 0; i < n; i++) {
            /* bool compares raw bytes: a byte other than 0/1 is a wrong value */
            int64_t g = dt == FF_BOOL ? ((const uint8_t *)got)[i] : cf_get_i(got, dt, i);
            int64_t w = dt == FF_BOOL ? ((const uint8_t *)want)[i] : cf_get_i(want, dt, i);
            if (g != w) {
                double ad = fabs((double)g - (double)w);
                if (ad > d->max_abs) d->max_abs = ad;
                note(d, i, (double)g, (double)w);
            }
        }
        return d->n_bad == 0;
    }
    for (int64_t i = 0; i < n; i++) {
        double g = cf_get_f(got, dt, i), w = cf_get_f(want, dt, i);
        bool ok;
        if (isnan(g) || isnan(w)) ok = isnan(g) && isnan(w);
        else if (isinf(g) || isinf(w)) ok = g == w;
        else if (exact) ok = g == w && (signbit(g) == signbit(w) || (tol.zero_either && g == 0));
        else {
            double ad = fabs(g - w), rd = w != 0 ? ad / fabs(w) : (ad > 0 ? INFINITY : 0);
            if (ad > d->max_abs) d->max_abs = ad;
            if (rd > d->max_rel) d->max_rel = rd;
            ok = ad <= tol.atol + tol.rtol * fabs(w);
            /* a zero keeps its sign in every class: tanh(-0) is -0, and a backend whose
             * vector path returns +0 is wrong even though |g - w| is 0 */
            if (ok && g == 0 && w == 0) ok = signbit(g) == signbit(w) || tol.zero_either;
            /* elementwise ops: a zero on either side must carry the other's sign, so
             * erf(-0) = +1e-30 and expm1(-1e-45) = +0 fail although within atol (sums and
             * softmax may legitimately end a hair on either side of zero: not them) */
            if (ok && tol.zero_sign && (g == 0 || w == 0) && !(tol.zero_either && g == w))
                ok = signbit(g) == signbit(w);
        }
        if (exact && !isnan(g) && !isnan(w) && !isinf(g) && !isinf(w)) {
            double ad = fabs(g - w), rd = w != 0 ? ad / fabs(w) : (ad > 0 ? INFINITY : 0);
            if (ad > d->max_abs) d->max_abs = ad;
            if (rd > d->max_rel) d->max_rel = rd;
        }
        if (!ok) note(d, i, g, w);
    }
    return d->n_bad == 0;
}

void cf_shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && len < n; d++)
        len += (size_t)snprintf(buf + len, n - len, d ? ",%" PRId64 : "%" PRId64, shape[d]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

void cf_index_str(char *buf, size_t n, int ndim, const int64_t *shape, int64_t flat)
{
    int64_t idx[FF_MAX_DIMS] = {0};
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] > 0) {
            idx[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    cf_shape_str(buf, n, ndim, idx);
}

uint64_t cf_case_seed(const cf_ctx *ctx, const cf_case *cs) { return cf_hash_str(ctx->seed, cs->id); }

void cf_rerun_str(char *buf, size_t n, const cf_ctx *ctx, const cf_case *cs)
{
    int len = snprintf(buf, n, "ff-conformance --backend %s --case %s --seed %" PRIu64, ctx->backend_arg, cs->id,
                       ctx->seed);
    if (ctx->step > 0 && len >= 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, " --step %d", ctx->step);
}

cf_result cf_fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why, const char *fmt, ...)
{
    char what[256], rerun[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | %s seed=%" PRIu64 " | rerun: %s", why, what, ctx->seed, rerun);
    return CF_FAIL;
}

void cf_describe(char *buf, size_t n, const cf_ctx *ctx, const cf_case *cs, const cf_call *c)
{
    size_t len = (size_t)snprintf(buf, n, "op=%s.%s dtype=%s", cs->family, cs->op, ff_dtype_name(cs->dtype));
    for (int i = 0; c && i < c->nops && len < n; i++) {
        const cf_operand *o = &c->o[i];
        char sh[128], st[128];
        cf_shape_str(sh, sizeof sh, o->ndim, o->shape);
        cf_shape_str(st, sizeof st, o->ndim, o->strides);
        len += (size_t)snprintf(buf + len, n - len, " %s:%s%s strides=%s offset=%" PRId64 "%s", o->name,
                                ff_dtype_name(o->dtype), sh, st, o->offset, o->alias >= 0 ? "(in-place)" : "");
    }
    if (c && c->kind == FF_KIND_REDUCE && len < n) len += (size_t)snprintf(buf + len, n - len, " mask=0x%x", (unsigned)c->mask);
    if (c && (c->kind == FF_KIND_GATHER || c->kind == FF_KIND_SCATTER_ADD || c->kind == FF_KIND_SOFTMAX) && len < n)
        len += (size_t)snprintf(buf + len, n - len, " axis=%d", c->axis);
    if (len < n) snprintf(buf + len, n - len, " seed=%" PRIu64, ctx->seed);
}
