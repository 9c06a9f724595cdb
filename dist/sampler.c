/* Sharded sampling, as torch.utils.data.DistributedSampler: each epoch one order of the n
 * samples (the same on every rank: a Fisher-Yates shuffle driven by splitmix64 of seed
 * and epoch), padded by wrapping around to a multiple of the group size or cut down to
 * one (drop_last), and rank r takes elements r, r + size, r + 2 size, ... */
#include <stdlib.h>

#include "dist_impl.h"

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias (rejection). */
static uint64_t below(uint64_t *s, uint64_t n)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
    do x = splitmix64(s);
    while (x >= lim);
    return x % n;
}

int64_t ff_dist_shard_size(int64_t n, bool drop_last)
{
    int64_t size = ff_dist_size();
    if (n <= 0) return 0;
    return drop_last ? n / size : (n + size - 1) / size;
}

ff_status ff_dist_shard_indices(int64_t n, uint64_t seed, int64_t epoch, bool shuffle, bool drop_last, int64_t *out,
                                int64_t cap)
{
    static const char fn[] = "ff_dist_shard_indices";
    if (n < 0) return ff_error(FF_ERR_INVALID, "%s: n = %lld", fn, (long long)n);
    int64_t per = ff_dist_shard_size(n, drop_last), size = ff_dist_size(), rank = ff_dist_rank();
    if (per > 0 && !out) return ff_error(FF_ERR_INVALID, "%s: out is NULL", fn);
    if (cap < per)
        return ff_error(FF_ERR_INVALID, "%s: out holds %lld indices, this rank's share is %lld", fn, (long long)cap,
                        (long long)per);
    if (per == 0) return FF_OK;
    int64_t *order = malloc(sizeof(int64_t) * (size_t)n);
    if (!order) return ff_error(FF_ERR_OOM, "%s: out of memory for %lld indices", fn, (long long)n);
    for (int64_t i = 0; i < n; i++) order[i] = i;
    if (shuffle) {
        uint64_t s = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(epoch + 1));
        for (int64_t i = n - 1; i > 0; i--) {
            int64_t j = (int64_t)below(&s, (uint64_t)i + 1), t = order[i];
            order[i] = order[j], order[j] = t;
        }
    }
    for (int64_t k = 0; k < per; k++) out[k] = order[(rank + k * size) % n]; /* wraps: the padding */
    free(order);
    return FF_OK;
}
