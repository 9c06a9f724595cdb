/*
 * The fused entry's interpreter (ocl_fused.c runs programs here until their signature
 * has done enough work to earn a generated kernel, ocl_fused_gen.c): one work-item per
 * element runs the whole program, so temporaries never reach memory.
 *
 * desc, one buffer: the merged iteration shape in longs [0, FF_MAX_DIMS), then per slot
 * k at FUSED_SLOT(k) its offset and its FF_MAX_DIMS strides, then the instructions, 4
 * ints each: {op, or FUSED_BINARY | op for a binary one; dst; src0; src1}, values
 * numbered as in the generated kernels (slots 0 .. n_slots-1, temporaries above).
 * load_mask names the slots read before any instruction writes them, store_mask those
 * written; in between, every value lives in val[].
 *
 * Same numbers as the plain entries and the generated kernels: each result is computed
 * as ff_unary / ff_binary compute it (unary_f, binary_f in double; f32 + - * in float,
 * as ff_binary_f32) and rounded to the program's dtype at once.
 */
#define FUSED_MAX_SLOTS 16
#define FUSED_MAX_VALUES 64
#define FUSED_BINARY 0x10000
#define FUSED_SLOT(k) (FF_MAX_DIMS + (k) * (1 + FF_MAX_DIMS))

/* One instruction on x (and y), rounded to f32 unless f64. */
inline double fused_op(int code, double x, double y, int f64)
{
    if (!(code & FUSED_BINARY)) {
        double r = unary_f(code, x);
        return f64 ? r : (double)(float)r;
    }
    int op = code & ~FUSED_BINARY;
    if (f64) return binary_f(op, x, y);
    float fx = (float)x, fy = (float)y; /* exact: x and y hold floats */
    switch (op) {
    case B_ADD: return fx + fy;
    case B_SUB: return fx - fy;
    case B_MUL: return fx * fy;
    default: return (float)binary_f(op, x, y);
    }
}

__kernel void ff_fused(__constant long *desc, int ndim, int n_slots, int n_inst, uint load_mask, uint store_mask,
                       int f64, long numel, __global uchar *b0, __global uchar *b1, __global uchar *b2,
                       __global uchar *b3, __global uchar *b4, __global uchar *b5, __global uchar *b6,
                       __global uchar *b7, __global uchar *b8, __global uchar *b9, __global uchar *b10,
                       __global uchar *b11, __global uchar *b12, __global uchar *b13, __global uchar *b14,
                       __global uchar *b15)
{
    long n = get_global_id(0);
    if (n >= numel) return; /* one element per work-item (ocl_grid) */
    __global uchar *buf[FUSED_MAX_SLOTS] = {b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15};
    __constant int *code = (__constant int *)(desc + FUSED_SLOT(n_slots));
    long off[FUSED_MAX_SLOTS];
    double val[FUSED_MAX_VALUES];
    for (int k = 0; k < n_slots; k++) off[k] = desc[FUSED_SLOT(k)];
    long rest = n; /* row-major over the merged shape; the outermost dim needs no modulo */
    for (int d = ndim - 1; d >= 0; d--) {
        long i = d > 0 ? rest % desc[d] : rest;
        rest = d > 0 ? rest / desc[d] : 0;
        for (int k = 0; k < n_slots; k++) off[k] += i * desc[FUSED_SLOT(k) + 1 + d];
    }
    for (int k = 0; k < n_slots; k++)
        if (load_mask >> k & 1u)
            val[k] = f64 ? ((__global const double *)buf[k])[off[k]] : ((__global const float *)buf[k])[off[k]];
    for (int i = 0; i < n_inst; i++)
        val[code[4 * i + 1]] = fused_op(code[4 * i], val[code[4 * i + 2]], val[code[4 * i + 3]], f64);
    for (int k = 0; k < n_slots; k++)
        if (store_mask >> k & 1u) {
            if (f64) ((__global double *)buf[k])[off[k]] = val[k];
            else ((__global float *)buf[k])[off[k]] = (float)val[k];
        }
}
