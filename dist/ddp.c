/* Data parallel: every rank holds the whole model, trains on its own shard of each batch,
 * and before each optimizer step the gradients are averaged over the ranks, so every
 * rank takes the identical step. Gradients travel in buckets (consecutive parameters of
 * one dtype, up to bucket_bytes): one allreduce per bucket instead of one per parameter,
 * which is what makes small layers cheap.
 *
 * The averaging runs after backward, not overlapped with it: the autograd engine has no
 * per-parameter completion hook yet (docs/distributed.md says what overlap would save). */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

struct ff_dist_ddp {
    ff_module *m;
    int np, nbuckets;
    ff_tensor **params;
    int *first; /* bucket b holds params first[b] .. first[b + 1] - 1 */
    void *buf;  /* the largest bucket, on the host */
};

int ff_dist_ddp_num_buckets(const ff_dist_ddp *d) { return d ? d->nbuckets : 0; }

void ff_dist_ddp_free(ff_dist_ddp *d)
{
    if (!d) return;
    ff_module_release(d->m);
    free(d->params);
    free(d->first);
    free(d->buf);
    free(d);
}

ff_dist_ddp *ff_dist_ddp_new(ff_module *m, size_t bucket_bytes)
{
    static const char fn[] = "ff_dist_ddp_new";
    if (!m) return ff_error(FF_ERR_INVALID, "%s: module is NULL", fn), NULL;
    if (!bucket_bytes) bucket_bytes = (size_t)25 << 20;
    int np = ff_module_parameters(m, NULL, 0);
    if (np < 0) return NULL;
    ff_dist_ddp *d = calloc(1, sizeof *d);
    if (d) d->params = calloc((size_t)np + 1, sizeof *d->params), d->first = calloc((size_t)np + 2, sizeof(int));
    if (!d || !d->params || !d->first) {
        ff_dist_ddp_free(d);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    }
    d->m = ff_module_retain(m);
    d->np = ff_module_parameters(m, d->params, np);
    size_t size = 0, largest = 0;
    for (int i = 0; i < d->np; i++) {
        const ff_tensor *p = d->params[i];
        size_t bytes = (size_t)ff_tensor_numel(p) * ff_dtype_size(p->dtype);
        if (!ff_dtype_is_float(p->dtype) || p->dtype == FF_F16 || p->dtype == FF_BF16) {
            ff_dist_ddp_free(d);
            return ff_error(FF_ERR_UNSUPPORTED, "%s: parameter %d has dtype %s (f32 and f64 are averaged)", fn, i,
                            ff_dtype_name(p->dtype)), NULL;
        }
        if (i == 0 || p->dtype != d->params[i - 1]->dtype || size + bytes > bucket_bytes) {
            d->first[d->nbuckets++] = i;
            size = 0;
        }
        size += bytes;
        if (size > largest) largest = size;
    }
    d->first[d->nbuckets] = d->np;
    if (!(d->buf = malloc(largest ? largest : 1))) {
        ff_dist_ddp_free(d);
        return ff_error(FF_ERR_OOM, "%s: out of memory for a %zu-byte bucket", fn, largest), NULL;
    }
    for (int i = 0; i < d->np; i++) /* rank 0's initial values everywhere */
        if (ff_dist_broadcast(d->params[i], 0)) {
            ff_error_prefix(fn);
            ff_dist_ddp_free(d);
            return NULL;
        }
    return d;
}

/* Packs bucket b's gradients (zeros where a parameter has none) into d->buf. */
static ff_status pack(ff_dist_ddp *d, int b, int64_t *count)
{
    char *p = d->buf;
    *count = 0;
    for (int i = d->first[b]; i < d->first[b + 1]; i++) {
        ff_tensor *w = d->params[i], *g = ff_grad(w);
        size_t bytes = (size_t)ff_tensor_numel(w) * ff_dtype_size(w->dtype);
        ff_status st = FF_OK;
        if (!g) memset(p, 0, bytes);
        else if (g->dtype != w->dtype) st = ff_error(FF_ERR_INVALID, "ff_dist_ddp_sync_grads: a gradient's dtype differs from its parameter's");
        else st = ff_tensor_to_host(g, p, bytes);
        ff_tensor_release(g);
        if (st) return st;
        p += bytes;
        *count += ff_tensor_numel(w);
    }
    return FF_OK;
}

/* Each parameter of bucket b gets its slice of d->buf as its new gradient. */
static ff_status unpack(ff_dist_ddp *d, int b)
{
    const char *p = d->buf;
    for (int i = d->first[b]; i < d->first[b + 1]; i++) {
        ff_tensor *w = d->params[i];
        ff_tensor *g = ff_from_data_on(w->storage->backend, p, w->layout.ndim, w->layout.shape, w->dtype);
        ff_status st = g ? ff_set_grad(w, g) : ff_last_status();
        ff_tensor_release(g);
        if (st) return st;
        p += (size_t)ff_tensor_numel(w) * ff_dtype_size(w->dtype);
    }
    return FF_OK;
}

ff_status ff_dist_ddp_sync_grads(ff_dist_ddp *d)
{
    static const char fn[] = "ff_dist_ddp_sync_grads";
    if (!d) return ff_error(FF_ERR_INVALID, "%s: NULL", fn);
    for (int b = 0; b < d->nbuckets; b++) {
        int64_t count;
        ff_dtype dt = d->params[d->first[b]]->dtype;
        ff_status st = pack(d, b, &count);
        if (!st) st = ff_dist_agree(fn, FF_DIST_K_BUCKET, dt, 1, &count, b, 0);
        if (!st) st = ff_dist_allreduce_host(d->buf, count, dt, FF_DIST_MEAN, fn);
        if (!st) st = unpack(d, b);
        if (st) return st;
    }
    return FF_OK;
}
