/*
 * fill, copy (with dtype conversion) and where, with the reference's conversion rules
 * (blas_impl.h). Same-dtype work moves raw element bits (NaN payloads and -0.0
 * survive); contiguous runs use memset/memcpy or typed loops, strided runs per element
 * by element size.
 */
#include "blas_impl.h"

/* ---- fill ---------------------------------------------------------------------------- */
typedef struct fill_arg {
    unsigned char pat[8]; /* one element of dst's dtype */
    int64_t esize;
    int zero; /* every byte of pat is 0 */
} fill_arg;

BLAS_CLONES static void fill32(int64_t n, uint32_t *d, int64_t s, uint32_t v)
{
    if (s == 1)
        for (int64_t i = 0; i < n; i++) d[i] = v;
    else
        for (int64_t i = 0; i < n; i++) d[i * s] = v;
}

BLAS_CLONES static void fill64(int64_t n, uint64_t *d, int64_t s, uint64_t v)
{
    if (s == 1)
        for (int64_t i = 0; i < n; i++) d[i] = v;
    else
        for (int64_t i = 0; i < n; i++) d[i * s] = v;
}

/* n elements of esize bytes, s elements apart from d on, each the esize bytes at pat */
static void fill_elems(char *d, int64_t n, int64_t s, const unsigned char *pat, int64_t esize)
{
    if (esize == 4) {
        uint32_t v;
        memcpy(&v, pat, 4);
        fill32(n, (uint32_t *)d, s, v);
    } else if (esize == 8) {
        uint64_t v;
        memcpy(&v, pat, 8);
        fill64(n, (uint64_t *)d, s, v);
    } else if (esize == 1 && s == 1) {
        memset(d, pat[0], (size_t)n);
    } else {
        for (int64_t i = 0; i < n; i++) memcpy(d + i * s * esize, pat, (size_t)esize);
    }
}

static void seg_fill(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const fill_arg *a = varg;
    if (s[0] == 1 && a->zero) {
        memset(p[0], 0, (size_t)(n * a->esize));
        return;
    }
    fill_elems(p[0], n, s[0], a->pat, a->esize);
}

ff_status blas_fill(void *ctx, const ff_view *dst, ff_scalar value)
{
    ff_status st = blas_check_storage_view(ctx, "fill", "dst", dst);
    if (st) return st;
    fill_arg a = {{0}, (int64_t)ff_dtype_size(dst->dtype), 1};
    if (ff_dtype_is_float(dst->dtype)) /* F16/BF16 too: rounded once */ ffb_st_f64((char *)a.pat, dst->dtype, value.f);
    else ffb_st_i64((char *)a.pat, dst->dtype, value.i);
    for (int i = 0; i < 8; i++) a.zero &= a.pat[i] == 0;
    const ff_view *vs[] = {dst};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 1, vs);
    blas_walk_run(ctx, &w, BLAS_PAR_MIN * 4, seg_fill, &a);
    return FF_OK;
}

/* ---- copy ---------------------------------------------------------------------------- */
typedef struct copy_arg {
    ff_dtype dt, st;
    int64_t dsz, ssz;
} copy_arg;

BLAS_CLONES static void f32_to_f64(int64_t n, double *d, const float *x) { for (int64_t i = 0; i < n; i++) d[i] = x[i]; }
BLAS_CLONES static void f64_to_f32(int64_t n, float *d, const double *x) { for (int64_t i = 0; i < n; i++) d[i] = (float)x[i]; }
BLAS_CLONES static void i64_to_f32(int64_t n, float *d, const int64_t *x) { for (int64_t i = 0; i < n; i++) d[i] = (float)x[i]; }
BLAS_CLONES static void i32_to_f32(int64_t n, float *d, const int32_t *x) { for (int64_t i = 0; i < n; i++) d[i] = (float)x[i]; }
BLAS_CLONES static void b_to_f32(int64_t n, float *d, const uint8_t *x) { for (int64_t i = 0; i < n; i++) d[i] = x[i] != 0; }

static void seg_copy_same(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const copy_arg *a = varg;
    if (s[0] == 1 && s[1] == 1) {
        if (p[0] != p[1]) memcpy(p[0], p[1], (size_t)(n * a->dsz));
        return;
    }
    if (s[1] == 0) { /* one element repeated (expand().contiguous(), a sum's gradient): a fill */
        fill_elems(p[0], n, s[0], (const unsigned char *)p[1], a->dsz);
        return;
    }
    int64_t ds = s[0] * a->dsz, ss = s[1] * a->ssz;
    switch (a->dsz) {
    case 8: for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * ds, p[1] + i * ss, 8); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * ds, p[1] + i * ss, 4); break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(p[0] + i * ds, p[1] + i * ss, 2); break;
    default: for (int64_t i = 0; i < n; i++) p[0][i * ds] = p[1][i * ss]; break;
    }
}

static void seg_copy_conv(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    const copy_arg *a = varg;
    if (s[0] == 1 && s[1] == 1 && a->dt == FF_F32) {
        switch (a->st) {
        case FF_F64: f64_to_f32(n, (float *)p[0], (const double *)p[1]); return;
        case FF_I64: i64_to_f32(n, (float *)p[0], (const int64_t *)p[1]); return;
        case FF_I32: i32_to_f32(n, (float *)p[0], (const int32_t *)p[1]); return;
        case FF_BOOL: b_to_f32(n, (float *)p[0], (const uint8_t *)p[1]); return;
        default: break;
        }
    }
    if (s[0] == 1 && s[1] == 1 && blas_half_is_conversion(a->dt, a->st)) { /* vectorized, the same bits as below */
        if (a->dt == FF_F32) blas_half_to_f32(a->st, n, (float *)p[0], p[1]);
        else blas_f32_to_half(a->dt, n, p[0], (const float *)p[1]);
        return;
    }
    if (s[0] == 1 && s[1] == 1 && a->st == FF_F64 && ffb_is_half(a->dt)) {
        blas_f64_to_half(a->dt, n, p[0], (const double *)p[1]);
        return;
    }
    if (s[0] == 1 && s[1] == 1 && a->dt == FF_F64 && ffb_is_half(a->st)) {
        blas_half_to_f64(a->st, n, (double *)p[0], p[1]);
        return;
    }
    if (s[0] == 1 && s[1] == 1 && a->dt == FF_F64 && a->st == FF_F32) {
        f32_to_f64(n, (double *)p[0], (const float *)p[1]);
        return;
    }
    int64_t ds = s[0] * a->dsz, ss = s[1] * a->ssz;
    if (ff_dtype_is_float(a->st)) { /* F16/BF16 too: exact through double */
        for (int64_t i = 0; i < n; i++) ffb_st_f64(p[0] + i * ds, a->dt, ffb_ld_f64(p[1] + i * ss, a->st));
    } else {
        for (int64_t i = 0; i < n; i++) ffb_st_i64(p[0] + i * ds, a->dt, ffb_ld_i64(p[1] + i * ss, a->st));
    }
}

/* A 2-D copy whose two sides run in different directions (a transpose made contiguous,
 * or autocast's cast of W^T into a half dtype): 32 x 32 tiles, so both sides stay in
 * cache; rows of tiles go to threads. Within a tile, row i's columns [j0, j0 + n) move at
 * once: same-dtype elements directly, f32 <-> F16/BF16 gathered into a stack buffer,
 * converted by the vectorized conversions and scattered. */
#define TILE 32
typedef struct tiled {
    const blas_walk *w;
    ff_dtype dt, st;
    int64_t es; /* element size when dt == st */
} tiled;

/* f and h: TILE-element scratch for the conversions */
static void tile_row(const tiled *t, int64_t i, int64_t j0, int64_t n, float *f, uint16_t *h)
{
    const blas_walk *w = t->w;
    int64_t dc = w->strides[0][1], sc = w->strides[1][1];
    int64_t d0 = i * w->strides[0][0] + j0 * dc, s0 = i * w->strides[1][0] + j0 * sc;
    if (t->dt == t->st && t->es == 4) {
        uint32_t *d = (uint32_t *)w->base[0] + d0;
        const uint32_t *x = (const uint32_t *)w->base[1] + s0;
        for (int64_t j = 0; j < n; j++) d[j * dc] = x[j * sc];
    } else if (t->dt == t->st) {
        uint64_t *d = (uint64_t *)w->base[0] + d0;
        const uint64_t *x = (const uint64_t *)w->base[1] + s0;
        for (int64_t j = 0; j < n; j++) d[j * dc] = x[j * sc];
    } else if (t->st == FF_F32) { /* f32 -> half */
        uint16_t *d = (uint16_t *)w->base[0] + d0;
        const float *x = (const float *)w->base[1] + s0;
        for (int64_t j = 0; j < n; j++) f[j] = x[j * sc];
        blas_f32_to_half(t->dt, n, h, f);
        for (int64_t j = 0; j < n; j++) d[j * dc] = h[j];
    } else { /* half -> f32 */
        float *d = (float *)w->base[0] + d0;
        const uint16_t *x = (const uint16_t *)w->base[1] + s0;
        for (int64_t j = 0; j < n; j++) h[j] = x[j * sc];
        blas_half_to_f32(t->st, n, f, h);
        for (int64_t j = 0; j < n; j++) d[j * dc] = f[j];
    }
}

static void tiled_task(void *arg, int64_t b, int64_t e)
{
    const tiled *t = arg;
    int64_t R = t->w->shape[0], C = t->w->shape[1];
    float f[TILE];
    uint16_t h[TILE];
    for (int64_t i0 = b * TILE; i0 < e * TILE && i0 < R; i0 += TILE)
        for (int64_t j0 = 0; j0 < C; j0 += TILE) {
            int64_t i1 = i0 + TILE < R ? i0 + TILE : R, n = (j0 + TILE < C ? j0 + TILE : C) - j0;
            for (int64_t i = i0; i < i1; i++) tile_row(t, i, j0, n, f, h);
        }
}

ff_status blas_copy(void *ctx, const ff_view *dst, const ff_view *src)
{
    ff_status st;
    if ((st = blas_check_storage_view(ctx, "copy", "dst", dst)) || (st = blas_check_storage_view(ctx, "copy", "src", src)))
        return st;
    if (!blas_same_shape(dst, src)) return blas_shape_error(ctx, "copy", dst, src);
    copy_arg a = {dst->dtype, src->dtype, (int64_t)ff_dtype_size(dst->dtype), (int64_t)ff_dtype_size(src->dtype)};
    const ff_view *vs[] = {dst, src};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 2, vs);
    int tiles_pay = w.ndim == 2 && w.strides[0][1] != w.strides[1][1] && w.numel >= 4096;
    if (tiles_pay && ((dst->dtype == src->dtype && (a.dsz == 4 || a.dsz == 8)) ||
                      blas_half_is_conversion(dst->dtype, src->dtype))) {
        tiled t = {&w, dst->dtype, src->dtype, a.dsz};
        int64_t tiles = (w.shape[0] + TILE - 1) / TILE;
        blas_parallel_for(ctx, tiles, BLAS_PAR_MIN / (TILE * (w.shape[1] > 0 ? w.shape[1] : 1)) + 2, 1, tiled_task, &t);
        return FF_OK;
    }
    blas_walk_run(ctx, &w, BLAS_PAR_MIN * 2, dst->dtype == src->dtype ? seg_copy_same : seg_copy_conv, &a);
    return FF_OK;
}

/* ---- where --------------------------------------------------------------------------- */
/* Branch-free selects (a mask, not ?:): cond is data, often random (relu's backward:
 * where(x <= 0, 0, g)), and a mispredicted branch per element made that 2.7 ms on
 * [64, 16, 28, 28] against 0.1 ms for an add. One operand may be a broadcast scalar. */
#define SELECT(T, cv, av, bv) ((T)(((av) & ((T)0 - (T)((cv) != 0))) | ((bv) & ~((T)0 - (T)((cv) != 0)))))
#define WHERE_LOOP(T)                                                                                        \
    BLAS_CLONES static void where_##T(int64_t n, T *d, int64_t ds, const uint8_t *c, int64_t cs, const T *a, \
                                      int64_t as, const T *b, int64_t bs)                                   \
    {                                                                                                        \
        if (ds == 1 && cs == 1 && as == 1 && bs == 1) {                                                      \
            for (int64_t i = 0; i < n; i++) d[i] = SELECT(T, c[i], a[i], b[i]);                              \
        } else if (ds == 1 && cs == 1 && as == 0 && bs == 1) {                                               \
            const T av = a[0];                                                                               \
            for (int64_t i = 0; i < n; i++) d[i] = SELECT(T, c[i], av, b[i]);                                \
        } else if (ds == 1 && cs == 1 && as == 1 && bs == 0) {                                               \
            const T bv = b[0];                                                                               \
            for (int64_t i = 0; i < n; i++) d[i] = SELECT(T, c[i], a[i], bv);                                \
        } else {                                                                                             \
            for (int64_t i = 0; i < n; i++) d[i * ds] = SELECT(T, c[i * cs], a[i * as], b[i * bs]);          \
        }                                                                                                    \
    }
WHERE_LOOP(uint8_t)
WHERE_LOOP(uint16_t)
WHERE_LOOP(uint32_t)
WHERE_LOOP(uint64_t)

static void seg_where(void *varg, int64_t n, char *const *p, const int64_t *s)
{
    int64_t esz = *(const int64_t *)varg;
    const uint8_t *c = (const uint8_t *)p[1];
    if (esz == 8) where_uint64_t(n, (uint64_t *)p[0], s[0], c, s[1], (const uint64_t *)p[2], s[2], (const uint64_t *)p[3], s[3]);
    else if (esz == 4) where_uint32_t(n, (uint32_t *)p[0], s[0], c, s[1], (const uint32_t *)p[2], s[2], (const uint32_t *)p[3], s[3]);
    else if (esz == 2) where_uint16_t(n, (uint16_t *)p[0], s[0], c, s[1], (const uint16_t *)p[2], s[2], (const uint16_t *)p[3], s[3]);
    else where_uint8_t(n, (uint8_t *)p[0], s[0], c, s[1], (const uint8_t *)p[2], s[2], (const uint8_t *)p[3], s[3]);
}

ff_status blas_where(void *ctx, const ff_view *dst, const ff_view *cond, const ff_view *a, const ff_view *b)
{
    ff_status st;
    /* a select moves elements: F16/BF16 are two-byte ones */
    if ((st = blas_check_storage_view(ctx, "where", "dst", dst)) || (st = blas_check_view(ctx, "where", "cond", cond)) ||
        (st = blas_check_storage_view(ctx, "where", "a", a)) || (st = blas_check_storage_view(ctx, "where", "b", b)))
        return st;
    if (cond->dtype != FF_BOOL)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas where: cond must be bool, got %s", blas_dtype_name(cond->dtype));
    if (a->dtype != dst->dtype || b->dtype != dst->dtype)
        return blas_error(ctx, FF_ERR_INVALID, "cpu_blas where: a (%s) and b (%s) must have dst's dtype %s",
                          blas_dtype_name(a->dtype), blas_dtype_name(b->dtype), blas_dtype_name(dst->dtype));
    if (!blas_same_shape(dst, cond)) return blas_shape_error(ctx, "where", dst, cond);
    if (!blas_same_shape(dst, a)) return blas_shape_error(ctx, "where", dst, a);
    if (!blas_same_shape(dst, b)) return blas_shape_error(ctx, "where", dst, b);
    int64_t esz = (int64_t)ff_dtype_size(dst->dtype);
    const ff_view *vs[] = {dst, cond, a, b};
    blas_walk w;
    blas_walk_init(&w, dst->ndim, dst->shape, 4, vs);
    blas_walk_run(ctx, &w, BLAS_PAR_MIN, seg_where, &esz);
    return FF_OK;
}
