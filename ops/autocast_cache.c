/* The autocast weight cache (include/ff/amp.h): inside one autocast region a parameter is
 * cast to the half dtype once, however many forwards use it, as PyTorch's autocast cache
 * does. Without it every ff_linear forward re-reads the f32 weight and writes a fresh half
 * copy (for a 1024 x 1024 layer, 6 MB of traffic and an allocation per call).
 *
 * What is cached: casts f32 -> f16/bf16 of leaf tensors that require grad (parameters;
 * PyTorch's rule), keyed by the tensor's identity, the target dtype, the storage's version
 * counter (every kernel write bumps it: an optimizer step or any in-place update makes the
 * entry stale and the next use casts afresh) and the grad mode at cast time (a cast made
 * under no_grad has no history and must not serve a forward that needs gradients). The
 * cache is per thread, like the mode, and holds a reference to both the parameter (so its
 * address cannot be reused by another tensor while the entry lives) and the cast; every
 * reference is released when the region ends (ff_autocast_set to another dtype). */
#include <stdlib.h>

#include "ops_impl.h"

typedef struct cache_entry {
    ff_tensor *src, *cast; /* both owned */
    unsigned long version;
    ff_dtype dtype;
    bool grad;
} cache_entry;

static _Thread_local cache_entry *entries;
static _Thread_local int n_entries, cap_entries;
static _Thread_local int64_t n_casts, n_hits; /* for tests: ff_autocast_cache_stats */

static bool cacheable(const ff_tensor *t, ff_dtype target)
{
    return t->dtype == FF_F32 && (target == FF_F16 || target == FF_BF16) && t->requires_grad && !t->grad_fn;
}

ff_tensor *ff_autocast_cast(const ff_tensor *t, ff_dtype target, const char *fn)
{
    if (!t || !cacheable(t, target)) {
        if (t && t->dtype != target) n_casts++;
        return ff_op_cast(t, target, fn);
    }
    unsigned long version = atomic_load(&t->storage->version);
    bool grad = ff_grad_enabled();
    cache_entry *e = NULL;
    for (int i = 0; i < n_entries && !e; i++)
        if (entries[i].src == t && entries[i].dtype == target) e = &entries[i];
    if (e && e->version == version && e->grad == grad) {
        n_hits++;
        return ff_tensor_retain(e->cast);
    }
    ff_tensor *cast = ff_op_cast(t, target, fn);
    if (!cast) return NULL;
    n_casts++;
    if (!e && n_entries == cap_entries) { /* no room: the cast still serves this use */
        int cap = cap_entries ? 2 * cap_entries : 16;
        cache_entry *grown = realloc(entries, (size_t)cap * sizeof *grown);
        if (!grown) return cast;
        entries = grown, cap_entries = cap;
    }
    if (e) {
        ff_tensor_release(e->cast);
    } else {
        e = &entries[n_entries++];
        e->src = ff_tensor_retain((ff_tensor *)t), e->dtype = target;
    }
    e->cast = ff_tensor_retain(cast), e->version = version, e->grad = grad;
    return cast;
}

void ff_autocast_cache_clear(void)
{
    for (int i = 0; i < n_entries; i++) ff_tensor_release(entries[i].cast), ff_tensor_release(entries[i].src);
    free(entries);
    entries = NULL, n_entries = cap_entries = 0;
}

void ff_autocast_cache_stats(int64_t *casts, int64_t *hits)
{
    if (casts) *casts = n_casts;
    if (hits) *hits = n_hits;
}
