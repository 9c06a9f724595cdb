/* libFuzzer: the op API as short programs. The input picks a few tensors (dtype, shape,
 * seeded values, requires_grad), then up to 16 steps, each a view (permute, slice,
 * expand, reshape, ...) or an op (unary, binary, number operand, reduction, matmul,
 * softmax, where, clamp, indexing and indexed writes, concat, cast) on tensors made so
 * far, and finally a backward pass. The same program runs on cpu and on cpu_blas: any
 * crash, sanitizer report or leak is a bug, and so is a step that succeeds on one
 * backend and fails on the other or gives another shape or dtype. */
#include "fuzz_util.h" /* first: it defines _GNU_SOURCE */

#include <stdlib.h>

#include "ff/ff.h"

#define POOL 24

typedef struct trace { /* what a run did, to compare the two backends */
    int n;
    int16_t ok[40];
    int16_t ndim[40], dtype[40];
    int64_t numel[40];
} trace;

static const ff_dtype dtypes[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8, FF_BOOL};

static ff_tensor *pick(ff_tensor **pool, int n, fuzz_bytes *b) { return n ? pool[fuzz_u8(b) % n] : NULL; }

static ff_tensor *step(ff_tensor **pool, int n, fuzz_bytes *b, ff_backend *be)
{
    ff_tensor *x = pick(pool, n, b), *y = pick(pool, n, b);
    if (!x) return NULL;
    int nd = ff_tensor_ndim(x), axis = nd ? fuzz_u8(b) % nd : 0;
    int64_t shape[FF_MAX_DIMS];
    switch (fuzz_u8(b) % 24) {
    case 0: return ff_unary((ff_unary_op)(fuzz_u8(b) % FF_UNARY_COUNT), x);
    case 1: return ff_binary((ff_binary_op)(fuzz_u8(b) % FF_BINARY_COUNT), x, y);
    case 2: {
        ff_number num = fuzz_u8(b) & 1 ? ff_number_int((int8_t)fuzz_u8(b)) : ff_number_float((int8_t)fuzz_u8(b) / 4.0);
        return ff_binary_number((ff_binary_op)(fuzz_u8(b) % FF_BINARY_COUNT), x, num);
    }
    case 3: return ff_sum(x, nd ? 1 : 0, &axis, fuzz_u8(b) & 1);
    case 4: return ff_mean(x, 0, NULL, false);
    case 5: return ff_amax(x, nd ? 1 : 0, &axis, fuzz_u8(b) & 1);
    case 6: return ff_var(x, nd ? 1 : 0, &axis, fuzz_u8(b) % 2, false);
    case 7: return ff_matmul(x, y);
    case 8: return ff_softmax(x, nd ? axis : 0);
    case 9: {
        int perm[FF_MAX_DIMS];
        for (int d = 0; d < nd; d++) perm[d] = d;
        for (int d = nd - 1; d > 0; d--) {
            int k = fuzz_u8(b) % (d + 1), t = perm[d];
            perm[d] = perm[k], perm[k] = t;
        }
        return ff_permute(x, perm);
    }
    case 10: return ff_slice(x, axis, fuzz_range(b, -3, 3), fuzz_range(b, -3, 6), fuzz_range(b, 1, 3));
    case 11:
        for (int d = 0; d < nd; d++) shape[d] = ff_tensor_shape(x)[d] == 1 ? fuzz_range(b, 0, 4) : -1;
        return ff_expand(x, nd, shape);
    case 12: return ff_unsqueeze(x, fuzz_range(b, 0, nd));
    case 13: {
        int64_t numel = ff_tensor_numel(x);
        shape[0] = -1, shape[1] = fuzz_range(b, 1, 4);
        return numel % shape[1] == 0 ? ff_reshape(x, 2, shape) : ff_reshape(x, 1, &numel);
    }
    case 14: return ff_contiguous(x);
    case 15: return ff_astype(x, dtypes[fuzz_u8(b) % 6]);
    case 16: {
        ff_tensor *c = ff_gt(x, y); /* any dtype pair; where then mixes x and y */
        ff_tensor *r = c ? ff_where(c, x, y) : NULL;
        ff_tensor_release(c);
        return r;
    }
    case 17: return ff_clamp(x, fuzz_u8(b) & 1 ? y : NULL, fuzz_u8(b) & 1 ? pick(pool, n, b) : NULL);
    case 18: return fuzz_u8(b) & 1 ? ff_remainder(x, y) : ff_floor_divide(x, y);
    case 19: { /* x[index] with an index drawn in (and a little out of) range */
        int64_t len = fuzz_range(b, 0, 4), vals[4];
        int64_t size = nd ? ff_tensor_shape(x)[0] : 1;
        for (int k = 0; k < len; k++) vals[k] = fuzz_range(b, -3, 5) % (size + 1 + (fuzz_u8(b) == 7));
        ff_tensor *ix = ff_from_data_on(be, vals, 1, &len, FF_I64);
        ff_tensor *r = ix ? ff_index(x, 1, (const ff_tensor *[]){ix}) : NULL;
        ff_tensor_release(ix);
        return r;
    }
    case 20: { /* x[mask] = y (broadcast), or accumulate */
        ff_tensor *m = ff_gt(x, x), *r = NULL;
        ff_tensor *m2 = m ? ff_logical_not(m) : NULL; /* all true but NaN */
        if (m2) r = ff_index_put(x, 1, (const ff_tensor *[]){m2}, y, fuzz_u8(b) & 1);
        ff_tensor_release(m);
        ff_tensor_release(m2);
        return r;
    }
    case 21: return ff_concat(2, (ff_tensor *[]){x, y}, axis);
    case 22: return ff_norm(x, (double)fuzz_range(b, 0, 4) / 2, 0, NULL, false);
    default: return ff_masked_fill(x, y, pick(pool, n, b));
    }
}

static void run(const uint8_t *data, size_t size, ff_backend *be, trace *tr)
{
    fuzz_bytes b = {data, size, 0};
    ff_tensor *pool[POOL];
    int n = 0;
    memset(tr, 0, sizeof *tr);
    int ninit = fuzz_range(&b, 1, 3);
    for (int k = 0; k < ninit; k++) {
        int nd = fuzz_range(&b, 0, 3);
        int64_t shape[3];
        for (int d = 0; d < nd; d++) shape[d] = fuzz_range(&b, 0, 5);
        ff_dtype dt = dtypes[fuzz_u8(&b) % 6];
        ff_tensor *u = ff_rand_uniform(nd, shape, FF_F64, -4, 4, fuzz_u8(&b));
        ff_tensor *c = u ? ff_astype(u, dt) : NULL, *t = c ? ff_to(c, be) : NULL;
        ff_tensor_release(u);
        ff_tensor_release(c);
        if (!t) continue;
        if (ff_dtype_is_float(dt) && fuzz_u8(&b) & 1) ff_set_requires_grad(t, true);
        pool[n++] = t;
    }
    for (int s = 0; s < 16 && !fuzz_done(&b) && n < POOL; s++) {
        ff_tensor *r = step(pool, n, &b, be);
        int i = tr->n++;
        tr->ok[i] = r != NULL;
        if (r) {
            tr->ndim[i] = (int16_t)ff_tensor_ndim(r), tr->dtype[i] = (int16_t)ff_tensor_dtype(r);
            tr->numel[i] = ff_tensor_numel(r);
            pool[n++] = r;
        } else if (!ff_last_error()[0]) {
            __builtin_trap(); /* a failure must say why */
        }
    }
    for (int k = n - 1; k >= 0; k--) /* backward from the newest float result that tracks history */
        if (ff_requires_grad(pool[k])) {
            ff_tensor *s = ff_sum(pool[k], 0, NULL, false);
            if (s) (void)ff_backward(s, NULL, NULL);
            ff_tensor_release(s);
            break;
        }
    for (int k = 0; k < n; k++) ff_tensor_release(pool[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ff_backend *cpu, *blas;
    if (!cpu) cpu = ff_backend_load("cpu"), blas = ff_backend_load("cpu_blas");
    if (!cpu) {
        fprintf(stderr, "fuzz_ops: cannot load the cpu backend: %s\n", ff_last_error());
        __builtin_trap();
    }
    trace a, c;
    run(data, size, cpu, &a);
    if (!blas) return 0;
    run(data, size, blas, &c);
    if (a.n != c.n) __builtin_trap();
    for (int i = 0; i < a.n; i++)
        if (a.ok[i] != c.ok[i] || (a.ok[i] && (a.ndim[i] != c.ndim[i] || a.dtype[i] != c.dtype[i] ||
                                               a.numel[i] != c.numel[i])))
            __builtin_trap(); /* the backends disagree on what the program does */
    return 0;
}
