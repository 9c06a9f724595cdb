/* The guarded test backend's internals: guarded mappings (guarded_mem.c) and the
 * context the vtable's wrappers share (guarded_backend.c). */
#ifndef FF_GUARDED_IMPL_H
#define FF_GUARDED_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "ff/backend_abi.h"

/* The reference backend compiled into this plugin, its entry renamed (CMakeLists.txt). */
const ff_backend_vtable *ff_guarded_base_entry(void);

typedef struct guarded_ctx {
    const ff_host_api *host;
    const ff_backend_vtable *base; /* the reference backend's vtable */
    void *base_ctx;
    /* Serialises every entry: between unprotect and protect a buffer is readable by any
     * thread, so two entries at once would let one thread see the other's window open
     * (and close it under the other's feet). */
    pthread_mutex_t lock;
    atomic_size_t in_use, peak;
    /* FF_GUARDED_NO_QMATMUL_DYNAMIC=1: decline qmatmul's dynamic mode, as a plugin built
     * before it does (the core then quantizes on the host and uploads u8) */
    int no_qdyn;
} guarded_ctx;

/* A handle is the data address XOR this tag: a non-canonical address on x86-64 and
 * AArch64, so anything that dereferences a handle as a host pointer faults at once. */
#define GUARDED_TAG ((uintptr_t)0x5a00000000000000ull)

void *ff_guarded_mem_alloc(guarded_ctx *c, size_t nbytes);
void ff_guarded_mem_free(guarded_ctx *c, void *handle);

/* Opens a buffer for the current entry: returns its host address and makes its data
 * pages readable and writable; *nbytes (may be NULL) receives its size. NULL with the
 * error set if the handle is not one of ours. */
void *ff_guarded_mem_open(guarded_ctx *c, const void *handle, size_t *nbytes, const char *fn);
/* Protects the buffer again (PROT_NONE). */
void ff_guarded_mem_close(const void *handle);

/* ---- one entry's window: lock, open the buffers it names, close them, unlock ---- */
/* GUARDED_ENTER(name) ... GUARDED_LEAVE; frames an entry's body (which sets st, or jumps
 * to out on an error); GUARDED_VIEW(v, src) opens src as the host view v
 * (guarded_window_view, guarded_compute.c). */
/* The buffers one entry has opened; the most views an entry takes is a fused program's. */
typedef struct guarded_window {
    const void *open[FF_FUSED_MAX_VIEWS + 8];
    int n;
} guarded_window;

static inline void guarded_window_close(guarded_window *w)
{
    for (int i = 0; i < w->n; i++) ff_guarded_mem_close(w->open[i]);
    w->n = 0;
}

#define GUARDED_ENTER(fn)                                                       \
    guarded_ctx *c = ctx;                                                       \
    guarded_window w = {.n = 0};                                                \
    ff_status st = FF_ERR_INVALID;                                              \
    const char *fname = fn;                                                     \
    pthread_mutex_lock(&c->lock)
#define GUARDED_VIEW(v, src)                                                    \
    ff_view v;                                                                  \
    if (guarded_window_view(c, &w, src, &v, fname)) goto out
#define GUARDED_LEAVE                                                           \
    out:                                                                        \
    guarded_window_close(&w);                                                   \
    pthread_mutex_unlock(&c->lock);                                             \
    return st

/* Fills vt's compute entries (fill ... random, and the optional ones the reference has)
 * with wrappers that run the reference's kernels on opened views (guarded_compute.c). */
void ff_guarded_compute_entries(ff_backend_vtable *vt, const ff_backend_vtable *base);

#endif
