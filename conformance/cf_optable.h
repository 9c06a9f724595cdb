/* The public-op table shared by the op-level ("op") and gradient ("grad") families:
 * each entry names a public op, its inputs (shape, dtype, value domain) and how to
 * call it. */
#ifndef FF_CONFORMANCE_CF_OPTABLE_H
#define FF_CONFORMANCE_CF_OPTABLE_H

#include "cf.h"

#define CF_OP_MAX_IN 3

typedef ff_tensor *(*cf_op_call)(ff_tensor *const *in);
/* Closed form: expected f64 outputs from the f64 logical input values. */
typedef void (*cf_op_closed)(const double *const *in, double *out);

typedef struct cf_opdef {
    const char *name;
    int nin;
    int ndim[CF_OP_MAX_IN];
    int64_t shape[CF_OP_MAX_IN][4];
    ff_dtype fixed[CF_OP_MAX_IN]; /* FF_DTYPE_COUNT: the case dtype; else this dtype (indices, masks) */
    cf_domain dom[CF_OP_MAX_IN];
    int64_t index_range[CF_OP_MAX_IN]; /* integer inputs used as indices: values in [0, range) */
    cf_op_call call;
    cf_tol_class cls;
    int64_t k;        /* reduced length for ACCUM/PROD */
    bool ints;        /* also on i32/i64 */
    bool grad;        /* differentiable in its float inputs */
    cf_op_closed closed;
} cf_opdef;

extern const cf_opdef cf_optable[];
extern const int cf_noptable;

/* Input layouts built with public view ops: the op sees the same logical values. */
typedef enum cf_variant { CF_V_CONTIG = 0, CF_V_TRANSPOSED, CF_V_STEPPED, CF_V_OFFSET, CF_V_COUNT } cf_variant;
const char *cf_variant_name(cf_variant v);

/* Host values of input i of def (dtype dt for float inputs); caller frees. */
void *cf_op_input_values(const cf_opdef *def, int i, ff_dtype dt, cf_rng *rng);
ff_dtype cf_op_input_dtype(const cf_opdef *def, int i, ff_dtype dt);
/* A tensor on be holding vals (logical, row-major) laid out as variant v (a view of
 * *base, which the caller releases too; base is the leaf for autograd). */
ff_tensor *cf_make_input(ff_backend *be, const void *vals, int ndim, const int64_t *shape, ff_dtype dt,
                         cf_variant v, ff_tensor **base);
/* The variant's view of a base tensor built by cf_make_input. */
ff_tensor *cf_view_of(ff_tensor *base, cf_variant v);
/* True if the last op call failed because the op is not in libfusionflow. */


/* cf_entry_compare.c: the families that test an optional entry (attention, layer_norm,
 * linear)
 * run the op and its gradients three ways: the backend as it runs, the same backend
 * with the composition forced, and the reference. */
#define CF_ENTRY_OUTS 4
typedef struct cf_entry_run {
    ff_tensor *out[CF_ENTRY_OUTS]; /* the op's result, then its gradients (NULL: none) */
    char err[512];
    ff_status st;
} cf_entry_run;
void cf_entry_run_free(cf_entry_run *r);
/* t's elements in a fresh host buffer (the caller frees it); NULL if reading back fails. */
void *cf_tensor_to_host(const ff_tensor *t);
/* runs[1] (and runs[2] when with_reference) against runs[0] on outputs 0 .. nout-1, each
 * within the accumulate tolerance over its sums' length ks[i]; false with the first
 * failed run ("the op failed (STATUS): ...") or the first difference in why. */
bool cf_entry_compare(const cf_entry_run runs[3], bool with_reference, int nout, const char *const *names,
                      const int64_t *ks, char *why, size_t cap);

/* cf_closed_forms.c: the table's closed forms */
void c_sum_all(const double *const *in, double *out);
void c_mean02(const double *const *in, double *out);
void c_matmul(const double *const *in, double *out);
void c_softmax(const double *const *in, double *out);
void c_cross_entropy(const double *const *in, double *out);
void c_cross_entropy_at_max(const double *const *in, double *out);
void c_mse(const double *const *in, double *out);
void closed_fft_last(const double *const *in, double *out);
void closed_rfft_last(const double *const *in, double *out);
void closed_irfft_last(const double *const *in, double *out);
void closed_fft_len8(const double *const *in, double *out);
void c_eye_2x3x3(const double *const *in, double *out);
void c_repeated_rows_2x2x3(const double *const *in, double *out);

#endif /* FF_CONFORMANCE_CF_OPTABLE_H */
