/* Mutant 4: ARGMAX writes int32 indices into its int64 destination (the wrong
 * dtype: half-width elements at half-width offsets). */
#include "mutant.h" /* first: it defines _GNU_SOURCE */

#include <stdint.h>

static ff_status bad_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t mask)
{
    ff_status st = mutant_base->reduce(ctx, op, dst, src, mask);
    if (st || op != FF_REDUCE_ARGMAX) return st;
    /* read the right answer back, then store it again as int32 */
    int64_t n = ff_view_numel(dst), i = 0;
    int64_t *vals = malloc((size_t)(n ? n : 1) * sizeof *vals);
    if (!vals) return FF_ERR_OOM;
    const int64_t *p64 = dst->buf;
    MUTANT_FOR_EACH(dst, off, vals[i++] = p64[off]);
    int32_t *p32 = dst->buf;
    i = 0;
    MUTANT_FOR_EACH(dst, off, p32[off] = (int32_t)vals[i++]);
    free(vals);
    return FF_OK;
}

MUTANT_ENTRY("mutant_dtype", "mutant: argmax writes int32 into an int64 dst", reduce, bad_reduce)
