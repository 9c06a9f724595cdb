#define _GNU_SOURCE /* clock_gettime */
/* Family "device", the concurrency part: device.threads_scratch.
 *
 * A kernel's scratch buffer handed back to the backend's allocator before the kernel
 * that reads it is enqueued passes every single-threaded case: nobody allocates in
 * between. The ABI lets entries be called from several threads at once, so this case
 * does: two threads run reductions long enough to need a second pass (which reads the
 * first pass's partial results from scratch) and check every answer exactly, while 24
 * others allocate small buffers, write garbage into them and free them, and one keeps
 * launching kernels. It runs for --stress seconds (default 2).
 *
 * The threads call the backend's own vtable (cf_guard_inner): the guard wrapper keeps
 * one table of live buffers for the single-threaded cases and is not thread-safe. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cf.h"

/* Lengths past 8192 whose split sums need little scratch (a few chunks of partial
 * results): the scratch of one thread and the 8-byte results of the others then come
 * from the same small size class of a caching allocator. */
static const int64_t lens[] = {8209, 12289, 16411, 20483, 100003};
#define NLENS ((int)(sizeof lens / sizeof lens[0]))
#define NSUMMERS 2
/* Grabbers mostly wait in a blocking upload; many of them keep one ready to take a
 * freed block (measured on PoCL: 12 catch the opencl mutant in 6 of 8 one-second runs,
 * 24 in 7 of 8) */
#define NGRABBERS 24

typedef struct stress {
    ff_backend *be;
    const ff_backend_vtable *vt;
    double deadline;
    void *src[NSUMMERS][NLENS]; /* summer t's i64 values: i % 7 + 1 + 10 t */
    int64_t want[NSUMMERS][NLENS];
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

typedef struct summer_arg {
    stress *s;
    int t;
} summer_arg;

static void *summer(void *arg)
{
    stress *s = ((summer_arg *)arg)->s;
    int t = ((summer_arg *)arg)->t;
    void *ctx = s->be->ctx;
    long done = 0;
    for (int it = t; now_s() < s->deadline && !failed(s); it++) {
        int l = it % NLENS;
        void *dst = s->vt->alloc(ctx, sizeof(int64_t));
        char msg[1024];
        if (!dst) {
            snprintf(msg, sizeof msg, "alloc of 8 bytes failed under concurrency: %s", ff_last_error());
            report(s, msg);
            break;
        }
        ff_view vd = {.buf = dst, .dtype = FF_I64, .ndim = 1, .shape = {1}, .strides = {1}};
        ff_view vs = {.buf = s->src[t][l], .dtype = FF_I64, .ndim = 1, .shape = {lens[l]}, .strides = {1}};
        int64_t got = 0;
        ff_status st = s->vt->reduce(ctx, FF_REDUCE_SUM, &vd, &vs, 1u);
        if (!st) st = s->vt->download(ctx, dst, 0, &got, sizeof got);
        s->vt->free(ctx, dst);
        if (st) {
            snprintf(msg, sizeof msg, "reduce sum or download failed under concurrency: %s", ff_last_error());
            report(s, msg);
        } else if (got != s->want[t][l]) {
            snprintf(msg, sizeof msg,
                     "reduce sum of i64[%lld] gave %lld, want %lld, while other threads allocated, filled and freed "
                     "buffers (a scratch buffer handed back to the allocator before the kernel that reads it ran?)",
                     (long long)lens[l], (long long)got, (long long)s->want[t][l]);
            report(s, msg);
        }
        done++;
    }
    pthread_mutex_lock(&s->lock);
    s->checked += done;
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

/* Allocates buffers of sizes drawn log-uniformly from 8 bytes to 64 KiB (a reduction's
 * scratch is small, and a caching allocator rounds sizes into classes), writes garbage
 * into each with upload (ordered when issued, and it takes no launch lock a backend may
 * have) and frees it. */
static void *grabber(void *arg)
{
    stress *s = arg;
    void *ctx = s->be->ctx;
    static unsigned char junk[1 << 16];
    memset(junk, 0xEE, sizeof junk); /* the same bytes from every grabber: a benign race */
    cf_rng rng;
    cf_rng_init(&rng, (uint64_t)(uintptr_t)&rng);
    while (now_s() < s->deadline && !failed(s)) {
        int64_t bits = cf_rng_int(&rng, 3, 15);
        size_t n = (size_t)cf_rng_int(&rng, (int64_t)1 << bits, ((int64_t)2 << bits) - 1);
        void *b = s->vt->alloc(ctx, n);
        if (!b) continue; /* out of memory under load is not what this case checks */
        s->vt->upload(ctx, b, 0, junk, n);
        s->vt->free(ctx, b);
    }
    return NULL;
}

/* Launches small fills back to back: a backend that serializes its launches then makes
 * the summers wait at each launch, between an entry's free and its next launch, where a
 * grabber can take the freed block. A download after every 8 keeps a device queue short,
 * so that the grabbers' blocking uploads return soon. */
static void *launcher(void *arg)
{
    stress *s = arg;
    void *ctx = s->be->ctx;
    void *b = s->vt->alloc(ctx, 64);
    if (!b) return NULL;
    ff_view v = {.buf = b, .dtype = FF_U8, .ndim = 1, .shape = {64}, .strides = {1}};
    unsigned char one;
    int can_fill = s->vt->supports(ctx, FF_KIND_FILL, 0, FF_U8);
    while (can_fill && now_s() < s->deadline && !failed(s)) {
        for (int i = 0; i < 8; i++) s->vt->fill(ctx, &v, (ff_scalar){238.0, 238});
        s->vt->download(ctx, b, 0, &one, 1);
    }
    s->vt->free(ctx, b);
    return NULL;
}

static cf_result run_threads(cf_ctx *ctx, const cf_case *cs, cf_report *rep)
{
    stress s = {.be = ctx->t, .vt = cf_guard_inner(ctx->t)};
    pthread_mutex_init(&s.lock, NULL);
    cf_result r = CF_PASS;
    char rerun[256];
    cf_rerun_str(rerun, sizeof rerun, ctx, cs);
    for (int t = 0; t < NSUMMERS; t++)
        for (int l = 0; l < NLENS && r == CF_PASS; l++) {
            size_t nbytes = (size_t)lens[l] * sizeof(int64_t);
            int64_t *host = malloc(nbytes);
            if (!host) abort();
            s.want[t][l] = 0;
            for (int64_t i = 0; i < lens[l]; i++) host[i] = i % 7 + 1 + 10 * t, s.want[t][l] += host[i];
            s.src[t][l] = s.vt->alloc(ctx->t->ctx, nbytes);
            if (!s.src[t][l] || s.vt->upload(ctx->t->ctx, s.src[t][l], 0, host, nbytes)) {
                snprintf(rep->msg, sizeof rep->msg, "alloc or upload failed: %s | rerun: %s", ff_last_error(), rerun);
                r = CF_FAIL;
            }
            free(host);
        }
    if (r == CF_PASS) {
        s.deadline = now_s() + (ctx->stress_s > 0 ? ctx->stress_s : 2.0);
        pthread_t th[NSUMMERS + NGRABBERS + 1];
        summer_arg args[NSUMMERS];
        int started = 0;
        for (int t = 0; t < NSUMMERS; t++) {
            args[t] = (summer_arg){&s, t};
            started += pthread_create(&th[started], NULL, summer, &args[t]) == 0;
        }
        for (int g = 0; g < NGRABBERS; g++) started += pthread_create(&th[started], NULL, grabber, &s) == 0;
        started += pthread_create(&th[started], NULL, launcher, &s) == 0;
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        if (s.failure[0]) {
            snprintf(rep->msg, sizeof rep->msg, "%s (%ld sums checked before it) | rerun: %s", s.failure, s.checked,
                     rerun);
            r = CF_FAIL;
        } else if (started < NSUMMERS + NGRABBERS + 1) {
            snprintf(rep->msg, sizeof rep->msg, "could not start the threads of the stress case | rerun: %s", rerun);
            r = CF_FAIL;
        }
    }
    s.vt->sync(ctx->t->ctx);
    for (int t = 0; t < NSUMMERS; t++)
        for (int l = 0; l < NLENS; l++)
            if (s.src[t][l]) s.vt->free(ctx->t->ctx, s.src[t][l]);
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
