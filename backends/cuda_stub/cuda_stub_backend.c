/*
 * cuda_stub: THE TEMPLATE FOR A NEW BACKEND.
 *
 * This plugin builds everywhere (plain C, no CUDA toolkit needed) and does nothing:
 * init() reports that there is no device, so the loader refuses it with a clear
 * message and no other entry is ever called. Its value is as a starting point: every
 * vtable entry exists, with its contract summarized next to it. Copy this folder,
 * rename it and fill the entries in; README.md next to this file has the steps.
 * The full contract is include/ff/backend_abi.h: read it first.
 *
 * Rules every backend follows (backend_abi.h, "Contract for every compute entry"):
 *   - Include only "ff/backend_abi.h" (plus your device SDK and libc). Never a core
 *     header: the ABI header is the whole interface.
 *   - Export exactly one symbol, ff_backend_entry. Build with hidden visibility
 *     (ff_add_backend does) and mark only the entry FF_PLUGIN_EXPORT.
 *   - The core has already checked shapes, broadcast operands (stride 0) and promoted
 *     dtypes. Views arrive resolved: element (i0..in-1) of a view lives at
 *     offset + sum(i_d * strides[d]) elements into buf. Strides are >= 0 and may be 0
 *     or in any order (transposes). ndim == 0 is one element.
 *   - dst never overlaps an input, except being the identical view (in-place
 *     elementwise ops): read each element before writing it.
 *   - Zero-size views may arrive: do nothing and return FF_OK.
 *   - On failure call host->set_error("<backend> <entry>: <why>") and return a
 *     non-zero ff_status. Never abort(), exit() or assert() on bad input.
 *   - supports() must agree exactly with what the entries do: the core asks it before
 *     every call and reports "backend X does not support ..." when it says no.
 *   - The cpu backend (backends/cpu) is the reference: results must match it within
 *     the conformance tolerances (`build/bin/ff-conformance --backend yours.so`).
 */
#include <stddef.h>

#include "ff/backend_abi.h"

/* The host services arrive in init(); keep them (in a static, as here, or in your
 * context) so that every entry can report errors through host->set_error. */
static const ff_host_api *stub_host;

/* Every unimplemented entry funnels through here: a message naming the entry and
 * FF_ERR_UNSUPPORTED, which the core turns into an error for the user. */
static ff_status stub_unimplemented(const char *entry)
{
    if (stub_host && stub_host->set_error) stub_host->set_error("cuda_stub %s: not implemented", entry);
    return FF_ERR_UNSUPPORTED;
}

/* ---- lifecycle ------------------------------------------------------------ */

/* init: called once, right after the loader has checked abi_version and struct_size.
 * Find and open the device, create streams/handles, and store whatever state you
 * need in *ctx; every other entry receives that pointer back. Fail with
 * FF_ERR_BACKEND (after set_error) when there is no usable device: the loader then
 * unloads the plugin and reports your message, and `ff-conformance` reports SKIP. */
static ff_status stub_init(const ff_host_api *host, void **ctx)
{
    stub_host = host;
    if (ctx) *ctx = NULL;
    if (host && host->set_error)
        host->set_error("cuda_stub: no CUDA device (this stub backend is the template for new backends; "
                        "see backends/cuda_stub/README.md)");
    return FF_ERR_BACKEND;
}

/* shutdown: release everything init() created. Called once, after the last tensor
 * on this backend has been freed. */
static void stub_shutdown(void *ctx) { (void)ctx; }

/* supports: 1 if the entry for `kind` handles (op, dtype), else 0, and 0 FOR EVERY OP
 * CODE THIS BACKEND DOES NOT IMPLEMENT: list the codes (a switch, default 0), never
 * compare with *_COUNT, or a rebuild against a newer header claims the codes appended
 * since (backend_abi.h, top). What `op` and
 * `dtype` mean per kind is documented at ff_op_kind (e.g. COPY: op = source dtype,
 * dtype = destination; REDUCE/UNARY: dtype = source dtype; SOFTMAX: op = log flag).
 * Start by returning 1 only for what you have written and tested; the core refuses
 * the rest with a clear message instead of computing garbage.
 *
 * Below, every op code of the ABI is named with the dtypes a complete backend accepts
 * (what the reference answers, backends/cpu/README.md), wrapped in NOT_YET(): this stub
 * computes nothing, so NOT_YET(...) is 0. As you write a kernel and ff-conformance
 * passes it, replace NOT_YET(cond) by (cond). New op codes are appended to the enums as
 * the ABI grows (backend_abi.h, "Growing the op enums"): name the ops you implement,
 * never "op < FF_BINARY_COUNT", so a newer core's op codes fall to `default: return 0`
 * and are declined, not miscomputed. */
#define NOT_YET(cond) ((void)(cond), 0)

static int stub_unary_supported(ff_unary_op op, ff_dtype t)
{
    const int fl = t == FF_F32 || t == FF_F64, in = t == FF_I32 || t == FF_I64 || t == FF_U8, b = t == FF_BOOL;
    switch (op) {
    /* transcendental and float-only ops: the core promotes integers to float first */
    case FF_UNARY_EXP: case FF_UNARY_LOG: case FF_UNARY_LOG1P: case FF_UNARY_EXPM1: case FF_UNARY_SQRT:
    case FF_UNARY_RSQRT: case FF_UNARY_RECIPROCAL: case FF_UNARY_SIN: case FF_UNARY_COS: case FF_UNARY_TANH:
    case FF_UNARY_SIGMOID: case FF_UNARY_GELU_TANH: case FF_UNARY_GELU_ERF: case FF_UNARY_SILU:
    case FF_UNARY_SOFTPLUS: case FF_UNARY_ERF:
        return NOT_YET(fl);
    /* NEG: not on bool (integers wrap: neg(INT_MIN) = INT_MIN) */
    case FF_UNARY_NEG: return NOT_YET(fl || in);
    /* every dtype (on integers FLOOR/CEIL/ROUND are the identity, ISNAN/ISINF false) */
    case FF_UNARY_ABS: case FF_UNARY_SIGN: case FF_UNARY_SQUARE: case FF_UNARY_RELU: case FF_UNARY_FLOOR:
    case FF_UNARY_CEIL: case FF_UNARY_ROUND: case FF_UNARY_ISNAN: case FF_UNARY_ISINF: case FF_UNARY_LOGICAL_NOT:
        return NOT_YET(fl || in || b);
    /* appended after ABI 1's first release: ~x on integers (u8: 255 - x); on bool the
     * logical not (the core sends LOGICAL_NOT for ~bool, accepting bool is optional) */
    case FF_UNARY_BITWISE_NOT: return NOT_YET(in || b);
    /* third step: float only (asin/acos outside [-1, 1] give NaN) */
    case FF_UNARY_ATAN: case FF_UNARY_ASIN: case FF_UNARY_ACOS: case FF_UNARY_ERFINV: return NOT_YET(fl);
    /* fourth step: float only */
    case FF_UNARY_LGAMMA: case FF_UNARY_DIGAMMA: case FF_UNARY_TRIGAMMA: return NOT_YET(fl);
    default: return 0; /* an op code newer than this file */
    }
}

static int stub_binary_supported(ff_binary_op op, ff_dtype t)
{
    const int fl = t == FF_F32 || t == FF_F64, in = t == FF_I32 || t == FF_I64 || t == FF_U8, b = t == FF_BOOL;
    switch (op) {
    /* not on bool */
    case FF_BINARY_SUB: case FF_BINARY_DIV: case FF_BINARY_POW: case FF_BINARY_FMOD: return NOT_YET(fl || in);
    /* every dtype (bool: ADD = or, MUL = and, MAXIMUM = or, MINIMUM = and); comparisons
     * and logical ops write BOOL (ff_binary_op_writes_bool) */
    case FF_BINARY_ADD: case FF_BINARY_MUL: case FF_BINARY_MAXIMUM: case FF_BINARY_MINIMUM: case FF_BINARY_EQ:
    case FF_BINARY_NE: case FF_BINARY_LT: case FF_BINARY_LE: case FF_BINARY_GT: case FF_BINARY_GE:
    case FF_BINARY_LOGICAL_AND: case FF_BINARY_LOGICAL_OR: case FF_BINARY_LOGICAL_XOR:
        return NOT_YET(fl || in || b);
    /* appended after ABI 1's first release: bits of the two's complement value in the
     * operands' dtype; on bool the logical and/or/xor (BOOL out); never floats */
    case FF_BINARY_BITWISE_AND: case FF_BINARY_BITWISE_OR: case FF_BINARY_BITWISE_XOR: return NOT_YET(in || b);
    case FF_BINARY_ATAN2: return NOT_YET(t == FF_F32 || t == FF_F64); /* third step: floats only */
    default: return 0; /* an op code newer than this file */
    }
}

static int stub_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    (void)ctx;
    const int fl = dtype == FF_F32 || dtype == FF_F64;
    const int ok = fl || dtype == FF_I32 || dtype == FF_I64 || dtype == FF_U8 || dtype == FF_BOOL; /* not F16/BF16 */
    if (!ok) return 0;
    /* the dtypes named, never a range: an appended dtype (I8, I16) is declined until written */
    const int op_ok = op == FF_F32 || op == FF_F64 || op == FF_I32 || op == FF_I64 || op == FF_U8 || op == FF_BOOL;
    switch (kind) {
    case FF_KIND_FILL: return op == 0 && NOT_YET(ok);
    case FF_KIND_COPY: return NOT_YET(op_ok);
    case FF_KIND_UNARY: return stub_unary_supported((ff_unary_op)op, dtype);
    case FF_KIND_BINARY: return stub_binary_supported((ff_binary_op)op, dtype);
    case FF_KIND_REDUCE:
        switch ((ff_reduce_op)op) {
        case FF_REDUCE_SUM: case FF_REDUCE_PROD: case FF_REDUCE_MAX: case FF_REDUCE_MIN: case FF_REDUCE_ARGMAX:
        case FF_REDUCE_ARGMIN: case FF_REDUCE_ANY: case FF_REDUCE_ALL:
            return NOT_YET(ok);
        default: return 0;
        }
    case FF_KIND_MATMUL: return op == 0 && NOT_YET(dtype != FF_BOOL);
    case FF_KIND_WHERE: case FF_KIND_GATHER: case FF_KIND_SCATTER_ADD: return op == 0 && NOT_YET(ok);
    case FF_KIND_RANDOM: return (op == FF_RANDOM_UNIFORM || op == FF_RANDOM_NORMAL) && NOT_YET(fl);
    case FF_KIND_SOFTMAX: return (op == 0 || op == 1) && NOT_YET(fl); /* op: 1 for log_softmax */
    default: return 0; /* a kind newer than this file */
    }
}

/* ---- memory ----------------------------------------------------------------- */

/* alloc: a buffer of nbytes (nbytes may be 0: return a valid, freeable handle).
 * The handle is opaque to the core (a device pointer here); it only comes back to
 * your own entries as ff_view.buf. On failure: set_error and return NULL. */
static void *stub_alloc(void *ctx, size_t nbytes)
{
    (void)ctx, (void)nbytes;
    stub_unimplemented("alloc");
    return NULL;
}

/* free: release a buffer from alloc (NULL is a no-op). A caching allocator may keep
 * it; then report it through memory_stats and release it in empty_cache. */
static void stub_free(void *ctx, void *buf) { (void)ctx, (void)buf; }

/* upload: copy nbytes from host memory into buf at byte_offset (host -> device).
 * It must be complete (or ordered before any later use of buf) when it returns. */
static ff_status stub_upload(void *ctx, void *buf, size_t byte_offset, const void *host, size_t nbytes)
{
    (void)ctx, (void)buf, (void)byte_offset, (void)host, (void)nbytes;
    return stub_unimplemented("upload");
}

/* download: copy nbytes from buf at byte_offset into host memory (device -> host).
 * The host memory must hold the data when it returns (synchronize first). */
static ff_status stub_download(void *ctx, const void *buf, size_t byte_offset, void *host, size_t nbytes)
{
    (void)ctx, (void)buf, (void)byte_offset, (void)host, (void)nbytes;
    return stub_unimplemented("download");
}

/* sync: wait until all work queued so far has finished (cudaStreamSynchronize).
 * Kernels may run asynchronously between syncs, as long as they stay in order. */
static ff_status stub_sync(void *ctx)
{
    (void)ctx;
    return stub_unimplemented("sync");
}

/* ---- compute (all required) ----------------------------------------------------- */

/* fill: every element of dst = value (value.f for F32/F64, value.i for integers,
 * value.i != 0 for BOOL). */
static ff_status stub_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    (void)ctx, (void)dst, (void)value;
    return stub_unimplemented("fill");
}

/* copy: dst = src elementwise, same shape, any strides, converting src's dtype to
 * dst's (float -> int truncates toward zero, NaN -> 0, non-zero -> BOOL 1). Also the
 * device-to-device copy the core uses for contiguous(), clone() and assignment. */
static ff_status stub_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    (void)ctx, (void)dst, (void)src;
    return stub_unimplemented("copy");
}

/* unary: dst = op(src), same shape. dst has src's dtype except ISNAN, ISINF and
 * LOGICAL_NOT, which write BOOL. ROUND is half-to-even; keep IEEE's sign of zero
 * (tanh(-0) = -0, relu(-0) = -0: vectorized polynomials often lose it, and
 * ff-conformance checks it). BITWISE_NOT is ~x on integers (u8: 255 - x), the logical
 * not on bool, never sent for floats. See ff_unary_op and stub_unary_supported. */
static ff_status stub_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    (void)ctx, (void)op, (void)dst, (void)src;
    return stub_unimplemented("unary");
}

/* binary: dst = a op b, all of dst's shape (broadcasts are stride-0 views). a and b
 * share a dtype; dst has it too, except comparisons and logical ops (BOOL:
 * ff_binary_op_writes_bool: not "op >= FF_BINARY_EQ", the bitwise ops come after).
 * MAXIMUM/MINIMUM propagate NaN; integer DIV truncates, x / 0 = 0; BITWISE_AND/OR/XOR
 * on integers (two's complement bits) and bool (logical), never sent for floats. See
 * ff_binary_op and stub_binary_supported. */
static ff_status stub_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)op, (void)dst, (void)a, (void)b;
    return stub_unimplemented("binary");
}

/* reduce: reduce src over the axes whose bit is set in axes_mask into dst, which has
 * src's rank with size 1 on reduced axes (keepdim form). ARGMAX/ARGMIN write I64 and
 * take the first extreme; ANY/ALL write BOOL. Empty sets: SUM 0, PROD 1. See
 * ff_reduce_op. */
static ff_status stub_reduce(void *ctx, ff_reduce_op op, const ff_view *dst, const ff_view *src, uint32_t axes_mask)
{
    (void)ctx, (void)op, (void)dst, (void)src, (void)axes_mask;
    return stub_unimplemented("reduce");
}

/* matmul: dst[..., M, N] = a[..., M, K] @ b[..., K, N]; equal ranks >= 2, equal
 * batch shapes (broadcast batches have stride 0). K == 0 gives zeros. On a GPU,
 * this is the cuBLAS strided-batched GEMM (mind the row-major/column-major swap). */
static ff_status stub_matmul(void *ctx, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)dst, (void)a, (void)b;
    return stub_unimplemented("matmul");
}

/* where: dst = cond ? a : b elementwise; cond is BOOL, a and b have dst's dtype. */
static ff_status stub_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    (void)ctx, (void)dst, (void)cond, (void)a, (void)b;
    return stub_unimplemented("where");
}

/* gather: torch.gather along axis; index (I64) has dst's shape. An index outside
 * [0, src.shape[axis]) is FF_ERR_INDEX with a message naming it. */
static ff_status stub_gather(void *ctx, const ff_view *dst, const ff_view *src, const ff_view *index, int axis)
{
    (void)ctx, (void)dst, (void)src, (void)index, (void)axis;
    return stub_unimplemented("gather");
}

/* scatter_add: dst[.., index[..], ..] += src[..] along axis (Tensor.scatter_add_);
 * duplicate indices add up. Validate every index before writing anything. On a GPU
 * use atomics (the summation order then differs from the cpu backend's; the
 * conformance tolerance allows for that with floats). */
static ff_status stub_scatter_add(void *ctx, const ff_view *dst, const ff_view *index, const ff_view *src, int axis)
{
    (void)ctx, (void)dst, (void)index, (void)src, (void)axis;
    return stub_unimplemented("scatter_add");
}

/* random: fill dst from the ABI's Philox generator so every backend draws the same
 * numbers: the element with row-major logical index n uses counter counter_base + n,
 * value p0 + (p1 - p0) * ff_random_uniform01(seed, ctr) (UNIFORM) or
 * p0 + p1 * ff_random_normal01(seed, ctr) (NORMAL). Those helpers are plain inline C
 * in backend_abi.h and compile in device code too (mark them __device__ or copy). */
static ff_status stub_random(void *ctx, const ff_view *dst, ff_random_dist dist, uint64_t seed,
                             uint64_t counter_base, double p0, double p1)
{
    (void)ctx, (void)dst, (void)dist, (void)seed, (void)counter_base, (void)p0, (void)p1;
    return stub_unimplemented("random");
}

/* ---- optional (NULL is allowed: the core composes the op from required entries) ---- */

/* softmax: softmax (or log_softmax when want_log != 0) of src along axis into dst;
 * float dtypes. Subtract the row max for stability, and compute log_softmax as
 * (x - max) - log(sum): x - (max + log(sum)) loses the log next to a max near 3e38.
 * Set the pointer to NULL in the vtable if you do not write one: the core then composes
 * it from reduce/binary. */
static ff_status stub_softmax(void *ctx, const ff_view *dst, const ff_view *src, int axis, int want_log)
{
    (void)ctx, (void)dst, (void)src, (void)axis, (void)want_log;
    return stub_unimplemented("softmax");
}

/* memory_stats: bytes in live buffers, bytes held in your allocator's cache, and the
 * peak of in_use. Any out-pointer may be NULL. May be left NULL in the vtable. */
static ff_status stub_memory_stats(void *ctx, size_t *in_use, size_t *cached, size_t *peak)
{
    (void)ctx, (void)in_use, (void)cached, (void)peak;
    return stub_unimplemented("memory_stats");
}

/* empty_cache: give cached (freed but kept) memory back to the device. May be NULL. */
static ff_status stub_empty_cache(void *ctx)
{
    (void)ctx;
    return stub_unimplemented("empty_cache");
}

/* ---- the vtable ------------------------------------------------------------------ */

/* Designated initializers keep this robust to field order. abi_version and
 * struct_size are what the loader checks first: struct_size must be sizeof the
 * struct as *you* compiled it, so a newer core knows which trailing entries you have
 * (entries past struct_size are treated as NULL). flags: FF_BACKEND_HOST_MEMORY only
 * if buf handles are plain host pointers the core may read directly (not for a GPU). */
static const ff_backend_vtable stub_vtable = {
    .abi_version = FF_ABI_VERSION,
    .struct_size = (uint32_t)sizeof(ff_backend_vtable),
    .abi_step = FF_ABI_STEP, /* the rules you keep: backend_abi.h, "Rules steps" */
    .name = "cuda_stub",   /* short, unique; the file is libff_backend_<name>.so */
    .version = "0.1.0",    /* your backend's own version */
    .description = "template backend: every entry unimplemented; init reports no CUDA device",
    .flags = 0,
    /* lifecycle */
    .init = stub_init,
    .shutdown = stub_shutdown,
    .supports = stub_supports,
    /* memory */
    .alloc = stub_alloc,
    .free = stub_free,
    .upload = stub_upload,
    .download = stub_download,
    .sync = stub_sync,
    /* compute */
    .fill = stub_fill,
    .copy = stub_copy,
    .unary = stub_unary,
    .binary = stub_binary,
    .reduce = stub_reduce,
    .matmul = stub_matmul,
    .where = stub_where,
    .gather = stub_gather,
    .scatter_add = stub_scatter_add,
    .random = stub_random,
    /* optional */
    .softmax = stub_softmax,
    .memory_stats = stub_memory_stats,
    .empty_cache = stub_empty_cache,
};

/* The one exported symbol. It must be cheap and side-effect free: the loader (and
 * `ff-info`) may call it just to read the header fields. Real work goes in init. */
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void) { return &stub_vtable; }
