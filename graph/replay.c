/* Replay: the planned launches, each a direct call of the backend's entry on views
 * resolved at planning (no shape work, no checks, no allocation), or runs of them
 * recorded for the device and launched as one call (record.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ff_backend_scalar.h" /* ffb_ld_f64: a read element as a number */
#include "graph_impl.h"

/* Whether element i of two float reads is NaN in both: NaN's sign and payload are not
 * values (IEEE 754 leaves them to the hardware: a GPU's float units return one canonical
 * NaN, its double units another), so a NaN matches any NaN, as in the suite's compare. */
static bool both_nan(const unsigned char *a, const unsigned char *b, size_t i, ff_dtype t)
{
    size_t es = ff_dtype_size(t);
    if (!ff_dtype_is_float(t) || !es) return false;
    size_t at = i / es * es;
    return isnan(ffb_ld_f64((const char *)a + at, t)) && isnan(ffb_ld_f64((const char *)b + at, t));
}

/* A checked read: the bytes now at the view against those eager read, element by element
 * (n->op is the read's dtype). */
static ff_status check_read(ff_graph *g, const gnode *n, const ff_view *v)
{
    size_t nb = (size_t)v->shape[0];
    unsigned char *now = malloc(nb);
    const unsigned char *then = n->data;
    if (!now) return ff_error(FF_ERR_OOM, "out of memory checking a read");
    ff_status st = g->be->vt->download(g->be->ctx, v->buf, (size_t)v->offset, now, nb);
    size_t es = ff_dtype_size((ff_dtype)n->op) ? ff_dtype_size((ff_dtype)n->op) : 1;
    for (size_t i = 0; !st && i < nb; i++) {
        if (now[i] == then[i]) continue;
        if (both_nan(now, then, i, (ff_dtype)n->op)) {
            i = i / es * es + es - 1; /* the rest of this element */
            continue;
        }
        if (!g->mismatches++)
            snprintf(g->mismatch_msg, sizeof g->mismatch_msg,
                     "a read of %zu bytes differs from eager's at byte %zu (0x%02x, eager 0x%02x)", nb, i, now[i],
                     then[i]);
        break;
    }
    free(now);
    return st;
}

ff_status ff_graph_run_node(ff_graph *g, const gnode *n)
{
    const ff_backend_vtable *vt = g->be->vt;
    void *c = g->be->ctx;
    const ff_view *v = &g->views[n->v0];
    const ff_kernel_params *p = &n->p;
    switch (n->kind) {
    case FF_KIND_FILL: return vt->fill(c, v, p->value);
    case FF_KIND_COPY: return vt->copy(c, v, v + 1);
    case FF_KIND_UNARY: return vt->unary(c, (ff_unary_op)n->op, v, v + 1);
    case FF_KIND_BINARY: return vt->binary(c, (ff_binary_op)n->op, v, v + 1, v + 2);
    case FF_KIND_REDUCE: return vt->reduce(c, (ff_reduce_op)n->op, v, v + 1, p->axes_mask);
    case FF_KIND_MATMUL: return vt->matmul(c, v, v + 1, v + 2);
    case FF_KIND_WHERE: return vt->where(c, v, v + 1, v + 2, v + 3);
    case FF_KIND_GATHER: return vt->gather(c, v, v + 1, v + 2, p->axis);
    case FF_KIND_SCATTER_ADD: return vt->scatter_add(c, v, v + 1, v + 2, p->axis);
    case FF_KIND_RANDOM: {
        /* fresh numbers each replay: the global generator's next block, or (explicit
         * seeds) the captured counter moved on by one block per replay */
        uint64_t seed = p->seed, base = p->counter_base;
        if (g->same_random) {
            /* a checked replay draws what the capture drew */
        } else if (n->global_rng) {
            ff_random_next(n->rng_n, &seed, &base);
        } else {
            base += (uint64_t)(g->info.replays + 1) * n->rng_n;
        }
        return vt->random(c, v, p->dist, seed, base, p->p0, p->p1);
    }
    case FF_KIND_SOFTMAX: return vt->softmax(c, v, v + 1, p->axis, p->flag);
    case FF_KIND_CONV2D:
        return n->op == 0   ? vt->conv2d(c, v, v + 1, v + 2, &p->conv)
               : n->op == 1 ? vt->conv2d_backward_input(c, v, v + 1, v + 2, &p->conv)
                            : vt->conv2d_backward_weight(c, v, v + 1, v + 2, &p->conv);
    case FF_KIND_SCAN: return vt->scan(c, n->op, v, v + 1, p->axis);
    case FF_KIND_SORT: return vt->argsort(c, v, v + 1, p->axis, p->flag);
    case FF_KIND_LINALG: return vt->linalg(c, n->op, v, n->n_dst, v + n->n_dst, n->nv - n->n_dst);
    case FF_KIND_FFT: return vt->fft(c, n->op, v, v + 1, p->axis);
    case FF_KIND_BATCH_NORM: return vt->batch_norm(c, n->op, v, n->n_dst, v + n->n_dst, n->nv - n->n_dst, p->eps);
    case FF_KIND_POOL2D: return vt->pool2d(c, n->op, v, v + 1, n->nv - 1, &p->pool);
    case FF_KIND_ATTENTION: return vt->attention(c, n->op, v, n->n_dst, v + n->n_dst, n->nv - n->n_dst, &p->attn);
    case FF_KIND_LAYER_NORM: return vt->layer_norm(c, n->op, v, n->n_dst, v + n->n_dst, n->nv - n->n_dst, p->eps);
    case GN_UPLOAD: return vt->upload(c, v->buf, (size_t)v->offset, n->data, (size_t)v->shape[0]);
    case GN_HOST: return n->host_fn(n->user);
    case GN_READBACK: return check_read(g, n, v);
    case GN_FUSED: return ff_graph_run_fused(g, &g->groups[n->group]);
    default: return ff_error(FF_ERR_INVALID, "unknown graph node kind %d", n->kind);
    }
}

const char *ff_graph_kind_name(int kind)
{
    static const char *const names[] = {"fill",   "copy",   "unary", "binary", "reduce", "matmul", "where",
                                        "gather", "scatter_add", "random", "softmax", "conv2d", "scan", "argsort",
                                        "linalg", "fft",    "batch_norm", "pool2d", "fused", "collective", "attention",
                                        "qmatmul", "layer_norm", "linear"};
    if (kind >= 0 && kind < (int)(sizeof names / sizeof names[0])) return names[kind];
    return kind == GN_HOST ? "host_call" : kind == GN_UPLOAD ? "upload" : kind == GN_FUSED ? "fused" : kind == GN_READBACK ? "readback" : "?";
}

ff_status ff_graph_replay(ff_graph *g)
{
    static const char fn[] = "ff_graph_replay";
    if (!g) return ff_error(FF_ERR_INVALID, "%s: graph is NULL", fn);
    if (ff_graph_recording) return ff_error(FF_ERR_INVALID, "%s: this thread is capturing; replay after capture_end", fn);
    ff_clear_error(); /* once: an entry sets the message only when it fails */
    ff_status st = ff_graph_run_launches(g); /* record.c: device-side runs where the backend records */
    if (st) return st;
    g->info.replays++;
    return FF_OK;
}

ff_status ff_graph_replay_with(ff_graph *g, int n, ff_tensor *const *inputs, const ff_tensor *const *values)
{
    static const char fn[] = "ff_graph_replay_with";
    if (!g) return ff_error(FF_ERR_INVALID, "%s: graph is NULL", fn);
    if (n < 0 || (n && (!inputs || !values))) return ff_error(FF_ERR_INVALID, "%s: bad input arrays (n = %d)", fn, n);
    for (int i = 0; i < n; i++) { /* everything checked before anything is written */
        const ff_tensor *t = inputs[i], *v = values[i];
        if (!t || !v) return ff_error(FF_ERR_INVALID, "%s: input %d or its value is NULL", fn, i);
        char a[160], b[160];
        if (t->dtype != v->dtype || t->layout.ndim != v->layout.ndim ||
            memcmp(t->layout.shape, v->layout.shape, sizeof(int64_t) * (size_t)t->layout.ndim))
            return ff_error(FF_ERR_INVALID, "%s: input %d was captured as %s %s, got %s %s (capture again for new shapes)",
                            fn, i, ff_dtype_name(t->dtype), ff_shape_str(t->layout.ndim, t->layout.shape, a, sizeof a),
                            ff_dtype_name(v->dtype), ff_shape_str(v->layout.ndim, v->layout.shape, b, sizeof b));
    }
    for (int i = 0; i < n; i++)
        if (inputs[i] != values[i] && ff_kernel_copy(inputs[i], values[i], fn)) return ff_last_status();
    return ff_graph_replay(g);
}

int ff_graph_check_replay(ff_graph *g, char *msg, size_t cap)
{
    g->same_random = true;
    g->mismatches = 0;
    ff_status st = ff_graph_replay(g);
    g->same_random = false;
    if (st) return -1;
    if (g->mismatches && msg) snprintf(msg, cap, "%s (%lld reads differ)", g->mismatch_msg, (long long)g->mismatches);
    return (int)g->mismatches;
}

ff_status ff_graph_stats(const ff_graph *g, ff_graph_info *out)
{
    if (!g || !out) return ff_error(FF_ERR_INVALID, "ff_graph_stats: NULL argument");
    *out = g->info;
    return FF_OK;
}
