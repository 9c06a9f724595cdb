/* A whole layer direction of an RNN/LSTM/GRU as one autograd node (ff_rnn_layer).
 *
 * Looping ff_rnn_cell over time costs a node per step, and each step's rows of x_proj
 * are a narrow view whose gradient is scattered into zeros of x_proj's full size: T
 * full-size zero fills and additions per layer, O(T^2) memory traffic (half the time of
 * a 64-step LSTM). Here the loop runs inside one op: the states live in rows of the
 * output (so sequences that end keep their last state and, in reverse, sequences that
 * have not started keep h0), every step's activations and inputs go to rows of three
 * saved buffers, and the backward walks the steps back writing each step's gradient
 * into rows of one dx buffer, then computes dW (and db) with one GEMM over all steps.
 * The step math is ops/rnn_cell.c's (ops/rnn_impl.h), on ff ops: every backend runs it. */
#include <stdlib.h>

#include "expr.h"
#include "rnn_impl.h"

/* rows [off, off + n) of t (a view) */
static ff_tensor *rows(const ff_tensor *t, int64_t off, int64_t n) { return ff_narrow(t, 0, off, n); }

typedef struct layer_geo {
    ff_rnn_mode mode;
    int64_t steps, batch, hid, n; /* n = sum of the batch sizes */
    bool reverse;
} layer_geo;

/* Step k of the processing order: its time index. */
static int64_t step_at(const layer_geo *g, int64_t k) { return g->reverse ? g->steps - 1 - k : k; }

static ff_status check_sizes(const layer_geo *g, const int64_t *sizes, int64_t n, const char *fn)
{
    if (g->steps < 1 || !sizes) return ff_error(FF_ERR_INVALID, "%s: need at least one step, got %lld", fn,
                                                (long long)g->steps);
    int64_t sum = 0;
    for (int64_t t = 0; t < g->steps; t++) {
        if (sizes[t] < 1 || sizes[t] > (t ? sizes[t - 1] : g->batch))
            return ff_error(FF_ERR_INVALID, "%s: batch_sizes[%lld] = %lld: sizes must be in [1, %lld] and "
                            "non-increasing (a PackedSequence's)", fn, (long long)t, (long long)sizes[t],
                            (long long)(t ? sizes[t - 1] : g->batch));
        sum += sizes[t];
    }
    if (sizes[0] != g->batch || sum != n)
        return ff_error(FF_ERR_INVALID, "%s: batch_sizes start at %lld and sum to %lld, but h0 has %lld rows and "
                        "x_proj %lld", fn, (long long)sizes[0], (long long)sum, (long long)g->batch, (long long)n);
    return FF_OK;
}

/* ---- backward -------------------------------------------------------------------- */
/* Node inputs as the cell's: [0] x_proj, [1] h0, [2] w_hh, [3] c0 or b_hh, extra b_hh.
 * ip: [0] mode, [1] hid, [2] 1 + index of c0, [3] 1 + index of b_hh, [4] steps, [5] batch,
 * [6] reverse, [7] n. Saved: [0] act [n, A H], [1] the step inputs [n, H] (LSTM: [n, 2 H],
 * h then c), [2] w_hh, [3] the batch sizes (i64 [steps]). */

static const ff_tensor *node_input(const ff_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : n->extra[i - n->n_inputs];
}

/* One step back: gh/gc the gradients of its h'/c'; writes dx (and dgh) rows, and the
 * state gradients dh/dc rows [0, b). */
static ff_status step_back(const layer_geo *g, const ff_tensor *act, const ff_tensor *hin, const ff_tensor *cin,
                           const ff_tensor *w, const ff_tensor *gout_t, ff_tensor *dhs, ff_tensor *dcs,
                           ff_tensor *dx_rows, ff_tensor *dgh_rows, int64_t b)
{
    ff_expr e = {0};
    ff_tensor *dh_b = FF_EX(&e, rows(dhs, 0, b)), *dc_b = dcs ? FF_EX(&e, rows(dcs, 0, b)) : NULL;
    ff_tensor *gh = FF_EX(&e, ff_add(dh_b, gout_t));
    ff_rnn_step_grads sg = {0};
    ff_status st = e.failed ? ff_last_status() : ff_rnn_step_backward(g->mode, g->hid, act, hin, cin, gh, dc_b, &sg);
    if (!st) {
        ff_tensor *dh = FF_EX(&e, ff_matmul(sg.dgh, w));
        if (sg.dh_direct) dh = FF_EX(&e, ff_add(dh, sg.dh_direct));
        st = e.failed ? ff_last_status() : ff_copy_(dx_rows, sg.dx);
        if (!st && dgh_rows) st = ff_copy_(dgh_rows, sg.dgh);
        if (!st) st = ff_copy_(dh_b, dh);
        if (!st && dc_b) st = ff_copy_(dc_b, sg.dc);
    }
    ff_rnn_step_grads_free(&sg);
    ff_expr_free(&e);
    return st;
}

static ff_status layer_backward_run(ff_node *nd, const layer_geo *g, const int64_t *sizes, const int64_t *offs,
                                    const ff_tensor *gr, ff_tensor **gi)
{
    const ff_tensor *act = ff_node_saved(nd, 0), *ins = act ? ff_node_saved(nd, 1) : NULL;
    const ff_tensor *w = ins ? ff_node_saved(nd, 2) : NULL;
    if (!w) return ff_last_status();
    bool lstm = g->mode == FF_RNN_LSTM, gru = g->mode == FF_RNN_GRU;
    int64_t gh = (int64_t)ff_rnn_gates(g->mode) * g->hid, xs[2] = {g->n, gh};
    ff_backend *be = act->storage->backend;
    ff_expr e = {0};
    ff_tensor *gout = FF_EX(&e, rows(gr, 0, g->n));
    ff_tensor *dhs = FF_EX(&e, ff_clone(FF_EX(&e, rows(gr, g->n, g->batch))));
    ff_tensor *dcs = lstm ? FF_EX(&e, ff_clone(FF_EX(&e, rows(gr, g->n + g->batch, g->batch)))) : NULL;
    ff_tensor *dx = FF_EX(&e, ff_tensor_new(be, 2, xs, act->dtype, nd->name));
    ff_tensor *dgh = gru ? FF_EX(&e, ff_tensor_new(be, 2, xs, act->dtype, nd->name)) : dx;
    ff_tensor *hin_all = lstm ? FF_EX(&e, ff_narrow(ins, 1, 0, g->hid)) : (ff_tensor *)ins;
    ff_tensor *cin_all = lstm ? FF_EX(&e, ff_narrow(ins, 1, g->hid, g->hid)) : NULL;
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    for (int64_t k = g->steps - 1; k >= 0 && !st; k--) {
        int64_t t = step_at(g, k), b = sizes[t], off = offs[t];
        ff_expr s = {0};
        ff_tensor *a = FF_EX(&s, rows(act, off, b)), *hin = FF_EX(&s, rows(hin_all, off, b));
        ff_tensor *cin = lstm ? FF_EX(&s, rows(cin_all, off, b)) : NULL;
        ff_tensor *go = FF_EX(&s, rows(gout, off, b)), *dxr = FF_EX(&s, rows(dx, off, b));
        ff_tensor *dgr = gru ? FF_EX(&s, rows(dgh, off, b)) : NULL;
        st = s.failed ? ff_last_status() : step_back(g, a, hin, cin, w, go, dhs, dcs, dxr, dgr, b);
        ff_expr_free(&s);
    }
    if (!st) {
        int ic = (int)nd->ip[2] - 1, ib = (int)nd->ip[3] - 1, axis0 = 0;
        if (nd->needs_grad[0]) gi[0] = ff_tensor_retain(dx);
        if (nd->needs_grad[1]) gi[1] = ff_tensor_retain(dhs);
        if (ic >= 0 && node_input(nd, ic)->requires_grad) gi[ic] = ff_tensor_retain(dcs);
        /* one GEMM over every step: dW = sum_t dgh_t^T h_t */
        if (nd->needs_grad[2]) gi[2] = ff_expr_result(&e, FF_EX(&e, ff_matmul(FF_EX(&e, ff_mT(dgh)), hin_all)));
        if (ib >= 0 && node_input(nd, ib)->requires_grad)
            gi[ib] = ff_expr_result(&e, FF_EX(&e, ff_sum(dgh, 1, &axis0, false)));
        if (e.failed) st = ff_last_status();
    }
    ff_expr_free(&e);
    return st;
}

static ff_status rnn_layer_backward(ff_node *nd, const ff_tensor *gr, ff_tensor **gi)
{
    if (ff_grad_enabled())
        return ff_error(FF_ERR_UNSUPPORTED, "%s: create_graph (second derivatives) through a recurrent layer is not "
                        "supported: its backward uses saved gate activations", nd->name);
    layer_geo g = {.mode = (ff_rnn_mode)nd->ip[0], .hid = nd->ip[1], .steps = nd->ip[4], .batch = nd->ip[5],
                   .reverse = nd->ip[6] != 0, .n = nd->ip[7]};
    const ff_tensor *st_sizes = ff_node_saved(nd, 3);
    if (!st_sizes) return ff_last_status();
    int64_t *sizes = malloc(2 * (size_t)g.steps * sizeof *sizes);
    if (!sizes) return ff_error(FF_ERR_OOM, "%s: out of memory", nd->name);
    int64_t *offs = sizes + g.steps;
    ff_status st = ff_tensor_to_host(st_sizes, sizes, (size_t)g.steps * sizeof *sizes);
    for (int64_t t = 0, off = 0; t < g.steps; off += sizes[t], t++) offs[t] = off;
    if (!st) st = layer_backward_run(nd, &g, sizes, offs, gr, gi);
    free(sizes);
    return st;
}

/* ---- forward --------------------------------------------------------------------- */

typedef struct layer_bufs {
    ff_tensor *r;           /* [n + B (+ B), H]: outputs, then h's state (h_n), then c's (c_n) */
    ff_tensor *act, *ins;   /* saved: activations [n, A H], step inputs [n, H or 2 H] */
} layer_bufs;

static void layer_bufs_free(layer_bufs *b)
{
    ff_tensor_release(b->r), ff_tensor_release(b->act), ff_tensor_release(b->ins);
}

static ff_status layer_forward(const layer_geo *g, const int64_t *sizes, const int64_t *offs, const ff_tensor *x_proj,
                               const ff_tensor *h0, const ff_tensor *c0, const ff_tensor *w_hh, const ff_tensor *b_hh,
                               layer_bufs *bf, const char *fn)
{
    bool lstm = g->mode == FF_RNN_LSTM;
    ff_backend *be = x_proj->storage->backend;
    int64_t rs[2] = {g->n + (lstm ? 2 : 1) * g->batch, g->hid}, as[2] = {g->n, ff_rnn_act_width(g->mode) * g->hid};
    int64_t is[2] = {g->n, (lstm ? 2 : 1) * g->hid};
    bf->r = ff_tensor_new(be, 2, rs, x_proj->dtype, fn);
    bf->act = bf->r ? ff_tensor_new(be, 2, as, x_proj->dtype, fn) : NULL;
    bf->ins = bf->act ? ff_tensor_new(be, 2, is, x_proj->dtype, fn) : NULL;
    if (!bf->ins) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *out = FF_EX(&e, rows(bf->r, 0, g->n)), *hs = FF_EX(&e, rows(bf->r, g->n, g->batch));
    ff_tensor *cs = lstm ? FF_EX(&e, rows(bf->r, g->n + g->batch, g->batch)) : NULL;
    ff_tensor *hin_all = lstm ? FF_EX(&e, ff_narrow(bf->ins, 1, 0, g->hid)) : bf->ins;
    ff_tensor *cin_all = lstm ? FF_EX(&e, ff_narrow(bf->ins, 1, g->hid, g->hid)) : NULL;
    ff_status st = e.failed ? ff_last_status() : ff_copy_(hs, h0);
    if (!st && lstm) st = ff_copy_(cs, c0);
    for (int64_t k = 0; k < g->steps && !st; k++) {
        int64_t t = step_at(g, k), b = sizes[t], off = offs[t];
        ff_expr s = {0};
        ff_tensor *hin = FF_EX(&s, rows(hs, 0, b)), *cin = lstm ? FF_EX(&s, rows(cs, 0, b)) : NULL;
        ff_tensor *xt = FF_EX(&s, rows(x_proj, off, b)), *h2 = NULL, *c2 = NULL, *a = NULL;
        st = s.failed ? ff_last_status() : ff_copy_(FF_EX(&s, rows(hin_all, off, b)), hin);
        if (!st && lstm) st = ff_copy_(FF_EX(&s, rows(cin_all, off, b)), cin);
        if (!st) st = ff_rnn_step_forward(g->mode, g->hid, xt, hin, cin, w_hh, b_hh, &h2, &c2, &a);
        if (!st) { /* the step's results, released with its arena (an RNN's h2 is its act) */
            (void)FF_EX(&s, h2), (void)FF_EX(&s, a);
            if (c2) (void)FF_EX(&s, c2);
        }
        if (!st) st = ff_copy_(FF_EX(&s, rows(bf->act, off, b)), a);
        if (!st) st = ff_copy_(FF_EX(&s, rows(out, off, b)), h2);
        if (!st) st = ff_copy_(hin, h2); /* the state's rows move on; the rest keep theirs */
        if (!st && lstm) st = ff_copy_(cin, c2);
        if (!st && s.failed) st = ff_last_status();
        ff_expr_free(&s);
    }
    ff_expr_free(&e);
    return st;
}

ff_status ff_rnn_layer(ff_rnn_mode mode, const ff_tensor *x_proj, int64_t steps, const int64_t *batch_sizes,
                       bool reverse, const ff_tensor *h0, const ff_tensor *c0, const ff_tensor *w_hh,
                       const ff_tensor *b_hh, ff_tensor **out, ff_tensor **h_n, ff_tensor **c_n)
{
    static const char fn[] = "ff_rnn_layer";
    if (!out || !h_n || (mode == FF_RNN_LSTM && !c_n))
        return ff_error(FF_ERR_INVALID, "%s: out, h_n%s must not be NULL", fn, mode == FF_RNN_LSTM ? ", c_n" : "");
    ff_tensor *ac[5]; /* autocast: a matmul-like op, so the low-precision rule */
    int nac = ff_autocast_operands(FF_AUTOCAST_LOW, 5, (const ff_tensor *[]){x_proj, h0, c0, w_hh, b_hh}, ac, fn);
    if (nac) {
        ff_status r = nac > 0 ? ff_rnn_layer(mode, ac[0], steps, batch_sizes, reverse, ac[1], ac[2], ac[3], ac[4], out,
                                             h_n, c_n)
                              : ff_last_status();
        ff_autocast_release(nac, ac);
        return r;
    }
    if (!x_proj || !h0 || x_proj->layout.ndim != 2 || h0->layout.ndim != 2)
        return ff_error(FF_ERR_INVALID, "%s: x_proj [N, G H] and h0 [B, H] are required, 2-d", fn);
    layer_geo g = {.mode = mode, .steps = steps, .batch = h0->layout.shape[0], .n = x_proj->layout.shape[0],
                   .reverse = reverse};
    if (check_sizes(&g, batch_sizes, g.n, fn)) return FF_ERR_INVALID;
    ff_tensor *x0 = rows(x_proj, 0, g.batch); /* the first step's operands stand for all of them */
    ff_status st = x0 ? ff_rnn_check_step(mode, x0, h0, c0, w_hh, b_hh, &g.hid, fn) : ff_last_status();
    ff_tensor_release(x0);
    if (st) return st;
    if (h0->layout.shape[1] != g.hid)
        return ff_error(FF_ERR_INVALID, "%s: h0 must have %lld columns (no projection here: that is the cell's)", fn,
                        (long long)g.hid);
    int64_t *offs = malloc((size_t)steps * sizeof *offs);
    if (!offs) return ff_error(FF_ERR_OOM, "%s: out of memory", fn);
    for (int64_t t = 0, off = 0; t < steps; off += batch_sizes[t], t++) offs[t] = off;
    layer_bufs bf = {0};
    bool prev = ff_set_grad_enabled(false);
    st = layer_forward(&g, batch_sizes, offs, x_proj, h0, c0, w_hh, b_hh, &bf, fn);
    ff_set_grad_enabled(prev);
    free(offs);
    const ff_tensor *in[5] = {x_proj, h0, w_hh};
    int n = 3, ic = 0, ib = 0;
    if (c0) in[n++] = c0, ic = n;
    if (b_hh) in[n++] = b_hh, ib = n;
    if (!st && ff_autograd_needed(n, in)) {
        ff_node *node = ff_rnn_record(bf.r, mode == FF_RNN_LSTM ? "lstm" : mode == FF_RNN_GRU ? "gru" : "rnn",
                                      rnn_layer_backward, n, in);
        ff_tensor *sizes = node ? ff_from_data(batch_sizes, 1, &steps, FF_I64) : NULL;
        if (sizes) {
            int64_t ip[8] = {mode, g.hid, ic, ib, steps, g.batch, reverse, g.n};
            for (int i = 0; i < 8; i++) node->ip[i] = ip[i];
            node->nip = 8;
            const ff_tensor *save[4] = {bf.act, bf.ins, w_hh, sizes};
            for (int i = 0; i < 4 && !st; i++) st = ff_node_save(node, save[i]);
        } else {
            st = ff_last_status();
        }
        ff_tensor_release(sizes);
    }
    ff_tensor *o = NULL, *h = NULL, *c = NULL;
    if (!st) { /* tracked views of the one output */
        o = rows(bf.r, 0, g.n), h = o ? rows(bf.r, g.n, g.batch) : NULL;
        c = h && mode == FF_RNN_LSTM ? rows(bf.r, g.n + g.batch, g.batch) : NULL;
        if (!h || (mode == FF_RNN_LSTM && !c)) st = ff_last_status();
    }
    layer_bufs_free(&bf);
    if (st) {
        ff_tensor_release(o), ff_tensor_release(h), ff_tensor_release(c);
        ff_error_prefix(fn);
        return st;
    }
    *out = o, *h_n = h;
    if (c_n) *c_n = c;
    return FF_OK;
}
