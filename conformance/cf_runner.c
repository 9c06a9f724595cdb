#define _GNU_SOURCE /* RTLD_DEFAULT, clock_gettime */
/* The case registry and the runner: generates every family's cases, filters them,
 * runs them against one backend, prints one line per failure and writes JUnit XML. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cf.h"
#include "cf_runner.h"

static cf_case *cases;
static int ncases, capcases;
static ff_backend *reference;

void cf_register(const cf_case *c)
{
    if (ncases == capcases) {
        capcases = capcases ? 2 * capcases : 1024;
        cases = realloc(cases, (size_t)capcases * sizeof *cases);
        if (!cases) abort();
    }
    cases[ncases++] = *c;
}

ff_backend *cf_reference(void) { return reference; }

bool cf_ref_supports(int kind, int op, ff_dtype dt) { return ff_backend_supports(reference, (ff_op_kind)kind, op, dt); }

bool cf_ref_computes(int kind, int op, ff_dtype dt)
{
    return cf_ref_supports(kind, op, dt) || cf_detour_needed(reference, kind, op, dt);
}


int cf_generate(ff_backend *ref)
{
    reference = ref;
    cf_gen_fill_copy();
    cf_gen_unary();
    cf_gen_binary();
    cf_gen_reduce();
    cf_gen_matmul();
    cf_gen_index();
    cf_gen_random();
    cf_gen_softmax();
    cf_gen_fused();
    cf_gen_device_exact();
    cf_gen_device_sync();
    cf_gen_device_threads();
    cf_gen_device_fused();
    cf_gen_special();
    cf_gen_ops();
    cf_gen_grad();
    cf_gen_attention();
    cf_gen_layer_norm();
    cf_gen_linear();
    cf_gen_qmatmul();
    cf_gen_qmatmul_dynamic();
    /* ids are the rerun handle: they must be unique */
    for (int i = 1; i < ncases; i++)
        for (int j = i - 1; j >= 0 && j >= i - 64; j--)
            if (strcmp(cases[i].id, cases[j].id) == 0) fprintf(stderr, "ff-conformance: duplicate case id %s\n", cases[i].id);
    return ncases;
}

void cf_free_cases(void)
{
    free(cases);
    cases = NULL;
    ncases = capcases = 0;
}

bool cf_case_selected(const cf_case *c, const cf_filter *f)
{
    if (f->case_id && strcmp(f->case_id, c->id) != 0) return false;
    if (f->graph && c->level == CF_LEVEL_VTABLE) return false;
    if (f->dtype_set && c->dtype != f->dtype) return false;
    if (f->op || f->exclude) {
        char full[160];
        snprintf(full, sizeof full, "%s.%s", c->family, c->op);
        if (f->op && !strstr(full, f->op)) return false;
        if (f->exclude && strstr(full, f->exclude)) return false;
    }
    return true;
}

int cf_list(const cf_filter *f)
{
    int n = 0;
    for (int i = 0; i < ncases; i++)
        if (cf_case_selected(&cases[i], f)) {
            printf("%s\n", cases[i].id);
            n++;
        }
    return n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void xml_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
        }
    }
}

/* Does the backend under test accept the case? Fills rep when it declines. */
static bool accepted(cf_ctx *ctx, const cf_case *c, cf_report *rep)
{
    /* a backend that declines half copy cannot hold half tensors at all (the ABI allows
     * it): every case of that dtype, the public ops' and gradients' too, is a gap */
    if ((c->dtype == FF_F16 || c->dtype == FF_BF16) && !ff_backend_supports(ctx->t, FF_KIND_COPY, c->dtype, c->dtype)) {
        snprintf(rep->msg, sizeof rep->msg, "backend declines copy %s -> %s: %s tensors cannot live on it",
                 ff_dtype_name(c->dtype), ff_dtype_name(c->dtype), ff_dtype_name(c->dtype));
        rep->coverage_gap = true;
        return false;
    }
    if (c->kind < 0) return true;
    if (c->kind == FF_KIND_SOFTMAX && !ff_backend_has_softmax(ctx->t)) {
        snprintf(rep->msg, sizeof rep->msg, "backend has no optional softmax entry (the core composes it)");
        return false;
    }
    if (ff_backend_supports(ctx->t, (ff_op_kind)c->kind, c->opcode, c->dtype)) return true;
    if (cf_detour_needed(ctx->t, c->kind, c->opcode, c->dtype)) return true; /* F16/BF16 through f32 */
    if (c->kind == FF_KIND_COPY)
        snprintf(rep->msg, sizeof rep->msg, "backend declines copy %s -> %s", ff_dtype_name((ff_dtype)c->opcode),
                 ff_dtype_name(c->dtype));
    else if ((c->dtype == FF_F16 || c->dtype == FF_BF16) && c->kind != FF_KIND_FILL)
        snprintf(rep->msg, sizeof rep->msg,
                 "backend declines %s %s (op %d) on %s and cannot copy %s to and from f32 for the core's f32 detour",
                 cf_kind_name(c->kind), c->op, c->opcode, ff_dtype_name(c->dtype), ff_dtype_name(c->dtype));
    else if (c->kind == FF_KIND_UNARY || c->kind == FF_KIND_BINARY || c->kind == FF_KIND_REDUCE)
        snprintf(rep->msg, sizeof rep->msg, "backend declines %s %s (op %d) on %s", cf_kind_name(c->kind),
                 c->kind == FF_KIND_UNARY    ? cf_unary_name(c->opcode)
                 : c->kind == FF_KIND_BINARY ? cf_binary_name(c->opcode)
                                             : cf_reduce_name(c->opcode),
                 c->opcode, ff_dtype_name(c->dtype));
    else
        snprintf(rep->msg, sizeof rep->msg, "backend declines %s op %d on %s", cf_kind_name(c->kind), c->opcode,
                 ff_dtype_name(c->dtype));
    rep->coverage_gap = true;
    return false;
}

int cf_case_count(void) { return ncases; }
const cf_case *cf_case_at(int i) { return &cases[i]; }

/* --graph: the case runs inside a checked capture of the backend under test (the
 * reference's kernels run unrecorded), then the graph is replayed, planned and fused,
 * and every value the case read must read the same, bit for bit. A case whose region
 * cannot be captured (it expects an error from a kernel) keeps its eager result. */
static cf_result run_in_graph(cf_ctx *ctx, const cf_case *c, cf_report *rep)
{
    if (ff_graph_capture_begin_checked(ctx->t)) {
        snprintf(rep->msg, sizeof rep->msg, "graph mode: %s", ff_last_error());
        return CF_FAIL;
    }
    cf_result r = c->run(ctx, c, rep);
    ff_graph *g = ff_graph_capture_end();
    if (!g) {
        ff_clear_error();
        return r;
    }
    char msg[400] = "";
    int bad = r == CF_PASS ? ff_graph_check_replay(g, msg, sizeof msg) : 0;
    if (bad < 0) snprintf(msg, sizeof msg, "%s", ff_last_error());
    if (bad) {
        snprintf(rep->msg, sizeof rep->msg, "graph replay differs from eager: %s", msg);
        r = CF_FAIL;
    }
    ff_graph_release(g);
    return r;
}

cf_result cf_run_case(cf_ctx *ctx, int i, cf_report *rep)
{
    const cf_case *c = &cases[i];
    cf_result r = !accepted(ctx, c, rep) ? CF_SKIP : ctx->graph ? run_in_graph(ctx, c, rep) : c->run(ctx, c, rep);
    char why[300];
    if (cf_guard_take(why, sizeof why) && r != CF_FAIL) { /* the case's own check names it better */
        snprintf(rep->msg, sizeof rep->msg, "backend: %s", why);
        r = CF_FAIL;
    }
    return r;
}

cf_result cf_exec_inprocess(void *state, cf_ctx *ctx, int i, cf_report *rep)
{
    (void)state;
    return cf_run_case(ctx, i, rep);
}

/* A family whose every case crashes the worker (one broken entry under all of them)
 * would restart it once per case, which once took 11 minutes. So after CF_CRASH_LIMIT
 * crashes in a row in one op ("unary.exp"), the rest of that op fails at once, with one
 * line; after 3 * CF_CRASH_LIMIT in a row in one family (three ops given up in a row),
 * the rest of the family does. Workers forked later skip those cases too (cf_isolate.c
 * asks cf_case_abandoned). */
#define CF_CRASH_LIMIT 3
static char abandoned[64][64]; /* "family" or "family.op" */
static char abandoned_why[64][400];
static int nabandoned;

static bool abandons(const char *key, const cf_case *c)
{
    size_t n = strlen(c->family);
    return !strncmp(key, c->family, n) && (!key[n] || (key[n] == '.' && !strcmp(key + n + 1, c->op)));
}

/* The reason case c is not run, or NULL. */
static const char *abandoned_for(const cf_case *c)
{
    for (int k = 0; k < nabandoned; k++)
        if (abandons(abandoned[k], c)) return abandoned_why[k];
    return NULL;
}

bool cf_case_abandoned(const cf_case *c) { return abandoned_for(c) != NULL; }

/* Gives up on case i's op, or with whole_family on its family, after `crashes` crashes
 * in a row: prints one line for the selected cases left. */
static void abandon(const cf_filter *f, int i, bool whole_family, int crashes)
{
    const cf_case *c = &cases[i];
    if (nabandoned == 64) return;
    char *key = abandoned[nabandoned], *why = abandoned_why[nabandoned];
    if (whole_family) snprintf(key, sizeof abandoned[0], "%s", c->family);
    else snprintf(key, sizeof abandoned[0], "%s.%s", c->family, c->op);
    snprintf(why, sizeof abandoned_why[0],
             "not run: %d cases of %s '%s' in a row crashed the backend (rerun one with --no-fork under gdb, or "
             "leave it out with --exclude %s%s)",
             crashes, whole_family ? "family" : "op", key, key, whole_family ? "." : "");
    int left = 0;
    for (int j = i + 1; j < ncases; j++)
        left += abandons(key, &cases[j]) && !cf_case_abandoned(&cases[j]) && cf_case_selected(&cases[j], f);
    nabandoned++;
    if (left) printf("FAIL %s%s*: the other %d selected cases fail, %s\n", key, whole_family ? "." : "", left, why);
}

typedef struct gap {
    char what[64];
    int count;
} gap;

cf_totals cf_run_backend(cf_ctx *ctx, const cf_filter *f, FILE *junit, const char *name, cf_exec_fn exec,
                         void *exec_state)
{
    cf_totals tot = {0};
    double t0 = now_s();
    cf_result *res = calloc((size_t)ncases + 1, sizeof *res);
    char **msgs = calloc((size_t)ncases + 1, sizeof *msgs);
    double *times = calloc((size_t)ncases + 1, sizeof *times);
    gap gaps[64];
    int ngaps = 0, gap_total = 0;
    if (!res || !msgs || !times) abort();
    const cf_case *crashed_last = NULL; /* the last case run, while cases crash in a row */
    int op_run = 0, family_run = 0;
    nabandoned = 0;
    for (int i = 0; i < ncases; i++) {
        const cf_case *c = &cases[i];
        if (!cf_case_selected(c, f)) {
            res[i] = (cf_result)-1;
            continue;
        }
        const char *why = abandoned_for(c);
        if (why) { /* counted, not run: its op or family kept crashing */
            res[i] = CF_FAIL;
            tot.failed++;
            if (junit) msgs[i] = strdup(why);
            continue;
        }
        cf_report rep;
        memset(&rep, 0, sizeof rep);
        double c0 = now_s();
        cf_result r = exec(exec_state, ctx, i, &rep);
        times[i] = now_s() - c0;
        res[i] = r;
        if (r == CF_FAIL && rep.crashed) {
            bool same_family = crashed_last && !strcmp(crashed_last->family, c->family);
            family_run = same_family ? family_run + 1 : 1;
            op_run = same_family && !strcmp(crashed_last->op, c->op) ? op_run + 1 : 1;
            crashed_last = c;
        } else {
            crashed_last = NULL;
            op_run = family_run = 0;
        }
        if (r == CF_PASS) {
            tot.passed++;
            if (ctx->verbose) printf("PASS %s\n", c->id);
        } else if (r == CF_FAIL) {
            tot.failed++;
            tot.crashed += rep.crashed;
            printf("%s %s: %s\n", rep.crashed ? "CRASH" : "FAIL", c->id, rep.msg);
            if (op_run >= CF_CRASH_LIMIT) {
                bool family = family_run >= 3 * CF_CRASH_LIMIT;
                abandon(f, i, family, family ? family_run : op_run);
                op_run = 0;
            }
            fflush(stdout);
        } else {
            tot.skipped++;
            if (ctx->verbose) printf("SKIP %s: %s\n", c->id, rep.msg);
            if (rep.coverage_gap) {
                char what[64];
                snprintf(what, sizeof what, "%s.%s", c->family, c->op);
                int g = 0;
                while (g < ngaps && strcmp(gaps[g].what, what) != 0) g++;
                if (g == ngaps && ngaps < 64) {
                    snprintf(gaps[ngaps].what, sizeof gaps[0].what, "%s", what);
                    gaps[ngaps++].count = 0;
                }
                if (g < ngaps) gaps[g].count++;
                gap_total++;
            }
        }
        if (r != CF_PASS && (junit || ctx->verbose)) {
            msgs[i] = malloc(strlen(rep.msg) + 1);
            if (msgs[i]) strcpy(msgs[i], rep.msg);
        }
    }
    tot.seconds = now_s() - t0;
    if (gap_total) {
        printf("coverage gaps on '%s': %d case(s) the reference supports are declined:", name, gap_total);
        for (int g = 0; g < ngaps; g++) printf(" %s(%d)", gaps[g].what, gaps[g].count);
        printf("\n");
    }
    if (junit) {
        fprintf(junit, "  <testsuite name=\"ff-conformance.");
        xml_escaped(junit, name);
        fprintf(junit, "\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" errors=\"0\" time=\"%.3f\">\n",
                tot.passed + tot.failed + tot.skipped, tot.failed, tot.skipped, tot.seconds);
        for (int i = 0; i < ncases; i++) {
            if ((int)res[i] < 0) continue;
            fprintf(junit, "    <testcase classname=\"%s.%s\" name=\"", name, cases[i].family);
            xml_escaped(junit, cases[i].id);
            fprintf(junit, "\" time=\"%.6f\"", times[i]);
            if (res[i] == CF_PASS) {
                fprintf(junit, "/>\n");
                continue;
            }
            fprintf(junit, ">\n      <%s message=\"", res[i] == CF_FAIL ? "failure" : "skipped");
            xml_escaped(junit, msgs[i] ? msgs[i] : "");
            fprintf(junit, "\"/>\n    </testcase>\n");
        }
        fprintf(junit, "  </testsuite>\n");
    }
    for (int i = 0; i < ncases; i++) free(msgs[i]);
    free(msgs);
    free(res);
    free(times);
    return tot;
}
