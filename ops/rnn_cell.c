/* One time step of a recurrent layer (RNN tanh/relu, LSTM, GRU) as one autograd node.
 *
 * The caller computes the input projection of every time step as one GEMM before its
 * loop (x_proj = x W_ih^T + b_ih, [T, B, G H]); each step then runs only the recurrent
 * GEMM h W_hh^T here, the gate math, and saves the gate activations so the backward
 * pass is a handful of elementwise ops and three GEMMs instead of a graph of ~20
 * nodes per step. Gate order is PyTorch's (LSTM i, f, g, o; GRU r, z, n), so its
 * weights load as they are.
 *
 * Everything runs through ff ops (matmul, unary, binary, concat), so every backend
 * runs the cell. The backward saves activations detached from x_proj, h and the
 * weights: its formulas are first-order only, and a create_graph pass is refused
 * rather than returning wrong second derivatives. */
#include <stdio.h>
#include <stdlib.h>

#include "expr.h"
#include "rnn_impl.h"

int ff_rnn_gates(ff_rnn_mode mode)
{
    return mode == FF_RNN_LSTM ? 4 : mode == FF_RNN_GRU ? 3 : 1;
}

int ff_rnn_act_width(ff_rnn_mode mode)
{
    return mode == FF_RNN_LSTM ? 5 : mode == FF_RNN_GRU ? 4 : 1;
}

static const char *mode_name(ff_rnn_mode mode)
{
    static const char *const names[] = {"rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"};
    return (unsigned)mode < 4 ? names[mode] : "rnn_cell";
}

/* Columns [k H, (k + n) H) of t [B, *] (a view). */
static ff_tensor *gates(const ff_tensor *t, int k, int n, int64_t hid)
{
    return ff_narrow(t, 1, k * hid, n * hid);
}

/* s (1 - s): the sigmoid's derivative from its value. */
static ff_tensor *dsigmoid(ff_expr *e, const ff_tensor *s)
{
    ff_tensor *one_minus = FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, s));
    return FF_EX(e, ff_mul(s, one_minus));
}

/* 1 - t^2: tanh's derivative from its value. */
static ff_tensor *dtanh(ff_expr *e, const ff_tensor *t)
{
    return FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, FF_EX(e, ff_square(t))));
}

/* ---- checks ---------------------------------------------------------------------- */

static ff_status check_2d(const ff_tensor *t, const char *what, int64_t rows, int64_t cols, ff_dtype dt,
                          const char *fn)
{
    char b[160];
    if (!t) return ff_error(FF_ERR_INVALID, "%s: %s is NULL", fn, what);
    int nd = t->layout.ndim;
    if (nd != 2 || t->layout.shape[0] != rows || t->layout.shape[1] != cols)
        return ff_error(FF_ERR_INVALID, "%s: %s must be [%lld, %lld], got %s", fn, what, (long long)rows,
                        (long long)cols, ff_shape_str(nd, t->layout.shape, b, sizeof b));
    if (t->dtype != dt)
        return ff_error(FF_ERR_INVALID, "%s: %s is %s but x_proj is %s (all operands must share one dtype)", fn,
                        what, ff_dtype_name(t->dtype), ff_dtype_name(dt));
    return FF_OK;
}

ff_status ff_rnn_check_step(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                            const ff_tensor *w_hh, const ff_tensor *b_hh, int64_t *hid_out, const char *fn)
{
    char b[160];
    if ((unsigned)mode > FF_RNN_GRU) return ff_error(FF_ERR_INVALID, "%s: unknown mode %d", fn, (int)mode);
    if (!x_proj || !h || !w_hh) return ff_error(FF_ERR_INVALID, "%s: x_proj, h and w_hh are required", fn);
    if (!ff_dtype_is_float(x_proj->dtype))
        return ff_error(FF_ERR_INVALID, "%s: x_proj must be floating point, got %s", fn, ff_dtype_name(x_proj->dtype));
    if (x_proj->layout.ndim != 2 || w_hh->layout.ndim != 2 || h->layout.ndim != 2)
        return ff_error(FF_ERR_INVALID, "%s: x_proj [B, G H], h [B, P] and w_hh [G H, P] must be 2-d, got ranks %d, "
                        "%d, %d", fn, x_proj->layout.ndim, h->layout.ndim, w_hh->layout.ndim);
    int g = ff_rnn_gates(mode);
    int64_t bsz = x_proj->layout.shape[0], gh = x_proj->layout.shape[1];
    if (gh % g)
        return ff_error(FF_ERR_INVALID, "%s: x_proj %s: its last dim must be %d x hidden", fn,
                        ff_shape_str(2, x_proj->layout.shape, b, sizeof b), g);
    int64_t hid = gh / g, p = h->layout.shape[1];
    *hid_out = hid;
    /* only an LSTM with proj_size has a recurrent state narrower than its cell */
    if (mode != FF_RNN_LSTM && p != hid)
        return ff_error(FF_ERR_INVALID, "%s: h %s must be [%lld, %lld] for x_proj %s", fn,
                        ff_shape_str(2, h->layout.shape, b, sizeof b), (long long)bsz, (long long)hid,
                        ff_shape_str(2, x_proj->layout.shape, (char[160]){0}, 160));
    if (check_2d(h, "h", bsz, p, x_proj->dtype, fn) || check_2d(w_hh, "w_hh", gh, p, x_proj->dtype, fn))
        return FF_ERR_INVALID;
    if (b_hh) {
        if (b_hh->layout.ndim != 1 || b_hh->layout.shape[0] != gh)
            return ff_error(FF_ERR_INVALID, "%s: b_hh must be [%lld], got %s", fn, (long long)gh,
                            ff_shape_str(b_hh->layout.ndim, b_hh->layout.shape, b, sizeof b));
        if (b_hh->dtype != x_proj->dtype)
            return ff_error(FF_ERR_INVALID, "%s: b_hh is %s but x_proj is %s", fn, ff_dtype_name(b_hh->dtype),
                            ff_dtype_name(x_proj->dtype));
    }
    if (mode == FF_RNN_LSTM) {
        if (check_2d(c, "c", bsz, hid, x_proj->dtype, fn)) return FF_ERR_INVALID;
    } else if (c) {
        return ff_error(FF_ERR_INVALID, "%s: c is only for the LSTM cell", fn);
    }
    const ff_tensor *all[5] = {x_proj, h, w_hh, c ? c : x_proj, b_hh ? b_hh : x_proj};
    return ff_common_backend(5, all, fn) ? FF_OK : FF_ERR_INVALID;
}

/* ---- a step's math, shared with ops/rnn_layer.c ---------------------------------- */

void ff_rnn_step_grads_free(ff_rnn_step_grads *g)
{
    ff_tensor_release(g->dx), ff_tensor_release(g->dgh), ff_tensor_release(g->dh_direct), ff_tensor_release(g->dc);
    *g = (ff_rnn_step_grads){0};
}

static ff_status lstm_grads(ff_expr *e, int64_t hid, const ff_tensor *act, const ff_tensor *c, const ff_tensor *gh,
                            const ff_tensor *gc, ff_rnn_step_grads *out)
{
    ff_tensor *i = FF_EX(e, gates(act, 0, 1, hid)), *f = FF_EX(e, gates(act, 1, 1, hid));
    ff_tensor *gg = FF_EX(e, gates(act, 2, 1, hid)), *o = FF_EX(e, gates(act, 3, 1, hid));
    ff_tensor *tc = FF_EX(e, gates(act, 4, 1, hid));
    /* dc' in full = gc + gh o (1 - tanh(c')^2) */
    ff_tensor *dc = FF_EX(e, ff_mul(FF_EX(e, ff_mul(gh, o)), dtanh(e, tc)));
    if (gc) dc = FF_EX(e, ff_add(dc, gc));
    ff_tensor *da[4];
    da[0] = FF_EX(e, ff_mul(FF_EX(e, ff_mul(dc, gg)), dsigmoid(e, i)));
    da[1] = FF_EX(e, ff_mul(FF_EX(e, ff_mul(dc, c)), dsigmoid(e, f)));
    da[2] = FF_EX(e, ff_mul(FF_EX(e, ff_mul(dc, i)), dtanh(e, gg)));
    da[3] = FF_EX(e, ff_mul(FF_EX(e, ff_mul(gh, tc)), dsigmoid(e, o)));
    if (e->failed) return ff_last_status();
    out->dx = ff_concat(4, da, 1);
    out->dgh = out->dx ? ff_tensor_retain(out->dx) : NULL;
    out->dc = out->dx ? ff_mul(dc, f) : NULL;
    return out->dc ? FF_OK : ff_last_status();
}

static ff_status gru_grads(ff_expr *e, int64_t hid, const ff_tensor *act, const ff_tensor *h, const ff_tensor *g,
                           ff_rnn_step_grads *out)
{
    ff_tensor *r = FF_EX(e, gates(act, 0, 1, hid)), *z = FF_EX(e, gates(act, 1, 1, hid));
    ff_tensor *nn = FF_EX(e, gates(act, 2, 1, hid)), *hn = FF_EX(e, gates(act, 3, 1, hid));
    /* h' = n + z (h - n) */
    ff_tensor *dz = FF_EX(e, ff_mul(g, FF_EX(e, ff_sub(h, nn))));
    ff_tensor *dn = FF_EX(e, ff_mul(g, FF_EX(e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, z))));
    ff_tensor *dan = FF_EX(e, ff_mul(dn, dtanh(e, nn)));
    ff_tensor *dar = FF_EX(e, ff_mul(FF_EX(e, ff_mul(dan, hn)), dsigmoid(e, r)));
    ff_tensor *daz = FF_EX(e, ff_mul(dz, dsigmoid(e, z)));
    ff_tensor *dhn = FF_EX(e, ff_mul(dan, r));
    if (e->failed) return ff_last_status();
    out->dx = ff_concat(3, (ff_tensor *[]){dar, daz, dan}, 1);
    out->dgh = out->dx ? ff_concat(3, (ff_tensor *[]){dar, daz, dhn}, 1) : NULL;
    out->dh_direct = out->dgh ? ff_mul(g, z) : NULL;
    return out->dh_direct ? FF_OK : ff_last_status();
}

ff_status ff_rnn_step_backward(ff_rnn_mode mode, int64_t hid, const ff_tensor *act, const ff_tensor *h,
                               const ff_tensor *c, const ff_tensor *gh, const ff_tensor *gc, ff_rnn_step_grads *out)
{
    *out = (ff_rnn_step_grads){0};
    ff_expr e = {0};
    ff_status st;
    if (mode == FF_RNN_LSTM) {
        st = lstm_grads(&e, hid, act, c, gh, gc, out);
    } else if (mode == FF_RNN_GRU) {
        st = gru_grads(&e, hid, act, h, gh, out);
    } else {
        /* relu: h' >= 0, so sign(h') is its derivative (0 at 0, as PyTorch's threshold_backward) */
        ff_tensor *d = mode == FF_RNN_RELU ? FF_EX(&e, ff_sign(act)) : dtanh(&e, act);
        out->dx = ff_expr_result(&e, FF_EX(&e, ff_mul(gh, d)));
        out->dgh = out->dx ? ff_tensor_retain(out->dx) : NULL;
        st = out->dx ? FF_OK : ff_last_status();
    }
    ff_expr_free(&e);
    if (st) ff_rnn_step_grads_free(out);
    return st;
}

ff_status ff_rnn_step_forward(ff_rnn_mode mode, int64_t hid, const ff_tensor *x_proj, const ff_tensor *h,
                              const ff_tensor *c, const ff_tensor *w_hh, const ff_tensor *b_hh, ff_tensor **h2_out,
                              ff_tensor **c2_out, ff_tensor **act_out)
{
    bool prev = ff_set_grad_enabled(false);
    ff_expr e = {0};
    ff_tensor *ghh = FF_EX(&e, ff_matmul(h, FF_EX(&e, ff_mT(w_hh))));
    if (b_hh) ghh = FF_EX(&e, ff_add(ghh, b_hh));
    ff_tensor *h2 = NULL, *c2 = NULL, *act = NULL;
    if (mode == FF_RNN_LSTM) {
        ff_tensor *a = FF_EX(&e, ff_add(x_proj, ghh));
        ff_tensor *if_ = FF_EX(&e, ff_sigmoid(FF_EX(&e, gates(a, 0, 2, hid))));
        ff_tensor *gg = FF_EX(&e, ff_tanh(FF_EX(&e, gates(a, 2, 1, hid))));
        ff_tensor *o = FF_EX(&e, ff_sigmoid(FF_EX(&e, gates(a, 3, 1, hid))));
        ff_tensor *i = FF_EX(&e, gates(if_, 0, 1, hid)), *fg = FF_EX(&e, gates(if_, 1, 1, hid));
        c2 = FF_EX(&e, ff_add(FF_EX(&e, ff_mul(fg, c)), FF_EX(&e, ff_mul(i, gg))));
        ff_tensor *tc = FF_EX(&e, ff_tanh(c2));
        h2 = FF_EX(&e, ff_mul(o, tc));
        if (!e.failed) act = FF_EX(&e, ff_concat(4, (ff_tensor *[]){if_, gg, o, tc}, 1));
    } else if (mode == FF_RNN_GRU) {
        ff_tensor *rz = FF_EX(&e, ff_sigmoid(FF_EX(&e, ff_add(FF_EX(&e, gates(x_proj, 0, 2, hid)),
                                                                FF_EX(&e, gates(ghh, 0, 2, hid))))));
        ff_tensor *hn = FF_EX(&e, gates(ghh, 2, 1, hid));
        ff_tensor *r = FF_EX(&e, gates(rz, 0, 1, hid)), *z = FF_EX(&e, gates(rz, 1, 1, hid));
        ff_tensor *nn = FF_EX(&e, ff_tanh(FF_EX(&e, ff_add(FF_EX(&e, gates(x_proj, 2, 1, hid)),
                                                             FF_EX(&e, ff_mul(r, hn))))));
        /* (1 - z) n + z h as n + z (h - n): one op fewer */
        h2 = FF_EX(&e, ff_add(nn, FF_EX(&e, ff_mul(z, FF_EX(&e, ff_sub(h, nn))))));
        if (!e.failed) act = FF_EX(&e, ff_concat(3, (ff_tensor *[]){rz, nn, hn}, 1));
    } else {
        ff_tensor *a = FF_EX(&e, ff_add(x_proj, ghh));
        h2 = act = FF_EX(&e, mode == FF_RNN_RELU ? ff_relu(a) : ff_tanh(a));
    }
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    if (!st) {
        *h2_out = ff_tensor_retain(h2), *act_out = ff_tensor_retain(act);
        *c2_out = c2 ? ff_tensor_retain(c2) : NULL;
    }
    ff_expr_free(&e);
    ff_set_grad_enabled(prev);
    return st;
}

ff_node *ff_rnn_record(ff_tensor *out, const char *name, ff_backward_fn bw, int n, const ff_tensor *const *in)
{
    int first = n < FF_NODE_MAX_INPUTS ? n : FF_NODE_MAX_INPUTS;
    ff_node *node = ff_autograd_record(out, name, bw, first, in);
    if (!node || n == first) return node;
    return ff_node_add_extra(node, n - first, in + first) ? NULL : node;
}

/* ---- the cell op ------------------------------------------------------------------ */
/* Node inputs: [0] x_proj, [1] h, [2] w_hh, [3] c or b_hh, extra[0] b_hh when [3] is c.
 * ip[0] mode, ip[1] hidden, ip[2] 1 + input index of c (0: none), ip[3] same for b_hh.
 * Saved: [0] act, [1] h, [2] w_hh, [3] c (LSTM). The operands are saved too, not only
 * read from the inputs, so that an in-place change to one before backward is reported
 * instead of giving wrong gradients. */

static const ff_tensor *node_input(const ff_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : n->extra[i - n->n_inputs];
}

static ff_status rnn_cell_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    if (ff_grad_enabled())
        return ff_error(FF_ERR_UNSUPPORTED, "%s: create_graph (second derivatives) through a recurrent cell is not "
                        "supported: its backward uses saved gate activations", n->name);
    ff_rnn_mode mode = (ff_rnn_mode)n->ip[0];
    int64_t hid = n->ip[1];
    int ic = (int)n->ip[2] - 1, ib = (int)n->ip[3] - 1;
    const ff_tensor *act = ff_node_saved(n, 0), *h = act ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *w = h ? ff_node_saved(n, 2) : NULL, *c = w && ic >= 0 ? ff_node_saved(n, 3) : NULL;
    if (!w || (ic >= 0 && !c)) return ff_last_status();
    ff_expr e = {0};
    const ff_tensor *gh = g, *gc = NULL;
    if (mode == FF_RNN_LSTM) gh = FF_EX(&e, gates(g, 0, 1, hid)), gc = FF_EX(&e, gates(g, 1, 1, hid));
    ff_rnn_step_grads sg = {0};
    ff_status st = e.failed ? ff_last_status() : ff_rnn_step_backward(mode, hid, act, h, c, gh, gc, &sg);
    if (!st) {
        if (n->needs_grad[0]) gi[0] = ff_tensor_retain(sg.dx);
        if (ic >= 0 && node_input(n, ic)->requires_grad) gi[ic] = ff_tensor_retain(sg.dc);
        if (n->needs_grad[1]) {
            ff_tensor *dh = FF_EX(&e, ff_matmul(sg.dgh, w));
            if (sg.dh_direct) dh = FF_EX(&e, ff_add(dh, sg.dh_direct));
            gi[1] = ff_expr_result(&e, dh);
        }
        if (n->needs_grad[2]) gi[2] = ff_expr_result(&e, FF_EX(&e, ff_matmul(FF_EX(&e, ff_mT(sg.dgh)), h)));
        if (ib >= 0 && node_input(n, ib)->requires_grad) {
            int axis0 = 0;
            gi[ib] = ff_expr_result(&e, FF_EX(&e, ff_sum(sg.dgh, 1, &axis0, false)));
        }
        if (e.failed) st = ff_last_status();
    }
    ff_rnn_step_grads_free(&sg);
    ff_expr_free(&e);
    return st;
}

ff_status ff_rnn_cell(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                      const ff_tensor *w_hh, const ff_tensor *b_hh, ff_tensor **h_out, ff_tensor **c_out)
{
    static const char fn[] = "ff_rnn_cell";
    if (!h_out || (mode == FF_RNN_LSTM && !c_out))
        return ff_error(FF_ERR_INVALID, "%s: h_out%s is NULL", fn, mode == FF_RNN_LSTM ? " or c_out" : "");
    ff_tensor *ac[5]; /* autocast: a matmul-like op, so the low-precision rule */
    int nac = ff_autocast_operands(FF_AUTOCAST_LOW, 5, (const ff_tensor *[]){x_proj, h, c, w_hh, b_hh}, ac, fn);
    if (nac) {
        ff_status r = nac > 0 ? ff_rnn_cell(mode, ac[0], ac[1], ac[2], ac[3], ac[4], h_out, c_out) : ff_last_status();
        ff_autocast_release(nac, ac);
        return r;
    }
    int64_t hid = 0;
    if (ff_rnn_check_step(mode, x_proj, h, c, w_hh, b_hh, &hid, fn)) return FF_ERR_INVALID;
    ff_tensor *h2 = NULL, *c2 = NULL, *act = NULL, *out = NULL;
    ff_status st = ff_rnn_step_forward(mode, hid, x_proj, h, c, w_hh, b_hh, &h2, &c2, &act);
    if (!st && c2) { /* the LSTM's h' and c' packed as [B, 2 H]: its one node has one output */
        bool prev = ff_set_grad_enabled(false);
        out = ff_concat(2, (ff_tensor *[]){h2, c2}, 1);
        ff_set_grad_enabled(prev);
        st = out ? FF_OK : ff_last_status();
    } else if (!st) {
        out = ff_tensor_retain(h2);
    }
    ff_tensor_release(h2), ff_tensor_release(c2);
    const ff_tensor *in[5] = {x_proj, h, w_hh};
    int n = 3, ic = 0, ib = 0;
    if (c) in[n++] = c, ic = n;
    if (b_hh) in[n++] = b_hh, ib = n;
    if (!st && ff_autograd_needed(n, in)) {
        ff_node *node = ff_rnn_record(out, mode_name(mode), rnn_cell_backward, n, in);
        if (node) {
            node->ip[0] = mode, node->ip[1] = hid, node->ip[2] = ic, node->ip[3] = ib, node->nip = 4;
            const ff_tensor *save[4] = {act, h, w_hh, c};
            for (int i = 0; i < (c ? 4 : 3) && !st; i++) st = ff_node_save(node, save[i]);
        } else {
            st = ff_last_status();
        }
    }
    ff_tensor_release(act);
    ff_tensor *ho = NULL, *co = NULL;
    if (!st && mode == FF_RNN_LSTM) { /* tracked views: their gradients meet in the one node */
        ho = gates(out, 0, 1, hid);
        co = ho ? gates(out, 1, 1, hid) : NULL;
        if (!co) st = ff_last_status();
    } else if (!st) {
        ho = ff_tensor_retain(out);
    }
    ff_tensor_release(out);
    if (st) {
        ff_tensor_release(ho);
        ff_error_prefix(fn);
        return st;
    }
    *h_out = ho;
    if (c_out) *c_out = co;
    return FF_OK;
}
