/* ff-conformance: proves a backend behaves like the reference cpu backend.
 *
 *   ff-conformance [--backend NAME|PATH] [-o OP] [--dtype D] [--case ID] [--seed S]
 *                  [--list] [--junit FILE] [--timeout S] [--stress S] [--no-fork] [-v]
 *
 * Without --backend, every backend the loader can find is tested; one that cannot
 * start (no device) is reported as skipped with its reason. The backend under test runs
 * in a worker process (cf_isolate.c), so a crash or a hang is a failure naming its case.
 * The last line is always "N passed, M failed, K skipped"; the exit status is non-zero
 * on any failure, crash included.
 *
 * Device backends run in poison mode (FF_POISON_FREED=1, set here unless the
 * environment or --no-poison says otherwise): freed buffers are poisoned and kept out
 * of reuse until the device queue has drained, so a read after free fails every run
 * (docs/writing-a-backend.md, "Poison mode"). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"
#include "cf_isolate.h"
#include "cf_runner.h"

#define MAX_TARGETS 32

typedef struct targets {
    int n;
    char name[MAX_TARGETS][128];
    char path[MAX_TARGETS][4096];
} targets;

static void found(const char *name, const char *path, void *user)
{
    targets *t = user;
    if (t->n == MAX_TARGETS) return;
    snprintf(t->name[t->n], sizeof t->name[0], "%s", name);
    snprintf(t->path[t->n], sizeof t->path[0], "%s", path);
    t->n++;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ff-conformance [options]\n"
            "  --backend NAME|PATH  backend under test (default: every backend found)\n"
            "  -o OP                only cases whose \"family.op\" contains OP (e.g. -o exp, -o binary)\n"
            "  --exclude OP         leave out cases whose \"family.op\" contains OP\n"
            "  --dtype D            only cases of dtype D (f32, f64, i32, i64, u8, bool, f16, bf16, i8, i16)\n"
            "  --case ID            rerun exactly one case\n"
            "  --seed S             data seed (default 1); failures print the seed to rerun with\n"
            "  --step N             judge the backend by the rules of step N, not of the step it\n"
            "                       states (backend_abi.h, \"Rules steps\"): --step 5 before you bump it\n"
            "  --list               list the selected case ids and exit\n"
            "  --junit FILE         write JUnit XML\n"
            "  --timeout S          a case silent for S seconds is killed and fails (default 120; 0: none)\n"
            "  --stress S           seconds device.threads_scratch runs threads against the backend (default 2)\n"
            "  --no-fork            run the backend in this process (for gdb; a crash ends the run)\n"
            "  --no-poison          do not ask device backends to poison freed buffers (FF_POISON_FREED=0)\n"
            "  --graph              run the op and grad cases inside a graph capture, then replay the\n"
            "                       graph and require every value the case read to read the same\n"
            "  -v                   print passing and skipped cases too\n");
}

int main(int argc, char **argv)
{
    const char *backend = NULL, *junit_path = NULL;
    cf_filter flt = {0};
    bool list = false, no_fork = false;
    double timeout_s = 120;
    cf_ctx ctx = {.seed = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKES_VALUE                                                        \
    if (!v) {                                                              \
        fprintf(stderr, "ff-conformance: %s needs a value\n", a);          \
        return 2;                                                          \
    }                                                                      \
    i++
        if (!strcmp(a, "--backend")) { TAKES_VALUE; backend = v; }
        else if (!strcmp(a, "-o") || !strcmp(a, "--op")) { TAKES_VALUE; flt.op = v; }
        else if (!strcmp(a, "--case")) { TAKES_VALUE; flt.case_id = v; }
        else if (!strcmp(a, "--exclude")) { TAKES_VALUE; flt.exclude = v; }
        else if (!strcmp(a, "--seed")) { TAKES_VALUE; ctx.seed = strtoull(v, NULL, 0); }
        else if (!strcmp(a, "--step")) { TAKES_VALUE; ctx.step = atoi(v); }
        else if (!strcmp(a, "--junit")) { TAKES_VALUE; junit_path = v; }
        else if (!strcmp(a, "--timeout")) { TAKES_VALUE; timeout_s = strtod(v, NULL); }
        else if (!strcmp(a, "--stress")) { TAKES_VALUE; ctx.stress_s = strtod(v, NULL); }
        else if (!strcmp(a, "--no-fork")) no_fork = true;
        else if (!strcmp(a, "--no-poison")) setenv("FF_POISON_FREED", "0", 1);
        else if (!strcmp(a, "--graph")) ctx.graph = flt.graph = true;
        else if (!strcmp(a, "--dtype")) {
            TAKES_VALUE;
            if (ff_dtype_from_name(v, &flt.dtype)) {
                fprintf(stderr, "ff-conformance: unknown dtype '%s'\n", v);
                return 2;
            }
            flt.dtype_set = true;
        } else if (!strcmp(a, "--list")) list = true;
        else if (!strcmp(a, "-v")) ctx.verbose = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else {
            fprintf(stderr, "ff-conformance: unknown argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
#undef TAKES_VALUE
    }

    /* before any backend is loaded: a backend reads it at init, and may start threads
     * there that read the environment (setenv next to a getenv is a data race) */
    setenv("FF_POISON_FREED", "1", 0);
    cf_fpenv_capture(); /* before any backend can touch it */
    ff_backend *ref = ff_backend_load("cpu");
    if (!ref) {
        fprintf(stderr, "ff-conformance: cannot load the reference backend 'cpu': %s\n", ff_last_error());
        return 2;
    }
    cf_generate(ref);
    int nselected = 0;
    for (int i = 0; i < cf_case_count(); i++) nselected += cf_case_selected(cf_case_at(i), &flt);
    if (!nselected) { /* a typo in -o must not pass as "0 passed, 0 failed" */
        fprintf(stderr, "ff-conformance: no case matches the filter (see --list)\n");
        printf("0 passed, 1 failed, 0 skipped\n");
        cf_free_cases();
        ff_shutdown();
        return 2;
    }
    if (list) {
        int n = cf_list(&flt);
        fprintf(stderr, "%d cases\n", n);
        cf_free_cases();
        ff_shutdown();
        return 0;
    }

    targets tg = {0};
    if (backend) found(backend, backend, &tg);
    else ff_backend_discover(found, &tg);

    FILE *junit = NULL;
    if (junit_path) {
        junit = fopen(junit_path, "w");
        if (!junit) {
            fprintf(stderr, "ff-conformance: cannot write %s\n", junit_path);
            return 2;
        }
        fprintf(junit, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"ff-conformance\">\n");
    }
    cf_totals all = {0};
    for (int i = 0; i < tg.n; i++) {
        const char *spec = backend ? backend : tg.path[i];
        char name[128], path[4096], err[2048];
        bool no_start = false, loaded;
        ff_backend *be = NULL;
        if (no_fork) {
            be = ff_backend_load(spec);
            if (be != ref) cf_guard_install(be);
            loaded = be != NULL;
            if (be) {
                snprintf(name, sizeof name, "%s", ff_backend_name(be));
                snprintf(path, sizeof path, "%s", ff_backend_path(be));
            } else {
                snprintf(err, sizeof err, "%s", ff_last_error());
                no_start = strstr(err, "failed to initialize") != NULL;
            }
        } else {
            loaded = cf_probe_backend(spec, name, sizeof name, path, sizeof path, err, sizeof err, &no_start);
        }
        if (!loaded) {
            /* a backend that cannot start (no device) is skipped; one that cannot be
             * loaded at all (missing file, ABI mismatch) is a failure */
            printf("%s backend '%s': %s\n", no_start ? "SKIP" : "FAIL", tg.name[i], err);
            if (no_start) all.skipped++;
            else all.failed++;
            if (junit) {
                fprintf(junit, "  <testsuite name=\"ff-conformance.%s\" tests=\"1\" failures=\"%d\" skipped=\"%d\">\n"
                               "    <testcase classname=\"%s\" name=\"load\"><%s message=\"",
                        tg.name[i], !no_start, no_start, tg.name[i], no_start ? "skipped" : "failure");
                for (const char *m = err; *m; m++) /* the message may hold quotes or brackets */
                    if (*m != '"' && *m != '<' && *m != '>' && *m != '&') fputc(*m, junit);
                fprintf(junit, "\"/></testcase>\n  </testsuite>\n");
            }
            continue;
        }
        ctx.t = be; /* NULL in the parent when the backend runs in a worker */
        ctx.r = ref;
        ctx.backend_arg = backend ? backend : tg.name[i];
        cf_worker w = {.spec = spec, .flt = &flt, .timeout_s = timeout_s};
        cf_totals t = no_fork ? cf_run_backend(&ctx, &flt, junit, name, cf_exec_inprocess, NULL)
                              : cf_run_backend(&ctx, &flt, junit, name, cf_exec_isolated, &w);
        if (!no_fork && !cf_worker_finish(&w, err, sizeof err)) {
            printf("FAIL backend '%s': %s\n", name, err);
            t.failed++;
        }
        if (t.crashed)
            printf("%d of the failures crashed the backend or hung: rerun one with --no-fork under gdb\n", t.crashed);
        printf("backend '%s' (%s): %d passed, %d failed, %d skipped in %.1f s\n", name, path, t.passed, t.failed,
               t.skipped, t.seconds);
        all.passed += t.passed;
        all.failed += t.failed;
        all.skipped += t.skipped;
        all.crashed += t.crashed;
    }
    if (junit) {
        fprintf(junit, "</testsuites>\n");
        fclose(junit);
    }
    printf("%d passed, %d failed, %d skipped\n", all.passed, all.failed, all.skipped);
    cf_free_cases();
    ff_shutdown();
    return all.failed ? 1 : 0;
}
