/*
 * The graph_record entry (backend_abi.h): a run of a captured graph's launches recorded
 * as a CUDA graph, by stream capture of the backend's stream, and launched as one call
 * on every replay (graph/record.c decides which runs). Capture mode is relaxed, so a
 * temporary the caching allocator has to cudaMalloc may still be made; anything that
 * needs the host mid-call (a cudaStreamSynchronize to read a flag back) fails on a
 * capturing stream, which fails that call and the recording, and the core then runs it
 * host-driven.
 *
 * Temporaries an entry frees while it is being recorded are not returned to the cache:
 * the record keeps them (cuda_record_keep_locked), because every launch of the CUDA graph writes
 * them again at the same addresses; they go back when the record is released. A later
 * call of the same recording may take one again (cuda_record_reuse: stream order holds
 * inside the graph too), so a record holds about what its run needs at once.
 *
 * The backend has one stream: while a run records (during a graph's first replay), work
 * that other threads queue on the same backend would be recorded with it. Replaying a
 * graph while other threads use the backend is not supported for that window.
 */
#include <pthread.h>
#include <stdlib.h>

#include "cuda_impl.h"

/* A temporary freed while recording, and its block's size. */
typedef struct kept_block {
    void *ptr;
    size_t cap;
} kept_block;

struct cuda_record {
    cudaGraphExec_t exec;
    kept_block *keep; /* temporaries freed while recording */
    int n_keep, cap_keep;
    int failed;       /* a temporary could not be kept: the record must not be used */
};

/* The recording this thread has open, NULL if none (the caller holds alloc_lock). */
static cuda_record *recording_of_caller(cuda_ctx *c)
{
    return c->recording && pthread_equal(c->recorder, pthread_self()) ? c->recording : NULL;
}

int cuda_record_keep_locked(cuda_ctx *c, void *buf, size_t cap)
{
    cuda_record *r = recording_of_caller(c);
    if (!r) return 0;
    if (r->n_keep == r->cap_keep) {
        int n = r->cap_keep ? 2 * r->cap_keep : 16;
        kept_block *k = realloc(r->keep, sizeof *k * (size_t)n);
        if (k) r->keep = k, r->cap_keep = n;
    }
    if (r->n_keep == r->cap_keep) { /* freed as usual: the record is dropped at its end */
        r->failed = 1;
        return 0;
    }
    r->keep[r->n_keep++] = (kept_block){buf, cap};
    return 1;
}

/* Within one recording, the calls run in stream order on the device as well, so a later
 * call may take a temporary an earlier one freed: the smallest kept block of at least
 * nbytes (taken out of the keep list), or NULL. The record then holds what a run needs at
 * once rather than every temporary of every call. */
void *cuda_record_reuse_locked(cuda_ctx *c, size_t nbytes)
{
    cuda_record *r = recording_of_caller(c);
    int best = -1;
    for (int i = 0; r && i < r->n_keep; i++)
        if (r->keep[i].cap >= nbytes && (best < 0 || r->keep[i].cap < r->keep[best].cap)) best = i;
    if (best < 0) return NULL;
    void *p = r->keep[best].ptr;
    r->keep[best] = r->keep[--r->n_keep];
    return p;
}

static void record_drop(cuda_ctx *c, cuda_record *r)
{
    if (r->exec) cudaGraphExecDestroy(r->exec); /* a launch in flight completes first */
    for (int i = 0; i < r->n_keep; i++) cuda_free(c, r->keep[i].ptr); /* stream-ordered reuse */
    free(r->keep);
    free(r);
}

static ff_status record_begin(cuda_ctx *c)
{
    ff_status st = cuda_use_device(c, "graph_record");
    if (st) return st;
    if (c->recording) return cuda_error(c, FF_ERR_INVALID, "cuda graph_record: a recording is already open");
    cuda_record *r = calloc(1, sizeof *r);
    if (!r) return cuda_error(c, FF_ERR_OOM, "cuda graph_record: out of host memory");
    cudaError_t err = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed);
    if (err != cudaSuccess) {
        free(r);
        cudaGetLastError();
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda graph_record: cudaStreamBeginCapture: %s", cudaGetErrorString(err));
    }
    pthread_mutex_lock(&c->alloc_lock);
    c->recording = r, c->recorder = pthread_self();
    pthread_mutex_unlock(&c->alloc_lock);
    return FF_OK;
}

static ff_status record_end(cuda_ctx *c, void **handle)
{
    pthread_mutex_lock(&c->alloc_lock);
    cuda_record *r = recording_of_caller(c);
    if (r) c->recording = NULL;
    pthread_mutex_unlock(&c->alloc_lock);
    if (!r) return cuda_error(c, FF_ERR_INVALID, "cuda graph_record: no recording is open on this thread");
    cudaGraph_t graph = NULL;
    cudaError_t err = cudaStreamEndCapture(c->stream, &graph);
    if (err == cudaSuccess && graph && !r->failed) err = cudaGraphInstantiate(&r->exec, graph, 0);
    if (graph) cudaGraphDestroy(graph);
    if (err != cudaSuccess || !r->exec) {
        cudaGetLastError(); /* an invalidated capture leaves its error */
        record_drop(c, r);
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda graph_record: the calls could not be recorded as a CUDA graph (%s)",
                          err != cudaSuccess ? cudaGetErrorString(err) : "a temporary could not be kept");
    }
    *handle = r;
    return FF_OK;
}

ff_status cuda_graph_record(void *ctx, int op, void **handle)
{
    cuda_ctx *c = ctx;
    switch (op) {
    case FF_RECORD_BEGIN: return record_begin(c);
    case FF_RECORD_END:
        if (!handle) return cuda_error(c, FF_ERR_INVALID, "cuda graph_record: FF_RECORD_END needs a handle");
        *handle = NULL;
        return record_end(c, handle);
    case FF_RECORD_LAUNCH: {
        if (!handle || !*handle) return cuda_error(c, FF_ERR_INVALID, "cuda graph_record: no record to launch");
        ff_status st = cuda_use_device(c, "graph_record");
        if (st) return st;
        cudaError_t err = cudaGraphLaunch(((cuda_record *)*handle)->exec, c->stream);
        return err == cudaSuccess ? FF_OK : cuda_fail(c, "graph_record", "cudaGraphLaunch", err);
    }
    case FF_RECORD_RELEASE:
        if (handle && *handle) record_drop(c, *handle), *handle = NULL;
        return FF_OK;
    default: return cuda_error(c, FF_ERR_INVALID, "cuda graph_record: unknown op %d", op);
    }
}
