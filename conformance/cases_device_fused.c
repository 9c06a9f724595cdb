/* Family "device", the hot-program part: device.fused_hot_fma.
 *
 * A backend may compile a fused program into a kernel of its own once the program has
 * done enough work (opencl: after ~4M elements), and a compiler allowed to contract
 * turns a * b + c into one fused multiply-add, which rounds once where the ABI rounds
 * twice. The fused family runs each program once, on the interpreter of such a backend.
 * Here a multiply-add program runs 5 times over 2^20 elements and must give, every
 * time, the bytes of the plain binary entries run one after the other. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"

#define HOT_N (1 << 20)
#define HOT_RUNS 5

typedef struct hot_prog {
    const char *name;
    int n_in;   /* views 0 .. n_in - 1 are inputs, view n_in the output */
    int n_inst; /* temporaries after the output */
    ff_fused_inst inst[3];
} hot_prog;

static const hot_prog progs[] = {
    {"a_mul_b_add_c", 3, 2, {{FF_KIND_BINARY, FF_BINARY_MUL, 4, {0, 1}}, {FF_KIND_BINARY, FF_BINARY_ADD, 3, {4, 2}}}},
    {"c_sub_a_mul_b", 3, 2, {{FF_KIND_BINARY, FF_BINARY_MUL, 4, {0, 1}}, {FF_KIND_BINARY, FF_BINARY_SUB, 3, {2, 4}}}},
    {"ab_add_cd", 4, 3,
     {{FF_KIND_BINARY, FF_BINARY_MUL, 5, {0, 1}}, {FF_KIND_BINARY, FF_BINARY_MUL, 6, {2, 3}},
      {FF_KIND_BINARY, FF_BINARY_ADD, 4, {5, 6}}}},
};
#define NPROGS ((int)(sizeof progs / sizeof progs[0]))

static ff_view view1(void *buf, ff_dtype dt)
{
    ff_view v = {.buf = buf, .dtype = dt, .ndim = 1};
    v.shape[0] = HOT_N;
    v.strides[0] = 1;
    return v;
}

static cf_result run_hot(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    const ff_backend_vtable *vt = be->vt;
    ff_status (*fused)(void *, const ff_fused_program *) = FF_VT_OPT(be, fused);
    if (!fused) {
        snprintf(rep->msg, sizeof rep->msg, "backend has no optional fused entry");
        return CF_SKIP;
    }
    const hot_prog *pg = &progs[cs->p[0]];
    ff_dtype dt = cs->dtype;
    size_t nbytes = (size_t)HOT_N * ff_dtype_size(dt);
    int nv = pg->n_in + 1, nvals = nv + pg->n_inst - 1;
    void *buf[8] = {0};
    ff_view v[8];
    unsigned char *host = malloc(nbytes), *want = malloc(nbytes), *got = malloc(nbytes);
    cf_result r = CF_PASS;
    char rerun[256], what[1024] = "";
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    if (!host || !want || !got) abort();
    cf_rng rng;
    cf_rng_init(&rng, cf_case_seed(ctx, cs));
    for (int i = 0; i < nvals; i++) { /* views, then the temporaries of the plain run */
        if (!(buf[i] = vt->alloc(be->ctx, nbytes))) {
            snprintf(what, sizeof what, "alloc failed: %s", ff_last_error());
            goto out;
        }
        v[i] = view1(buf[i], dt);
        if (i < pg->n_in) {
            cf_fill_values(&rng, host, dt, HOT_N, CF_DOM_SIGNED);
            if (vt->upload(be->ctx, buf[i], 0, host, nbytes)) {
                snprintf(what, sizeof what, "upload failed: %s", ff_last_error());
                goto out;
            }
        }
    }
    for (int k = 0; k < pg->n_inst; k++) { /* the plain entries, one after the other */
        const ff_fused_inst *in = &pg->inst[k];
        if (vt->binary(be->ctx, (ff_binary_op)in->op, &v[in->dst], &v[in->src[0]], &v[in->src[1]])) {
            snprintf(what, sizeof what, "binary %s failed: %s", cf_binary_name(in->op), ff_last_error());
            goto out;
        }
    }
    if (vt->download(be->ctx, buf[pg->n_in], 0, want, nbytes)) {
        snprintf(what, sizeof what, "download failed: %s", ff_last_error());
        goto out;
    }
    ff_fused_program prog = {.dtype = dt, .ndim = 1, .shape = {HOT_N}, .n_views = nv, .views = v,
                             .n_values = nvals, .n_inst = pg->n_inst, .inst = pg->inst};
    for (int run = 1; run <= HOT_RUNS; run++) {
        memset(host, 0xA5, nbytes);
        if (vt->upload(be->ctx, buf[pg->n_in], 0, host, nbytes) || fused(be->ctx, &prog) ||
            vt->download(be->ctx, buf[pg->n_in], 0, got, nbytes)) {
            snprintf(what, sizeof what, "run %d of the fused program failed: %s", run, ff_last_error());
            goto out;
        }
        if (memcmp(got, want, nbytes) == 0) continue;
        int64_t i = 0, bad = 0, esz = (int64_t)ff_dtype_size(dt);
        while (memcmp(got + i * esz, want + i * esz, (size_t)esz) == 0) i++;
        for (int64_t j = i; j < HOT_N; j++) bad += memcmp(got + j * esz, want + j * esz, (size_t)esz) != 0;
        snprintf(what, sizeof what,
                 "run %d of %d of the fused program %s on %s[%d] differs from the plain binary entries in %lld "
                 "elements, first at [%lld]: got %.17g want %.17g (the runs before it matched; a kernel compiled for "
                 "a hot program may not contract a * b + c into a fused multiply-add: the ABI rounds each op)",
                 run, HOT_RUNS, pg->name, ff_dtype_name(dt), HOT_N, (long long)bad, (long long)i, cf_get_f(got, dt, i),
                 cf_get_f(want, dt, i));
        goto out;
    }
out:
    if (what[0]) {
        snprintf(rep->msg, sizeof rep->msg, "%s | rerun: %s", what, rerun);
        r = CF_FAIL;
    }
    for (int i = 0; i < nvals; i++)
        if (buf[i]) vt->free(be->ctx, buf[i]);
    free(host);
    free(want);
    free(got);
    return r;
}

void cf_gen_device_fused(void)
{
    static const ff_dtype dts[] = {FF_F64, FF_F32};
    for (int p = 0; p < NPROGS; p++) {
        ff_dtype dt = dts[p % 2]; /* one dtype per program: each hot program costs a compile */
        cf_case c = {.family = "device", .op = "fused_hot_fma", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run_hot,
                     .kind = FF_KIND_FUSED, .opcode = 0, .p = {p}};
        snprintf(c.id, sizeof c.id, "device.fused_hot_fma.%s.%s", ff_dtype_name(dt), progs[p].name);
        cf_register(&c);
    }
}
