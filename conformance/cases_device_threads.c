#define _GNU_SOURCE /* clock_gettime */
/* Family "device", the concurrency part: device.threads_scratch.
 *
 * A kernel's scratch buffer handed back to the backend's allocator before the kernel
 * that reads it is enqueued passes every single-threaded case: nobody allocates in
 * between. The ABI lets entries be called from several threads at once, so this case
 * does: two threads run reductions long enough to need a second pass (which reads the
 * first pass's partial results from scratch) and check every answer exactly, while two
 * others allocate and free buffers of every size class of the same magnitude and fill
 * them with garbage (upload). It runs for --stress seconds (default 1).
 *
 * The threads call the backend's own vtable (cf_guard_inner): the guard wrapper keeps
 * one table of live buffers for the single-threaded cases and is not thread-safe. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cf.h"

static const int64_t lens[] = {8209, 40009, 100003, 262147};
#define NLENS ((int)(sizeof lens / sizeof lens[0]))

typedef struct stress {
    ff_backend *be;
    const ff_backend_vtable *vt;
    double deadline;
    void *src[NLENS];          /* i64 values i % 7 + 1, shared read-only */
    int64_t want[NLENS];
    pthread_mutex_t lock;
    char failure[1024];        /* the first wrong answer or error */
    long checked;
} stress;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool failed(stress *s)
{
    pthread_mutex_lock(&s->lock);
    bool f = s->failure[0] != 0;
    pthread_mutex_unlock(&s->lock);
    return f;
}

static void report(stress *s, const char *msg)
{
    pthread_mutex_lock(&s->lock);
    if (!s->failure[0]) snprintf(s->failure, sizeof s->failure, "%s", msg);
    pthread_mutex_unlock(&s->lock);
}

static void *summer(void *arg)
{
    stress *s = arg;
    void *ctx = s->be->ctx;
    long done = 0;
    for (int it = 0; now_s() < s->deadline && !failed(s); it++) {
        int l = it % NLENS;
        void *dst = s->vt->alloc(ctx, sizeof(int64_t));
        char msg[1024];
        if (!dst) {
            snprintf(msg, sizeof msg, "alloc of 8 bytes failed under concurrency: %s", ff_last_error());
            report(s, msg);
            break;
        }
        ff_view vd = {.buf = dst, .dtype = FF_I64, .ndim = 1, .shape = {1}, .strides = {1}};
        ff_view vs = {.buf = s->src[l], .dtype = FF_I64, .ndim = 1, .shape = {lens[l]}, .strides = {1}};
        int64_t got = 0;
        ff_status st = s->vt->reduce(ctx, FF_REDUCE_SUM, &vd, &vs, 1u);
        if (!st) st = s->vt->download(ctx, dst, 0, &got, sizeof got);
        s->vt->free(ctx, dst);
        if (st) {
            snprintf(msg, sizeof msg, "reduce sum or download failed under concurrency: %s", ff_last_error());
            report(s, msg);
        } else if (got != s->want[l]) {
            snprintf(msg, sizeof msg,
                     "reduce sum of i64[%lld] gave %lld, want %lld, while other threads allocated, filled and freed "
                     "buffers (a scratch buffer handed back to the allocator before the kernel that reads it ran?)",
                     (long long)lens[l], (long long)got, (long long)s->want[l]);
            report(s, msg);
        }
        done++;
    }
    pthread_mutex_lock(&s->lock);
    s->checked += done;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Allocates every size class from 256 bytes to 1 MiB (steps of a quarter power of two,
 * as caching allocators round), writes garbage into each, and frees it. */
static void *scribbler(void *arg)
{
    stress *s = arg;
    void *ctx = s->be->ctx;
    unsigned char *junk = malloc(1 << 20);
    if (!junk) abort();
    memset(junk, 0xEE, 1 << 20);
    while (now_s() < s->deadline && !failed(s)) {
        for (size_t base = 256; base <= (1u << 19); base *= 2)
            for (size_t q = 4; q < 8; q++) {
                size_t n = base * q / 4 + (q & 1) * 8; /* not only exact class sizes */
                void *b = s->vt->alloc(ctx, n);
                if (!b) continue; /* out of memory under load is not what this case checks */
                s->vt->upload(ctx, b, 0, junk, n); /* blocking: keeps a device queue from growing */
                s->vt->free(ctx, b);
            }
    }
    free(junk);
    return NULL;
}

static cf_result run_threads(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    stress s = {.be = ctx->t, .vt = cf_guard_inner(ctx->t)};
    pthread_mutex_init(&s.lock, NULL);
    cf_result r = CF_PASS;
    char rerun[256];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    for (int l = 0; l < NLENS; l++) {
        size_t nbytes = (size_t)lens[l] * sizeof(int64_t);
        int64_t *host = malloc(nbytes);
        if (!host) abort();
        s.want[l] = 0;
        for (int64_t i = 0; i < lens[l]; i++) host[i] = i % 7 + 1, s.want[l] += host[i];
        s.src[l] = s.vt->alloc(ctx->t->ctx, nbytes);
        if (!s.src[l] || s.vt->upload(ctx->t->ctx, s.src[l], 0, host, nbytes)) {
            snprintf(rep->msg, sizeof rep->msg, "alloc or upload failed: %s | rerun: %s", ff_last_error(), rerun);
            r = CF_FAIL;
        }
        free(host);
    }
    if (r == CF_PASS) {
        s.deadline = now_s() + (ctx->stress_s > 0 ? ctx->stress_s : 1.0);
        pthread_t th[4];
        int started = 0;
        for (int i = 0; i < 4; i++)
            if (pthread_create(&th[started], NULL, i % 2 ? scribbler : summer, &s) == 0) started++;
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        if (s.failure[0]) {
            snprintf(rep->msg, sizeof rep->msg, "%s (%ld sums checked before it) | rerun: %s", s.failure, s.checked,
                     rerun);
            r = CF_FAIL;
        } else if (started < 4) {
            snprintf(rep->msg, sizeof rep->msg, "could not start the threads of the stress case | rerun: %s", rerun);
            r = CF_FAIL;
        }
    }
    s.vt->sync(ctx->t->ctx);
    for (int l = 0; l < NLENS; l++)
        if (s.src[l]) s.vt->free(ctx->t->ctx, s.src[l]);
    pthread_mutex_destroy(&s.lock);
    return r;
}

void cf_gen_device_threads(void)
{
    if (!cf_ref_supports(FF_KIND_REDUCE, FF_REDUCE_SUM, FF_I64)) return;
    cf_case c = {.family = "device", .op = "threads_scratch", .dtype = FF_I64, .level = CF_LEVEL_VTABLE,
                 .run = run_threads, .kind = FF_KIND_REDUCE, .opcode = FF_REDUCE_SUM};
    snprintf(c.id, sizeof c.id, "device.threads_scratch.i64.sums_beside_scribblers");
    cf_register(&c);
}
