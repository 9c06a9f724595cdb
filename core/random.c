/* The global generator: a seed plus a counter. Each random op reserves a block of
 * counters, so results do not depend on which backend or thread draws them. */
#include <pthread.h>

#include "ff_impl.h"

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t rng_seed = 0x5EEDF00Dull;
static uint64_t rng_counter;

void ff_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&rng_lock);
    rng_seed = seed;
    rng_counter = 0;
    pthread_mutex_unlock(&rng_lock);
}

void ff_random_next(uint64_t n, uint64_t *seed, uint64_t *counter_base)
{
    pthread_mutex_lock(&rng_lock);
    *seed = rng_seed;
    *counter_base = rng_counter;
    rng_counter += n;
    pthread_mutex_unlock(&rng_lock);
    FF_OBSERVE(random_draw, *seed, *counter_base, n);
}
