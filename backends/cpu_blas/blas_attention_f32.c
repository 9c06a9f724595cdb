/* The attention tile loops on f32 tiles (F32, and F16/BF16 widened): oneDNN's or
 * OpenBLAS's sgemm (small tiles: at_gemm_f32's own loops), the vectorized exp and max of
 * blas_vmath.c. */
#include "blas_attention.h"

#define AT float
#define AT_SFX f32
#define AT_GEMM at_gemm_f32
#define AT_ROWMAX blas_vmax_f32
#define AT_EXPSUM blas_vexp_shift_sum_f32
#include "blas_attention_tiles.h"
