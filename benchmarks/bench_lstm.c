/* lstm_step (issue 34): a 2-layer LSTM (input 256, hidden 256) over seq 64 x batch 32,
 * forward, sum, backward, gradients dropped: as nn.LSTM runs it (nn/modules/rnn.py), one
 * input-projection GEMM per layer, then ff_rnn_layer (the time loop as one node).
 * lstm_step_cells runs the loop as ff_rnn_cell per step instead, to compare the two.
 * baselines.py times torch.nn.LSTM on the same shapes. */
#include <stdio.h>

#include "bench_lstm.h"

void bench_lstm_free(bench_lstm *s)
{
    ff_tensor_release(s->x);
    for (int l = 0; l < BENCH_LSTM_LAYERS; l++)
        for (int k = 0; k < 4; k++) ff_tensor_release(s->w[l][k]);
}

int bench_lstm_setup(bench_lstm *s, int64_t seq, int64_t batch, int64_t input, int64_t hidden, bool cells)
{
    *s = (bench_lstm){.seq = seq, .batch = batch, .hidden = hidden, .cells = cells};
    int64_t xs[2] = {seq * batch, input}, g = 4 * hidden;
    s->x = ff_rand_uniform(2, xs, FF_F32, -1, 1, 51);
    for (int l = 0; l < BENCH_LSTM_LAYERS; l++) {
        int64_t in = l ? hidden : input, shapes[4][2] = {{g, in}, {g, hidden}, {g, 0}, {g, 0}};
        for (int k = 0; k < 4; k++) {
            ff_tensor *w = ff_rand_uniform(k < 2 ? 2 : 1, shapes[k], FF_F32, -0.0625, 0.0625, 52 + 4 * l + k);
            if (!w || ff_set_requires_grad(w, true)) {
                ff_tensor_release(w);
                return -1;
            }
            s->w[l][k] = w;
        }
    }
    return s->x ? 0 : -1;
}

/* One layer over x [seq * batch, in]: the outputs [seq * batch, hidden], or NULL. */
static ff_tensor *layer(const bench_lstm *s, const ff_tensor *x, ff_tensor *const *w)
{
    int64_t hs[2] = {s->batch, s->hidden};
    ff_tensor *wt = ff_mT(w[0]), *mm = wt ? ff_matmul(x, wt) : NULL, *xp = mm ? ff_add(mm, w[2]) : NULL;
    ff_tensor *h = ff_zeros(2, hs, FF_F32), *c = ff_zeros(2, hs, FF_F32), *outs[64 * 16] = {NULL}, *r = NULL;
    ff_tensor_release(wt), ff_tensor_release(mm);
    if (!s->cells) {
        int64_t sizes[64 * 16];
        for (int64_t t = 0; t < s->seq; t++) sizes[t] = s->batch;
        ff_tensor *hn = NULL, *cn = NULL;
        if (xp && h && c) ff_rnn_layer(FF_RNN_LSTM, xp, s->seq, sizes, false, h, c, w[1], w[3], &r, &hn, &cn);
        ff_tensor_release(hn), ff_tensor_release(cn);
        ff_tensor_release(xp), ff_tensor_release(h), ff_tensor_release(c);
        return r;
    }
    int64_t t = 0;
    for (; xp && h && c && t < s->seq; t++) {
        ff_tensor *xt = ff_narrow(xp, 0, t * s->batch, s->batch), *h2 = NULL, *c2 = NULL;
        ff_status st = xt ? ff_rnn_cell(FF_RNN_LSTM, xt, h, c, w[1], w[3], &h2, &c2) : ff_last_status();
        ff_tensor_release(xt), ff_tensor_release(h), ff_tensor_release(c);
        h = st ? NULL : h2, c = st ? NULL : c2;
        outs[t] = h ? ff_tensor_retain(h) : NULL;
    }
    if (t == s->seq && h) r = ff_concat((int)s->seq, outs, 0);
    for (int64_t i = 0; i < t; i++) ff_tensor_release(outs[i]);
    ff_tensor_release(xp), ff_tensor_release(h), ff_tensor_release(c);
    return r;
}

int bench_lstm_step(void *v)
{
    bench_lstm *s = v;
    if (s->seq > 64 * 16) return -1;
    ff_tensor *y = ff_tensor_retain(s->x);
    for (int l = 0; l < BENCH_LSTM_LAYERS && y; l++) {
        ff_tensor *next = layer(s, y, s->w[l]);
        ff_tensor_release(y);
        y = next;
    }
    ff_tensor *loss = y ? ff_sum(y, 0, NULL, false) : NULL;
    int rc = loss && !ff_backward(loss, NULL, NULL) ? 0 : -1;
    for (int l = 0; l < BENCH_LSTM_LAYERS; l++)
        for (int k = 0; k < 4; k++) ff_zero_grad(s->w[l][k]);
    ff_tensor_release(loss), ff_tensor_release(y);
    if (rc) fprintf(stderr, "lstm_step: %s\n", ff_last_error());
    return rc;
}
