#define _GNU_SOURCE /* clock_gettime */
/* Family "device", the ordering part: promises of the memory entries that every other
 * case takes on trust, because every read goes through a blocking download on the
 * backend's own queue, which waits for everything anyway.
 *
 *   sync_waits        sync must return only when the queued work is done. A suite that
 *                     sees memory only through download cannot look behind sync, but it
 *                     can time it: queue ~0.1 s of kernels, call sync, then download 4
 *                     bytes. When sync waited, the download is as quick as on an idle
 *                     backend; when it did not, the download waits for the kernels
 *                     instead. A host-memory backend is also read directly after sync.
 *   upload_complete   upload must be complete when it returns: the host memory is
 *                     overwritten at once, then the buffer is computed on and downloaded
 *                     at once (an upload left running shows); and it is ordered after the
 *                     work queued before it (an upload run on a queue of its own lands
 *                     before a kernel queued behind long work that writes the buffer).
 *   memory_stats_live bytes in use are at least the bytes of the live buffers, and the
 *                     freed ones leave it by the time sync returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cf.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static ff_view view1(void *buf, ff_dtype dt, int64_t n)
{
    ff_view v = {.buf = buf, .dtype = dt, .ndim = 1};
    v.shape[0] = n;
    v.strides[0] = 1;
    return v;
}

static cf_result fail(cf_ctx *ctx, const cf_case *cs, cf_report *rep, const char *what)
{
    char rerun[256];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    snprintf(rep->msg, sizeof rep->msg, "%s | rerun: %s", what, rerun);
    return CF_FAIL;
}

static cf_result fail_call(cf_ctx *ctx, const cf_case *cs, cf_report *rep, const char *call)
{
    char what[1024];
    snprintf(what, sizeof what, "%s failed: %s", call, ff_last_error());
    return fail(ctx, cs, rep, what);
}

/* ---- sync_waits ------------------------------------------------------------------- */
#define SYNC_N (1 << 21)

typedef struct timing {
    double calls, sync, after, idle; /* seconds */
} timing;

/* k unary sin calls ping-ponging between a and b, sync, a 4-byte download, then an idle
 * 4-byte download for scale. */
static ff_status timed_chain(ff_backend *be, void *a, void *b, int k, timing *t)
{
    const ff_backend_vtable *vt = be->vt;
    ff_view va = view1(a, FF_F32, SYNC_N), vb = view1(b, FF_F32, SYNC_N);
    float x;
    ff_status st = FF_OK;
    double t0 = now_s();
    for (int i = 0; i < k && !st; i++) st = i % 2 ? vt->unary(be->ctx, FF_UNARY_SIN, &va, &vb) : vt->unary(be->ctx, FF_UNARY_SIN, &vb, &va);
    double t1 = now_s();
    if (!st) st = vt->sync(be->ctx);
    double t2 = now_s();
    if (!st) st = vt->download(be->ctx, k % 2 ? b : a, (SYNC_N - 1) * sizeof x, &x, sizeof x);
    double t3 = now_s();
    if (!st) st = vt->download(be->ctx, a, 0, &x, sizeof x);
    double t4 = now_s();
    *t = (timing){t1 - t0, t2 - t1, t3 - t2, t4 - t3};
    return st;
}

static cf_result run_sync(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    const ff_backend_vtable *vt = be->vt;
    size_t nbytes = SYNC_N * sizeof(float);
    float *host = malloc(nbytes), *direct = malloc(nbytes);
    void *a = vt->alloc(be->ctx, nbytes), *b = vt->alloc(be->ctx, nbytes);
    cf_result r = CF_PASS;
    if (!host || !direct) abort();
    if (!a || !b) {
        r = fail_call(ctx, cs, rep, "alloc");
        goto out;
    }
    for (int64_t i = 0; i < SYNC_N; i++) host[i] = (float)(i % 1000) * 0.001f;
    if (vt->upload(be->ctx, a, 0, host, nbytes) || vt->upload(be->ctx, b, 0, host, nbytes)) {
        r = fail_call(ctx, cs, rep, "upload");
        goto out;
    }
    /* grow the chain until it takes ~0.1 s: long against scheduling noise, short enough */
    timing t;
    int k = 2;
    for (;;) {
        if (timed_chain(be, a, b, k, &t)) {
            r = fail_call(ctx, cs, rep, "unary sin, sync or download");
            goto out;
        }
        if (t.calls + t.sync + t.after >= 0.1 || k >= 512) break;
        k *= 2;
    }
    /* three tries: each must show the download after sync waiting for most of the work,
     * and far longer than an idle download, to call it a sync that did not wait */
    int late = 0;
    timing worst = t;
    for (int trial = 0; trial < 3; trial++) {
        if (timed_chain(be, a, b, k, &t)) {
            r = fail_call(ctx, cs, rep, "unary sin, sync or download");
            goto out;
        }
        double total = t.calls + t.sync + t.after;
        if (total >= 0.02 && t.after > 0.5 * total && t.after > 20 * t.idle + 0.005) late++, worst = t;
    }
    if (late == 3) {
        char what[1024];
        snprintf(what, sizeof what,
                 "sync did not wait for the queued kernels: %d unary sin calls on f32[%d] returned in %.1f ms, sync "
                 "in %.1f ms, and then a 4-byte download took %.1f ms (an idle one: %.2f ms), in 3 of 3 tries; sync "
                 "must return only when everything queued is done",
                 k, SYNC_N, worst.calls * 1e3, worst.sync * 1e3, worst.after * 1e3, worst.idle * 1e3);
        r = fail(ctx, cs, rep, what);
        goto out;
    }
    if (vt->flags & FF_BACKEND_HOST_MEMORY) { /* after sync the memory itself must be final */
        ff_view va = view1(a, FF_F32, SYNC_N), vb = view1(b, FF_F32, SYNC_N);
        if (vt->unary(be->ctx, FF_UNARY_NEG, &vb, &va) || vt->sync(be->ctx)) {
            r = fail_call(ctx, cs, rep, "unary neg or sync");
            goto out;
        }
        memcpy(direct, b, nbytes);
        if (vt->download(be->ctx, b, 0, host, nbytes)) {
            r = fail_call(ctx, cs, rep, "download");
            goto out;
        }
        if (memcmp(direct, host, nbytes) != 0)
            r = fail(ctx, cs, rep, "host-memory backend: the buffer read directly after sync differs from its download: "
                                   "sync returned before the kernel had written it");
    }
out:
    if (a) vt->free(be->ctx, a);
    if (b) vt->free(be->ctx, b);
    free(host);
    free(direct);
    return r;
}

/* ---- upload_complete ------------------------------------------------------------- */
static const int64_t upload_sizes[] = {1, 4099, 262147, 1048573};

static cf_result run_upload(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    const ff_backend_vtable *vt = be->vt;
    int64_t n = upload_sizes[cs->p[0]];
    size_t nbytes = (size_t)n * sizeof(int32_t);
    int32_t *host = malloc(nbytes), *got = malloc(nbytes);
    void *a = vt->alloc(be->ctx, nbytes), *b = vt->alloc(be->ctx, nbytes);
    void *x = vt->alloc(be->ctx, SYNC_N * sizeof(float)), *y = vt->alloc(be->ctx, SYNC_N * sizeof(float));
    cf_result r = CF_PASS;
    if (!host || !got) abort();
    if (!a || !b || !x || !y) {
        r = fail_call(ctx, cs, rep, "alloc");
        goto out;
    }
    ff_view va = view1(a, FF_I32, n), vb = view1(b, FF_I32, n), vx = view1(x, FF_F32, SYNC_N),
            vy = view1(y, FF_F32, SYNC_N);
    for (int trial = 0; trial < 4 && r == CF_PASS; trial++) {
        int32_t base = 1000 * (trial + 1);
        /* trial 3: behind long work (sin over f32[2^21] twice), a kernel that writes a is
         * still queued when the upload into a comes; the upload must land after it (an
         * upload on a queue of its own lands first, and the kernel overwrites it) */
        if (trial == 3 && (vt->unary(be->ctx, FF_UNARY_SIN, &vy, &vx) || vt->unary(be->ctx, FF_UNARY_SIN, &vx, &vy) ||
                           vt->unary(be->ctx, FF_UNARY_NEG, &va, &vb)))
            r = fail_call(ctx, cs, rep, "unary sin or neg");
        for (int64_t i = 0; i < n; i++) host[i] = base + (int32_t)(i % 9973);
        if (r == CF_PASS && vt->upload(be->ctx, a, 0, host, nbytes)) {
            r = fail_call(ctx, cs, rep, "upload");
            break;
        }
        memset(host, 0x5A, nbytes); /* the host may reuse its memory as soon as upload returns */
        bool neg = trial == 0 || trial == 2; /* trials 1 and 3: download right after the upload */
        if (neg && vt->unary(be->ctx, FF_UNARY_NEG, &vb, &va)) {
            r = fail_call(ctx, cs, rep, "unary neg");
            break;
        }
        if (vt->download(be->ctx, neg ? b : a, 0, got, nbytes)) {
            r = fail_call(ctx, cs, rep, "download");
            break;
        }
        for (int64_t i = 0; i < n; i++) {
            int32_t want = base + (int32_t)(i % 9973);
            if (neg) want = -want;
            if (got[i] == want) continue;
            char what[1024];
            snprintf(what, sizeof what,
                     "upload was not complete when it returned: i32[%lld] uploaded, the host copy overwritten with "
                     "0x5A bytes right after, then %s: element %lld is %d, want %d (upload must have read the host "
                     "memory when it returns, and land after the work queued before it and before the work after it)",
                     (long long)n, neg ? "unary neg into another buffer and its download"
                                   : trial == 3 ? "downloaded at once (a unary neg writing it was queued, behind long work, before the upload)"
                                                : "downloaded at once",
                     (long long)i, got[i], want);
            r = fail(ctx, cs, rep, what);
            break;
        }
    }
out:
    if (a) vt->free(be->ctx, a);
    if (b) vt->free(be->ctx, b);
    if (x) vt->free(be->ctx, x);
    if (y) vt->free(be->ctx, y);
    free(host);
    free(got);
    return r;
}

/* ---- memory_stats_live ------------------------------------------------------------- */
static cf_result run_stats(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    ff_backend *be = ctx->t;
    const ff_backend_vtable *vt = be->vt;
    ff_status (*stats)(void *, size_t *, size_t *, size_t *) = FF_VT_OPT(be, memory_stats);
    if (!stats) {
        snprintf(rep->msg, sizeof rep->msg, "backend has no optional memory_stats entry");
        return CF_SKIP;
    }
    static const size_t sizes[] = {1 << 20, 65536 + 3, 4 << 20, 256};
    void *bufs[4] = {0};
    size_t before = 0, during = 0, after = 0, peak = 0, live = 0;
    cf_result r = CF_PASS;
    char what[1024];
    if (vt->sync(be->ctx) || stats(be->ctx, &before, NULL, NULL)) {
        r = fail_call(ctx, cs, rep, "sync or memory_stats");
        goto out;
    }
    unsigned char *junk = calloc(1, 4 << 20);
    if (!junk) abort();
    for (int i = 0; i < 4; i++) {
        if (!(bufs[i] = vt->alloc(be->ctx, sizes[i])) || vt->upload(be->ctx, bufs[i], 0, junk, sizes[i])) {
            free(junk);
            r = fail_call(ctx, cs, rep, "alloc or upload");
            goto out;
        }
        live += sizes[i];
    }
    free(junk);
    if (vt->sync(be->ctx) || stats(be->ctx, &during, NULL, &peak)) {
        r = fail_call(ctx, cs, rep, "sync or memory_stats");
        goto out;
    }
    if (during < before + live) {
        snprintf(what, sizeof what,
                 "memory_stats says %zu bytes in use with %zu bytes of live buffers allocated on top of the %zu in use "
                 "before: in use must count at least every live buffer's bytes",
                 during, live, before);
        r = fail(ctx, cs, rep, what);
        goto out;
    }
    if (peak < during) {
        snprintf(what, sizeof what, "memory_stats says peak %zu bytes below the %zu in use", peak, during);
        r = fail(ctx, cs, rep, what);
        goto out;
    }
    for (int i = 0; i < 4; i++) vt->free(be->ctx, bufs[i]), bufs[i] = NULL;
    if (vt->sync(be->ctx) || stats(be->ctx, &after, NULL, NULL)) {
        r = fail_call(ctx, cs, rep, "sync or memory_stats");
        goto out;
    }
    if (after + live > during) {
        snprintf(what, sizeof what,
                 "memory_stats says %zu bytes in use after %zu bytes of buffers were freed and sync returned (%zu "
                 "before the frees): freed buffers must leave in use",
                 after, live, during);
        r = fail(ctx, cs, rep, what);
    }
out:
    for (int i = 0; i < 4; i++)
        if (bufs[i]) vt->free(be->ctx, bufs[i]);
    return r;
}

static void add(const char *op, ff_dtype dt, const char *scen, cf_run_fn run, int kind, int opcode, int p0)
{
    cf_case c = {.family = "device", .dtype = dt, .level = CF_LEVEL_VTABLE, .run = run, .kind = kind,
                 .opcode = opcode, .p = {p0}};
    snprintf(c.op, sizeof c.op, "%s", op);
    snprintf(c.id, sizeof c.id, "device.%s.%s.%s", op, ff_dtype_name(dt), scen);
    cf_register(&c);
}

void cf_gen_device_sync(void)
{
    add("sync_waits", FF_F32, "sin_chain", run_sync, FF_KIND_UNARY, FF_UNARY_SIN, 0);
    for (int i = 0; i < (int)(sizeof upload_sizes / sizeof upload_sizes[0]); i++) {
        char scen[32];
        snprintf(scen, sizeof scen, "n%lld", (long long)upload_sizes[i]);
        add("upload_complete", FF_I32, scen, run_upload, FF_KIND_UNARY, FF_UNARY_NEG, i); /* and sin on f32 */
    }
    add("memory_stats_live", FF_U8, "four_buffers", run_stats, -1, 0, 0);
}
