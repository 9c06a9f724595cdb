/* Stream capture and CUDA graphs for the emulated runtime (cuda_emu_runtime.c, the
 * emulated libraries, and the kernels' launches in backends/cuda/cuda_emu.h): while a
 * stream captures, the work queued on it is recorded instead of run, as closures (a run
 * function and its argument), and a graph launch runs them in order. As the real runtime:
 * a synchronizing call during a capture fails and invalidates it (cudaStreamEndCapture
 * then returns cudaErrorStreamCaptureInvalidated and no graph); the emulated libraries
 * record their work or refuse (cuda_emu_capture_refuse), which invalidates too. One
 * capture a thread, on one stream. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_emu_graph.h"

typedef struct emu_node {
    void (*run)(void *);
    void (*drop)(void *);
    void *arg;
} emu_node;

struct CUgraph_st {
    emu_node *nodes;
    int n, cap, refs; /* refs: the graph and the executables made from it */
};

struct CUgraphExec_st {
    struct CUgraph_st *g;
};

static _Thread_local struct {
    int active, invalid;
    cudaStream_t stream;
    struct CUgraph_st *g;
} cap;

int cuda_emu_capture_calls;

int cuda_emu_capturing(void) { return cap.active; }

void cuda_emu_capture_refuse(void) { cap.invalid |= cap.active; }

void cuda_emu_capture_add(void (*run)(void *), void (*drop)(void *), void *arg)
{
    struct CUgraph_st *g = cap.g;
    if (!cap.invalid && g->n == g->cap) {
        int c = g->cap ? 2 * g->cap : 16;
        emu_node *n = realloc(g->nodes, sizeof *n * (size_t)c);
        if (n) g->nodes = n, g->cap = c;
    }
    if (cap.invalid || g->n == g->cap) {
        cap.invalid = 1;
        if (drop) drop(arg);
        return;
    }
    g->nodes[g->n++] = (emu_node){run, drop, arg};
    cuda_emu_capture_calls++;
}

int cuda_emu_run_or_record(void (*run)(void *), const void *arg, size_t size)
{
    if (!cap.active) {
        run((void *)arg);
        return 1;
    }
    void *kept = malloc(size ? size : 1);
    if (!kept) return 0;
    memcpy(kept, arg, size);
    cuda_emu_capture_add(run, free, kept);
    return 1;
}

static void graph_unref(struct CUgraph_st *g)
{
    if (!g || --g->refs > 0) return;
    for (int i = 0; i < g->n; i++)
        if (g->nodes[i].drop) g->nodes[i].drop(g->nodes[i].arg);
    free(g->nodes);
    free(g);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    if (cap.active) return cudaErrorIllegalState;
    struct CUgraph_st *g = calloc(1, sizeof *g);
    if (!g) return cudaErrorMemoryAllocation;
    g->refs = 1;
    cap.active = 1, cap.invalid = 0, cap.stream = s, cap.g = g;
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    if (!cap.active || s != cap.stream) return cudaErrorIllegalState;
    struct CUgraph_st *g = cap.g;
    int invalid = cap.invalid;
    cap.active = 0, cap.invalid = 0, cap.g = NULL;
    if (invalid) {
        graph_unref(g);
        *graph = NULL;
        return cudaErrorStreamCaptureInvalidated;
    }
    *graph = g;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags)
{
    (void)flags;
    if (!graph) return cudaErrorInvalidValue;
    struct CUgraphExec_st *e = calloc(1, sizeof *e);
    if (!e) return cudaErrorMemoryAllocation;
    e->g = graph;
    graph->refs++;
    *exec = e;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    graph_unref(graph);
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    if (!exec) return cudaErrorInvalidValue;
    graph_unref(exec->g);
    free(exec);
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    (void)s;
    if (!exec) return cudaErrorInvalidValue;
    if (cap.active) { /* a graph launched into a capture: not something the backend does */
        cap.invalid = 1;
        return cudaErrorStreamCaptureUnsupported;
    }
    for (int i = 0; i < exec->g->n; i++) exec->g->nodes[i].run(exec->g->nodes[i].arg);
    return cudaSuccess;
}
