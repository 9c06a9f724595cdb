/*
 * Private to graph/: what a captured graph holds.
 *
 * Capture (capture.c) records every kernel call the region made as a node over views,
 * and every storage a view touched as a buffer with a role. Planning (plan.c, fuse.c)
 * hoists constant fills out, fuses elementwise chains, gives every intermediate a slot
 * in one arena and rewrites the views onto it. Replay (replay.c) walks the planned
 * launches calling the backend's entries directly. dump.c writes Graphviz.
 */
#ifndef FF_GRAPH_IMPL_H
#define FF_GRAPH_IMPL_H

#include <string.h>

#include "ff/graph.h"
#include "ff_impl.h"

/* Roles of a buffer (a storage the region touched). */
enum {
    GB_INPUT,  /* existed before the capture: retained, read and written in place */
    GB_TEMP,   /* created while capturing, still alive (becomes an output at the end) */
    GB_OUTPUT, /* created while capturing, alive after it: retained, written by replays */
    GB_DEAD,   /* created and released while capturing: an intermediate, planned */
    GB_CONST,  /* an intermediate written once by a constant fill/upload: computed at plan */
    GB_UNUSED  /* created while capturing but never touched by a kernel */
};

typedef struct gbuf {
    int role;
    ff_storage *s;    /* INPUT, OUTPUT: retained; TEMP: borrowed while capturing */
    size_t nbytes;
    void *own;        /* CONST (and unplanned intermediates): its own allocation */
    size_t arena_off; /* DEAD: its slot */
    int refs;         /* views of it in nodes */
    int writers;      /* nodes writing it */
    int first, last;  /* launch steps using it (planning) */
    bool fused_temp;  /* lives only inside a fused program: no memory */
    bool in_place;    /* placed over a dying operand of its producer */
    int group_refs;   /* scratch for fusion */
} gbuf;

/* Node kinds past the ff_op_kind values. */
enum { GN_HOST = 1000, GN_UPLOAD, GN_FUSED, GN_READBACK };

typedef struct gnode {
    int kind, op; /* readback: op is the read's dtype */
    int v0, nv, n_dst; /* views g->views[v0 .. v0+nv), outputs first */
    ff_kernel_params p;
    bool global_rng;   /* random: counters from the global generator */
    uint64_t rng_n;    /* random: counters one draw uses */
    ff_status (*host_fn)(void *user);
    void *user;
    void *data;        /* upload: a copy of the bytes; readback: the bytes eager read */
    bool hoisted;      /* constant: ran once at planning, not replayed */
    int group;         /* fused group, -1 if none */
} gnode;

/* A run of consecutive launches (g->launch[first .. first+n)) as replays execute it: one
 * recorded device-side unit (handle), or host-driven launches (handle NULL). */
typedef struct grun {
    int first, n;
    void *handle;
} grun;

typedef struct gfused {
    ff_fused_program prog;
    ff_view *views;      /* the program's views (n_views) */
    ff_fused_inst *inst;
    int *members;        /* the node indices it replaces */
    int n_members;
    bool by_backend;     /* the backend's fused entry runs it; else tiles through unary/binary/copy */
    ff_dtype temp_dtype[FF_FUSED_MAX_VALUES]; /* the tiles' temporaries may mix dtypes (casts) */
    /* the tile fallback: rows of dim 0 per tile; temporary t uses the graph's scratch[t] */
    int64_t tile_rows;
    int n_temps;
} gfused;

struct ff_graph {
    ff_kernel_observer observer; /* what the core calls while this graph captures */
    ff_backend *be;
    gnode *nodes;
    int n_nodes, cap_nodes;
    ff_view *views;
    int *vbuf; /* buffer of each view */
    int n_views, cap_views, cap_vbuf;
    gbuf *bufs;
    int n_bufs, cap_bufs;
    /* inputs by storage (open addressing; only ever grows while capturing) */
    ff_storage **map_key;
    int *map_val;
    int map_cap, map_n;
    /* checked captures (ff-conformance): only this backend's kernels, reads recorded */
    ff_backend *only;
    bool checked;
    bool same_random;   /* replays draw what the capture drew */
    int64_t mismatches; /* readbacks that differed */
    char mismatch_msg[256];
    /* capture state */
    bool failed;
    char fail_msg[512];
    size_t live_bytes;
    bool draw_pending;
    uint64_t draw_seed, draw_base, draw_n;
    /* the plan */
    gnode *launch; /* what a replay runs, in order */
    int n_launch;
    gfused *groups;
    int n_groups;
    void **scratch; /* tile buffers the fallback's groups share (one group runs at a time) */
    int n_scratch;
    void *arena;
    /* device-side replay (record.c): built at the first replay */
    grun *runs;
    int n_runs;
    bool runs_built;
    ff_graph_info info;
};

/* Two views over the same elements in the same order, whatever their buffers: dtype,
 * offset, shape and strides equal. */
static inline bool ff_graph_same_layout(const ff_view *a, const ff_view *b)
{
    return a->dtype == b->dtype && a->offset == b->offset && a->ndim == b->ndim &&
           !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) &&
           !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim);
}

/* The graph capturing on this thread, NULL when none (or while a host call runs);
 * capture.c installs its observer in the core whenever it sets this. */
extern _Thread_local ff_graph *ff_graph_recording;

/* Planning, called by ff_graph_capture_end: FF_OK or an error (the graph is then freed). */
ff_status ff_graph_plan(ff_graph *g);
/* Fusion (fuse.c): groups elementwise chains of the launch order; marks temporaries. */
ff_status ff_graph_fuse(ff_graph *g, int *order, int *n_order);
/* Builds each group's program over the final (rewritten) views and its scratch. */
ff_status ff_graph_fuse_finish(ff_graph *g);
/* Runs one group (replay.c's fallback and the backend's entry). */
ff_status ff_graph_run_fused(ff_graph *g, const gfused *f);
/* Runs one node's kernel on its (planned) views. */
ff_status ff_graph_run_node(ff_graph *g, const gnode *n);
/* Runs the plan's launches: through recorded device-side runs where the backend records
 * (record.c, built at the first call), else one by one. */
ff_status ff_graph_run_launches(ff_graph *g);
/* Frees the recorded runs (ff_graph_release). */
void ff_graph_runs_release(ff_graph *g);
const char *ff_graph_kind_name(int kind);

#endif /* FF_GRAPH_IMPL_H */
