/* cpu_blas's complex entries (blas_complex.c; matmul's cgemm / zgemm in blas_matmul.c). */
#ifndef FF_BLAS_COMPLEX_H
#define FF_BLAS_COMPLEX_H

#include "blas_impl.h"

/* What cpu_blas computes natively on C64/C128 (its supports() for them): matmul and
 * binary ADD SUB MUL DIV; the core composes the rest from real views. */
int blas_complex_supported(ff_op_kind kind, int op);
ff_status blas_complex_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b);

#endif /* FF_BLAS_COMPLEX_H */
