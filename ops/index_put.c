/* Advanced indexing with several index tensors, reading (ff_index) and writing
 * (ff_index_put and the ops built on it: masked_fill, masked_scatter, index_add,
 * index_copy), with PyTorch's rules. Composed from the gather/scatter_add/where entries,
 * so every backend has them without a kernel of its own.
 *
 * The plan. indices[k] indexes dim k of t (NULL: the whole dim, ':'); a bool mask of
 * rank m stands for m integer tensors, the coordinates of its true elements. The
 * integer tensors ("advanced dims", A) broadcast together to a shape B. The indexed
 * result has shape R = B in place of the advanced dims when they are adjacent, else
 * B followed by the other dims (NumPy's and PyTorch's rule). Everything is computed on
 * "rows": t permuted to A dims first, then reshaped to [P, rest...] with P the product
 * of the A sizes, so that element j of B names row lin[j] = the row-major position of
 * its A coordinates. Reading gathers rows; writing scatter_adds rows.
 *
 * Index values are data the shapes depend on, so they are read back to the host once:
 * that is where they are checked (all of them, before anything is written: a bad index
 * leaves t untouched), negative ones wrapped, masks turned into coordinates, and, for
 * a write without accumulate, duplicates resolved: the last occurrence wins, as
 * NumPy's assignment (PyTorch leaves it unspecified). Values then travel as tensors on
 * t's backend. */
#include <stdlib.h>
#include <string.h>

#include "expr.h"

typedef struct index_plan {
    int ndim;                       /* t's rank */
    int perm[FF_MAX_DIMS];          /* advanced dims (in order), then the others */
    int na;                         /* advanced dims */
    bool adjacent;                  /* advanced dims are consecutive */
    int first;                      /* the first advanced dim */
    int64_t p;                      /* rows: product of the advanced dims' sizes */
    int nb;                         /* B: the indices' broadcast shape */
    int64_t bshape[FF_MAX_DIMS];
    int64_t n;                      /* numel(B) */
    int nrest;                      /* the non-advanced dims, in order */
    int64_t rest[FF_MAX_DIMS];
    int nr;                         /* R: the shape t[indices] has */
    int64_t rshape[FF_MAX_DIMS];
} index_plan;

/* One dim's index on the host: values with their own shape (before broadcasting). */
typedef struct host_index {
    int64_t *v;
    int ndim;
    int64_t shape[FF_MAX_DIMS];
} host_index;

static void free_host(host_index *h, int n)
{
    for (int i = 0; i < n; i++) free(h[i].v);
}

/* The coordinates of mask's true elements, one host index per mask dim. */
static ff_status mask_coords(const ff_tensor *mask, host_index *out, const char *fn)
{
    int64_t numel = ff_tensor_numel(mask), nnz = 0;
    int m = mask->layout.ndim;
    uint8_t *bits = malloc((size_t)(numel ? numel : 1));
    if (!bits) return ff_error(FF_ERR_OOM, "%s: out of memory reading a mask", fn);
    if (ff_tensor_to_host(mask, bits, (size_t)numel)) {
        free(bits);
        return ff_last_status();
    }
    for (int64_t i = 0; i < numel; i++) nnz += bits[i] != 0;
    for (int d = 0; d < m; d++) {
        out[d].ndim = 1;
        out[d].shape[0] = nnz;
        out[d].v = malloc(sizeof(int64_t) * (size_t)(nnz ? nnz : 1));
        if (!out[d].v) {
            free_host(out, d);
            free(bits);
            return ff_error(FF_ERR_OOM, "%s: out of memory reading a mask", fn);
        }
    }
    for (int64_t i = 0, j = 0; i < numel; i++) {
        if (!bits[i]) continue;
        int64_t r = i;
        for (int d = m - 1; d >= 0; d--) {
            out[d].v[j] = r % mask->layout.shape[d];
            r /= mask->layout.shape[d];
        }
        j++;
    }
    free(bits);
    return FF_OK;
}

static ff_status int_index(const ff_tensor *idx, host_index *out, const char *fn)
{
    ff_tensor *c = ff_astype(idx, FF_I64);
    if (!c) return ff_last_status();
    int64_t numel = ff_tensor_numel(c);
    out->ndim = c->layout.ndim;
    memcpy(out->shape, c->layout.shape, sizeof(int64_t) * (size_t)c->layout.ndim);
    out->v = malloc(sizeof(int64_t) * (size_t)(numel ? numel : 1));
    ff_status st = out->v ? ff_tensor_to_host(c, out->v, sizeof(int64_t) * (size_t)numel)
                          : ff_error(FF_ERR_OOM, "%s: out of memory reading an index", fn);
    ff_tensor_release(c);
    return st;
}

/* Element j (row-major in B) of h broadcast to B. */
static int64_t host_at(const host_index *h, const index_plan *pl, int64_t j)
{
    int64_t off = 0, stride = 1;
    for (int d = pl->nb - 1, e = h->ndim - 1; d >= 0; d--, e--) {
        int64_t c = j % pl->bshape[d];
        j /= pl->bshape[d];
        if (e < 0) continue;
        if (h->shape[e] != 1) off += c * stride;
        stride *= h->shape[e];
    }
    return off;
}

/* Builds the plan and lin (numel(B) row numbers, malloc'd) from the indices. */
static ff_status plan_make(const ff_tensor *t, int nidx, const ff_tensor *const *indices, index_plan *pl,
                           int64_t **lin_out, const char *fn)
{
    char b1[160], b2[160], b3[160];
    memset(pl, 0, sizeof *pl);
    pl->ndim = t->layout.ndim;
    if (nidx < 0 || (nidx > 0 && !indices))
        return ff_error(FF_ERR_INVALID, "%s: bad index list (%d entries)", fn, nidx);
    host_index h[FF_MAX_DIMS];
    bool is_adv[FF_MAX_DIMS] = {false};
    int dim = 0, nh = 0;
    ff_status st = FF_OK;
    for (int k = 0; k < nidx && !st; k++) {
        const ff_tensor *ix = indices[k];
        int span = ix && ix->dtype == FF_BOOL ? ix->layout.ndim : 1;
        if (dim + span > pl->ndim) {
            st = ff_error(FF_ERR_INDEX, "%s: too many indices for a tensor of rank %d", fn, pl->ndim);
            break;
        }
        if (!ix) {
            dim++;
            continue;
        }
        if (ff_dtype_is_float(ix->dtype)) {
            st = ff_error(FF_ERR_INVALID, "%s: index tensors must be integer or bool, got %s (index %d)", fn,
                          ff_dtype_name(ix->dtype), k);
            break;
        }
        if (ix->storage->backend != t->storage->backend) {
            st = ff_error(FF_ERR_INVALID, "%s: index %d lives on backend '%s', the tensor on '%s'", fn, k,
                          ix->storage->backend->name, t->storage->backend->name);
            break;
        }
        if (ix->dtype == FF_BOOL) {
            if (memcmp(ix->layout.shape, t->layout.shape + dim, sizeof(int64_t) * (size_t)span) != 0) {
                st = ff_error(FF_ERR_INDEX, "%s: the mask of shape %s does not match the indexed dims %s of the tensor %s",
                              fn, ff_shape_str(ix->layout.ndim, ix->layout.shape, b1, sizeof b1),
                              ff_shape_str(span, t->layout.shape + dim, b2, sizeof b2),
                              ff_shape_str(pl->ndim, t->layout.shape, b3, sizeof b3));
                break;
            }
            if (span == 0) { /* a 0-d mask indexes no dim: a new dim of size 1 or 0, as PyTorch's t[True] */
                st = ff_error(FF_ERR_INVALID, "%s: a 0-d bool index is not supported", fn);
                break;
            }
            st = mask_coords(ix, h + nh, fn);
        } else {
            st = int_index(ix, h + nh, fn);
        }
        if (st) break;
        for (int d = 0; d < span; d++) is_adv[dim + d] = true;
        nh += span;
        dim += span;
    }
    if (st) {
        free_host(h, nh);
        return st;
    }
    /* broadcast the index shapes */
    pl->nb = 0;
    for (int i = 0; i < nh; i++) {
        int nbo;
        int64_t bo[FF_MAX_DIMS];
        if (ff_broadcast_shapes(pl->nb, pl->bshape, h[i].ndim, h[i].shape, &nbo, bo, fn)) {
            free_host(h, nh);
            return ff_error(FF_ERR_INDEX, "%s: index tensors do not broadcast together: %s", fn, ff_last_error());
        }
        pl->nb = nbo;
        memcpy(pl->bshape, bo, sizeof bo);
    }
    pl->n = 1;
    for (int d = 0; d < pl->nb; d++) pl->n *= pl->bshape[d];
    /* the permutation and the shapes */
    int last = -1;
    pl->first = -1;
    for (int d = 0; d < pl->ndim; d++)
        if (is_adv[d]) {
            pl->perm[pl->na++] = d;
            if (pl->first < 0) pl->first = d;
            last = d;
        }
    pl->adjacent = pl->na == 0 || last - pl->first + 1 == pl->na;
    pl->p = 1;
    for (int i = 0; i < pl->na; i++) pl->p *= t->layout.shape[pl->perm[i]];
    for (int d = 0; d < pl->ndim; d++)
        if (!is_adv[d]) {
            pl->perm[pl->na + pl->nrest] = d;
            pl->rest[pl->nrest++] = t->layout.shape[d];
        }
    if (pl->nb + pl->nrest > FF_MAX_DIMS) {
        free_host(h, nh);
        return ff_error(FF_ERR_INVALID, "%s: the indexed shape would have rank %d (at most %d)", fn, pl->nb + pl->nrest,
                        FF_MAX_DIMS);
    }
    int before = 0;
    for (int d = 0; pl->adjacent && d < pl->first; d++) before++;
    for (int i = 0; i < before; i++) pl->rshape[pl->nr++] = pl->rest[i];
    for (int i = 0; i < pl->nb; i++) pl->rshape[pl->nr++] = pl->bshape[i];
    for (int i = before; i < pl->nrest; i++) pl->rshape[pl->nr++] = pl->rest[i];
    /* check every index, then number the rows */
    int64_t *lin = malloc(sizeof(int64_t) * (size_t)(pl->n ? pl->n : 1));
    if (!lin) {
        free_host(h, nh);
        return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    }
    for (int64_t j = 0; j < pl->n && !st; j++) {
        int64_t row = 0;
        for (int i = 0; i < pl->na; i++) {
            int d = pl->perm[i];
            int64_t size = t->layout.shape[d], v = h[i].v[host_at(&h[i], pl, j)];
            if (v < -size || v >= size) {
                st = ff_error(FF_ERR_INDEX, "%s: index %lld is out of bounds for dimension %d with size %lld", fn,
                              (long long)v, d, (long long)size);
                break;
            }
            row = row * size + (v < 0 ? v + size : v);
        }
        lin[j] = row;
    }
    free_host(h, nh);
    if (st) {
        free(lin);
        return st;
    }
    *lin_out = lin;
    return FF_OK;
}

/* ---- rows ------------------------------------------------------------------------- */
/* t as rows [P, rest...] (a view when t's strides allow, else a copy; tracked). */
static ff_tensor *to_rows(ff_expr *e, const ff_tensor *t, const index_plan *pl)
{
    int64_t shape[FF_MAX_DIMS + 1];
    shape[0] = pl->p;
    memcpy(shape + 1, pl->rest, sizeof(int64_t) * (size_t)pl->nrest);
    ff_tensor *pt = FF_EX(e, ff_permute(t, pl->perm));
    return FF_EX(e, ff_reshape(pt, 1 + pl->nrest, shape));
}

/* Rows [P, rest...] back to t's shape and dim order (tracked). */
static ff_tensor *from_rows(ff_expr *e, const ff_tensor *rows, const index_plan *pl, const int64_t *tshape)
{
    int64_t shape[FF_MAX_DIMS];
    int inv[FF_MAX_DIMS];
    for (int i = 0; i < pl->na; i++) shape[i] = tshape[pl->perm[i]];
    memcpy(shape + pl->na, pl->rest, sizeof(int64_t) * (size_t)pl->nrest);
    for (int i = 0; i < pl->ndim; i++) inv[pl->perm[i]] = i;
    ff_tensor *r = FF_EX(e, ff_reshape(rows, pl->ndim, shape));
    return FF_EX(e, ff_permute(r, inv));
}

/* The move between R's layout and [B..., rest...]: in the adjacent case B sits after
 * the `before` dims in R. to_front: R -> [B, rest]; else the reverse. */
static ff_tensor *move_b(ff_expr *e, const ff_tensor *x, const index_plan *pl, bool to_front)
{
    int before = pl->adjacent ? pl->first : 0;
    if (before == 0 || e->failed) return FF_EX(e, ff_tensor_retain((ff_tensor *)x));
    int perm[FF_MAX_DIMS], k = 0, nr = pl->nr;
    int from[FF_MAX_DIMS];
    for (int i = 0; i < pl->nb; i++) from[k++] = before + i; /* [B, before, after] in R's numbering */
    for (int i = 0; i < before; i++) from[k++] = i;
    for (int i = before + pl->nb; i < nr; i++) from[k++] = i;
    for (int i = 0; i < nr; i++) {
        if (to_front) perm[i] = from[i];
        else perm[from[i]] = i;
    }
    return FF_EX(e, ff_permute(x, perm));
}

/* x of shape R -> [N, rest...] (tracked). */
static ff_tensor *r_to_items(ff_expr *e, const ff_tensor *x, const index_plan *pl)
{
    int64_t shape[FF_MAX_DIMS + 1];
    shape[0] = pl->n;
    memcpy(shape + 1, pl->rest, sizeof(int64_t) * (size_t)pl->nrest);
    ff_tensor *m = move_b(e, x, pl, true);
    return FF_EX(e, ff_reshape(m, 1 + pl->nrest, shape));
}

/* [N, rest...] -> R (tracked). */
static ff_tensor *items_to_r(ff_expr *e, const ff_tensor *x, const index_plan *pl)
{
    int64_t shape[FF_MAX_DIMS];
    memcpy(shape, pl->bshape, sizeof(int64_t) * (size_t)pl->nb);
    memcpy(shape + pl->nb, pl->rest, sizeof(int64_t) * (size_t)pl->nrest);
    ff_tensor *r = FF_EX(e, ff_reshape(x, pl->nb + pl->nrest, shape));
    return move_b(e, r, pl, false);
}

/* A [K] index tensor as scatter_add/gather wants it along axis 0 of [K, rest...]: the
 * same shape, broadcast with stride 0 over the rest. */
static ff_tensor *row_index(ff_expr *e, const ff_tensor *idx1d, const index_plan *pl)
{
    int64_t k = ff_tensor_numel(idx1d), shape[FF_MAX_DIMS + 1];
    shape[0] = k;
    for (int i = 0; i < pl->nrest; i++) shape[1 + i] = 1;
    ff_tensor *r = FF_EX(e, ff_reshape(idx1d, 1 + pl->nrest, shape));
    memcpy(shape + 1, pl->rest, sizeof(int64_t) * (size_t)pl->nrest);
    return FF_EX(e, ff_expand(r, 1 + pl->nrest, shape));
}

/* The [P, 1...] bool view of a [P] mask, against rows. */
static ff_tensor *row_mask(ff_expr *e, const ff_tensor *mask1d, const index_plan *pl)
{
    int64_t shape[FF_MAX_DIMS + 1];
    shape[0] = pl->p;
    for (int i = 0; i < pl->nrest; i++) shape[1 + i] = 1;
    return FF_EX(e, ff_reshape(mask1d, 1 + pl->nrest, shape));
}

static ff_tensor *lin_tensor(const ff_tensor *t, const int64_t *lin, int64_t n)
{
    return ff_from_data_on(t->storage->backend, lin, 1, &n, FF_I64);
}

/* ---- reading: t[indices] ------------------------------------------------------------- */
/* The gather of rows is differentiable by itself (index_select's node), and so are the
 * reshapes and permutes around it: no node of its own. */
ff_tensor *ff_index(const ff_tensor *t, int nidx, const ff_tensor *const *indices)
{
    static const char fn[] = "ff_index";
    if (!t) return ff_error(FF_ERR_INVALID, "%s: tensor is NULL", fn), NULL;
    index_plan pl;
    int64_t *lin = NULL;
    if (plan_make(t, nidx, indices, &pl, &lin, fn)) return NULL;
    ff_expr e = {0};
    ff_tensor *lt = FF_EX(&e, lin_tensor(t, lin, pl.n));
    free(lin);
    ff_tensor *rows = pl.na ? to_rows(&e, t, &pl) : NULL;
    ff_tensor *items = pl.na ? FF_EX(&e, ff_index_select(rows, 0, lt)) : FF_EX(&e, ff_clone(t));
    ff_tensor *r = pl.na ? items_to_r(&e, items, &pl) : items;
    r = pl.na ? FF_EX(&e, ff_contiguous(r)) : r;
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

/* ---- writing ---------------------------------------------------------------------------- */
/* Node "index_put": inputs t and values; saved[0] lin (shape B, i64), saved[1] the
 * written-rows mask ([P] bool, without accumulate). ip: perm[0..7], 8 ndim, 9 na,
 * 10 adjacent, 11 first, 12 accumulate. The gradient: g to t, zeroed on overwritten
 * rows; to values, g's rows gathered at lin (every occurrence, as PyTorch: a
 * duplicate that lost the write still gets the gradient of its place). */
static void plan_from_node(const ff_node *n, const ff_tensor *t, const ff_tensor *lin, index_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->ndim = (int)n->ip[8];
    pl->na = (int)n->ip[9];
    pl->adjacent = n->ip[10] != 0;
    pl->first = (int)n->ip[11];
    for (int i = 0; i < pl->ndim; i++) pl->perm[i] = (int)n->ip[i];
    pl->p = 1;
    for (int i = 0; i < pl->na; i++) pl->p *= t->layout.shape[pl->perm[i]];
    for (int i = pl->na; i < pl->ndim; i++) pl->rest[pl->nrest++] = t->layout.shape[pl->perm[i]];
    pl->nb = lin->layout.ndim;
    memcpy(pl->bshape, lin->layout.shape, sizeof(int64_t) * (size_t)pl->nb);
    pl->n = ff_tensor_numel(lin);
    int before = pl->adjacent ? pl->first : 0;
    for (int i = 0; i < before; i++) pl->rshape[pl->nr++] = pl->rest[i];
    for (int i = 0; i < pl->nb; i++) pl->rshape[pl->nr++] = pl->bshape[i];
    for (int i = before; i < pl->nrest; i++) pl->rshape[pl->nr++] = pl->rest[i];
}

static ff_status index_put_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    const ff_tensor *lin = ff_node_saved(n, 0), *mask = n->ip[12] ? NULL : ff_node_saved(n, 1);
    if (!lin || (!n->ip[12] && !mask)) return ff_last_status();
    const ff_tensor *t = n->inputs[0], *v = n->inputs[1];
    index_plan pl;
    plan_from_node(n, t, lin, &pl);
    ff_expr e = {0};
    ff_tensor *rows = to_rows(&e, g, &pl);
    if (n->needs_grad[0]) {
        ff_tensor *gt;
        if (n->ip[12]) {
            gt = FF_EX(&e, ff_tensor_retain((ff_tensor *)g));
        } else {
            ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(g, 0.0, g->dtype));
            ff_tensor *m = row_mask(&e, mask, &pl);
            ff_tensor *kept = FF_EX(&e, ff_where(m, zero, rows));
            gt = from_rows(&e, kept, &pl, t->layout.shape);
        }
        gi[0] = ff_expr_result(&e, gt);
    }
    if (n->needs_grad[1]) {
        int64_t nn = pl.n;
        ff_tensor *l1 = FF_EX(&e, ff_reshape(lin, 1, &nn));
        ff_tensor *items = FF_EX(&e, ff_index_select(rows, 0, l1));
        ff_tensor *r = items_to_r(&e, items, &pl);
        ff_tensor *s = FF_EX(&e, ff_sum_to_shape(r, v->layout.ndim, v->layout.shape));
        gi[1] = ff_expr_result(&e, s);
    }
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

/* The rows each kept item writes: for every row the last item naming it. keep[] gets
 * the item numbers in increasing order, written[] one byte per row. */
static int64_t last_writers(const int64_t *lin, int64_t n, int64_t p, int64_t *keep, uint8_t *written)
{
    memset(written, 0, (size_t)(p ? p : 1));
    int64_t k = 0;
    for (int64_t j = n - 1; j >= 0; j--)
        if (!written[lin[j]]) {
            written[lin[j]] = 1;
            keep[k++] = j;
        }
    for (int64_t i = 0; i < k / 2; i++) { /* reverse into increasing order */
        int64_t s = keep[i];
        keep[i] = keep[k - 1 - i];
        keep[k - 1 - i] = s;
    }
    return k;
}

ff_tensor *ff_index_put(const ff_tensor *t, int nidx, const ff_tensor *const *indices, const ff_tensor *values,
                        bool accumulate)
{
    static const char fn[] = "ff_index_put";
    if (!t || !values) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn), NULL;
    const ff_tensor *both[2] = {t, values};
    if (!ff_common_backend(2, both, fn)) return NULL;
    index_plan pl;
    int64_t *lin = NULL;
    if (plan_make(t, nidx, indices, &pl, &lin, fn)) return NULL;
    int nd;
    int64_t bs[FF_MAX_DIMS];
    char b1[160], b2[160];
    if (ff_broadcast_shapes(values->layout.ndim, values->layout.shape, pl.nr, pl.rshape, &nd, bs, fn) || nd != pl.nr ||
        memcmp(bs, pl.rshape, sizeof(int64_t) * (size_t)nd) != 0) {
        free(lin);
        return ff_error(FF_ERR_INVALID, "%s: values of shape %s do not broadcast to the indexed shape %s", fn,
                        ff_shape_str(values->layout.ndim, values->layout.shape, b1, sizeof b1),
                        ff_shape_str(pl.nr, pl.rshape, b2, sizeof b2)), NULL;
    }
    /* the rows to write: every item with accumulate, else the last writer of each row */
    int64_t *keep = NULL, nkeep = pl.n;
    uint8_t *written = NULL;
    if (!accumulate) {
        keep = malloc(sizeof(int64_t) * (size_t)(pl.n ? pl.n : 1));
        written = malloc((size_t)(pl.p ? pl.p : 1));
        if (!keep || !written) {
            free(lin);
            free(keep);
            free(written);
            return ff_error(FF_ERR_OOM, "%s: out of memory", fn), NULL;
        }
        nkeep = last_writers(lin, pl.n, pl.p, keep, written);
    }
    bool prev = ff_set_grad_enabled(false); /* the forward is a composition; index_put_backward is the gradient */
    ff_expr e = {0};
    ff_backend *be = t->storage->backend;
    ff_tensor *lt = FF_EX(&e, ff_from_data_on(be, lin, pl.nb, pl.bshape, FF_I64)); /* saved, shape B */
    int64_t n1 = pl.n;
    ff_tensor *l1 = FF_EX(&e, ff_reshape(lt, 1, &n1));
    ff_tensor *mt = written ? FF_EX(&e, ff_from_data_on(be, written, 1, &pl.p, FF_BOOL)) : NULL;
    ff_tensor *vc = FF_EX(&e, ff_astype(values, t->dtype));
    ff_tensor *vr = FF_EX(&e, ff_broadcast_to(vc, pl.nr, pl.rshape));
    ff_tensor *items = r_to_items(&e, vr, &pl);
    ff_tensor *rows = to_rows(&e, t, &pl); /* where and scatter_add below write new tensors */
    if (!accumulate) {
        ff_tensor *zero = FF_EX(&e, ff_op_scalar_like(t, 0.0, t->dtype));
        ff_tensor *m = row_mask(&e, mt, &pl);
        rows = FF_EX(&e, ff_where(m, zero, rows));
        if (nkeep < pl.n) {
            ff_tensor *kt = FF_EX(&e, ff_from_data_on(be, keep, 1, &nkeep, FF_I64));
            items = FF_EX(&e, ff_index_select(items, 0, kt));
            l1 = FF_EX(&e, ff_index_select(l1, 0, kt));
        }
    }
    free(keep);
    free(written);
    free(lin);
    ff_tensor *ri = row_index(&e, l1, &pl);
    ff_tensor *res = FF_EX(&e, ff_scatter_add(rows, 0, ri, items));
    res = from_rows(&e, res, &pl, t->layout.shape);
    res = FF_EX(&e, ff_contiguous(res));
    ff_set_grad_enabled(prev);
    ff_tensor *out = ff_expr_result(&e, res);
    if (out && ff_dtype_has_grad(t->dtype)) {
        const ff_tensor *save[2] = {lt, mt};
        ff_node *node = ff_op_record_node(&out, "index_put", index_put_backward, 2, both, accumulate ? 1 : 2, save);
        if (node) {
            for (int i = 0; i < pl.ndim; i++) node->ip[i] = pl.perm[i];
            node->ip[8] = pl.ndim;
            node->ip[9] = pl.na;
            node->ip[10] = pl.adjacent;
            node->ip[11] = pl.first;
            node->ip[12] = accumulate;
        }
    }
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

/* ---- in place ------------------------------------------------------------------------- */
/* The result is computed out of place and copied into t's memory through t's view (so
 * a view writes into its base); under autograd it is recorded as every in-place op is
 * (ops/inplace.c, ff_inplace_commit). */
static ff_status write_back(ff_tensor *t, const ff_tensor *operand, ff_tensor *(*make)(void *), void *arg,
                            const char *fn)
{
    ff_status st;
    bool rec = ff_op_inplace_begin(t, operand, false, fn, &st);
    if (st) return st;
    bool prev = ff_set_grad_enabled(rec); /* the out-of-place op records only when this does */
    ff_tensor *r = make(arg);
    ff_set_grad_enabled(prev);
    if (!r) return ff_last_status();
    st = rec ? ff_inplace_commit(t, r, true, fn) : ff_kernel_copy(t, r, fn);
    ff_tensor_release(r);
    return st;
}

typedef struct put_args {
    const ff_tensor *t;
    int nidx;
    const ff_tensor *const *indices;
    const ff_tensor *values;
    bool accumulate;
} put_args;

static ff_tensor *make_put(void *arg)
{
    put_args *a = arg;
    return ff_index_put(a->t, a->nidx, a->indices, a->values, a->accumulate);
}

ff_status ff_index_put_(ff_tensor *t, int nidx, const ff_tensor *const *indices, const ff_tensor *values,
                        bool accumulate)
{
    put_args a = {t, nidx, indices, values, accumulate};
    return write_back(t, values, make_put, &a, "ff_index_put_");
}

/* ---- along one dim: index_add, index_copy ------------------------------------------ */
/* t[..., index[i], ...] (+)= src[..., i, ...] along dim: an index_put whose one index
 * tensor sits at dim (so B, of index's length, replaces dim in src's shape). */
static ff_tensor *along_dim(const ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src, double alpha,
                            bool accumulate, const char *fn)
{
    if (!t || !index || !src) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn), NULL;
    int d;
    if (ff_layout_normalize_axis(dim, t->layout.ndim, &d, fn)) return NULL;
    if (index->layout.ndim > 1 || index->dtype == FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: index must be a 1-D integer tensor, got rank %d %s", fn,
                        index->layout.ndim, ff_dtype_name(index->dtype)), NULL;
    if (src->layout.ndim != t->layout.ndim) {
        char b1[160], b2[160];
        return ff_error(FF_ERR_INVALID, "%s: source %s must have the rank of the tensor %s", fn,
                        ff_shape_str(src->layout.ndim, src->layout.shape, b1, sizeof b1),
                        ff_shape_str(t->layout.ndim, t->layout.shape, b2, sizeof b2)), NULL;
    }
    const ff_tensor *idx[FF_MAX_DIMS] = {NULL};
    idx[d] = index;
    ff_tensor *scaled = alpha == 1.0 ? ff_tensor_retain((ff_tensor *)src) : ff_mul_scalar(src, alpha);
    ff_tensor *r = scaled ? ff_index_put(t, d + 1, idx, scaled, accumulate) : NULL;
    ff_tensor_release(scaled);
    if (!r) ff_error_prefix(fn);
    return r;
}

ff_tensor *ff_index_add(const ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src, double alpha)
{
    return along_dim(t, dim, index, src, alpha, true, "ff_index_add");
}

ff_tensor *ff_index_copy(const ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src)
{
    return along_dim(t, dim, index, src, 1.0, false, "ff_index_copy");
}

typedef struct dim_args {
    const ff_tensor *t, *index, *src;
    int dim;
    double alpha;
    bool accumulate;
    const char *fn;
} dim_args;

static ff_tensor *make_dim(void *arg)
{
    dim_args *a = arg;
    return along_dim(a->t, a->dim, a->index, a->src, a->alpha, a->accumulate, a->fn);
}

ff_status ff_index_add_(ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src, double alpha)
{
    dim_args a = {t, index, src, dim, alpha, true, "ff_index_add_"};
    return write_back(t, src, make_dim, &a, a.fn);
}

ff_status ff_index_copy_(ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src)
{
    dim_args a = {t, index, src, dim, 1.0, false, "ff_index_copy_"};
    return write_back(t, src, make_dim, &a, a.fn);
}

/* ---- masks: masked_fill, masked_scatter -------------------------------------------- */
/* where(mask, value, t) with mask broadcast to t's shape (t's shape is kept); value is
 * a 0-d tensor (or any shape that broadcasts to t's) of any dtype, cast to t's. */
ff_tensor *ff_masked_fill(const ff_tensor *t, const ff_tensor *mask, const ff_tensor *value)
{
    static const char fn[] = "ff_masked_fill";
    if (!t || !mask || !value) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn), NULL;
    if (mask->dtype != FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: mask must be bool, got %s", fn, ff_dtype_name(mask->dtype)), NULL;
    int nd;
    int64_t shape[FF_MAX_DIMS];
    char b1[160], b2[160];
    if (ff_broadcast_shapes(t->layout.ndim, t->layout.shape, mask->layout.ndim, mask->layout.shape, &nd, shape, fn) ||
        nd != t->layout.ndim || memcmp(shape, t->layout.shape, sizeof(int64_t) * (size_t)nd) != 0)
        return ff_error(FF_ERR_INVALID, "%s: the mask of shape %s does not broadcast to the tensor's shape %s", fn,
                        ff_shape_str(mask->layout.ndim, mask->layout.shape, b1, sizeof b1),
                        ff_shape_str(t->layout.ndim, t->layout.shape, b2, sizeof b2)), NULL;
    ff_expr e = {0};
    ff_tensor *v = FF_EX(&e, ff_op_cast(value, t->dtype, fn));
    ff_tensor *r = FF_EX(&e, ff_where(mask, v, t));
    if (r && (r->layout.ndim != t->layout.ndim || memcmp(r->layout.shape, t->layout.shape, sizeof(int64_t) * (size_t)nd)))
        r = FF_EX(&e, (ff_error(FF_ERR_INVALID, "%s: value %s does not broadcast to the tensor's shape %s", fn,
                                ff_shape_str(value->layout.ndim, value->layout.shape, b1, sizeof b1),
                                ff_shape_str(t->layout.ndim, t->layout.shape, b2, sizeof b2)), (ff_tensor *)NULL));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    return out;
}

/* The elements of src, in row-major order, into t where mask (broadcast to t) holds;
 * src needs at least as many elements as the mask has true ones. */
ff_tensor *ff_masked_scatter(const ff_tensor *t, const ff_tensor *mask, const ff_tensor *src)
{
    static const char fn[] = "ff_masked_scatter";
    if (!t || !mask || !src) return ff_error(FF_ERR_INVALID, "%s: NULL tensor", fn), NULL;
    if (mask->dtype != FF_BOOL)
        return ff_error(FF_ERR_INVALID, "%s: mask must be bool, got %s", fn, ff_dtype_name(mask->dtype)), NULL;
    ff_expr e = {0};
    ff_tensor *mb = FF_EX(&e, ff_broadcast_to(mask, t->layout.ndim, t->layout.shape));
    ff_tensor *m = FF_EX(&e, ff_contiguous(mb));
    ff_tensor *cnt = FF_EX(&e, ff_sum(m, 0, NULL, false));
    int64_t k = 0;
    if (cnt && ff_tensor_item_i64(cnt, &k)) e.failed = true;
    if (!e.failed && k > ff_tensor_numel(src)) {
        ff_error(FF_ERR_INVALID, "%s: the mask selects %lld elements but source has only %lld", fn, (long long)k,
                 (long long)ff_tensor_numel(src));
        e.failed = true;
    }
    /* one flat dim for t and the mask, so a 0-d t needs no special case */
    int64_t ns = ff_tensor_numel(src), nt = ff_tensor_numel(t);
    ff_tensor *flat = FF_EX(&e, ff_reshape(src, 1, &ns));
    ff_tensor *head = FF_EX(&e, ff_narrow(flat, 0, 0, k));
    ff_tensor *t1 = FF_EX(&e, ff_reshape(t, 1, &nt));
    ff_tensor *m1 = FF_EX(&e, ff_reshape(m, 1, &nt));
    const ff_tensor *idx[1] = {m1};
    ff_tensor *r = FF_EX(&e, ff_index_put(t1, 1, idx, head, false));
    r = FF_EX(&e, ff_reshape(r, t->layout.ndim, t->layout.shape));
    ff_tensor *out = ff_expr_result(&e, r);
    ff_expr_free(&e);
    if (!out) ff_error_prefix(fn);
    return out;
}

typedef struct mask_args {
    const ff_tensor *t, *mask, *v;
    ff_tensor *(*op)(const ff_tensor *, const ff_tensor *, const ff_tensor *);
} mask_args;

static ff_tensor *make_mask(void *arg)
{
    mask_args *a = arg;
    return a->op(a->t, a->mask, a->v);
}

ff_status ff_masked_fill_(ff_tensor *t, const ff_tensor *mask, const ff_tensor *value)
{
    mask_args a = {t, mask, value, ff_masked_fill};
    return write_back(t, value, make_mask, &a, "ff_masked_fill_");
}

ff_status ff_masked_scatter_(ff_tensor *t, const ff_tensor *mask, const ff_tensor *src)
{
    mask_args a = {t, mask, src, ff_masked_scatter};
    return write_back(t, src, make_mask, &a, "ff_masked_scatter_");
}
