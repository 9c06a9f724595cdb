/* Vtable family "fused": the optional fused entry (ff_fused_program, backend_abi.h), for
 * every dtype whose supports(FF_KIND_FUSED, 0, dtype) the backend under test answers yes
 * (a backend without the entry skips them: the core then runs the chains through unary
 * and binary itself).
 *
 * A case builds a program over views of exact layouts (inputs with values in their gaps,
 * outputs sentinel-filled, as cf_exec does), runs it once through the fused entry and once
 * instruction by instruction through the same backend's plain unary/binary entries, with
 * the temporaries as contiguous tensors, and requires every buffer to come out byte for
 * byte the same (a NaN matches any NaN): the ABI asks for bit-identical results (F16 and
 * BF16 too, where a backend takes them: each value rounds to the half). Programs:
 * a broadcast multiply-add under relu, a transcendental chain, two outputs (one read back),
 * in-place programs (an output that is an input's value, and one that is the identical
 * view under another value index, read after it is written), one operand used twice and
 * temporaries overwritten. Layouts: 0-d, zero-size, odd shapes off any tile size
 * ([3, 1000, 7]), broadcast on the first and the last axis, transposed, stepped, padded,
 * size-1 dims, special values, and sizes past the threading and streaming thresholds.
 * "fused.refuse_declined_op.*": a program with an op the backend declines must fail and
 * leave every buffer as it was. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"

#define FZ_MAX_VALUES 8
#define FZ_MAX_INST 10

typedef struct fz_prog {
    const char *name;
    int n_in, n_out; /* views: inputs 0 .. n_in - 1, then outputs */
    int alias_in;    /* >= 0: the first output is the identical view of this input */
    int n_values, n_inst;
    ff_fused_inst inst[FZ_MAX_INST];
} fz_prog;

#define U(op, d, a) {FF_KIND_UNARY, FF_UNARY_##op, d, {a, 0}}
#define B(op, d, a, b) {FF_KIND_BINARY, FF_BINARY_##op, d, {a, b}}

static const fz_prog progs[] = {
    /* relu(a * b + c), c broadcast by most scenarios */
    {"relu_mul_add", 3, 1, -1, 6, 3, {B(MUL, 4, 0, 1), B(ADD, 5, 4, 2), U(RELU, 3, 5)}},
    /* the vmath kernels (exp, tanh, sigmoid, log) between sub, div and maximum; t5 and t6
     * are written twice */
    {"chain_exp_tanh_sigmoid", 2, 1, -1, 7, 7,
     {U(EXP, 3, 0), U(TANH, 4, 1), B(SUB, 5, 3, 4), U(SIGMOID, 6, 5), B(DIV, 5, 6, 3), U(LOG, 6, 5),
      B(MAXIMUM, 2, 6, 4)}},
    /* two outputs, the first read back by later instructions */
    {"two_outputs", 2, 2, -1, 6, 5,
     {B(ADD, 2, 0, 1), B(MUL, 4, 2, 0), U(SQUARE, 4, 4), B(MINIMUM, 5, 4, 1), U(NEG, 3, 5)}},
    /* in place: value 0 (input a) is overwritten at the end */
    {"inplace_value", 2, 0, -1, 3, 3, {B(MUL, 2, 0, 1), U(SILU, 2, 2), B(ADD, 0, 2, 0)}},
    /* in place through another value: out (2) is a's identical view, and a is read after
     * out has been written (op by op, it then holds the new values) */
    {"inplace_alias", 2, 1, 0, 4, 3, {U(SIGMOID, 3, 0), B(MUL, 2, 3, 1), B(SUB, 2, 2, 0)}},
    /* one operand twice, an output as a temporary, pow / fmod / atan2 through the
     * per-element rules */
    {"same_operand_pow", 1, 1, -1, 4, 7,
     {B(MUL, 2, 0, 0), B(ADD, 2, 2, 2), U(ABS, 3, 0), U(SQRT, 3, 3), B(POW, 3, 3, 2), B(FMOD, 3, 3, 0),
      B(ATAN2, 1, 3, 2)}},
    /* the exact ops (cpu_blas runs such programs in vector registers): an output read
     * back after it is written, the second output's last write streamed when big */
    {"exact_ops", 2, 2, -1, 6, 8,
     {B(SUB, 4, 0, 1), U(ABS, 5, 4), U(SQRT, 5, 5), B(DIV, 2, 5, 1), U(RECIPROCAL, 4, 2), U(SQUARE, 4, 4),
      U(NEG, 5, 0), B(MUL, 3, 4, 5)}},
    /* exact ops in place through the identical view: out (2) is a's, and a is read after
     * out is written (so out = 2 (-a b) / b) */
    {"exact_alias", 2, 1, 0, 4, 4, {U(NEG, 3, 0), B(MUL, 2, 3, 1), B(ADD, 3, 2, 0), B(DIV, 2, 3, 1)}},
    /* libm functions (sin, cos, erf, gelu) */
    {"libm_mix", 2, 1, -1, 5, 6,
     {U(SIN, 3, 0), U(COS, 4, 1), B(MUL, 3, 3, 4), U(ERF, 4, 3), U(GELU_TANH, 3, 1), B(ADD, 2, 3, 4)}},
};
#define NPROG ((int)(sizeof progs / sizeof progs[0]))

typedef struct fz_scen {
    const char *name;
    int ndim;
    int64_t shape[4];
    cf_layout_kind in[3], out; /* input 0 is never broadcast: in-place programs write it */
    cf_domain dom;
} fz_scen;

#define C CF_L_CONTIG
static const fz_scen scens[] = {
    {"scalar", 0, {0}, {C, C, C}, C, CF_DOM_SIGNED},
    {"empty3x0", 2, {3, 0}, {C, CF_L_TRANSPOSED, C}, CF_L_OFFSET, CF_DOM_SIGNED},
    {"n1", 1, {1}, {C, C, CF_L_BCAST0}, C, CF_DOM_SIGNED},
    {"tiles3x1000x7", 3, {3, 1000, 7}, {C, C, CF_L_BCAST0}, C, CF_DOM_SIGNED},
    {"bcastlast64x33", 2, {64, 33}, {C, CF_L_OFFSET, CF_L_BCASTLAST}, C, CF_DOM_SIGNED},
    {"transposed37x29", 2, {37, 29}, {CF_L_TRANSPOSED, C, CF_L_TRANSPOSED}, CF_L_TRANSPOSED, CF_DOM_SIGNED},
    {"stepped19x23", 2, {19, 23}, {CF_L_STEPPED, CF_L_OFFSET, CF_L_PADDED}, CF_L_STEPPED, CF_DOM_SIGNED},
    {"padded40x50", 2, {40, 50}, {CF_L_PADDED, CF_L_BCAST0, C}, CF_L_PADDED, CF_DOM_SIGNED},
    {"size1dims2x1x3x1", 4, {2, 1, 3, 1}, {CF_L_STEPPED, CF_L_TRANSPOSED, CF_L_BCAST0}, CF_L_TRANSPOSED,
     CF_DOM_SIGNED},
    {"special7x9", 2, {7, 9}, {C, CF_L_OFFSET, C}, C, CF_DOM_SPECIAL},
    /* past BLAS_PAR_MIN and the like: tiles split across threads */
    {"large70001", 1, {70001}, {C, CF_L_OFFSET, C}, C, CF_DOM_SIGNED},
    {"large_t263x257", 2, {263, 257}, {CF_L_TRANSPOSED, C, CF_L_BCAST0}, CF_L_PADDED, CF_DOM_SIGNED},
    /* past the streaming-store threshold (BIG_PROGS only: it takes time) */
    {"big1048579", 1, {1048579}, {C, CF_L_OFFSET, CF_L_BCAST0}, C, CF_DOM_SIGNED},
};
#undef C
#define NSCEN ((int)(sizeof scens / sizeof scens[0]))
#define BIG_SCEN (NSCEN - 1)
/* relu_mul_add, two_outputs, inplace_value, exact_ops */
#define BIG_PROGS(pi) ((pi) == 0 || (pi) == 2 || (pi) == 3 || (pi) == 6)

static const char *const view_names[CF_MAX_OPERANDS] = {"a", "b", "c", "d"};
static const char *const out_names[2] = {"out", "out2"};

/* ---- running a program ------------------------------------------------------------ */
/* The views live in a cf_call (its operands, so cf_describe can print them). */
typedef struct fz_run {
    cf_call call;
    ff_dtype dt;
    int ndim;
    int64_t shape[FF_MAX_DIMS];
    int n_values, n_inst;
    const ff_fused_inst *inst;
} fz_run;

static void *xalloc(ff_backend *be, size_t nb, ff_status *st, char *err, size_t errn)
{
    void *p = be->vt->alloc(be->ctx, nb);
    if (!p && !*st) {
        *st = FF_ERR_OOM;
        snprintf(err, errn, "alloc(%zu) failed: %s", nb, ff_last_error());
    }
    return p;
}

/* Runs r on be through the fused entry (fused) or instruction by instruction through the
 * plain entries, each from the operands' initial contents; downloads every buffer into
 * after[] (caller frees). Returns the status, with the backend's message in err. */
static ff_status fz_exec(ff_backend *be, const fz_run *r, bool fused, unsigned char **after, char *err, size_t errn)
{
    const cf_call *c = &r->call;
    void *bufs[FZ_MAX_VALUES] = {0};
    ff_view v[FZ_MAX_VALUES];
    ff_status st = FF_OK;
    size_t es = ff_dtype_size(r->dt);
    int64_t numel = cf_numel(r->ndim, r->shape);
    memset(v, 0, sizeof v);
    for (int i = 0; i < c->nops && !st; i++) {
        const cf_operand *o = &c->o[i];
        if (o->alias >= 0) continue;
        size_t nb = (size_t)o->nelems * es;
        bufs[i] = xalloc(be, nb, &st, err, errn);
        if (bufs[i] && (st = be->vt->upload(be->ctx, bufs[i], 0, o->init, nb)))
            snprintf(err, errn, "upload failed: %s", ff_last_error());
    }
    for (int i = 0; i < r->n_values; i++) {
        v[i].dtype = r->dt;
        v[i].ndim = r->ndim;
        memcpy(v[i].shape, r->shape, sizeof r->shape);
        if (i < c->nops) { /* a view */
            const cf_operand *o = &c->o[i];
            v[i].buf = bufs[o->alias >= 0 ? o->alias : i];
            v[i].offset = o->offset;
            memcpy(v[i].strides, o->strides, sizeof o->strides);
        } else if (!fused) { /* a temporary of the op-by-op run: a contiguous tensor */
            bufs[i] = xalloc(be, (size_t)numel * es, &st, err, errn);
            v[i].buf = bufs[i];
            int64_t stride = 1;
            for (int d = r->ndim - 1; d >= 0; d--) {
                v[i].strides[d] = stride;
                stride *= r->shape[d];
            }
        }
    }
    if (!st) {
        ff_clear_error();
        if (fused) {
            ff_fused_program p = {.dtype = r->dt, .ndim = r->ndim, .n_views = c->nops, .views = v,
                                  .n_values = r->n_values, .n_inst = r->n_inst, .inst = r->inst};
            memcpy(p.shape, r->shape, sizeof r->shape);
            st = FF_VT_OPT(be, fused)(be->ctx, &p);
        } else {
            for (int i = 0; i < r->n_inst && !st; i++) {
                const ff_fused_inst *in = &r->inst[i];
                if (in->kind == FF_KIND_UNARY)
                    st = be->vt->unary(be->ctx, (ff_unary_op)in->op, &v[in->dst], &v[in->src[0]]);
                else
                    st = be->vt->binary(be->ctx, (ff_binary_op)in->op, &v[in->dst], &v[in->src[0]], &v[in->src[1]]);
            }
        }
        if (st) snprintf(err, errn, "%s", ff_last_error()[0] ? ff_last_error() : "(no message)");
        ff_status ss = be->vt->sync(be->ctx);
        if (!st && ss) snprintf(err, errn, "sync failed: %s", ff_last_error()), st = ss;
    }
    for (int i = 0; i < c->nops; i++) {
        const cf_operand *o = &c->o[i];
        if (o->alias >= 0 || !bufs[i]) continue;
        size_t nb = (size_t)o->nelems * es;
        after[i] = malloc(nb ? nb : 1);
        if (!after[i]) abort();
        ff_status ds = be->vt->download(be->ctx, bufs[i], 0, after[i], nb);
        if (ds && !st) snprintf(err, errn, "download failed: %s", ff_last_error()), st = ds;
    }
    for (int i = 0; i < FZ_MAX_VALUES; i++)
        if (bufs[i]) be->vt->free(be->ctx, bufs[i]);
    return st;
}

/* ---- reporting ------------------------------------------------------------------------ */
static void value_name(const fz_run *r, int v, char *buf, size_t n)
{
    int nin = r->call.nops;
    while (nin > 0 && r->call.o[nin - 1].output) nin--;
    if (v < nin) snprintf(buf, n, "%s", view_names[v]);
    else if (v < r->call.nops) snprintf(buf, n, "%s", r->call.o[v].name);
    else snprintf(buf, n, "t%d", v);
}

/* "out = relu(t5); ..." */
static void program_str(const fz_run *r, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < r->n_inst && len < n; i++) {
        const ff_fused_inst *in = &r->inst[i];
        char d[16], a[16], b[16];
        value_name(r, in->dst, d, sizeof d);
        value_name(r, in->src[0], a, sizeof a);
        value_name(r, in->src[1], b, sizeof b);
        const char *op = in->kind == FF_KIND_UNARY ? cf_unary_name(in->op) : cf_binary_name(in->op);
        if (in->kind == FF_KIND_UNARY) len += (size_t)snprintf(buf + len, n - len, "%s%s = %s(%s)", i ? "; " : "", d, op, a);
        else len += (size_t)snprintf(buf + len, n - len, "%s%s = %s(%s, %s)", i ? "; " : "", d, op, a, b);
    }
}

static cf_result fz_fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const fz_run *r, const char *what)
{
    char prog[400], desc[700], rerun[300];
    program_str(r, prog, sizeof prog);
    cf_describe(desc, sizeof desc, ctx, cs, &r->call);
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | program: %s | %s | rerun: %s", what, prog, desc, rerun);
    return CF_FAIL;
}

static bool same_elem(const unsigned char *g, const unsigned char *w, ff_dtype dt)
{
    size_t es = ff_dtype_size(dt);
    if (!memcmp(g, w, es)) return true;
    double gv = cf_get_f(g, dt, 0), wv = cf_get_f(w, dt, 0);
    return isnan(gv) && isnan(wv);
}

/* "-0.5 (0xbf000000)": a value with its bits */
static void value_str(const unsigned char *p, ff_dtype dt, char *buf, size_t n)
{
    uint64_t bits = 0;
    memcpy(&bits, p, ff_dtype_size(dt)); /* little-endian: the low bytes */
    snprintf(buf, n, dt == FF_F32 ? "%.9g (0x%08" PRIx64 ")" : "%.17g (0x%016" PRIx64 ")", cf_get_f(p, dt, 0), bits);
}

/* Compares operand i's whole buffers after the fused run (got) and the op-by-op one
 * (want), the view's elements first: false with the first difference in why. */
static bool same_buffer(const fz_run *r, int i, const unsigned char *got, const unsigned char *want, char *why, size_t n)
{
    const cf_operand *o = &r->call.o[i];
    size_t es = ff_dtype_size(r->dt);
    unsigned char *g = cf_operand_gather(o, got), *w = cf_operand_gather(o, want);
    int64_t bad = -1, numel = cf_numel(o->ndim, o->shape);
    for (int64_t k = 0; k < numel && bad < 0; k++)
        if (!same_elem(g + k * (int64_t)es, w + k * (int64_t)es, r->dt)) bad = k;
    char gs[64], ws[64], at[96];
    if (bad >= 0) {
        value_str(g + bad * (int64_t)es, r->dt, gs, sizeof gs);
        value_str(w + bad * (int64_t)es, r->dt, ws, sizeof ws);
        cf_index_str(at, sizeof at, o->ndim, o->shape, bad);
        snprintf(why, n, "fused vs op by op: %s%s: fused %s, op by op %s", o->name, at, gs, ws);
    }
    for (int64_t e = 0; e < o->nelems && bad < 0; e++) /* the view matches: outside it, then */
        if (!same_elem(got + e * (int64_t)es, want + e * (int64_t)es, r->dt)) {
            bad = e;
            value_str(got + e * (int64_t)es, r->dt, gs, sizeof gs);
            value_str(want + e * (int64_t)es, r->dt, ws, sizeof ws);
            snprintf(why, n, "fused vs op by op: %s's buffer element %" PRId64 ", outside the view: fused %s, op by op %s",
                     o->name, e, gs, ws);
        }
    free(g);
    free(w);
    return bad < 0;
}

/* ---- the cases -------------------------------------------------------------------------- */
/* Builds the views of program pg on scenario sc. */
static void fz_build(fz_run *r, const fz_prog *pg, const fz_scen *sc, ff_dtype dt, cf_rng *rng)
{
    memset(r, 0, sizeof *r);
    r->call.kind = FF_KIND_FUSED;
    r->dt = dt;
    r->ndim = sc->ndim;
    memcpy(r->shape, sc->shape, sizeof sc->shape);
    for (int k = 0; k < pg->n_in; k++)
        cf_operand_init(&r->call.o[k], view_names[k], dt, sc->ndim, sc->shape, sc->in[k], false, rng, sc->dom);
    for (int k = 0; k < pg->n_out; k++) {
        cf_operand *o = &r->call.o[pg->n_in + k];
        if (k == 0 && pg->alias_in >= 0) cf_operand_alias(o, out_names[k], &r->call.o[pg->alias_in], pg->alias_in);
        else cf_operand_init(o, out_names[k], dt, sc->ndim, sc->shape, sc->out, true, rng, CF_DOM_SIGNED);
    }
    r->call.nops = pg->n_in + pg->n_out;
    r->n_values = pg->n_values;
    r->n_inst = pg->n_inst;
    r->inst = pg->inst;
}

static void free_after(unsigned char **after)
{
    for (int i = 0; i < FZ_MAX_VALUES; i++) free(after[i]);
}

/* Bytes the backend holds in use (0 without memory_stats). */
static size_t in_use(ff_backend *be)
{
    ff_status (*stats)(void *, size_t *, size_t *, size_t *) = FF_VT_OPT(be, memory_stats);
    size_t used = 0, cached, peak;
    if (stats && stats(be->ctx, &used, &cached, &peak) != FF_OK) used = 0;
    return used;
}

static cf_result run(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    const fz_prog *pg = &progs[cs->p[0]];
    if (!FF_VT_OPT(be, fused)) {
        snprintf(rep->msg, sizeof rep->msg, "backend has no optional fused entry (the core runs the chains itself)");
        return CF_SKIP;
    }
    if (!ff_backend_supports(be, FF_KIND_FUSED, 0, cs->dtype)) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines fused programs on %s", ff_dtype_name(cs->dtype));
        return CF_SKIP;
    }
    for (int i = 0; i < pg->n_inst; i++)
        if (!ff_backend_supports(be, (ff_op_kind)pg->inst[i].kind, pg->inst[i].op, cs->dtype)) {
            snprintf(rep->msg, sizeof rep->msg, "backend declines %s %s on %s, which the program uses",
                     cf_kind_name(pg->inst[i].kind),
                     pg->inst[i].kind == FF_KIND_UNARY ? cf_unary_name(pg->inst[i].op) : cf_binary_name(pg->inst[i].op),
                     ff_dtype_name(cs->dtype));
            return CF_SKIP;
        }
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    fz_run r;
    fz_build(&r, pg, &scens[cs->p[1]], cs->dtype, &rng);
    size_t used0 = in_use(be);
    unsigned char *got[FZ_MAX_VALUES] = {0}, *want[FZ_MAX_VALUES] = {0};
    char err[512] = "", why[700] = "";
    cf_result res = CF_PASS;
    ff_status st = fz_exec(be, &r, false, want, err, sizeof err);
    if (st) {
        snprintf(why, sizeof why, "op by op: the plain entries returned %s: %s", ff_status_name(st), err);
        res = fz_fail(rep, ctx, cs, &r, why);
    } else if ((st = fz_exec(be, &r, true, got, err, sizeof err))) {
        snprintf(why, sizeof why, "backend returned %s from fused: %s", ff_status_name(st), err);
        res = fz_fail(rep, ctx, cs, &r, why);
    }
    for (int i = 0; i < r.call.nops && res == CF_PASS; i++)
        if (r.call.o[i].alias < 0 && !same_buffer(&r, i, got[i], want[i], why, sizeof why)) res = fz_fail(rep, ctx, cs, &r, why);
    size_t used1 = in_use(be);
    if (res == CF_PASS && used1 > used0) {
        snprintf(why, sizeof why,
                 "backend broke the contract: memory_stats: %zu bytes in use after the case freed all it allocated, %zu before (a leak)",
                 used1, used0);
        res = fz_fail(rep, ctx, cs, &r, why);
    }
    free_after(got);
    free_after(want);
    cf_call_free(&r.call);
    return res;
}

/* A program whose second instruction uses a unary op the backend declines on the dtype (or
 * an op code past the ABI's when it declines none): the entry must fail, writing nothing. */
static cf_result run_refuse(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    if (!FF_VT_OPT(be, fused)) {
        snprintf(rep->msg, sizeof rep->msg, "backend has no optional fused entry (the core runs the chains itself)");
        return CF_SKIP;
    }
    if (!ff_backend_supports(be, FF_KIND_FUSED, 0, cs->dtype)) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines fused programs on %s", ff_dtype_name(cs->dtype));
        return CF_SKIP;
    }
    int bad = 0;
    while (bad < FF_UNARY_COUNT && ff_backend_supports(be, FF_KIND_UNARY, bad, cs->dtype)) bad++;
    ff_fused_inst inst[2] = {U(EXP, 2, 0), {FF_KIND_UNARY, bad, 1, {2, 0}}};
    static const fz_prog shape_of = {"refuse", 1, 1, -1, 3, 2, {{0}}};
    static const fz_scen scen = {"5x7", 2, {5, 7}, {CF_L_OFFSET}, CF_L_CONTIG, CF_DOM_SIGNED};
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    fz_run r;
    fz_build(&r, &shape_of, &scen, cs->dtype, &rng);
    r.inst = inst;
    unsigned char *got[FZ_MAX_VALUES] = {0};
    char err[512] = "", why[700] = "";
    cf_result res = CF_PASS;
    ff_status st = fz_exec(be, &r, true, got, err, sizeof err);
    if (st == FF_OK) {
        snprintf(why, sizeof why, "fused returned FF_OK for a program with unary op %d, which supports() declines on %s",
                 bad, ff_dtype_name(cs->dtype));
        res = fz_fail(rep, ctx, cs, &r, why);
    }
    for (int i = 0; i < r.call.nops && res == CF_PASS; i++)
        if (!same_buffer(&r, i, got[i], r.call.o[i].init, why, sizeof why)) {
            char what[800];
            snprintf(what, sizeof what, "a refused program wrote: %s (vs the buffer's initial contents)", why);
            res = fz_fail(rep, ctx, cs, &r, what);
        }
    free_after(got);
    cf_call_free(&r.call);
    return res;
}

void cf_gen_fused(void)
{
    /* the halves have no reference fused entry, nor need one: a case compares the entry
     * with the same backend's plain entries */
    static const ff_dtype dts[] = {FF_F32, FF_F64, FF_F16, FF_BF16};
    for (int di = 0; di < 4; di++) {
        ff_dtype dt = dts[di];
        if (dt != FF_F16 && dt != FF_BF16 && !cf_ref_supports(FF_KIND_FUSED, 0, dt)) continue;
        for (int pi = 0; pi < NPROG; pi++)
            for (int si = 0; si < NSCEN; si++) {
                if (si == BIG_SCEN && !BIG_PROGS(pi)) continue;
                cf_case c = {.family = "fused", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run,
                             .kind = FF_KIND_FUSED, .opcode = 0, .p = {pi, si}};
                snprintf(c.op, sizeof c.op, "%s", progs[pi].name);
                snprintf(c.id, sizeof c.id, "fused.%s.%s.%s", progs[pi].name, ff_dtype_name(dt), scens[si].name);
                cf_register(&c);
            }
        cf_case c = {.family = "fused", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run_refuse,
                     .kind = FF_KIND_FUSED, .opcode = 0};
        snprintf(c.op, sizeof c.op, "refuse_declined_op");
        snprintf(c.id, sizeof c.id, "fused.refuse_declined_op.%s.5x7", ff_dtype_name(dt));
        cf_register(&c);
    }
}
