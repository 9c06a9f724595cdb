/* Family "op": public ops (broadcasting, promotion, keepdim, numpy matmul, losses,
 * shape ops) on the backend under test vs the same calls on the reference, with
 * inputs given as contiguous tensors and as transposed / stepped / offset views; a
 * closed form where one is cheap (sums, matmul, softmax, cross-entropy, mse). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

typedef struct op_out {
    ff_tensor *y;
    ff_status st;
    char err[512];
    char desc[512]; /* input views as the op saw them */
} op_out;

static void describe_inputs(char *buf, size_t n, int nin, ff_tensor *const *in)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < nin && in[i] && len < n; i++) {
        char sh[96], st[96];
        cf_shape_str(sh, sizeof sh, ff_tensor_ndim(in[i]), ff_tensor_shape(in[i]));
        cf_shape_str(st, sizeof st, ff_tensor_ndim(in[i]), ff_tensor_strides(in[i]));
        len += (size_t)snprintf(buf + len, n - len, " in%d:%s%s strides=%s offset=%" PRId64, i,
                                ff_dtype_name(ff_tensor_dtype(in[i])), sh, st, ff_tensor_offset(in[i]));
    }
}

/* Runs def on backend be with the given host inputs. */
static void run_on(ff_backend *be, const cf_opdef *def, ff_dtype dt, cf_variant v, void *const *vals, op_out *o)
{
    ff_tensor *in[CF_OP_MAX_IN] = {NULL}, *base[CF_OP_MAX_IN] = {NULL};
    memset(o, 0, sizeof *o);
    for (int i = 0; i < def->nin; i++) {
        in[i] = cf_make_input(be, vals[i], def->ndim[i], def->shape[i], cf_op_input_dtype(def, i, dt), v, &base[i]);
        if (!in[i]) {
            o->st = ff_last_status();
            snprintf(o->err, sizeof o->err, "building input %d: %s", i, ff_last_error());
            goto done;
        }
    }
    describe_inputs(o->desc, sizeof o->desc, def->nin, in);
    ff_clear_error();
    o->y = def->call(in);
    if (!o->y) {
        o->st = ff_last_status() ? ff_last_status() : FF_ERR_INVALID;
        snprintf(o->err, sizeof o->err, "%s", ff_last_error());
    }
done:
    for (int i = 0; i < def->nin; i++) {
        ff_tensor_release(in[i]);
        ff_tensor_release(base[i]);
    }
}

static cf_result report(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why, const char *desc)
{
    char rerun[300];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | op=%s dtype=%s variant=%s%s seed=%" PRIu64 " | rerun: %s", why, cs->op,
             ff_dtype_name(cs->dtype), cf_variant_name((cf_variant)cs->p[1]), desc, ctx->seed, rerun);
    return CF_FAIL;
}

static bool same_shape(const ff_tensor *a, const ff_tensor *b)
{
    if (ff_tensor_ndim(a) != ff_tensor_ndim(b)) return false;
    for (int d = 0; d < ff_tensor_ndim(a); d++)
        if (ff_tensor_shape(a)[d] != ff_tensor_shape(b)[d]) return false;
    return true;
}

static bool values_ok(const void *got, const void *want, const ff_tensor *y, const cf_opdef *def, const char *what,
                      char *why, size_t n)
{
    ff_dtype ydt = ff_tensor_dtype(y);
    int64_t cnt = ff_tensor_numel(y);
    cf_tol tol = cf_tolerance(ydt, def->cls, def->k);
    cf_diff d;
    if (cf_compare(got, want, ydt, cnt, tol, def->cls == CF_TOL_EXACT, &d)) return true;
    char idx[96], sh[96];
    cf_index_str(idx, sizeof idx, ff_tensor_ndim(y), ff_tensor_shape(y), d.first);
    cf_shape_str(sh, sizeof sh, ff_tensor_ndim(y), ff_tensor_shape(y));
    snprintf(why, n,
             "%s: %" PRId64 " of %" PRId64 " elements of %s%s differ (%s rtol=%.3g atol=%.3g) max_abs=%.6g max_rel=%.6g "
             "first at %s: got %.17g want %.17g",
             what, d.n_bad, cnt, ff_dtype_name(ydt), sh, cf_tol_class_name(def->cls), tol.rtol, tol.atol, d.max_abs,
             d.max_rel, idx, d.got, d.want);
    return false;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    const cf_opdef *def = &cf_optable[cs->p[0]];
    cf_variant v = (cf_variant)cs->p[1];
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    void *vals[CF_OP_MAX_IN] = {NULL};
    for (int i = 0; i < def->nin; i++) vals[i] = cf_op_input_values(def, i, cs->dtype, &rng);
    op_out t, r;
    const bool same = ctx->t == ctx->r;
    run_on(ctx->t, def, cs->dtype, v, vals, &t);
    /* A backend without the optional softmax entry runs the core's composition: so does
     * the reference then, or the case would compare the composition with the reference's
     * kernel (they differ in the sign of an exact zero, log_softmax's -0 in a row whose
     * other terms underflow: ops/softmax.c) instead of the backend's kernels with its. */
    const bool compose = !same && !ff_backend_has_softmax(ctx->t);
    if (compose) ff_ops_force_compose(FF_KIND_SOFTMAX, true);
    if (!same) run_on(ctx->r, def, cs->dtype, v, vals, &r);
    else r = t, r.y = ff_tensor_retain(t.y);
    if (compose) ff_ops_force_compose(FF_KIND_SOFTMAX, false);
    cf_result res = CF_PASS;
    char why[1000];
    void *ht = NULL, *hr = NULL, *ex = NULL;
    if (!t.y && t.st == FF_ERR_UNSUPPORTED && r.y) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines: %s", t.err);
        rep->coverage_gap = true;
        res = CF_SKIP;
    } else if (!t.y) {
        snprintf(why, sizeof why, "backend failed (%s): %s", ff_status_name(t.st), t.err);
        res = report(rep, ctx, cs, why, t.desc);
    } else if (!r.y) {
        snprintf(why, sizeof why, "reference failed (%s): %s", ff_status_name(r.st), r.err);
        res = report(rep, ctx, cs, why, t.desc);
    } else if (!same_shape(t.y, r.y) || ff_tensor_dtype(t.y) != ff_tensor_dtype(r.y)) {
        char a[96], b[96];
        cf_shape_str(a, sizeof a, ff_tensor_ndim(t.y), ff_tensor_shape(t.y));
        cf_shape_str(b, sizeof b, ff_tensor_ndim(r.y), ff_tensor_shape(r.y));
        snprintf(why, sizeof why, "result is %s%s, reference gives %s%s", ff_dtype_name(ff_tensor_dtype(t.y)), a,
                 ff_dtype_name(ff_tensor_dtype(r.y)), b);
        res = report(rep, ctx, cs, why, t.desc);
    } else if (!(ht = cf_tensor_to_host(t.y)) || !(hr = cf_tensor_to_host(r.y))) {
        snprintf(why, sizeof why, "reading the result back failed: %s", ff_last_error());
        res = report(rep, ctx, cs, why, t.desc);
    } else if (!values_ok(ht, hr, t.y, def, "backend vs reference", why, sizeof why)) {
        res = report(rep, ctx, cs, why, t.desc);
    } else if (def->closed && ff_dtype_is_float(ff_tensor_dtype(t.y))) {
        /* the closed form, from the inputs as doubles, rounded to the result dtype */
        double *in64[CF_OP_MAX_IN] = {NULL};
        int64_t ny = ff_tensor_numel(t.y);
        double *out64 = calloc((size_t)(ny ? ny : 1), sizeof *out64);
        ex = calloc((size_t)(ny ? ny : 1), ff_dtype_size(ff_tensor_dtype(t.y)));
        if (!out64 || !ex) abort();
        for (int i = 0; i < def->nin; i++) {
            ff_dtype it = cf_op_input_dtype(def, i, cs->dtype);
            int64_t ni = cf_numel(def->ndim[i], def->shape[i]);
            in64[i] = calloc((size_t)(ni ? ni : 1), sizeof(double));
            if (!in64[i]) abort();
            for (int64_t j = 0; j < ni; j++) in64[i][j] = cf_get_f(vals[i], it, j);
        }
        def->closed((const double *const *)in64, out64);
        for (int64_t j = 0; j < ny; j++) cf_set_f(ex, ff_tensor_dtype(t.y), j, out64[j]);
        if (!values_ok(ht, ex, t.y, def, "backend vs closed form", why, sizeof why) ||
            !values_ok(hr, ex, r.y, def, "REFERENCE vs closed form", why, sizeof why))
            res = report(rep, ctx, cs, why, t.desc);
        for (int i = 0; i < def->nin; i++) free(in64[i]);
        free(out64);
    }
    free(ht);
    free(hr);
    free(ex);
    ff_tensor_release(t.y);
    ff_tensor_release(r.y);
    for (int i = 0; i < def->nin; i++) free(vals[i]);
    return res;
}

/* The ops that run on C64/C128 too: on the reference natively (backends/cpu/cpu_complex.c)
 * for the entries it takes, and on a backend that declines complex through the core's
 * composition from real views (core/kernel_complex.c), so the composition is checked
 * against the oracle; ops/complex.c composes the rest (exp, log, ...) from real ops on
 * both sides. */
static const char *const complex_ops[] = {
    "add_bcast", "sub", "mul_bcast", "div", "mul_scalar", "add_scalar", "rsub_scalar", "where", "eq", "exp", "log",
    "sqrt", "square", "reciprocal", "sin", "cos", "abs", "neg", "sum_axis1_keepdim", "sum_all", "mean_axes02",
    "matmul_2d", "matmul_1d_2d", "matmul_2d_1d", "matmul_1d_1d", "matmul_batched_bcast", "outer", "gather_axis1",
    "scatter_add_axis0", "index_select", "concat_axis1", "stack_axis0", "flip_last", "repeat", "tile", "reshape",
    "contiguous", "clone", "index_2d", "index_put_accumulate"};

static bool takes_complex(const char *name)
{
    for (size_t i = 0; i < sizeof complex_ops / sizeof complex_ops[0]; i++)
        if (!strcmp(complex_ops[i], name)) return true;
    return false;
}

void cf_gen_ops(void)
{
    /* the half dtypes reach every optional entry (conv2d, scan, sort, batch_norm, pool2d,
     * linalg, fft) through the public ops: natively where a backend takes half, else
     * through the core's f32 detour */
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_F16, FF_BF16, FF_C64, FF_C128};
    for (int k = 0; k < cf_noptable; k++) {
        const cf_opdef *def = &cf_optable[k];
        bool all_fixed = true;
        for (int i = 0; i < def->nin; i++) all_fixed &= def->fixed[i] != FF_DTYPE_COUNT;
        for (int di = 0; di < (int)(sizeof dts / sizeof dts[0]); di++) {
            ff_dtype dt = dts[di];
            if (all_fixed && di > 0) break; /* the case dtype is irrelevant */
            if (ff_dtype_is_complex(dt) ? !takes_complex(def->name) : !ff_dtype_is_float(dt) && !def->ints) continue;
            for (int v = 0; v < CF_V_COUNT; v++) {
                cf_case c = {.family = "op", .dtype = all_fixed ? def->fixed[0] : dt, .level = CF_LEVEL_OP,
                             .run = run, .kind = -1, .p = {k, v}};
                snprintf(c.op, sizeof c.op, "%s", def->name);
                snprintf(c.id, sizeof c.id, "op.%s.%s.%s", def->name, ff_dtype_name(c.dtype),
                         cf_variant_name((cf_variant)v));
                cf_register(&c);
            }
        }
    }
}
