/* Mutant 2: copy ignores the source's strides (reads it as row-major from its
 * offset) whenever the source is not contiguous and has no broadcast axis (so the
 * bad reads stay inside the source buffer). */
#include "mutant.h"

static ff_status bad_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ff_view s = *src;
    int64_t want = 1;
    int broadcast = 0;
    for (int d = s.ndim - 1; d >= 0; d--) {
        broadcast |= s.strides[d] == 0 && s.shape[d] > 1;
        s.strides[d] = want;
        want *= s.shape[d];
    }
    return mutant_base->copy(ctx, dst, broadcast ? src : &s);
}

MUTANT_ENTRY("mutant_strides", "mutant: copy ignores source strides", copy, bad_copy)
