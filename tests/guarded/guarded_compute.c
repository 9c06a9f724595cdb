/* The guarded backend's compute entries: each opens the buffers its views name (the
 * window in guarded_impl.h), runs the reference kernel on the host addresses and closes
 * them again. Views are checked against their buffers' sizes on the way in. */
#include "guarded_impl.h"

/* Translates one view to host addresses, opening its buffer; refuses a view that
 * reaches past its buffer, which a host backend would read silently. */
static int guarded_window_view(guarded_ctx *c, guarded_window *w, const ff_view *in, ff_view *out, const char *fn)
{
    *out = *in;
    if (!in->buf) return 0;
    size_t nbytes;
    char *data = ff_guarded_mem_open(c, in->buf, &nbytes, fn);
    if (!data) return -1;
    w->open[w->n++] = in->buf;
    out->buf = data;
    if (ff_view_numel(in) > 0) {
        int64_t last = in->offset;
        for (int d = 0; d < in->ndim; d++) last += (in->shape[d] - 1) * in->strides[d];
        size_t end = (size_t)(last + 1) * ff_dtype_size(in->dtype);
        if (in->offset < 0 || end > nbytes) {
            c->host->set_error("guarded %s: a view reaches byte %zu of a %zu-byte buffer", fn, end, nbytes);
            return -1;
        }
    }
    return 0;
}

/* Opens n views into out[] (GUARDED_LEAVE closes them, also after a failure). */
static int guarded_window_views(guarded_ctx *c, guarded_window *w, const ff_view *in, ff_view *out, int n,
                                const char *fn)
{
    for (int i = 0; i < n; i++)
        if (guarded_window_view(c, w, &in[i], &out[i], fn)) return -1;
    return 0;
}

static ff_status g_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    GUARDED_ENTER("fill");
    GUARDED_VIEW(d, dst);
    st = c->base->fill(c->base_ctx, &d, value);
    GUARDED_LEAVE;
}

static ff_status g_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    GUARDED_ENTER("copy");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->copy(c->base_ctx, &d, &s);
    GUARDED_LEAVE;
}

static ff_status g_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    GUARDED_ENTER("unary");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->unary(c->base_ctx, op, &d, &s);
    GUARDED_LEAVE;
}

static ff_status g_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    GUARDED_ENTER("binary");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(x, a);
    GUARDED_VIEW(y, b);
    st = c->base->binary(c->base_ctx, op, &d, &x, &y);
    GUARDED_LEAVE;
}

static ff_status g_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    GUARDED_ENTER("reduce");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->reduce(c->base_ctx, op, &d, &s, axes_mask);
    GUARDED_LEAVE;
}

static ff_status g_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    GUARDED_ENTER("matmul");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(x, a);
    GUARDED_VIEW(y, b);
    st = c->base->matmul(c->base_ctx, &d, &x, &y);
    GUARDED_LEAVE;
}

static ff_status g_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    GUARDED_ENTER("where");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(k, cond);
    GUARDED_VIEW(x, a);
    GUARDED_VIEW(y, b);
    st = c->base->where(c->base_ctx, &d, &k, &x, &y);
    GUARDED_LEAVE;
}

static ff_status g_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    GUARDED_ENTER("gather");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    GUARDED_VIEW(i, index);
    st = c->base->gather(c->base_ctx, &d, &s, &i, axis);
    GUARDED_LEAVE;
}

static ff_status g_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    GUARDED_ENTER("scatter_add");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(i, index);
    GUARDED_VIEW(s, src);
    st = c->base->scatter_add(c->base_ctx, &d, &i, &s, axis);
    GUARDED_LEAVE;
}

static ff_status g_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                          double p0, double p1)
{
    GUARDED_ENTER("random");
    GUARDED_VIEW(d, dst);
    st = c->base->random(c->base_ctx, &d, dist, seed, counter_base, p0, p1);
    GUARDED_LEAVE;
}

static ff_status g_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int log)
{
    GUARDED_ENTER("softmax");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->softmax(c->base_ctx, &d, &s, axis, log);
    GUARDED_LEAVE;
}

static ff_status g_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *wt, const ff_conv2d_params *p)
{
    GUARDED_ENTER("conv2d");
    GUARDED_VIEW(a, y);
    GUARDED_VIEW(b, x);
    GUARDED_VIEW(k, wt);
    st = c->base->conv2d(c->base_ctx, &a, &b, &k, p);
    GUARDED_LEAVE;
}

static ff_status g_conv2d_bi(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *wt,
                             const ff_conv2d_params *p)
{
    GUARDED_ENTER("conv2d_backward_input");
    GUARDED_VIEW(a, gx);
    GUARDED_VIEW(b, gy);
    GUARDED_VIEW(k, wt);
    st = c->base->conv2d_backward_input(c->base_ctx, &a, &b, &k, p);
    GUARDED_LEAVE;
}

static ff_status g_conv2d_bw(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                             const ff_conv2d_params *p)
{
    GUARDED_ENTER("conv2d_backward_weight");
    GUARDED_VIEW(a, gw);
    GUARDED_VIEW(b, gy);
    GUARDED_VIEW(k, x);
    st = c->base->conv2d_backward_weight(c->base_ctx, &a, &b, &k, p);
    GUARDED_LEAVE;
}

static ff_status g_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    GUARDED_ENTER("scan");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->scan(c->base_ctx, op, &d, &s, axis);
    GUARDED_LEAVE;
}

static ff_status g_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending)
{
    GUARDED_ENTER("argsort");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->argsort(c->base_ctx, &d, &s, axis, descending);
    GUARDED_LEAVE;
}

static ff_status g_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis)
{
    GUARDED_ENTER("fft");
    GUARDED_VIEW(d, dst);
    GUARDED_VIEW(s, src);
    st = c->base->fft(c->base_ctx, op, &d, &s, axis);
    GUARDED_LEAVE;
}

/* The entries that take arrays of views: at most 10 in all (attention's backward: 3 + 7). */
#define MAX_LIST 10
static int list_ok(guarded_ctx *c, int n_dst, int n_src, const char *fn)
{
    if (n_dst >= 0 && n_src >= 0 && n_dst + n_src <= MAX_LIST) return 1;
    c->host->set_error("guarded %s: %d + %d views (at most %d)", fn, n_dst, n_src, MAX_LIST);
    return 0;
}

/* Both lists of an entry into the window (d, s): 0, or nonzero with the error set. */
static int window_lists(guarded_ctx *c, guarded_window *w, const ff_view *dst, ff_view *d, int n_dst, const ff_view *src,
                        ff_view *s, int n_src, const char *fn)
{
    return !list_ok(c, n_dst, n_src, fn) || guarded_window_views(c, w, dst, d, n_dst, fn) ||
           guarded_window_views(c, w, src, s, n_src, fn);
}

static ff_status g_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src)
{
    GUARDED_ENTER("linalg");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (window_lists(c, &w, dst, d, n_dst, src, s, n_src, fname)) goto out;
    st = c->base->linalg(c->base_ctx, op, d, n_dst, s, n_src);
    GUARDED_LEAVE;
}

static ff_status g_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                              double eps)
{
    GUARDED_ENTER("batch_norm");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (window_lists(c, &w, dst, d, n_dst, src, s, n_src, fname)) goto out;
    st = c->base->batch_norm(c->base_ctx, op, d, n_dst, s, n_src, eps);
    GUARDED_LEAVE;
}

static ff_status g_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                              double eps)
{
    GUARDED_ENTER("layer_norm");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (window_lists(c, &w, dst, d, n_dst, src, s, n_src, fname)) goto out;
    st = c->base->layer_norm(c->base_ctx, op, d, n_dst, s, n_src, eps);
    GUARDED_LEAVE;
}

static ff_status g_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act)
{
    GUARDED_ENTER("linear");
    ff_view d, s[MAX_LIST];
    if (window_lists(c, &w, dst, &d, 1, src, s, n_src, fname)) goto out;
    st = c->base->linear(c->base_ctx, &d, s, n_src, act);
    GUARDED_LEAVE;
}

static ff_status g_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src,
                          const ff_pool2d_params *p)
{
    GUARDED_ENTER("pool2d");
    ff_view d, s[MAX_LIST];
    if (window_lists(c, &w, dst, &d, 1, src, s, n_src, fname)) goto out;
    st = c->base->pool2d(c->base_ctx, op, &d, s, n_src, p);
    GUARDED_LEAVE;
}

static ff_status g_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                             const ff_attention_params *p)
{
    GUARDED_ENTER("attention");
    ff_view d[MAX_LIST], s[MAX_LIST];
    if (window_lists(c, &w, dst, d, n_dst, src, s, n_src, fname)) goto out;
    st = c->base->attention(c->base_ctx, op, d, n_dst, s, n_src, p);
    GUARDED_LEAVE;
}

static ff_status g_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p)
{
    GUARDED_ENTER("qmatmul");
    ff_view d, s[MAX_LIST];
    if (window_lists(c, &w, dst, &d, 1, src, s, n_src, fname)) goto out;
    st = c->base->qmatmul(c->base_ctx, &d, s, n_src, p);
    GUARDED_LEAVE;
}

static ff_status g_fused(void *ctx, const ff_fused_program *prog)
{
    GUARDED_ENTER("fused");
    ff_view v[FF_FUSED_MAX_VIEWS];
    if (prog->n_views < 0 || prog->n_views > FF_FUSED_MAX_VIEWS) {
        c->host->set_error("guarded fused: %d views (at most %d)", prog->n_views, FF_FUSED_MAX_VIEWS);
        goto out;
    }
    if (guarded_window_views(c, &w, prog->views, v, prog->n_views, fname)) goto out;
    ff_fused_program p = *prog;
    p.views = v;
    st = c->base->fused(c->base_ctx, &p);
    GUARDED_LEAVE;
}

/* ---- the entries: the reference's optional ones where it has them ------------ */

#define OPTIONAL(entry, wrapper) vt->entry = base->entry ? wrapper : NULL

void ff_guarded_compute_entries(ff_backend_vtable *vt, const ff_backend_vtable *base)
{
    vt->fill = g_fill;
    vt->copy = g_copy;
    vt->unary = g_unary;
    vt->binary = g_binary;
    vt->reduce = g_reduce;
    vt->matmul = g_matmul;
    vt->where = g_where;
    vt->gather = g_gather;
    vt->scatter_add = g_scatter_add;
    vt->random = g_random;
    OPTIONAL(softmax, g_softmax);
    OPTIONAL(conv2d, g_conv2d);
    OPTIONAL(conv2d_backward_input, g_conv2d_bi);
    OPTIONAL(conv2d_backward_weight, g_conv2d_bw);
    OPTIONAL(scan, g_scan);
    OPTIONAL(argsort, g_argsort);
    OPTIONAL(linalg, g_linalg);
    OPTIONAL(fft, g_fft);
    OPTIONAL(batch_norm, g_batch_norm);
    OPTIONAL(pool2d, g_pool2d);
    OPTIONAL(fused, g_fused);
    OPTIONAL(attention, g_attention);
    OPTIONAL(qmatmul, g_qmatmul);
    OPTIONAL(layer_norm, g_layer_norm);
    OPTIONAL(linear, g_linear);
}
