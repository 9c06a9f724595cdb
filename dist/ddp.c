/* Data parallel: every rank holds the whole model, trains on its own shard of each batch,
 * and before each optimizer step the gradients are averaged over the ranks, so every
 * rank takes the identical step. Gradients travel in buckets (consecutive parameters of
 * one dtype, up to bucket_bytes): one allreduce per bucket instead of one per parameter,
 * which is what makes small layers cheap.
 *
 * Overlap: each parameter carries a post-accumulate-grad hook; when backward has finished
 * the last parameter of a bucket, the bucket is packed and its allreduce starts
 * (non-blocking) while backward goes on with the layers below. Backward finishes the
 * parameters in the same order on every rank (same model, same graph), so the buckets
 * start in the same order everywhere; each start is checked like any collective (the
 * bucket's index and size are in the descriptor). ff_dist_ddp_sync_grads starts what
 * backward did not (parameters without a gradient this step count as zeros), waits for
 * every bucket and hands each parameter its averaged gradient.
 *
 * Accumulation (several backwards before one sync), as PyTorch's DDP: a bucket reduces
 * the parameters' accumulated .grad. When a later backward finishes the bucket again,
 * the earlier reduction is waited for and dropped, and the bucket is packed and started
 * anew; a bucket that some backward touched after its start (its parameters only partly
 * used) is redone by the sync. So the sync's result is the mean over the ranks of the sum
 * of the micro-batches' gradients, whatever happened in between. ff_dist_ddp_no_sync
 * (PyTorch's no_sync) makes the backwards start nothing: one reduction, at the sync or in
 * the first backward after it is turned off.
 *
 * On a backend with device collectives (cuda: NCCL), when every rank's is: a bucket is a
 * flat tensor of that backend; packing is device copies queued behind the backward
 * kernels that made the gradients, the allreduce (mean) runs on the group's own stream
 * beside the rest of backward, and sync_grads makes the backend's stream wait for it
 * (coll_wait). Nothing goes through the host, and the host never waits for the device. */
#include <stdlib.h>
#include <string.h>

#include "dist_impl.h"

typedef struct ddp_bucket {
    int first, last;     /* params [first, last) */
    int64_t count;       /* elements */
    ff_dtype dtype;
    void *buf;           /* host, packed (staged through MPI) */
    ff_tensor *dev;      /* or on the device: flat, [count] (device collectives) */
    bool started_dev;    /* its device allreduce is queued */
    int ready;           /* params whose gradient backward has finished since the last start */
    bool stale;          /* a gradient changed (a hook ran) after the last start */
    bool in_backward;    /* the last start was inside backward */
    ff_dist_pending *op; /* started allreduce, or NULL */
} ddp_bucket;

typedef struct ddp_param {
    struct ff_dist_ddp *d;
    int bucket;
} ddp_param;

struct ff_dist_ddp {
    ff_module *m;
    int np, nbuckets, launched_last;
    bool no_sync; /* backward starts no bucket */
    ff_tensor **params;
    ddp_param *hooks;
    ddp_bucket *buckets;
    ff_status deferred; /* an error met inside a hook, reported by the next sync */
    ff_backend *be;     /* device collectives: the parameters' backend and its group */
    void *comm;
};

int ff_dist_ddp_num_buckets(const ff_dist_ddp *d) { return d ? d->nbuckets : 0; }
int ff_dist_ddp_buckets_started_in_backward(const ff_dist_ddp *d) { return d ? d->launched_last : 0; }

bool ff_dist_ddp_no_sync(ff_dist_ddp *d, bool on)
{
    if (!d) return false;
    bool was = d->no_sync;
    d->no_sync = on;
    return was;
}

void ff_dist_ddp_free(ff_dist_ddp *d)
{
    if (!d) return;
    for (int i = 0; i < d->np; i++)
        if (d->params[i] && d->params[i]->grad_hook_user == &d->hooks[i])
            ff_set_post_accumulate_grad_hook(d->params[i], NULL, NULL);
    if (d->comm) ff_dist_coll_wait(d->be, d->comm, "ff_dist_ddp_free");
    for (int b = 0; b < d->nbuckets; b++) {
        if (d->buckets[b].op) ff_dist_wait(d->buckets[b].op, "ff_dist_ddp_free");
        free(d->buckets[b].buf);
        ff_tensor_release(d->buckets[b].dev);
    }
    ff_module_release(d->m);
    free(d->params);
    free(d->hooks);
    free(d->buckets);
    free(d);
}

/* Packs bucket b's gradients (zeros where a parameter has none) into its buffer. */
static ff_status pack(ddp_bucket *bk, ff_tensor *const *params)
{
    char *p = bk->buf;
    for (int i = bk->first; i < bk->last; i++) {
        ff_tensor *w = params[i], *g = ff_grad(w);
        size_t bytes = (size_t)ff_tensor_numel(w) * ff_dtype_size(w->dtype);
        ff_status st = FF_OK;
        if (!g) memset(p, 0, bytes);
        else if (g->dtype != w->dtype)
            st = ff_error(FF_ERR_INVALID, "ff_dist_ddp_sync_grads: a gradient's dtype differs from its parameter's");
        else st = ff_tensor_to_host(g, p, bytes);
        ff_tensor_release(g);
        if (st) return st;
        p += bytes;
    }
    return FF_OK;
}

/* Each parameter of the bucket gets its slice of the buffer as its new gradient. */
static ff_status unpack(const ddp_bucket *bk, ff_tensor *const *params)
{
    const char *p = bk->buf;
    for (int i = bk->first; i < bk->last; i++) {
        ff_tensor *w = params[i];
        ff_tensor *g = ff_from_data_on(w->storage->backend, p, w->layout.ndim, w->layout.shape, w->dtype);
        ff_status st = g ? ff_set_grad(w, g) : ff_last_status();
        ff_tensor_release(g);
        if (st) return st;
        p += (size_t)ff_tensor_numel(w) * ff_dtype_size(w->dtype);
    }
    return FF_OK;
}

/* Parameter i's slice of a device bucket, shaped as the parameter (a view). */
static ff_tensor *slice(const ddp_bucket *bk, ff_tensor *const *params, int i, int64_t at)
{
    ff_tensor *w = params[i], *flat = ff_narrow(bk->dev, 0, at, ff_tensor_numel(w));
    ff_tensor *v = flat ? ff_reshape(flat, w->layout.ndim, w->layout.shape) : NULL;
    ff_tensor_release(flat);
    return v;
}

/* The device form of pack / unpack: copies queued on the backend, no host round trip. */
static ff_status pack_device(ddp_bucket *bk, ff_tensor *const *params)
{
    ff_status st = FF_OK;
    bool prev = ff_set_grad_enabled(false);
    int64_t at = 0;
    for (int i = bk->first; i < bk->last && !st; at += ff_tensor_numel(params[i]), i++) {
        ff_tensor *g = ff_grad(params[i]), *v = slice(bk, params, i, at);
        if (!v) st = ff_last_status();
        else if (!g) st = ff_zero_(v);
        else if (g->dtype != params[i]->dtype)
            st = ff_error(FF_ERR_INVALID, "ff_dist_ddp_sync_grads: a gradient's dtype differs from its parameter's");
        else st = ff_copy_(v, g);
        ff_tensor_release(g);
        ff_tensor_release(v);
    }
    ff_set_grad_enabled(prev);
    return st;
}

static ff_status unpack_device(const ddp_bucket *bk, ff_tensor *const *params)
{
    ff_status st = FF_OK;
    bool prev = ff_set_grad_enabled(false);
    int64_t at = 0;
    for (int i = bk->first; i < bk->last && !st; at += ff_tensor_numel(params[i]), i++) {
        ff_tensor *v = slice(bk, params, i, at), *g = v ? ff_clone(v) : NULL; /* its own memory: the bucket is reused */
        st = g ? ff_set_grad(params[i], g) : ff_last_status();
        ff_tensor_release(g);
        ff_tensor_release(v);
    }
    ff_set_grad_enabled(prev);
    return st;
}

/* Packs bucket b and starts its allreduce (mean). */
static ff_status start(ff_dist_ddp *d, int b, const char *fn)
{
    ddp_bucket *bk = &d->buckets[b];
    if (bk->dev) {
        ff_status st = pack_device(bk, d->params);
        if (!st) st = ff_dist_agree(fn, FF_DIST_K_BUCKET, bk->dtype, 1, &bk->count, b, 0);
        if (!st) st = ff_dist_coll_run(d->be, d->comm, FF_COLL_ALLREDUCE, FF_COLL_AVG, true, bk->dev, bk->dev, fn);
        bk->started_dev = !st;
        return st;
    }
    ff_status st = pack(bk, d->params);
    if (!st) st = ff_dist_agree(fn, FF_DIST_K_BUCKET, bk->dtype, 1, &bk->count, b, 0);
    if (!st && !(bk->op = ff_dist_iallreduce_host(bk->buf, bk->count, bk->dtype, FF_DIST_MEAN, fn)))
        st = ff_last_status();
    return st;
}

/* Starts bucket b over: an earlier start's reduction (of gradients that have changed
 * since) is completed and dropped first. On the device, the backend's stream waits for
 * the group's, so that packing does not overwrite the bucket while NCCL reads it. */
static ff_status restart(ff_dist_ddp *d, int b, const char *fn)
{
    ddp_bucket *bk = &d->buckets[b];
    ff_status st = FF_OK;
    if (bk->op) st = ff_dist_wait(bk->op, fn);
    if (bk->started_dev) st = ff_dist_coll_wait(d->be, d->comm, fn);
    bk->op = NULL, bk->started_dev = false, bk->ready = 0, bk->stale = false;
    return st ? st : start(d, b, fn);
}

static void grad_ready(ff_tensor *leaf, void *user)
{
    (void)leaf;
    ddp_param *h = user;
    ff_dist_ddp *d = h->d;
    ddp_bucket *bk = &d->buckets[h->bucket];
    for (int b = 0; b < d->nbuckets; b++) ff_dist_poke(d->buckets[b].op); /* let started ones move */
    if (d->deferred) return;
    if (bk->op || bk->started_dev) bk->stale = true; /* accumulating onto what it reduces */
    if (d->no_sync) {
        bk->ready = 0;
        return;
    }
    if (++bk->ready < bk->last - bk->first) return;
    ff_status st = restart(d, h->bucket, "ff_dist_ddp (during backward)");
    if (st) d->deferred = st;
    bk->in_backward = !st;
}

ff_dist_ddp *ff_dist_ddp_new(ff_module *m, size_t bucket_bytes)
{
    static const char fn[] = "ff_dist_ddp_new";
    if (!m) return ff_error(FF_ERR_INVALID, "%s: module is NULL", fn), NULL;
    if (!bucket_bytes) bucket_bytes = (size_t)25 << 20;
    int np = ff_module_parameters(m, NULL, 0);
    if (np < 0) return NULL;
    ff_dist_ddp *d = calloc(1, sizeof *d);
    if (d) {
        d->params = calloc((size_t)np + 1, sizeof *d->params);
        d->hooks = calloc((size_t)np + 1, sizeof *d->hooks);
        d->buckets = calloc((size_t)np + 1, sizeof *d->buckets);
    }
    if (!d || !d->params || !d->hooks || !d->buckets) {
        ff_dist_ddp_free(d);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
    }
    d->m = ff_module_retain(m);
    d->np = ff_module_parameters(m, d->params, np);
    size_t size = 0;
    for (int i = 0; i < d->np; i++) {
        const ff_tensor *p = d->params[i];
        size_t bytes = (size_t)ff_tensor_numel(p) * ff_dtype_size(p->dtype);
        if (!ff_dtype_is_float(p->dtype) || p->dtype == FF_F16 || p->dtype == FF_BF16) {
            ff_dist_ddp_free(d);
            return ff_error(FF_ERR_UNSUPPORTED, "%s: parameter %d has dtype %s (f32 and f64 are averaged)", fn, i,
                            ff_dtype_name(p->dtype)), NULL;
        }
        if (i == 0 || p->dtype != d->params[i - 1]->dtype || size + bytes > bucket_bytes) {
            d->buckets[d->nbuckets++] = (ddp_bucket){.first = i, .dtype = p->dtype};
            size = 0;
        }
        ddp_bucket *bk = &d->buckets[d->nbuckets - 1];
        bk->last = i + 1, bk->count += ff_tensor_numel(p);
        size += bytes;
    }
    /* device buckets when every parameter is on one backend with collectives, on every rank */
    ff_backend *be = d->np ? d->params[0]->storage->backend : NULL;
    bool device = be != NULL;
    for (int i = 0; i < d->np && device; i++)
        device = d->params[i]->storage->backend == be && ff_dist_coll_capable(be, FF_COLL_ALLREDUCE, d->params[i]->dtype);
    int64_t np64 = d->np;
    if (ff_dist_agree_device(fn, FF_DIST_K_DDP, FF_F32, 1, &np64, 0, 0, &device) ||
        (device && ff_dist_coll_group(be, fn, &d->comm))) {
        ff_dist_ddp_free(d);
        return NULL;
    }
    if (d->comm) d->be = be;
    for (int b = 0; b < d->nbuckets; b++) {
        ddp_bucket *bk = &d->buckets[b];
        if (d->comm && !(bk->dev = ff_empty_on(be, 1, &bk->count, bk->dtype))) {
            ff_dist_ddp_free(d);
            return NULL;
        }
        if (!d->comm && !(bk->buf = malloc((size_t)bk->count * ff_dtype_size(bk->dtype) + 1))) {
            ff_dist_ddp_free(d);
            return ff_error(FF_ERR_OOM, "%s: out of memory for the gradient buckets", fn), NULL;
        }
    }
    for (int i = 0; i < d->np; i++) /* rank 0's initial values everywhere */
        if (ff_dist_broadcast(d->params[i], 0)) {
            ff_error_prefix(fn);
            ff_dist_ddp_free(d);
            return NULL;
        }
    /* a group of one on the host is the identity; device buckets run as they would on many
     * (PyTorch's DDP does too), so one GPU exercises the path a job of many takes */
    if (ff_dist_size() > 1 || d->comm)
        for (int b = 0; b < d->nbuckets; b++)
            for (int i = d->buckets[b].first; i < d->buckets[b].last; i++) {
                d->hooks[i] = (ddp_param){d, b};
                if (ff_set_post_accumulate_grad_hook(d->params[i], grad_ready, &d->hooks[i])) {
                    ff_dist_ddp_free(d);
                    return NULL;
                }
            }
    return d;
}

ff_status ff_dist_ddp_sync_grads(ff_dist_ddp *d)
{
    static const char fn[] = "ff_dist_ddp_sync_grads";
    if (!d) return ff_error(FF_ERR_INVALID, "%s: NULL", fn);
    ff_status st = d->deferred;
    if (st) ff_error(st, "%s: a gradient bucket failed during backward: %s", fn, ff_last_error());
    if (ff_dist_size() > 1 || d->comm)
        for (int b = 0; b < d->nbuckets && !st; b++) { /* those backward did not start, or changed since */
            ddp_bucket *bk = &d->buckets[b];
            if ((bk->op || bk->started_dev) && !bk->stale) continue;
            st = restart(d, b, fn);
            bk->in_backward = false;
        }
    if (d->comm) { /* the backend's stream waits for the group's: the host does not */
        ff_status sw = ff_dist_coll_wait(d->be, d->comm, fn);
        if (!st) st = sw;
    }
    d->launched_last = 0;
    for (int b = 0; b < d->nbuckets; b++) {
        ddp_bucket *bk = &d->buckets[b];
        d->launched_last += bk->in_backward;
        ff_status sb = bk->op ? ff_dist_wait(bk->op, fn) : FF_OK;
        if (bk->op && !st && !sb) sb = unpack(bk, d->params);
        if (bk->started_dev && !st) sb = unpack_device(bk, d->params);
        if (!st) st = sb;
        bk->op = NULL, bk->ready = 0, bk->started_dev = false, bk->stale = false, bk->in_backward = false;
    }
    d->deferred = FF_OK;
    return st;
}
