/* The lstm_step workload (bench_lstm.c). */
#ifndef FF_BENCH_LSTM_H
#define FF_BENCH_LSTM_H

#include <stdbool.h>

#include "ff/ff.h"

#define BENCH_LSTM_LAYERS 2

typedef struct bench_lstm {
    ff_tensor *x;                        /* [seq * batch, input] */
    ff_tensor *w[BENCH_LSTM_LAYERS][4];  /* w_ih, w_hh, b_ih, b_hh per layer, requiring grad */
    int64_t seq, batch, hidden;
    bool cells; /* the time loop as ff_rnn_cell per step (else ff_rnn_layer) */
} bench_lstm;

int bench_lstm_setup(bench_lstm *s, int64_t seq, int64_t batch, int64_t input, int64_t hidden, bool cells);
void bench_lstm_free(bench_lstm *s);
/* forward, sum, backward, zero_grad: 0, or -1 with a message on stderr */
int bench_lstm_step(void *v);

#endif
