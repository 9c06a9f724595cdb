/* Scaled dot-product attention (PyTorch 2's F.scaled_dot_product_attention) as one op
 * with one node: the checks, the broadcast of the leading dims and their fold into the
 * entry's 4-D [B, H, T, D] views, the node (saves q, k, v, o and the per-row log-sum-exp:
 * O(T) memory, never the T x T scores), and the composition that stands in where the
 * entry cannot run (no entry, dropout the entry does not honor, head dims past
 * FF_ATTENTION_MAX_HEAD_DIM, create_graph): the composition is also the reference conformance judges the entry by.
 * The mask gets no gradient (PyTorch's additive-mask gradient is rarely wanted; it would
 * cost a T x T tensor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "ops_impl.h"

static const char fn[] = "ff_scaled_dot_product_attention";

/* The call, checked: leading dims broadcast to lead[0..nl), folded into B x H. */
typedef struct attn_geo {
    int nl;
    int64_t lead[FF_MAX_DIMS];
    int64_t b, h, tq, tk, d, dv;
    ff_attention_params p;
} attn_geo;

static bool is_half(ff_dtype t) { return t == FF_F16 || t == FF_BF16; }

static ff_status check(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v, const ff_tensor *mask,
                       double dropout_p, bool causal, double scale, attn_geo *g)
{
    char a[160], b[160], c[160];
    if (!q || !k || !v) return ff_error(FF_ERR_INVALID, "%s: query, key and value must not be NULL", fn);
    const ff_tensor *all[4] = {q, k, v, mask};
    if (!ff_common_backend(mask ? 4 : 3, all, fn)) return ff_last_status();
    const ff_layout *lq = &q->layout, *lk = &k->layout, *lv = &v->layout;
    if (!ff_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return ff_error(FF_ERR_INVALID, "%s: query, key and value must share one float dtype, got %s, %s, %s", fn,
                        ff_dtype_name(q->dtype), ff_dtype_name(k->dtype), ff_dtype_name(v->dtype));
    if (lq->ndim < 2 || lk->ndim < 2 || lv->ndim < 2 ||
        lq->shape[lq->ndim - 1] != lk->shape[lk->ndim - 1] || lk->shape[lk->ndim - 2] != lv->shape[lv->ndim - 2])
        return ff_error(FF_ERR_INVALID, "%s: expected query [..., Tq, D], key [..., Tk, D], value [..., Tk, Dv], got %s, %s, %s",
                        fn, ff_shape_str(lq->ndim, lq->shape, a, sizeof a), ff_shape_str(lk->ndim, lk->shape, b, sizeof b),
                        ff_shape_str(lv->ndim, lv->shape, c, sizeof c));
    int n1, n2;
    int64_t s1[FF_MAX_DIMS];
    if (ff_broadcast_shapes(lq->ndim - 2, lq->shape, lk->ndim - 2, lk->shape, &n1, s1, fn) ||
        ff_broadcast_shapes(n1, s1, lv->ndim - 2, lv->shape, &n2, g->lead, fn))
        return ff_error(FF_ERR_INVALID, "%s: the leading dims of query %s, key %s and value %s do not broadcast", fn,
                        ff_shape_str(lq->ndim, lq->shape, a, sizeof a), ff_shape_str(lk->ndim, lk->shape, b, sizeof b),
                        ff_shape_str(lv->ndim, lv->shape, c, sizeof c));
    g->nl = n2;
    g->tq = lq->shape[lq->ndim - 2], g->d = lq->shape[lq->ndim - 1];
    g->tk = lk->shape[lk->ndim - 2], g->dv = lv->shape[lv->ndim - 1];
    g->b = 1, g->h = n2 ? g->lead[n2 - 1] : 1;
    for (int i = 0; i + 1 < n2; i++) g->b *= g->lead[i];
    g->p = (ff_attention_params){.scale = scale > 0 ? scale : 1.0 / sqrt((double)(g->d ? g->d : 1)),
                                 .causal = causal, .mask = FF_ATTENTION_MASK_NONE};
    if (mask) {
        if (causal) return ff_error(FF_ERR_INVALID, "%s: give attn_mask or is_causal, not both (as PyTorch)", fn);
        if (mask->dtype != FF_BOOL && mask->dtype != q->dtype)
            return ff_error(FF_ERR_INVALID, "%s: attn_mask must be bool or the query's dtype %s, got %s", fn,
                            ff_dtype_name(q->dtype), ff_dtype_name(mask->dtype));
        int64_t full[FF_MAX_DIMS];
        memcpy(full, g->lead, sizeof(int64_t) * (size_t)n2);
        full[n2] = g->tq, full[n2 + 1] = g->tk;
        ff_layout e;
        if (n2 + 2 > FF_MAX_DIMS || mask->layout.ndim > n2 + 2 ||
            ff_layout_expand(&mask->layout, n2 + 2, full, &e, fn))
            return ff_error(FF_ERR_INVALID, "%s: attn_mask %s does not broadcast to the scores' shape %s", fn,
                            ff_shape_str(mask->layout.ndim, mask->layout.shape, a, sizeof a),
                            ff_shape_str(n2 + 2, full, b, sizeof b));
        g->p.mask = mask->dtype == FF_BOOL ? FF_ATTENTION_MASK_BOOL : FF_ATTENTION_MASK_ADD;
    }
    if (!(dropout_p >= 0 && dropout_p <= 1))
        return ff_error(FF_ERR_INVALID, "%s: dropout_p %g must be in [0, 1]", fn, dropout_p);
    if (n2 + 2 > FF_MAX_DIMS)
        return ff_error(FF_ERR_INVALID, "%s: the result would have more than %d dims", fn, FF_MAX_DIMS);
    return FF_OK;
}

/* ---- the composition ------------------------------------------------------------ */
/* Bool [Tq, Tk]: key j is visible to query i (j <= i, the top-left triangle). */
static ff_tensor *causal_visible(ff_backend *be, int64_t tq, int64_t tk)
{
    size_t n = (size_t)(tq * tk);
    unsigned char *m = malloc(n ? n : 1);
    if (!m) return ff_error(FF_ERR_OOM, "%s: out of memory for a %lld x %lld causal mask", fn, (long long)tq,
                            (long long)tk), NULL;
    for (int64_t i = 0; i < tq; i++)
        for (int64_t j = 0; j < tk; j++) m[i * tk + j] = j <= i;
    int64_t shape[2] = {tq, tk};
    ff_tensor *t = ff_from_data_on(be, m, 2, shape, FF_BOOL);
    free(m);
    return t;
}

/* The attention weights softmax(q k^T scale + mask) over the leading dims' broadcast,
 * built from differentiable ops. A row whose every score is -inf gets 0, not the NaN of a
 * bare softmax (only a mask can empty a row: causal keeps key 0). */
static ff_tensor *compose_weights(const ff_tensor *q, const ff_tensor *k, const ff_tensor *mask, const attn_geo *g)
{
    ff_expr e = {0};
    ff_backend *be = q->storage->backend;
    int nk = k->layout.ndim;
    ff_tensor *kt = FF_EX(&e, ff_transpose(k, nk - 2, nk - 1));
    /* the scale on q ([.., T, D]), not on the [.., Tq, Tk] scores: one score-sized tensor
     * fewer in the forward and in the backward */
    ff_tensor *s = FF_EX(&e, ff_matmul(FF_EX(&e, ff_mul_scalar(q, g->p.scale)), kt));
    ff_tensor *ninf = FF_EX(&e, ff_scalar_on(be, -INFINITY, q->dtype));
    if (g->p.causal) s = FF_EX(&e, ff_where(FF_EX(&e, causal_visible(be, g->tq, g->tk)), s, ninf));
    if (mask && mask->dtype == FF_BOOL) s = FF_EX(&e, ff_where(mask, s, ninf));
    else if (mask) s = FF_EX(&e, ff_add(s, mask));
    ff_tensor *p;
    if (mask) {
        bool prev = ff_set_grad_enabled(false);
        int last = -1;
        ff_tensor *dead = FF_EX(&e, ff_eq(FF_EX(&e, ff_amax(s, 1, &last, true)), ninf));
        ff_set_grad_enabled(prev);
        ff_tensor *zero = FF_EX(&e, ff_scalar_on(be, 0.0, q->dtype));
        p = FF_EX(&e, ff_softmax(FF_EX(&e, ff_where(dead, zero, s)), -1));
        p = FF_EX(&e, ff_where(dead, zero, p));
    } else {
        p = FF_EX(&e, ff_softmax(s, -1));
    }
    ff_tensor *r = ff_expr_result(&e, p);
    ff_expr_free(&e);
    return r;
}

static ff_tensor *compose(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v, const ff_tensor *mask,
                          double dropout_p, uint64_t seed, const attn_geo *g)
{
    ff_tensor *p = compose_weights(q, k, mask, g);
    if (p && dropout_p > 0) {
        ff_tensor *d = ff_dropout(p, dropout_p, true, seed);
        ff_tensor_release(p);
        p = d;
    }
    ff_tensor *o = p ? ff_matmul(p, v) : NULL;
    ff_tensor_release(p);
    return o;
}

/* ---- folding to the entry's views ---------------------------------------------- */
/* t broadcast to [lead..., rows, cols] and folded to [B, H, rows, cols]: a view when the
 * leading dims merge (stride 0 kept), else a contiguous copy. q, k, v and go bring their
 * own last two dims; the mask is broadcast to [Tq, Tk] (it may be [.., 1, Tk], or 1-D). */
static ff_tensor *fold_to(const ff_tensor *t, const attn_geo *g, int64_t rows, int64_t cols)
{
    const ff_layout *l = &t->layout;
    int64_t full[FF_MAX_DIMS], four[4] = {g->b, g->h, rows, cols};
    memcpy(full, g->lead, sizeof(int64_t) * (size_t)g->nl);
    full[g->nl] = four[2], full[g->nl + 1] = four[3];
    ff_layout e, f;
    if (ff_layout_expand(l, g->nl + 2, full, &e, fn)) return NULL;
    if (ff_layout_reshape_view(&e, 4, four, &f) == FF_OK) return ff_tensor_new_view(t, &f);
    ff_tensor *x = ff_tensor_new_view(t, &e), *c = x ? ff_contiguous(x) : NULL;
    ff_tensor *r = c ? ff_reshape(c, 4, four) : NULL;
    ff_tensor_release(x), ff_tensor_release(c);
    return r;
}

static ff_tensor *fold(const ff_tensor *t, const attn_geo *g)
{
    const ff_layout *l = &t->layout;
    return fold_to(t, g, l->shape[l->ndim - 2], l->shape[l->ndim - 1]);
}

typedef struct folded {
    ff_tensor *t[4]; /* q, k, v, mask (or NULL) */
} folded;

static void folded_free(folded *f)
{
    for (int i = 0; i < 4; i++) ff_tensor_release(f->t[i]);
}

static ff_status fold_all(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v, const ff_tensor *mask,
                          const attn_geo *g, folded *f)
{
    const ff_tensor *in[4] = {q, k, v, mask};
    memset(f, 0, sizeof *f);
    for (int i = 0; i < 4; i++)
        if (in[i] && !(f->t[i] = i == 3 ? fold_to(in[i], g, g->tq, g->tk) : fold(in[i], g))) {
            folded_free(f);
            return ff_last_status();
        }
    return FF_OK;
}

/* Whether the composition's ff_dropout draws its mask in the entry's [B, H, Tq, Tk]
 * row-major order: its weights have the leading dims of q, k and the mask broadcast, and
 * only v may add more (then p is broadcast afterwards, and one mask serves many heads). */
static bool dropout_order_matches(const ff_tensor *q, const ff_tensor *k, const ff_tensor *mask, const attn_geo *g)
{
    const ff_tensor *t[3] = {q, k, mask};
    int64_t n = 1, want = 1;
    for (int a = 0; a < g->nl; a++) {
        int64_t m = 1;
        for (int i = 0; i < 3; i++) {
            if (!t[i]) continue;
            int nd = t[i]->layout.ndim - 2, at = a - (g->nl - nd);
            if (at >= 0 && t[i]->layout.shape[at] > m) m = t[i]->layout.shape[at];
        }
        n *= m, want *= g->lead[a];
    }
    return n == want;
}

/* Whether the backend's entry runs this call (forward and backward, directly or through
 * the f32 detour for half; with dropout only where the entry honors it for q's own dtype,
 * as the mask's rounding is the dtype's); FF_ATTENTION=compose forces the composition. */
static bool use_entry(const ff_tensor *q, const ff_tensor *k, const ff_tensor *mask, const attn_geo *g, double dropout_p)
{
    if (g->d > FF_ATTENTION_MAX_HEAD_DIM || g->dv > FF_ATTENTION_MAX_HEAD_DIM || g->d < 1 || g->dv < 1) return false;
    ff_backend *be = q->storage->backend;
    if (dropout_p > 0 && (dropout_p >= 1 || !ff_backend_supports(be, FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, q->dtype) ||
                          !dropout_order_matches(q, k, mask, g)))
        return false;
    for (int op = FF_ATTENTION_FORWARD; op <= FF_ATTENTION_BACKWARD; op++)
        if (!ff_backend_supports(be, FF_KIND_ATTENTION, op, q->dtype) &&
            !(is_half(q->dtype) && ff_backend_supports(be, FF_KIND_ATTENTION, op, FF_F32)))
            return false;
    return !ff_op_compose_forced(FF_KIND_ATTENTION, "FF_ATTENTION");
}

static ff_tensor *new4(const ff_tensor *like, int64_t b, int64_t h, int64_t t, int64_t x, ff_dtype dt)
{
    int64_t s[4] = {b, h, t, x};
    return ff_tensor_new(like->storage->backend, x < 0 ? 3 : 4, s, dt, fn);
}

/* o [B, H, Tq, Dv], laid out as q is: where q's heads sit inside its tokens (the
 * [B, T, H, D] memory of a projection viewed per head and transposed, as every
 * transformer makes q), o's memory is [B, Tq, H, Dv] too, so that the merge of its heads
 * back into [B, Tq, H * Dv] is a view, not a copy (6% of MiniLM's bf16 forward).
 * PyTorch's CPU flash attention returns this layout. */
static ff_tensor *new_out(const ff_tensor *q, const ff_tensor *q4, const attn_geo *g)
{
    const int64_t *qs = q4->layout.strides;
    if (g->h < 2 || g->tq < 2 || qs[1] >= qs[2]) return new4(q, g->b, g->h, g->tq, g->dv, q->dtype);
    ff_tensor *bthd = new4(q, g->b, g->tq, g->h, g->dv, q->dtype), *o = NULL;
    ff_layout l;
    if (bthd && ff_layout_permute(&bthd->layout, (const int[]){0, 2, 1, 3}, &l, fn) == FF_OK)
        o = ff_tensor_new_view(bthd, &l);
    ff_tensor_release(bthd);
    return o;
}

/* ---- the node ------------------------------------------------------------------- */
/* saved: [0] q, [1] k, [2] v (as given), [3] o [B, H, Tq, Dv], [4] lse, [5] mask if any.
 * ip: [0] causal, [1] mask kind, [2] the dropout seed; dp[0] scale, dp[1] dropout_p. */
static ff_status geo_of_node(ff_node *n, const ff_tensor *q, const ff_tensor *k, const ff_tensor *v,
                             const ff_tensor *mask, attn_geo *g)
{
    ff_status st = check(q, k, v, mask, n->dp[1], n->ip[0] != 0, n->dp[0], g);
    if (st) ff_error_prefix(n->name);
    g->p.dropout_p = n->dp[1], g->p.seed = (uint64_t)n->ip[2];
    return st;
}

/* create_graph: the gradients as differentiable ops on the recomputed weights p:
 * dp = go v^T, ds = p (drop(dp) - rowsum(go * o)), gq = scale ds k, gk = scale ds^T q,
 * gv = drop(p)^T go. drop() is ff_dropout with the forward's seed: dp has p's element
 * order (use_entry checked it), so both draw the forward's mask. */
static ff_status backward_composed(ff_node *n, const ff_tensor *go, const ff_tensor *const *in, const ff_tensor *mask,
                                   const attn_geo *g, ff_tensor **gi)
{
    ff_expr e = {0};
    const ff_tensor *q = in[0], *k = in[1], *v = in[2];
    double dr = g->p.dropout_p;
    ff_tensor *p = FF_EX(&e, compose_weights(q, k, mask, g));
    ff_tensor *pd = dr > 0 ? FF_EX(&e, ff_dropout(p, dr, true, g->p.seed)) : p;
    ff_tensor *o = FF_EX(&e, ff_matmul(pd, v));
    int nv = v->layout.ndim, last = -1;
    ff_tensor *dp = FF_EX(&e, ff_matmul(go, FF_EX(&e, ff_transpose(v, nv - 2, nv - 1))));
    if (dr > 0) dp = FF_EX(&e, ff_dropout(dp, dr, true, g->p.seed));
    ff_tensor *di = FF_EX(&e, ff_sum(FF_EX(&e, ff_mul(go, o)), 1, &last, true));
    ff_tensor *ds = FF_EX(&e, ff_mul(p, FF_EX(&e, ff_sub(dp, di))));
    int nd = ds ? ds->layout.ndim : 2;
    ff_tensor *r[3] = {NULL, NULL, NULL};
    if (n->needs_grad[0]) r[0] = FF_EX(&e, ff_mul_scalar(FF_EX(&e, ff_matmul(ds, k)), g->p.scale));
    if (n->needs_grad[1]) {
        ff_tensor *dst = FF_EX(&e, ff_transpose(ds, nd - 2, nd - 1));
        r[1] = FF_EX(&e, ff_mul_scalar(FF_EX(&e, ff_matmul(dst, q)), g->p.scale));
    }
    if (n->needs_grad[2]) r[2] = FF_EX(&e, ff_matmul(FF_EX(&e, ff_transpose(pd, nd - 2, nd - 1)), go));
    for (int i = 0; i < 3; i++)
        if (r[i]) r[i] = FF_EX(&e, ff_sum_to_shape(r[i], in[i]->layout.ndim, in[i]->layout.shape));
    ff_status st = e.failed ? e.st : FF_OK;
    for (int i = 0; i < 3 && !st; i++)
        if (r[i]) gi[i] = ff_tensor_retain(r[i]);
    ff_expr_free(&e);
    return st;
}

/* The entry's backward on the folded views; the [B, H, T, X] gradients go back to the
 * leading dims' broadcast and are summed to each input's shape. */
static ff_status backward_entry(ff_node *n, const ff_tensor *go, const ff_tensor *const *in, const ff_tensor *mask,
                                const ff_tensor *o, const ff_tensor *lse, const attn_geo *g, ff_tensor **gi)
{
    folded f;
    ff_status st = fold_all(in[0], in[1], in[2], mask, g, &f);
    if (st) return st;
    ff_tensor *go4 = fold(go, g), *d[3] = {NULL, NULL, NULL};
    int64_t rows[3] = {g->tq, g->tk, g->tk}, cols[3] = {g->d, g->d, g->dv};
    st = go4 ? FF_OK : ff_last_status();
    for (int i = 0; i < 3 && !st; i++)
        if (!(d[i] = new4(in[0], g->b, g->h, rows[i], cols[i], in[0]->dtype))) st = ff_last_status();
    const ff_tensor *src[7] = {go4, f.t[0], f.t[1], f.t[2], o, lse, f.t[3]};
    if (!st) st = ff_kernel_attention(FF_ATTENTION_BACKWARD, d, 3, src, mask ? 7 : 6, &g->p, n->name);
    if (st == FF_ERR_UNSUPPORTED && !ff_last_error()[0])
        st = ff_error(FF_ERR_UNSUPPORTED, "%s: the backend no longer takes the attention backward", n->name);
    for (int i = 0; i < 3 && !st; i++) {
        if (!n->needs_grad[i]) continue;
        int64_t full[FF_MAX_DIMS];
        memcpy(full, g->lead, sizeof(int64_t) * (size_t)g->nl);
        full[g->nl] = rows[i], full[g->nl + 1] = cols[i];
        ff_tensor *r = ff_reshape(d[i], g->nl + 2, full);
        gi[i] = r ? ff_sum_to_shape(r, in[i]->layout.ndim, in[i]->layout.shape) : NULL;
        ff_tensor_release(r);
        if (!gi[i]) st = ff_last_status();
    }
    for (int i = 0; i < 3; i++) ff_tensor_release(d[i]);
    ff_tensor_release(go4);
    folded_free(&f);
    return st;
}

static ff_status attention_backward(ff_node *n, const ff_tensor *go, ff_tensor **gi)
{
    const ff_tensor *in[3], *o, *lse, *mask = NULL;
    for (int i = 0; i < 3; i++)
        if (!(in[i] = ff_node_saved(n, i))) return ff_last_status();
    if (!(o = ff_node_saved(n, 3)) || !(lse = ff_node_saved(n, 4))) return ff_last_status();
    if (n->n_saved > 5 && !(mask = ff_node_saved(n, 5))) return ff_last_status();
    attn_geo g;
    if (geo_of_node(n, in[0], in[1], in[2], mask, &g)) return ff_last_status();
    /* create_graph: formulas of ops on the inputs themselves (with their history) */
    if (ff_grad_enabled()) {
        const ff_tensor *live[3] = {n->inputs[0], n->inputs[1], n->inputs[2]};
        return backward_composed(n, go, live, mask, &g, gi);
    }
    return backward_entry(n, go, in, mask, o, lse, &g, gi);
}

/* The entry's forward: o [lead..., Tq, Dv], and (record: autograd wants it) the node.
 * Runs with grad mode off (the node stands for everything here). *st: the status. */
static ff_tensor *forward_entry(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v, const ff_tensor *mask,
                                const attn_geo *g, bool record, ff_status *stp)
{
    folded f;
    if ((*stp = fold_all(q, k, v, mask, g, &f))) return NULL;
    ff_dtype lt = q->dtype == FF_F64 ? FF_F64 : FF_F32;
    ff_tensor *out[2] = {new_out(q, f.t[0], g), new4(q, g->b, g->h, g->tq, -1, lt)};
    ff_status st = out[0] && out[1] ? FF_OK : ff_last_status();
    const ff_tensor *src[4] = {f.t[0], f.t[1], f.t[2], f.t[3]};
    if (!st) st = ff_kernel_attention(FF_ATTENTION_FORWARD, out, 2, src, mask ? 4 : 3, &g->p, fn);
    folded_free(&f);
    int64_t full[FF_MAX_DIMS];
    memcpy(full, g->lead, sizeof(int64_t) * (size_t)g->nl);
    full[g->nl] = g->tq, full[g->nl + 1] = g->dv;
    ff_tensor *r = st ? NULL : ff_reshape(out[0], g->nl + 2, full);
    if (!st && !r) st = ff_last_status();
    const ff_tensor *in[3] = {q, k, v};
    if (r && record) {
        ff_node *node = ff_autograd_record(r, "scaled_dot_product_attention", attention_backward, 3, in);
        if (node) {
            node->ip[0] = g->p.causal, node->ip[1] = g->p.mask, node->ip[2] = (int64_t)g->p.seed, node->nip = 3;
            node->dp[0] = g->p.scale, node->dp[1] = g->p.dropout_p;
        }
        const ff_tensor *save[6] = {q, k, v, out[0], out[1], mask};
        for (int i = 0; node && i < (mask ? 6 : 5); i++)
            if (ff_node_save(node, save[i])) node = NULL;
        if (!node) ff_tensor_release(r), r = NULL, st = ff_last_status();
    }
    ff_tensor_release(out[0]), ff_tensor_release(out[1]);
    *stp = st;
    return r;
}

ff_tensor *ff_scaled_dot_product_attention(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v,
                                           const ff_tensor *attn_mask, double dropout_p, bool is_causal,
                                           double scale, uint64_t seed)
{
    /* autocast: q, k, v (and an additive mask) in the autocast dtype, as PyTorch's CUDA
     * list has scaled_dot_product_attention; a bool mask stays as it is */
    ff_tensor *ac[4];
    bool add_mask = attn_mask && attn_mask->dtype != FF_BOOL;
    int nac = q && k && v ? ff_autocast_operands(FF_AUTOCAST_LOW, add_mask ? 4 : 3,
                                                 (const ff_tensor *[]){q, k, v, attn_mask}, ac, fn)
                          : 0;
    if (nac) {
        ff_tensor *r = nac > 0 ? ff_scaled_dot_product_attention(ac[0], ac[1], ac[2], add_mask ? ac[3] : attn_mask,
                                                                  dropout_p, is_causal, scale, seed)
                               : NULL;
        ff_autocast_release(nac, ac);
        return r;
    }
    attn_geo g;
    if (check(q, k, v, attn_mask, dropout_p, is_causal, scale, &g)) return NULL;
    ff_tensor *r;
    if (use_entry(q, k, attn_mask, &g, dropout_p)) {
        if (dropout_p > 0) g.p.dropout_p = dropout_p, g.p.seed = seed;
        const ff_tensor *in[3] = {q, k, v};
        bool record = ff_autograd_needed(3, in), prev = ff_set_grad_enabled(false);
        ff_status st;
        ff_clear_error();
        r = forward_entry(q, k, v, attn_mask, &g, record, &st);
        ff_set_grad_enabled(prev);
        bool declined = !r && st == FF_ERR_UNSUPPORTED && !ff_last_error()[0];
        if (r || !declined) {
            if (!r) ff_error_prefix(fn);
            return r;
        }
    }
    r = compose(q, k, v, attn_mask, dropout_p, seed, &g);
    if (!r) ff_error_prefix(fn);
    return r;
}
