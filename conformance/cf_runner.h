/* The runner's interface to the command line (cf_main.c). */
#ifndef FF_CONFORMANCE_CF_RUNNER_H
#define FF_CONFORMANCE_CF_RUNNER_H

#include <stdio.h>

#include "cf.h"

typedef struct cf_filter {
    const char *op;      /* -o: substring of "<family>.<op>" */
    const char *case_id; /* --case: exact id */
    bool dtype_set;      /* --dtype */
    ff_dtype dtype;
} cf_filter;

typedef struct cf_totals {
    int passed, failed, skipped;
    double seconds;
} cf_totals;

/* Generates every family's cases (ref answers supports() queries); returns the count. */
int cf_generate(ff_backend *ref);
void cf_free_cases(void);
bool cf_case_selected(const cf_case *c, const cf_filter *f);
/* Prints the selected ids; returns how many. */
int cf_list(const cf_filter *f);
/* Runs the selected cases against ctx->t; appends a <testsuite> to junit if non-NULL. */
cf_totals cf_run_backend(cf_ctx *ctx, const cf_filter *f, FILE *junit);

#endif /* FF_CONFORMANCE_CF_RUNNER_H */
