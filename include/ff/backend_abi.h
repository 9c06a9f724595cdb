/*
 * FusionFlow backend plugin ABI.
 *
 * This is the only header a backend author includes. It is self-contained (C11 +
 * <stddef.h>, <stdint.h>, <math.h>: link plugins with -lm), includes nothing else
 * from FusionFlow but its own two parts (backend_abi_qmatmul.h: the quantized matmul's
 * parameters and rule; backend_abi_random.h: the Philox rule), and defines:
 *   - the dtype and op-code enums shared with the core,
 *   - ff_view: an already-resolved strided view the core hands to every kernel,
 *   - ff_backend_vtable: the versioned struct of function pointers a plugin fills,
 *   - ff_philox4x32: the counter-based generator every backend's random fill uses,
 *     so one seed gives the same numbers on every backend.
 *
 * A plugin is a shared object that exports exactly one symbol:
 *     const ff_backend_vtable *ff_backend_entry(void);
 * The loader checks abi_version == FF_ABI_VERSION and struct_size >= FF_BACKEND_V1_SIZE
 * before calling anything else. The struct only ever grows at its end; entries past
 * struct_size are treated as NULL (the SQLite io_methods rule).
 *
 * Rules steps: how a rule enters. A plugin built against an older header keeps
 * loading AND keeps passing ff-conformance: the meaning of an existing entry is never
 * made stricter under its feet. A stricter rule for an existing entry (the sign of a
 * zero, which of tied values wins) enters as a new step: FF_ABI_STEP goes up by one,
 * the rule is listed below under its step, and a plugin states the step it keeps in
 * the vtable field abi_step (appended in step 5; = FF_ABI_STEP as compiled). A plugin whose
 * struct_size ends before abi_step, or that leaves it 0, is at FF_ABI_STEP_UNSTATED
 * and keeps that step's rules. ff-conformance judges each plugin by the rules of its
 * step; ff-info prints it. FF_ABI_VERSION does not change for a step (it changes only
 * when an entry's signature or existing meaning changes for everyone).
 *   Steps 1-4 (ABI 1's first release and the op codes appended to it; see "Growing the
 *     op enums"): no stated step. relu(-0) may be +0 or -0; MAXIMUM/MINIMUM of -0
 *     and +0, and MAX/MIN reductions over tied zeros, may give either zero.
 *   Step 5: relu(-0) = -0 (RELU(x) = x < 0 ? 0 : x); maximum(-0, +0) = maximum(+0,
 *     -0) = +0 and minimum of them -0; a MAX/MIN reduction over tied zeros gives the
 *     first of them in the order of the reduced elements (row-major).
 * A rule added by a later step lists here as "Step N: ...", and conformance/cf_steps.c
 * learns which cases to judge the old way below that step; the Values section below
 * gives today's rules and marks each one that a step introduced.
 *
 * supports() answers no (0) for every op code the backend does not implement: name
 * the codes you implement in a switch, and never compare with *_COUNT (op < FF_UNARY_
 * COUNT). The enums grow by appending codes without a version change, so a plugin
 * rebuilt against a newer header would otherwise claim codes it never implemented.
 *
 * Contract for every compute entry:
 *   - The core has done shape inference, broadcasting and type promotion. Broadcast
 *     operands arrive as views with stride 0; transposes arrive as permuted strides.
 *   - Strides and offsets are in elements (not bytes) and may be 0; they are never
 *     negative. Views may alias for reading; dst never overlaps an input unless dst
 *     and that input are the identical view (in-place elementwise ops): for binary
 *     and where, dst may be the identical view of either operand, not only the first.
 *   - Rank-0 views (one element at offset) and zero-size views may arrive, to every
 *     entry (softmax included); on a zero-size view a kernel does nothing, returns FF_OK.
 *   - On failure, call host->set_error() with a message and return a non-zero ff_status.
 *     The message is per thread (the caller's): call it on the thread that called the
 *     entry. A failure found later on a thread of your own (a device queue's callback,
 *     a worker) is recorded in your context and reported, with set_error and a status,
 *     by the next entry that waits for that work (download, sync) on its caller's thread.
 *   - A kernel never aborts or exits.
 *   - Entries are called from any thread, and from several at once on different views
 *     (the core holds no lock around them): keep per-call state on the stack or make
 *     shared state thread-safe.
 *   - A backend never changes the floating-point environment (rounding mode, flush-to-
 *     zero, denormals-are-zero, exception masks) as seen by its caller: the suite checks
 *     the environment around every call, and subnormal inputs and results must survive.
 *
 * Dtypes. Every backend must take F32 for every kind, and say in supports() what else
 * it takes; I32/I64/U8/BOOL indices, masks and casts are what the core sends for
 * integer work. F16 (IEEE binary16) and BF16 (bfloat16) are storage dtypes: a backend
 * that holds them takes them in copy and fill (supports(FF_KIND_COPY / FF_KIND_FILL)),
 * and may compute on them in any other entry it says yes to. For every entry it
 * declines on a half dtype, the core computes in f32: it copies the half operands to
 * f32 temporaries, runs the f32 entry and copies the result back, rounding once. A
 * backend that declines half copy leaves half tensors unusable on it (the core says so).
 * I8 and I16 (appended) are storage dtypes in the same way: a backend that copies and
 * fills them may compute on them where its supports() says so; for every entry it
 * declines, the core computes in I32 (integer results wrap back on the copy, which is
 * the wrap-around arithmetic of the narrow dtype itself).
 * C64 and C128 (appended) reach a backend only in entries whose supports() takes them
 * (no backend's does today): element i of a C64 view is the f32 pair at 2 * (offset +
 * sum i_d strides_d) of the buffer, (re, im). For every entry a backend declines, the core
 * works on real views of the same storage (the view's F32/F64 form with a last dim of 2
 * at stride 1 and doubled strides), composing complex products from real ones.
 *
 * Values: the semantics a backend must reproduce (the reference backend, backends/cpu,
 * is the executable form; ff-conformance checks each rule):
 *   - Conversions (copy and every store): into F16/BF16 from any float, to nearest even,
 *     once from the source value (f64 -> f16 never through f32), past the largest finite
 *     value to +-inf (f16: from 65520 on), subnormals kept, NaN -> quiet NaN; integers
 *     into F16/BF16 round once too; F16/BF16 into wider floats are exact. float ->
 *     integer is NaN -> 0 and truncation toward zero saturating to the int64 range, then
 *     I32 clamps to its range while U8, I8 and I16 wrap modulo 2^8 / 2^16 (-1.0 -> 255,
 *     300.0 -> 44 in U8, 200.0 -> -56 in I8, as PyTorch on x86); integer ->
 *     narrower integer wraps; anything -> BOOL is x != 0, so NaN -> true; BOOL -> number
 *     is 0 or 1. i64 -> f32 and f64 -> f32 round once, to nearest even.
 *   - Integer arithmetic wraps (two's complement: compute through uint64): ADD, SUB, MUL,
 *     POW, NEG and ABS of INT_MIN. DIV truncates, x / 0 = 0, INT_MIN / -1 = INT_MIN;
 *     FMOD has the dividend's sign, x % 0 = 0. POW with a negative exponent: 1 for base
 *     1, +-1 for base -1, else 0. Products past 2^53 stay exact (integer, not double).
 *   - BOOL arithmetic: ADD = or, MUL = and, MAXIMUM = or, MINIMUM = and.
 *   - Floats: MAXIMUM/MINIMUM and the MAX/MIN reductions propagate NaN, and
 *     maximum(-0, +0) = +0, minimum(-0, +0) = -0 in either order, and a MAX/MIN
 *     reduction over tied zeros gives the first of them (step 5). SIGN(NaN) = NaN,
 *     and SIGN, ABS and SQUARE of +-0 are +0 (sign(-0) = abs(-0) = square(-0) = +0,
 *     as PyTorch). RELU(x) = x < 0 ? 0 : x (NaN and -0 stay; step 5). ROUND is half
 *     to even, and keeps the sign of zero (round(-0.4) = -0). Every other op that maps
 *     0 to 0 keeps its sign (tanh(-0) = -0, neg(+0) = -0). SOFTPLUS(x) = x above 20 (PyTorch's threshold); SIGMOID and
 *     SOFTPLUS are stable for large |x|. Comparisons with NaN are false except NE.
 *   - Accumulation: float SUM/PROD/matmul must be at least as accurate as f32 pairwise
 *     summation (the reference accumulates in double; the suite's tolerances are in
 *     conformance/README.md and include sums no f32 running sum meets); integer SUM and
 *     PROD wrap in 64 bits.
 *   - Reductions over an empty set: SUM 0, PROD 1, ANY false, ALL true (the core refuses
 *     MAX/MIN/ARG* of one). ARGMAX/ARGMIN return the first index of the extreme, NaN
 *     counting as the extreme; with no axis in the mask every index is 0.
 *   - gather/scatter_add: an index outside [0, size) (negative ones too: the core has
 *     already wrapped what the user wrote) is FF_ERR_INDEX, and scatter_add checks every
 *     index before it writes.
 *   - softmax: subtract the row maximum, then exp(x - max) / sum and (x - max) - log(sum)
 *     for the log form; logits near the dtype's maximum must work.
 *   - NaN is a class of values, not a bit pattern: a NaN result may carry any sign and
 *     payload (a GPU's float and double units return different ones). The suite and the
 *     graphs' checked replays match NaN with NaN; everything else, -0 included, to the bit.
 */
#ifndef FF_BACKEND_ABI_H
#define FF_BACKEND_ABI_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever an existing entry changes meaning or signature. Adding entries at
 * the end of the vtable does not bump it (struct_size tells the loader what is there). */
#define FF_ABI_VERSION 1

/* The rules step this header describes (see "Rules steps" at the top), and the step of
 * a plugin that states none. */
#define FF_ABI_STEP 5
#define FF_ABI_STEP_UNSTATED 4

/* Maximum rank of a tensor. Fixed so views are plain structs with no allocation. */
#define FF_MAX_DIMS 8

#if defined(_WIN32)
#define FF_PLUGIN_EXPORT __declspec(dllexport)
#else
#define FF_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* The inline helpers below are plain C; a CUDA backend's kernels call the very same
 * ones (Philox, uniform and normal samples), so under nvcc they are __host__ __device__. */
#if defined(__CUDACC__)
#define FF_ABI_HD __host__ __device__
#else
#define FF_ABI_HD
#endif

/* The name of the one symbol a plugin exports. */
#define FF_BACKEND_ENTRY_SYMBOL "ff_backend_entry"

/* ---- status codes ------------------------------------------------------- */
typedef enum ff_status {
    FF_OK = 0,
    FF_ERR_INVALID = 1,     /* bad argument: shapes, dtypes, axes, NULL */
    FF_ERR_OOM = 2,         /* allocation failed */
    FF_ERR_OVERFLOW = 3,    /* size arithmetic overflowed */
    FF_ERR_UNSUPPORTED = 4, /* backend declined (op, dtype) */
    FF_ERR_BACKEND = 5,     /* backend failed (loading, init, device) */
    FF_ERR_INDEX = 6,       /* index out of range */
    FF_ERR_AUTOGRAD = 7,    /* autograd misuse (no grad_fn, in-place on saved tensor) */
    FF_ERR_IO = 8           /* file errors */
} ff_status;

/* ---- dtypes ------------------------------------------------------------- */
/* Values are ABI: never renumber. F16/BF16 are 2-byte storage dtypes (see "Dtypes" at
 * the top: copy and fill, compute optional). */
typedef enum ff_dtype {
    FF_F32 = 0,
    FF_F64 = 1,
    FF_I32 = 2,
    FF_I64 = 3,
    FF_U8 = 4,
    FF_BOOL = 5, /* one byte, 0 or 1 */
    FF_F16 = 6,  /* IEEE binary16: 1 sign, 5 exponent, 10 fraction bits */
    FF_BF16 = 7, /* bfloat16: the top 16 bits of an f32 */
    /* ---- appended after ABI v1's first release (see "Growing the dtype enum") ---- */
    FF_I8 = 8,   /* int8_t: torch.int8 (Tensor.char()) */
    FF_I16 = 9,  /* int16_t: torch.int16 (Tensor.short()) */
    FF_C64 = 10,  /* complex64: two f32, (re, im) interleaved, as PyTorch, NumPy and DLPack store it */
    FF_C128 = 11, /* complex128: two f64, likewise */
    FF_DTYPE_COUNT = 12
} ff_dtype;

/* Growing the dtype enum. Dtypes are appended before FF_DTYPE_COUNT and never
 * renumbered, so the ABI version stays 1: supports() must answer 0 for a dtype the
 * plugin does not know (name the dtypes you take, never compare with FF_DTYPE_COUNT),
 * and the core then computes through a wider dtype or says the backend cannot hold it.
 *   ABI 1, first release: F32 F64 I32 I64 U8 BOOL F16 BF16.
 *   ABI 1, dtype step 2:  I8, I16 (storage dtypes, as F16/BF16: see "Dtypes" at the top).
 *   ABI 1, dtype step 3:  C64, C128 (complex; see "Dtypes" at the top). */

#include "backend_abi_ops.h" /* the op codes: unary, binary, reduce, random, kinds, collectives, fft */

/* ---- views -------------------------------------------------------------- */
/* A resolved strided view of a backend buffer. Element (i0,...,in-1) lives at
 *   ((T *)buf)[offset + sum_d i_d * strides[d]]            (for a host-memory backend)
 * ndim == 0 is a scalar (one element at offset). */
typedef struct ff_view {
    void *buf;      /* the backend's own buffer handle, as returned by alloc */
    int64_t offset; /* in elements */
    ff_dtype dtype;
    int32_t ndim;
    int64_t shape[FF_MAX_DIMS];
    int64_t strides[FF_MAX_DIMS]; /* in elements, >= 0 */
} ff_view;

/* A fill value. The core sets both fields consistently: f for float dtypes, i for
 * integer and bool dtypes (i64 values beyond 2^53 survive through i). */
typedef struct ff_scalar {
    double f;
    int64_t i;
} ff_scalar;

/* Geometry of a 2-D convolution (the conv2d entries): stride and zero padding per
 * spatial dim, [0] = height, [1] = width; both >= 1 / >= 0.
 * Appended later: dilation (>= 1) and groups (>= 1; x has C = groups * w's dim 1
 * channels, y's O channels split into groups of O / groups, group g of y reading only
 * group g of x). A plugin built before them reads only stride and padding, so the core
 * hands it dilation 1 and groups 1 only; it sends others only to a backend whose
 * supports(FF_KIND_CONV2D, FF_CONV2D_DILATION_GROUPS, dtype) says yes. */
typedef struct ff_conv2d_params {
    int64_t stride[2];
    int64_t padding[2];
    int64_t dilation[2];
    int64_t groups;
} ff_conv2d_params;

/* The supports() op code (kind FF_KIND_CONV2D) by which a backend says that its three
 * conv2d entries honor ff_conv2d_params' dilation and groups. */
#define FF_CONV2D_DILATION_GROUPS 3

/* Dense linear algebra for the linalg entry. Every view is a batch of matrices (or of
 * vectors, for S and DET's scalars) over the same leading "batch" dims; the core
 * broadcasts batches and checks shapes first. n x n means the last two dims.
 *   SOLVE    src A (n x n), B (n x k)       dst X (n x k) with A X = B; a singular A
 *                                            (an exactly zero pivot in LU with partial
 *                                            pivoting) is an FF_ERR_INVALID error
 *   DET      src A (n x n)                  dst det (batch only); singular gives 0
 *   CHOLESKY src A (n x n), symmetric        dst L (n x n) lower, A = L L^T, zeros above;
 *                                            only A's lower triangle is read; not
 *                                            positive-definite is an FF_ERR_INVALID error
 *   QR       src A (m x n), k = min(m, n)    dst Q (m x q), R (q x n), q = k (reduced) or
 *                                            m (complete), Q^T Q = I, R upper, A = Q R,
 *                                            signs as LAPACK's Householder (geqrf)
 *   SVD      src A (m x n), k = min(m, n)    dst U (m x u), S (k), Vh (v x n) with u = k,
 *                                            v = k (reduced) or u = m, v = n (full);
 *                                            S descending, >= 0; A = U[:, :k] S Vh[:k];
 *                                            a NaN or inf in A is an FF_ERR_INVALID error
 *                                            ("non-finite values"), never NaN results
 *   LSTSQ    src A (m x n), B (m x k)        dst X (n x k): the minimum-norm minimizer of
 *                                            |A X - B|, singular values below
 *                                            eps(dtype) * max(m, n) * S[0] counted as 0;
 *                                            a non-finite A is an error as for SVD (a
 *                                            non-finite B gives NaN in X, as PyTorch)
 * SOLVE, DET, CHOLESKY and QR pass NaN and inf through to their results, as PyTorch. */
typedef enum ff_linalg_op {
    FF_LINALG_SOLVE = 0,
    FF_LINALG_DET,
    FF_LINALG_CHOLESKY,
    FF_LINALG_QR,
    FF_LINALG_SVD,
    FF_LINALG_LSTSQ,
    FF_LINALG_COUNT
} ff_linalg_op;

/* 2-D pooling (the pool2d entry) over x [N, C, H, W]: windows kernel[0] x kernel[1]
 * moved by stride, x padded by padding on both sides (padding <= kernel / 2, so every
 * window holds an element of x); output [N, C, OH, OW], OH = (H + 2 ph - kh) / sh + 1.
 *   MAX_FORWARD   dst y; src {x}: the largest element of each window (NaN if it holds one)
 *   MAX_BACKWARD  dst gx (x's shape, overwritten); src {gy, x, y}: each window's gy split
 *                 evenly among its elements of x equal to its y (windows may overlap: sums).
 *                 The rule of ABI v1's first plugins; the core no longer sends it.
 *   AVG_FORWARD   dst y; src {x}: each window's sum divided by kh kw (padding counts as zeros)
 *   AVG_BACKWARD  dst gx; src {gy}: every element gets gy / (kh kw) from each window it is in
 *   MAX_BACKWARD_FIRST  as MAX_BACKWARD, but each window's whole gy goes to ONE element:
 *                 the first equal to y in the window's row-major scan order, or, when y is
 *                 NaN, the window's last NaN (the index PyTorch's kernel picks: it replaces
 *                 its max on "v > max || isnan(v)"). The core pools max through the entry
 *                 only when supports() takes this op, so a plugin built before it was
 *                 appended (which answers 0 for an op it does not know) is never asked for
 *                 the even split: the core composes max pooling instead.
 *   ADAPTIVE_AVG_FORWARD   dst y [N, C, OH, OW] (OH, OW >= 0; H, W >= 1); src {x}: output
 *                 (i, j) is the mean of rows [floor(i H / OH), ceil((i + 1) H / OH)) x
 *                 columns likewise (PyTorch's adaptive_avg_pool2d); p is not read
 *   ADAPTIVE_AVG_BACKWARD  dst gx; src {gy}: each element gets gy / (window area) from
 *                 each window it is in; p is not read */
typedef enum ff_pool2d_op {
    FF_POOL2D_MAX_FORWARD = 0,
    FF_POOL2D_MAX_BACKWARD,
    FF_POOL2D_AVG_FORWARD,
    FF_POOL2D_AVG_BACKWARD,
    FF_POOL2D_MAX_BACKWARD_FIRST, /* appended: gradient to one element per window */
    FF_POOL2D_ADAPTIVE_AVG_FORWARD, /* appended with the next: adaptive average pooling */
    FF_POOL2D_ADAPTIVE_AVG_BACKWARD,
    FF_POOL2D_COUNT
} ff_pool2d_op;

typedef struct ff_pool2d_params {
    int64_t kernel[2];
    int64_t stride[2];
    int64_t padding[2];
} ff_pool2d_params;

/* Scaled dot-product attention (the optional attention entry), flash style: the T x T
 * scores never reach memory. Every view is 4-D [B, H, T, D] (the core folds leading dims
 * into B and H and broadcasts with stride 0; D may be 1..FF_ATTENTION_MAX_HEAD_DIM):
 *   FF_ATTENTION_FORWARD:  src {q [B,H,Tq,D], k [B,H,Tk,D], v [B,H,Tk,Dv] (, mask)}
 *                          dst {o [B,H,Tq,Dv], lse [B,H,Tq]}
 *   FF_ATTENTION_BACKWARD: src {go [B,H,Tq,Dv], q, k, v, o, lse (, mask)}
 *                          dst {gq, gk, gv} (q's, k's, v's shapes; dense, never stride 0)
 * With s[i,j] = scale * sum_d q[i,d] k[j,d], then + mask[i,j] (FF_ATTENTION_MASK_ADD), or
 * -inf where mask[i,j] is false (FF_ATTENTION_MASK_BOOL) or, causal, where j > i (PyTorch's
 * is_causal: the top-left-aligned lower triangle, also when Tq != Tk):
 *   lse[i] = log sum_j exp(s[i,j]),  p[i,j] = exp(s[i,j] - lse[i]),  o[i] = sum_j p[i,j] v[j]
 * and the backward gives the gradients of sum(go * o) (dp = go v^T, ds = p (dp - rowsum(go * o)),
 * gq = scale ds k, gk = scale ds^T q, gv = p^T go). A row whose every score is -inf (all
 * keys masked, or Tk = 0) has o = 0, lse = -inf and zero gradients (PyTorch 2.5's SDPA,
 * not the NaN of a bare softmax). The mask view (when p->mask != NONE) is [B, H, Tq, Tk],
 * broadcast with stride 0, FF_BOOL (true: the key takes part) or q's dtype (added).
 * q, k, v, o, go and the gradients have one float dtype; lse is F64 for F64, else F32.
 * Sums run in at least F32 (F64 for F64); F16/BF16 inputs accumulate in F32 and round
 * each output once. Results need not be bit-identical to the composition (the online
 * softmax reorders sums); conformance compares within the dtype's tolerance.
 * Dropout (only where supports(FF_KIND_ATTENTION, FF_ATTENTION_DROPOUT, dtype) says yes;
 * the core sends dropout_p = 0 elsewhere and composes): with 0 < dropout_p < 1, p[i,j] is
 * zeroed where u(seed, n) < dropout_p and scaled by 1 / (1 - dropout_p) elsewhere, n the
 * element's row-major index in [B, H, Tq, Tk] and u exactly what the random fill gives
 * element n of a contiguous [B, H, Tq, Tk] tensor of q's dtype (FF_RANDOM_UNIFORM,
 * counter base 0, [0, 1)), compared with dropout_p and scaled by 1 / (1 - dropout_p),
 * both rounded to q's dtype: F64 ff_random_uniform01(seed, n), F32
 * ff_random_uniform_f32(seed, n, 0, 1). That is ff_dropout's mask bit for bit, so the
 * composition is still the reference. lse stays that of the undropped scores (dropout
 * acts on p after the softmax, as PyTorch), o[i] = sum_j drop(p)[i,j] v[j], and the
 * backward recomputes the mask: gv = drop(p)^T go, ds = p (drop(go v^T) - rowsum(go * o)). */
typedef enum ff_attention_op { FF_ATTENTION_FORWARD = 0, FF_ATTENTION_BACKWARD = 1 } ff_attention_op;
/* supports() op code only (never an entry op): the entry honors dropout_p and seed */
#define FF_ATTENTION_DROPOUT 2
typedef enum ff_attention_mask {
    FF_ATTENTION_MASK_NONE = 0,
    FF_ATTENTION_MASK_BOOL = 1,
    FF_ATTENTION_MASK_ADD = 2
} ff_attention_mask;
#define FF_ATTENTION_MAX_HEAD_DIM 256
typedef struct ff_attention_params {
    double scale;   /* multiplies q . k (PyTorch's default 1 / sqrt(D) is the core's to pick) */
    int32_t causal; /* 1: j > i is masked */
    int32_t mask;   /* ff_attention_mask: the kind of the last src view, if any */
    double dropout_p; /* in [0, 1): 0 is no dropout (the rule above) */
    uint64_t seed;    /* keys the dropout mask's Philox */
} ff_attention_params;

#include "backend_abi_qmatmul.h" /* ff_qmatmul_params and the quantization rule */

/* ---- services the core offers a backend -------------------------------- */
/* A fused elementwise region of a captured graph (include/ff/graph.h), handed whole to
 * the optional fused entry. Instructions run in order over values; every value has the
 * iteration shape (ndim, shape) and the program's dtype. Values 0 .. n_views-1 are
 * views (inputs read with their strides, broadcast ones with stride 0; outputs
 * written); values n_views .. n_values-1 are temporaries that exist only inside the
 * program (registers, tiles), never in memory. The result must equal running each
 * instruction as the plain unary/binary entry over the whole shape, one after another;
 * the core builds programs only where element-by-element (tile-by-tile) evaluation gives
 * exactly that (a view that is written is read, if at all, through the identical view,
 * and never overlaps another view of the program). */
#define FF_FUSED_MAX_VIEWS 16  /* the core never sends a program with more views */
#define FF_FUSED_MAX_VALUES 64 /* or more values (views + temporaries) */

typedef struct ff_fused_inst {
    int32_t kind;   /* FF_KIND_UNARY (src[0]) or FF_KIND_BINARY (src[0] op src[1]) */
    int32_t op;     /* ff_unary_op / ff_binary_op; never one that writes FF_BOOL */
    int32_t dst;    /* value index */
    int32_t src[2];
} ff_fused_inst;

typedef struct ff_fused_program {
    ff_dtype dtype;              /* of every value */
    int32_t ndim;
    int64_t shape[FF_MAX_DIMS]; /* the iteration shape: every view has it */
    int32_t n_views;
    const ff_view *views;
    int32_t n_values; /* >= n_views */
    int32_t n_inst;
    const ff_fused_inst *inst;
} ff_fused_program;

typedef struct ff_host_api {
    uint32_t abi_version;
    uint32_t struct_size;
    /* Record an error message for the current thread; printf-style. */
    void (*set_error)(const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 1, 2)))
#endif
        ;
    /* Optional diagnostics (FF_LOG=1 shows them). */
    void (*log)(const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 1, 2)))
#endif
        ;
} ff_host_api;

/* ---- the vtable --------------------------------------------------------- */
/* Every function receives the ctx pointer that init() produced. Required entries
 * must be non-NULL; optional ones may be NULL and the core composes them. */
typedef struct ff_backend_vtable {
    uint32_t abi_version; /* = FF_ABI_VERSION */
    uint32_t struct_size; /* = sizeof(ff_backend_vtable) as compiled by the plugin */
    const char *name;     /* short name: "cpu", "cpu_blas" */
    const char *version;  /* the backend's own version string */
    const char *description;
    uint32_t flags;       /* FF_BACKEND_HOST_MEMORY if buffers are host pointers */

    /* ---- lifecycle (required) ---- */
    /* 1 */ ff_status (*init)(const ff_host_api *host, void **ctx);
    /* 2 */ void (*shutdown)(void *ctx);
    /* 3 */ int (*supports)(void *ctx, ff_op_kind kind, int op, ff_dtype dtype);

    /* ---- memory (required) ---- */
    /* 4 */ void *(*alloc)(void *ctx, size_t nbytes); /* NULL + set_error on failure; nbytes may be 0 */
    /* 5 */ void (*free)(void *ctx, void *buf);
    /* upload and download are complete when they return: the core reuses or frees the
     * host memory at once after upload, and reads it at once after download. Both are
     * ordered with the entries called before them (download waits for the work that
     * writes what it reads); compute entries may return before their work is done. */
    /* 6 */ ff_status (*upload)(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes);
    /* 7 */ ff_status (*download)(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes);
    /* 8 */ ff_status (*sync)(void *ctx);

    /* ---- compute (required) ---- */
    /* 9 */ ff_status (*fill)(void *ctx, const ff_view *dst, ff_scalar value);
    /* Strided copy with dtype conversion (float->int truncates toward zero, any
     * non-zero -> bool is 1, NaN->int is 0). Also the device-to-device copy. */
    /* 10 */ ff_status (*copy)(void *ctx, const ff_view *dst, const ff_view *src);
    /* 11 */ ff_status (*unary)(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
    /* 12 */ ff_status (*binary)(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a,
                                 const ff_view *b);
    /* 13 */ ff_status (*reduce)(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src,
                                 uint32_t axes_mask);
    /* Batched matmul: dst[..., M, N] = a[..., M, K] @ b[..., K, N]. All three have the
     * same rank >= 2 and equal batch shapes (broadcast batches have stride 0). */
    /* 14 */ ff_status (*matmul)(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
    /* dst = cond ? a : b, elementwise; cond is FF_BOOL, a/b have dst's dtype. */
    /* 15 */ ff_status (*where)(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a,
                                const ff_view *b);
    /* dst[i..][j][k..] = src[i..][index[i..][j][k..]][k..] along axis (torch.gather);
     * index is FF_I64 with dst's shape (the core converts every integer index to I64
     * first; the in-tree backends also take I32, which nothing sends); out-of-range
     * index -> FF_ERR_INDEX. */
    /* 16 */ ff_status (*gather)(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index,
                                 int axis);
    /* dst[i..][index[i..][j][k..]][k..] += src[i..][j][k..] along axis; index has src's
     * shape. Accumulates in order, so duplicates add up. */
    /* 17 */ ff_status (*scatter_add)(void *ctx, const ff_view *dst, const ff_view *index,
                                      const ff_view *src, int axis);
    /* Element with row-major logical index n takes counter (counter_base + n) of
     * Philox4x32-10 keyed by seed; see ff_random_uniform01 / ff_random_normal01 below. */
    /* 18 */ ff_status (*random)(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed,
                                 uint64_t counter_base, double p0, double p1);

    /* ---- optional (NULL = the core composes it from required entries) ---- */
    /* softmax (or log_softmax if log != 0) along axis (0 <= axis < ndim, or axis 0 of a
     * 0-d view: one element, softmax 1 and log_softmax 0); float dtypes only; dst may be
     * the identical view as src. */
    ff_status (*softmax)(void *ctx, const ff_view *dst, const ff_view *src, int axis, int log);
    /* Bytes in use (allocated and not yet freed), held by the allocator's cache, and the
     * peak in use; may be NULL. A buffer counts as freed when free() returns, even while
     * the device still holds it for work queued before (a free queued on the device): the
     * suite checks that in_use is back where it was after every case, without a sync. */
    ff_status (*memory_stats)(void *ctx, size_t *in_use, size_t *cached, size_t *peak);
    /* Return cached memory to the system; may be NULL. */
    ff_status (*empty_cache)(void *ctx);

    /* ---- appended after ABI v1's first release (NULL/absent in older plugins) ---- */
    /* One line describing where the buffers live, for `ff-info -v` and messages, e.g.
     * "OpenCL: NVIDIA A100 on NVIDIA CUDA, 80 GiB, 108 compute units". Writes a
     * NUL-terminated string of at most cap bytes. May be NULL (host backends). */
    ff_status (*device_info)(void *ctx, char *buf, size_t cap);

    /* 2-D convolution, NCHW, cross-correlation as PyTorch's conv2d, no bias (the core
     * adds it), on rank-4 views of any strides; outputs never alias inputs and are
     * overwritten. With x [N, C, H, W], w [O, C, KH, KW], y [N, O, OH, OW] where
     * OH = (H + 2 ph - KH) / sh + 1 (likewise OW):
     *   conv2d:                 y[n,o,i,j] = sum_{c,p,q} x[n,c,i sh + p - ph, j sw + q - pw] w[o,c,p,q]
     * (with dilation d and groups G, where the backend takes them: KH becomes
     * dh (KH - 1) + 1 in OH, x's index i sh + p dh - ph, and c runs over the C / G
     * channels of o's group: x[n, g C/G + c, ...] with g = o / (O / G))
     *   conv2d_backward_input:  gx = dL/dx given gy = dL/dy (the transposed convolution)
     *   conv2d_backward_weight: gw = dL/dw given gy and x
     * (x outside [0, H) x [0, W) reads as 0.) The core uses them only when all three are
     * present and supports(FF_KIND_CONV2D, op, dtype) says yes for the op; otherwise it
     * composes the convolution from views and matmul (the reference). Accumulation as
     * matmul's. May be NULL. */
    ff_status (*conv2d)(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p);
    ff_status (*conv2d_backward_input)(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                       const ff_conv2d_params *p);
    ff_status (*conv2d_backward_weight)(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                        const ff_conv2d_params *p);

    /* Inclusive scan along axis (0 <= axis < ndim; a 0-d view is one element): op 0
     * cumulative sum, 1 cumulative product. dst and src have one dtype and one shape; dst
     * may be the identical view of src. Floats accumulate in double and each prefix is
     * rounded once; integers wrap in 64 bits (the core sends I64 for integer inputs, as
     * PyTorch promotes them); bool is not sent. May be NULL: the core then reports that
     * the backend does not support cumsum/cumprod. */
    ff_status (*scan)(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);

    /* Stable argsort along axis: dst (FF_I64, src's shape) receives for every line the
     * indices that order src ascending (descending != 0: descending); equal values keep
     * their index order, NaN is larger than every number (last ascending, first
     * descending), -0 equals +0; integers compare exactly (i64 beyond 2^53 too), bool as
     * 0/1. Every dtype. May be NULL: the core then reports that the backend does not
     * support sort (sort, argsort, topk, kthvalue, median are built on it). */
    ff_status (*argsort)(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending);

    /* Dense linear algebra (see ff_linalg_op for each op's views and rules): n_dst
     * outputs and n_src inputs, all F32 or all F64 (one dtype). May be NULL: the core
     * then reports that the backend does not support det, inverse, solve, ... */
    ff_status (*linalg)(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src);
    /* Discrete Fourier transform of every line along axis, unnormalized, F32 or F64 (dst
     * and src share it; compute in at least the dtype's precision: the reference sums in
     * double). A complex view has a last dim of size 2 (re, im); axis is never that dim.
     * With n the signal length and m = n / 2 + 1 (n >= 1):
     *   FORWARD, INVERSE: src and dst complex, one shape, n = shape[axis];
     *                     dst[k] = sum_t src[t] e^(-+2 pi i k t / n)
     *   R2C: src real [.., n, ..]; dst complex [.., m, .., 2]: the FORWARD bins 0..m-1
     *   C2R: src complex [.., m, .., 2]; dst real [.., n, ..] (n = dst.shape[axis]):
     *        dst[t] = Re X0 + 2 sum_{0<k<n-m+1} Re(X_k e^(2 pi i k t / n)) + [n even] Re X_{n/2} (-1)^t
     *        i.e. the INVERSE of the Hermitian spectrum; the imaginary parts of bin 0 and
     *        (n even) bin n/2 are ignored, as FFTW and PocketFFT do.
     * dst never overlaps src, and src is left untouched (FFTW's c2r needs
     * FFTW_PRESERVE_INPUT). Zero lines (a 0 in another dim) are a no-op. May be NULL:
     * the core then reports that the backend does not support fft. */
    ff_status (*fft)(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);

    /* Batch normalization in training mode over x [N, C, *] (channel dim 1; statistics
     * over every other dim, M elements per channel), all views of x's dtype (F32 or F64),
     * the [C] ones 1-D; sums in double. Half x (F16/BF16, where supports() says so): x, g,
     * y and gx half, the [C] views (w, b, mean, invstd, var, gw, gb) F32, as PyTorch keeps
     * a half layer's parameters and statistics; y and gx are computed in f32 or wider
     * and rounded once. A backend declining half gets the f32 form through the core's detour:
     *   op 0 forward:  src {x, w, b}, dst {y, mean, invstd, var}: mean and the biased var
     *                  of each channel (two passes), invstd = 1 / sqrt(var + eps),
     *                  y = (x - mean) invstd w + b
     *   op 1 backward: src {g, x, mean, invstd, w}, dst {gx, gw, gb}: with
     *                  xhat = (x - mean) invstd, gb = sum g, gw = sum g xhat,
     *                  gx = w invstd (g - gb / M - xhat gw / M)
     *   op 2 eval (appended; supports() says whether a backend has it): src {x, scale,
     *                  shift}, dst {y}: y = x scale + shift per channel (the core folds
     *                  the running statistics, weight and bias into scale and shift)
     * May be NULL: the core composes batch norm from reductions and elementwise ops. */
    ff_status (*batch_norm)(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                            double eps);

    /* 2-D max and average pooling and their backward passes (see ff_pool2d_op); every
     * view of x's dtype (F32 or F64). May be NULL: the core pools through window views
     * and reductions. */
    ff_status (*pool2d)(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src,
                        const ff_pool2d_params *p);

    /* Runs a fused elementwise program (ff_fused_program above) in one pass: graphs hand
     * their chains of elementwise ops here so that temporaries never reach memory. The
     * core sends only programs whose dtype passes supports(FF_KIND_FUSED, 0, dtype) and
     * whose every op passes supports(FF_KIND_UNARY / FF_KIND_BINARY, op, dtype); results
     * must be bit-identical to the plain entries'. May be NULL: the core then runs the
     * chain itself, tile by tile through the unary and binary entries. */
    ff_status (*fused)(void *ctx, const ff_fused_program *prog);

    /* Where the buffers live in DLPack's terms, for zero-copy DLPack export and import
     * (ff_to_dlpack, ff_from_dlpack_on) on a backend whose buffers are not host memory:
     * *device_type is a DLDeviceType (kDLCUDA = 2, kDLROCM = 10, ...) and *device_id the
     * device's index; a buf handle is then the device address of the buffer's first byte
     * (an element is at buf + offset * element size). The call also waits until the device
     * has finished everything queued so far, by this backend and by anyone else using the
     * device (CUDA: cudaDeviceSynchronize), so that memory handed over in either direction
     * is complete: the legacy DLPack protocol has no stream handshake. Imported memory then
     * arrives in views as buf handles that alloc never returned: upload and download must
     * take them (the core releases them through their producer, never through free). May
     * be NULL: the core refuses DLPack export, and import of device memory. */
    ff_status (*dlpack_device)(void *ctx, int32_t *device_type, int32_t *device_id);

    /* Collectives between the processes of a job on the backend's own memory, without
     * staging through the host (NCCL on cuda). ff_dist (include/ff/dist.h) bootstraps and
     * orders them over MPI; the backend moves the bytes:
     *   coll_id:   on rank 0 only: writes an opaque id naming a new group (*len <= cap,
     *              cap = FF_COLL_ID_MAX), which the core hands to every rank.
     *   coll_init: on every rank, with that id, the rank and the group's size: *comm
     *              receives the group's handle. It returns once every rank has joined.
     *   coll_run:  one collective (ff_coll_op; arg: the ff_coll_reduce of an allreduce,
     *              the root of a broadcast) on dense views (contiguous from their offset)
     *              of one dtype that supports(FF_KIND_COLLECTIVE, op, dtype) accepted.
     *              Queued in order with the backend's own work: what entries called
     *              before it wrote, it reads; entries called after it see its result.
     *              async != 0 lets it run beside the backend's later work (a second
     *              stream) until coll_wait; until then nobody touches dst or src.
     *   coll_wait: the backend's later work waits for every async collective on comm
     *              (the host need not).
     *   coll_free: leaves the group (after a coll_wait); shutdown frees groups still open.
     * Every rank runs the same collectives on the same group in the same order (the core
     * agrees on each one over MPI first). Either all five are present or the core uses
     * none; the core uses them only when every rank's tensor is on a backend that has
     * them and coll_init succeeded on every rank, else it stages through host memory. */
    ff_status (*coll_id)(void *ctx, void *id, size_t cap, size_t *len);
    ff_status (*coll_init)(void *ctx, const void *id, size_t len, int rank, int size, void **comm);
    ff_status (*coll_run)(void *ctx, void *comm, int op, int arg, int async, const ff_view *dst, const ff_view *src);
    ff_status (*coll_wait)(void *ctx, void *comm);
    void (*coll_free)(void *ctx, void *comm);

    /* The rules step the plugin keeps: FF_ABI_STEP as compiled ("Rules steps" at the
     * top). 0, or a struct_size that ends before it: FF_ABI_STEP_UNSTATED. */
    uint32_t abi_step;

    /* Scaled dot-product attention, forward and backward (ff_attention_params above):
     * n_dst / n_src as listed there (the mask adds one src). Only for dtypes and ops
     * that supports(FF_KIND_ATTENTION, op, dtype) accepts. May be NULL: the core then
     * composes attention from matmul, the mask, softmax and matmul (O(T^2) memory). */
    ff_status (*attention)(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                           const ff_attention_params *p);

    /* Quantized matmul (ff_qmatmul_params above): n_src = 3, plus one with a bias and one
     * with per-row activation scales. Only when supports(FF_KIND_QMATMUL, 0, FF_U8)
     * accepts. May be NULL: the core's int8 ops then fail with FF_ERR_UNSUPPORTED. */
    ff_status (*qmatmul)(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p);

    /* Layer normalization over the last dim of x viewed as [R, D] (the core folds the
     * normalized trailing dims into D and the others into R; D >= 1, R may be 0). x, y, g,
     * gx are [R, D], w, b, gw, gb [D], all of x's dtype (F32, F64, and F16/BF16 where
     * supports(FF_KIND_LAYER_NORM, op, dtype) says yes); mean and invstd are [R] F64 in
     * every case: statistics kept in double, since f32 ones would lose xhat when |mean|
     * >> std, and (x - mean)^2 of f32 or bf16 values overflows f32 (layer_norm of [1e30,
     * 1, 2] is [1.41, -0.71, -0.71]). Any strides (the core sends contiguous views). The
     * core always passes w and b (ones and zeros for a layer without them). Per row, in
     * double, each result rounded once to its dtype (an F16/BF16 y may come from f32
     * arithmetic instead, as PyTorch's, when it stays within one half ulp of that:
     * cpu_blas's forward, with the double path for rows whose squares leave f32's range):
     *   op 0 forward:  src {x, w, b}, dst {y, mean, invstd}: mean and the biased var of
     *                  the row (two passes), invstd = 1 / sqrt(var + eps),
     *                  y = (x - mean) invstd w + b
     *   op 1 backward: src {g, x, mean, invstd, w}, dst {gx, gw, gb}: with
     *                  xhat = (x - mean) invstd and gxhat = g w (per element),
     *                  gx = invstd (gxhat - mean_D(gxhat) - xhat mean_D(gxhat xhat)),
     *                  gw = sum_R g xhat, gb = sum_R g (gw and gb of R = 0 are zeros)
     * May be NULL: the core composes layer norm from reductions and elementwise ops in
     * f64 (the reference of the conformance rows). */
    ff_status (*layer_norm)(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                            double eps);

    /* A Linear layer's forward with its epilogue: dst = act(a b + bias), a [M, K] and b
     * [K, N] as the matmul entry takes them (2-D, any strides; b is usually the weight
     * [N, K] seen transposed), src {a, b} or {a, b, bias}, bias dst's shape [M, N] with
     * row stride 0 (one row of N), act an ff_unary_op or FF_LINEAR_NO_ACT (-1). All one
     * dtype; dst is no operand's buffer. Per element: the sum over k as the matmul entry
     * forms it (f32 for F16/BF16), + bias, act, all in that precision, and one rounding to
     * dst's dtype, as PyTorch's addmm with a fused activation. For F32 and F64 these are
     * the composition's own steps; for a half the composition rounds after each of them,
     * so the two may differ by those roundings (within matmul's tolerance). Only where
     * supports(FF_KIND_LINEAR, act, dtype) says yes. May be NULL: the core composes
     * matmul, add and the activation. */
    ff_status (*linear)(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act);

    /* Records a run of this thread's entry calls for replay on the device as one unit, as
     * a CUDA graph does (include/ff/graph.h's replays use it; op an ff_record_op):
     *   FF_RECORD_BEGIN:   the entry calls that follow on this thread, until
     *                      FF_RECORD_END, are recorded and not run: nothing executes,
     *                      and every launch of the record runs them again with these
     *                      calls' arguments and views (whose buffers the caller keeps);
     *   FF_RECORD_END:     *handle = the record; or FF_ERR_UNSUPPORTED, *handle NULL, the
     *                      record dropped, when a call could not be recorded (it needed
     *                      the host mid-call, say). A call that fails while recording
     *                      returns its own error; the caller still ends the recording;
     *   FF_RECORD_LAUNCH:  runs *handle's calls once more, in order with other work;
     *   FF_RECORD_RELEASE: frees *handle (a launch in flight still completes).
     * May be NULL: replays call the entries one by one. */
    ff_status (*graph_record)(void *ctx, int op, void **handle);
} ff_backend_vtable;

typedef enum ff_record_op {
    FF_RECORD_BEGIN = 0,
    FF_RECORD_END = 1,
    FF_RECORD_LAUNCH = 2,
    FF_RECORD_RELEASE = 3
} ff_record_op;

/* The size of version 1 of the struct (everything up to and including empty_cache):
 * the loader refuses anything smaller. Frozen: entries appended in later versions do
 * not change it, so older plugins keep loading (their missing tail reads as NULL). */
#define FF_BACKEND_V1_SIZE ((uint32_t)(offsetof(ff_backend_vtable, empty_cache) + sizeof(void (*)(void))))

/* flags */
#define FF_BACKEND_HOST_MEMORY 0x1u /* buffers are plain host pointers (DLPack kDLCPU) */

/* The entry point every plugin exports (define it with FF_PLUGIN_EXPORT). */
typedef const ff_backend_vtable *(*ff_backend_entry_fn)(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);

/* ---- shared helpers ------------------------------------------------------ */
static inline FF_ABI_HD size_t ff_dtype_size(ff_dtype t)
{
    switch (t) {
    case FF_F32: case FF_I32: return 4;
    case FF_F64: case FF_I64: return 8;
    case FF_U8: case FF_BOOL: case FF_I8: return 1;
    case FF_F16: case FF_BF16: case FF_I16: return 2;
    case FF_C64: return 8;
    case FF_C128: return 16;
    default: return 0;
    }
}

static inline FF_ABI_HD int ff_dtype_is_float(ff_dtype t)
{
    return t == FF_F32 || t == FF_F64 || t == FF_F16 || t == FF_BF16;
}

static inline FF_ABI_HD int ff_dtype_is_complex(ff_dtype t) { return t == FF_C64 || t == FF_C128; }

/* Number of elements of a view (the core guarantees it does not overflow). */
static inline int64_t ff_view_numel(const ff_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->shape[d];
    return n;
}

#include "backend_abi_random.h" /* ff_philox4x32 and the random samples */

#ifdef __cplusplus
}
#endif
#endif /* FF_BACKEND_ABI_H */
