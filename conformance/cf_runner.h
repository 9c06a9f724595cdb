/* The runner's interface to the command line (cf_main.c). */
#ifndef FF_CONFORMANCE_CF_RUNNER_H
#define FF_CONFORMANCE_CF_RUNNER_H

#include <stdio.h>

#include "cf.h"

typedef struct cf_filter {
    const char *op;      /* -o: substring of "<family>.<op>" */
    const char *exclude; /* --exclude: cases whose "<family>.<op>" contains it are left out */
    const char *case_id; /* --case: exact id */
    bool dtype_set;      /* --dtype */
    ff_dtype dtype;
    bool graph;          /* --graph: only the op and grad cases (what a graph can capture) */
} cf_filter;

typedef struct cf_totals {
    int passed, failed, skipped;
    int crashed; /* of the failed: cases that killed their worker or timed out */
    double seconds;
} cf_totals;

/* Runs case i of the registry and fills rep: the backend's supports() first (a declined
 * case is a skip), then the case. */
typedef cf_result (*cf_exec_fn)(void *state, cf_ctx *ctx, int i, cf_report *rep);
cf_result cf_run_case(cf_ctx *ctx, int i, cf_report *rep);
/* The in-process executor (--no-fork): cf_run_case itself. */
cf_result cf_exec_inprocess(void *state, cf_ctx *ctx, int i, cf_report *rep);
int cf_case_count(void);
/* True for the cases of an op or family cf_run_backend gave up on after crashes in a
 * row: they fail without running (a worker forked after that skips them). */
bool cf_case_abandoned(const cf_case *c);
const cf_case *cf_case_at(int i);

/* Generates every family's cases (ref answers supports() queries); returns the count. */
int cf_generate(ff_backend *ref);
void cf_free_cases(void);
bool cf_case_selected(const cf_case *c, const cf_filter *f);
/* Prints the selected ids; returns how many. */
int cf_list(const cf_filter *f);
/* Runs the selected cases, each through exec, against the backend called name; appends a
 * <testsuite> to junit if non-NULL. */
cf_totals cf_run_backend(cf_ctx *ctx, const cf_filter *f, FILE *junit, const char *name, cf_exec_fn exec,
                         void *exec_state);

#endif /* FF_CONFORMANCE_CF_RUNNER_H */
