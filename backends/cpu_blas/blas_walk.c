/*
 * The strided segment walker: every elementwise kernel is "for each run of the
 * innermost (coalesced) dim, call a 1-D loop". Coalescing first is what turns a
 * contiguous tensor of any rank into one long run (so the 1-D loop vectorizes) and
 * keeps the per-run overhead negligible for the layouts that matter.
 */
#include "blas_impl.h"

void blas_walk_init(blas_walk *w, int ndim, const int64_t *shape, int nviews, const ff_view *const *views)
{
    w->nviews = nviews;
    w->numel = 1;
    for (int d = 0; d < ndim; d++) w->numel *= shape[d];
    for (int k = 0; k < nviews; k++) {
        w->esize[k] = (int64_t)ff_dtype_size(views[k]->dtype);
        w->base[k] = (char *)views[k]->buf + views[k]->offset * w->esize[k];
    }
    /* keep the dims of extent > 1, outermost first */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        w->shape[nd] = shape[d];
        for (int k = 0; k < nviews; k++) w->strides[k][nd] = views[k]->strides[d];
        nd++;
    }
    /* merge an outer dim into the one inside it when every view steps evenly over both */
    int out = 0;
    for (int d = 0; d < nd; d++) {
        if (out > 0) {
            int mergeable = 1;
            for (int k = 0; k < nviews && mergeable; k++)
                mergeable = w->strides[k][out - 1] == w->strides[k][d] * w->shape[d];
            if (mergeable) {
                w->shape[out - 1] *= w->shape[d];
                for (int k = 0; k < nviews; k++) w->strides[k][out - 1] = w->strides[k][d];
                continue;
            }
        }
        w->shape[out] = w->shape[d];
        for (int k = 0; k < nviews; k++) w->strides[k][out] = w->strides[k][d];
        out++;
    }
    if (out == 0) { /* a single element */
        w->shape[0] = 1;
        for (int k = 0; k < nviews; k++) w->strides[k][0] = 0;
        out = 1;
    }
    w->ndim = out;
}

void blas_walk_range(const blas_walk *w, int64_t begin, int64_t end, blas_seg_fn fn, void *arg)
{
    if (begin >= end) return;
    int nd = w->ndim, nv = w->nviews;
    int64_t inner = w->shape[nd - 1];
    int64_t idx[FF_MAX_DIMS], off[BLAS_MAX_VIEWS];
    int64_t q = begin / inner, r = begin % inner;
    for (int k = 0; k < nv; k++) off[k] = r * w->strides[k][nd - 1];
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = q % w->shape[d];
        q /= w->shape[d];
        for (int k = 0; k < nv; k++) off[k] += idx[d] * w->strides[k][d];
    }
    int64_t s[BLAS_MAX_VIEWS];
    char *p[BLAS_MAX_VIEWS];
    for (int k = 0; k < nv; k++) s[k] = w->strides[k][nd - 1];
    int64_t pos = begin;
    for (;;) {
        int64_t seg = inner - r;
        if (seg > end - pos) seg = end - pos;
        for (int k = 0; k < nv; k++) p[k] = w->base[k] + off[k] * w->esize[k];
        fn(arg, seg, p, s);
        pos += seg;
        if (pos >= end) return;
        /* next run: back to the start of the inner dim, carry into the outer ones */
        for (int k = 0; k < nv; k++) off[k] -= r * s[k];
        r = 0;
        for (int d = nd - 2; d >= 0; d--) {
            if (++idx[d] < w->shape[d]) {
                for (int k = 0; k < nv; k++) off[k] += w->strides[k][d];
                break;
            }
            idx[d] = 0;
            for (int k = 0; k < nv; k++) off[k] -= w->strides[k][d] * (w->shape[d] - 1);
        }
    }
}

typedef struct walk_task {
    const blas_walk *w;
    blas_seg_fn fn;
    void *arg;
} walk_task;

static void walk_chunk(void *arg, int64_t begin, int64_t end)
{
    const walk_task *t = arg;
    blas_walk_range(t->w, begin, end, t->fn, t->arg);
}

void blas_walk_run(blas_ctx *c, const blas_walk *w, int64_t min_par, blas_seg_fn fn, void *arg)
{
    if (w->numel == 0) return;
    if (w->numel < min_par || !c || c->nthreads <= 1) {
        blas_walk_range(w, 0, w->numel, fn, arg);
        return;
    }
    walk_task t = {w, fn, arg};
    /* chunks of whole cache lines of the widest dtype keep threads off each other's lines */
    blas_parallel_for(c, w->numel, min_par, 64, walk_chunk, &t);
}
