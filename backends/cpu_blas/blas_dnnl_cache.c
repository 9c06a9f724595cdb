/*
 * The matmul primitive cache (blas_dnnl_cache.h): one most-recently-used list of idle
 * primitives per thread.
 *
 * Invariants: an entry is either in its owner's list (idle, owned by the cache) or held
 * by its owner (acquired, out of the list), so the stream and memory objects it carries
 * are never used by two threads at once, and clearing the cache never frees one in use.
 * An entry is only ever run by the thread that made it: a primitive made on one thread
 * and run on another left that thread's dynamic TLS in a state LeakSanitizer's exit scan
 * crashed on (ff-conformance -o qmatmul under ASan, 1 run in 3), and oneDNN's per-thread
 * state is what its own usage assumes. So each thread keeps its own list: a lookup walks
 * only the calling thread's entries, under a mutex only clear() ever contends for. One
 * list for all threads under one mutex serialized a product's 16 slices on a 16-thread
 * pool (each walking the other threads' entries inside the lock). The pool's threads
 * live as long as the backend, so each keeps its slices' primitives; a thread's list is
 * freed when the thread exits. The oldest entries fall off past the capacity (per thread).
 *
 * Memory: an entry holds oneDNN's descriptor and primitive (its JIT kernels, shared with
 * oneDNN's own cache) and no data: the memory objects wrap the caller's buffers per
 * call, the scratchpad too (the caller's, from our caching allocator: see desc_make).
 */
#include "blas_impl.h"

#ifdef FF_BLAS_HAVE_DNNL
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blas_dnnl_cache.h"

/* Idle primitives kept at most per thread: FF_DNNL_CACHE_CAPACITY (read once, >= 0; 0
 * keeps none), default 64 (a model's shapes times the row slices one thread runs). */
#define CACHE_CAP_DEFAULT 64

/* One thread's idle entries, most recently released first. */
typedef struct tcache {
    pthread_mutex_t m; /* the owner's lookups and releases; clear() from another thread */
    blas_dnnl_prim *head, *tail;
    int count;
    struct tcache *prev, *next; /* in the registry */
} tcache;

static int cap = CACHE_CAP_DEFAULT;
static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER; /* the registry of thread lists */
static tcache *registry;
static pthread_key_t tkey;
static int tkey_made;

static void prim_destroy(blas_dnnl_prim *p);

static void list_destroy(blas_dnnl_prim *p)
{
    while (p) {
        blas_dnnl_prim *next = p->next;
        prim_destroy(p);
        p = next;
    }
}

/* At thread exit: the thread's list leaves the registry and is freed. */
static void tcache_exit(void *v)
{
    tcache *t = v;
    pthread_mutex_lock(&reg_lock);
    if (t->prev) t->prev->next = t->next;
    else registry = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&reg_lock);
    list_destroy(t->head);
    pthread_mutex_destroy(&t->m);
    free(t);
}

static void engine_init(void)
{
    const char *env = getenv("FF_DNNL_CACHE_CAPACITY");
    char *end = NULL;
    long v = env && *env ? strtol(env, &end, 10) : -1;
    if (end && !*end && v >= 0 && v <= 1 << 20) cap = (int)v;
    tkey_made = pthread_key_create(&tkey, tcache_exit) == 0;
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

dnnl_engine_t blas_dnnl_engine(void)
{
    pthread_once(&engine_once, engine_init);
    return engine;
}

/* The calling thread's list, made on first use; NULL when out of memory. */
static tcache *my_cache(void)
{
    if (!tkey_made) return NULL;
    tcache *t = pthread_getspecific(tkey);
    if (t) return t;
    if (!(t = calloc(1, sizeof *t))) return NULL;
    pthread_mutex_init(&t->m, NULL);
    if (pthread_setspecific(tkey, t) != 0) {
        pthread_mutex_destroy(&t->m);
        free(t);
        return NULL;
    }
    pthread_mutex_lock(&reg_lock);
    t->next = registry;
    if (registry) registry->prev = t;
    registry = t;
    pthread_mutex_unlock(&reg_lock);
    return t;
}

static void prim_destroy(blas_dnnl_prim *p)
{
    for (int i = 0; i < 5; i++)
        if (p->mem[i]) dnnl_memory_destroy(p->mem[i]);
    if (p->stream) dnnl_stream_destroy(p->stream);
    if (p->prim) dnnl_primitive_destroy(p->prim);
    if (p->pd) dnnl_primitive_desc_destroy(p->pd);
    free(p);
}

static void unlink_entry(tcache *t, blas_dnnl_prim *p)
{
    if (p->prev) p->prev->next = p->next;
    else t->head = p->next;
    if (p->next) p->next->prev = p->prev;
    else t->tail = p->prev;
    p->prev = p->next = NULL;
    t->count--;
}

static dnnl_status_t desc_make(blas_dnnl_prim *p)
{
    const blas_dnnl_key *k = &p->key;
    dnnl_data_type_t ta = k->kind == BLAS_DNNL_U8S8_S32 ? dnnl_u8 : dnnl_bf16;
    dnnl_data_type_t tb = k->kind == BLAS_DNNL_U8S8_S32 ? dnnl_s8 : dnnl_bf16;
    dnnl_data_type_t tc = k->kind == BLAS_DNNL_BF16_BF16 ? dnnl_bf16 : k->kind == BLAS_DNNL_BF16_F32 ? dnnl_f32 : dnnl_s32;
    dnnl_memory_desc_t a, b, c, bias;
    dnnl_dims_t da = {k->m, k->k}, db = {k->k, k->n}, dc = {k->m, k->n}, dbias = {1, k->n};
    dnnl_dims_t sa = {k->ars, k->acs}, sb = {k->brs, k->bcs}, sc = {k->crs, k->ccs}, sbias = {k->n, 1};
    dnnl_matmul_desc_t md;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&a, 2, da, ta, sa);
    if (s == dnnl_success) s = dnnl_memory_desc_init_by_strides(&b, 2, db, tb, sb);
    if (s == dnnl_success) s = dnnl_memory_desc_init_by_strides(&c, 2, dc, tc, sc);
    if (s == dnnl_success && k->bias) s = dnnl_memory_desc_init_by_strides(&bias, 2, dbias, tb, sbias);
    if (s == dnnl_success) s = dnnl_matmul_desc_init(&md, &a, &b, k->bias ? &bias : NULL, &c);
    /* the scratchpad is the caller's (user mode): oneDNN's own is per thread (a
     * thread-local buffer sized and counted by the primitives made on that thread), which
     * a primitive made on one thread and run or destroyed on another corrupts */
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    if (s == dnnl_success) s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success) s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    if (s == dnnl_success && k->post) {
        float alpha = k->post == dnnl_eltwise_swish ? 1.0f : 0.0f;
        s = dnnl_post_ops_create(&po);
        if (s == dnnl_success) s = dnnl_post_ops_append_eltwise(po, 1.0f, (dnnl_alg_kind_t)k->post, alpha, 0.0f);
        if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(attr, po);
    }
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&p->pd, &md, attr, engine, NULL);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return s;
}

/* A new entry for key: the descriptor always (a declined key is cached too, so that a
 * decline costs a lookup), the primitive and its objects only when accepted. */
static blas_dnnl_prim *prim_make(const blas_dnnl_key *key, int isa, int (*accept)(const_dnnl_primitive_desc_t))
{
    blas_dnnl_prim *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->key = *key, p->isa = isa;
    dnnl_status_t s = desc_make(p);
    if (s != dnnl_success) {
        prim_destroy(p);
        return NULL;
    }
    if (dnnl_primitive_desc_query(p->pd, dnnl_query_impl_info_str, 0, &p->impl) != dnnl_success || !p->impl)
        p->impl = "?";
    p->accepted = !accept || accept(p->pd);
    if (!p->accepted) return p;
    static const dnnl_query_t q[5] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md,
                                      dnnl_query_scratchpad_md, dnnl_query_weights_md};
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
    p->scratch_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
    s = dnnl_primitive_create(&p->prim, p->pd);
    if (s == dnnl_success) s = dnnl_stream_create(&p->stream, engine, dnnl_stream_default_flags);
    for (int i = 0; i < 5 && s == dnnl_success; i++)
        if ((i != 3 || p->scratch_bytes) && (i != 4 || key->bias)) /* the bias: the weights md's second entry */
            s = dnnl_memory_create(&p->mem[i], dnnl_primitive_desc_query_md(p->pd, q[i], i == 4), engine,
                                   DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
        prim_destroy(p);
        return NULL;
    }
    return p;
}

blas_dnnl_prim *blas_dnnl_acquire(const blas_dnnl_key *key, int (*accept)(const_dnnl_primitive_desc_t))
{
    if (!blas_dnnl_engine()) return NULL;
    int isa = (int)dnnl_get_effective_cpu_isa();
    tcache *t = my_cache();
    blas_dnnl_prim *p = NULL;
    if (t) {
        pthread_mutex_lock(&t->m);
        for (p = t->head; p && !(p->isa == isa && !memcmp(&p->key, key, sizeof *key)); p = p->next) {}
        if (p) unlink_entry(t, p);
        pthread_mutex_unlock(&t->m);
    }
    if (p) return p;
    /* one creation at a time: oneDNN's own primitive cache, which a creation goes
     * through, publishes its entries by means ThreadSanitizer cannot see (atomics inside
     * the uninstrumented libdnnl); our mutex orders them. A miss is rare, so nothing
     * waits in the steady state. */
    pthread_mutex_lock(&create_lock);
    p = prim_make(key, isa, accept);
    pthread_mutex_unlock(&create_lock);
    return p;
}

void blas_dnnl_release(blas_dnnl_prim *p)
{
    if (!p) return;
    tcache *t = my_cache(); /* the owner's: only the owner acquires and releases */
    if (!t) {
        prim_destroy(p);
        return;
    }
    blas_dnnl_prim *drop = NULL;
    pthread_mutex_lock(&t->m);
    p->prev = NULL, p->next = t->head;
    if (t->head) t->head->prev = p;
    else t->tail = p;
    t->head = p;
    if (++t->count > cap) unlink_entry(t, drop = t->tail);
    pthread_mutex_unlock(&t->m);
    if (drop) prim_destroy(drop);
}

dnnl_status_t blas_dnnl_execute(blas_dnnl_prim *p, const void *a, const void *b, const void *bias, void *c,
                                void *scratch)
{
    dnnl_status_t s = dnnl_memory_set_data_handle(p->mem[0], (void *)a);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->mem[1], (void *)b);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->mem[2], c);
    if (s == dnnl_success && p->mem[3]) s = scratch ? dnnl_memory_set_data_handle(p->mem[3], scratch) : dnnl_invalid_arguments;
    if (s == dnnl_success && (!p->mem[4]) != !bias) s = dnnl_invalid_arguments;
    if (s == dnnl_success && p->mem[4]) s = dnnl_memory_set_data_handle(p->mem[4], (void *)bias);
    dnnl_exec_arg_t args[5] = {{DNNL_ARG_SRC, p->mem[0]}, {DNNL_ARG_WEIGHTS, p->mem[1]}, {DNNL_ARG_DST, p->mem[2]}};
    int n = 3;
    if (p->mem[3]) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->mem[3]};
    if (p->mem[4]) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->mem[4]};
    if (s == dnnl_success) s = dnnl_primitive_execute(p->prim, p->stream, n, args);
    if (s == dnnl_success) s = dnnl_stream_wait(p->stream);
    return s;
}

void blas_dnnl_cache_clear(void)
{
    pthread_mutex_lock(&reg_lock);
    for (tcache *t = registry; t; t = t->next) {
        pthread_mutex_lock(&t->m);
        blas_dnnl_prim *p = t->head;
        t->head = t->tail = NULL, t->count = 0;
        pthread_mutex_unlock(&t->m);
        list_destroy(p);
    }
    pthread_mutex_unlock(&reg_lock);
}

/* At plugin unload (the core dlcloses backends): the primitives before the engine they
 * were made on, and the thread lists with the key, whose exit destructor is this
 * plugin's code (a thread that outlives the unload must not call it). */
__attribute__((destructor)) static void cache_fini(void)
{
    blas_dnnl_cache_clear();
    if (tkey_made) pthread_key_delete(tkey);
    tkey_made = 0;
    pthread_mutex_lock(&reg_lock);
    while (registry) {
        tcache *t = registry;
        registry = t->next;
        pthread_mutex_destroy(&t->m);
        free(t);
    }
    pthread_mutex_unlock(&reg_lock);
    if (engine) dnnl_engine_destroy(engine);
    engine = NULL;
}
#else
void blas_dnnl_cache_clear(void) {}
#endif
