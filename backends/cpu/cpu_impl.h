/*
 * Private header of the cpu reference backend: the context, error reporting, view
 * checks, dtype conversion rules and the per-family entry points.
 *
 * The cpu backend is the oracle every other backend is compared against, so each
 * rule below is written once and every kernel uses it. The scalar rules themselves
 * (conversions, wrap-around, per-element op formulas) live in
 * backends/common/ff_backend_scalar.h, shared with the other in-tree backends:
 *   - Elements are read as double (float dtypes) or int64_t (integer and bool dtypes)
 *     and written back through cpu_store_f64 / cpu_store_i64, which hold all of the
 *     conversion rules. f32 math is done in double and rounded once at the store.
 *   - Integer arithmetic wraps around (two's complement), computed through uint64_t
 *     so that no signed overflow (undefined behaviour in C) ever happens.
 *   - Storing a double into an integer dtype: NaN -> 0, truncate toward zero, then
 *     saturate to the int64 range; I32 then clamps to its own range; U8 wraps modulo
 *     256 from that int64 (like the C cast (uint8_t)(int64_t)x, and like PyTorch on
 *     x86: -1.0 -> 255). Any value -> BOOL is (x != 0), so NaN -> true.
 *   - Storing an int64 into a narrower integer dtype wraps modulo 2^32 / 2^8.
 *
 * Depends only on include/ff/backend_abi.h (+ the header-only backends/common/) and
 * the C library.
 */
#ifndef FF_CPU_IMPL_H
#define FF_CPU_IMPL_H

#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ff/backend_abi.h"
#include "ff_backend_checks.h"

/* ---- context ---------------------------------------------------------- */

/* One per init(). The counters back memory_stats; they are atomics because the
 * core may allocate from several threads at once. */
typedef struct cpu_ctx {
    const ff_host_api *host;
    atomic_size_t in_use; /* bytes handed out and not yet freed */
    atomic_size_t peak;   /* high-water mark of in_use */
} cpu_ctx;

/* Formats a message, hands it to host->set_error and returns st (so callers can
 * `return cpu_error(...)`). Safe with a NULL ctx: then it only returns st. */
ff_status cpu_error(void *ctx, ff_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- names for messages ------------------------------------------------ */
static inline const char *cpu_dtype_name(ff_dtype t) { return ffb_dtype_name(t); }
const char *cpu_unary_name(ff_unary_op op);
const char *cpu_binary_name(ff_binary_op op);
const char *cpu_reduce_name(ff_reduce_op op);

/* ---- dtype classes ----------------------------------------------------- */

/* The dtypes this backend computes on: F32, F64, I32, I64, U8, BOOL.
 * F16/BF16 are storage-only formats in ABI v1. */
static inline int cpu_dtype_ok(ff_dtype t) { return ffb_dtype_ok(t); }
/* copy takes every storage dtype and the complex ones (cpu_complex.c) */
static inline int cpu_copy_dtype_ok(ff_dtype t) { return ffb_dtype_storage_ok(t) || ff_dtype_is_complex(t); }

static inline int cpu_is_float(ff_dtype t) { return ffb_is_float(t); }

/* ---- view checks ------------------------------------------------------- */

/* Checks that v is a well-formed view of a computable dtype: rank in [0, FF_MAX_DIMS],
 * non-negative shape/strides/offset, a buffer when it has elements. `entry` and
 * `what` name the call and the argument in the error message. Returns FF_OK, or
 * FF_ERR_UNSUPPORTED for F16/BF16, or FF_ERR_INVALID. */
ff_status cpu_check_view(void *ctx, const char *entry, const char *what, const ff_view *v);
/* cpu_check_view that also takes F16/BF16: for copy and fill, which move half values. */
ff_status cpu_check_storage_view(void *ctx, const char *entry, const char *what, const ff_view *v);

/* 1 if a and b have the same rank and shape. */
int cpu_same_shape(const ff_view *a, const ff_view *b);

/* Reports a shape mismatch between two arguments of `entry` as FF_ERR_INVALID. */
ff_status cpu_shape_error(void *ctx, const char *entry, const char *what_a, const ff_view *a,
                          const char *what_b, const ff_view *b);

/* ---- wrap-around integer helpers and conversions ---------------------- */
/* ffb_u64_to_i64, ffb_wrap_i32, ffb_f64_to_i64, ffb_f64_to_i32 (ff_backend_scalar.h). */

/* ---- element loads and stores ------------------------------------------ */
/* i is an element offset (view offset + sum of index * stride); the conversion rules
 * are ffb_ld_f64 / ffb_ld_i64 / ffb_st_f64 / ffb_st_i64 (ff_backend_scalar.h). */

static inline const char *cpu_elem(const void *buf, ff_dtype t, int64_t i)
{
    return (const char *)buf + i * (int64_t)ff_dtype_size(t);
}

/* Element as double. Exact for every dtype except I64 beyond 2^53. */
static inline double cpu_load_f64(const void *buf, ff_dtype t, int64_t i)
{
    return ffb_ld_f64(cpu_elem(buf, t, i), t);
}

/* Element as int64. Bool bytes read as 0/1 (any non-zero byte is true); float
 * elements convert with ffb_f64_to_i64 (NaN -> 0, truncate, saturate). */
static inline int64_t cpu_load_i64(const void *buf, ff_dtype t, int64_t i)
{
    return ffb_ld_i64(cpu_elem(buf, t, i), t);
}

/* Stores a double with the conversion rules at the top of this file. */
static inline void cpu_store_f64(void *buf, ff_dtype t, int64_t i, double v)
{
    ffb_st_f64((char *)cpu_elem(buf, t, i), t, v);
}

/* Stores an int64: wraps into I32/U8, rounds to nearest into floats, != 0 for BOOL. */
static inline void cpu_store_i64(void *buf, ff_dtype t, int64_t i, int64_t v)
{
    ffb_st_i64((char *)cpu_elem(buf, t, i), t, v);
}

/* Copies one element between buffers of the same dtype, bit for bit (so NaN
 * payloads and -0.0 survive). memmove: dst may be the very same element (in place). */
static inline void cpu_move_elem(void *dst, int64_t di, const void *src, int64_t si, ff_dtype t)
{
    size_t sz = ff_dtype_size(t);
    memmove((char *)dst + (size_t)di * sz, (const char *)src + (size_t)si * sz, sz);
}

/* ---- what each family supports (supports() and the kernels both use these) ---- */
int cpu_unary_supported(ff_unary_op op, ff_dtype t);
int cpu_binary_supported(ff_binary_op op, ff_dtype t);
int cpu_reduce_supported(ff_reduce_op op, ff_dtype src);
int cpu_matmul_supported(ff_dtype t);
int cpu_random_supported(ff_random_dist dist, ff_dtype t);
int cpu_softmax_supported(ff_dtype t);

/* ---- complex numbers, natively (cpu_complex.c) ---------------------------- */
int cpu_complex_supported(ff_op_kind kind, int op);
void cpu_complex_fill_one(void *buf, ff_dtype t, int64_t i, ff_scalar value);
void cpu_complex_copy_one(void *db, ff_dtype dt, int64_t di, const void *sb, ff_dtype st, int64_t si);
void cpu_complex_add_into(void *db, ff_dtype t, int64_t at, const void *sb, int64_t from);
ff_status cpu_complex_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
ff_status cpu_complex_neg(void *ctx, const ff_view *dst, const ff_view *src);
ff_status cpu_complex_sum(void *ctx, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
ff_status cpu_complex_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);

/* ---- entries, one file per family --------------------------------------- */
/* cpu_elementwise.c */
ff_status cpu_fill(void *ctx, const ff_view *dst, ff_scalar value);
ff_status cpu_copy(void *ctx, const ff_view *dst, const ff_view *src);
ff_status cpu_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b);
/* cpu_unary.c */
ff_status cpu_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src);
/* cpu_binary.c */
ff_status cpu_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);
/* cpu_reduce.c */
ff_status cpu_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask);
/* cpu_matmul.c */
ff_status cpu_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b);
/* cpu_linear.c: the optional linear entry (F32, F64) and the activations it takes */
ff_status cpu_linear(void *ctx, const ff_view *dst, const ff_view *src, int n_src, int act);
int cpu_linear_supported(int act, ff_dtype t);
/* cpu_index.c */
ff_status cpu_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis);
ff_status cpu_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis);
/* cpu_random.c */
ff_status cpu_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed, uint64_t counter_base,
                     double p0, double p1);
/* cpu_softmax.c */
ff_status cpu_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log);
/* cpu_lines.c: scan, argsort */
ff_status cpu_scan(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
ff_status cpu_argsort(void *ctx, const ff_view *dst, const ff_view *src, int axis, int descending);
ff_status cpu_batch_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps);
ff_status cpu_layer_norm(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src, double eps);
/* the optional conv2d entries (cpu_conv.c), dilation and groups too */
int cpu_conv2d_supported(int op, ff_dtype t);
ff_status cpu_conv2d(void *ctx, const ff_view *y, const ff_view *x, const ff_view *w, const ff_conv2d_params *p);
ff_status cpu_conv2d_backward_input(void *ctx, const ff_view *gx, const ff_view *gy, const ff_view *w,
                                    const ff_conv2d_params *p);
ff_status cpu_conv2d_backward_weight(void *ctx, const ff_view *gw, const ff_view *gy, const ff_view *x,
                                     const ff_conv2d_params *p);
ff_status cpu_pool2d(void *ctx, int op, const ff_view *dst, const ff_view *src, int n_src, const ff_pool2d_params *p);
ff_status cpu_linalg(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src);
/* cpu_fft.c: the DFT oracle */
ff_status cpu_fft(void *ctx, int op, const ff_view *dst, const ff_view *src, int axis);
/* cpu_qmatmul.c: u8 x s8 -> exact integer sums -> f32 (ff_qmatmul_params) */
ff_status cpu_qmatmul(void *ctx, const ff_view *dst, const ff_view *src, int n_src, const ff_qmatmul_params *p);

/* cpu_attention.c: the oracle's loops in double */
ff_status cpu_attention(void *ctx, int op, const ff_view *dst, int n_dst, const ff_view *src, int n_src,
                        const ff_attention_params *p);
/* cpu_fused.c: the fused elementwise program interpreter */
ff_status cpu_fused(void *ctx, const ff_fused_program *prog);

#endif /* FF_CPU_IMPL_H */
