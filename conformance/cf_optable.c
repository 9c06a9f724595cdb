/* The public-op table (see cf_optable.h) and the helpers that build op inputs as
 * views with the public view ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cf_optable.h"

#define CALL(fn, ...) fn(__VA_ARGS__)

static const int ax0[] = {0}, ax1[] = {1}, ax02[] = {0, 2}, axm1[] = {-1};

#define W(name, expr) \
    static ff_tensor *name(ff_tensor *const *x) { (void)x; return expr; }
W(w_add, CALL(ff_add, x[0], x[1]))
W(w_sub, CALL(ff_sub, x[0], x[1]))
W(w_mul, CALL(ff_mul, x[0], x[1]))
W(w_div, CALL(ff_div, x[0], x[1]))
W(w_pow, CALL(ff_pow, x[0], x[1]))
W(w_maximum, CALL(ff_maximum, x[0], x[1]))
W(w_minimum, CALL(ff_minimum, x[0], x[1]))
W(w_mul_scalar, CALL(ff_mul_scalar, x[0], 2.5))
W(w_add_scalar, CALL(ff_add_scalar, x[0], -1.25))
W(w_rsub_scalar, CALL(ff_rbinary_scalar, FF_BINARY_SUB, 3.0, x[0]))
W(w_pow_scalar, CALL(ff_pow_scalar, x[0], 3.0))
W(w_clip, CALL(ff_clip, x[0], -0.5, 0.5))
W(w_lerp, CALL(ff_lerp, x[0], x[1], 0.3))
W(w_where, CALL(ff_where, x[2], x[0], x[1]))
W(w_eq, CALL(ff_eq, x[0], x[1]))
W(w_lt, CALL(ff_lt, x[0], x[1]))
W(w_exp, CALL(ff_exp, x[0]))
W(w_log, CALL(ff_log, x[0]))
W(w_log1p, CALL(ff_log1p, x[0]))
W(w_expm1, CALL(ff_expm1, x[0]))
W(w_sqrt, CALL(ff_sqrt, x[0]))
W(w_rsqrt, CALL(ff_rsqrt, x[0]))
W(w_square, CALL(ff_square, x[0]))
W(w_reciprocal, CALL(ff_reciprocal, x[0]))
W(w_sin, CALL(ff_sin, x[0]))
W(w_cos, CALL(ff_cos, x[0]))
W(w_tanh, CALL(ff_tanh, x[0]))
W(w_sigmoid, CALL(ff_sigmoid, x[0]))
W(w_relu, CALL(ff_relu, x[0]))
W(w_gelu, CALL(ff_gelu, x[0], false))
W(w_gelu_tanh, CALL(ff_gelu, x[0], true))
W(w_silu, CALL(ff_silu, x[0]))
W(w_softplus, CALL(ff_softplus, x[0]))
W(w_erf, CALL(ff_erf, x[0]))
W(w_atan, CALL(ff_atan, x[0]))
W(w_atan2, CALL(ff_atan2, x[0], x[1]))
W(w_asin, CALL(ff_asin, x[0]))
W(w_acos, CALL(ff_acos, x[0]))
W(w_erfinv, CALL(ff_erfinv, x[0]))
W(w_lgamma, CALL(ff_lgamma, x[0]))
W(w_digamma, CALL(ff_digamma, x[0]))
W(w_trigamma, CALL(ff_trigamma, x[0]))
W(w_abs, CALL(ff_abs, x[0]))
W(w_neg, CALL(ff_neg, x[0]))
W(w_floor, CALL(ff_floor, x[0]))
W(w_round, CALL(ff_round, x[0]))
W(w_sum1k, CALL(ff_sum, x[0], 1, ax1, true))
W(w_sum_all, CALL(ff_sum, x[0], 0, NULL, false))
W(w_mean02, CALL(ff_mean, x[0], 2, ax02, false))
W(w_prod1, CALL(ff_prod, x[0], 1, ax1, false))
W(w_amax1k, CALL(ff_amax, x[0], 1, ax1, true))
W(w_amin0, CALL(ff_amin, x[0], 1, ax0, false))
W(w_argmax1k, CALL(ff_argmax, x[0], 1, true))
W(w_argmin0, CALL(ff_argmin, x[0], 0, false))
W(w_var1, CALL(ff_var, x[0], 1, ax1, 1, false))
W(w_std0k, CALL(ff_std, x[0], 1, ax0, 1, true))
W(w_logsumexp1, CALL(ff_logsumexp, x[0], 1, ax1, false))
W(w_norm2, CALL(ff_norm, x[0], 2.0, 0, NULL, false))
W(w_any1, CALL(ff_any, x[0], 1, ax1, false))
W(w_all0k, CALL(ff_all, x[0], 1, ax0, true))
W(w_matmul, CALL(ff_matmul, x[0], x[1]))
W(w_argsort1, CALL(ff_argsort, x[0], 1, false))
W(w_argsort0_desc, CALL(ff_argsort, x[0], 0, true))
/* sorting ops that return values and indices: the values (differentiable) */
static ff_tensor *w_sort1_desc(ff_tensor *const *x)
{
    ff_tensor *v = NULL;
    return ff_sort(x[0], 1, true, &v, NULL) ? NULL : v;
}
static ff_tensor *w_topk3(ff_tensor *const *x)
{
    ff_tensor *v = NULL;
    return ff_topk(x[0], 3, -1, true, &v, NULL) ? NULL : v;
}
static ff_tensor *w_kthvalue2(ff_tensor *const *x)
{
    ff_tensor *v = NULL;
    return ff_kthvalue(x[0], 2, 0, false, &v, NULL) ? NULL : v;
}
static ff_tensor *w_median1(ff_tensor *const *x)
{
    ff_tensor *v = NULL;
    return ff_median(x[0], 1, true, &v, NULL) ? NULL : v;
}
static ff_tensor *w_median1_index(ff_tensor *const *x)
{
    ff_tensor *i = NULL;
    return ff_median(x[0], 1, false, NULL, &i) ? NULL : i;
}
W(w_einsum_batched, CALL(ff_einsum, "bij,bkj->bik", 2, x))
W(w_einsum_diag_outer, CALL(ff_einsum, "ii,j->ij", 2, x))
W(w_searchsorted, CALL(ff_searchsorted, x[0], x[1], false))
W(w_searchsorted_right, CALL(ff_searchsorted, x[0], x[1], true))
W(w_interpolate_bilinear, CALL(ff_interpolate, x[0], 2, (int64_t[]){7, 3}, NULL, FF_INTERP_LINEAR, false))
W(w_cumsum1, CALL(ff_cumsum, x[0], 1))
/* linear algebra: inputs made well conditioned with public ops (x + c I, x x^T + c I) */
static ff_tensor *boosted(const ff_tensor *x, double c, bool gram)
{
    int64_t n = ff_tensor_dim(x, -1);
    ff_tensor *xt = gram ? ff_mT(x) : NULL, *g = gram ? (xt ? ff_matmul(x, xt) : NULL) : ff_tensor_retain((ff_tensor *)x);
    ff_tensor *e = ff_eye(n, n, ff_tensor_dtype(x)), *e1 = e ? ff_to(e, ff_tensor_backend(x)) : NULL;
    ff_tensor *ce = e1 ? ff_mul_scalar(e1, c) : NULL, *r = g && ce ? ff_add(g, ce) : NULL;
    ff_tensor_release(xt), ff_tensor_release(g), ff_tensor_release(e), ff_tensor_release(e1), ff_tensor_release(ce);
    return r;
}
static ff_tensor *w_solve(ff_tensor *const *x)
{
    ff_tensor *a = boosted(x[0], 3.0, false), *r = a ? ff_solve(a, x[1]) : NULL;
    ff_tensor_release(a);
    return r;
}
static ff_tensor *w_inverse(ff_tensor *const *x)
{
    ff_tensor *a = boosted(x[0], 3.0, false), *r = a ? ff_inverse(a) : NULL;
    ff_tensor_release(a);
    return r;
}
static ff_tensor *w_det(ff_tensor *const *x)
{
    ff_tensor *a = boosted(x[0], 2.0, false), *r = a ? ff_det(a) : NULL;
    ff_tensor_release(a);
    return r;
}
static ff_tensor *w_cholesky(ff_tensor *const *x)
{
    ff_tensor *a = boosted(x[0], 1.0, true), *r = a ? ff_cholesky(a, false) : NULL;
    ff_tensor_release(a);
    return r;
}
/* Q and R: both backends follow LAPACK's Householder signs */
static ff_tensor *w_qr(ff_tensor *const *x, int which)
{
    ff_tensor *q = NULL, *r = NULL;
    if (ff_qr(x[0], false, &q, &r)) return NULL;
    ff_tensor_release(which ? q : r);
    return which ? r : q;
}
static ff_tensor *w_qr_q(ff_tensor *const *x) { return w_qr(x, 0); }
static ff_tensor *w_qr_r(ff_tensor *const *x) { return w_qr(x, 1); }
/* what the SVD fixes: S, and the projectors U U^T and V V^T (singular vectors' signs
 * are free) */
static ff_tensor *w_svd(ff_tensor *const *x, int which)
{
    ff_tensor *u = NULL, *s = NULL, *vh = NULL, *r = NULL;
    if (ff_svd(x[0], false, &u, &s, &vh)) return NULL;
    if (which == 0) r = ff_tensor_retain(s);
    else {
        ff_tensor *m = which == 1 ? u : vh, *mt = ff_mT(m);
        r = mt ? (which == 1 ? ff_matmul(m, mt) : ff_matmul(mt, m)) : NULL;
        ff_tensor_release(mt);
    }
    ff_tensor_release(u), ff_tensor_release(s), ff_tensor_release(vh);
    return r;
}
static ff_tensor *w_svd_s(ff_tensor *const *x) { return w_svd(x, 0); }
static ff_tensor *w_svd_uut(ff_tensor *const *x) { return w_svd(x, 1); }
static ff_tensor *w_svd_vvt(ff_tensor *const *x) { return w_svd(x, 2); }
/* SVDs of rank-deficient matrices built from x [.., 2, n] with public ops: rows x0, x1,
 * 2 x0 and 0 (rank 2 of 4 rows, the transpose when wide; issue 29's [[1, 2, 3], [2, 4,
 * 6], [0, 1, 0]] has such a row), whose null columns once kept the reference's Jacobi
 * from converging. which: 0 S, 1 U^T U (= I: the columns of the zero singular values
 * are a completion), 2 U S Vh (= A). */
static ff_tensor *repeated_rows(const ff_tensor *x, bool wide)
{
    ff_tensor *x0 = ff_slice(x, -2, 0, 1, 1), *m = x0 ? ff_mul_scalar(x0, 2.0) : NULL;
    ff_tensor *z = x0 ? ff_mul_scalar(x0, 0.0) : NULL, *parts[3] = {(ff_tensor *)x, m, z};
    ff_tensor *a = m && z ? ff_concat(3, parts, -2) : NULL, *r = a && wide ? ff_mT(a) : ff_tensor_retain(a);
    ff_tensor_release(x0), ff_tensor_release(m), ff_tensor_release(z), ff_tensor_release(a);
    return r;
}
static ff_tensor *w_svd_rank2(ff_tensor *const *x, int which, bool wide)
{
    ff_tensor *a = repeated_rows(x[0], wide), *u = NULL, *s = NULL, *vh = NULL, *r = NULL;
    if (a && !ff_svd(a, false, &u, &s, &vh)) {
        ff_tensor *ut = which == 1 ? ff_mT(u) : NULL, *s1 = which == 2 ? ff_unsqueeze(s, -1) : NULL;
        ff_tensor *svh = s1 ? ff_mul(s1, vh) : NULL;
        if (which == 0) r = ff_tensor_retain(s);
        else if (which == 1) r = ut ? ff_matmul(ut, u) : NULL;
        else r = svh ? ff_matmul(u, svh) : NULL;
        ff_tensor_release(ut), ff_tensor_release(s1), ff_tensor_release(svh);
    }
    ff_tensor_release(a), ff_tensor_release(u), ff_tensor_release(s), ff_tensor_release(vh);
    return r;
}
static ff_tensor *w_svd_rank2_s(ff_tensor *const *x) { return w_svd_rank2(x, 0, false); }
static ff_tensor *w_svd_rank2_wide_utu(ff_tensor *const *x) { return w_svd_rank2(x, 1, true); }
static ff_tensor *w_svd_rank2_usvh(ff_tensor *const *x) { return w_svd_rank2(x, 2, false); }
W(w_lstsq, CALL(ff_lstsq, x[0], x[1]))
W(w_max_pool_k2s2, CALL(ff_max_pool2d, x[0], 2, 2, 2, 2, 0, 0))
W(w_max_pool_k3s2p1, CALL(ff_max_pool2d, x[0], 3, 3, 2, 2, 1, 1))
W(w_avg_pool_k2s2, CALL(ff_avg_pool2d, x[0], 2, 2, 2, 2, 0, 0))
W(w_avg_pool_k3s1p1, CALL(ff_avg_pool2d, x[0], 3, 2, 1, 1, 1, 1))
static const int64_t out1x1[] = {1, 1}, out3x4[] = {3, 4}, out5[] = {5};
W(w_adaptive_avg_global, CALL(ff_adaptive_avg_pool, x[0], 2, out1x1))
W(w_adaptive_avg_3x4, CALL(ff_adaptive_avg_pool, x[0], 2, out3x4))
W(w_adaptive_avg_1d5, CALL(ff_adaptive_avg_pool, x[0], 1, out5))
W(w_adaptive_max_3x4, CALL(ff_adaptive_max_pool, x[0], 2, out3x4, NULL))
W(w_batch_norm_train, CALL(ff_batch_norm, x[0], NULL, NULL, x[1], x[2], true, 0.1, 1e-5))
W(w_batch_norm_plain, CALL(ff_batch_norm, x[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-3))
W(w_batch_norm_eval, CALL(ff_batch_norm, x[0], x[1], x[2], NULL, NULL, false, 0.1, 1e-5))
W(w_cumsum0, CALL(ff_cumsum, x[0], 0))
W(w_cumsum_last, CALL(ff_cumsum, x[0], -1))
W(w_cumprod1, CALL(ff_cumprod, x[0], 1))
/* Fourier transforms: the optional fft entry (FFTW in cpu_blas) against the reference's
 * DFT; complex inputs end in the (re, im) dim, which the transposed and stepped variants
 * give a stride other than 1; prime, odd, even and 1 lengths, padding and truncation */
W(w_fft_last, CALL(ff_fft_fft, x[0], -1, -1, FF_FFT_NORM_BACKWARD))
W(w_fft_axis0_pad8_forward, CALL(ff_fft_fft, x[0], 8, 0, FF_FFT_NORM_FORWARD))
W(w_fft_middle_axis, CALL(ff_fft_fft, x[0], -1, 1, FF_FFT_NORM_ORTHO))
W(w_fft_cut_to1, CALL(ff_fft_fft, x[0], 1, 0, FF_FFT_NORM_BACKWARD))
W(w_ifft_cut7_ortho, CALL(ff_fft_ifft, x[0], 7, 1, FF_FFT_NORM_ORTHO))
W(w_ifft_axis0, CALL(ff_fft_ifft, x[0], -1, 0, FF_FFT_NORM_BACKWARD))
W(w_rfft_last, CALL(ff_fft_rfft, x[0], -1, -1, FF_FFT_NORM_BACKWARD))
W(w_rfft_axis0_pad10_ortho, CALL(ff_fft_rfft, x[0], 10, 0, FF_FFT_NORM_ORTHO))
W(w_irfft_last, CALL(ff_fft_irfft, x[0], -1, -1, FF_FFT_NORM_BACKWARD))
W(w_irfft_axis0_n9_forward, CALL(ff_fft_irfft, x[0], 9, 0, FF_FFT_NORM_FORWARD))
W(w_irfft_n1, CALL(ff_fft_irfft, x[0], 1, -1, FF_FFT_NORM_BACKWARD))
/* conv2d: on a backend with the conv2d entries these compare the entries (and their
 * gradients) with the reference's composition; shapes cover padding, stride > 1 with
 * unread rows, 1x1 and 5x5 kernels, batch 1, one channel, odd sizes, a bias */
W(w_conv2d_k3p1, CALL(ff_conv2d, x[0], x[1], NULL, 1, 1, 1, 1))
W(w_conv2d_s2, CALL(ff_conv2d, x[0], x[1], NULL, 2, 2, 0, 0))
W(w_conv2d_k5s2p2, CALL(ff_conv2d, x[0], x[1], NULL, 2, 2, 2, 2))
W(w_conv2d_k1, CALL(ff_conv2d, x[0], x[1], NULL, 1, 1, 0, 0))
W(w_conv2d_s3x1_bias, CALL(ff_conv2d, x[0], x[1], x[2], 3, 1, 1, 0))
/* conv2d on views the four variants never make: slices whose strides do not nest (a step
 * in an outer dim that overruns it, so a channel's rows reach past the next channel's
 * start), which cpu_blas once handed to oneDNN as if they were dense strides ("status
 * 2", a crash, or, with size-1 dims around the step, wrong values). A cut gives, per dim
 * of x and of w, {start, stop (0: the end), step (0: 1)}. */
typedef struct conv_cut {
    int64_t x[4][3], w[4][3], stride, pad;
} conv_cut;
static ff_tensor *cut_view(const ff_tensor *t, const int64_t (*c)[3])
{
    ff_tensor *v = ff_tensor_retain((ff_tensor *)t);
    for (int d = 0; v && d < 4; d++) {
        ff_tensor *s = ff_slice(v, d, c[d][0], c[d][1] ? c[d][1] : ff_tensor_dim(v, d), c[d][2] ? c[d][2] : 1);
        ff_tensor_release(v);
        v = s;
    }
    return v;
}
static ff_tensor *conv_cut_call(ff_tensor *const *x, const conv_cut *c)
{
    ff_tensor *xv = cut_view(x[0], c->x), *wv = xv ? cut_view(x[1], c->w) : NULL;
    ff_tensor *r = wv ? ff_conv2d(xv, wv, NULL, c->stride, c->stride, c->pad, c->pad) : NULL;
    ff_tensor_release(xv), ff_tensor_release(wv);
    return r;
}
/* x [2, 3, 8, 6]: rows 1, 4, 7 (3 rows of stride 3 span 9 of a channel's 8); w [4, 3, 5, 3]:
 * rows 0, 2, 4 (span 6 of 5) */
static const conv_cut cut_rows = {{{0}, {0}, {1, 0, 3}, {0}}, {{0}, {0}, {0, 0, 2}, {0}}, 1, 1};
/* x [1, 2, 4, 3]: column 1; w [2, 4, 5, 4]: [1:2, 2:4, ::2, 3:4], a step among size-1 dims */
static const conv_cut cut_size1 = {{{0}, {0}, {0}, {1, 2, 1}}, {{1, 2, 1}, {2, 4, 1}, {0, 0, 2}, {3, 4, 1}}, 2, 1};
static ff_tensor *w_conv2d_cut_rows(ff_tensor *const *x) { return conv_cut_call(x, &cut_rows); }
static ff_tensor *w_conv2d_cut_size1(ff_tensor *const *x) { return conv_cut_call(x, &cut_size1); }
/* dilation and groups (FF_CONV2D_DILATION_GROUPS): the entries where the backend takes
 * them, else the composition; conv1d runs on the 2-D entries over H = 1 and
 * conv_transpose2d is the backward-input entry run forward */
static const ff_conv_opts conv_dil_groups = {{2, 1}, {1, 1}, {2, 1}, {0, 0}, 2};
static const ff_conv_opts conv_depthwise = {{1, 1}, {1, 1}, {1, 1}, {0, 0}, 6};
static const ff_conv_opts conv1d_dil = {{1}, {2}, {2}, {0}, 2};
static const ff_conv_opts conv_t_groups = {{2, 2}, {1, 0}, {1, 2}, {1, 1}, 2};
/* every window in the left padding of one dim (W = 1, kernel 1, padding 1, stride 3: the
 * one window reads column -1), so the output is the bias and the input and weight
 * gradients are zero; cpu_blas once cut x to zero columns there and oneDNN refused it
 * ("status 2", issue 47) */
static const ff_conv_opts conv_h_padding_only = {{3, 1}, {1, 0}, {1, 2}, {0, 0}, 1};
W(w_conv2d_s3p1_bias, CALL(ff_conv2d, x[0], x[1], x[2], 3, 3, 1, 1))
W(w_conv2d_h_padding_only_dilated, CALL(ff_conv, x[0], x[1], NULL, &conv_h_padding_only))
W(w_conv2d_dilated_grouped, CALL(ff_conv, x[0], x[1], NULL, &conv_dil_groups))
W(w_conv2d_depthwise_bias, CALL(ff_conv, x[0], x[1], x[2], &conv_depthwise))
W(w_conv1d_dilated_grouped, CALL(ff_conv, x[0], x[1], NULL, &conv1d_dil))
W(w_conv_transpose2d_grouped, CALL(ff_conv_transpose, x[0], x[1], NULL, &conv_t_groups))
W(w_outer, CALL(ff_outer, x[0], x[1]))
W(w_softmax, CALL(ff_softmax, x[0], -1))
W(w_log_softmax, CALL(ff_log_softmax, x[0], 0))
W(w_cross_entropy, CALL(ff_cross_entropy, x[0], x[1]))
W(w_mse, CALL(ff_mse_loss, x[0], x[1]))
W(w_gather, CALL(ff_gather, x[0], 1, x[1]))
W(w_scatter_add, CALL(ff_scatter_add, x[0], 0, x[1], x[2]))
W(w_index_select, CALL(ff_index_select, x[0], 0, x[1]))
W(w_embedding, CALL(ff_embedding, x[0], x[1]))
W(w_one_hot, CALL(ff_one_hot, x[0], 4))
W(w_concat, CALL(ff_concat, 2, x, 1))
W(w_stack, CALL(ff_stack, 2, x, 0))
W(w_flip, CALL(ff_flip, x[0], 1, axm1))
W(w_tril, CALL(ff_tril, x[0], 0))
W(w_triu, CALL(ff_triu, x[0], 1))
W(w_contiguous, CALL(ff_contiguous, x[0]))
W(w_clone, CALL(ff_clone, x[0]))
W(w_astype_f64, CALL(ff_astype, x[0], FF_F64))
W(w_dropout, CALL(ff_dropout, x[0], 0.5, true, 7))
W(w_remainder, CALL(ff_remainder, x[0], x[1]))
W(w_floor_divide, CALL(ff_floor_divide, x[0], x[1]))
W(w_clamp_tensors, CALL(ff_clamp, x[0], x[1], x[2]))
W(w_index_2d, CALL(ff_index, x[0], 2, (const ff_tensor *[]){x[1], x[2]}))
W(w_index_put_acc, CALL(ff_index_put, x[0], 1, (const ff_tensor *[]){x[1]}, x[2], true))
W(w_index_put_last, CALL(ff_index_put, x[0], 2, (const ff_tensor *[]){NULL, x[1]}, x[2], false))
W(w_index_add, CALL(ff_index_add, x[0], 1, x[1], x[2], 2.0))
W(w_masked_fill, CALL(ff_masked_fill, x[0], x[1], x[2]))
W(w_masked_scatter, CALL(ff_masked_scatter, x[0], x[1], x[2]))
W(w_bitwise_and, CALL(ff_bitwise_and, x[0], x[1]))
W(w_bitwise_or, CALL(ff_bitwise_or, x[0], x[1]))
W(w_bitwise_xor, CALL(ff_bitwise_xor, x[0], x[1]))
W(w_bitwise_not, CALL(ff_bitwise_not, x[0]))

/* index_select with duplicated indices, then a list index with duplicates (y[[...]]):
 * the gradient adds up every occurrence through both (cpu and cpu_blas once disagreed
 * by a factor of 2 on such a program) */
static ff_tensor *w_index_select_list(ff_tensor *const *x)
{
    ff_tensor *y = CALL(ff_index_select, x[0], 0, x[1]);
    ff_tensor *z = y ? CALL(ff_index, y, 1, (const ff_tensor *[]){x[2]}) : NULL;
    ff_tensor_release(y);
    return z;
}
static ff_tensor *w_index_select_list_axis1(ff_tensor *const *x)
{
    ff_tensor *y = CALL(ff_index_select, x[0], 1, x[1]);
    ff_tensor *z = y ? CALL(ff_index, y, 2, (const ff_tensor *[]){NULL, x[2]}) : NULL;
    ff_tensor_release(y);
    return z;
}

/* cross-entropy whose targets are each row's (first) maximum: with logits tied near
 * the dtype's largest value the loss is the mean of log(number of ties), which
 * x - (max + log(sum)) loses entirely */
static ff_tensor *w_cross_entropy_at_max(ff_tensor *const *x)
{
    ff_tensor *t = CALL(ff_argmax, x[0], 1, false);
    ff_tensor *r = t ? CALL(ff_cross_entropy, x[0], t) : NULL;
    ff_tensor_release(t);
    return r;
}

static ff_tensor *w_pad(ff_tensor *const *x)
{
    static const int64_t pads[] = {1, 0, 0, 2};
    return CALL(ff_pad, x[0], pads, 0.5);
}
static ff_tensor *w_repeat(ff_tensor *const *x)
{
    static const int64_t reps[] = {2, 1};
    return CALL(ff_repeat, x[0], 2, reps);
}
static ff_tensor *w_tile(ff_tensor *const *x)
{
    static const int64_t reps[] = {3};
    return CALL(ff_tile, x[0], 1, reps);
}
static ff_tensor *w_reshape(ff_tensor *const *x)
{
    static const int64_t shape[] = {5, -1};
    return CALL(ff_reshape, x[0], 2, shape);
}

/* batch norm on views: x given as [C, 1, H, W] and permuted to [1, C, H, W] (N = 1: the
 * statistics run over H W alone), the weight as every third element of a [3C] vector.
 * The bases are the leaves: an entry or a gradient formula that reads a view as if it
 * were contiguous fails the finite differences on every backend. "compose" takes the
 * composition even where the backend has the entry (ff_ops_force_compose, as
 * FF_BATCH_NORM=compose, around the forward only: the recorded node remembers which path
 * it took; never setenv, which races with the backend's threads reading the environment). */
static ff_tensor *bn_views(ff_tensor *const *x, bool compose)
{
    static const int perm[] = {1, 0, 2, 3};
    ff_tensor *xp = ff_permute(x[0], perm);
    ff_tensor *w = xp ? ff_slice(x[1], 0, 0, ff_tensor_dim(x[1], 0), 3) : NULL;
    if (compose) ff_ops_force_compose(FF_KIND_BATCH_NORM, true);
    ff_tensor *r = w ? ff_batch_norm(xp, NULL, NULL, w, x[2], true, 0.1, 1e-5) : NULL;
    if (compose) ff_ops_force_compose(FF_KIND_BATCH_NORM, false);
    ff_tensor_release(xp);
    ff_tensor_release(w);
    return r;
}
static ff_tensor *w_batch_norm_views(ff_tensor *const *x) { return bn_views(x, false); }
static ff_tensor *w_batch_norm_views_composed(ff_tensor *const *x) { return bn_views(x, true); }
/* [N, C] x with the weight every second element of a [2C] vector (PyTorch 1.13's CPU
 * backward reads such a weight as if contiguous) */
static ff_tensor *w_batch_norm_stepped_weight(ff_tensor *const *x)
{
    ff_tensor *w = ff_slice(x[1], 0, 0, ff_tensor_dim(x[1], 0), 2);
    ff_tensor *r = w ? ff_batch_norm(x[0], NULL, NULL, w, NULL, true, 0.1, 1e-5) : NULL;
    ff_tensor_release(w);
    return r;
}

/* ---- the table ---------------------------------------------------------------- */
#define F FF_DTYPE_COUNT /* "the case dtype" */
#define S CF_DOM_SIGNED
#define P CF_DOM_POSITIVE
#define U CF_DOM_UNIT
#define I CF_DOM_SMALLINT
#define B CF_DOM_BITS
/* name, nin, ndims, shapes, dtypes, domains, index ranges, call, tol, k, ints, grad, closed */
const cf_opdef cf_optable[] = {
    {"add_bcast", 2, {3, 2}, {{3, 1, 5}, {4, 1}}, {F, F}, {S, S}, {0}, w_add, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"sub", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, S}, {0}, w_sub, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"mul_bcast", 2, {2, 1}, {{4, 5}, {5}}, {F, F}, {S, S}, {0}, w_mul, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"div", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, P}, {0}, w_div, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"pow", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {P, S}, {0}, w_pow, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"atan2", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, S}, {0}, w_atan2, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"maximum", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, S}, {0}, w_maximum, CF_TOL_EXACT, 1, true, true, NULL},
    {"minimum", 2, {2, 1}, {{4, 5}, {5}}, {F, F}, {S, S}, {0}, w_minimum, CF_TOL_EXACT, 1, true, true, NULL},
    {"mul_scalar", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_mul_scalar, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"add_scalar", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_add_scalar, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"rsub_scalar", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_rsub_scalar, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"pow_scalar", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_pow_scalar, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"clip", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_clip, CF_TOL_EXACT, 1, false, true, NULL},
    {"lerp", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, S}, {0}, w_lerp, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"where", 3, {2, 2, 2}, {{4, 5}, {4, 5}, {4, 5}}, {F, F, FF_BOOL}, {S, S, CF_DOM_BOOL01}, {0}, w_where,
     CF_TOL_EXACT, 1, true, true, NULL},
    {"eq", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {I, I}, {0}, w_eq, CF_TOL_EXACT, 1, true, false, NULL},
    {"lt_bcast", 2, {2, 1}, {{4, 5}, {5}}, {F, F}, {I, I}, {0}, w_lt, CF_TOL_EXACT, 1, true, false, NULL},
    {"exp", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_exp, CF_TOL_TRANSCEND, 1, true, true, NULL},
    {"log", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_log, CF_TOL_TRANSCEND, 1, true, true, NULL},
    {"log1p", 1, {2}, {{4, 5}}, {F}, {CF_DOM_OPEN_UNIT}, {0}, w_log1p, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"expm1", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_expm1, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"sqrt", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_sqrt, CF_TOL_TRANSCEND, 1, true, true, NULL},
    {"rsqrt", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_rsqrt, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"square", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_square, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"reciprocal", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_reciprocal, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"sin", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_sin, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"cos", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_cos, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"tanh", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_tanh, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"sigmoid", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_sigmoid, CF_TOL_TRANSCEND, 1, true, true, NULL},
    {"relu", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_relu, CF_TOL_EXACT, 1, true, true, NULL},
    {"gelu", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_gelu, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"gelu_tanh", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_gelu_tanh, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"silu", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_silu, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"softplus", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_softplus, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"erf", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_erf, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"atan", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_atan, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"asin", 1, {2}, {{4, 5}}, {F}, {CF_DOM_OPEN_UNIT}, {0}, w_asin, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"acos", 1, {2}, {{4, 5}}, {F}, {CF_DOM_OPEN_UNIT}, {0}, w_acos, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"erfinv", 1, {2}, {{4, 5}}, {F}, {CF_DOM_OPEN_UNIT}, {0}, w_erfinv, CF_TOL_TRANSCEND, 1, false, true, NULL},
    /* positive inputs: central differences stay far from the poles at 0, -1, -2 (the unary
     * family checks the values of negative inputs; Python, negative gradients vs PyTorch) */
    {"lgamma", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_lgamma, CF_TOL_TRANSCEND, 1, false, true, NULL},
    {"digamma", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_digamma, CF_TOL_TRANSCEND, 1, false, true, NULL},
    /* not differentiable: its gradient would be polygamma(2, x), which is not implemented */
    {"trigamma", 1, {2}, {{4, 5}}, {F}, {P}, {0}, w_trigamma, CF_TOL_TRANSCEND, 1, false, false, NULL},
    {"abs", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_abs, CF_TOL_EXACT, 1, true, true, NULL},
    {"neg", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_neg, CF_TOL_EXACT, 1, true, true, NULL},
    {"floor", 1, {2}, {{4, 5}}, {F}, {CF_DOM_ROUNDING}, {0}, w_floor, CF_TOL_EXACT, 1, true, false, NULL},
    {"round", 1, {2}, {{4, 5}}, {F}, {CF_DOM_ROUNDING}, {0}, w_round, CF_TOL_EXACT, 1, true, false, NULL},
    {"sum_axis1_keepdim", 1, {2}, {{4, 5}}, {F}, {U}, {0}, w_sum1k, CF_TOL_ACCUM, 5, true, true, NULL},
    {"sum_all", 1, {2}, {{4, 5}}, {F}, {U}, {0}, w_sum_all, CF_TOL_ACCUM, 20, true, true, c_sum_all},
    {"mean_axes02", 1, {3}, {{3, 4, 5}}, {F}, {U}, {0}, w_mean02, CF_TOL_ACCUM, 15, false, true, c_mean02},
    {"prod_axis1", 1, {2}, {{4, 5}}, {F}, {CF_DOM_NEAR1}, {0}, w_prod1, CF_TOL_PROD, 5, true, true, NULL},
    {"amax_axis1_keepdim", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_amax1k, CF_TOL_EXACT, 1, true, true, NULL},
    {"amin_axis0", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_amin0, CF_TOL_EXACT, 1, true, true, NULL},
    {"argmax_axis1_keepdim", 1, {2}, {{4, 5}}, {F}, {I}, {0}, w_argmax1k, CF_TOL_EXACT, 1, true, false, NULL},
    {"argmin_axis0", 1, {2}, {{4, 5}}, {F}, {I}, {0}, w_argmin0, CF_TOL_EXACT, 1, true, false, NULL},
    {"var_axis1", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_var1, CF_TOL_ACCUM, 5, false, true, NULL},
    {"std_axis0_keepdim", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_std0k, CF_TOL_ACCUM, 4, false, true, NULL},
    {"logsumexp_axis1", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_logsumexp1, CF_TOL_TRANSCEND, 5, false, true, NULL},
    {"norm2", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_norm2, CF_TOL_ACCUM, 20, false, true, NULL},
    {"any_axis1", 1, {2}, {{4, 5}}, {F}, {I}, {0}, w_any1, CF_TOL_EXACT, 1, true, false, NULL},
    {"all_axis0_keepdim", 1, {2}, {{4, 5}}, {F}, {I}, {0}, w_all0k, CF_TOL_EXACT, 1, true, false, NULL},
    {"matmul_2d", 2, {2, 2}, {{4, 3}, {3, 5}}, {F, F}, {U, U}, {0}, w_matmul, CF_TOL_ACCUM, 3, true, true, c_matmul},
    {"matmul_1d_2d", 2, {1, 2}, {{3}, {3, 5}}, {F, F}, {U, U}, {0}, w_matmul, CF_TOL_ACCUM, 3, true, true, NULL},
    {"matmul_2d_1d", 2, {2, 1}, {{4, 3}, {3}}, {F, F}, {U, U}, {0}, w_matmul, CF_TOL_ACCUM, 3, true, true, NULL},
    {"matmul_1d_1d", 2, {1, 1}, {{6}, {6}}, {F, F}, {U, U}, {0}, w_matmul, CF_TOL_ACCUM, 6, true, true, NULL},
    {"matmul_batched_bcast", 2, {4, 3}, {{2, 1, 3, 4}, {5, 4, 2}}, {F, F}, {U, U}, {0}, w_matmul, CF_TOL_ACCUM, 4,
     true, true, NULL},
    {"outer", 2, {1, 1}, {{4}, {5}}, {F, F}, {S, S}, {0}, w_outer, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"softmax_last", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_softmax, CF_TOL_TRANSCEND, 5, false, true, c_softmax},
    {"log_softmax_axis0", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_log_softmax, CF_TOL_TRANSCEND, 4, false, true, NULL},
    {"cross_entropy", 2, {2, 1}, {{6, 5}, {6}}, {F, FF_I64}, {S, I}, {0, 5}, w_cross_entropy, CF_TOL_TRANSCEND, 30,
     false, true, c_cross_entropy},
    {"mse_loss", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, S}, {0}, w_mse, CF_TOL_ACCUM, 20, false, true, c_mse},
    {"gather_axis1", 2, {2, 2}, {{4, 5}, {4, 3}}, {F, FF_I64}, {S, I}, {0, 5}, w_gather, CF_TOL_EXACT, 1, true, true,
     NULL},
    {"scatter_add_axis0", 3, {2, 2, 2}, {{4, 3}, {5, 3}, {5, 3}}, {F, FF_I64, F}, {S, I, S}, {0, 4, 0},
     w_scatter_add, CF_TOL_ACCUM, 6, true, true, NULL},
    {"index_select", 2, {2, 1}, {{5, 4}, {3}}, {F, FF_I64}, {S, I}, {0, 5}, w_index_select, CF_TOL_EXACT, 1, true,
     true, NULL},
    {"embedding", 2, {2, 1}, {{6, 3}, {4}}, {F, FF_I64}, {S, I}, {0, 6}, w_embedding, CF_TOL_EXACT, 1, false, true,
     NULL},
    {"one_hot", 1, {1}, {{5}}, {FF_I64}, {I}, {4}, w_one_hot, CF_TOL_EXACT, 1, false, false, NULL},
    {"concat_axis1", 2, {2, 2}, {{3, 2}, {3, 4}}, {F, F}, {S, S}, {0}, w_concat, CF_TOL_EXACT, 1, true, true, NULL},
    {"stack_axis0", 2, {2, 2}, {{3, 4}, {3, 4}}, {F, F}, {S, S}, {0}, w_stack, CF_TOL_EXACT, 1, true, true, NULL},
    {"pad", 1, {2}, {{3, 4}}, {F}, {S}, {0}, w_pad, CF_TOL_EXACT, 1, true, true, NULL},
    {"flip_last", 1, {2}, {{3, 4}}, {F}, {S}, {0}, w_flip, CF_TOL_EXACT, 1, true, true, NULL},
    {"tril", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_tril, CF_TOL_EXACT, 1, true, true, NULL},
    {"triu_1", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_triu, CF_TOL_EXACT, 1, true, true, NULL},
    {"repeat", 1, {2}, {{2, 3}}, {F}, {S}, {0}, w_repeat, CF_TOL_EXACT, 1, true, true, NULL},
    {"tile", 1, {2}, {{2, 3}}, {F}, {S}, {0}, w_tile, CF_TOL_EXACT, 1, true, true, NULL},
    {"reshape", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_reshape, CF_TOL_EXACT, 1, true, true, NULL},
    {"contiguous", 1, {3}, {{2, 3, 4}}, {F}, {S}, {0}, w_contiguous, CF_TOL_EXACT, 1, true, true, NULL},
    {"clone", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_clone, CF_TOL_EXACT, 1, true, true, NULL},
    /* Python's % and //, clamp with tensor bounds, advanced indexing and indexed writes:
     * compositions of the entries, checked on every backend like the rest */
    {"remainder", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, P}, {0}, w_remainder, CF_TOL_ROUNDED, 1, true, true, NULL},
    {"floor_divide", 2, {2, 2}, {{4, 5}, {4, 5}}, {F, F}, {S, P}, {0}, w_floor_divide, CF_TOL_EXACT, 1, true, false,
     NULL},
    {"clamp_tensor_bounds", 3, {2, 1, 2}, {{4, 5}, {5}, {4, 1}}, {F, F, F}, {S, U, P}, {0}, w_clamp_tensors,
     CF_TOL_EXACT, 1, true, true, NULL},
    {"index_2d", 3, {2, 1, 1}, {{4, 5}, {3}, {3}}, {F, FF_I64, FF_I64}, {S, I, I}, {0, 4, 5}, w_index_2d,
     CF_TOL_EXACT, 1, true, true, NULL},
    {"index_put_accumulate", 3, {2, 1, 2}, {{4, 5}, {6}, {6, 5}}, {F, FF_I64, F}, {S, I, S}, {0, 4, 0},
     w_index_put_acc, CF_TOL_ACCUM, 3, true, true, NULL},
    {"index_put_last_wins", 3, {2, 1, 2}, {{4, 5}, {7}, {4, 7}}, {F, FF_I64, F}, {S, I, S}, {0, 5, 0},
     w_index_put_last, CF_TOL_EXACT, 1, true, false, NULL},
    {"index_add_axis1", 3, {2, 1, 2}, {{4, 5}, {3}, {4, 3}}, {F, FF_I64, F}, {S, I, S}, {0, 5, 0}, w_index_add,
     CF_TOL_ACCUM, 3, true, true, NULL},
    {"masked_fill", 3, {2, 2, 1}, {{4, 5}, {4, 5}, {5}}, {F, FF_BOOL, F}, {S, CF_DOM_BOOL01, S}, {0}, w_masked_fill,
     CF_TOL_EXACT, 1, true, true, NULL},
    {"masked_scatter", 3, {2, 2, 2}, {{4, 5}, {4, 5}, {4, 5}}, {F, FF_BOOL, F}, {S, CF_DOM_BOOL01, S}, {0},
     w_masked_scatter, CF_TOL_EXACT, 1, true, true, NULL},
    /* the bitwise ops (integers and bool; ~bool is the logical not), full-width bits */
    {"bitwise_and_i32", 2, {2, 2}, {{4, 5}, {4, 5}}, {FF_I32, FF_I32}, {B, B}, {0}, w_bitwise_and, CF_TOL_EXACT, 1,
     false, false, NULL},
    {"bitwise_or_bcast_i64", 2, {2, 1}, {{4, 5}, {5}}, {FF_I64, FF_I64}, {B, B}, {0}, w_bitwise_or, CF_TOL_EXACT, 1,
     false, false, NULL},
    {"bitwise_xor_u8", 2, {2, 2}, {{4, 5}, {4, 5}}, {FF_U8, FF_U8}, {B, B}, {0}, w_bitwise_xor, CF_TOL_EXACT, 1, false,
     false, NULL},
    {"bitwise_and_bool", 2, {2, 2}, {{4, 5}, {4, 5}}, {FF_BOOL, FF_BOOL}, {B, B}, {0}, w_bitwise_and, CF_TOL_EXACT, 1,
     false, false, NULL},
    {"bitwise_not_i64", 1, {2}, {{4, 5}}, {FF_I64}, {B}, {0}, w_bitwise_not, CF_TOL_EXACT, 1, false, false, NULL},
    {"bitwise_not_u8", 1, {2}, {{4, 5}}, {FF_U8}, {B}, {0}, w_bitwise_not, CF_TOL_EXACT, 1, false, false, NULL},
    {"bitwise_not_bool", 1, {2}, {{4, 5}}, {FF_BOOL}, {B}, {0}, w_bitwise_not, CF_TOL_EXACT, 1, false, false, NULL},
    /* gradients through duplicated indices: 7 picks of 3 rows, then 9 picks of those 7 */
    {"index_select_then_list_index", 3, {2, 1, 1}, {{3, 4}, {7}, {9}}, {F, FF_I64, FF_I64}, {S, I, I}, {0, 3, 7},
     w_index_select_list, CF_TOL_EXACT, 1, true, true, NULL},
    {"index_select_axis1_then_list_index", 3, {2, 1, 1}, {{4, 3}, {7}, {9}}, {F, FF_I64, FF_I64}, {S, I, I},
     {0, 3, 7}, w_index_select_list_axis1, CF_TOL_EXACT, 1, true, true, NULL},
    /* logits tied within a few ulps of 0.9 x the dtype's max */
    {"cross_entropy_at_max_huge_ties", 1, {2}, {{6, 5}}, {F}, {CF_DOM_HUGE_TIES}, {0}, w_cross_entropy_at_max,
     CF_TOL_TRANSCEND, 30, false, false, c_cross_entropy_at_max},
    {"log_softmax_huge_ties", 1, {2}, {{4, 5}}, {F}, {CF_DOM_HUGE_TIES}, {0}, w_log_softmax, CF_TOL_TRANSCEND, 4,
     false, false, NULL},
    {"astype_f64", 1, {2}, {{4, 5}}, {F}, {S}, {0}, w_astype_f64, CF_TOL_EXACT, 1, true, true, NULL},
    {"dropout", 1, {2}, {{8, 9}}, {F}, {S}, {0}, w_dropout, CF_TOL_ROUNDED, 1, false, true, NULL},
    /* sorting: the optional argsort entry against the reference's; ties (small integers),
     * NaN, infinities and signed zeros (the edge values) must order identically */
    {"argsort_ties", 1, {2}, {{4, 9}}, {F}, {I}, {0}, w_argsort1, CF_TOL_EXACT, 1, true, false, NULL},
    {"argsort_desc_edges", 1, {2}, {{12, 3}}, {F}, {CF_DOM_SPECIAL}, {0}, w_argsort0_desc, CF_TOL_EXACT, 1, true,
     false, NULL},
    {"argsort_edges", 1, {2}, {{3, 12}}, {F}, {CF_DOM_SPECIAL}, {0}, w_argsort1, CF_TOL_EXACT, 1, true, false, NULL},
    {"sort_desc_values", 1, {2}, {{4, 7}}, {F}, {S}, {0}, w_sort1_desc, CF_TOL_EXACT, 1, true, true, NULL},
    {"topk3_values", 1, {3}, {{2, 3, 6}}, {F}, {S}, {0}, w_topk3, CF_TOL_EXACT, 1, true, true, NULL},
    {"kthvalue2_axis0", 1, {2}, {{5, 4}}, {F}, {S}, {0}, w_kthvalue2, CF_TOL_EXACT, 1, true, true, NULL},
    {"median_axis1", 1, {2}, {{4, 6}}, {F}, {S}, {0}, w_median1, CF_TOL_EXACT, 1, true, true, NULL},
    {"median_edges_index", 1, {2}, {{4, 7}}, {F}, {CF_DOM_SPECIAL}, {0}, w_median1_index, CF_TOL_EXACT, 1, true,
     false, NULL},
    /* searchsorted: counts of elements below (left) / not above (right); ties from small ints */
    {"searchsorted_batched", 2, {2, 2}, {{3, 6}, {3, 4}}, {F, F}, {I, I}, {0}, w_searchsorted, CF_TOL_EXACT, 1, true,
     false, NULL},
    {"searchsorted_right_1d", 2, {1, 2}, {{7}, {2, 5}}, {F, F}, {I, I}, {0}, w_searchsorted_right, CF_TOL_EXACT, 1, true,
     false, NULL},
    {"interpolate_bilinear", 1, {4}, {{1, 2, 4, 5}}, {F}, {S}, {0}, w_interpolate_bilinear, CF_TOL_ROUNDED, 1,
     false, true, NULL},
    /* einsum: permute/reshape/matmul/sum, and a diagonal */
    {"einsum_batched", 2, {3, 3}, {{2, 3, 4}, {2, 5, 4}}, {F, F}, {U, U}, {0}, w_einsum_batched, CF_TOL_ACCUM, 4, false,
     true, NULL},
    {"einsum_diag_outer", 2, {2, 1}, {{4, 4}, {3}}, {F, F}, {S, S}, {0}, w_einsum_diag_outer, CF_TOL_EXACT, 1, false,
     true, NULL},
    /* pooling: the optional pool2d entry (a backend without it: windows and reductions)
     * against the reference's entry; odd sizes (floor mode), overlapping padded windows */
    {"max_pool2d_k2s2_odd", 1, {4}, {{2, 3, 6, 7}}, {F}, {S}, {0}, w_max_pool_k2s2, CF_TOL_EXACT, 1, false, true, NULL},
    {"max_pool2d_k3s2p1", 1, {4}, {{2, 2, 7, 6}}, {F}, {S}, {0}, w_max_pool_k3s2p1, CF_TOL_EXACT, 1, false, true, NULL},
    /* small integers tie in most windows: each window's gradient goes to its first maximum
     * (FF_POOL2D_MAX_BACKWARD_FIRST, PyTorch's index), on the entry's 2 x 2 and general paths */
    {"max_pool2d_ties_k2s2", 1, {4}, {{2, 3, 6, 8}}, {F}, {I}, {0}, w_max_pool_k2s2, CF_TOL_EXACT, 1, false, true, NULL},
    {"max_pool2d_ties_k3s2p1", 1, {4}, {{2, 2, 7, 6}}, {F}, {I}, {0}, w_max_pool_k3s2p1, CF_TOL_EXACT, 1, false, true,
     NULL},
    {"avg_pool2d_k2s2", 1, {4}, {{2, 3, 6, 8}}, {F}, {S}, {0}, w_avg_pool_k2s2, CF_TOL_ACCUM, 4, false, true, NULL},
    {"avg_pool2d_k3x2s1p1", 1, {4}, {{1, 2, 5, 6}}, {F}, {S}, {0}, w_avg_pool_k3s1p1, CF_TOL_ACCUM, 6, false, true,
     NULL},
    /* adaptive pooling: avg through the pool2d entry's ADAPTIVE_AVG ops (or the matmul
     * composition), max composed; unequal overlapping windows, a global window, 1-D */
    {"adaptive_avg_pool2d_global", 1, {4}, {{2, 3, 7, 5}}, {F}, {S}, {0}, w_adaptive_avg_global, CF_TOL_ACCUM, 35,
     false, true, NULL},
    {"adaptive_avg_pool2d_7x9_to3x4", 1, {4}, {{2, 3, 7, 9}}, {F}, {S}, {0}, w_adaptive_avg_3x4, CF_TOL_ACCUM, 9,
     false, true, NULL},
    {"adaptive_avg_pool1d_7_to5", 1, {3}, {{2, 3, 7}}, {F}, {S}, {0}, w_adaptive_avg_1d5, CF_TOL_ACCUM, 3, false, true,
     NULL},
    {"adaptive_max_pool2d_ties_3x4", 1, {4}, {{2, 2, 7, 9}}, {F}, {I}, {0}, w_adaptive_max_3x4, CF_TOL_EXACT, 1, false,
     true, NULL},
    /* batch norm in training mode: the optional batch_norm entry (a backend without it:
     * the composition) against the reference's entry */
    {"batch_norm_train_nchw", 3, {4, 1, 1}, {{4, 3, 5, 6}, {3}, {3}}, {F, F, F}, {S, S, S}, {0}, w_batch_norm_train,
     CF_TOL_ACCUM, 120, false, true, NULL},
    {"batch_norm_plain_nc", 1, {2}, {{9, 4}}, {F}, {S}, {0}, w_batch_norm_plain, CF_TOL_ACCUM, 9, false, true, NULL},
    /* PyTorch's mixed form: x in the case dtype, weight and bias f32 (y in x's dtype for
     * half x; the entry's [C] views are f32 then) */
    {"batch_norm_train_f32_params", 3, {4, 1, 1}, {{4, 3, 5, 6}, {3}, {3}}, {F, FF_F32, FF_F32}, {S, S, S}, {0},
     w_batch_norm_train, CF_TOL_ACCUM, 120, false, true, NULL},
    /* on views: x permuted with N = 1 and a stepped weight, through the entry and through
     * the composition; an [N, C] x with a stepped weight */
    {"batch_norm_views_permuted_n1", 3, {4, 1, 1}, {{3, 1, 4, 5}, {9}, {3}}, {F, F, F}, {S, S, S}, {0},
     w_batch_norm_views, CF_TOL_ACCUM, 20, false, true, NULL},
    {"batch_norm_views_permuted_n1_composed", 3, {4, 1, 1}, {{3, 1, 4, 5}, {9}, {3}}, {F, F, F}, {S, S, S}, {0},
     w_batch_norm_views_composed, CF_TOL_ACCUM, 20, false, true, NULL},
    {"batch_norm_stepped_weight_nc", 2, {2, 1}, {{6, 4}, {8}}, {F, F}, {S, S}, {0}, w_batch_norm_stepped_weight,
     CF_TOL_ACCUM, 6, false, true, NULL},
    /* eval mode: x scale + shift (values only: the running statistics are buffers, which
     * PyTorch does not differentiate either, and the gradient rows would vary them) */
    {"batch_norm_eval_running", 3, {4, 1, 1}, {{2, 3, 4, 5}, {3}, {3}}, {F, F, F}, {S, S, P}, {0}, w_batch_norm_eval,
     CF_TOL_TRANSCEND, 1, false, false, NULL},
    /* linear algebra: the optional linalg entry (LAPACK on cpu_blas) against the reference's
     * own algorithms, on well-conditioned inputs; both compute in double */
    {"solve_batched", 2, {3, 3}, {{2, 4, 4}, {2, 4, 3}}, {F, F}, {U, U}, {0}, w_solve, CF_TOL_ACCUM, 16, false, true,
     NULL},
    {"solve_vector_bcast", 2, {3, 1}, {{3, 5, 5}, {5}}, {F, F}, {U, U}, {0}, w_solve, CF_TOL_ACCUM, 25, false, true,
     NULL},
    {"inverse", 1, {2}, {{5, 5}}, {F}, {U}, {0}, w_inverse, CF_TOL_ACCUM, 25, false, true, NULL},
    {"det_batched", 1, {3}, {{3, 4, 4}}, {F}, {U}, {0}, w_det, CF_TOL_ACCUM, 16, false, true, NULL},
    {"cholesky_gram", 1, {2}, {{5, 5}}, {F}, {U}, {0}, w_cholesky, CF_TOL_ACCUM, 25, false, true, NULL},
    {"qr_q_tall", 1, {2}, {{6, 4}}, {F}, {U}, {0}, w_qr_q, CF_TOL_ACCUM, 24, false, true, NULL},
    {"qr_r_wide", 1, {3}, {{2, 3, 5}}, {F}, {U}, {0}, w_qr_r, CF_TOL_ACCUM, 15, false, true, NULL},
    {"svd_s_wide", 1, {2}, {{3, 6}}, {F}, {U}, {0}, w_svd_s, CF_TOL_ACCUM, 18, false, true, NULL},
    {"svd_uut_tall", 1, {3}, {{2, 6, 3}}, {F}, {U}, {0}, w_svd_uut, CF_TOL_ACCUM, 18, false, true, NULL},
    {"svd_vvt_tall", 1, {2}, {{7, 4}}, {F}, {U}, {0}, w_svd_vvt, CF_TOL_ACCUM, 28, false, true, NULL},
    /* rank-deficient (a repeated row, a zero row), f64 and f32 only: in a half dtype the
     * zero singular values round to zeros whose sign is LAPACK's noise, and a half U^T U
     * is off I by the half's rounding, far past a zero's atol. The completed U and the
     * reconstruction against closed forms */
    {"svd_s_repeated_rows_tall", 1, {3}, {{2, 2, 3}}, {FF_F64}, {U}, {0}, w_svd_rank2_s, CF_TOL_ACCUM, 12, false,
     false, NULL},
    {"svd_s_repeated_rows_square", 1, {3}, {{3, 2, 4}}, {FF_F32}, {U}, {0}, w_svd_rank2_s, CF_TOL_ACCUM, 16, false,
     false, NULL},
    {"svd_utu_repeated_rows_wide", 1, {3}, {{2, 2, 3}}, {FF_F64}, {U}, {0}, w_svd_rank2_wide_utu, CF_TOL_ACCUM, 12,
     false, false, c_eye_2x3x3},
    {"svd_usvh_repeated_rows_tall", 1, {3}, {{2, 2, 3}}, {FF_F32}, {U}, {0}, w_svd_rank2_usvh, CF_TOL_ACCUM, 12,
     false, false, c_repeated_rows_2x2x3},
    {"lstsq_tall", 2, {2, 2}, {{6, 3}, {6, 2}}, {F, F}, {U, U}, {0}, w_lstsq, CF_TOL_ACCUM, 18, false, true, NULL},
    {"lstsq_wide_batched", 2, {3, 3}, {{2, 3, 5}, {2, 3, 2}}, {F, F}, {U, U}, {0}, w_lstsq, CF_TOL_ACCUM, 15, false,
     true, NULL},
    /* scans: the optional scan entry against the reference's */
    {"cumsum_axis1", 1, {2}, {{4, 9}}, {F}, {S}, {0}, w_cumsum1, CF_TOL_ACCUM, 9, true, true, NULL},
    {"cumsum_axis0", 1, {2}, {{7, 5}}, {F}, {S}, {0}, w_cumsum0, CF_TOL_ACCUM, 7, true, true, NULL},
    {"cumsum_3d_last", 1, {3}, {{2, 3, 6}}, {F}, {S}, {0}, w_cumsum_last, CF_TOL_ACCUM, 6, true, true, NULL},
    {"cumprod_axis1", 1, {2}, {{4, 6}}, {F}, {CF_DOM_NEAR1}, {0}, w_cumprod1, CF_TOL_PROD, 6, true, true, NULL},
    /* Fourier transforms (k: the sum's length, times 4 for FFTW's log n passes in f32) */
    {"fft_last_prime13", 1, {3}, {{3, 13, 2}}, {F}, {S}, {0}, w_fft_last, CF_TOL_ACCUM, 52, false, true,
     closed_fft_last},
    {"fft_axis0_pad_to8_norm_forward", 1, {3}, {{5, 4, 2}}, {F}, {S}, {0}, w_fft_axis0_pad8_forward, CF_TOL_ACCUM,
     32, false, true, NULL},
    {"fft_middle_axis_norm_ortho", 1, {4}, {{2, 6, 3, 2}}, {F}, {S}, {0}, w_fft_middle_axis, CF_TOL_ACCUM, 24, false,
     true, NULL},
    {"fft_cut_to1", 1, {3}, {{6, 3, 2}}, {F}, {S}, {0}, w_fft_cut_to1, CF_TOL_ACCUM, 4, false, true, NULL},
    {"fft_len1", 1, {3}, {{4, 1, 2}}, {F}, {S}, {0}, w_fft_last, CF_TOL_ACCUM, 4, false, true, NULL},
    {"ifft_cut_to7_norm_ortho", 1, {3}, {{3, 9, 2}}, {F}, {S}, {0}, w_ifft_cut7_ortho, CF_TOL_ACCUM, 28, false, true,
     NULL},
    {"ifft_axis0_len17", 1, {3}, {{17, 2, 2}}, {F}, {S}, {0}, w_ifft_axis0, CF_TOL_ACCUM, 68, false, true, NULL},
    {"rfft_last_odd11", 1, {2}, {{4, 11}}, {F}, {S}, {0}, w_rfft_last, CF_TOL_ACCUM, 44, true, true,
     closed_rfft_last},
    {"rfft_axis0_pad_to10_norm_ortho", 1, {2}, {{6, 5}}, {F}, {S}, {0}, w_rfft_axis0_pad10_ortho, CF_TOL_ACCUM, 40,
     false, true, NULL},
    {"rfft_len1", 1, {2}, {{3, 1}}, {F}, {S}, {0}, w_rfft_last, CF_TOL_ACCUM, 4, false, true, NULL},
    {"irfft_last_default_n10", 1, {3}, {{3, 6, 2}}, {F}, {S}, {0}, w_irfft_last, CF_TOL_ACCUM, 40, false, true,
     closed_irfft_last},
    {"irfft_axis0_n9_norm_forward", 1, {3}, {{4, 3, 2}}, {F}, {S}, {0}, w_irfft_axis0_n9_forward, CF_TOL_ACCUM, 36,
     false, true, NULL},
    {"irfft_n1", 1, {3}, {{2, 3, 2}}, {F}, {S}, {0}, w_irfft_n1, CF_TOL_ACCUM, 4, false, true, NULL},
    /* Inf and NaN at element 0, where every FFT multiplies by exactly 1: the answer does not
     * depend on the algorithm (pocketfft, FFTW and the reference's sum agree), and the
     * closed forms hold the reference to it (its full complex multiply once gave
     * fft([inf, 0, 0]) = inf + NaN i in every bin) */
    {"fft_last_prime13_inf_first", 1, {3}, {{3, 13, 2}}, {F}, {CF_DOM_INF_FIRST}, {0}, w_fft_last, CF_TOL_ACCUM, 52,
     false, false, closed_fft_last},
    {"fft_last_len8_nan_first", 1, {3}, {{2, 8, 2}}, {F}, {CF_DOM_NAN_FIRST}, {0}, w_fft_last, CF_TOL_ACCUM, 32,
     false, false, closed_fft_len8},
    {"fft_axis0_pad_to8_inf_first", 1, {3}, {{5, 4, 2}}, {F}, {CF_DOM_INF_FIRST}, {0}, w_fft_axis0_pad8_forward,
     CF_TOL_ACCUM, 32, false, false, NULL},
    {"ifft_axis0_len17_nan_first", 1, {3}, {{17, 2, 2}}, {F}, {CF_DOM_NAN_FIRST}, {0}, w_ifft_axis0, CF_TOL_ACCUM, 68,
     false, false, NULL},
    {"rfft_last_odd11_inf_first", 1, {2}, {{4, 11}}, {F}, {CF_DOM_INF_FIRST}, {0}, w_rfft_last, CF_TOL_ACCUM, 44,
     false, false, closed_rfft_last},
    {"rfft_last_odd11_nan_first", 1, {2}, {{4, 11}}, {F}, {CF_DOM_NAN_FIRST}, {0}, w_rfft_last, CF_TOL_ACCUM, 44,
     false, false, closed_rfft_last},
    {"irfft_last_default_n10_inf_first", 1, {3}, {{3, 6, 2}}, {F}, {CF_DOM_INF_FIRST}, {0}, w_irfft_last,
     CF_TOL_ACCUM, 40, false, false, closed_irfft_last},
    {"irfft_last_default_n10_nan_first", 1, {3}, {{3, 6, 2}}, {F}, {CF_DOM_NAN_FIRST}, {0}, w_irfft_last,
     CF_TOL_ACCUM, 40, false, false, closed_irfft_last},
    {"conv2d_k3_pad1", 2, {4, 4}, {{2, 3, 7, 6}, {4, 3, 3, 3}}, {F, F}, {S, S}, {0}, w_conv2d_k3p1, CF_TOL_ACCUM, 27,
     false, true, NULL},
    {"conv2d_stride2_unread_rows_batch1_c1", 2, {4, 4}, {{1, 1, 6, 7}, {2, 1, 3, 3}}, {F, F}, {S, S}, {0},
     w_conv2d_s2, CF_TOL_ACCUM, 9, false, true, NULL},
    {"conv2d_k5_stride2_pad2", 2, {4, 4}, {{2, 2, 9, 8}, {3, 2, 5, 5}}, {F, F}, {S, S}, {0}, w_conv2d_k5s2p2,
     CF_TOL_ACCUM, 50, false, true, NULL},
    {"conv2d_k1", 2, {4, 4}, {{3, 4, 5, 3}, {2, 4, 1, 1}}, {F, F}, {S, S}, {0}, w_conv2d_k1, CF_TOL_ACCUM, 4, false,
     true, NULL},
    {"conv2d_stride3x1_bias", 3, {4, 4, 1}, {{2, 2, 8, 5}, {3, 2, 3, 2}, {3}}, {F, F, F}, {S, S, S}, {0},
     w_conv2d_s3x1_bias, CF_TOL_ACCUM, 12, false, true, NULL},
    {"conv2d_rows_stepped_views", 2, {4, 4}, {{2, 3, 8, 6}, {4, 3, 5, 3}}, {F, F}, {S, S}, {0}, w_conv2d_cut_rows,
     CF_TOL_ACCUM, 27, false, true, NULL},
    {"conv2d_step_among_size1_dims", 2, {4, 4}, {{1, 2, 4, 3}, {2, 4, 5, 4}}, {F, F}, {S, S}, {0}, w_conv2d_cut_size1,
     CF_TOL_ACCUM, 6, false, true, NULL},
    {"conv2d_w_windows_in_left_padding_bias", 3, {4, 4, 1}, {{2, 2, 4, 1}, {3, 2, 1, 1}, {3}}, {F, F, F}, {S, S, S},
     {0}, w_conv2d_s3p1_bias, CF_TOL_ACCUM, 2, false, true, NULL},
    {"conv2d_h_windows_in_left_padding_dilated", 2, {4, 4}, {{1, 2, 1, 5}, {2, 2, 1, 2}}, {F, F}, {S, S}, {0},
     w_conv2d_h_padding_only_dilated, CF_TOL_ACCUM, 4, false, true, NULL},
    {"conv2d_dilated_grouped", 2, {4, 4}, {{2, 4, 7, 6}, {6, 2, 3, 2}}, {F, F}, {S, S}, {0}, w_conv2d_dilated_grouped,
     CF_TOL_ACCUM, 12, false, true, NULL},
    {"conv2d_depthwise_bias", 3, {4, 4, 1}, {{2, 6, 7, 8}, {6, 1, 3, 3}, {6}}, {F, F, F}, {S, S, S}, {0},
     w_conv2d_depthwise_bias, CF_TOL_ACCUM, 9, false, true, NULL},
    {"conv1d_dilated_grouped", 2, {3, 3}, {{2, 4, 9}, {6, 2, 3}}, {F, F}, {S, S}, {0}, w_conv1d_dilated_grouped,
     CF_TOL_ACCUM, 6, false, true, NULL},
    {"conv_transpose2d_grouped", 2, {4, 4}, {{2, 4, 5, 4}, {4, 3, 3, 2}}, {F, F}, {S, S}, {0},
     w_conv_transpose2d_grouped, CF_TOL_ACCUM, 12, false, true, NULL},
};
const int cf_noptable = (int)(sizeof cf_optable / sizeof cf_optable[0]);

/* ---- inputs ------------------------------------------------------------------- */
const char *cf_variant_name(cf_variant v)
{
    static const char *const n[CF_V_COUNT] = {"contig", "transposed", "stepped", "offset"};
    return (unsigned)v < CF_V_COUNT ? n[v] : "?";
}

ff_dtype cf_op_input_dtype(const cf_opdef *def, int i, ff_dtype dt)
{
    return def->fixed[i] == FF_DTYPE_COUNT ? dt : def->fixed[i];
}

void *cf_op_input_values(const cf_opdef *def, int i, ff_dtype dt, cf_rng *rng)
{
    ff_dtype t = cf_op_input_dtype(def, i, dt);
    int64_t n = cf_numel(def->ndim[i], def->shape[i]);
    void *v = calloc((size_t)(n ? n : 1), ff_dtype_size(t));
    if (!v) abort();
    if (def->index_range[i] > 0)
        for (int64_t j = 0; j < n; j++) cf_set_i(v, t, j, cf_rng_int(rng, 0, def->index_range[i] - 1));
    else cf_fill_values(rng, v, t, n, def->dom[i]);
    return v;
}

ff_tensor *cf_make_input(ff_backend *be, const void *vals, int ndim, const int64_t *shape, ff_dtype dt,
                         cf_variant v, ff_tensor **base)
{
    *base = NULL;
    if (ndim == 0 || (v == CF_V_TRANSPOSED && ndim < 2)) v = CF_V_CONTIG;
    size_t sz = ff_dtype_size(dt);
    int64_t n = cf_numel(ndim, shape), ps[FF_MAX_DIMS];
    memcpy(ps, shape, sizeof(int64_t) * (size_t)ndim);
    int last = ndim - 1;
    if (v == CF_V_TRANSPOSED) ps[last] = shape[last - 1], ps[last - 1] = shape[last];
    if (v == CF_V_STEPPED) ps[last] = 2 * shape[last];
    if (v == CF_V_OFFSET) ps[0] = shape[0] + 1;
    int64_t pn = cf_numel(ndim, ps);
    unsigned char *phys = calloc((size_t)(pn ? pn : 1), sz);
    if (!phys) abort();
    const unsigned char *src = vals;
    for (int64_t i = 0; i < n; i++) {
        int64_t o = i;
        if (v == CF_V_TRANSPOSED) {
            int64_t r = shape[last - 1], c = shape[last], inner = (i % (r * c)), outer = i / (r * c);
            o = outer * r * c + (inner % c) * r + inner / c;
        } else if (v == CF_V_STEPPED) {
            o = (i / shape[last]) * ps[last] + 2 * (i % shape[last]);
        } else if (v == CF_V_OFFSET) {
            o = i + n / (shape[0] ? shape[0] : 1);
        }
        memcpy(phys + (size_t)o * sz, src + (size_t)i * sz, sz);
    }
    *base = ff_from_data_on(be, phys, ndim, ps, dt);
    free(phys);
    return *base ? cf_view_of(*base, v) : NULL;
}

ff_tensor *cf_view_of(ff_tensor *base, cf_variant v)
{
    int ndim = ff_tensor_ndim(base);
    if (ndim == 0 || (v == CF_V_TRANSPOSED && ndim < 2)) v = CF_V_CONTIG;
    switch (v) {
    case CF_V_TRANSPOSED: return ff_transpose(base, -1, -2);
    case CF_V_STEPPED: return ff_slice(base, -1, 0, ff_tensor_dim(base, -1), 2);
    case CF_V_OFFSET: return ff_slice(base, 0, 1, ff_tensor_dim(base, 0), 1);
    default: return ff_tensor_retain(base);
    }
}
