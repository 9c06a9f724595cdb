/* ff_rnn_cell (ops/rnn_cell.c) and ff_rnn_layer (ops/rnn_layer.c): the LSTM step against
 * a loop written from the formulas, the hand-written backwards of every mode against
 * central differences (ff_gradcheck, f64; every output checked: h', c', h_n, c_n), the
 * layer against the cell in a loop on packed (shrinking) batches, forward and reverse,
 * and the errors for bad operands. */
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

/* ---- ff_rnn_layer ---- */

static const int64_t SIZES[4] = {3, 2, 2, 1}; /* a packed batch: N = 8 rows, B = 3 */

typedef struct layer_case {
    ff_rnn_mode mode;
    bool reverse;
} layer_case;

/* inputs: x_proj [8, G H], h0, w_hh, [c0], b_hh; out, h_n (and c_n) stacked by rows */
static ff_tensor *f_layer(int n, ff_tensor *const *in, void *user)
{
    const layer_case *k = user;
    bool lstm = k->mode == FF_RNN_LSTM;
    (void)n;
    ff_tensor *o = NULL, *h = NULL, *c = NULL;
    if (ff_rnn_layer(k->mode, in[0], 4, SIZES, k->reverse, in[1], lstm ? in[3] : NULL, in[2], in[lstm ? 4 : 3], &o,
                     &h, &c))
        return NULL;
    ff_tensor *r = ff_concat(lstm ? 3 : 2, (ff_tensor *[]){o, h, c}, 0);
    RELEASE(o, h, c);
    return r;
}

static void layer_inputs(ff_rnn_mode mode, uint64_t s, ff_tensor **in, int *n)
{
    int64_t g = gates(mode) * H;
    in[0] = ff_rand_normal(2, SHAPE(8, g), FF_F64, 0, 1, s + 1);
    in[1] = ff_rand_normal(2, SHAPE(B, H), FF_F64, 0, 1, s + 2);
    in[2] = ff_rand_normal(2, SHAPE(g, H), FF_F64, 0, 0.5, s + 3);
    *n = 3;
    if (mode == FF_RNN_LSTM) in[(*n)++] = ff_rand_normal(2, SHAPE(B, H), FF_F64, 0, 1, s + 4);
    in[(*n)++] = ff_rand_normal(1, SHAPE(g), FF_F64, 0, 1, s + 5);
}

static void check_layer_gradients(void)
{
    static const layer_case cases[] = {{FF_RNN_LSTM, false}, {FF_RNN_LSTM, true}, {FF_RNN_GRU, false},
                                       {FF_RNN_GRU, true}, {FF_RNN_TANH, true}, {FF_RNN_RELU, false}};
    ff_gradcheck_opts o = {.eps = 1e-6, .atol = 1e-6, .rtol = 1e-4};
    for (int t = 0; t < 6; t++) {
        ff_tensor *in[5] = {NULL};
        int n;
        layer_inputs(cases[t].mode, 100 + 10 * (uint64_t)t, in, &n);
        CHECK(ff_gradcheck(f_layer, (void *)&cases[t], n, in, &o) == FF_OK);
        for (int i = 0; i < n; i++) ff_tensor_release(in[i]);
    }
}

/* The layer's outputs equal a loop of ff_rnn_cell over the packed steps (forward only). */
static void check_layer_is_cell_loop(void)
{
    ff_tensor *in[5] = {NULL};
    int n;
    layer_inputs(FF_RNN_LSTM, 7, in, &n);
    ff_tensor *o = NULL, *hn = NULL, *cn = NULL;
    CHECK(ff_rnn_layer(FF_RNN_LSTM, in[0], 4, SIZES, false, in[1], in[3], in[2], in[4], &o, &hn, &cn) == FF_OK);
    double got[8 * H], want[8 * H], hn_v[B * H], last[B * H];
    CHECK(o && ff_test_values(o, got, 8 * H) == 0 && ff_test_values(hn, hn_v, B * H) == 0);
    ff_tensor *h = ff_clone(in[1]), *c = ff_clone(in[3]);
    for (int64_t t = 0, off = 0; t < 4; off += SIZES[t], t++) {
        ff_tensor *xt = ff_narrow(in[0], 0, off, SIZES[t]), *hb = ff_narrow(h, 0, 0, SIZES[t]);
        ff_tensor *cb = ff_narrow(c, 0, 0, SIZES[t]), *h2 = NULL, *c2 = NULL;
        CHECK(ff_rnn_cell(FF_RNN_LSTM, xt, hb, cb, in[2], in[4], &h2, &c2) == FF_OK);
        CHECK(h2 && ff_test_values(h2, want + off * H, SIZES[t] * H) == 0);
        CHECK(ff_copy_(hb, h2) == FF_OK && ff_copy_(cb, c2) == FF_OK);
        RELEASE(xt, hb, cb, h2, c2);
    }
    CHECK(ff_test_values(h, last, B * H) == 0);
    double worst = 0;
    for (int i = 0; i < 8 * H; i++) worst = fmax(worst, fabs(got[i] - want[i]));
    for (int i = 0; i < B * H; i++) worst = fmax(worst, fabs(hn_v[i] - last[i]));
    CHECK(worst < 1e-12);
    RELEASE(o, hn, cn, h, c);
    for (int i = 0; i < n; i++) ff_tensor_release(in[i]);
}

static void check_layer_errors(void)
{
    ff_tensor *xp = ff_zeros(2, SHAPE(8, 3 * H), FF_F32), *h = ff_zeros(2, SHAPE(B, H), FF_F32);
    ff_tensor *w = ff_zeros(2, SHAPE(3 * H, H), FF_F32), *o = NULL, *hn = NULL;
    CHECK_ERROR(ff_rnn_layer(FF_RNN_GRU, xp, 4, (int64_t[]){3, 2, 3, 0}, false, h, NULL, w, NULL, &o, &hn, NULL),
                FF_ERR_INVALID, "ff_rnn_layer: batch_sizes[2] = 3: sizes must be in [1, 2] and non-increasing");
    CHECK_ERROR(ff_rnn_layer(FF_RNN_GRU, xp, 3, SIZES, false, h, NULL, w, NULL, &o, &hn, NULL), FF_ERR_INVALID,
                "ff_rnn_layer: batch_sizes start at 3 and sum to 7, but h0 has 3 rows and x_proj 8");
    CHECK(o == NULL && hn == NULL);
    RELEASE(xp, h, w);
}

FF_TEST_MAIN("ops_rnn_cell", TEST(check_gradients), TEST(check_lstm_values), TEST(check_errors),
             TEST(check_layer_gradients), TEST(check_layer_is_cell_loop), TEST(check_layer_errors))
