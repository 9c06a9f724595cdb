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

#endif
