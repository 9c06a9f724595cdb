/* Mutant: init turns on flush-to-zero and denormals-are-zero (as a "fast math" backend
 * might, for speed). Every later subnormal result changes, the suite's own arithmetic
 * included; the suite must notice the environment, not just the values. */
#include "mutant.h" /* first: it defines _GNU_SOURCE */

#include <xmmintrin.h>

static ff_status ftz_init(const ff_host_api *host, void **ctx)
{
    _mm_setcsr(_mm_getcsr() | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return mutant_base->init(host, ctx);
}

MUTANT_ENTRY("mutant_ftz", "mutant: init turns on flush-to-zero and denormals-are-zero", init, ftz_init)
