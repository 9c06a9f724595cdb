/*
 * fill, copy, unary, binary, where.
 *
 * One general kernel per entry over a merged walk (cuda_walk.c): every element is
 * loaded as double (floats) or int64 (integers, bool), computed with the reference's own
 * formulas (ffb_unary_f64, ffb_binary_i64, ... from ff_backend_scalar.h, compiled for
 * the device) and stored with the ABI's conversion rules (ffb_st_f64 / ffb_st_i64: the
 * saturating float -> int casts, U8 wrap, NaN -> 0, half rounding to nearest even), so
 * results are the reference's bit for bit wherever the device's libm agrees with the
 * host's (+ - * / sqrt always; transcendental functions within CUDA's documented ulps).
 * F32 ops whose walk is rank <= 1 (dense, broadcast scalars, 1-D strided) take kernels
 * with typed loads and no dtype switches: same formulas, same roundings.
 */
#include "cuda_device.cuh"

/* ---- kernels ------------------------------------------------------------------------ */

__global__ void k_fill(cuda_walk w, void *db, ff_dtype dt, double f, int64_t i, int64_t n)
{
    int is_float = ff_dtype_is_float(dt);
    CUDA_FOR(e, n) {
        int64_t off;
        cuda_walk_at(w, e, 1, &off);
        char *p = cuda_elem(db, dt, off);
        if (is_float) ffb_st_f64(p, dt, f);
        else ffb_st_i64(p, dt, i);
    }
}

/* Moves one element of `size` bytes (element addresses are aligned to their size:
 * cudaMalloc aligns to 256 and offsets count whole elements). */
__device__ __forceinline__ void move_elem(char *d, const char *s, size_t size)
{
    switch (size) {
    case 1: *d = *s; break;
    case 2: *(uint16_t *)d = *(const uint16_t *)s; break;
    case 4: *(uint32_t *)d = *(const uint32_t *)s; break;
    default: *(uint64_t *)d = *(const uint64_t *)s; break;
    }
}

__global__ void k_copy(cuda_walk w, void *db, ff_dtype dt, const void *sb, ff_dtype t, int64_t n)
{
    CUDA_FOR(e, n) {
        int64_t off[2];
        cuda_walk_at(w, e, 2, off);
        char *d = cuda_elem(db, dt, off[0]);
        const char *s = cuda_elem_c(sb, t, off[1]);
        if (dt == t) move_elem(d, s, ff_dtype_size(t));
        else if (ff_dtype_is_float(t)) ffb_st_f64(d, dt, ffb_ld_f64(s, t));
        else ffb_st_i64(d, dt, ffb_ld_i64(s, t));
    }
}

__global__ void k_unary(cuda_walk w, ff_unary_op op, void *db, ff_dtype dt, const void *sb, ff_dtype t, int64_t n)
{
    int is_float = ffb_is_float(t) || ffb_is_half(t); /* halves load to double, round once at the store */
    CUDA_FOR(e, n) {
        int64_t off[2];
        cuda_walk_at(w, e, 2, off);
        char *d = cuda_elem(db, dt, off[0]);
        const char *s = cuda_elem_c(sb, t, off[1]);
        if (is_float) ffb_st_f64(d, dt, ffb_unary_f64(op, ffb_ld_f64(s, t)));
        else ffb_st_i64(d, dt, ffb_unary_i64(op, ffb_ld_i64(s, t)));
    }
}

/* f32 in, f32 out, rank <= 1: in double, rounded once, as the generic path. */
__global__ void k_unary_f32(ff_unary_op op, float *d, int64_t od, int64_t sd, const float *s, int64_t os, int64_t ss,
                            int64_t n)
{
    CUDA_FOR(e, n) d[od + e * sd] = (float)ffb_unary_f64(op, (double)s[os + e * ss]);
}

/* ---- dense f32 runs, four elements a thread -------------------------------------------- */
/* Every operand dense (stride 1) or one broadcast element (stride 0), the dense ones
 * starting 16-byte aligned: one 16-byte load or store per dense operand and four elements
 * (the memory-bound case: add, exp ... on big tensors). The same values as k_*_f32: the
 * double formulas rounded once, and float + - * directly, which round the same (a float
 * sum, difference or product computed in double and rounded once is the correctly rounded
 * float result: 53 >= 2 * 24 + 2 bits). The caller runs the n % 4 tail with k_*_f32. */
struct alignas(16) cuda_f32x4 {
    float v[4];
};

__device__ __forceinline__ cuda_f32x4 cuda_load4(const float *p, int64_t stride, int64_t q)
{
    if (stride) return ((const cuda_f32x4 *)p)[q];
    cuda_f32x4 r = {{p[0], p[0], p[0], p[0]}};
    return r;
}

__device__ __forceinline__ float cuda_binary_f32(ff_binary_op op, float x, float y)
{
    switch (op) {
    case FF_BINARY_ADD: return x + y;
    case FF_BINARY_SUB: return x - y;
    case FF_BINARY_MUL: return x * y;
    default: return (float)ffb_binary_f64(op, (double)x, (double)y);
    }
}

__global__ void k_unary_f32x4(ff_unary_op op, float *d, const float *s, int64_t ss, int64_t n4)
{
    CUDA_FOR(q, n4) {
        cuda_f32x4 x = cuda_load4(s, ss, q), r;
        for (int k = 0; k < 4; k++) r.v[k] = (float)ffb_unary_f64(op, (double)x.v[k]);
        ((cuda_f32x4 *)d)[q] = r;
    }
}

/* The same with the op fixed at compile time, for the ops big activations go through: the
 * switch of ffb_unary_f64 folds away, and with it the registers of every other formula
 * (54 for the general kernel, which halves the warps an SM keeps in flight). On an H100
 * the general kernel ran exp of 64M floats at 0.67 of the copy bandwidth. */
template <ff_unary_op OP> __global__ void k_unary_f32x4_op(float *d, const float *s, int64_t ss, int64_t n4)
{
    CUDA_FOR(q, n4) {
        cuda_f32x4 x = cuda_load4(s, ss, q), r;
        for (int k = 0; k < 4; k++) r.v[k] = (float)ffb_unary_f64(OP, (double)x.v[k]);
        ((cuda_f32x4 *)d)[q] = r;
    }
}

#define CUDA_UNARY_F32X4_CASE(OP) \
    case OP: CUDA_LAUNCH(k_unary_f32x4_op<OP>, grid, CUDA_THREADS, stream)(d, s, ss, n4); break
static void launch_unary_f32x4(cudaStream_t stream, ff_unary_op op, float *d, const float *s, int64_t ss, int64_t n4)
{
    unsigned grid = cuda_blocks(n4);
    switch (op) {
        CUDA_UNARY_F32X4_CASE(FF_UNARY_NEG);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_EXP);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_LOG);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_SQRT);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_TANH);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_SIGMOID);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_RELU);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_GELU_TANH);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_GELU_ERF);
        CUDA_UNARY_F32X4_CASE(FF_UNARY_SILU);
    default: CUDA_LAUNCH(k_unary_f32x4, grid, CUDA_THREADS, stream)(op, d, s, ss, n4); break;
    }
}

__global__ void k_binary_f32x4(ff_binary_op op, float *d, const float *a, int64_t sa, const float *b, int64_t sb,
                               int64_t n4)
{
    CUDA_FOR(q, n4) {
        cuda_f32x4 x = cuda_load4(a, sa, q), y = cuda_load4(b, sb, q), r;
        for (int k = 0; k < 4; k++) r.v[k] = cuda_binary_f32(op, x.v[k], y.v[k]);
        ((cuda_f32x4 *)d)[q] = r;
    }
}

/* Whether a rank <= 1 walk over n elements of es bytes takes the 16-byte kernels: dst
 * dense, every operand dense or broadcast, dense bases aligned, at least one full group
 * (16 / es elements). */
static int dense16(const void *const *base, const int64_t *stride, int nv, int64_t n, size_t es)
{
    if (n < (int64_t)(16 / es) || stride[0] != 1) return 0;
    for (int i = 0; i < nv; i++)
        if ((stride[i] != 0 && stride[i] != 1) || (stride[i] == 1 && (uintptr_t)base[i] % 16 != 0)) return 0;
    return 1;
}

/* Whether a unary (b NULL) or binary walk over halves takes the eight-wide kernels: rank
 * 1, dst of the operands' dtype, and dense16 over its views. */
static int half_dense(const cuda_walk *w, const ff_view *dst, const ff_view *a, const ff_view *b, int64_t n)
{
    if (w->ndim != 1 || !ffb_is_half(a->dtype) || dst->dtype != a->dtype) return 0;
    int nv = b ? 3 : 2;
    const void *base[3];
    const ff_view *v[3] = {dst, a, b};
    for (int i = 0; i < nv; i++) base[i] = (const uint16_t *)v[i]->buf + w->offset[i];
    const int64_t stride[3] = {w->strides[0][0], w->strides[1][0], nv == 3 ? w->strides[2][0] : 0};
    return dense16(base, stride, nv, n, 2);
}

/* ---- dense halves, eight elements a thread ------------------------------------------- */
/* The F16/BF16 counterparts of the f32x4 kernels (autocast's elementwise traffic): one
 * 16-byte load or store per dense operand. Values as k_unary / k_binary give them: the
 * double formula rounded once to the half; add, sub and mul in float, whose one rounding
 * then to the half is that of the exact result (float's 24 bits >= 2 x 11 + 2, the
 * half's double-rounding bound), so the two agree bit for bit. */
struct alignas(16) cuda_h16x8 {
    uint16_t v[8];
};

__device__ __forceinline__ cuda_h16x8 cuda_load8(const uint16_t *p, int64_t stride, int64_t q)
{
    if (stride) return ((const cuda_h16x8 *)p)[q];
    cuda_h16x8 r;
    for (int k = 0; k < 8; k++) r.v[k] = p[0];
    return r;
}

template <bool BF16> __global__ void k_unary_h8(ff_unary_op op, uint16_t *d, const uint16_t *s, int64_t ss, int64_t n8)
{
    CUDA_FOR(q, n8) {
        cuda_h16x8 x = cuda_load8(s, ss, q), r;
        for (int k = 0; k < 8; k++) r.v[k] = cuda_half_bits<BF16>(ffb_unary_f64(op, (double)cuda_half_f32<BF16>(x.v[k])));
        ((cuda_h16x8 *)d)[q] = r;
    }
}

template <bool BF16>
__global__ void k_binary_h8(ff_binary_op op, uint16_t *d, const uint16_t *a, int64_t sa, const uint16_t *b, int64_t sb,
                            int64_t n8)
{
    CUDA_FOR(q, n8) {
        cuda_h16x8 x = cuda_load8(a, sa, q), y = cuda_load8(b, sb, q), r;
        for (int k = 0; k < 8; k++) {
            float u = cuda_half_f32<BF16>(x.v[k]), v = cuda_half_f32<BF16>(y.v[k]);
            /* float only where it is exact enough (above); the rest straight from double,
             * never through a float rounding first */
            double e = op == FF_BINARY_ADD || op == FF_BINARY_SUB || op == FF_BINARY_MUL
                           ? (double)cuda_binary_f32(op, u, v)
                           : ffb_binary_f64(op, (double)u, (double)v);
            r.v[k] = cuda_half_bits<BF16>(e);
        }
        ((cuda_h16x8 *)d)[q] = r;
    }
}

__global__ void k_binary(cuda_walk w, ff_binary_op op, void *db, ff_dtype dt, const void *ab, const void *bb,
                         ff_dtype t, int64_t n)
{
    int is_float = ffb_is_float(t) || ffb_is_half(t);
    CUDA_FOR(e, n) {
        int64_t off[3];
        cuda_walk_at(w, e, 3, off);
        char *d = cuda_elem(db, dt, off[0]);
        const char *x = cuda_elem_c(ab, t, off[1]), *y = cuda_elem_c(bb, t, off[2]);
        if (is_float) ffb_st_f64(d, dt, ffb_binary_f64(op, ffb_ld_f64(x, t), ffb_ld_f64(y, t)));
        else ffb_st_i64(d, dt, ffb_binary_i64(op, ffb_ld_i64(x, t), ffb_ld_i64(y, t)));
    }
}

__global__ void k_binary_f32(ff_binary_op op, float *d, int64_t od, int64_t sd, const float *a, int64_t oa, int64_t sa,
                             const float *b, int64_t ob, int64_t sb, int64_t n)
{
    CUDA_FOR(e, n) d[od + e * sd] = (float)ffb_binary_f64(op, (double)a[oa + e * sa], (double)b[ob + e * sb]);
}

__global__ void k_where(cuda_walk w, void *db, const uint8_t *cb, const void *ab, const void *bb, ff_dtype t, int64_t n)
{
    size_t size = ff_dtype_size(t);
    CUDA_FOR(e, n) {
        int64_t off[4];
        cuda_walk_at(w, e, 4, off);
        move_elem(cuda_elem(db, t, off[0]), cb[off[1]] ? cuda_elem_c(ab, t, off[2]) : cuda_elem_c(bb, t, off[3]), size);
    }
}

/* r rounded to the half type t, as a store and a load of it give. */
__device__ __forceinline__ double cuda_half_round(double r, ff_dtype t)
{
    return t == FF_BF16 ? cuda_half_f32<true>(cuda_half_bits<true>(r)) : cuda_half_f32<false>(cuda_half_bits<false>(r));
}

/* The fused program (cuda_fused.c): per element, the instructions in order; views in
 * memory, temporaries in the thread, rounded to the dtype as the plain entries' stores. */
__global__ void k_fused(cuda_fused_args a, int64_t n)
{
    ff_dtype t = (ff_dtype)a.dtype;
    CUDA_FOR(e, n) {
        int64_t off[FF_FUSED_MAX_VIEWS], rest = e;
        for (int v = 0; v < a.n_views; v++) off[v] = a.offset[v];
        for (int d = a.ndim - 1; d >= 0; d--) {
            int64_t s = a.shape[d], q = rest / s, k = rest - q * s;
            rest = q;
            for (int v = 0; v < a.n_views; v++) off[v] += k * a.strides[v][d];
        }
        double tmp[FF_FUSED_MAX_VALUES];
        for (int i = 0; i < a.n_inst; i++) {
            const uint8_t *in = a.inst[i];
            double x[2];
            for (int k = 0; k < 1 + in[0]; k++) {
                int s = in[3 + k];
                x[k] = s < a.n_views ? ffb_ld_f64(cuda_elem_c(a.buf[s], t, off[s]), t) : tmp[s];
            }
            double r = in[0] ? ffb_binary_f64((ff_binary_op)in[1], x[0], x[1]) : ffb_unary_f64((ff_unary_op)in[1], x[0]);
            int d = in[2];
            if (d < a.n_views) ffb_st_f64(cuda_elem(a.buf[d], t, off[d]), t, r);
            else tmp[d] = t == FF_F32 ? (double)(float)r : ffb_is_half(t) ? cuda_half_round(r, t) : r;
        }
    }
}

extern "C" ff_status cuda_fused_launch(cuda_ctx *c, const cuda_fused_args *a, int64_t numel)
{
    CUDA_LAUNCH(k_fused, cuda_blocks(numel), CUDA_THREADS, c->stream)(*a, numel);
    return cuda_launch_check(c, "fused", "k_fused");
}

/* ---- entries -------------------------------------------------------------------------- */

/* The walk of the views, its element count, and the device made current; *n == 0 means
 * nothing to do. */
static ff_status prepare(cuda_ctx *c, const char *entry, const ff_view *const *vs, int nv, cuda_walk *w, int64_t *n)
{
    *w = cuda_walk_of(vs, nv);
    *n = cuda_walk_numel(w);
    return *n ? cuda_use_device(c, entry) : FF_OK;
}

extern "C" ff_status cuda_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st = cuda_check_view(c, "fill", "dst", dst, 1);
    if (st) return st;
    const ff_view *vs[] = {dst};
    cuda_walk w;
    int64_t n;
    if ((st = prepare(c, "fill", vs, 1, &w, &n)) || !n) return st;
    CUDA_LAUNCH(k_fill, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, dst->dtype, value.f, value.i, n);
    return cuda_launch_check(c, "fill", "k_fill");
}

extern "C" ff_status cuda_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st;
    if ((st = cuda_check_view(c, "copy", "dst", dst, 1)) || (st = cuda_check_view(c, "copy", "src", src, 1))) return st;
    if (!ffb_same_shape(dst, src)) return cuda_shape_error(c, "copy", dst, src);
    const ff_view *vs[] = {dst, src};
    cuda_walk w;
    int64_t n;
    if ((st = prepare(c, "copy", vs, 2, &w, &n)) || !n) return st;
    if (dst->dtype == src->dtype && cuda_walk_dense(&w)) { /* one block move */
        size_t sz = ff_dtype_size(dst->dtype);
        cudaError_t err = cudaMemcpyAsync((char *)dst->buf + w.offset[0] * sz, (const char *)src->buf + w.offset[1] * sz,
                                          (size_t)n * sz, cudaMemcpyDeviceToDevice, c->stream);
        return err == cudaSuccess ? FF_OK : cuda_fail(c, "copy", "cudaMemcpyAsync", err);
    }
    CUDA_LAUNCH(k_copy, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, dst->dtype, src->buf, src->dtype, n);
    return cuda_launch_check(c, "copy", "k_copy");
}

extern "C" ff_status cuda_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st;
    if ((st = cuda_check_view(c, "unary", "dst", dst, 1)) || (st = cuda_check_view(c, "unary", "src", src, 1)))
        return st;
    const char *name = ffb_unary_name(op);
    if (!name) return cuda_error(c, FF_ERR_INVALID, "cuda unary: invalid op %d", (int)op);
    if (!cuda_unary_supported(op, cuda_rule_dtype(src->dtype)))
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda unary: %s is not supported on %s", name,
                          ffb_dtype_name(src->dtype));
    ff_dtype want = ffb_unary_writes_bool(op) ? FF_BOOL : src->dtype;
    if (dst->dtype != want)
        return cuda_error(c, FF_ERR_INVALID, "cuda unary: %s on %s writes %s, but dst is %s", name,
                          ffb_dtype_name(src->dtype), ffb_dtype_name(want), ffb_dtype_name(dst->dtype));
    if (!ffb_same_shape(dst, src)) return cuda_shape_error(c, "unary", dst, src);
    op = ffb_unary_effective(op, src->dtype); /* ~bool is the logical not */
    const ff_view *vs[] = {dst, src};
    cuda_walk w;
    int64_t n;
    if ((st = prepare(c, "unary", vs, 2, &w, &n)) || !n) return st;
    if (w.ndim <= 1 && src->dtype == FF_F32 && dst->dtype == FF_F32) {
        int64_t sd = w.ndim ? w.strides[0][0] : 0, ss = w.ndim ? w.strides[1][0] : 0, done = 0;
        float *d = (float *)dst->buf + w.offset[0];
        const float *s = (const float *)src->buf + w.offset[1];
        const void *base[2] = {d, s};
        const int64_t stride[2] = {sd, ss};
        if (dense16(base, stride, 2, n, 4)) {
            done = n / 4 * 4;
            launch_unary_f32x4(c->stream, op, d, s, ss, n / 4);
        }
        if (done < n)
            CUDA_LAUNCH(k_unary_f32, cuda_blocks(n - done), CUDA_THREADS, c->stream)(
                op, (float *)dst->buf, w.offset[0] + done * sd, sd, (const float *)src->buf, w.offset[1] + done * ss, ss,
                n - done);
    } else if (half_dense(&w, dst, src, NULL, n)) {
        /* dense halves: the groups of eight, then the tail through the general kernel */
        int64_t ss = w.strides[1][0], n8 = n / 8;
        uint16_t *d = (uint16_t *)dst->buf + w.offset[0];
        const uint16_t *s = (const uint16_t *)src->buf + w.offset[1];
        if (src->dtype == FF_BF16) CUDA_LAUNCH(k_unary_h8<true>, cuda_blocks(n8), CUDA_THREADS, c->stream)(op, d, s, ss, n8);
        else CUDA_LAUNCH(k_unary_h8<false>, cuda_blocks(n8), CUDA_THREADS, c->stream)(op, d, s, ss, n8);
        if (n8 * 8 < n) {
            cuda_walk t = w;
            t.offset[0] += n8 * 8, t.offset[1] += n8 * 8 * ss, t.shape[0] = n - n8 * 8;
            CUDA_LAUNCH(k_unary, cuda_blocks(n - n8 * 8), CUDA_THREADS, c->stream)(t, op, dst->buf, dst->dtype, src->buf,
                                                                                   src->dtype, n - n8 * 8);
        }
    } else {
        CUDA_LAUNCH(k_unary, cuda_blocks(n), CUDA_THREADS, c->stream)(w, op, dst->buf, dst->dtype, src->buf, src->dtype, n);
    }
    return cuda_launch_check(c, "unary", "k_unary");
}

extern "C" ff_status cuda_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st;
    if ((st = cuda_check_view(c, "binary", "dst", dst, 1)) || (st = cuda_check_view(c, "binary", "a", a, 1)) ||
        (st = cuda_check_view(c, "binary", "b", b, 1)))
        return st;
    const char *name = ffb_binary_name(op);
    if (!name) return cuda_error(c, FF_ERR_INVALID, "cuda binary: invalid op %d", (int)op);
    if (a->dtype != b->dtype)
        return cuda_error(c, FF_ERR_INVALID, "cuda binary: %s operands differ in dtype (%s and %s)", name,
                          ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype));
    if (!ffb_binary_supported(op, cuda_rule_dtype(a->dtype)))
        return cuda_error(c, FF_ERR_UNSUPPORTED, "cuda binary: %s is not supported on %s", name, ffb_dtype_name(a->dtype));
    ff_dtype want = ffb_binary_writes_bool(op) ? FF_BOOL : a->dtype;
    if (dst->dtype != want)
        return cuda_error(c, FF_ERR_INVALID, "cuda binary: %s on %s writes %s, but dst is %s", name,
                          ffb_dtype_name(a->dtype), ffb_dtype_name(want), ffb_dtype_name(dst->dtype));
    if (!ffb_same_shape(dst, a)) return cuda_shape_error(c, "binary", dst, a);
    if (!ffb_same_shape(dst, b)) return cuda_shape_error(c, "binary", dst, b);
    const ff_view *vs[] = {dst, a, b};
    cuda_walk w;
    int64_t n;
    if ((st = prepare(c, "binary", vs, 3, &w, &n)) || !n) return st;
    if (w.ndim <= 1 && a->dtype == FF_F32 && dst->dtype == FF_F32) {
        int64_t sd = w.ndim ? w.strides[0][0] : 0, sa = w.ndim ? w.strides[1][0] : 0, sb = w.ndim ? w.strides[2][0] : 0;
        float *d = (float *)dst->buf + w.offset[0];
        const float *pa = (const float *)a->buf + w.offset[1], *pb = (const float *)b->buf + w.offset[2];
        const void *base[3] = {d, pa, pb};
        const int64_t stride[3] = {sd, sa, sb};
        int64_t done = 0;
        if (dense16(base, stride, 3, n, 4)) {
            done = n / 4 * 4;
            CUDA_LAUNCH(k_binary_f32x4, cuda_blocks(n / 4), CUDA_THREADS, c->stream)(op, d, pa, sa, pb, sb, n / 4);
        }
        if (done < n)
            CUDA_LAUNCH(k_binary_f32, cuda_blocks(n - done), CUDA_THREADS, c->stream)(
                op, (float *)dst->buf, w.offset[0] + done * sd, sd, (const float *)a->buf, w.offset[1] + done * sa, sa,
                (const float *)b->buf, w.offset[2] + done * sb, sb, n - done);
    } else if (half_dense(&w, dst, a, b, n)) {
        int64_t sa = w.strides[1][0], sb = w.strides[2][0], n8 = n / 8;
        uint16_t *d = (uint16_t *)dst->buf + w.offset[0];
        const uint16_t *pa = (const uint16_t *)a->buf + w.offset[1], *pb = (const uint16_t *)b->buf + w.offset[2];
        if (a->dtype == FF_BF16)
            CUDA_LAUNCH(k_binary_h8<true>, cuda_blocks(n8), CUDA_THREADS, c->stream)(op, d, pa, sa, pb, sb, n8);
        else CUDA_LAUNCH(k_binary_h8<false>, cuda_blocks(n8), CUDA_THREADS, c->stream)(op, d, pa, sa, pb, sb, n8);
        if (n8 * 8 < n) {
            cuda_walk t = w;
            t.offset[0] += n8 * 8, t.offset[1] += n8 * 8 * sa, t.offset[2] += n8 * 8 * sb, t.shape[0] = n - n8 * 8;
            CUDA_LAUNCH(k_binary, cuda_blocks(n - n8 * 8), CUDA_THREADS, c->stream)(t, op, dst->buf, dst->dtype, a->buf,
                                                                                    b->buf, a->dtype, n - n8 * 8);
        }
    } else {
        CUDA_LAUNCH(k_binary, cuda_blocks(n), CUDA_THREADS, c->stream)(w, op, dst->buf, dst->dtype, a->buf, b->buf, a->dtype, n);
    }
    return cuda_launch_check(c, "binary", "k_binary");
}

extern "C" ff_status cuda_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    ff_status st;
    if ((st = cuda_check_view(c, "where", "dst", dst, 1)) || (st = cuda_check_view(c, "where", "cond", cond, 0)) ||
        (st = cuda_check_view(c, "where", "a", a, 1)) || (st = cuda_check_view(c, "where", "b", b, 1)))
        return st;
    if (cond->dtype != FF_BOOL)
        return cuda_error(c, FF_ERR_INVALID, "cuda where: cond must be bool, got %s", ffb_dtype_name(cond->dtype));
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return cuda_error(c, FF_ERR_INVALID, "cuda where: a (%s) and b (%s) must have dst's dtype %s",
                          ffb_dtype_name(a->dtype), ffb_dtype_name(b->dtype), ffb_dtype_name(dst->dtype));
    if (!ffb_same_shape(dst, cond)) return cuda_shape_error(c, "where", dst, cond);
    if (!ffb_same_shape(dst, a)) return cuda_shape_error(c, "where", dst, a);
    if (!ffb_same_shape(dst, b)) return cuda_shape_error(c, "where", dst, b);
    const ff_view *vs[] = {dst, cond, a, b};
    cuda_walk w;
    int64_t n;
    if ((st = prepare(c, "where", vs, 4, &w, &n)) || !n) return st;
    CUDA_LAUNCH(k_where, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, (const uint8_t *)cond->buf, a->buf, b->buf,
                                                           dst->dtype, n);
    return cuda_launch_check(c, "where", "k_where");
}

/* The linear entry's epilogue (cuda_linear.c): dst = act(src + bias) per element, src
 * the f32 sums, each step rounded to f32 as the F32 rules round it (the composition's
 * add and activation, bit for bit, for an F32 dst), then one rounding to dst's dtype. */
__global__ void k_linear_epi(cuda_walk w, void *db, ff_dtype dt, const float *s, const void *bb, int has_bias, int act,
                             int64_t n)
{
    CUDA_FOR(e, n) {
        int64_t off[3];
        cuda_walk_at(w, e, 3, off);
        double v = (double)s[off[1]];
        if (has_bias) v = (double)(float)(v + ffb_ld_f64(cuda_elem_c(bb, dt, off[2]), dt));
        if (act >= 0) v = (double)(float)ffb_unary_f64((ff_unary_op)act, v);
        ffb_st_f64(cuda_elem(db, dt, off[0]), dt, v);
    }
}

extern "C" ff_status cuda_linear_epilogue(cuda_ctx *c, const ff_view *dst, const ff_view *src, const ff_view *bias,
                                          int act)
{
    const ff_view *vs[] = {dst, src, bias ? bias : src};
    cuda_walk w;
    int64_t n;
    ff_status st = prepare(c, "linear", vs, 3, &w, &n);
    if (st || !n) return st;
    CUDA_LAUNCH(k_linear_epi, cuda_blocks(n), CUDA_THREADS, c->stream)(w, dst->buf, dst->dtype, (const float *)src->buf,
                                                                      bias ? bias->buf : src->buf, bias != NULL, act, n);
    return cuda_launch_check(c, "linear", "k_linear_epi");
}
