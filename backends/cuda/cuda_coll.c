/*
 * Collectives between processes on device memory: the coll_* entries over NCCL.
 *
 * ff_dist (dist/dist.c) decides that a collective runs here (every rank's tensor is on a
 * backend with these entries, and every rank joined the group), bootstraps the group by
 * broadcasting rank 0's ncclUniqueId over MPI, and agrees on each collective before it
 * runs; this file only moves the bytes.
 *
 * NCCL is opened with dlopen when the first group is made, not linked: the plugin loads
 * and computes on machines without it (a driver-only install, a wheel), and there the
 * entries fail with the reason, which ff_dist answers by staging through MPI.
 *
 * Streams: a synchronous collective runs on the backend's stream, in order with every
 * kernel. An async one (DDP's gradient buckets, started while backward goes on) runs on
 * the group's own stream after an event recorded on the backend's stream, so it sees what
 * was queued before it and overlaps with what is queued after it; coll_wait makes the
 * backend's stream wait for the group's (an event again: the host never blocks).
 *
 * Built only where nccl.h was found (FF_CUDA_NCCL); tests/cuda_emu links a one-rank
 * NCCL of its own (cuda_emu_nccl.c) in place of the dlopen.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_coll.h"

#if !defined(FF_CUDA_EMU)
#include <dlfcn.h>

/* libnccl.so.2, once per process: the handle stays open (NCCL keeps threads of its own). */
static pthread_once_t nccl_once = PTHREAD_ONCE_INIT;
static cuda_nccl_api nccl_api;
static char nccl_why[512];

#define NCCL_SYM(field, name) (*(void **)&nccl_api.field = dlsym(h, name))

static void nccl_open(void)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(nccl_why, sizeof nccl_why, "NCCL is not installed (dlopen libnccl.so.2: %s)", dlerror());
        return;
    }
    if (!NCCL_SYM(get_unique_id, "ncclGetUniqueId") || !NCCL_SYM(comm_init_rank, "ncclCommInitRank") ||
        !NCCL_SYM(comm_destroy, "ncclCommDestroy") || !NCCL_SYM(all_reduce, "ncclAllReduce") ||
        !NCCL_SYM(broadcast, "ncclBroadcast") || !NCCL_SYM(all_gather, "ncclAllGather") ||
        !NCCL_SYM(get_error_string, "ncclGetErrorString") || !NCCL_SYM(get_version, "ncclGetVersion")) {
        snprintf(nccl_why, sizeof nccl_why, "libnccl.so.2 lacks a symbol the cuda backend needs (NCCL older than 2.7?)");
        dlclose(h);
        return;
    }
    NCCL_SYM(get_last_error, "ncclGetLastError"); /* NCCL 2.13 on; optional */
    nccl_api.loaded = 1;
}

const cuda_nccl_api *cuda_nccl(const char **why)
{
    pthread_once(&nccl_once, nccl_open);
    *why = nccl_why;
    return nccl_api.loaded ? &nccl_api : NULL;
}
#endif /* !FF_CUDA_EMU */

/* One group: the NCCL communicator, the stream async collectives run on, and the events
 * that order it against the backend's stream. */
struct cuda_comm {
    ncclComm_t nccl;
    int rank, size;
    cudaStream_t stream;
    cudaEvent_t ready, done;
    int pending; /* async collectives queued since the last coll_wait */
    struct cuda_comm *next;
};

static ff_status nccl_fail(cuda_ctx *c, const cuda_nccl_api *api, ncclComm_t comm, const char *entry, const char *call,
                           ncclResult_t r)
{
    const char *last = comm && api->get_last_error ? api->get_last_error(comm) : NULL;
    return cuda_error(c, FF_ERR_BACKEND, "cuda %s: %s failed: %s%s%s", entry, call, api->get_error_string(r), last && *last ? ": " : "",
                      last && *last ? last : "");
}

static const cuda_nccl_api *need_nccl(cuda_ctx *c, const char *entry)
{
    const char *why = "";
    const cuda_nccl_api *api = cuda_nccl(&why);
    if (!api) cuda_error(c, FF_ERR_UNSUPPORTED, "cuda %s: %s", entry, why);
    return api;
}

ff_status cuda_coll_id(void *ctx, void *id, size_t cap, size_t *len)
{
    cuda_ctx *c = ctx;
    const cuda_nccl_api *api = need_nccl(c, "coll_id");
    if (!api) return FF_ERR_UNSUPPORTED;
    if (!id || !len || cap < sizeof(ncclUniqueId))
        return cuda_error(c, FF_ERR_INVALID, "cuda coll_id: a buffer of %zu bytes is too small for an ncclUniqueId (%zu)",
                          cap, sizeof(ncclUniqueId));
    ff_status st = cuda_use_device(c, "coll_id");
    if (st) return st;
    ncclUniqueId u;
    ncclResult_t r = api->get_unique_id(&u);
    if (r != ncclSuccess) return nccl_fail(c, api, NULL, "coll_id", "ncclGetUniqueId", r);
    memcpy(id, &u, sizeof u);
    *len = sizeof u;
    return FF_OK;
}

static void comm_destroy(const cuda_nccl_api *api, cuda_comm *g)
{
    if (g->stream) cudaStreamSynchronize(g->stream);
    if (g->nccl) api->comm_destroy(g->nccl);
    if (g->ready) cudaEventDestroy(g->ready);
    if (g->done) cudaEventDestroy(g->done);
    if (g->stream) cudaStreamDestroy(g->stream);
    free(g);
}

ff_status cuda_coll_init(void *ctx, const void *id, size_t len, int rank, int size, void **comm)
{
    cuda_ctx *c = ctx;
    const cuda_nccl_api *api = need_nccl(c, "coll_init");
    if (!api) return FF_ERR_UNSUPPORTED;
    if (!id || !comm || len != sizeof(ncclUniqueId) || size < 1 || rank < 0 || rank >= size)
        return cuda_error(c, FF_ERR_INVALID, "cuda coll_init: rank %d of %d with a %zu-byte id (an ncclUniqueId is %zu)",
                          rank, size, len, sizeof(ncclUniqueId));
    ff_status st = cuda_use_device(c, "coll_init");
    if (st) return st;
    cuda_comm *g = calloc(1, sizeof *g);
    if (!g) return cuda_error(c, FF_ERR_OOM, "cuda coll_init: out of memory");
    g->rank = rank, g->size = size;
    cudaError_t err;
    if ((err = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&g->ready, cudaEventDisableTiming)) != cudaSuccess ||
        (err = cudaEventCreateWithFlags(&g->done, cudaEventDisableTiming)) != cudaSuccess) {
        st = cuda_fail(c, "coll_init", "cudaStreamCreateWithFlags/cudaEventCreateWithFlags", err);
        comm_destroy(api, g);
        return st;
    }
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclResult_t r = api->comm_init_rank(&g->nccl, size, u, rank);
    /* NCCL's init probes kernels for architectures its image lacks (compute-sanitizer on an
     * H100 showed 4 cudaFuncGetAttributes failing with cudaErrorNoKernelImageForDevice);
     * the runtime's last error must not reach the next launch check as ours */
    (void)cudaGetLastError();
    if (r != ncclSuccess) {
        st = nccl_fail(c, api, NULL, "coll_init", "ncclCommInitRank", r);
        g->nccl = NULL;
        comm_destroy(api, g);
        return st;
    }
    pthread_mutex_lock(&c->comm_lock);
    g->next = c->comms, c->comms = g;
    pthread_mutex_unlock(&c->comm_lock);
    if (c->host->log) {
        int v = 0;
        api->get_version(&v);
        c->host->log("cuda: NCCL %d.%d.%d group joined as rank %d of %d", v / 10000, v / 100 % 100, v % 100, rank,
                     size);
    }
    *comm = g;
    return FF_OK;
}

static int nccl_type(ff_dtype t, ncclDataType_t *out)
{
    switch (t) {
    case FF_F32: *out = ncclFloat32; return 1;
    case FF_F64: *out = ncclFloat64; return 1;
    case FF_F16: *out = ncclFloat16; return 1;
    case FF_BF16: *out = ncclBfloat16; return 1;
    case FF_I32: *out = ncclInt32; return 1;
    case FF_I64: *out = ncclInt64; return 1;
    case FF_U8: case FF_BOOL: *out = ncclUint8; return 1; /* bool: MAX is any, MIN is all */
    default: return 0;
    }
}

int cuda_coll_supported(int op, ff_dtype t)
{
    ncclDataType_t nt;
    /* the collectives this file runs, by name: one appended to ff_coll_op later is not one of them */
    return (op == FF_COLL_ALLREDUCE || op == FF_COLL_BROADCAST || op == FF_COLL_ALLGATHER) && nccl_type(t, &nt);
}

/* Dense: row-major contiguous from its offset, size-1 dims ignored. */
static int dense(const ff_view *v)
{
    int64_t want = 1;
    for (int d = v->ndim - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != want) return 0;
        want *= v->shape[d];
    }
    return 1;
}

ff_status cuda_coll_run(void *ctx, void *comm, int op, int arg, int async, const ff_view *dst, const ff_view *src)
{
    cuda_ctx *c = ctx;
    cuda_comm *g = comm;
    const cuda_nccl_api *api = need_nccl(c, "coll_run");
    if (!api) return FF_ERR_UNSUPPORTED;
    ff_status st;
    if (!g) return cuda_error(c, FF_ERR_INVALID, "cuda coll_run: no group");
    if ((st = cuda_check_view(c, "coll_run", "dst", dst, 1)) || (st = cuda_check_view(c, "coll_run", "src", src, 1)))
        return st;
    ncclDataType_t t;
    if (dst->dtype != src->dtype || !cuda_coll_supported(op, dst->dtype) || !nccl_type(dst->dtype, &t))
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda coll_run: collective %d on %s into %s is not supported", op,
                          ffb_dtype_name(src->dtype), ffb_dtype_name(dst->dtype));
    if (!dense(dst) || !dense(src)) return cuda_error(c, FF_ERR_INVALID, "cuda coll_run: views must be dense");
    int64_t n = ff_view_numel(src), nd = ff_view_numel(dst);
    if (nd != (op == FF_COLL_ALLGATHER ? n * g->size : n))
        return cuda_error(c, FF_ERR_INVALID, "cuda coll_run: dst holds %lld elements, src %lld, group of %d",
                          (long long)nd, (long long)n, g->size);
    if (op == FF_COLL_BROADCAST && (arg < 0 || arg >= g->size))
        return cuda_error(c, FF_ERR_INVALID, "cuda coll_run: broadcast root %d is not a rank of %d", arg, g->size);
    static const ncclRedOp_t red[] = {ncclSum, ncclAvg, ncclMax, ncclMin};
    if (op == FF_COLL_ALLREDUCE && (arg < FF_COLL_SUM || arg > FF_COLL_MIN))
        return cuda_error(c, FF_ERR_INVALID, "cuda coll_run: invalid reduction %d", arg);
    if ((st = cuda_use_device(c, "coll_run"))) return st;
    if (n == 0) return FF_OK;
    size_t es = ff_dtype_size(dst->dtype);
    void *d = (char *)dst->buf + dst->offset * (int64_t)es;
    const void *s = (const char *)src->buf + src->offset * (int64_t)es;
    cudaStream_t stream = c->stream;
    if (async) { /* after everything queued so far on the backend's stream */
        cudaError_t err = cudaEventRecord(g->ready, c->stream);
        if (err == cudaSuccess) err = cudaStreamWaitEvent(g->stream, g->ready, 0);
        if (err != cudaSuccess) return cuda_fail(c, "coll_run", "cudaEventRecord/cudaStreamWaitEvent", err);
        stream = g->stream;
        g->pending++;
    }
    ncclResult_t r;
    const char *call;
    if (op == FF_COLL_ALLREDUCE) call = "ncclAllReduce", r = api->all_reduce(s, d, (size_t)n, t, red[arg], g->nccl, stream);
    else if (op == FF_COLL_BROADCAST) call = "ncclBroadcast", r = api->broadcast(s, d, (size_t)n, t, arg, g->nccl, stream);
    else call = "ncclAllGather", r = api->all_gather(s, d, (size_t)n, t, g->nccl, stream);
    return r == ncclSuccess ? FF_OK : nccl_fail(c, api, g->nccl, "coll_run", call, r);
}

ff_status cuda_coll_wait(void *ctx, void *comm)
{
    cuda_ctx *c = ctx;
    cuda_comm *g = comm;
    if (!g) return cuda_error(c, FF_ERR_INVALID, "cuda coll_wait: no group");
    if (!g->pending) return FF_OK;
    ff_status st = cuda_use_device(c, "coll_wait");
    if (st) return st;
    cudaError_t err = cudaEventRecord(g->done, g->stream);
    if (err == cudaSuccess) err = cudaStreamWaitEvent(c->stream, g->done, 0);
    if (err != cudaSuccess) return cuda_fail(c, "coll_wait", "cudaEventRecord/cudaStreamWaitEvent", err);
    g->pending = 0;
    return FF_OK;
}

void cuda_coll_free(void *ctx, void *comm)
{
    cuda_ctx *c = ctx;
    cuda_comm *g = comm, **p;
    const char *why;
    const cuda_nccl_api *api = cuda_nccl(&why);
    if (!g || !api) return;
    pthread_mutex_lock(&c->comm_lock);
    for (p = &c->comms; *p && *p != g; p = &(*p)->next) {}
    int ours = *p == g;
    if (ours) *p = g->next;
    pthread_mutex_unlock(&c->comm_lock);
    if (!ours) return; /* not a group of this context (or freed already) */
    cudaSetDevice(c->device);
    comm_destroy(api, g);
}

void cuda_coll_destroy_all(cuda_ctx *c)
{
    if (!c->comms) return;
    const char *why;
    const cuda_nccl_api *api = cuda_nccl(&why);
    while (api && c->comms) {
        cuda_comm *g = c->comms;
        c->comms = g->next;
        comm_destroy(api, g);
    }
}
