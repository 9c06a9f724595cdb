/* Crash isolation: the backend under test runs in a worker process (cf_isolate.c). */
#ifndef FF_CONFORMANCE_CF_ISOLATE_H
#define FF_CONFORMANCE_CF_ISOLATE_H

#include <stdbool.h>
#include <sys/types.h>

#include "cf_runner.h"

typedef struct cf_worker {
    const char *spec;     /* what --backend said: a name or a path */
    const cf_filter *flt; /* the selection the worker walks */
    double timeout_s;     /* per case; 0: none */
    pid_t pid;            /* 0: no worker running */
    int fd;               /* the worker's result pipe */
} cf_worker;

/* Loads spec in a throw-away process: fills name and path, or err (and *no_start when
 * the backend loaded but could not start, e.g. no device). Returns true when it loaded.
 * The parent never loads the backend under test itself: a backend may start threads at
 * init, and a forked child would inherit none of them. */
bool cf_probe_backend(const char *spec, char *name, size_t nname, char *path, size_t npath, char *err, size_t nerr,
                      bool *no_start);

/* cf_exec_fn for cf_run_backend: case i runs in the worker (started on demand at i and
 * kept for the following cases). A worker that dies mid-case makes that case a CRASH
 * naming the signal; one that goes silent for timeout_s is killed and the case is a
 * CRASH by timeout; either way a new worker takes over at the next case. */
cf_result cf_exec_isolated(void *worker, cf_ctx *ctx, int i, cf_report *rep);
/* Waits for the worker to finish; a non-zero exit after its last case (a leak report
 * from LeakSanitizer, say) is returned as a failure message in err. */
bool cf_worker_finish(cf_worker *w, char *err, size_t nerr);

#endif /* FF_CONFORMANCE_CF_ISOLATE_H */
