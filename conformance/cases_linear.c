/* Family "linear": ff_linear_act (act(x W^T + b)) in inference three ways: on the backend
 * under test as it runs (its linear entry, or the composition when it has none or
 * declines), on the same backend with the composition forced (matmul, add, act: the
 * rounding after each step is the only difference a half may show), and on the cpu
 * reference. Scenarios cross the activations the ABI names, with and without a bias, a
 * 1-D x, a batch of rows, MiniLM's shapes (the products cpu_blas runs on oneDNN, column
 * blocks included), a weight stored transposed, K = 1 and N = 1, and x holding a
 * subnormal (which oneDNN's bf16 kernels read as zero: the entry must decline to its
 * exact path); x contiguous, and transposed for f32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

typedef struct lin_scen {
    const char *name;
    int nd;
    int64_t xshape[3]; /* [..., K] */
    int64_t n;
    bool bias, w_t, subnormal;
    int act;
} lin_scen;

static const lin_scen scens[] = {
    {"m5_k7_n3", 2, {5, 7}, 3, true, false, false, FF_LINEAR_NO_ACT},
    {"x1d_k9_n4_relu", 1, {9}, 4, true, false, false, FF_UNARY_RELU},
    {"m16_k64_n32_relu_nobias", 2, {16, 64}, 32, false, false, false, FF_UNARY_RELU},
    {"m8_k33_n17_gelu_tanh", 2, {8, 33}, 17, true, false, false, FF_UNARY_GELU_TANH},
    {"m6_k20_n12_tanh", 2, {6, 20}, 12, true, false, false, FF_UNARY_TANH},
    {"m6_k20_n12_sigmoid", 2, {6, 20}, 12, true, false, false, FF_UNARY_SIGMOID},
    {"m6_k20_n12_silu", 2, {6, 20}, 12, true, false, false, FF_UNARY_SILU},
    {"k1_n5", 2, {4, 1}, 5, true, false, false, FF_LINEAR_NO_ACT},
    {"n1_gelu", 2, {4, 12}, 1, true, false, false, FF_UNARY_GELU_ERF},
    {"minilm_qkv_2x10x384", 3, {2, 10, 384}, 1152, true, false, false, FF_LINEAR_NO_ACT},
    {"minilm_inter_40x384_gelu", 2, {40, 384}, 1536, true, false, false, FF_UNARY_GELU_ERF},
    {"minilm_out_1x1536", 2, {1, 1536}, 384, true, false, false, FF_LINEAR_NO_ACT},
    {"w_transposed_64x96_n80_gelu", 2, {64, 96}, 80, true, true, false, FF_UNARY_GELU_ERF},
    {"subnormal_x_64x128_n96", 2, {64, 128}, 96, true, false, true, FF_UNARY_GELU_ERF},
};
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))

static int64_t k_of(const lin_scen *s) { return s->xshape[s->nd - 1]; }

/* Host values: 0 x, 1 weight [N, K] (row-major; the w_t scenarios store it [K, N] and
 * pass the transposed view), 2 bias [N]. Magnitudes as the matmul rows' (CF_DOM_UNIT). */
static void *values(const lin_scen *s, int which, ff_dtype dt, cf_rng *rng)
{
    int64_t k = k_of(s), n = which == 0 ? cf_numel(s->nd, s->xshape) : which == 1 ? s->n * k : s->n;
    void *p = calloc((size_t)(n ? n : 1), ff_dtype_size(dt));
    if (!p) abort();
    cf_fill_values(rng, p, dt, n, CF_DOM_UNIT);
    if (which == 0 && s->subnormal) /* three times the smallest subnormal of the dtype */
        cf_set_f(p, dt, n / 2, 3 * ldexp(1.0, dt == FF_F16 ? -24 : dt == FF_F64 ? -1074 : -149));
    return p;
}

static void run_on(ff_backend *be, const lin_scen *s, ff_dtype dt, cf_variant var, void *const *vals, cf_entry_run *r)
{
    memset(r, 0, sizeof *r);
    int64_t k = k_of(s), wshape[2] = {s->w_t ? k : s->n, s->w_t ? s->n : k};
    ff_tensor *base = NULL, *x = NULL, *w = NULL, *wv = NULL, *b = NULL;
    ff_tensor *tmp = cf_make_input(be, vals[0], s->nd, s->xshape, dt, var, &base);
    ff_tensor_release(tmp);
    if (!base || !(x = cf_view_of(base, var))) r->st = ff_last_status();
    if (!r->st && s->w_t) { /* [K, N] holding W^T, so that W is a transposed view */
        int64_t n = s->n;
        char *h = malloc((size_t)(n * k) * ff_dtype_size(dt));
        if (!h) abort();
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < k; j++)
                memcpy(h + (size_t)(j * n + i) * ff_dtype_size(dt), (char *)vals[1] + (size_t)(i * k + j) * ff_dtype_size(dt),
                       ff_dtype_size(dt));
        w = ff_from_data_on(be, h, 2, wshape, dt);
        free(h);
        wv = w ? ff_mT(w) : NULL;
    } else if (!r->st) {
        w = ff_from_data_on(be, vals[1], 2, wshape, dt);
        wv = w ? ff_tensor_retain(w) : NULL;
    }
    if (!r->st && !wv) r->st = ff_last_status();
    if (!r->st && s->bias && !(b = ff_from_data_on(be, vals[2], 1, &s->n, dt))) r->st = ff_last_status();
    bool grad = ff_set_grad_enabled(false);
    if (!r->st && !(r->out[0] = ff_linear_act(x, wv, b, s->act))) r->st = ff_last_status();
    ff_set_grad_enabled(grad);
    if (r->st) snprintf(r->err, sizeof r->err, "%s", ff_last_error());
    ff_tensor_release(x), ff_tensor_release(base), ff_tensor_release(w), ff_tensor_release(wv), ff_tensor_release(b);
}

static cf_result fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why)
{
    return cf_fail(rep, ctx, cs, why, "op=linear.%s dtype=%s variant=%s", scens[cs->p[0]].name,
                   ff_dtype_name(cs->dtype), cf_variant_name((cf_variant)cs->p[1]));
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const lin_scen *s = &scens[cs->p[0]];
    cf_variant var = (cf_variant)cs->p[1];
    ff_dtype dt = cs->dtype;
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals[3];
    for (int i = 0; i < 3; i++) vals[i] = values(s, i, dt, &rng);
    cf_entry_run runs[3]; /* the backend as it runs, its composition, the reference */
    run_on(ctx->t, s, dt, var, vals, &runs[0]);
    ff_ops_force_compose(FF_KIND_LINEAR, true);
    run_on(ctx->t, s, dt, var, vals, &runs[1]);
    ff_ops_force_compose(FF_KIND_LINEAR, false);
    if (ctx->t != ctx->r) run_on(ctx->r, s, dt, var, vals, &runs[2]);
    else memset(&runs[2], 0, sizeof runs[2]);
    static const char *const names[1] = {"y"};
    int64_t ks[1] = {k_of(s) + 1}; /* the bias is one more term of the sum */
    cf_result res = CF_PASS;
    char why[1200];
    if (!cf_entry_compare(runs, ctx->t != ctx->r, 1, names, ks, why, sizeof why))
        res = fail(rep, ctx, cs, why);
    for (int r = 0; r < 3; r++) cf_entry_run_free(&runs[r]);
    for (int i = 0; i < 3; i++) free(vals[i]);
    return res;
}

void cf_gen_linear(void)
{
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    static const cf_variant variants[] = {CF_V_CONTIG, CF_V_TRANSPOSED};
    for (int si = 0; si < NSCEN; si++)
        for (int di = 0; di < 4; di++)
            for (int vi = 0; vi < (di == 0 && scens[si].nd >= 2 ? 2 : 1); vi++) {
                cf_case c = {.family = "linear", .dtype = dts[di], .level = CF_LEVEL_OP, .run = run, .kind = -1,
                             .p = {si, (int)variants[vi]}};
                snprintf(c.op, sizeof c.op, "%s", scens[si].name);
                snprintf(c.id, sizeof c.id, "linear.%s.%s.%s", scens[si].name, ff_dtype_name(dts[di]),
                         cf_variant_name(variants[vi]));
                cf_register(&c);
            }
}
