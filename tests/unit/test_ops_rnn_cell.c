/* ff_rnn_cell (ops/rnn_cell.c): the LSTM step against a loop written from the formulas,
 * the hand-written backward of every mode against central differences (ff_gradcheck,
 * f64; the LSTM's h' and c' both checked), and the errors for bad operands. */
#include <math.h>

#include "ff_test.h"

enum { B = 3, H = 4, P = 2 };

typedef struct cell_case {
    ff_rnn_mode mode;
    bool bias;
} cell_case;

static int gates(ff_rnn_mode m) { return m == FF_RNN_LSTM ? 4 : m == FF_RNN_GRU ? 3 : 1; }

/* inputs: x_proj, h, w_hh, [c], [b_hh]; the LSTM's two outputs side by side */
static ff_tensor *f_cell(int n, ff_tensor *const *in, void *user)
{
    const cell_case *k = user;
    int i = 3;
    const ff_tensor *c = k->mode == FF_RNN_LSTM ? in[i++] : NULL;
    const ff_tensor *b = k->bias ? in[i++] : NULL;
    (void)n;
    ff_tensor *h2 = NULL, *c2 = NULL;
    if (ff_rnn_cell(k->mode, in[0], in[1], c, in[2], b, &h2, &c2)) return NULL;
    if (!c2) return h2;
    ff_tensor *r = ff_concat(2, (ff_tensor *[]){h2, c2}, 1);
    RELEASE(h2, c2);
    return r;
}

static void check_gradients(void)
{
    static const cell_case cases[] = {{FF_RNN_TANH, true}, {FF_RNN_RELU, true}, {FF_RNN_LSTM, true},
                                      {FF_RNN_LSTM, false}, {FF_RNN_GRU, true}, {FF_RNN_GRU, false}};
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    for (int t = 0; t < 6; t++) {
        const cell_case *k = &cases[t];
        int64_t g = gates(k->mode) * H;
        uint64_t s = 10 * (uint64_t)t;
        ff_tensor *in[5] = {ff_rand_normal(2, SHAPE(B, g), FF_F64, 0, 1, s + 1),
                            ff_rand_normal(2, SHAPE(B, H), FF_F64, 0, 1, s + 2),
                            ff_rand_normal(2, SHAPE(g, H), FF_F64, 0, 0.5, s + 3), NULL, NULL};
        int n = 3;
        if (k->mode == FF_RNN_LSTM) in[n++] = ff_rand_normal(2, SHAPE(B, H), FF_F64, 0, 1, s + 4);
        if (k->bias) in[n++] = ff_rand_normal(1, SHAPE(g), FF_F64, 0, 1, s + 5);
        CHECK(ff_gradcheck(f_cell, (void *)k, n, in, &o) == FF_OK);
        for (int i = 0; i < n; i++) ff_tensor_release(in[i]);
    }
}

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* The LSTM step from its definition, with a projected state (h [B, P], w_hh [4 H, P]). */
static void check_lstm_values(void)
{
    double xp[B * 4 * H], h[B * P], c[B * H], w[4 * H * P], b[4 * H];
    for (int i = 0; i < B * 4 * H; i++) xp[i] = sin(0.3 * i);
    for (int i = 0; i < B * P; i++) h[i] = cos(0.7 * i);
    for (int i = 0; i < B * H; i++) c[i] = sin(1.1 * i + 0.5);
    for (int i = 0; i < 4 * H * P; i++) w[i] = 0.5 * cos(0.9 * i + 1);
    for (int i = 0; i < 4 * H; i++) b[i] = 0.1 * i - 0.4;
    ff_tensor *txp = ff_from_data(xp, 2, SHAPE(B, 4 * H), FF_F64), *th = ff_from_data(h, 2, SHAPE(B, P), FF_F64);
    ff_tensor *tc = ff_from_data(c, 2, SHAPE(B, H), FF_F64), *tw = ff_from_data(w, 2, SHAPE(4 * H, P), FF_F64);
    ff_tensor *tb = ff_from_data(b, 1, SHAPE(4 * H), FF_F64), *h2 = NULL, *c2 = NULL;
    CHECK(ff_rnn_cell(FF_RNN_LSTM, txp, th, tc, tw, tb, &h2, &c2) == FF_OK);
    double gh[B * H], gc[B * H], worst = 0;
    CHECK(h2 && c2 && ff_test_values(h2, gh, B * H) == 0 && ff_test_values(c2, gc, B * H) == 0);
    for (int r = 0; r < B; r++)
        for (int j = 0; j < H; j++) {
            double a[4];
            for (int q = 0; q < 4; q++) {
                int row = q * H + j;
                a[q] = xp[r * 4 * H + row] + b[row];
                for (int p = 0; p < P; p++) a[q] += h[r * P + p] * w[row * P + p];
            }
            double cn = sig(a[1]) * c[r * H + j] + sig(a[0]) * tanh(a[2]);
            double hn = sig(a[3]) * tanh(cn);
            worst = fmax(worst, fmax(fabs(cn - gc[r * H + j]), fabs(hn - gh[r * H + j])));
        }
    CHECK(worst < 1e-12);
    RELEASE(txp, th, tc, tw, tb, h2, c2);
}

static void check_errors(void)
{
    ff_tensor *xp = ff_zeros(2, SHAPE(B, 3 * H), FF_F32), *h = ff_zeros(2, SHAPE(B, H), FF_F32);
    ff_tensor *w = ff_zeros(2, SHAPE(3 * H, H), FF_F32), *w64 = ff_zeros(2, SHAPE(3 * H, H), FF_F64);
    ff_tensor *hbad = ff_zeros(2, SHAPE(B + 1, H), FF_F32), *b = ff_zeros(1, SHAPE(H), FF_F32), *out = NULL, *co = NULL;
    CHECK_ERROR(ff_rnn_cell(FF_RNN_GRU, xp, hbad, NULL, w, NULL, &out, NULL), FF_ERR_INVALID,
                "ff_rnn_cell: h must be [3, 4], got [4, 4]");
    CHECK_ERROR(ff_rnn_cell(FF_RNN_GRU, xp, h, NULL, w64, NULL, &out, NULL), FF_ERR_INVALID,
                "ff_rnn_cell: w_hh is f64 but x_proj is f32");
    CHECK_ERROR(ff_rnn_cell(FF_RNN_GRU, xp, h, NULL, w, b, &out, NULL), FF_ERR_INVALID,
                "ff_rnn_cell: b_hh must be [12], got [4]");
    ff_tensor *xp10 = ff_zeros(2, SHAPE(B, 10), FF_F32);
    CHECK_ERROR(ff_rnn_cell(FF_RNN_LSTM, xp10, h, h, w, NULL, &out, &co), FF_ERR_INVALID,
                "ff_rnn_cell: x_proj [3, 10]: its last dim must be 4 x hidden");
    CHECK_ERROR(ff_rnn_cell(FF_RNN_LSTM, xp, h, h, w, NULL, &out, &co), FF_ERR_INVALID,
                "ff_rnn_cell: c must be [3, 3], got [3, 4]");
    CHECK_ERROR(ff_rnn_cell(FF_RNN_GRU, xp, h, h, w, NULL, &out, NULL), FF_ERR_INVALID,
                "ff_rnn_cell: c is only for the LSTM cell");
    CHECK(out == NULL && co == NULL);
    RELEASE(xp, xp10, h, w, w64, hbad, b);
}

FF_TEST_MAIN("ops_rnn_cell", TEST(check_gradients), TEST(check_lstm_values), TEST(check_errors))
