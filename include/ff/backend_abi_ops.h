/*
 * Part of include/ff/backend_abi.h, which includes it where this section stood: the op
 * codes of every entry (unary, binary, reduce, the kinds supports() is asked about, fft)
 * with what each one computes. A backend includes backend_abi.h, never this file alone.
 */
#ifndef FF_BACKEND_ABI_OPS_H
#define FF_BACKEND_ABI_OPS_H
#ifndef FF_BACKEND_ABI_H
#error "include ff/backend_abi.h, which includes this file"
#endif

/* ---- op codes ----------------------------------------------------------- */
/* Unary: dst has src's dtype, except the FF_UNARY_IS* / LOGICAL_NOT family which
 * write FF_BOOL. The core only sends float dtypes for transcendental ops. */
typedef enum ff_unary_op {
    FF_UNARY_NEG = 0,
    FF_UNARY_ABS,
    FF_UNARY_SIGN,
    FF_UNARY_EXP,
    FF_UNARY_LOG,
    FF_UNARY_LOG1P,
    FF_UNARY_EXPM1,
    FF_UNARY_SQRT,
    FF_UNARY_RSQRT,
    FF_UNARY_SQUARE,
    FF_UNARY_RECIPROCAL,
    FF_UNARY_SIN,
    FF_UNARY_COS,
    FF_UNARY_TANH,
    FF_UNARY_SIGMOID,
    FF_UNARY_RELU,
    FF_UNARY_GELU_TANH,
    FF_UNARY_GELU_ERF,
    FF_UNARY_SILU,
    FF_UNARY_SOFTPLUS,
    FF_UNARY_FLOOR,
    FF_UNARY_CEIL,
    FF_UNARY_ROUND, /* half to even, as NumPy and PyTorch */
    FF_UNARY_ISNAN,
    FF_UNARY_ISINF,
    FF_UNARY_LOGICAL_NOT,
    FF_UNARY_ERF,
    /* ---- appended after ABI v1's first release (see "Growing the op enums") ---- */
    FF_UNARY_BITWISE_NOT, /* I32/I64/U8: ~x in the dtype. Never sent for floats; for ~bool
                           * the core sends LOGICAL_NOT, but a backend that accepts
                           * BITWISE_NOT on BOOL must compute the logical not (not ~1). */
    FF_UNARY_ATAN,        /* float only, as C atan/asin/acos: asin/acos outside [-1, 1] is NaN */
    FF_UNARY_ASIN,
    FF_UNARY_ACOS,
    FF_UNARY_ERFINV,      /* float only: erf's inverse, +-inf at +-1, NaN outside [-1, 1] */
    FF_UNARY_LGAMMA,      /* float only: log|Gamma(x)|, +inf at 0, the negative integers and +-inf */
    FF_UNARY_DIGAMMA,     /* float only: Gamma'/Gamma; -inf at +0, +inf at -0, NaN at the negative
                           * integers and -inf, +inf at +inf (PyTorch's values) */
    FF_UNARY_TRIGAMMA,    /* float only: digamma's derivative (polygamma(1, x)); +inf at 0 and the
                           * negative integers (its poles), NaN at -inf, +0 at +inf */
    FF_UNARY_COUNT
} ff_unary_op;

/* The linear entry's act when no activation follows the sum (FF_KIND_LINEAR's op). */
#define FF_LINEAR_NO_ACT (-1)

/* Binary: a and b have the same dtype. dst has that dtype, except comparisons and
 * logical ops (FF_BINARY_EQ ... FF_BINARY_LOGICAL_XOR), which write FF_BOOL. Integer DIV truncates toward zero and integer
 * division by zero yields 0 (the core never sends integer DIV from ff_div, which
 * promotes to float); FMOD has C fmod sign semantics (sign of the dividend). */
typedef enum ff_binary_op {
    FF_BINARY_ADD = 0,
    FF_BINARY_SUB,
    FF_BINARY_MUL,
    FF_BINARY_DIV,
    FF_BINARY_POW,
    FF_BINARY_MAXIMUM, /* NaN-propagating, as torch.maximum */
    FF_BINARY_MINIMUM,
    FF_BINARY_FMOD,
    FF_BINARY_EQ,
    FF_BINARY_NE,
    FF_BINARY_LT,
    FF_BINARY_LE,
    FF_BINARY_GT,
    FF_BINARY_GE,
    FF_BINARY_LOGICAL_AND,
    FF_BINARY_LOGICAL_OR,
    FF_BINARY_LOGICAL_XOR,
    /* ---- appended after ABI v1's first release (see "Growing the op enums") ---- */
    FF_BINARY_BITWISE_AND, /* I32/I64/U8/BOOL, bitwise in the operands' dtype (on bool's 0/1
                            * that is logical); never sent for floats */
    FF_BINARY_BITWISE_OR,
    FF_BINARY_BITWISE_XOR,
    FF_BINARY_ATAN2,       /* float only, C atan2(a, b): the angle of (b, a), signed zeros honoured */
    FF_BINARY_COUNT
} ff_binary_op;

/* Growing the op enums. New op codes are appended before *_COUNT and never
 * renumbered, so the ABI version stays 1: a plugin built against an older header
 * sees an op value it does not know, and supports() must answer 0 for it (answer
 * only for the ops you implement, never "everything below some bound" you did not
 * check). The core then reports "backend X does not support ..." for that op.
 *   ABI 1, first release: unary NEG..ERF, binary ADD..LOGICAL_XOR.
 *   ABI 1, second step:   FF_UNARY_BITWISE_NOT, FF_BINARY_BITWISE_AND/OR/XOR.
 *   ABI 1, third step:    FF_UNARY_ATAN, FF_UNARY_ASIN, FF_UNARY_ACOS, FF_UNARY_ERFINV,
 *                         FF_BINARY_ATAN2.
 *   ABI 1, fourth step:   FF_UNARY_LGAMMA, FF_UNARY_DIGAMMA, FF_UNARY_TRIGAMMA. */
static inline FF_ABI_HD int ff_binary_op_writes_bool(ff_binary_op op)
{
    return op >= FF_BINARY_EQ && op <= FF_BINARY_LOGICAL_XOR;
}

/* Reduce over the axes set in axes_mask (bit d = dim d). dst has src's rank, with
 * size 1 on reduced axes (keepdim form). SUM/PROD of integers accumulate in dst's
 * dtype (the core asks for I64); MAX/MIN propagate NaN; ARGMAX/ARGMIN reduce exactly
 * one axis, write I64 and return the first index of the extreme (NaN counts as the
 * extreme); ANY/ALL write FF_BOOL. Reducing an empty set: SUM 0, PROD 1, ANY false,
 * ALL true; MAX/MIN/ARG* of an empty set are refused by the core. */
typedef enum ff_reduce_op {
    FF_REDUCE_SUM = 0,
    FF_REDUCE_PROD,
    FF_REDUCE_MAX,
    FF_REDUCE_MIN,
    FF_REDUCE_ARGMAX,
    FF_REDUCE_ARGMIN,
    FF_REDUCE_ANY,
    FF_REDUCE_ALL,
    FF_REDUCE_COUNT
} ff_reduce_op;

/* Random distributions for the random entry. */
typedef enum ff_random_dist {
    FF_RANDOM_UNIFORM = 0, /* [p0, p1) */
    FF_RANDOM_NORMAL = 1,  /* mean p0, std p1 */
    FF_RANDOM_COUNT
} ff_random_dist;

/* Which vtable entry a supports() query is about, and which dtype the query names:
 *   FILL: dst   COPY: dst (op = src dtype)   UNARY: src   BINARY: a (== b)
 *   REDUCE: src (dst dtype follows the rules at ff_reduce_op)   MATMUL: a (== b == dst)
 *   WHERE: dst   GATHER: src (index is I64)   SCATTER_ADD: dst
 *   RANDOM: dst (op = ff_random_dist)   SOFTMAX: src (op = 1 for log_softmax)
 *   CONV2D: x (op = 0 forward, 1 conv2d_backward_input, 2 conv2d_backward_weight,
 *           FF_CONV2D_DILATION_GROUPS: the three honor dilation and groups)
 *   SCAN: src (op = 0 cumsum, 1 cumprod)   SORT: src (op = 1 for descending)
 *   LINALG: src[0] (op = ff_linalg_op)
 *   FFT: src's element dtype, F32 or F64 (op = ff_fft_op)
 *   BATCH_NORM: x (op = 0 forward, 1 backward)   POOL2D: x (op = ff_pool2d_op)
 *   LAYER_NORM: x (op = 0 forward, 1 backward; F16/BF16 where the backend computes them) */
typedef enum ff_op_kind {
    FF_KIND_FILL = 0,
    FF_KIND_COPY,    /* op = source dtype; dtype = destination dtype */
    FF_KIND_UNARY,   /* op = ff_unary_op */
    FF_KIND_BINARY,  /* op = ff_binary_op */
    FF_KIND_REDUCE,  /* op = ff_reduce_op */
    FF_KIND_MATMUL,
    FF_KIND_WHERE,
    FF_KIND_GATHER,
    FF_KIND_SCATTER_ADD,
    FF_KIND_RANDOM,  /* op = ff_random_dist */
    FF_KIND_SOFTMAX, /* optional entry */
    /* appended after ABI v1's first release: the optional conv2d entries, op = 0 forward,
     * 1 backward to the input, 2 backward to the weight; dtype = x's (== w's == y's) */
    FF_KIND_CONV2D,
    /* the optional scan entry: op = 0 cumulative sum, 1 cumulative product; dtype = src's */
    FF_KIND_SCAN,
    /* the optional argsort entry: op = 0 ascending, 1 descending; dtype = src's */
    FF_KIND_SORT,
    /* the optional linalg entry: op = ff_linalg_op; dtype = the inputs' (F32 or F64) */
    FF_KIND_LINALG,
    /* the optional fft entry: op = ff_fft_op; dtype = src's (== dst's), F32 or F64 */
    FF_KIND_FFT,
    /* the optional batch_norm entry: op = 0 forward (training), 1 backward, 2 eval
     * (x scale + shift); dtype = x's */
    FF_KIND_BATCH_NORM,
    /* the optional pool2d entry: op = ff_pool2d_op; dtype = x's */
    FF_KIND_POOL2D,
    /* the optional fused entry: op = 0; dtype = the program's (every value's) dtype */
    FF_KIND_FUSED,
    /* the optional collective entries: op = ff_coll_op; dtype = the views' */
    FF_KIND_COLLECTIVE,
    /* the optional attention entry: op = 0 forward, 1 backward (ff_attention_op);
     * dtype = q's (== k's == v's) */
    FF_KIND_ATTENTION,
    /* the optional qmatmul entry: op = 0; dtype = a's (FF_U8) */
    FF_KIND_QMATMUL,
    /* the optional layer_norm entry: op = 0 forward, 1 backward; dtype = x's */
    FF_KIND_LAYER_NORM,
    /* the optional linear entry: op = the activation (an ff_unary_op, or
     * FF_LINEAR_NO_ACT); dtype = dst's (== a's == b's == bias's) */
    FF_KIND_LINEAR,
    FF_KIND_COUNT
} ff_op_kind;

/* The collectives of the optional coll_run entry, and the reductions of FF_COLL_ALLREDUCE
 * (the same order as ff_dist_reduce in ff/dist.h). */
typedef enum ff_coll_op {
    FF_COLL_ALLREDUCE = 0, /* dst = the reduction over the ranks of their src; dst may be src */
    FF_COLL_BROADCAST,     /* dst = root's src on every rank; dst may be src */
    FF_COLL_ALLGATHER,     /* dst [size * n] = every rank's src [n], in rank order */
    FF_COLL_COUNT
} ff_coll_op;
typedef enum ff_coll_reduce { FF_COLL_SUM = 0, FF_COLL_AVG, FF_COLL_MAX, FF_COLL_MIN } ff_coll_reduce;

/* The largest group id coll_id may write (NCCL's ncclUniqueId is 128 bytes). */
#define FF_COLL_ID_MAX 256

/* The fft entry's transforms (unnormalized; the core scales). Complex values travel
 * as real views whose LAST dim has size 2 (re, im), torch.view_as_real's layout, with
 * any stride for that dim. */
typedef enum ff_fft_op {
    FF_FFT_FORWARD = 0, /* complex -> complex, e^(-2 pi i k t / n) */
    FF_FFT_INVERSE = 1, /* complex -> complex, e^(+2 pi i k t / n), no 1/n */
    FF_FFT_R2C = 2,     /* real n -> the n/2 + 1 bins k = 0..n/2 of the forward transform */
    FF_FFT_C2R = 3,     /* those n/2 + 1 bins -> real n, inverse sign, no 1/n (below) */
    FF_FFT_OP_COUNT
} ff_fft_op;

#endif /* FF_BACKEND_ABI_OPS_H */
