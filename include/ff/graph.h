/*
 * Graphs: capture a region of ordinary ff calls once, replay it many times.
 *
 *   ff_graph_capture_begin();
 *   ... forward, ff_backward, ff_optimizer_step: any ff calls ...
 *   ff_graph *g = ff_graph_capture_end();
 *   for (...) { copy the next batch into the captured input tensors; ff_graph_replay(g); }
 *
 * What is captured is the sequence of backend kernel calls the region made on the
 * calling thread, on the tensors it touched. A replay runs those calls again, with
 * no shape work, no dispatch checks and no allocation, on the current contents of the
 * tensors that existed before the capture (its inputs: data, parameters, optimizer
 * state), and writes the tensors that outlive the capture (its outputs: the loss, the
 * .grad tensors, ...) in place: the ff_tensor handles you held after capture_end see
 * each replay's values. Parameters and optimizer state update in place as in eager mode.
 *
 * Rules (those of CUDA graphs and torch.compile's static inputs):
 *   - Shapes, dtypes and control flow are those of the capture. To feed new data, write
 *     it into the captured input tensors (ff_copy_, ff_copy_from_host_ from host memory,
 *     or ff_graph_replay_with, which also checks shapes and dtypes).
 *   - Values read back to the host while capturing (ff_tensor_item, ff_tensor_to_host:
 *     counted in ff_graph_info.host_reads) are read once, at capture time.
 *   - Host-side state that a step advances is advanced through host calls
 *     (ff_graph_host_call): optimizers do this, so a replayed step honours the current
 *     learning rate and Adam's bias corrections. Run one step eagerly before capturing a
 *     step whose optimizer creates state on its first step (SGD momentum buffers); the
 *     capture reports it otherwise.
 *   - Random ops draw new numbers on every replay: those drawn from the global generator
 *     take the generator's next numbers (as eager would); those with an explicit seed
 *     (ff_dropout's) advance their counter by one block per replay.
 *   - Objects whose host state a graph calls back into (optimizers) must outlive it.
 *
 * At capture_end the graph is planned once: constant fills are hoisted out, chains of
 * elementwise ops are fused (handed to the backend's optional fused entry, or run tile
 * by tile through its plain entries), and every intermediate gets a slot in one arena
 * sized by liveness (buffers reused, in place where the op allows). FF_GRAPH_FUSE=0 and
 * FF_GRAPH_PLAN=0 turn fusion and arena planning off (for comparisons and bisecting).
 * On a backend that can record entry calls for the device (cuda: a CUDA graph), the first
 * replay records each run of launches that need no host in between, and every replay then
 * launches those runs as one call each (torch.compile's "reduce-overhead"); FF_GRAPH_DEVICE=0
 * keeps every launch host-driven.
 */
#ifndef FF_GRAPH_H
#define FF_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ff_graph ff_graph;

/* Starts capturing on the calling thread (one capture per thread at a time; capture is
 * not nested). Kernels still run while capturing: the region computes its results once. */
ff_status ff_graph_capture_begin(void);
/* Ends the capture and plans the graph. NULL with the error set if anything in the
 * region failed or cannot be captured (the first such error is reported); the region's
 * eager effects stay. */
ff_graph *ff_graph_capture_end(void);
/* Ends a capture without building a graph (after an error in the region). */
void ff_graph_capture_abort(void);
bool ff_graph_is_capturing(void);

/* Runs the captured kernels again. */
ff_status ff_graph_replay(ff_graph *g);
/* Copies values[i] into inputs[i] (same shapes and dtypes, else FF_ERR_INVALID naming
 * both and nothing is written), then replays. inputs are tensors the graph read. */
ff_status ff_graph_replay_with(ff_graph *g, int n, ff_tensor *const *inputs, const ff_tensor *const *values);
void ff_graph_release(ff_graph *g);

/* Inside a capture: runs fn(user) now (its kernels are not recorded) and again before
 * the kernels that follow it on every replay. Outside a capture: just runs fn(user).
 * For host-side state a step advances (step counters, learning-rate-derived scalars
 * written into 0-d tensors the recorded kernels read). user must outlive the graph. */
ff_status ff_graph_host_call(ff_status (*fn)(void *user), void *user);

typedef struct ff_graph_info {
    int64_t kernels_captured;   /* kernel calls the region made */
    int64_t launches;           /* calls per replay after hoisting and fusion (fused groups count 1) */
    int64_t constants_hoisted;  /* constant fills run once at planning */
    int64_t fused_groups;       /* elementwise chains run as one pass */
    int64_t fused_kernels;      /* kernels inside those chains */
    int64_t fused_by_backend;   /* groups handed to the backend's fused entry */
    int64_t host_calls;         /* ff_graph_host_call nodes */
    int64_t host_reads;         /* values read to the host while capturing */
    int64_t inputs, outputs, intermediates; /* tensors' storages, by role */
    size_t eager_peak_bytes;    /* peak bytes of tensors alive at once as the capture ran */
    size_t planned_peak_bytes;  /* arena + outputs + constants: what a replay keeps */
    size_t arena_bytes;         /* the planned intermediates' arena */
    size_t intermediate_bytes;  /* sum of intermediates' sizes (what no reuse would need) */
    int64_t in_place;           /* intermediates placed over a dying operand of the same op */
    int64_t replays;
    /* device-side replay (a backend with graph_record: CUDA graphs on cuda), from the
     * first replay on: runs of launches recorded once and launched as one call each, the
     * launches inside them, and launches that stay host-driven (host calls, uploads,
     * random fills, and calls the backend could not record) */
    int64_t device_runs, device_launches, host_launches;
} ff_graph_info;

ff_status ff_graph_stats(const ff_graph *g, ff_graph_info *out);
/* Writes Graphviz dot: every launch with its op, shapes and dtypes, fused groups as
 * clusters, and each tensor's role and buffer assignment (arena offset). */
ff_status ff_graph_dump(const ff_graph *g, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* FF_GRAPH_H */
