/* Guard bytes for the op level. Vtable cases hand the backend views into buffers with
 * sentinels on both sides (cf_exec.c), but a public op allocates its own tensors, so
 * an out-of-bounds write there would corrupt the heap silently. cf_guard_install puts
 * a wrapped copy of the vtable in front of the backend under test: every alloc asks
 * for CF_GUARD_BYTES more, fills the tail with a pattern through upload, and free reads
 * it back through download. Only upload/download touch the memory, so this works for a
 * device backend too; the handle is opaque, hence a tail guard only (a write before the
 * start would need an offset into the handle). cf_run_case turns a damaged guard into
 * the case's failure. One backend per process is tested, so the state is global. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf.h"
#include "ff_impl.h"

#define CF_GUARD_BYTES 64
#define CF_GUARD_BYTE 0xA5

typedef struct live {
    void *buf;
    size_t nbytes;
} live;

static const ff_backend_vtable *inner;
static ff_backend_vtable wrapped;
static live *lives;
static size_t nlive, caplive;
static char damage[256]; /* the first damaged guard since the last cf_guard_take */

static void *guard_alloc(void *ctx, size_t nbytes)
{
    if (nbytes > SIZE_MAX - CF_GUARD_BYTES) return inner->alloc(ctx, nbytes); /* let it fail as it would */
    void *buf = inner->alloc(ctx, nbytes + CF_GUARD_BYTES);
    if (!buf) return NULL;
    unsigned char pat[CF_GUARD_BYTES];
    memset(pat, CF_GUARD_BYTE, sizeof pat);
    if (nlive == caplive) {
        size_t cap = caplive ? 2 * caplive : 64;
        live *n = realloc(lives, cap * sizeof *n);
        if (!n) abort();
        lives = n, caplive = cap;
    }
    if (inner->upload(ctx, buf, nbytes, pat, sizeof pat) != FF_OK) { /* no guard: track it unguarded */
        lives[nlive++] = (live){buf, SIZE_MAX};
        return buf;
    }
    lives[nlive++] = (live){buf, nbytes};
    return buf;
}

static void guard_free(void *ctx, void *buf)
{
    size_t i = 0;
    while (i < nlive && lives[i].buf != buf) i++;
    if (buf && i < nlive) {
        size_t n = lives[i].nbytes;
        lives[i] = lives[--nlive];
        unsigned char got[CF_GUARD_BYTES];
        if (n != SIZE_MAX && inner->sync(ctx) == FF_OK && inner->download(ctx, buf, n, got, sizeof got) == FF_OK) {
            for (int k = 0; k < CF_GUARD_BYTES; k++)
                if (got[k] != CF_GUARD_BYTE && !damage[0]) {
                    snprintf(damage, sizeof damage,
                             "out-of-bounds write through a public op: byte %d past the end of a %zu-byte "
                             "tensor storage was overwritten (0x%02x, guard 0x%02x)",
                             k, n, got[k], CF_GUARD_BYTE);
                    break;
                }
        }
    }
    inner->free(ctx, buf);
}

void cf_guard_install(ff_backend *be)
{
    if (!be || inner) return;
    inner = be->vt;
    size_t n = inner->struct_size < sizeof wrapped ? inner->struct_size : sizeof wrapped;
    memcpy(&wrapped, inner, n);
    wrapped.alloc = guard_alloc;
    wrapped.free = guard_free;
    be->vt = &wrapped;
}

bool cf_guard_take(char *msg, size_t n)
{
    if (!damage[0]) return false;
    snprintf(msg, n, "%s", damage);
    damage[0] = 0;
    return true;
}

const ff_backend_vtable *cf_guard_inner(const ff_backend *be)
{
    return be->vt == &wrapped ? inner : be->vt;
}
