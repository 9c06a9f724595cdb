/*
 * Family "qmatmul": the optional qmatmul entry (backend_abi.h, ff_qmatmul_params), driven
 * through the core's wrapper on odd M, N, K (and empty ones), with a and b dense,
 * transposed storage or stepped (every other column), dst dense or transposed, with and
 * without a bias, with one activation scale or one per row. The expectation is the ABI's
 * definition computed here: the integer sum exactly, then scaled in double; got may
 * differ from it by the f32 roundings the ABI allows (a relative 2^-21 of the product's
 * and the bias's magnitudes). The full u8 and s8 ranges are drawn,
 * so a kernel that pairs u8 x s8 products in s16 (vpmaddubsw) saturates and fails.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"

typedef struct q_shape {
    const char *name;
    int64_t m, n, k;
} q_shape;

static const q_shape shapes[] = {
    {"1x1x1", 1, 1, 1}, {"3x5x7", 3, 5, 7}, {"17x33x65", 17, 33, 65}, {"64x96x384", 64, 96, 384},
    {"0x4x8", 0, 4, 8}, {"5x3x0", 5, 3, 0},
};
#define NSHAPE ((int)(sizeof shapes / sizeof shapes[0]))

/* Layouts: 0 dense, 1 transposed storage, 2 stepped (a, b only). */
static const char *const lay_names[] = {"dense", "tr", "step"};

typedef struct q_in {
    uint8_t *a, *b; /* logical [M, K] and [N, K], row-major */
    float *scale, *bias, *row;
    ff_qmatmul_params p;
} q_in;

/* A [rows, cols] U8 or F32 tensor view with the layout asked for; the caller releases it. */
static ff_tensor *make_view(ff_backend *be, const void *vals, int64_t rows, int64_t cols, ff_dtype dt, int lay)
{
    size_t es = ff_dtype_size(dt);
    int64_t n = rows * cols;
    ff_tensor *base = NULL, *v = NULL;
    if (lay == 0) return ff_from_data_on(be, vals, 2, (int64_t[]){rows, cols}, dt);
    unsigned char *h = calloc((size_t)(2 * n + 1), es);
    if (!h) return NULL;
    if (lay == 1) { /* storage [cols, rows], transposed back */
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) memcpy(h + (size_t)(j * rows + i) * es, (const char *)vals + (size_t)(i * cols + j) * es, es);
        base = ff_from_data_on(be, h, 2, (int64_t[]){cols, rows}, dt);
        v = base ? ff_transpose(base, 0, 1) : NULL;
    } else { /* storage [rows, 2 cols], every other column */
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) memcpy(h + (size_t)(i * 2 * cols + 2 * j) * es, (const char *)vals + (size_t)(i * cols + j) * es, es);
        base = ff_from_data_on(be, h, 2, (int64_t[]){rows, 2 * cols}, dt);
        v = base ? ff_slice(base, 1, 0, 2 * cols, 2) : NULL;
    }
    ff_tensor_release(base);
    free(h);
    return v;
}

/* y [M, N] (row-major floats, malloc'ed) on be, or NULL with *st and err set. */
static float *run_on(ff_backend *be, const q_shape *s, const q_in *in, int la, int lb, int ly, ff_status *st, char *err,
                     size_t n_err)
{
    ff_tensor *a = make_view(be, in->a, s->m, s->k, FF_U8, la), *b = make_view(be, in->b, s->n, s->k, FF_U8, lb);
    ff_tensor *sc = ff_from_data_on(be, in->scale, 1, (int64_t[]){s->n}, FF_F32);
    ff_tensor *bi = in->p.has_bias ? ff_from_data_on(be, in->bias, 1, (int64_t[]){s->n}, FF_F32) : NULL;
    ff_tensor *ro = in->p.a_per_row ? ff_from_data_on(be, in->row, 1, (int64_t[]){s->m}, FF_F32) : NULL;
    ff_tensor *ybase = ly ? ff_empty_on(be, 2, (int64_t[]){s->n, s->m}, FF_F32) : ff_empty_on(be, 2, (int64_t[]){s->m, s->n}, FF_F32);
    ff_tensor *y = ybase && ly ? ff_transpose(ybase, 0, 1) : ff_tensor_retain(ybase), *yc = NULL;
    float *out = NULL;
    *st = FF_OK;
    if (!a || !b || !sc || (in->p.has_bias && !bi) || (in->p.a_per_row && !ro) || !y) *st = ff_last_status();
    else {
        const ff_tensor *src[5] = {a, b, sc};
        int n = 3;
        if (bi) src[n++] = bi;
        if (ro) src[n++] = ro;
        *st = ff_kernel_qmatmul(y, src, n, &in->p, "conformance qmatmul");
        if (!*st && (yc = ff_contiguous(y))) {
            out = malloc((size_t)(s->m * s->n + 1) * sizeof(float));
            if (out && ff_tensor_to_host(yc, out, (size_t)(s->m * s->n) * sizeof(float))) free(out), out = NULL;
        }
        if (!*st && !out) *st = ff_last_status() ? ff_last_status() : FF_ERR_OOM;
    }
    if (*st) snprintf(err, n_err, "%s", ff_last_error());
    ff_tensor_release(a), ff_tensor_release(b), ff_tensor_release(sc), ff_tensor_release(bi), ff_tensor_release(ro);
    ff_tensor_release(ybase), ff_tensor_release(y), ff_tensor_release(yc);
    return out;
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    return cf_fail(rep, ctx, cs, why, "op=qmatmul.%s", cs->op);
}

/* The first element of got off want by more than the ABI's slack (relative to mag, the
 * product's and the bias's magnitudes), or -1. */
static int64_t first_bad(const float *got, const double *want, const double *mag, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= 0x1p-21 * mag[i] + 0x1p-126)) return i;
    return -1;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const q_shape *s = &shapes[cs->p[0]];
    int la = cs->p[1], lb = cs->p[2], ly = cs->p[3];
    if (!ff_backend_supports(ctx->t, FF_KIND_QMATMUL, 0, FF_U8)) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines: no qmatmul entry (int8 matmul)");
        rep->coverage_gap = true;
        return CF_SKIP;
    }
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    q_in in = {.p = {.a_scale = (float)cf_rng_uniform(&rng, 1e-3, 0.1), .a_zero = (int32_t)cf_rng_int(&rng, 0, 255),
                     .has_bias = cs->p[4], .a_per_row = cs->p[5]}};
    in.a = malloc((size_t)(s->m * s->k + 1)), in.b = malloc((size_t)(s->n * s->k + 1));
    in.scale = malloc((size_t)(s->n + 1) * sizeof(float)), in.bias = malloc((size_t)(s->n + 1) * sizeof(float));
    in.row = malloc((size_t)(s->m + 1) * sizeof(float));
    double *want = malloc((size_t)(s->m * s->n + 1) * sizeof(double));
    double *mag = malloc((size_t)(s->m * s->n + 1) * sizeof(double));
    if (!in.a || !in.b || !in.scale || !in.bias || !in.row || !want || !mag) abort();
    for (int64_t i = 0; i < s->m * s->k; i++) in.a[i] = (uint8_t)cf_rng_int(&rng, 0, 255);
    for (int64_t i = 0; i < s->n * s->k; i++) in.b[i] = (uint8_t)cf_rng_int(&rng, 0, 255); /* s8 bits: all of -128..127 */
    for (int64_t i = 0; i < s->n; i++)
        in.scale[i] = (float)cf_rng_uniform(&rng, 1e-4, 1e-2), in.bias[i] = (float)cf_rng_uniform(&rng, -1, 1);
    for (int64_t i = 0; i < s->m; i++) in.row[i] = (float)cf_rng_uniform(&rng, 1e-3, 0.1);
    for (int64_t m = 0; m < s->m; m++)
        for (int64_t n = 0; n < s->n; n++) {
            int64_t acc = 0;
            for (int64_t k = 0; k < s->k; k++) acc += ((int64_t)in.a[m * s->k + k] - in.p.a_zero) * (int8_t)in.b[n * s->k + k];
            double y = (double)acc * (in.p.a_per_row ? in.row[m] : in.p.a_scale) * in.scale[n];
            double bias = in.p.has_bias ? in.bias[n] : 0.0;
            want[m * s->n + n] = y + bias, mag[m * s->n + n] = fabs(y) + fabs(bias);
        }
    cf_result res = CF_PASS;
    char err[600], why[1400];
    for (int r = 0; r < 2 && res == CF_PASS; r++) {
        if (r == 1 && ctx->t == ctx->r) break;
        ff_status st;
        float *got = run_on(r ? ctx->r : ctx->t, s, &in, la, lb, ly, &st, err, sizeof err);
        if (!got) {
            snprintf(why, sizeof why, "%s failed (%s): %s", r ? "the reference" : "the entry", ff_status_name(st), err);
            res = fail(rep, ctx, cs, why);
        } else {
            int64_t i = first_bad(got, want, mag, s->m * s->n);
            if (i >= 0) {
                snprintf(why, sizeof why, "%s: y[%" PRId64 ", %" PRId64 "] of f32[%" PRId64 ", %" PRId64 "] (K=%" PRId64
                         ") got %.9g want %.9g (tolerance 2^-21 of %.9g: exact s32 sums, f32 scaling)",
                         r ? "reference vs definition" : "backend vs definition", i / s->n, i % s->n, s->m, s->n, s->k,
                         (double)got[i], want[i], mag[i]);
                res = fail(rep, ctx, cs, why);
            }
        }
        free(got);
    }
    free(in.a), free(in.b), free(in.scale), free(in.bias), free(in.row), free(want), free(mag);
    return res;
}

void cf_gen_qmatmul(void)
{
    /* every shape dense with and without bias; the layouts on two shapes (keeps it quick) */
    static const int lays[][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {2, 2, 0}, {0, 0, 1}, {1, 1, 1}};
    for (int si = 0; si < NSHAPE; si++)
        for (int li = 0; li < 6; li++)
            for (int v = 0; v < 3; v++) { /* 0 plain, 1 bias, 2 bias and per-row scales */
                if (li > 0 && si != 2 && si != 3) continue;
                if (li > 0 && v && !(li == 5 && v == 2)) continue;
                cf_case c = {.family = "qmatmul", .dtype = FF_U8, .level = CF_LEVEL_VTABLE, .run = run, .kind = -1,
                             .p = {si, lays[li][0], lays[li][1], lays[li][2], v > 0, v == 2}};
                snprintf(c.op, sizeof c.op, "%s.a_%s.b_%s%s%s", shapes[si].name, lay_names[lays[li][0]],
                         lay_names[lays[li][1]], lays[li][2] ? ".y_tr" : "", v == 2 ? ".bias.rows" : v ? ".bias" : "");
                snprintf(c.id, sizeof c.id, "qmatmul.%s", c.op);
                cf_register(&c);
            }
}
