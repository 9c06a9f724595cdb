/*
 * A persistent thread pool: nthreads - 1 workers plus the calling thread.
 *
 * One job at a time (a mutex taken with trylock: a nested or concurrent call simply
 * runs serially on its own thread, which is always correct). Workers spin briefly on a
 * generation counter after a job, so back-to-back ops do not pay a futex wake-up each,
 * then sleep on a condition variable so an idle pool costs no CPU and does not steal
 * cores from OpenBLAS's own threads during a matmul.
 *
 * Chunk i of a job belongs to worker i, but whoever claims it first runs it: the caller,
 * done with chunk 0, takes every chunk whose worker has not started yet. On a machine
 * whose cores are busy with other processes a worker may not run for a time slice or
 * more; the caller then does its work instead of waiting for it, so a pool of N threads
 * is never much slower than one (issue 49: 2 threads on a loaded machine used to cost
 * more CPU time than 1 and gain nothing). A claim is the job's generation stored in
 * claim[i] by compare-and-swap; a worker reads a job's fields only after its claim
 * succeeded, and the job cannot end before that chunk's done[i] says so, so a late worker
 * never reads the next job's fields as this one's.
 *
 * fork() copies only the calling thread: in a child (a DataLoader worker process) the
 * pool's workers do not exist, so every job there runs serially on the calling thread,
 * and the pool is freed without joining them.
 */
#define _GNU_SOURCE /* sched_getaffinity */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "blas_impl.h"

#define POOL_MAX 256
/* ~5-40 us of spinning, depending on the pause latency of the core */
#define POOL_SPIN 1000

typedef struct worker_arg {
    struct blas_pool *p;
    int id; /* 1..nworkers: the chunk it runs */
} worker_arg;

struct blas_pool {
    int nthreads;
    worker_arg wargs[POOL_MAX];
    pthread_t tid[POOL_MAX];
    int nworkers;
    pthread_mutex_t job_lock; /* held by the thread that owns the current job */
    pthread_mutex_t m;        /* protects sleepers and the condition variable */
    pthread_cond_t cv;
    int sleepers;
    atomic_uint gen;     /* bumped to publish a job */
    atomic_uint claim[POOL_MAX]; /* the gen of the last job whose chunk i was taken */
    atomic_uint done[POOL_MAX];  /* the gen of the last job whose chunk i has finished */
    atomic_int stop;
    /* the current job, written before gen is bumped */
    blas_task_fn fn;
    void *arg;
    int nchunks;
    int64_t n, align;
};

/* Set in the child of a fork (pthread_atfork; glibc drops the handler if the plugin is
 * unloaded): from then on no pool of this process has its workers. */
static atomic_int forked_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void) { atomic_store(&forked_child, 1); }
static void register_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Chunk i of nchunks over [0, n), boundaries rounded to multiples of align. */
static void chunk_bounds(int64_t n, int64_t align, int nchunks, int i, int64_t *b, int64_t *e)
{
    int64_t per = (n + nchunks - 1) / nchunks;
    per = (per + align - 1) / align * align;
    *b = per * i < n ? per * i : n;
    *e = per * (i + 1) < n ? per * (i + 1) : n;
}


/* Take chunk i of job g if nobody has: g - claim[i] > 0 in wrapping arithmetic. */
static int claim_chunk(blas_pool *p, int i, unsigned g)
{
    unsigned c = atomic_load_explicit(&p->claim[i], memory_order_relaxed);
    while ((int)(g - c) > 0) /* a failed exchange reloads c: taken, or only a stale read */
        if (atomic_compare_exchange_weak_explicit(&p->claim[i], &c, g, memory_order_acq_rel, memory_order_relaxed))
            return 1;
    return 0;
}

static void run_chunk(blas_pool *p, int i)
{
    int64_t b, e;
    chunk_bounds(p->n, p->align, p->nchunks, i, &b, &e);
    if (b < e) p->fn(p->arg, b, e);
}

static void *worker_main(void *varg)
{
    worker_arg *wa = varg;
    blas_pool *p = wa->p;
    unsigned seen = 0; /* gen when the pool was created: a job may be published before this thread runs */
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&p->gen, memory_order_acquire) == seen && !atomic_load(&p->stop)) {
            if (++spins < POOL_SPIN) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->m);
            p->sleepers++;
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->m);
            p->sleepers--;
            pthread_mutex_unlock(&p->m);
        }
        if (atomic_load(&p->stop)) return NULL;
        unsigned g = seen = atomic_load_explicit(&p->gen, memory_order_acquire);
        /* claim[i] older than g: chunk i of job g is still free (chunks past the job's
         * count were marked taken when it was published) */
        if (claim_chunk(p, wa->id, g)) {
            run_chunk(p, wa->id);
            atomic_store_explicit(&p->done[wa->id], g, memory_order_release);
        }
    }
}

int blas_default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

blas_pool *blas_pool_create(int nthreads)
{
    if (nthreads <= 1 || atomic_load(&forked_child)) return NULL;
    if (nthreads > POOL_MAX) nthreads = POOL_MAX;
    pthread_once(&atfork_once, register_atfork);
    blas_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->nthreads = nthreads;
    pthread_mutex_init(&p->job_lock, NULL);
    pthread_mutex_init(&p->m, NULL);
    pthread_cond_init(&p->cv, NULL);
    atomic_init(&p->gen, 0);
    for (int i = 0; i < POOL_MAX; i++) atomic_init(&p->claim[i], 0), atomic_init(&p->done[i], 0);
    atomic_init(&p->stop, 0);
    for (int i = 1; i < nthreads; i++) {
        p->wargs[i] = (worker_arg){p, i};
        if (pthread_create(&p->tid[p->nworkers], NULL, worker_main, &p->wargs[i]) != 0) break;
        p->nworkers++;
    }
    p->nthreads = p->nworkers + 1;
    return p;
}

void blas_pool_destroy(blas_pool *p)
{
    if (!p) return;
    if (atomic_load(&forked_child)) { /* its workers stayed in the parent; a lock may be held */
        free(p);
        return;
    }
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->m);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);
    for (int i = 0; i < p->nworkers; i++) pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->m);
    pthread_mutex_destroy(&p->job_lock);
    free(p);
}

void blas_parallel_for(blas_ctx *c, int64_t n, int64_t min_par, int64_t align, blas_task_fn fn, void *arg)
{
    blas_pool *p = c ? c->pool : NULL;
    if (n <= 0) return;
    if (!p || n < min_par || atomic_load_explicit(&forked_child, memory_order_relaxed) ||
        pthread_mutex_trylock(&p->job_lock) != 0) {
        fn(arg, 0, n);
        return;
    }
    int nchunks = p->nthreads;
    if (align < 1) align = 1;
    if (min_par > 0 && n / nchunks < min_par / 2) nchunks = (int)(n / (min_par / 2 > 0 ? min_par / 2 : 1));
    if (nchunks < 2) {
        pthread_mutex_unlock(&p->job_lock);
        fn(arg, 0, n);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->nchunks = nchunks;
    p->n = n;
    p->align = align;
    unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1; /* only the lock holder bumps it */
    for (int i = nchunks; i <= p->nworkers; i++) atomic_store_explicit(&p->claim[i], g, memory_order_relaxed);
    atomic_store_explicit(&p->gen, g, memory_order_release);
    pthread_mutex_lock(&p->m);
    if (p->sleepers) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);

    run_chunk(p, 0);
    for (int i = 1; i < nchunks; i++) /* the chunks of workers that have not started */
        if (claim_chunk(p, i, g)) {
            run_chunk(p, i);
            atomic_store_explicit(&p->done[i], g, memory_order_relaxed);
        }
    for (int i = 1; i < nchunks; i++) { /* the rest are running */
        int spins = 0;
        while (atomic_load_explicit(&p->done[i], memory_order_acquire) != g) {
            if (++spins < POOL_SPIN) cpu_relax();
            else sched_yield();
        }
    }
    pthread_mutex_unlock(&p->job_lock);
}
