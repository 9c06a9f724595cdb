/* Guarded mappings: each buffer is its own mmap, laid out as
 *   [header page, read-only] [data pages, PROT_NONE] [guard page, PROT_NONE forever]
 * The data pages become readable only inside one of the backend's entries
 * (ff_guarded_mem_open/close); the header keeps what close needs without a lookup
 * table; the guard page makes an overrun by the backend itself fault. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "guarded_impl.h"

#define GUARDED_MAGIC 0x4646475541524431ull /* "FFGUARD1" */

typedef struct guarded_header {
    uint64_t magic;
    size_t nbytes;   /* as asked for */
    size_t data_len; /* page-rounded, at least one page */
} guarded_header;

static size_t page_size(void) { return (size_t)sysconf(_SC_PAGESIZE); }

static char *handle_data(const void *handle) { return (char *)((uintptr_t)handle ^ GUARDED_TAG); }

void *ff_guarded_mem_alloc(guarded_ctx *c, size_t nbytes)
{
    size_t pg = page_size();
    if (nbytes > SIZE_MAX - 4 * pg) {
        c->host->set_error("guarded alloc: %zu bytes is too large", nbytes);
        return NULL;
    }
    size_t data_len = nbytes ? (nbytes + pg - 1) / pg * pg : pg;
    char *base = mmap(NULL, data_len + 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        c->host->set_error("guarded alloc: mmap of %zu bytes failed", data_len + 2 * pg);
        return NULL;
    }
    guarded_header *h = (guarded_header *)base;
    h->magic = GUARDED_MAGIC;
    h->nbytes = nbytes;
    h->data_len = data_len;
    if (mprotect(base, pg, PROT_READ) != 0 || mprotect(base + pg, data_len + pg, PROT_NONE) != 0) {
        munmap(base, data_len + 2 * pg);
        c->host->set_error("guarded alloc: mprotect failed (vm.max_map_count reached?)");
        return NULL;
    }
    size_t now = atomic_fetch_add(&c->in_use, nbytes) + nbytes;
    size_t peak = atomic_load(&c->peak);
    while (now > peak && !atomic_compare_exchange_weak(&c->peak, &peak, now)) {
    }
    return (void *)((uintptr_t)(base + pg) ^ GUARDED_TAG);
}

static guarded_header *header_of(const void *handle)
{
    return (guarded_header *)(handle_data(handle) - page_size());
}

void ff_guarded_mem_free(guarded_ctx *c, void *handle)
{
    if (!handle) return;
    guarded_header *h = header_of(handle);
    size_t len = h->data_len + 2 * page_size();
    atomic_fetch_sub(&c->in_use, h->nbytes);
    munmap(h, len);
}

void *ff_guarded_mem_open(guarded_ctx *c, const void *handle, size_t *nbytes, const char *fn)
{
    /* a handle that is not ours points its header at an unmapped or foreign page: check
     * the tag first so that a host pointer handed in by mistake is refused, not read */
    if (!handle || ((uintptr_t)handle & GUARDED_TAG) != GUARDED_TAG) {
        c->host->set_error("guarded %s: buffer %p is not a guarded handle (a host pointer?)", fn, handle);
        return NULL;
    }
    guarded_header *h = header_of(handle);
    if (h->magic != GUARDED_MAGIC) {
        c->host->set_error("guarded %s: buffer %p has no guarded header", fn, handle);
        return NULL;
    }
    char *data = handle_data(handle);
    if (mprotect(data, h->data_len, PROT_READ | PROT_WRITE) != 0) {
        c->host->set_error("guarded %s: mprotect of %zu bytes failed", fn, h->data_len);
        return NULL;
    }
    if (nbytes) *nbytes = h->nbytes;
    return data;
}

void ff_guarded_mem_close(const void *handle)
{
    guarded_header *h = header_of(handle);
    mprotect(handle_data(handle), h->data_len, PROT_NONE);
}
