/* Device-side replay: where the backend can record entry calls (its optional graph_record
 * entry: CUDA graphs on cuda), the first replay splits the plan's launches into runs that
 * need no host between them, records each run of two or more launches once, and every
 * replay then launches a recorded run as one call, so a small step's per-kernel launch
 * cost is paid once per run. Host-driven, always: host calls, uploads and checked reads
 * (the host's own work each replay), random fills (new counters each replay) and
 * collectives (other processes take part). A launch the backend cannot record (its entry
 * needs the host mid-call: an index check that reads a flag back, say) splits its run and
 * stays host-driven; a run the backend refuses as a whole is halved until the pieces
 * record or are single launches. FF_GRAPH_DEVICE=0 keeps everything host-driven. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

typedef ff_status (*record_fn)(void *ctx, int op, void **handle);

static bool recordable(const gnode *n)
{
    switch (n->kind) {
    case GN_HOST:
    case GN_UPLOAD:
    case GN_READBACK:
    case FF_KIND_RANDOM:
    case FF_KIND_COLLECTIVE: return false;
    default: return true;
    }
}

/* Appends a run (consecutive host-driven launches merge into one run). */
static ff_status add_run(ff_graph *g, int first, int n, void *handle)
{
    if (n <= 0) return FF_OK;
    grun *last = g->n_runs ? &g->runs[g->n_runs - 1] : NULL;
    if (!handle && last && !last->handle && last->first + last->n == first) {
        last->n += n;
    } else {
        grun *r = realloc(g->runs, sizeof *r * (size_t)(g->n_runs + 1));
        if (!r) {
            if (handle) g->be->vt->graph_record(g->be->ctx, FF_RECORD_RELEASE, &handle);
            return ff_error(FF_ERR_OOM, "ff_graph_replay: out of memory for the device-side runs");
        }
        g->runs = r;
        g->runs[g->n_runs++] = (grun){first, n, handle};
    }
    if (handle) g->info.device_runs++, g->info.device_launches += n;
    else g->info.host_launches += n;
    return FF_OK;
}

/* Records launches [first, first + n): FF_OK with *handle, or FF_ERR_UNSUPPORTED (nothing
 * recorded, nothing ran) with *bad the launch whose call failed while recording, or -1
 * when the backend refused the run as a whole. */
static ff_status record_run(ff_graph *g, record_fn rec, int first, int n, void **handle, int *bad)
{
    void *c = g->be->ctx;
    *handle = NULL, *bad = -1;
    if (rec(c, FF_RECORD_BEGIN, NULL)) return FF_ERR_UNSUPPORTED;
    for (int i = first; i < first + n && *bad < 0; i++)
        if (ff_graph_run_node(g, &g->launch[i])) *bad = i;
    ff_status st = rec(c, FF_RECORD_END, handle);
    if (!st && *bad >= 0) rec(c, FF_RECORD_RELEASE, handle); /* a backend that kept a record anyway */
    if (st || *bad >= 0) {
        *handle = NULL;
        return FF_ERR_UNSUPPORTED;
    }
    return FF_OK;
}

/* Launches [first, first + n), all recordable: recorded where the backend can. */
static ff_status record_span(ff_graph *g, record_fn rec, int first, int n)
{
    while (n >= 2) {
        void *h;
        int bad;
        if (!record_run(g, rec, first, n, &h, &bad)) return add_run(g, first, n, h);
        if (bad < 0) { /* refused as a whole: try the halves */
            if (n < 4) return add_run(g, first, n, NULL);
            ff_status st = record_span(g, rec, first, n / 2);
            return st ? st : record_span(g, rec, first + n / 2, n - n / 2);
        }
        ff_status st = record_span(g, rec, first, bad - first); /* what precedes it may record */
        if (!st) st = add_run(g, bad, 1, NULL);
        if (st) return st;
        n -= bad + 1 - first, first = bad + 1;
    }
    return add_run(g, first, n, NULL);
}

static ff_status build_runs(ff_graph *g)
{
    record_fn rec = FF_VT_OPT(g->be, graph_record);
    const char *env = getenv("FF_GRAPH_DEVICE");
    bool device = rec && !(env && !strcmp(env, "0"));
    ff_status st = FF_OK;
    for (int i = 0; !st && i < g->n_launch;) {
        int j = i;
        while (device && j < g->n_launch && recordable(&g->launch[j])) j++;
        if (j == i) j = i + 1;
        st = j - i >= 2 ? record_span(g, rec, i, j - i) : add_run(g, i, j - i, NULL);
        i = j;
    }
    ff_clear_error(); /* a call that could not be recorded left its message; it runs host-driven */
    if (st) {
        ff_graph_runs_release(g);
        return st;
    }
    g->runs_built = true;
    return FF_OK;
}

static ff_status run_host(ff_graph *g, int i)
{
    ff_status st = ff_graph_run_node(g, &g->launch[i]);
    if (!st) return FF_OK;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", ff_last_error());
    return ff_error(st, "ff_graph_replay: launch %d of %d (%s): %s", i, g->n_launch, ff_graph_kind_name(g->launch[i].kind),
                    msg);
}

ff_status ff_graph_run_launches(ff_graph *g)
{
    if (!g->runs_built && build_runs(g)) return ff_last_status();
    for (int r = 0; r < g->n_runs; r++) {
        grun *u = &g->runs[r];
        if (u->handle) {
            ff_status st = g->be->vt->graph_record(g->be->ctx, FF_RECORD_LAUNCH, &u->handle);
            if (st) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", ff_last_error());
                return ff_error(st, "ff_graph_replay: the recorded launches %d..%d of %d: %s", u->first,
                                u->first + u->n - 1, g->n_launch, msg);
            }
            continue;
        }
        for (int i = u->first; i < u->first + u->n; i++) {
            ff_status st = run_host(g, i);
            if (st) return st;
        }
    }
    return FF_OK;
}

void ff_graph_runs_release(ff_graph *g)
{
    for (int r = 0; r < g->n_runs; r++)
        if (g->runs[r].handle) g->be->vt->graph_record(g->be->ctx, FF_RECORD_RELEASE, &g->runs[r].handle);
    free(g->runs);
    g->runs = NULL;
    g->n_runs = 0;
    g->runs_built = false;
    g->info.device_runs = g->info.device_launches = g->info.host_launches = 0;
}
