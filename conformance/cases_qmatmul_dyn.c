/*
 * Family "qmatmul", dynamic mode (backend_abi.h, FF_QMATMUL_DYNAMIC): the entry takes a
 * float x and quantizes it itself, per tensor (8 and 7 bits) or per row. The expectation
 * is the core's host quantization, computed here with the ABI's shared rule
 * (ff_qmatmul_choose, ff_qmatmul_round, ...), then two checks:
 *   - y against the definition on those u8 values (exact sums, scaled in double), within
 *     the ABI's relative 2^-21: one quantized value off by one misses it by far more;
 *   - y bit for bit equal to the same backend's u8 mode on those u8 values (the
 *     quantization is exact, so a backend computes the same product both ways).
 * x is dense or transposed, with a row of zeros, a row holding +-inf, or one holding
 * +-NaN (what the rule says they become: NaN the low end, inf the ends; a NaN or
 * infinite end of the per-tensor range counts as 0 or +-FLT_MAX).
 */
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"

typedef struct d_shape {
    const char *name;
    int64_t m, n, k;
} d_shape;

static const d_shape shapes[] = {
    {"1x5x7", 1, 5, 7}, {"3x5x7", 3, 5, 7}, {"17x33x65", 17, 33, 65}, {"64x96x384", 64, 96, 384},
    {"0x4x8", 0, 4, 8}, {"5x3x0", 5, 3, 0},
};
#define NSHAPE ((int)(sizeof shapes / sizeof shapes[0]))
static const char *const mode_names[] = {"tensor", "tensor_rr", "rows"};
static const char *const x_names[] = {"plain", "zero_row", "inf_row", "nan_row"};

/* The core's host quantization of x [M, K] (row-major) by the ABI's rule: q, *p (and
 * rs [M] per row). */
static void host_quantize(const float *x, int64_t M, int64_t K, int mode, uint8_t *q, float *rs, ff_qmatmul_params *p)
{
    if (mode == 2) {
        p->a_zero = 128;
        for (int64_t m = 0; m < M; m++) {
            int32_t amax = 0;
            for (int64_t k = 0; k < K; k++) {
                int32_t v = ff_qmatmul_ford(fabsf(x[m * K + k]));
                amax = v > amax ? v : amax;
            }
            rs[m] = ff_qmatmul_row_scale(ff_qmatmul_funord(amax));
            for (int64_t k = 0; k < K; k++) q[m * K + k] = ff_qmatmul_round(x[m * K + k] * (1.0f / rs[m]), 128, 1, 255);
        }
        return;
    }
    int32_t lo = ff_qmatmul_ford(0.0f), hi = lo;
    for (int64_t i = 0; i < M * K; i++) {
        int32_t v = ff_qmatmul_ford(x[i]);
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
    ff_qmatmul_choose(ff_qmatmul_funord(lo), ff_qmatmul_funord(hi), mode == 1, &p->a_scale, &p->a_zero);
    for (int64_t i = 0; i < M * K; i++)
        q[i] = ff_qmatmul_round(x[i] * (1.0f / p->a_scale), (float)p->a_zero, 0, mode == 1 ? 127 : 255);
}

typedef struct d_in {
    const d_shape *s;
    float *x, *scale, *bias, *rs;
    uint8_t *q, *b;
    int tr, has_bias;
} d_in;

/* y [M, N] row-major (malloc'ed) from be: dynamic mode on x when u8 is 0, else the u8
 * mode on the host-quantized q with params p. NULL with err set on failure. */
static float *run_on(ff_backend *be, const d_in *in, int u8, const ff_qmatmul_params *p, char *err, size_t n_err)
{
    const d_shape *s = in->s;
    ff_tensor *a = NULL, *xt = NULL;
    if (u8) a = ff_from_data_on(be, in->q, 2, (int64_t[]){s->m, s->k}, FF_U8);
    else if (!in->tr) a = ff_from_data_on(be, in->x, 2, (int64_t[]){s->m, s->k}, FF_F32);
    else { /* transposed storage [K, M] */
        float *h = malloc((size_t)(s->m * s->k + 1) * sizeof(float));
        for (int64_t i = 0; h && i < s->m; i++)
            for (int64_t k = 0; k < s->k; k++) h[k * s->m + i] = in->x[i * s->k + k];
        xt = h ? ff_from_data_on(be, h, 2, (int64_t[]){s->k, s->m}, FF_F32) : NULL;
        a = xt ? ff_transpose(xt, 0, 1) : NULL;
        free(h);
    }
    ff_tensor *b = ff_from_data_on(be, in->b, 2, (int64_t[]){s->n, s->k}, FF_U8);
    ff_tensor *sc = ff_from_data_on(be, in->scale, 1, (int64_t[]){s->n}, FF_F32);
    ff_tensor *bi = in->has_bias ? ff_from_data_on(be, in->bias, 1, (int64_t[]){s->n}, FF_F32) : NULL;
    ff_tensor *ro = u8 && p->a_per_row ? ff_from_data_on(be, in->rs, 1, (int64_t[]){s->m}, FF_F32) : NULL;
    ff_tensor *y = ff_empty_on(be, 2, (int64_t[]){s->m, s->n}, FF_F32);
    float *out = NULL;
    if (a && b && sc && (bi || !in->has_bias) && (ro || !(u8 && p->a_per_row)) && y) {
        const ff_tensor *src[5] = {a, b, sc};
        int n = 3;
        if (bi) src[n++] = bi;
        if (ro) src[n++] = ro;
        out = malloc((size_t)(s->m * s->n + 1) * sizeof(float));
        if (ff_kernel_qmatmul(y, src, n, p, "conformance qmatmul dynamic") ||
            ff_tensor_to_host(y, out, (size_t)(s->m * s->n) * sizeof(float)))
            free(out), out = NULL;
    }
    if (!out) snprintf(err, n_err, "%s: %s", ff_status_name(ff_last_status()), ff_last_error());
    ff_tensor_release(a), ff_tensor_release(xt), ff_tensor_release(b), ff_tensor_release(sc);
    ff_tensor_release(bi), ff_tensor_release(ro), ff_tensor_release(y);
    return out;
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    return cf_fail(rep, ctx, cs, why, "op=qmatmul.%s", cs->op);
}

/* One backend's dynamic y against the definition (want, mag) and its own u8 mode. */
static cf_result check(cf_ctx *ctx, const cf_case *cs, cf_report *rep, ff_backend *be, const char *who, const d_in *in,
                       const ff_qmatmul_params *dyn, const ff_qmatmul_params *u8, const double *want, const double *mag)
{
    const d_shape *s = in->s;
    char err[600], why[1400];
    float *got = run_on(be, in, 0, dyn, err, sizeof err), *ref = got ? run_on(be, in, 1, u8, err, sizeof err) : NULL;
    cf_result res = CF_PASS;
    if (!got || !ref) {
        snprintf(why, sizeof why, "%s: the %s mode failed: %s", who, got ? "u8" : "dynamic", err);
        res = fail(rep, ctx, cs, why);
    }
    for (int64_t i = 0; res == CF_PASS && i < s->m * s->n; i++) {
        /* an infinite x end makes the per-tensor scale huge: past FLT_MAX, y is inf */
        int over = fabs(want[i]) >= FLT_MAX * (1 - 0x1p-21) && isinf(got[i]) && (got[i] > 0) == (want[i] > 0);
        if (!over && !(fabs(got[i] - want[i]) <= 0x1p-21 * mag[i] + 0x1p-126))
            snprintf(why, sizeof why, "%s: y[%" PRId64 ", %" PRId64 "] of f32[%" PRId64 ", %" PRId64 "] (K=%" PRId64
                     ") got %.9g want %.9g (tolerance 2^-21 of %.9g: x quantized by the ABI's rule, exact sums)",
                     who, i / s->n, i % s->n, s->m, s->n, s->k, (double)got[i], want[i], mag[i]),
                res = fail(rep, ctx, cs, why);
        else if (memcmp(&got[i], &ref[i], sizeof(float)))
            snprintf(why, sizeof why, "%s: y[%" PRId64 ", %" PRId64 "] dynamic %.9g but %.9g in u8 mode on the core's "
                     "quantization (they must agree bit for bit)",
                     who, i / s->n, i % s->n, (double)got[i], (double)ref[i]),
                res = fail(rep, ctx, cs, why);
    }
    free(got), free(ref);
    return res;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const d_shape *s = &shapes[cs->p[0]];
    int mode = cs->p[1], xk = cs->p[2];
    if (!ff_backend_supports(ctx->t, FF_KIND_QMATMUL, FF_QMATMUL_DYNAMIC, FF_F32)) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines: no qmatmul dynamic mode (the core quantizes on the host)");
        rep->coverage_gap = true;
        return CF_SKIP;
    }
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    int64_t MK = s->m * s->k, MN = s->m * s->n;
    d_in in = {.s = s, .tr = cs->p[3], .has_bias = cs->p[4]};
    in.x = malloc((size_t)(MK + 1) * sizeof(float)), in.q = malloc((size_t)MK + 1), in.b = malloc((size_t)(s->n * s->k) + 1);
    in.scale = malloc((size_t)(s->n + 1) * sizeof(float)), in.bias = malloc((size_t)(s->n + 1) * sizeof(float));
    in.rs = malloc((size_t)(s->m + 1) * sizeof(float));
    double *want = malloc((size_t)(MN + 1) * sizeof(double)), *mag = malloc((size_t)(MN + 1) * sizeof(double));
    if (!in.x || !in.q || !in.b || !in.scale || !in.bias || !in.rs || !want || !mag) abort();
    for (int64_t i = 0; i < MK; i++) in.x[i] = (float)cf_rng_uniform(&rng, -3, 5); /* lopsided: a zero point off 0 */
    int64_t r = s->m / 2; /* the special row */
    for (int64_t k = 0; s->m && k < s->k; k++)
        if (xk == 1) in.x[r * s->k + k] = 0;
    if (s->m && s->k >= 3 && xk >= 2) {
        in.x[r * s->k + 0] = xk == 2 ? INFINITY : NAN;
        in.x[r * s->k + 2] = xk == 2 ? -INFINITY : -NAN;
    }
    for (int64_t i = 0; i < s->n * s->k; i++) in.b[i] = (uint8_t)cf_rng_int(&rng, 0, 255);
    for (int64_t i = 0; i < s->n; i++)
        in.scale[i] = (float)cf_rng_uniform(&rng, 1e-4, 1e-2), in.bias[i] = (float)cf_rng_uniform(&rng, -1, 1);
    ff_qmatmul_params dyn = {.has_bias = in.has_bias, .a_per_row = mode == 2, .a_dynamic = 1, .reduce_range = mode == 1};
    ff_qmatmul_params u8 = {.has_bias = in.has_bias, .a_per_row = mode == 2};
    host_quantize(in.x, s->m, s->k, mode, in.q, in.rs, &u8);
    for (int64_t m = 0; m < s->m; m++)
        for (int64_t n = 0; n < s->n; n++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < s->k; k++) acc += ((int64_t)in.q[m * s->k + k] - u8.a_zero) * (int8_t)in.b[n * s->k + k];
            double y = (double)acc * (mode == 2 ? in.rs[m] : u8.a_scale) * in.scale[n];
            double bias = in.has_bias ? in.bias[n] : 0.0;
            want[m * s->n + n] = y + bias, mag[m * s->n + n] = fabs(y) + fabs(bias);
        }
    cf_result res = check(ctx, cs, rep, ctx->t, "backend", &in, &dyn, &u8, want, mag);
    if (res == CF_PASS && ctx->r != ctx->t) res = check(ctx, cs, rep, ctx->r, "reference", &in, &dyn, &u8, want, mag);
    free(in.x), free(in.q), free(in.b), free(in.scale), free(in.bias), free(in.rs), free(want), free(mag);
    return res;
}

void cf_gen_qmatmul_dynamic(void)
{
    /* every shape and mode on plain x; the special rows, the transposed x and the bias on
     * two shapes (keeps it quick) */
    for (int si = 0; si < NSHAPE; si++)
        for (int mode = 0; mode < 3; mode++)
            for (int v = 0; v < 6; v++) { /* 0-3: x_names; 4: transposed x; 5: bias */
                if (v > 0 && si != 1 && si != 2) continue;
                int xk = v < 4 ? v : 0, tr = v == 4, bias = v == 5;
                cf_case c = {.family = "qmatmul", .dtype = FF_F32, .level = CF_LEVEL_VTABLE, .run = run, .kind = -1,
                             .p = {si, mode, xk, tr, bias}};
                snprintf(c.op, sizeof c.op, "dyn.%s.%s.%s%s%s", mode_names[mode], shapes[si].name, x_names[xk],
                         tr ? ".x_tr" : "", bias ? ".bias" : "");
                snprintf(c.id, sizeof c.id, "qmatmul.%s", c.op);
                cf_register(&c);
            }
}
