/* Adaptive average and max pooling over the last 1-3 axes (include/ff/pool.h), composed
 * from differentiable ops so every backend and second-order gradients come for free.
 * avg: a mean when every window is the whole axis (the global pooling of classifier
 * heads) or the axis splits into equal windows; otherwise, per spatial axis, a matmul
 * with the [in, out] matrix of 1 / window length (windows of different lengths overlap,
 * which no reshape expresses; a matmul is one BLAS call instead of a loop over windows).
 * max: every window gathered (index_select per axis, short windows padded with their own
 * last element, which can neither win a first-max tie nor add a later NaN of another
 * element) and reduced by ff_op_max_first, PyTorch's index. */
#include <stdlib.h>

#include "ff/pool.h"
#include "ops_impl.h"

static int64_t win_start(int64_t i, int64_t in, int64_t out) { return i * in / out; }
static int64_t win_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

/* The longest window of an axis in -> out (0 when out is 0). */
static int64_t win_max(int64_t in, int64_t out)
{
    int64_t k = 0;
    for (int64_t i = 0; i < out; i++) {
        int64_t l = win_end(i, in, out) - win_start(i, in, out);
        k = l > k ? l : k;
    }
    return k;
}

static ff_status check(const ff_tensor *x, int nd, const int64_t *out, const char *fn)
{
    if (!x || !out) return ff_error(FF_ERR_INVALID, "%s: x and out must not be NULL", fn);
    if (nd < 1 || nd > 3) return ff_error(FF_ERR_INVALID, "%s: nd must be 1, 2 or 3, got %d", fn, nd);
    int r = x->layout.ndim;
    if (r != nd + 1 && r != nd + 2)
        return ff_error(FF_ERR_INVALID, "%s: expected x of rank %d or %d (%d spatial axes), got rank %d", fn, nd + 1,
                        nd + 2, nd, r);
    if (!ff_dtype_is_float(x->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x must be floating point, got %s", fn, ff_dtype_name(x->dtype));
    for (int d = 0; d < nd; d++) {
        int64_t in = x->layout.shape[r - nd + d];
        if (in < 1 || out[d] < 0)
            return ff_error(FF_ERR_INVALID, "%s: spatial axis %d of x has size %lld and output size %lld; expected "
                            "an input size >= 1 and an output size >= 0", fn, d, (long long)in, (long long)out[d]);
    }
    return FF_OK;
}

/* [in, out]: column i holds 1 / length over window i (x @ it averages the last axis). */
static ff_tensor *avg_matrix(const ff_tensor *x, int64_t in, int64_t out)
{
    double *m = calloc((size_t)(in * out > 0 ? in * out : 1), sizeof *m);
    if (!m) return ff_error(FF_ERR_OOM, "ff_adaptive_avg_pool: out of memory"), NULL;
    for (int64_t i = 0; i < out; i++) {
        int64_t a = win_start(i, in, out), b = win_end(i, in, out);
        for (int64_t j = a; j < b; j++) m[j * out + i] = 1.0 / (double)(b - a);
    }
    ff_tensor *t = ff_from_data_on(x->storage->backend, m, 2, (int64_t[]){in, out}, FF_F64);
    free(m);
    ff_tensor *c = t && x->dtype != FF_F64 ? ff_astype(t, x->dtype) : ff_tensor_retain(t);
    ff_tensor_release(t);
    return c;
}

/* Every window the mean of one equal split of its axis: a reshape and a mean. */
static ff_tensor *avg_uniform(const ff_tensor *x, int nd, const int64_t *out, bool global)
{
    int r = x->layout.ndim, lead = r - nd, axes[3];
    if (global) {
        for (int d = 0; d < nd; d++) axes[d] = lead + d;
        return ff_mean(x, nd, axes, true);
    }
    int64_t shape[FF_MAX_DIMS];
    for (int d = 0; d < lead; d++) shape[d] = x->layout.shape[d];
    for (int d = 0; d < nd; d++) {
        shape[lead + 2 * d] = out[d];
        shape[lead + 2 * d + 1] = x->layout.shape[lead + d] / out[d];
        axes[d] = lead + 2 * d + 1;
    }
    ff_tensor *v = ff_reshape(x, lead + 2 * nd, shape);
    ff_tensor *y = v ? ff_mean(v, nd, axes, false) : NULL;
    ff_tensor_release(v);
    return y;
}

static ff_tensor *avg_compose(const ff_tensor *x, int nd, const int64_t *out, const char *fn);

/* ---- the backend's pool2d entry (ADAPTIVE_AVG_*), 1 and 2 spatial axes ---------------- */
/* ip: [0, 1] the output size. First order: the entry's backward pass; under create_graph
 * the gradient of the composition recomputed with history (it is linear in g). */
static ff_status avg_entry_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *x = n->inputs[0];
    if (ff_grad_enabled()) {
        ff_tensor *yc = avg_compose(x, 2, n->ip, n->name);
        if (!yc) return ff_last_status();
        ff_tensor *xin = (ff_tensor *)x;
        ff_backward_opts o = {.retain_graph = true, .create_graph = true};
        ff_status st = ff_autograd_grad(yc, g, 1, &xin, &gi[0], &o);
        ff_tensor_release(yc);
        return st;
    }
    ff_tensor *gx = ff_tensor_new(x->storage->backend, 4, x->layout.shape, x->dtype, n->name);
    ff_pool2d_params p = {{0, 0}, {0, 0}, {0, 0}};
    ff_status st = gx ? ff_kernel_pool2d(FF_POOL2D_ADAPTIVE_AVG_BACKWARD, gx, &g, 1, &p, n->name) : ff_last_status();
    if (st) ff_tensor_release(gx);
    else gi[0] = gx;
    return st;
}

/* x4 [N, C, H, W] -> [N, C, out[0], out[1]] in one pass of the entry. */
static ff_tensor *avg_entry4(const ff_tensor *x4, const int64_t *out, const char *fn)
{
    int64_t shape[4] = {x4->layout.shape[0], x4->layout.shape[1], out[0], out[1]};
    ff_tensor *y = ff_tensor_new(x4->storage->backend, 4, shape, x4->dtype, fn);
    ff_pool2d_params p = {{0, 0}, {0, 0}, {0, 0}};
    if (!y || ff_kernel_pool2d(FF_POOL2D_ADAPTIVE_AVG_FORWARD, y, &x4, 1, &p, fn)) {
        ff_tensor_release(y);
        return NULL;
    }
    ff_node *node = ff_op_record_node(&y, "adaptive_avg_pool2d", avg_entry_backward, 1, &x4, 0, NULL);
    if (node) node->ip[0] = out[0], node->ip[1] = out[1], node->nip = 2;
    return y;
}

/* x of rank nd + 1 or nd + 2 viewed as [N, C, H, W] (a missing N is 1, a 1-D axis is W
 * with H = 1), pooled by the entry, viewed back. */
static ff_tensor *avg_entry(const ff_tensor *x, int nd, const int64_t *out, const char *fn)
{
    int r = x->layout.ndim;
    const int64_t *s = x->layout.shape;
    int64_t x4s[4] = {r == nd + 2 ? s[0] : 1, s[r - nd - 1], nd == 2 ? s[r - 2] : 1, s[r - 1]};
    int64_t o2[2] = {nd == 2 ? out[0] : 1, out[nd - 1]}, ys[FF_MAX_DIMS];
    for (int d = 0; d < r; d++) ys[d] = d < r - nd ? s[d] : out[d - (r - nd)];
    ff_tensor *x4 = ff_reshape(x, 4, x4s);
    ff_tensor *y4 = x4 ? avg_entry4(x4, o2, fn) : NULL;
    ff_tensor *y = y4 ? ff_reshape(y4, r, ys) : NULL;
    ff_tensor_release(x4), ff_tensor_release(y4);
    return y;
}

ff_tensor *ff_adaptive_avg_pool(const ff_tensor *x, int nd, const int64_t *out)
{
    static const char fn[] = "ff_adaptive_avg_pool";
    if (check(x, nd, out, fn)) return NULL;
    if (nd <= 2 && ff_op_entry_enabled(x, FF_KIND_POOL2D, FF_POOL2D_ADAPTIVE_AVG_FORWARD,
                                       FF_POOL2D_ADAPTIVE_AVG_BACKWARD, "FF_POOL")) {
        ff_tensor *y = avg_entry(x, nd, out, fn);
        if (!y) ff_error_prefix(fn);
        return y;
    }
    return avg_compose(x, nd, out, fn);
}

/* The composition: the reference semantics, every backend, create_graph's recomputation. */
static ff_tensor *avg_compose(const ff_tensor *x, int nd, const int64_t *out, const char *fn)
{
    int r = x->layout.ndim, lead = r - nd;
    bool global = true, uniform = true;
    for (int d = 0; d < nd; d++) {
        int64_t in = x->layout.shape[lead + d];
        global &= out[d] == 1;
        uniform &= out[d] > 0 && in % out[d] == 0;
    }
    if (global || uniform) {
        ff_tensor *y = avg_uniform(x, nd, out, global);
        if (!y) ff_error_prefix(fn);
        return y;
    }
    ff_tensor *t = ff_tensor_retain((ff_tensor *)x);
    for (int d = 0; d < nd && t; d++) {
        int a = lead + d;
        int64_t in = x->layout.shape[a];
        if (in == out[d]) continue; /* identity */
        ff_tensor *m = avg_matrix(x, in, out[d]);
        ff_tensor *tt = m ? (a == r - 1 ? ff_tensor_retain(t) : ff_transpose(t, a, r - 1)) : NULL;
        ff_tensor *p = tt ? ff_matmul(tt, m) : NULL;
        ff_tensor *back = p ? (a == r - 1 ? ff_tensor_retain(p) : ff_transpose(p, a, r - 1)) : NULL;
        ff_tensor_release(m), ff_tensor_release(tt), ff_tensor_release(p), ff_tensor_release(t);
        t = back;
    }
    if (!t) ff_error_prefix(fn);
    return t;
}

/* Window element k of output i along an axis in -> out, windows padded to kmax. */
static int64_t win_elem(int64_t i, int64_t k, int64_t in, int64_t out)
{
    int64_t a = win_start(i, in, out), b = win_end(i, in, out);
    return a + k < b ? a + k : b - 1;
}

/* x with each spatial axis d replaced by out[d] * kmax[d] gathered window elements. */
static ff_tensor *gather_windows(const ff_tensor *x, int nd, const int64_t *out, const int64_t *kmax)
{
    int lead = x->layout.ndim - nd;
    ff_tensor *t = ff_tensor_retain((ff_tensor *)x);
    for (int d = 0; d < nd && t; d++) {
        int64_t in = x->layout.shape[lead + d], n = out[d] * kmax[d];
        int64_t *idx = malloc((size_t)n * sizeof *idx);
        ff_tensor *it = idx ? NULL : (ff_error(FF_ERR_OOM, "out of memory"), NULL);
        if (idx) {
            for (int64_t i = 0; i < out[d]; i++)
                for (int64_t k = 0; k < kmax[d]; k++) idx[i * kmax[d] + k] = win_elem(i, k, in, out[d]);
            it = ff_from_data_on(x->storage->backend, idx, 1, &n, FF_I64);
            free(idx);
        }
        ff_tensor *s = it ? ff_index_select(t, lead + d, it) : NULL;
        ff_tensor_release(it), ff_tensor_release(t);
        t = s;
    }
    return t;
}

/* [out..., K]: the flat spatial index (h * W + w for nd = 2) of window element k. */
static ff_tensor *flat_index_table(const ff_tensor *x, int nd, const int64_t *out, const int64_t *kmax)
{
    int lead = x->layout.ndim - nd;
    int64_t no = 1, kt = 1, shape[4];
    for (int d = 0; d < nd; d++) no *= out[d], kt *= kmax[d], shape[d] = out[d];
    shape[nd] = kt;
    int64_t *tab = malloc((size_t)(no * kt > 0 ? no * kt : 1) * sizeof *tab);
    if (!tab) return ff_error(FF_ERR_OOM, "out of memory"), NULL;
    for (int64_t o = 0; o < no; o++)
        for (int64_t k = 0; k < kt; k++) {
            int64_t flat = 0, or = o, kr = k, oi[3], ki[3];
            for (int d = nd - 1; d >= 0; d--) oi[d] = or % out[d], or /= out[d], ki[d] = kr % kmax[d], kr /= kmax[d];
            for (int d = 0; d < nd; d++) {
                int64_t in = x->layout.shape[lead + d];
                flat = flat * in + win_elem(oi[d], ki[d], in, out[d]);
            }
            tab[o * kt + k] = flat;
        }
    ff_tensor *t = ff_from_data_on(x->storage->backend, tab, nd + 1, shape, FF_I64);
    free(tab);
    return t;
}

/* win [lead..., O1, K1, ..., Ond, Knd] -> [lead..., O1..Ond, K1 * ... * Knd]. */
static ff_tensor *windows_last(const ff_tensor *win, int lead, int nd, const int64_t *out, const int64_t *kmax)
{
    int64_t shape[FF_MAX_DIMS], kt = 1;
    int perm[FF_MAX_DIMS];
    for (int d = 0; d < lead; d++) shape[d] = win->layout.shape[d], perm[d] = d;
    for (int d = 0; d < nd; d++) {
        shape[lead + 2 * d] = out[d], shape[lead + 2 * d + 1] = kmax[d], kt *= kmax[d];
        perm[lead + d] = lead + 2 * d, perm[lead + nd + d] = lead + 2 * d + 1;
    }
    ff_tensor *v = ff_reshape(win, lead + 2 * nd, shape);
    ff_tensor *p = v ? ff_permute(v, perm) : NULL;
    for (int d = 0; d < nd; d++) shape[lead + d] = out[d];
    shape[lead + nd] = kt;
    ff_tensor *r = p ? ff_reshape(p, lead + nd + 1, shape) : NULL;
    ff_tensor_release(v), ff_tensor_release(p);
    return r;
}

ff_tensor *ff_adaptive_max_pool(const ff_tensor *x, int nd, const int64_t *out, ff_tensor **indices)
{
    static const char fn[] = "ff_adaptive_max_pool";
    if (check(x, nd, out, fn)) return NULL;
    int r = x->layout.ndim, lead = r - nd;
    int64_t kmax[3], yshape[FF_MAX_DIMS], n = 1;
    for (int d = 0; d < r; d++) yshape[d] = d < lead ? x->layout.shape[d] : out[d - lead], n *= yshape[d];
    for (int d = 0; d < nd; d++) kmax[d] = win_max(x->layout.shape[lead + d], out[d]);
    if (n == 0) { /* nothing to pool: an empty result that still has x's history */
        ff_tensor *y = ff_adaptive_avg_pool(x, nd, out);
        ff_tensor *ix = y && indices ? ff_full_on(x->storage->backend, r, yshape, FF_I64, 0) : NULL;
        if (y && indices && !ix) ff_tensor_release(y), y = NULL;
        if (y && indices) *indices = ix;
        return y;
    }
    ff_tensor *g = gather_windows(x, nd, out, kmax);
    ff_tensor *win = g ? windows_last(g, lead, nd, out, kmax) : NULL, *arg = NULL;
    ff_tensor *y = win ? ff_op_max_first(win, lead + nd, indices ? &arg : NULL, fn) : NULL;
    ff_tensor_release(g), ff_tensor_release(win);
    if (y && indices) {
        ff_tensor *tab = flat_index_table(x, nd, out, kmax);
        ff_tensor *ix = tab ? ff_op_window_indices(tab, y, arg) : NULL;
        ff_tensor_release(tab);
        if (!ix) ff_tensor_release(y), y = NULL;
        else *indices = ix;
    }
    ff_tensor_release(arg);
    if (!y) ff_error_prefix(fn);
    return y;
}
