/*
 * FusionFlow user API: the op library. Every op runs on the backend its inputs live
 * on (all tensor inputs must share one backend), records itself for autograd when an
 * input requires grad and grad mode is on, and follows NumPy/PyTorch semantics:
 * broadcasting, type promotion (docs/semantics.md), keepdim. Same ownership rule as
 * tensor.h: results are new references, inputs borrowed, NULL on error.
 */
#ifndef FF_OPS_H
#define FF_OPS_H

#include "ff/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- creation ----------------------------------------------------------- */
ff_tensor *ff_eye(int64_t n, int64_t m, ff_dtype dtype);
ff_tensor *ff_arange(double start, double stop, double step, ff_dtype dtype);
ff_tensor *ff_linspace(double start, double stop, int64_t num, ff_dtype dtype);
/* Seeded random: the same (seed) gives the same numbers on every backend. */
ff_tensor *ff_rand_uniform(int ndim, const int64_t *shape, ff_dtype dtype, double low, double high,
                           uint64_t seed);
ff_tensor *ff_rand_normal(int ndim, const int64_t *shape, ff_dtype dtype, double mean, double std,
                          uint64_t seed);
/* The same, drawing from the global generator (ff_manual_seed). */
ff_tensor *ff_rand(int ndim, const int64_t *shape, ff_dtype dtype);  /* U[0,1) */
ff_tensor *ff_randn(int ndim, const int64_t *shape, ff_dtype dtype); /* N(0,1) */
/* The same on a backend (NULL: the default), so a tensor made for a device is made there
 * (and, inside a graph capture, on the region's backend). */
ff_tensor *ff_eye_on(ff_backend *be, int64_t n, int64_t m, ff_dtype dtype);
ff_tensor *ff_arange_on(ff_backend *be, double start, double stop, double step, ff_dtype dtype);
ff_tensor *ff_linspace_on(ff_backend *be, double start, double stop, int64_t num, ff_dtype dtype);
ff_tensor *ff_rand_uniform_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double low, double high,
                              uint64_t seed);
ff_tensor *ff_rand_normal_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype, double mean, double std,
                             uint64_t seed);
ff_tensor *ff_rand_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_randn_on(ff_backend *be, int ndim, const int64_t *shape, ff_dtype dtype);
ff_tensor *ff_randperm(int64_t n);                                    /* i64 permutation of 0..n-1 */
ff_tensor *ff_astype(const ff_tensor *t, ff_dtype dtype); /* always a new tensor */
ff_tensor *ff_clone(const ff_tensor *t);                  /* contiguous copy, differentiable */
ff_tensor *ff_detach(const ff_tensor *t);                 /* shares storage, no history */

/* ---- elementwise unary -------------------------------------------------- */
/* Integer inputs to float-valued ops (exp, log, sqrt, sin, tanh, sigmoid, ...) are
 * promoted to f32 first, as PyTorch does. */
ff_tensor *ff_unary(ff_unary_op op, const ff_tensor *x);
ff_tensor *ff_neg(const ff_tensor *x);
ff_tensor *ff_abs(const ff_tensor *x);
ff_tensor *ff_sign(const ff_tensor *x);
ff_tensor *ff_exp(const ff_tensor *x);
ff_tensor *ff_log(const ff_tensor *x);
ff_tensor *ff_log1p(const ff_tensor *x);
ff_tensor *ff_expm1(const ff_tensor *x);
ff_tensor *ff_sqrt(const ff_tensor *x);
ff_tensor *ff_rsqrt(const ff_tensor *x);
ff_tensor *ff_square(const ff_tensor *x);
ff_tensor *ff_reciprocal(const ff_tensor *x);
ff_tensor *ff_sin(const ff_tensor *x);
ff_tensor *ff_cos(const ff_tensor *x);
ff_tensor *ff_tanh(const ff_tensor *x);
ff_tensor *ff_sigmoid(const ff_tensor *x);
ff_tensor *ff_relu(const ff_tensor *x);
ff_tensor *ff_gelu(const ff_tensor *x, bool tanh_approx);
ff_tensor *ff_silu(const ff_tensor *x);
ff_tensor *ff_softplus(const ff_tensor *x);
ff_tensor *ff_erf(const ff_tensor *x);
ff_tensor *ff_atan(const ff_tensor *x);
ff_tensor *ff_asin(const ff_tensor *x); /* NaN outside [-1, 1] */
ff_tensor *ff_acos(const ff_tensor *x);
ff_tensor *ff_erfinv(const ff_tensor *x); /* +-inf at +-1, NaN outside [-1, 1] */
ff_tensor *ff_lgamma(const ff_tensor *x);   /* log|Gamma(x)|: +inf at 0 and the negative integers */
ff_tensor *ff_digamma(const ff_tensor *x);  /* -inf at +0, +inf at -0, NaN at the negative integers */
ff_tensor *ff_trigamma(const ff_tensor *x); /* polygamma(1, x); +inf at the poles; no gradient */
ff_tensor *ff_floor(const ff_tensor *x);
ff_tensor *ff_ceil(const ff_tensor *x);
ff_tensor *ff_round(const ff_tensor *x);
ff_tensor *ff_isnan(const ff_tensor *x);
ff_tensor *ff_isinf(const ff_tensor *x);
ff_tensor *ff_logical_not(const ff_tensor *x);
ff_tensor *ff_bitwise_not(const ff_tensor *x); /* integers: ~x; bool: logical not */

/* ---- elementwise binary (broadcasting) ---------------------------------- */
ff_tensor *ff_binary(ff_binary_op op, const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_add(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_sub(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_mul(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_div(const ff_tensor *a, const ff_tensor *b); /* true division: ints -> f32 */
ff_tensor *ff_pow(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_atan2(const ff_tensor *a, const ff_tensor *b); /* angle of (b, a): torch.atan2(a, b) */

ff_tensor *ff_maximum(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_minimum(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_fmod(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_eq(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_ne(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_lt(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_le(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_gt(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_ge(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_logical_and(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_logical_or(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_logical_xor(const ff_tensor *a, const ff_tensor *b);
/* Integer and bool tensors: bitwise ops in their own dtype (bool: logical). */
ff_tensor *ff_bitwise_and(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_bitwise_or(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_bitwise_xor(const ff_tensor *a, const ff_tensor *b);
/* Python's % and //: remainder has the divisor's sign, floor_divide rounds toward -inf;
 * exact for integers of every width, PyTorch's formulas for floats. Integer division
 * by zero gives 0 for both (PyTorch raises). floor_divide has no gradient (a step
 * function: zero almost everywhere, as floor). */
ff_tensor *ff_remainder(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_floor_divide(const ff_tensor *a, const ff_tensor *b);
/* Scalar operand: a "weak" number that does not widen the tensor's dtype within its
 * category (f32 + 2.0 -> f32; i32 + 2 -> i32; i32 + 2.5 -> f32), as PyTorch (see
 * ff_number in tensor.h). */
ff_tensor *ff_binary_number(ff_binary_op op, const ff_tensor *a, ff_number s);
ff_tensor *ff_rbinary_number(ff_binary_op op, ff_number s, const ff_tensor *b); /* s op b */
/* The double forms take s as a float number (i64 tensor * 2.0 -> f32, as PyTorch);
 * use the _number forms for int and bool scalars. */
ff_tensor *ff_binary_scalar(ff_binary_op op, const ff_tensor *a, double s);
ff_tensor *ff_rbinary_scalar(ff_binary_op op, double s, const ff_tensor *b); /* s op b */
ff_tensor *ff_add_scalar(const ff_tensor *a, double s);
ff_tensor *ff_sub_scalar(const ff_tensor *a, double s);
ff_tensor *ff_mul_scalar(const ff_tensor *a, double s);
ff_tensor *ff_div_scalar(const ff_tensor *a, double s);
ff_tensor *ff_pow_scalar(const ff_tensor *a, double s);
/* min(max(x, lo), hi); lo and hi are tensors broadcasting with x, or NULL for no bound;
 * gradients reach all three (PyTorch's clamp). NaN in x stays NaN; a NaN bound element
 * gives NaN there (no gradient), as PyTorch's clamp with tensor bounds. */
ff_tensor *ff_clamp(const ff_tensor *x, const ff_tensor *lo, const ff_tensor *hi);
/* clamp with number bounds (NULL: none), PyTorch's clamp(Tensor, Scalar?, Scalar?): the
 * dtype is x's promoted by each number (u8 with -1 and 5.5: f32, [1, 254, 0] -> [1, 5.5,
 * 0]), and the numbers are converted to it after; an int bound an integer result cannot
 * hold is an error (u8 takes -255..255, -1 being 255, as PyTorch). A NaN bound makes
 * every element NaN when both are given; alone it leaves x as it is (PyTorch 1.13). */
ff_tensor *ff_clamp_number(const ff_tensor *x, const ff_number *lo, const ff_number *hi);
/* clamp with float bounds (an integer x gives f32); an infinite bound clamps nothing. */
ff_tensor *ff_clip(const ff_tensor *x, double lo, double hi);
ff_tensor *ff_where(const ff_tensor *cond, const ff_tensor *a, const ff_tensor *b);
/* a + w (b - a), as b - (b - a)(1 - w) when |w| >= 0.5 so w = 1 gives b exactly. */
ff_tensor *ff_lerp(const ff_tensor *a, const ff_tensor *b, double weight);
/* x where x > 0, else x * negative_slope (real float dtypes; PyTorch's leaky_relu and its
 * gradient, g * slope at x = 0). ops/activation.c. */
ff_tensor *ff_leaky_relu(const ff_tensor *x, double negative_slope);

/* ---- reductions --------------------------------------------------------- */
/* axes: naxes entries (negative allowed, no duplicates); naxes == 0 reduces all. */
ff_tensor *ff_sum(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_mean(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_prod(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_amax(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_amin(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_argmax(const ff_tensor *x, int axis, bool keepdim); /* i64 */
ff_tensor *ff_argmin(const ff_tensor *x, int axis, bool keepdim);
ff_tensor *ff_var(const ff_tensor *x, int naxes, const int *axes, int64_t correction, bool keepdim);
ff_tensor *ff_std(const ff_tensor *x, int naxes, const int *axes, int64_t correction, bool keepdim);
ff_tensor *ff_logsumexp(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_any(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_all(const ff_tensor *x, int naxes, const int *axes, bool keepdim);
ff_tensor *ff_norm(const ff_tensor *x, double p, int naxes, const int *axes, bool keepdim);
/* Inclusive cumulative sum / product along axis (negative counts from the end), as
 * torch.cumsum / torch.cumprod: integer and bool inputs give i64. Differentiable. */
ff_tensor *ff_cumsum(const ff_tensor *x, int axis);
ff_tensor *ff_cumprod(const ff_tensor *x, int axis);

/* ---- Fourier transforms (ops/fft.c; the backend's optional fft entry) ---- */
/* torch.fft.fft / ifft / rfft / irfft along one axis. Complex values are real tensors
 * whose LAST dim has size 2 (re, im): torch.view_as_real's layout. fft, ifft and irfft
 * take it (a last dim other than 2 is an error) and their axis counts only the complex
 * dims, never the pair (-1 is the dim before it); rfft takes a real tensor of any shape
 * and returns the n/2 + 1 bins in that layout; irfft returns a real tensor. n = -1: the
 * input's length along axis (irfft: 2 (m - 1) from m bins); otherwise the input is
 * zero-padded or truncated to n (irfft: to n/2 + 1 bins) first. f32 and f64 (integer and
 * bool inputs compute in f32); differentiable as PyTorch. irfft ignores the imaginary
 * parts of bin 0 and (n even) bin n/2. A backend without the fft entry (opencl) gets
 * FF_ERR_UNSUPPORTED, "backend 'X' does not support fft". docs/semantics.md, "FFT". */
typedef enum ff_fft_norm {
    FF_FFT_NORM_BACKWARD = 0, /* PyTorch's default: the inverse transforms scale by 1/n */
    FF_FFT_NORM_FORWARD = 1,  /* the forward transforms scale by 1/n */
    FF_FFT_NORM_ORTHO = 2     /* both by 1/sqrt(n) */
} ff_fft_norm;
ff_tensor *ff_fft_fft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm);
ff_tensor *ff_fft_ifft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm);
ff_tensor *ff_fft_rfft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm);
ff_tensor *ff_fft_irfft(const ff_tensor *x, int64_t n, int axis, ff_fft_norm norm);

/* ---- sorting (ops/sort.c; the backend's optional argsort entry) ---------- */
/* Stable; NaN sorts above every number; -0 == +0. Indices are i64. values/indices may be
 * NULL when not wanted; on success the caller owns what it asked for. Values are
 * differentiable (their gradient goes back to where each came from). */
ff_tensor *ff_argsort(const ff_tensor *x, int axis, bool descending);
ff_status ff_sort(const ff_tensor *x, int axis, bool descending, ff_tensor **values, ff_tensor **indices);
/* The k largest (smallest unless largest) along axis, in sorted order. */
ff_status ff_topk(const ff_tensor *x, int64_t k, int axis, bool largest, ff_tensor **values, ff_tensor **indices);
/* The k-th smallest (k from 1) along axis; keepdim keeps the axis as size 1. */
ff_status ff_kthvalue(const ff_tensor *x, int64_t k, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices);
/* The lower median along axis (PyTorch's), NaN if the line holds one. */
ff_status ff_median(const ff_tensor *x, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices);
/* The most frequent value along axis (the smallest of equally frequent ones) and the index
 * of its last occurrence, as torch.mode. */
ff_status ff_mode(const ff_tensor *x, int axis, bool keepdim, ff_tensor **values, ff_tensor **indices);
/* i64 insertion points of values into sorted_seq's last axis (1-d: for values of any
 * shape; else matching leading dims): the count of elements < v (right: <= v). */
ff_tensor *ff_searchsorted(const ff_tensor *sorted_seq, const ff_tensor *values, bool right);
/* The bucket of each x among 1-d sorted boundaries: searchsorted(boundaries, x, right). */
ff_tensor *ff_bucketize(const ff_tensor *x, const ff_tensor *boundaries, bool right);
/* num_samples i64 draws per row of non-negative weights (1-d or 2-d), from the global
 * generator; without replacement no index repeats and zero weights are never drawn. */
ff_tensor *ff_multinomial(const ff_tensor *weights, int64_t num_samples, bool replacement);

/* ---- data-dependent sizes (ops/counting.c): one scalar read sizes the result ---- */
/* Coordinates of the non-zero elements (NaN counts), [count, ndim] i64, row-major order. */
ff_tensor *ff_nonzero(const ff_tensor *x);
/* Occurrences of each value of a 1-d non-negative integer x (weighted: sums of weights,
 * f32 for f32 weights and f64 for any other, as PyTorch; else i64), length
 * max(max(x) + 1, minlength). */
ff_tensor *ff_bincount(const ff_tensor *x, const ff_tensor *weights, int64_t minlength);
/* torch.histc: a histogram of x in `bins` equal bins over [min, max] (min == max: the
 * data's range); elements outside and NaN ignored; counts in x's (float) dtype. */
ff_tensor *ff_histc(const ff_tensor *x, int64_t bins, double min, double max);
/* The distinct values of x (flattened), ascending (each NaN its own); optionally each
 * element's value index (x's shape) and each value's count (i64). Out-pointers may be NULL. */
ff_status ff_unique(const ff_tensor *x, ff_tensor **values, ff_tensor **inverse, ff_tensor **counts);

/* ---- linear algebra ----------------------------------------------------- */
ff_tensor *ff_matmul(const ff_tensor *a, const ff_tensor *b); /* numpy.matmul semantics */
ff_tensor *ff_outer(const ff_tensor *a, const ff_tensor *b);
/* A^n of square (batched) matrices (n = 0: the identity; n < 0: inverse(A)^-n); differentiable. */
ff_tensor *ff_matrix_power(const ff_tensor *a, int64_t n);
/* torch.einsum: "ij,jk->ik", implicit outputs, "...", repeated labels (diagonals),
 * size-1 broadcasting; composed from permute/reshape/matmul/sum, differentiable. */
ff_tensor *ff_einsum(const char *equation, int n, ff_tensor *const *operands);

/* Dense linear algebra (ops/decomp.c) as torch.linalg, batched over leading dims, F32
 * and F64, on the backend's optional linalg entry (cpu and cpu_blas; others report that
 * they do not support it). All differentiable (see ops/decomp.c for the formulas).
 *   ff_solve     X with A X = B; A [..., n, n], B [..., n, k] or a vector [..., n] (B of
 *                rank 1, or A's shape without its last dim); batch dims broadcast; a
 *                singular A is an error
 *   ff_inverse   A^-1 (singular: an error)
 *   ff_det       det(A), shape [...]
 *   ff_cholesky  L lower with A = L L^T (upper: L^T); A must be symmetric positive-definite
 *                (only its lower triangle is read)
 *   ff_qr        A = Q R; reduced (Q [..., m, k], R [..., k, n], k = min(m, n)) or
 *                complete (Q [..., m, m], R [..., m, n])
 *   ff_svd       A = U diag(S) Vh, S descending; reduced (U [..., m, k], Vh [..., k, n]) or
 *                full_matrices (U [..., m, m], Vh [..., n, n]); singular vectors are
 *                unique only up to sign (and within repeated singular values)
 *   ff_lstsq     the minimum-norm X minimizing |A X - B| (A [..., m, n], B [..., m, k] or a
 *                vector); singular values below eps * max(m, n) * S[0] count as zero */
ff_tensor *ff_solve(const ff_tensor *a, const ff_tensor *b);
ff_tensor *ff_inverse(const ff_tensor *a);
ff_tensor *ff_det(const ff_tensor *a);
ff_tensor *ff_cholesky(const ff_tensor *a, bool upper);
ff_status ff_qr(const ff_tensor *a, bool complete, ff_tensor **q, ff_tensor **r);
ff_status ff_svd(const ff_tensor *a, bool full_matrices, ff_tensor **u, ff_tensor **s, ff_tensor **vh);
ff_tensor *ff_lstsq(const ff_tensor *a, const ff_tensor *b);

/* ---- neural-net ops ----------------------------------------------------- */
ff_tensor *ff_softmax(const ff_tensor *x, int axis);
/* F.interpolate on [N, C, *spatial] (1 to 3 spatial dims) to size[0..nsize): nearest, or
 * linear per axis (bilinear, trilinear); scales (NULL: in / out; else finite and > 0) as
 * 1 / scale_factor when the caller gave one. Differentiable. */
typedef enum ff_interp_mode { FF_INTERP_NEAREST = 0, FF_INTERP_LINEAR = 1 } ff_interp_mode;
ff_tensor *ff_interpolate(const ff_tensor *x, int nsize, const int64_t *size, const double *scales,
                          ff_interp_mode mode, bool align_corners);
ff_tensor *ff_log_softmax(const ff_tensor *x, int axis);
/* logits [N, C] (or [C]), targets integer [N] (or 0-d); mean over N. */
ff_tensor *ff_cross_entropy(const ff_tensor *logits, const ff_tensor *targets);
ff_tensor *ff_mse_loss(const ff_tensor *pred, const ff_tensor *target); /* mean */
ff_tensor *ff_one_hot(const ff_tensor *indices, int64_t num_classes);  /* i64 */
ff_tensor *ff_embedding(const ff_tensor *weight, const ff_tensor *indices);
ff_tensor *ff_gather(const ff_tensor *x, int axis, const ff_tensor *index);
ff_tensor *ff_scatter_add(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src);
/* torch.scatter: a copy of x with src written at index along axis; where indices repeat
 * within a line the last (in index order) wins. Differentiable in x and src. */
ff_tensor *ff_scatter(const ff_tensor *x, int axis, const ff_tensor *index, const ff_tensor *src);
ff_tensor *ff_index_select(const ff_tensor *x, int axis, const ff_tensor *index);
/* ---- indexing with several index tensors (ops/index_put.c) ----------------- */
/* PyTorch's advanced indexing. indices[k] indexes dim k of t: NULL is the whole dim
 * (':'), an integer tensor picks positions (negative count from the end), a bool mask
 * of rank m covers dims k..k+m-1 (its true elements' coordinates). The integer tensors
 * broadcast together to a shape B; t[indices] has shape B in place of the indexed dims
 * when those are adjacent, else B followed by the other dims. Every index is checked
 * before anything is computed (out of range: FF_ERR_INDEX naming the dim, the index
 * and the size). Index values are read back to the host once (shapes depend on them). */
ff_tensor *ff_index(const ff_tensor *t, int nidx, const ff_tensor *const *indices);
/* t with t[indices] = values (values broadcast to t[indices]'s shape, cast to t's
 * dtype); accumulate adds instead (duplicates add up). Without accumulate, duplicate
 * positions take the value of their last occurrence. Gradients: to t where not
 * overwritten, to values gathered at the indices (every occurrence). */
ff_tensor *ff_index_put(const ff_tensor *t, int nidx, const ff_tensor *const *indices, const ff_tensor *values,
                        bool accumulate);
/* t[..., index[i], ...] (dim) += alpha * src[..., i, ...] / = src[..., i, ...]. */
ff_tensor *ff_index_add(const ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src, double alpha);
ff_tensor *ff_index_copy(const ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src);
/* where(mask, value, t) with the bool mask broadcast to t's shape; value (0-d, or any
 * shape broadcasting to t's) is cast to t's dtype. */
ff_tensor *ff_masked_fill(const ff_tensor *t, const ff_tensor *mask, const ff_tensor *value);
/* src's elements, in order, into t where mask (broadcast to t) holds. */
ff_tensor *ff_masked_scatter(const ff_tensor *t, const ff_tensor *mask, const ff_tensor *src);

/* Identity when !training or p == 0; else zeroes with probability p, scales by 1/(1-p). */
ff_tensor *ff_dropout(const ff_tensor *x, double p, bool training, uint64_t seed);

/* ---- shape ops (copying) ------------------------------------------------ */
ff_tensor *ff_concat(int n, ff_tensor *const *ts, int axis);
ff_tensor *ff_stack(int n, ff_tensor *const *ts, int axis);
/* Splits into pieces of `size` along axis (last may be smaller); writes up to max_out
 * new references to out and returns the count, or -1 on error. */
int ff_split(const ff_tensor *x, int64_t size, int axis, ff_tensor **out, int max_out);
int ff_chunk(const ff_tensor *x, int chunks, int axis, ff_tensor **out, int max_out);
/* The slices x[..., i, ...] along axis, as views (torch.unbind); same calling convention. */
int ff_unbind(const ff_tensor *x, int axis, ff_tensor **out, int max_out);
/* pads: 2 * ndim entries (before, after) for each dim, from dim 0. */
ff_tensor *ff_pad(const ff_tensor *x, const int64_t *pads, double value);
ff_tensor *ff_flip(const ff_tensor *x, int naxes, const int *axes);
ff_tensor *ff_tril(const ff_tensor *x, int64_t diagonal);
ff_tensor *ff_triu(const ff_tensor *x, int64_t diagonal);
ff_tensor *ff_repeat(const ff_tensor *x, int nreps, const int64_t *reps); /* torch.Tensor.repeat */
ff_tensor *ff_tile(const ff_tensor *x, int nreps, const int64_t *reps);   /* numpy.tile */

/* ---- convolution, pooling, normalization ------------------------------- */
/* Compositions of the differentiable ops above (im2col from strided slice views,
 * reductions, elementwise), so autograd and every backend come for free. All take
 * floating inputs of one dtype and follow PyTorch (dilation 1, groups 1, floor mode). */
/* x [N, C, H, W], w [O, C, KH, KW], bias [O] or NULL -> [N, O, OH, OW] with
 * OH = (H + 2 pad_h - KH) / stride_h + 1 (likewise OW); padding is zeros. Dilation,
 * groups, 1-D and 3-D: ff_conv below. */
ff_tensor *ff_conv2d(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, int64_t stride_h,
                     int64_t stride_w, int64_t pad_h, int64_t pad_w);
/* The geometry of ff_conv and ff_conv_transpose; entry d of each array is spatial dim
 * d (only the first nd = rank(x) - 2 are read). Every field must be set. */
typedef struct ff_conv_opts {
    int64_t stride[3];         /* >= 1 */
    int64_t padding[3];        /* >= 0, zeros on both sides */
    int64_t dilation[3];       /* >= 1: the kernel's taps are this far apart */
    int64_t output_padding[3]; /* ff_conv_transpose only: >= 0, below stride or dilation */
    int64_t groups;            /* >= 1, dividing C and O */
} ff_conv_opts;
/* PyTorch's conv1d/2d/3d, by x's rank: x [N, C, S...] (1 to 3 spatial dims), w [O,
 * C / groups, K...], bias [O] or NULL -> [N, O, (S + 2 p - d (K - 1) - 1) / s + 1 ...].
 * conv1d runs as conv2d over H = 1 (the backend's entries where it has them). */
ff_tensor *ff_conv(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o);
/* PyTorch's conv_transpose1d/2d/3d: x [N, C, S...], w [C, O / groups, K...], bias [O] or
 * NULL -> [N, O, (S - 1) s - 2 p + d (K - 1) + output_padding + 1 ...]: the gradient of
 * ff_conv with respect to its input, run forward (the backend's conv2d_backward_input
 * entry where it has it); its own gradients are ff_conv and conv's weight gradient. */
ff_tensor *ff_conv_transpose(const ff_tensor *x, const ff_tensor *w, const ff_tensor *bias, const ff_conv_opts *o);
/* The gradients of y = ff_conv(x, w, bias, o) (transposed: ff_conv_transpose) for gy =
 * dL/dy, without running the forward again: *gx = dL/dx and *gw = dL/dw, each only where
 * its pointer is non-NULL (new references; bias's gradient is gy summed over every dim but
 * 1). For callers that keep the graph themselves (a PyTorch device); nothing is recorded.
 * 2-D and 1-D on a backend with the conv2d entries run its backward entries; elsewhere the
 * forward runs once more under autograd. gy must have the forward's output shape and x's
 * dtype. */
ff_status ff_conv_backward(const ff_tensor *gy, const ff_tensor *x, const ff_tensor *w, const ff_conv_opts *o,
                           bool transposed, ff_tensor **gx, ff_tensor **gw);
/* Max over each window of x [N, C, H, W], padded with -inf; pad <= kernel / 2 as in
 * PyTorch, so every window holds an input element. A window's gradient goes to one
 * element, PyTorch's index: its first maximum in row-major order (its last NaN if any). */
ff_tensor *ff_max_pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w);
/* Mean over each window, zero padding counted (PyTorch's count_include_pad=True). */
ff_tensor *ff_avg_pool2d(const ff_tensor *x, int64_t kh, int64_t kw, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w);
/* Normalizes over the last nnorm dims: (x - mean) / sqrt(var + eps) (biased var), then
 * * weight + bias; weight and bias (each may be NULL) have x's last nnorm dims. */
ff_tensor *ff_layer_norm(const ff_tensor *x, int nnorm, const ff_tensor *weight, const ff_tensor *bias,
                         double eps);
/* x [N, C] or [N, C, ...], normalized per channel over every dim but 1; running_mean,
 * running_var, weight, bias are [C] (each may be NULL; the running pair both or
 * neither). training: batch statistics (biased variance) normalize, and the running
 * pair, if given, is updated in place under no-grad: r = (1 - momentum) r + momentum s,
 * with the unbiased variance, as PyTorch. Needs more than one value per channel.
 * Eval: the running pair (then required) normalizes. */
ff_tensor *ff_batch_norm(const ff_tensor *x, ff_tensor *running_mean, ff_tensor *running_var,
                         const ff_tensor *weight, const ff_tensor *bias, bool training, double momentum,
                         double eps);

/* ---- linear ------------------------------------------------------------- */
/* torch.nn.functional.linear followed by an activation: act(x weight^T + bias), x [..., K],
 * weight [N, K], bias [N] or NULL -> [..., N]; act an ff_unary_op (FF_UNARY_RELU,
 * FF_UNARY_GELU_ERF, ...) or FF_LINEAR_NO_ACT. Where no gradient is needed (inference)
 * and the backend has the linear entry, one call: the sum, bias and activation in the
 * product's precision, a half result rounded once (as PyTorch's addmm); else, and always
 * where autograd or a graph capture watches, ff_matmul, ff_add and ff_unary. */
ff_tensor *ff_linear_act(const ff_tensor *x, const ff_tensor *weight, const ff_tensor *bias, int act);

/* ---- attention ---------------------------------------------------------- */
/* PyTorch 2's F.scaled_dot_product_attention: q [..., Tq, D], k [..., Tk, D], v [..., Tk,
 * Dv] (leading dims broadcast, as matmul's) -> [..., Tq, Dv] = softmax(q k^T scale + mask) v,
 * one op with one autograd node. attn_mask: NULL, FF_BOOL (true: the key takes part) or
 * q's dtype (added to the scores), broadcasting to [..., Tq, Tk]. is_causal: key j > query
 * i is masked (the top-left-aligned triangle, as PyTorch; refused together with a mask).
 * scale: NaN or <= 0 picks 1 / sqrt(D). A query whose every key is masked gets 0 (and 0
 * gradients), as PyTorch 2.5's SDPA. dropout_p > 0 (training) drops attention weights
 * with the generator seeded by seed, through the composition (matmul, mask, softmax,
 * dropout, matmul); otherwise the backend's attention entry runs where it has one
 * (flash style: O(T) memory, the backward recomputes the scores from the saved
 * log-sum-exp), the composition where it has none. */
ff_tensor *ff_scaled_dot_product_attention(const ff_tensor *q, const ff_tensor *k, const ff_tensor *v,
                                           const ff_tensor *attn_mask, double dropout_p, bool is_causal,
                                           double scale, uint64_t seed);

/* ---- recurrent cells (ops/rnn_cell.c) ------------------------------------ */
/* One time step of nn.RNN (tanh or relu), nn.LSTM or nn.GRU, one autograd node. The
 * caller projects the input of all time steps at once (x_proj = x W_ih^T + b_ih, one
 * GEMM) and passes step t's rows, [B, G H] with G = 1 (RNN), 4 (LSTM: i, f, g, o) or 3
 * (GRU: r, z, n, PyTorch's order); the cell adds h W_hh^T + b_hh (b_hh may be NULL):
 *   RNN   h' = act(x_proj + h W^T + b)
 *   LSTM  c' = f c + i g, h' = o tanh(c')  (h [B, P], w_hh [4 H, P]; with proj_size P
 *         the caller multiplies h' by W_hr^T)
 *   GRU   h' = (1 - z) n + z h, n = tanh(x_n + r (h W_hn^T + b_hn))
 * c and *c_out are the LSTM's only (NULL otherwise). All operands share one float dtype
 * and backend. Gradients reach x_proj, h, c, w_hh and b_hh; second derivatives
 * (create_graph) through the cell are refused. */
typedef enum ff_rnn_mode { FF_RNN_TANH = 0, FF_RNN_RELU, FF_RNN_LSTM, FF_RNN_GRU } ff_rnn_mode;
ff_status ff_rnn_cell(ff_rnn_mode mode, const ff_tensor *x_proj, const ff_tensor *h, const ff_tensor *c,
                      const ff_tensor *w_hh, const ff_tensor *b_hh, ff_tensor **h_out, ff_tensor **c_out);
/* One direction of a whole layer (ops/rnn_layer.c), one autograd node: the cell's step
 * over x_proj [N, G H], step t being the next batch_sizes[t] rows (non-increasing sizes,
 * a PackedSequence's; a padded batch has steps equal sizes B), from h0 [B, H] (c0 for
 * the LSTM), forward or reverse in time (each sequence then starts at its own last
 * step). *out [N, H] holds every step's h'; *h_n (*c_n) each sequence's last state. No
 * projection (proj_size runs the cell per step). Faster than the cell in a loop: no
 * node per step, and x_proj's gradient is built in one buffer. */
ff_status ff_rnn_layer(ff_rnn_mode mode, const ff_tensor *x_proj, int64_t steps, const int64_t *batch_sizes,
                       bool reverse, const ff_tensor *h0, const ff_tensor *c0, const ff_tensor *w_hh,
                       const ff_tensor *b_hh, ff_tensor **out, ff_tensor **h_n, ff_tensor **c_n);

/* ---- destination-passing forms (PyTorch's out=) ------------------------- */
/* The result goes into out's memory (any strides; it must have the result's shape and
 * dtype), allocating nothing when the operands already have the compute dtype: for
 * loops that reuse buffers. out may be an operand's identical view (x = exp(x)); other
 * overlaps are computed through a temporary. Not recorded by autograd: refused while
 * grad mode is on and an operand or out requires grad. */
ff_status ff_unary_out(ff_unary_op op, ff_tensor *out, const ff_tensor *x);
ff_status ff_binary_out(ff_binary_op op, ff_tensor *out, const ff_tensor *a, const ff_tensor *b);
ff_status ff_matmul_out(ff_tensor *out, const ff_tensor *a, const ff_tensor *b); /* out shares no memory with a, b */

/* ---- in place ----------------------------------------------------------- */
/* Recorded by autograd as PyTorch records them (docs/semantics.md, "In-place operations
 * and autograd"): on a tensor with history, or with an operand that requires grad, the op
 * becomes a node and the tensor's history (a view's: its base's) is rebased onto it.
 * Refused (FF_ERR_AUTOGRAD) on a leaf that requires grad, or a view of one, while grad
 * mode is on; a tensor saved for backward and modified afterwards fails the backward
 * pass with both versions named. */
ff_status ff_add_(ff_tensor *x, const ff_tensor *y);
ff_status ff_sub_(ff_tensor *x, const ff_tensor *y);
ff_status ff_mul_(ff_tensor *x, const ff_tensor *y);
ff_status ff_div_(ff_tensor *x, const ff_tensor *y);
ff_status ff_add_scalar_(ff_tensor *x, double s);
ff_status ff_mul_scalar_(ff_tensor *x, double s);
ff_status ff_fill_(ff_tensor *x, double value);
ff_status ff_zero_(ff_tensor *x);
ff_status ff_copy_(ff_tensor *dst, const ff_tensor *src); /* broadcasting, casting */
/* dst's elements, row-major, from host memory of nbytes = numel x dtype size (the
 * counterpart of ff_tensor_to_host): one upload into dst's memory when dst is contiguous
 * (a captured graph's input takes its next batch so), through a staging tensor otherwise.
 * While capturing, the bytes are captured as they are: replays write them again. */
ff_status ff_copy_from_host_(ff_tensor *dst, const void *src, size_t nbytes);
/* x += alpha * y, a common optimizer step. */
ff_status ff_axpy_(ff_tensor *x, double alpha, const ff_tensor *y);
/* In place forms of the indexed writes above: t's own memory (through its view, so a
 * view writes into its base) gets the result; nothing is written when an index is bad. */
ff_status ff_index_put_(ff_tensor *t, int nidx, const ff_tensor *const *indices, const ff_tensor *values,
                        bool accumulate);
ff_status ff_index_add_(ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src, double alpha);
ff_status ff_index_copy_(ff_tensor *t, int dim, const ff_tensor *index, const ff_tensor *src);
ff_status ff_masked_fill_(ff_tensor *t, const ff_tensor *mask, const ff_tensor *value);
ff_status ff_masked_scatter_(ff_tensor *t, const ff_tensor *mask, const ff_tensor *src);
/* x takes result, which an op computed out of place from x, as that op's in-place form
 * would: result's values are written into x's memory and, under autograd, x's history
 * (a view's: its base's) is rebased onto result's. result is the caller's temporary
 * (its node is taken over): use it for nothing afterwards but ff_tensor_release. Any
 * op gets its in-place form so (Python's sigmoid_, clamp_, t[mask] = v). */
ff_status ff_inplace_result_(ff_tensor *x, ff_tensor *result);
/* The older form of the above, kept for C callers: dst's memory gets
 * src's values (broadcast, cast), and the returned new header views that memory with
 * src's history (dst itself keeps its own). Refused on a leaf that requires grad. */
ff_tensor *ff_assign(ff_tensor *dst, const ff_tensor *src);

/* Complex tensors (FF_C64, FF_C128: (re, im) pairs, interleaved; ops/complex.c). The
 * arithmetic ops take them (add, sub, mul, div, pow, matmul, sum, mean, exp, log, sqrt,
 * sin, cos, abs, ...) with PyTorch's promotion (real with complex gives complex) and its
 * gradient convention (.grad of a complex leaf is dL/d re + i dL/d im). */
ff_tensor *ff_view_as_real(const ff_tensor *t);    /* c64 [S] -> f32 [S, 2], the same storage */
ff_tensor *ff_view_as_complex(const ff_tensor *t); /* f32 [S, 2] (last stride 1) -> c64 [S], a view */
ff_tensor *ff_real(const ff_tensor *t);            /* a view; a real tensor is its own real part */
ff_tensor *ff_imag(const ff_tensor *t);            /* a view; refused for real tensors, as PyTorch */
ff_tensor *ff_complex(const ff_tensor *re, const ff_tensor *im); /* torch.complex: f32 or f64, broadcast */
ff_tensor *ff_polar(const ff_tensor *abs, const ff_tensor *angle); /* abs (cos angle + i sin angle) */
ff_tensor *ff_conj(const ff_tensor *t);            /* a copy with the imaginary part negated */
ff_tensor *ff_angle(const ff_tensor *t);           /* atan2(im, re); real: pi below 0, else 0 */

#ifdef __cplusplus
}
#endif
#endif /* FF_OPS_H */
