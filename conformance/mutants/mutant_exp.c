/* Mutant 1: unary EXP on f32 is off by a relative 1e-4 (above the 1e-5 tolerance). */
#include "mutant.h"

static ff_status bad_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    ff_status st = mutant_base->unary(ctx, op, dst, src);
    if (st || op != FF_UNARY_EXP || dst->dtype != FF_F32) return st;
    float *p = dst->buf;
    MUTANT_FOR_EACH(dst, off, p[off] *= 1.0001f);
    return FF_OK;
}

MUTANT_ENTRY("mutant_exp", "mutant: exp on f32 off by 1e-4 relative", unary, bad_unary)
