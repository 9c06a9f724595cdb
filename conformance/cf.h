/*
 * ff-conformance internals: the shared types of the suite.
 *
 * A case is generated (never hand-written one by one) by a family file
 * (cases_*.c) into the registry; the runner filters and runs cases against a
 * backend under test ("T") and the reference cpu backend ("R"), and reports one
 * line per failure. Vtable-level cases describe one call as a cf_call: operands
 * with exact buffers, offsets and strides; cf_exec runs it on a backend inside
 * sentinel-filled buffers and cf_check_call checks guards, T against R and both
 * against a closed-form expectation computed on the host (cf_oracle.c).
 *
 * The suite may include core internals (core/ff_impl.h) to reach be->vt and be->ctx:
 * it is part of the project, and that is how it drives entries directly.
 */
#ifndef FF_CONFORMANCE_CF_H
#define FF_CONFORMANCE_CF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ff_impl.h"

/* ---- results ------------------------------------------------------------ */
typedef enum cf_result { CF_PASS = 0, CF_FAIL = 1, CF_SKIP = 2 } cf_result;

/* What a run writes back: a failure or skip reason (one line). */
typedef struct cf_report {
    char msg[2048];
    bool coverage_gap; /* skipped because T declines what R supports */
    bool crashed;      /* failed by killing its worker (a signal) or by running out of time */
} cf_report;

/* ---- tolerances: see the table in conformance/README.md ------------------- */
typedef enum cf_tol_class {
    CF_TOL_EXACT = 0,  /* bit-exact value (NaN matches NaN; -0.0 != +0.0) */
    CF_TOL_ROUNDED,    /* one correctly rounded IEEE operation: + - * / sqrt fmod */
    CF_TOL_TRANSCEND,  /* libm functions, pow, softmax, normals */
    CF_TOL_ACCUM,      /* sums/dots of length K: scaled by K (cf_tol) */
    CF_TOL_PROD,       /* products of length K */
    CF_TOL_COUNT
} cf_tol_class;

typedef struct cf_tol {
    double rtol, atol;
    bool zero_sign; /* elementwise ops: a zero, expected or got, must have the other's sign
                     * (f(-0) = +1e-30 or expm1(-1e-45) = +0 lose a sign, whatever the atol) */
    bool zero_either; /* a zero of either sign matches a zero: the backend's rules step
                       * predates the case's sign-of-zero rule (cf_steps.c) */
} cf_tol;

/* Tolerance for a float dtype, class and reduced length k (1 for elementwise). */
cf_tol cf_tolerance(ff_dtype dt, cf_tol_class cls, int64_t k);
const char *cf_tol_class_name(cf_tol_class cls);

/* ---- case registry ------------------------------------------------------ */
typedef enum cf_level { CF_LEVEL_VTABLE = 0, CF_LEVEL_OP, CF_LEVEL_GRAD } cf_level;

struct cf_case;
typedef struct cf_ctx {
    ff_backend *t;  /* backend under test */
    ff_backend *r;  /* reference cpu backend (may equal t) */
    uint64_t seed;  /* --seed */
    const char *backend_arg; /* for rerun commands */
    int verbose;
    bool graph; /* --graph: op and grad cases also run captured and replayed (cf_runner.c) */
    int step;   /* --step: judge as if the backend kept this rules step (0: its own, cf_steps.c) */
    double stress_s; /* --stress: seconds of device.threads_scratch (0: its default, 2 s) */
} cf_ctx;

typedef cf_result (*cf_run_fn)(cf_ctx *ctx, const struct cf_case *c, cf_report *rep);

typedef struct cf_case {
    char id[112];      /* unique, stable: "<family>.<op>.<dtype>.<scenario>" */
    const char *family; /* "unary", "binary", ... "op", "grad" */
    char op[40];       /* op name, e.g. "exp" */
    ff_dtype dtype;
    cf_level level;
    cf_run_fn run;
    int kind;          /* ff_op_kind whose support the case needs (-1: none) */
    int opcode;        /* op argument of supports() */
    int p[8];          /* family-specific parameters */
} cf_case;

/* Adds a case (the registry copies it). */
void cf_register(const cf_case *c);
/* The reference backend (for generation-time supports() queries). */
ff_backend *cf_reference(void);
bool cf_ref_supports(int kind, int op, ff_dtype dt);
/* What the reference computes: cf_ref_supports, and F16/BF16 wherever it takes F32 (the
 * core's f32 detour computes them; cf_detour.c). The families generate cases from this. */
bool cf_ref_computes(int kind, int op, ff_dtype dt);

/* Family generators: each registers its cases. */
void cf_gen_fill_copy(void);
void cf_gen_unary(void);
void cf_gen_binary(void);
void cf_gen_reduce(void);
void cf_gen_matmul(void);
void cf_gen_index(void);
void cf_gen_random(void);
void cf_gen_softmax(void);
void cf_gen_special(void);
void cf_gen_ops(void);
void cf_gen_grad(void);
void cf_gen_attention(void);        /* family "attention": cases_attention.c */
void cf_gen_layer_norm(void);       /* family "layer_norm": cases_layer_norm.c */
void cf_gen_linear(void);           /* family "linear": cases_linear.c */
void cf_gen_qmatmul(void);          /* family "qmatmul": cases_qmatmul.c */
void cf_gen_qmatmul_dynamic(void);  /* family "qmatmul", dynamic mode: cases_qmatmul_dyn.c */
void cf_gen_fused(void);
void cf_gen_device_exact(void);   /* family "device": cases_device_*.c */
void cf_gen_device_sync(void);
void cf_gen_device_threads(void);
void cf_gen_device_fused(void);

/* ---- deterministic data -------------------------------------------------- */
typedef struct cf_rng {
    uint64_t s;
} cf_rng;
uint64_t cf_hash_str(uint64_t seed, const char *s);
void cf_rng_init(cf_rng *r, uint64_t seed);
uint64_t cf_rng_u64(cf_rng *r);
double cf_rng_uniform(cf_rng *r, double lo, double hi); /* [lo, hi) */
int64_t cf_rng_int(cf_rng *r, int64_t lo, int64_t hi);  /* [lo, hi] */

/* Value domains for generated inputs. */
typedef enum cf_domain {
    CF_DOM_SIGNED = 0, /* floats in [-2, 2], ints in [-9, 9] (u8 [0, 18]), bools 0/1 */
    CF_DOM_POSITIVE,   /* floats in [0.1, 3], ints in [1, 9] */
    CF_DOM_UNIT,       /* floats in [-1, 1] (reductions, matmul) */
    CF_DOM_SMALLINT,   /* floats that are small integers in [-5, 5]; ints in [-5, 5] */
    CF_DOM_OPEN_UNIT,  /* floats in (-0.9, 0.9) (log1p, ...) */
    CF_DOM_ROUNDING,   /* floats on multiples of 0.25 in [-4, 4]: round/floor ties */
    CF_DOM_SPECIAL,    /* NaN, +-Inf, +-0, subnormals, extremes; int edge values */
    CF_DOM_BOOL01,     /* 0/1 of any dtype */
    CF_DOM_NEAR1,      /* floats of magnitude in [0.8, 1.25], random sign (products); ints [-2, 2] */
    CF_DOM_WIDE,       /* floats in [-30, 30] (softmax stability) */
    CF_DOM_HUGE_TIES,  /* floats within a few ulps of 0.9 * the dtype's max, ties likely, and
                        * some far below (-max, 100): softmax must subtract the max and keep
                        * log(sum) apart from it; ints as WIDE */
    CF_DOM_BITS,       /* integers with every bit random (sign bits, high bits: bitwise ops);
                        * floats as SIGNED */
    CF_DOM_ZEROS_BELOW, /* floats: +0, -0 and negatives (a max that is a zero of either sign);
                         * ints as SIGNED */
    CF_DOM_ZEROS_ABOVE, /* floats: +0, -0 and positives (a min that is a zero) */
    CF_DOM_ONE_THEN_TINY, /* floats: 1 then 1e-8s (f32; 1e-17 for f64): a running sum in the
                           * dtype never moves past 1, the true sum does; ints as SIGNED */
    CF_DOM_BIGINT,      /* ints: I64 odd magnitudes in [2^53, 2^54) of alternating sign (no
                         * element is a double, so a sum through double fails); I32 full
                         * range; floats as SIGNED */
    CF_DOM_BIGPROD,     /* ints: odd magnitudes in [2^20, 2^21), random signs: a product of
                         * three lands in [2^60, 2^63), exact only in integer arithmetic */
    CF_DOM_INF_FIRST,   /* floats: element 0 is +Inf, the rest as SIGNED; element 0 is at index
                         * 0 along every dim, so a Fourier transform along any axis meets it
                         * only with the twiddle 1 (no inf * 0 in a right answer); ints as
                         * SIGNED */
    CF_DOM_NAN_FIRST    /* the same with NaN */
} cf_domain;

/* The largest finite value and the smallest subnormal of a float dtype. */
double cf_dtype_max(ff_dtype dt);
double cf_dtype_true_min(ff_dtype dt);
/* Writes n elements of dtype dt from the domain into p. */
void cf_fill_values(cf_rng *r, void *p, ff_dtype dt, int64_t n, cf_domain dom);
/* The edge values of dtype dt (what CF_DOM_SPECIAL draws from): NaN, +-Inf, +-0, +-1,
 * the smallest subnormals of both signs, a mid subnormal, +-max, ... for floats;
 * INT_MIN/MAX, 0, -1, ... for integers. Element i of p = edge value k (mod the count). */
int cf_edge_count(ff_dtype dt);
void cf_set_edge(void *p, ff_dtype dt, int64_t i, int k);
/* Element i of a host array as double / int64 (bool: 0/1). */
double cf_get_f(const void *p, ff_dtype dt, int64_t i);
int64_t cf_get_i(const void *p, ff_dtype dt, int64_t i);
void cf_set_f(void *p, ff_dtype dt, int64_t i, double v); /* with the copy rules */
void cf_set_i(void *p, ff_dtype dt, int64_t i, int64_t v);

/* ---- operands and calls (vtable level) ----------------------------------- */
/* Layout kinds for an operand. */
typedef enum cf_layout_kind {
    CF_L_CONTIG = 0, /* row-major from offset 0 */
    CF_L_OFFSET,     /* row-major from offset 5 */
    CF_L_TRANSPOSED, /* column-major (every axis permuted: strides increase left to right) */
    CF_L_STEPPED,    /* every axis stepped by 2 inside a larger parent */
    CF_L_BCAST0,     /* axis 0 broadcast (stride 0); the rest row-major */
    CF_L_BCASTLAST,  /* last axis broadcast */
    CF_L_PADDED,     /* row-major with unit last stride, each row padded by 3 elements: a
                      * narrowed matrix, whose row stride exceeds its width (BLAS's lda > n) */
    CF_L_COUNT
} cf_layout_kind;
const char *cf_layout_name(cf_layout_kind k);

#define CF_MAX_OPERANDS 4
#define CF_GUARD_ELEMS 8 /* sentinel elements before and after every output view */

typedef struct cf_operand {
    ff_dtype dtype;
    int ndim;
    int64_t shape[FF_MAX_DIMS];
    int64_t strides[FF_MAX_DIMS];
    int64_t offset;
    int64_t nelems;      /* buffer length in elements */
    unsigned char *init; /* initial buffer contents, nelems * dtype size bytes */
    bool output;         /* written by the call */
    int alias;           /* -1, or the operand whose buffer this one shares */
    const char *name;    /* "dst", "a", ... */
} cf_operand;

typedef struct cf_call {
    ff_op_kind kind;
    int op;            /* unary/binary/reduce op, random dist, softmax log flag */
    int axis;          /* gather, scatter_add, softmax */
    uint32_t mask;     /* reduce */
    ff_scalar value;   /* fill */
    uint64_t rseed, rcounter;
    double p0, p1;     /* random */
    int nops;
    cf_operand o[CF_MAX_OPERANDS]; /* o[0] is the written one (dst) */
} cf_call;

/* Sets up operand o with the logical shape and layout kind, allocates its initial
 * contents: inputs get values from the domain at every buffer position (gaps too:
 * a kernel that reads a gap shows up as a wrong value), outputs get sentinel bytes
 * with CF_GUARD_ELEMS of room before and after the view. */
void cf_operand_init(cf_operand *o, const char *name, ff_dtype dt, int ndim, const int64_t *shape,
                     cf_layout_kind lk, bool output, cf_rng *rng, cf_domain dom);
/* Makes o share operand `of`'s buffer and layout (in-place calls). */
void cf_operand_alias(cf_operand *o, const char *name, const cf_operand *of, int of_index);
void cf_call_free(cf_call *c);
/* The logical elements of operand o (row-major), gathered from buffer bytes. */
void *cf_operand_gather(const cf_operand *o, const unsigned char *buf);
/* Same from o's initial contents. */
static inline void *cf_operand_values(const cf_operand *o) { return cf_operand_gather(o, o->init); }
/* Overwrites the logical elements of o's initial contents from a row-major array. */
void cf_operand_scatter(cf_operand *o, const void *vals);
int64_t cf_numel(int ndim, const int64_t *shape);
/* 1 per buffer element the view covers (nelems bytes; caller frees). */
unsigned char *cf_operand_coverage(const cf_operand *o);

#define CF_SENTINEL 0xA5u

/* One run of a call on a backend. */
typedef struct cf_exec_result {
    ff_status status;
    char error[512];
    char contract[256];  /* a rule broken around the call (FP environment, memory held), or "" */
    unsigned char *after[CF_MAX_OPERANDS]; /* every buffer downloaded after the call */
} cf_exec_result;

ff_status cf_exec(ff_backend *be, const cf_call *c, cf_exec_result *res);
/* F16/BF16 on a backend that declines the entry but takes it on F32: the core's f32
 * detour (cf_detour.c). cf_exec takes it by itself for such calls. */
typedef ff_status (*cf_entry_fn)(ff_backend *be, const cf_call *c, const ff_view *v);
bool cf_detour_needed(ff_backend *be, int kind, int op, ff_dtype dt);
bool cf_call_detours(ff_backend *be, const cf_call *c);
ff_status cf_exec_detour(ff_backend *be, const cf_call *c, const ff_view *v, cf_entry_fn call);
/* Remembers the floating-point environment the suite starts with (before any backend is
 * loaded): every call must find it, and leave it, unchanged. */
void cf_fpenv_capture(void);
/* Guard bytes behind every buffer the backend under test allocates (cf_guard.c);
 * cf_guard_take reports (once) a guard a public op overwrote since the last call. */
void cf_guard_install(ff_backend *be);
bool cf_guard_take(char *msg, size_t n);
/* The backend's own vtable behind the guard wrapper (for cases that call it from several
 * threads: the wrapper's table of live buffers is single-threaded). */
const ff_backend_vtable *cf_guard_inner(const ff_backend *be);
void cf_exec_result_free(cf_exec_result *res);

/* Expected logical dst values (row-major; dst dtype), or NULL if none exists. */
typedef void *(*cf_expect_fn)(const cf_call *c, const void *user);

typedef struct cf_check_opts {
    cf_tol_class cls;
    int64_t k;               /* reduced length for ACCUM/PROD */
    cf_expect_fn expect;     /* optional closed form */
    const void *expect_user;
    ff_status want_status;   /* FF_OK, or the error a bad call must return */
    bool zero_sign;          /* cf_tol.zero_sign: elementwise unary/binary ops */
} cf_check_opts;

/* Whether the backend under test's rules step (backend_abi.h, "Rules steps") predates
 * the sign-of-zero rule the case checks, so that either zero passes (cf_steps.c). */
bool cf_step_zero_either(const cf_ctx *ctx, const cf_case *cs);

/* Runs the call on T and R and checks everything; fills rep on failure. */
cf_result cf_check_call(cf_ctx *ctx, const cf_case *cs, const cf_call *c, const cf_check_opts *opts,
                        cf_report *rep);

/* ---- comparison ------------------------------------------------------------ */
typedef struct cf_diff {
    int64_t n_bad;
    int64_t first;   /* row-major index of the first bad element, -1 if none */
    double max_abs, max_rel;
    double got, want; /* at first */
} cf_diff;

/* Compares n logical elements of dtype dt; returns true if all are within tol. */
bool cf_compare(const void *got, const void *want, ff_dtype dt, int64_t n, cf_tol tol, bool exact,
                cf_diff *d);
/* "[2, 3]" of a shape; idx as a multi-index "[1, 0]" */
void cf_shape_str(char *buf, size_t n, int ndim, const int64_t *shape);
void cf_index_str(char *buf, size_t n, int ndim, const int64_t *shape, int64_t flat);
/* Appends the standard failure detail: operand shapes/strides/offsets, seed, rerun. */
void cf_describe(char *buf, size_t n, const cf_ctx *ctx, const cf_case *cs, const cf_call *c);
void cf_rerun_str(char *buf, size_t n, const cf_ctx *ctx, const cf_case *cs);
/* A family's failure: rep->msg = "<why> | <what fmt says> seed=... | rerun: ...", CF_FAIL. */
cf_result cf_fail(cf_report *rep, const cf_ctx *ctx, const cf_case *cs, const char *why, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
uint64_t cf_case_seed(const cf_ctx *ctx, const cf_case *cs);

/* ---- host oracle ------------------------------------------------------------- */
double cf_unary_ref(ff_unary_op op, double x);
int64_t cf_unary_ref_i(ff_unary_op op, int64_t x, ff_dtype dt);
double cf_binary_ref(ff_binary_op op, double x, double y);
int64_t cf_binary_ref_i(ff_binary_op op, int64_t x, int64_t y, ff_dtype dt);
const char *cf_unary_name(int op);
const char *cf_binary_name(int op);
const char *cf_reduce_name(int op);
const char *cf_kind_name(int kind);


#endif /* FF_CONFORMANCE_CF_H */
