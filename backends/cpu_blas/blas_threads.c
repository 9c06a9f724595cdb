/*
 * A persistent thread pool: nthreads - 1 workers plus the calling thread.
 *
 * One job at a time (a mutex taken with trylock: a nested or concurrent call simply
 * runs serially on its own thread, which is always correct). Workers spin briefly on a
 * generation counter after a job, so back-to-back ops do not pay a futex wake-up each,
 * then sleep on a condition variable so an idle pool costs no CPU and does not steal
 * cores from OpenBLAS's own threads during a matmul.
 *
 * A job is cut into pieces (up to PIECES_PER_THREAD per thread, each at least half the
 * caller's min_par) that the caller and the workers take one at a time from a shared
 * ticket, so whoever is running does the work: on a machine whose cores are busy with
 * other processes a worker may not run for a time slice or more, and then holds up at
 * most the one piece it took, while a worker that has not started holds up nothing
 * (issue 49: 2 threads on a loaded machine used to cost more CPU time than 1 and gain
 * nothing). The pieces' bounds depend only on n, align and the piece count, never on
 * who runs them, so results are the same bits whichever thread takes which piece.
 *
 * The ticket is one 64-bit word: the job's generation, the next piece, the piece count.
 * A piece is taken by compare-and-swap on it, so a thread reads a job's fields only
 * after it took one of that job's pieces, and the job cannot end (nor the next be
 * published) before every piece taken has finished: a late worker never reads the next
 * job's fields as this one's.
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
#define PIECES_PER_THREAD 4
/* ~5-40 us of spinning, depending on the pause latency of the core */
#define POOL_SPIN 1000

struct blas_pool {
    int nthreads;
    pthread_t tid[POOL_MAX];
    int nworkers;
    pthread_mutex_t job_lock; /* held by the thread that owns the current job */
    pthread_mutex_t m;        /* protects sleepers and the condition variable */
    pthread_cond_t cv;
    int sleepers;
    /* generation << 32 | next piece << 16 | pieces: storing it publishes a job (a new
     * generation, which is what idle workers wait for), and its pieces are taken by
     * compare-and-swap on it */
    _Atomic uint64_t ticket;
    atomic_int finished; /* pieces of the current job that have run */
    atomic_int stop;
    /* the current job, written before its ticket is stored */
    blas_task_fn fn;
    void *arg;
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


/* The current job's generation. */
static unsigned generation(blas_pool *p)
{
    return (unsigned)(atomic_load_explicit(&p->ticket, memory_order_acquire) >> 32);
}

/* Takes and runs pieces of job g until none is left; returns how many it ran. */
static int run_pieces(blas_pool *p, unsigned g)
{
    int ran = 0;
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    for (;;) {
        unsigned next = (unsigned)(t >> 16) & 0xffffu, pieces = (unsigned)t & 0xffffu;
        if ((unsigned)(t >> 32) != g || next >= pieces) return ran;
        if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + (1u << 16), memory_order_acq_rel,
                                                   memory_order_acquire))
            continue; /* t reloaded: another thread took it, or the job moved on */
        int64_t b, e;
        chunk_bounds(p->n, p->align, (int)pieces, (int)next, &b, &e);
        if (b < e) p->fn(p->arg, b, e);
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
        ran++;
        t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    }
}

static void *worker_main(void *varg)
{
    blas_pool *p = varg;
    unsigned seen = 0; /* the generation when the pool was created: a job may be published before this thread runs */
    /* Spinning pays when the next job has work for this thread; when the last one had none
     * (the caller took every piece before this thread got to run: a loaded machine, or jobs
     * too small to share) it would only take CPU time from the caller's serial work, so
     * the thread sleeps at once. */
    int spin_limit = POOL_SPIN;
    for (;;) {
        int spins = 0;
        while (generation(p) == seen && !atomic_load(&p->stop)) {
            if (++spins < spin_limit) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->m);
            p->sleepers++;
            while (generation(p) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->cv, &p->m);
            p->sleepers--;
            pthread_mutex_unlock(&p->m);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = generation(p);
        spin_limit = run_pieces(p, seen) > 0 ? POOL_SPIN : 0;
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
    atomic_init(&p->ticket, 0);
    atomic_init(&p->finished, 0);
    atomic_init(&p->stop, 0);
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&p->tid[p->nworkers], NULL, worker_main, p) != 0) break;
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
    int64_t pieces = (int64_t)p->nthreads * PIECES_PER_THREAD;
    if (align < 1) align = 1;
    if (min_par > 0 && n / pieces < min_par / 2) pieces = n / (min_par / 2 > 0 ? min_par / 2 : 1);
    if (pieces > 0xffff) pieces = 0xffff;
    if (pieces < 2) {
        pthread_mutex_unlock(&p->job_lock);
        fn(arg, 0, n);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->align = align;
    unsigned g = generation(p) + 1; /* only the lock holder publishes */
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    atomic_store_explicit(&p->ticket, (uint64_t)g << 32 | (uint64_t)pieces, memory_order_release);
    pthread_mutex_lock(&p->m);
    if (p->sleepers) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->m);

    run_pieces(p, g);
    int spins = 0; /* the pieces others took are running */
    while (atomic_load_explicit(&p->finished, memory_order_acquire) < (int)pieces) {
        if (++spins < POOL_SPIN) cpu_relax();
        else sched_yield();
    }
    pthread_mutex_unlock(&p->job_lock);
}
