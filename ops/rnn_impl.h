/* What ops/rnn_cell.c (one step, one node) and ops/rnn_layer.c (a whole sequence, one
 * node) share: a step's math without autograd, forward and backward. */
#ifndef FF_OPS_RNN_IMPL_H
#define FF_OPS_RNN_IMPL_H

#include "ops_impl.h"

/* Gates per hidden unit: 1 (RNN), 4 (LSTM), 3 (GRU). */
int ff_rnn_gates(ff_rnn_mode mode);

/* Checks one step's operands (x_proj [B, G H], h [B, P], c [B, H] for the LSTM only,
 * w_hh [G H, P], b_hh [G H] or NULL; one float dtype and backend); *hid gets H. */
ff_status ff_rnn_check_step(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                            const ff_tensor *w_hh, const ff_tensor *b_hh, int64_t *hid, const char *fn);

/* One step with grad mode off: h', c' (LSTM; else NULL) and act, the activations the
 * backward takes ([B, A H]: LSTM [i, f, g, o, tanh(c')], GRU [r, z, n, h W_hn^T + b_hn],
 * RNN h'). New references. */
ff_status ff_rnn_step_forward(ff_rnn_mode mode, int64_t hid, const ff_tensor *x_proj, const ff_tensor *h,
                              const ff_tensor *c, const ff_tensor *w_hh, const ff_tensor *b_hh, ff_tensor **h2,
                              ff_tensor **c2, ff_tensor **act);
/* Columns the act of a step has, per hidden unit. */
int ff_rnn_act_width(ff_rnn_mode mode);

/* A step's gradients from those of its outputs (gh of h', gc of c' for the LSTM): dx of
 * x_proj; dgh of the recurrent pre-activation h W^T + b (dx itself but for the GRU);
 * dh_direct, the part of h's gradient that skips W (GRU's g z; NULL otherwise); dc of c
 * (LSTM). Then dh = dgh W + dh_direct, dW = dgh^T h, db = sum(dgh). New references. */
typedef struct ff_rnn_step_grads {
    ff_tensor *dx, *dgh, *dh_direct, *dc;
} ff_rnn_step_grads;
ff_status ff_rnn_step_backward(ff_rnn_mode mode, int64_t hid, const ff_tensor *act, const ff_tensor *h,
                               const ff_tensor *c, const ff_tensor *gh, const ff_tensor *gc, ff_rnn_step_grads *out);
void ff_rnn_step_grads_free(ff_rnn_step_grads *g);

/* The inputs of a node past FF_NODE_MAX_INPUTS go to node->extra (the engine frees it). */
ff_node *ff_rnn_record(ff_tensor *out, const char *name, ff_backward_fn bw, int n, const ff_tensor *const *in);

#endif /* FF_OPS_RNN_IMPL_H */
