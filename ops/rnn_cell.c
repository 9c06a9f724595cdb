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

static int gate_count(ff_rnn_mode mode)
{
    return mode == FF_RNN_LSTM ? 4 : mode == FF_RNN_GRU ? 3 : 1;
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

static ff_status check_operands(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
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
    int g = gate_count(mode);
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

/* ---- backward -------------------------------------------------------------------- */
/* Node inputs: [0] x_proj, [1] h, [2] w_hh, [3] c or b_hh, extra[0] b_hh when [3] is c.
 * ip[0] mode, ip[1] hidden, ip[2] 1 + input index of c (0: none), ip[3] same for b_hh.
 * Saved: [0] the activations, packed in one tensor so the node's four slots suffice
 * (LSTM [i, f, g, o, tanh(c')]; GRU [r, z, n, h W_hn^T + b_hn]; RNN h'), [1] h, [2] w_hh,
 * [3] c (LSTM). The operands are saved too, not only read from the inputs, so that an
 * in-place change to one before backward is reported instead of giving wrong gradients. */

static const ff_tensor *node_input(const ff_node *n, int i)
{
    return i < n->n_inputs ? n->inputs[i] : n->extra[i - n->n_inputs];
}

/* From the gradient of the pre-activation gates' recurrent part (da_h, [B, G H]): the
 * gradients of h (+ dh_direct), w_hh and b_hh. */
static void recurrent_grads(ff_expr *e, ff_node *n, const ff_tensor *h, const ff_tensor *w, const ff_tensor *da_h,
                            const ff_tensor *dh_direct, ff_tensor **gi)
{
    if (n->needs_grad[1]) {
        ff_tensor *dh = FF_EX(e, ff_matmul(da_h, w));
        if (dh_direct) dh = FF_EX(e, ff_add(dh, dh_direct));
        gi[1] = ff_expr_result(e, dh);
    }
    if (n->needs_grad[2]) gi[2] = ff_expr_result(e, FF_EX(e, ff_matmul(FF_EX(e, ff_mT(da_h)), h)));
    int ib = (int)n->ip[3] - 1;
    if (ib >= 0 && node_input(n, ib)->requires_grad) {
        int axis0 = 0;
        gi[ib] = ff_expr_result(e, FF_EX(e, ff_sum(da_h, 1, &axis0, false)));
    }
}

static ff_status lstm_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, int64_t hid)
{
    const ff_tensor *act = ff_node_saved(n, 0), *h = act ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *w = h ? ff_node_saved(n, 2) : NULL, *c = w ? ff_node_saved(n, 3) : NULL;
    if (!c) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *tc = FF_EX(&e, gates(act, 4, 1, hid));
    ff_tensor *gh = FF_EX(&e, gates(g, 0, 1, hid)), *gc = FF_EX(&e, gates(g, 1, 1, hid));
    ff_tensor *i = FF_EX(&e, gates(act, 0, 1, hid)), *f = FF_EX(&e, gates(act, 1, 1, hid));
    ff_tensor *gg = FF_EX(&e, gates(act, 2, 1, hid)), *o = FF_EX(&e, gates(act, 3, 1, hid));
    /* dc = gc + gh o (1 - tanh(c')^2) */
    ff_tensor *dc = FF_EX(&e, ff_add(gc, FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(gh, o)), dtanh(&e, tc)))));
    ff_tensor *da[4];
    da[0] = FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(dc, gg)), dsigmoid(&e, i)));
    da[1] = FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(dc, c)), dsigmoid(&e, f)));
    da[2] = FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(dc, i)), dtanh(&e, gg)));
    da[3] = FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(gh, tc)), dsigmoid(&e, o)));
    ff_tensor *dall = e.failed ? NULL : FF_EX(&e, ff_concat(4, da, 1));
    ff_expr e2 = {0}; /* the first arena is nearly full */
    if (!e.failed) {
        if (n->needs_grad[0]) gi[0] = ff_tensor_retain(dall);
        int ic = (int)n->ip[2] - 1;
        if (node_input(n, ic)->requires_grad) gi[ic] = ff_expr_result(&e2, FF_EX(&e2, ff_mul(dc, f)));
        recurrent_grads(&e2, n, h, w, dall, NULL, gi);
    }
    ff_status st = e.failed || e2.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    ff_expr_free(&e2);
    return st;
}

static ff_status gru_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, int64_t hid)
{
    const ff_tensor *act = ff_node_saved(n, 0), *h = act ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *w = h ? ff_node_saved(n, 2) : NULL;
    if (!w) return ff_last_status();
    ff_expr e = {0};
    ff_tensor *r = FF_EX(&e, gates(act, 0, 1, hid)), *z = FF_EX(&e, gates(act, 1, 1, hid));
    ff_tensor *nn = FF_EX(&e, gates(act, 2, 1, hid)), *hn = FF_EX(&e, gates(act, 3, 1, hid));
    /* h' = n + z (h - n) */
    ff_tensor *dz = FF_EX(&e, ff_mul(g, FF_EX(&e, ff_sub(h, nn))));
    ff_tensor *dn = FF_EX(&e, ff_mul(g, FF_EX(&e, ff_rbinary_scalar(FF_BINARY_SUB, 1.0, z))));
    ff_tensor *dan = FF_EX(&e, ff_mul(dn, dtanh(&e, nn)));
    ff_tensor *dar = FF_EX(&e, ff_mul(FF_EX(&e, ff_mul(dan, hn)), dsigmoid(&e, r)));
    ff_tensor *daz = FF_EX(&e, ff_mul(dz, dsigmoid(&e, z)));
    ff_tensor *dhn = FF_EX(&e, ff_mul(dan, r));
    ff_tensor *dh_direct = n->needs_grad[1] ? FF_EX(&e, ff_mul(g, z)) : NULL;
    ff_tensor *dx = NULL, *dgh = NULL;
    if (!e.failed && n->needs_grad[0]) dx = FF_EX(&e, ff_concat(3, (ff_tensor *[]){dar, daz, dan}, 1));
    if (!e.failed) dgh = FF_EX(&e, ff_concat(3, (ff_tensor *[]){dar, daz, dhn}, 1));
    ff_expr e2 = {0};
    if (!e.failed) {
        if (dx) gi[0] = ff_tensor_retain(dx);
        recurrent_grads(&e2, n, h, w, dgh, dh_direct, gi);
    }
    ff_status st = e.failed || e2.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    ff_expr_free(&e2);
    return st;
}

static ff_status rnn_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi, bool relu)
{
    const ff_tensor *y = ff_node_saved(n, 0), *h = y ? ff_node_saved(n, 1) : NULL;
    const ff_tensor *w = h ? ff_node_saved(n, 2) : NULL;
    if (!w) return ff_last_status();
    ff_expr e = {0};
    /* relu: y >= 0, so sign(y) is its derivative (0 at 0, as PyTorch's threshold_backward) */
    ff_tensor *d = relu ? FF_EX(&e, ff_sign(y)) : dtanh(&e, y);
    ff_tensor *da = FF_EX(&e, ff_mul(g, d));
    if (!e.failed && n->needs_grad[0]) gi[0] = ff_tensor_retain(da);
    if (!e.failed) recurrent_grads(&e, n, h, w, da, NULL, gi);
    ff_status st = e.failed ? ff_last_status() : FF_OK;
    ff_expr_free(&e);
    return st;
}

static ff_status rnn_cell_backward(ff_node *n, const ff_tensor *g, ff_tensor **gi)
{
    if (ff_grad_enabled())
        return ff_error(FF_ERR_UNSUPPORTED, "%s: create_graph (second derivatives) through a recurrent cell is not "
                        "supported: its backward uses saved gate activations", n->name);
    ff_rnn_mode mode = (ff_rnn_mode)n->ip[0];
    int64_t hid = n->ip[1];
    if (mode == FF_RNN_LSTM) return lstm_backward(n, g, gi, hid);
    if (mode == FF_RNN_GRU) return gru_backward(n, g, gi, hid);
    return rnn_backward(n, g, gi, mode == FF_RNN_RELU);
}

/* ---- forward --------------------------------------------------------------------- */

typedef struct cell_fwd {
    ff_tensor *out; /* h' ([B, H]) or, for the LSTM, h' and c' packed as [B, 2 H] */
    ff_tensor *act; /* the activations the backward needs (see above) */
} cell_fwd;

/* Runs the step without recording (grad mode off); fills f or returns an error. */
static ff_status cell_forward(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                              const ff_tensor *w_hh, const ff_tensor *b_hh, int64_t hid, cell_fwd *f)
{
    ff_expr e = {0};
    ff_tensor *ghh = FF_EX(&e, ff_matmul(h, FF_EX(&e, ff_mT(w_hh))));
    if (b_hh) ghh = FF_EX(&e, ff_add(ghh, b_hh));
    ff_tensor *out = NULL;
    if (mode == FF_RNN_LSTM) {
        ff_tensor *a = FF_EX(&e, ff_add(x_proj, ghh));
        ff_tensor *if_ = FF_EX(&e, ff_sigmoid(FF_EX(&e, gates(a, 0, 2, hid))));
        ff_tensor *gg = FF_EX(&e, ff_tanh(FF_EX(&e, gates(a, 2, 1, hid))));
        ff_tensor *o = FF_EX(&e, ff_sigmoid(FF_EX(&e, gates(a, 3, 1, hid))));
        ff_tensor *i = FF_EX(&e, gates(if_, 0, 1, hid)), *fg = FF_EX(&e, gates(if_, 1, 1, hid));
        ff_tensor *c2 = FF_EX(&e, ff_add(FF_EX(&e, ff_mul(fg, c)), FF_EX(&e, ff_mul(i, gg))));
        ff_tensor *tc = FF_EX(&e, ff_tanh(c2));
        ff_tensor *h2 = FF_EX(&e, ff_mul(o, tc));
        if (!e.failed) out = FF_EX(&e, ff_concat(2, (ff_tensor *[]){h2, c2}, 1));
        if (!e.failed) f->act = ff_concat(4, (ff_tensor *[]){if_, gg, o, tc}, 1);
    } else if (mode == FF_RNN_GRU) {
        ff_tensor *rz = FF_EX(&e, ff_sigmoid(FF_EX(&e, ff_add(FF_EX(&e, gates(x_proj, 0, 2, hid)),
                                                                FF_EX(&e, gates(ghh, 0, 2, hid))))));
        ff_tensor *hn = FF_EX(&e, gates(ghh, 2, 1, hid));
        ff_tensor *r = FF_EX(&e, gates(rz, 0, 1, hid)), *z = FF_EX(&e, gates(rz, 1, 1, hid));
        ff_tensor *nn = FF_EX(&e, ff_tanh(FF_EX(&e, ff_add(FF_EX(&e, gates(x_proj, 2, 1, hid)),
                                                             FF_EX(&e, ff_mul(r, hn))))));
        /* (1 - z) n + z h as n + z (h - n): one op fewer */
        out = FF_EX(&e, ff_add(nn, FF_EX(&e, ff_mul(z, FF_EX(&e, ff_sub(h, nn))))));
        if (!e.failed) f->act = ff_concat(3, (ff_tensor *[]){rz, nn, hn}, 1);
    } else {
        ff_tensor *a = FF_EX(&e, ff_add(x_proj, ghh));
        out = FF_EX(&e, mode == FF_RNN_RELU ? ff_relu(a) : ff_tanh(a));
        if (!e.failed) f->act = ff_tensor_retain(out);
    }
    f->out = f->act ? ff_expr_result(&e, out) : NULL;
    ff_status st = f->out ? FF_OK : ff_last_status();
    ff_expr_free(&e);
    return st;
}

static ff_status record(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                        const ff_tensor *w_hh, const ff_tensor *b_hh, int64_t hid, cell_fwd *f)
{
    const ff_tensor *in[5] = {x_proj, h, w_hh};
    int n = 3, ic = 0, ib = 0;
    if (c) in[n++] = c, ic = n;
    if (b_hh) in[n++] = b_hh, ib = n;
    if (!ff_autograd_needed(n, in)) return FF_OK;
    int first = n < FF_NODE_MAX_INPUTS ? n : FF_NODE_MAX_INPUTS;
    ff_node *node = ff_autograd_record(f->out, mode_name(mode), rnn_cell_backward, first, in);
    if (!node) return ff_last_status();
    node->ip[0] = mode, node->ip[1] = hid, node->ip[2] = ic, node->ip[3] = ib, node->nip = 4;
    if (n > first) { /* b_hh of an LSTM: the fifth input (the engine frees extra) */
        node->extra = calloc(1, sizeof *node->extra);
        if (!node->extra) return ff_error(FF_ERR_OOM, "ff_rnn_cell: out of memory recording its inputs");
        node->extra[node->n_extra++] = ff_tensor_retain((ff_tensor *)in[4]);
    }
    const ff_tensor *save[4] = {f->act, h, w_hh, c};
    for (int i = 0; i < (c ? 4 : 3); i++)
        if (ff_node_save(node, save[i])) return ff_last_status();
    return FF_OK;
}

ff_status ff_rnn_cell(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                      const ff_tensor *w_hh, const ff_tensor *b_hh, ff_tensor **h_out, ff_tensor **c_out)
{
    static const char fn[] = "ff_rnn_cell";
    if (!h_out || (mode == FF_RNN_LSTM && !c_out))
        return ff_error(FF_ERR_INVALID, "%s: h_out%s is NULL", fn, mode == FF_RNN_LSTM ? " or c_out" : "");
    int64_t hid = 0;
    if (check_operands(mode, x_proj, h, c, w_hh, b_hh, &hid, fn)) return FF_ERR_INVALID;
    cell_fwd f = {0};
    bool prev = ff_set_grad_enabled(false);
    ff_status st = cell_forward(mode, x_proj, h, c, w_hh, b_hh, hid, &f);
    ff_set_grad_enabled(prev);
    if (!st) st = record(mode, x_proj, h, c, w_hh, b_hh, hid, &f);
    ff_tensor_release(f.act);
    ff_tensor *ho = NULL, *co = NULL;
    if (!st && mode == FF_RNN_LSTM) {
        /* tracked views of the packed [B, 2 H]: their gradients meet in the one node */
        ho = gates(f.out, 0, 1, hid);
        co = ho ? gates(f.out, 1, 1, hid) : NULL;
        if (!co) st = ff_last_status();
    } else if (!st) {
        ho = ff_tensor_retain(f.out);
    }
    ff_tensor_release(f.out);
    if (st) {
        ff_tensor_release(ho);
        ff_error_prefix(fn);
        return st;
    }
    *h_out = ho;
    if (c_out) *c_out = co;
    return FF_OK;
}
