/* Mutant 5: unary EXP on f32 segfaults (a wild write), SQRT on f32 hangs. The suite must
 * survive both: each becomes a CRASH line naming the case and how the worker ended (the
 * signal, or the timeout), and the run goes on to its summary. */
#include "mutant.h" /* first: it defines _GNU_SOURCE */

#include <signal.h>
#include <unistd.h>

static ff_status bad_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    if (op == FF_UNARY_EXP && dst->dtype == FF_F32 && ff_view_numel(dst) > 0) raise(SIGSEGV);
    if (op == FF_UNARY_SQRT && dst->dtype == FF_F32 && ff_view_numel(dst) > 0)
        for (;;) pause();
    return mutant_base->unary(ctx, op, dst, src);
}

MUTANT_ENTRY("mutant_crash", "mutant: exp on f32 segfaults, sqrt on f32 hangs", unary, bad_unary)
