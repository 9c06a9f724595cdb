/* The CUDA runtime for the host tests of the cuda backend (test_cuda_mem, the emulated
 * plugin of this folder): the calls backends/cuda makes, over host memory. One device,
 * "emulated", whose memory is malloc: cuda_emu_limit bounds it (cudaMalloc then fails
 * with cudaErrorMemoryAllocation, as a full GPU does), cuda_emu_mallocs/_frees count the
 * calls. Streams are in order and synchronous; copies and memsets happen at once, or at
 * each launch of the graph a capture records them into (cuda_emu_graph.c). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emu_graph.h"

size_t cuda_emu_used, cuda_emu_limit = (size_t)1 << 40;
int cuda_emu_mallocs, cuda_emu_frees, cuda_emu_copies;

/* live allocations and their sizes (cudaFree of anything else is an error, as on a GPU) */
#define EMU_MAX 65536
static struct { void *p; size_t n; } emu_live[EMU_MAX];
static pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;

cudaError_t cudaMalloc(void **p, size_t n)
{
    cudaError_t err = cudaErrorMemoryAllocation;
    pthread_mutex_lock(&emu_lock);
    if (cuda_emu_used + n <= cuda_emu_limit)
        for (int i = 0; i < EMU_MAX; i++)
            if (!emu_live[i].p) {
                /* 256-byte aligned, as cudaMalloc's */
                if (posix_memalign(&emu_live[i].p, 256, n ? n : 1)) break;
                *p = emu_live[i].p;
                emu_live[i].n = n;
                cuda_emu_used += n;
                cuda_emu_mallocs++;
                err = cudaSuccess;
                break;
            }
    pthread_mutex_unlock(&emu_lock);
    return err;
}

cudaError_t cudaFree(void *p)
{
    if (cuda_emu_capturing()) { /* it synchronizes the device: not during a capture */
        cuda_emu_capture_refuse();
        return cudaErrorStreamCaptureUnsupported;
    }
    cudaError_t err = cudaErrorInvalidValue;
    pthread_mutex_lock(&emu_lock);
    for (int i = 0; i < EMU_MAX; i++)
        if (emu_live[i].p == p) {
            cuda_emu_used -= emu_live[i].n;
            free(p);
            emu_live[i].p = NULL;
            cuda_emu_frees++;
            err = cudaSuccess;
            break;
        }
    pthread_mutex_unlock(&emu_lock);
    return err;
}

cudaError_t cudaMallocHost(void **p, size_t n) { return (*p = malloc(n)) ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }

/* A copy or a memset, done now or (while the stream captures) at each graph launch. */
typedef struct emu_mem_op {
    void *dst;
    const void *src; /* NULL: memset to v */
    int v;
    size_t n;
} emu_mem_op;

static void mem_op_run(void *arg)
{
    emu_mem_op *m = arg;
    if (m->src) {
        memmove(m->dst, m->src, m->n);
        __atomic_add_fetch(&cuda_emu_copies, 1, __ATOMIC_RELAXED);
    } else {
        memset(m->dst, m->v, m->n);
    }
}

static cudaError_t mem_op(void *dst, const void *src, int v, size_t n)
{
    emu_mem_op m = {dst, src, v, n};
    return cuda_emu_run_or_record(mem_op_run, &m, sizeof m) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s)
{
    (void)kind, (void)s;
    return mem_op(dst, src, 0, n);
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)s;
    return mem_op(p, NULL, v, n);
}

cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    *free_b = cuda_emu_limit - cuda_emu_used;
    *total = cuda_emu_limit;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (d != 0) return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "emulated (host memory, kernels on the calling thread)");
    p->major = 9, p->minor = 0;
    p->multiProcessorCount = 132;
    p->totalGlobalMem = cuda_emu_limit;
    p->sharedMemPerBlockOptin = 227 * 1024; /* an H100's */
    return cudaSuccess;
}

static int emu_stream;
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = (cudaStream_t)&emu_stream;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) { (void)s; return cudaSuccess; }
/* every emulated launch and copy is done when it returns: events order nothing */
static int emu_event;
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags)
{
    (void)flags;
    *e = (cudaEvent_t)&emu_event;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { (void)e, (void)s; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags) { (void)s, (void)e, (void)flags; return cudaSuccess; }
/* Waiting for a capturing stream is an error that invalidates the capture, as on a GPU. */
static cudaError_t sync_point(void)
{
    if (!cuda_emu_capturing()) return cudaSuccess;
    cuda_emu_capture_refuse();
    return cudaErrorStreamCaptureUnsupported;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return sync_point(); }
cudaError_t cudaDeviceSynchronize(void) { return sync_point(); }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation" : "cudaError"; }
const char *cudaGetErrorString(cudaError_t e) { return e == cudaErrorMemoryAllocation ? "out of memory" : "error"; }
