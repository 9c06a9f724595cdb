/* Mutant: free keeps the buffer (a leak that every result survives). The suite must
 * count the bytes the backend still holds after a case freed everything it allocated. */
#include "mutant.h"

static void leaky_free(void *ctx, void *buf) { (void)ctx, (void)buf; }

MUTANT_ENTRY("mutant_leak", "mutant: free does nothing", free, leaky_free)
