/* Capture: the kernel observer (core/ff_impl.h) a graph installs while a region runs,
 * and begin/end/abort. Everything here runs on the capturing thread, except a storage's
 * death, which happens wherever its last reference goes (s->observer says whose it is). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"

_Thread_local ff_graph *ff_graph_recording;

/* The graph whose observer the core called back. */
static ff_graph *graph_of(ff_kernel_observer *obs) { return (ff_graph *)((char *)obs - offsetof(ff_graph, observer)); }

/* The one place this thread's capture starts, pauses and stops: the graph and the core's
 * hook move together. */
static void set_recording(ff_graph *g)
{
    ff_graph_recording = g;
    ff_kernel_observer_set(g ? &g->observer : NULL);
}

static void fail(ff_graph *g, const char *msg)
{
    if (g->failed) return;
    g->failed = true;
    snprintf(g->fail_msg, sizeof g->fail_msg, "%s", msg);
}

static bool grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return true;
    int nc = *cap ? *cap : 64;
    while (nc < need) nc *= 2;
    void *q = realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

static int new_buf(ff_graph *g, int role, ff_storage *s)
{
    if (!grow((void **)&g->bufs, &g->cap_bufs, g->n_bufs + 1, sizeof *g->bufs)) return fail(g, "out of memory"), -1;
    g->bufs[g->n_bufs] = (gbuf){.role = role, .s = s, .nbytes = s->nbytes, .first = -1, .last = -1};
    return g->n_bufs++;
}

static size_t hash_ptr(const void *p, int cap) { return ((uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull % (size_t)cap; }

/* The buffer id of a storage that existed before the capture: retained on first sight. */
static int input_buf(ff_graph *g, ff_storage *s)
{
    if ((g->map_n + 1) * 2 >= g->map_cap) { /* grow at half load, before looking */
        int nc = g->map_cap ? g->map_cap * 2 : 64;
        ff_storage **k = calloc((size_t)nc, sizeof *k);
        int *v = calloc((size_t)nc, sizeof *v);
        if (!k || !v) return free(k), free(v), fail(g, "out of memory"), -1;
        for (int i = 0; i < g->map_cap; i++)
            if (g->map_key[i]) {
                size_t j = hash_ptr(g->map_key[i], nc);
                while (k[j]) j = (j + 1) % (size_t)nc;
                k[j] = g->map_key[i];
                v[j] = g->map_val[i];
            }
        free(g->map_key);
        free(g->map_val);
        g->map_key = k;
        g->map_val = v;
        g->map_cap = nc;
    }
    size_t i = hash_ptr(s, g->map_cap);
    for (; g->map_key[i]; i = (i + 1) % (size_t)g->map_cap)
        if (g->map_key[i] == s) return g->map_val[i];
    int id = new_buf(g, GB_INPUT, s);
    if (id < 0) return -1;
    ff_storage_retain(s);
    g->map_key[i] = s;
    g->map_val[i] = id;
    g->map_n++;
    return id;
}

static int buf_of(ff_graph *g, ff_storage *s)
{
    return s->observer == &g->observer ? s->observer_tag : input_buf(g, s);
}

static gnode *new_node(ff_graph *g, int kind, int op, int nv)
{
    if (!grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes) ||
        !grow((void **)&g->views, &g->cap_views, g->n_views + nv, sizeof *g->views) ||
        !grow((void **)&g->vbuf, &g->cap_vbuf, g->n_views + nv, sizeof *g->vbuf))
        return fail(g, "out of memory"), NULL;
    gnode *n = &g->nodes[g->n_nodes++];
    *n = (gnode){.kind = kind, .op = op, .v0 = g->n_views, .nv = nv, .n_dst = 1, .group = -1};
    g->n_views += nv;
    return n;
}

/* Appends view v over storage s to node n (slot i). */
static void put_view(ff_graph *g, gnode *n, int i, const ff_view *v, ff_storage *s)
{
    int b = buf_of(g, s);
    g->views[n->v0 + i] = *v;
    g->vbuf[n->v0 + i] = b;
    if (b < 0) return;
    g->bufs[b].refs++;
    if (i < n->n_dst) g->bufs[b].writers++;
}

static bool same_backend(ff_graph *g, ff_storage *s)
{
    if (!g->be) g->be = s->backend;
    if (g->be == s->backend) return true;
    char msg[256];
    snprintf(msg, sizeof msg, "the region used two backends ('%s' and '%s'); a graph runs on one",
             g->be->name, s->backend->name);
    fail(g, msg);
    return false;
}

static void on_kernel(ff_kernel_observer *obs, int kind, int op, int n, const ff_view *views, ff_storage *const *stor,
                      const ff_kernel_params *p)
{
    ff_graph *g = graph_of(obs);
    if (g->only && stor[0]->backend != g->only) return;
    for (int i = 0; i < n; i++)
        if (!same_backend(g, stor[i])) return;
    gnode *nd = new_node(g, kind, op, n);
    if (!nd) return;
    if (p) nd->p = *p;
    if (p && p->n_dst > 1) nd->n_dst = p->n_dst;
    if (kind == FF_KIND_RANDOM) {
        nd->rng_n = (uint64_t)ff_view_numel(&views[0]);
        if (g->draw_pending && p->seed == g->draw_seed && p->counter_base == g->draw_base) {
            nd->global_rng = true;
            nd->rng_n = g->draw_n;
        }
        g->draw_pending = false;
    }
    for (int i = 0; i < n; i++) put_view(g, nd, i, &views[i], stor[i]);
}

static void on_failure(ff_kernel_observer *obs, ff_status st)
{
    (void)st; /* the message says what failed */
    ff_graph *g = graph_of(obs);
    char msg[512];
    snprintf(msg, sizeof msg, "a kernel failed while capturing: %s", ff_last_error());
    fail(g, msg);
}

static void on_storage_new(ff_kernel_observer *obs, ff_storage *s)
{
    ff_graph *g = graph_of(obs);
    if (g->only && s->backend != g->only) return;
    int id = new_buf(g, GB_TEMP, s);
    if (id < 0) return;
    s->observer = obs;
    s->observer_tag = id;
    g->live_bytes += s->nbytes;
    if (g->live_bytes > g->info.eager_peak_bytes) g->info.eager_peak_bytes = g->live_bytes;
}

static void on_storage_dead(ff_kernel_observer *obs, ff_storage *s)
{
    ff_graph *g = graph_of(obs);
    gbuf *b = &g->bufs[s->observer_tag];
    b->role = GB_DEAD;
    b->s = NULL;
    g->live_bytes -= s->nbytes;
    s->observer = NULL;
    if (s->release_external) fail(g, "foreign memory (DLPack, a mapped file) was released while capturing");
}

/* An upload (the bytes to write) or a checked read (the bytes eager read, op = their
 * dtype) of nbytes at byte_offset of s: a byte view, so planning moves it like any other. */
static void bytes_node(ff_graph *g, int kind, int op, ff_storage *s, size_t byte_offset, const void *host,
                       size_t nbytes)
{
    gnode *nd = new_node(g, kind, op, 1);
    if (!nd) return;
    if (!(nd->data = malloc(nbytes))) return fail(g, "out of memory");
    memcpy(nd->data, host, nbytes);
    nd->n_dst = kind == GN_UPLOAD;
    ff_view v = {.buf = s->buf, .offset = (int64_t)byte_offset, .dtype = FF_U8, .ndim = 1,
                 .shape = {(int64_t)nbytes}, .strides = {1}};
    put_view(g, nd, 0, &v, s);
}

static void on_upload(ff_kernel_observer *obs, ff_storage *s, size_t byte_offset, const void *host, size_t nbytes)
{
    ff_graph *g = graph_of(obs);
    if (g->only && s->backend != g->only) return;
    if (!same_backend(g, s)) return;
    bytes_node(g, GN_UPLOAD, 0, s, byte_offset, host, nbytes);
}

static void on_host_read(ff_kernel_observer *obs, ff_storage *s, size_t byte_offset, const void *host, size_t nbytes,
                         ff_dtype dtype)
{
    ff_graph *g = graph_of(obs);
    if (g->only && s->backend != g->only) return;
    g->info.host_reads++;
    if (g->checked && nbytes && same_backend(g, s)) bytes_node(g, GN_READBACK, (int)dtype, s, byte_offset, host, nbytes);
}

static void on_random_draw(ff_kernel_observer *obs, uint64_t seed, uint64_t counter_base, uint64_t n)
{
    ff_graph *g = graph_of(obs);
    g->draw_pending = true;
    g->draw_seed = seed;
    g->draw_base = counter_base;
    g->draw_n = n;
}

/* ---- begin / end ------------------------------------------------------------------ */

static ff_status begin(ff_backend *only, bool checked)
{
    static const char fn[] = "ff_graph_capture_begin";
    if (ff_graph_recording)
        return ff_error(FF_ERR_INVALID, "%s: this thread is already capturing (captures do not nest)", fn);
    ff_graph *g = calloc(1, sizeof *g);
    if (!g) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    g->observer = (ff_kernel_observer){
        .kernel = on_kernel,
        .failure = on_failure,
        .storage_new = on_storage_new,
        .storage_dead = on_storage_dead,
        .upload = on_upload,
        .host_read = on_host_read,
        .random_draw = on_random_draw,
    };
    g->only = only;
    g->checked = checked;
    set_recording(g);
    return FF_OK;
}

ff_status ff_graph_capture_begin(void) { return begin(NULL, false); }

ff_status ff_graph_capture_begin_checked(ff_backend *only) { return begin(only, true); }

bool ff_graph_is_capturing(void) { return ff_graph_recording != NULL; }

/* Stops recording: live temporaries become outputs (retained), untouched ones unused. */
static ff_graph *stop(void)
{
    ff_graph *g = ff_graph_recording;
    if (!g) return NULL;
    set_recording(NULL);
    for (int i = 0; i < g->n_bufs; i++) {
        gbuf *b = &g->bufs[i];
        if (b->role != GB_TEMP) continue;
        b->s->observer = NULL;
        if (b->refs) {
            b->role = GB_OUTPUT;
            ff_storage_retain(b->s);
        } else {
            b->role = GB_UNUSED;
            b->s = NULL;
        }
    }
    for (int i = 0; i < g->n_bufs; i++)
        if (g->bufs[i].role == GB_DEAD && !g->bufs[i].refs) g->bufs[i].role = GB_UNUSED;
    return g;
}

ff_graph *ff_graph_capture_end(void)
{
    static const char fn[] = "ff_graph_capture_end";
    ff_graph *g = stop();
    if (!g) return ff_error(FF_ERR_INVALID, "%s: this thread is not capturing", fn), NULL;
    if (g->failed) {
        ff_error(FF_ERR_INVALID, "%s: %s", fn, g->fail_msg);
        ff_graph_release(g);
        return NULL;
    }
    if (ff_graph_plan(g)) {
        ff_error_prefix(fn);
        ff_graph_release(g);
        return NULL;
    }
    return g;
}

void ff_graph_capture_abort(void) { ff_graph_release(stop()); }

ff_status ff_graph_host_call(ff_status (*fn)(void *user), void *user)
{
    if (!fn) return ff_error(FF_ERR_INVALID, "ff_graph_host_call: fn is NULL");
    ff_graph *g = ff_graph_recording;
    if (!g) return fn(user);
    set_recording(NULL); /* the call's own kernels run eagerly, unrecorded */
    ff_status st = fn(user);
    set_recording(g);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "a host call failed while capturing: %s", ff_last_error());
        fail(g, msg);
        return st;
    }
    gnode *nd = new_node(g, GN_HOST, 0, 0);
    if (nd) {
        nd->host_fn = fn;
        nd->user = user;
        nd->n_dst = 0;
    }
    return FF_OK;
}

void ff_graph_release(ff_graph *g)
{
    if (!g) return;
    if (ff_graph_recording == g) set_recording(NULL);
    ff_graph_runs_release(g); /* the records first: they use the arena and the buffers below */
    for (int i = 0; i < g->n_bufs; i++) {
        gbuf *b = &g->bufs[i];
        if (b->role == GB_TEMP && b->s) b->s->observer = NULL; /* released mid-capture */
        if ((b->role == GB_INPUT || b->role == GB_OUTPUT) && b->s) ff_storage_release(b->s);
        if (b->own) g->be->vt->free(g->be->ctx, b->own);
    }
    for (int i = 0; i < g->n_groups; i++) {
        gfused *f = &g->groups[i];
        free(f->views);
        free(f->inst);
        free(f->members);
    }
    free(g->groups);
    for (int k = 0; k < g->n_scratch; k++)
        if (g->scratch[k]) g->be->vt->free(g->be->ctx, g->scratch[k]);
    free(g->scratch);
    if (g->arena) g->be->vt->free(g->be->ctx, g->arena);
    for (int i = 0; i < g->n_nodes; i++) free(g->nodes[i].data);
    free(g->nodes);
    free(g->launch);
    free(g->views);
    free(g->vbuf);
    free(g->bufs);
    free(g->map_key);
    free(g->map_val);
    free(g);
}
