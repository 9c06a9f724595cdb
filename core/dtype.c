/* dtype names and the promotion lattice (docs/semantics.md writes it down). */
#include <math.h>
#include <string.h>

#include "ff_impl.h"

static const char *const dtype_names[FF_DTYPE_COUNT] = {
    [FF_F32] = "f32", [FF_F64] = "f64", [FF_I32] = "i32",  [FF_I64] = "i64",
    [FF_U8] = "u8",   [FF_BOOL] = "bool", [FF_F16] = "f16", [FF_BF16] = "bf16",
};

const char *ff_dtype_name(ff_dtype t)
{
    return (unsigned)t < FF_DTYPE_COUNT ? dtype_names[t] : "invalid";
}

ff_status ff_dtype_from_name(const char *name, ff_dtype *out)
{
    for (int i = 0; name && i < FF_DTYPE_COUNT; i++)
        if (strcmp(name, dtype_names[i]) == 0) {
            *out = (ff_dtype)i;
            return FF_OK;
        }
    return ff_error(FF_ERR_INVALID, "ff_dtype_from_name: unknown dtype '%s' (expected f32, f64, i32, i64, u8, bool)",
                    name ? name : "(null)");
}

/* Category rank: bool < integer < float. Within a category the wider type wins;
 * u8 with a signed int gives the signed one (i32 or i64), as PyTorch; u8 + i8 would
 * need i16, which we do not have. */
static int category(ff_dtype t)
{
    if (t == FF_BOOL) return 0;
    if (t == FF_U8 || t == FF_I32 || t == FF_I64) return 1;
    return 2;
}

static int width_rank(ff_dtype t)
{
    switch (t) {
    case FF_BOOL: return 0;
    case FF_U8: return 1;
    case FF_I32: return 2;
    case FF_I64: return 3;
    case FF_F16: case FF_BF16: return 1;
    case FF_F32: return 2;
    case FF_F64: return 3;
    default: return 0;
    }
}

ff_dtype ff_dtype_promote(ff_dtype a, ff_dtype b)
{
    if (a == b) return a;
    int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    if ((a == FF_F16 && b == FF_BF16) || (a == FF_BF16 && b == FF_F16)) return FF_F32;
    return width_rank(a) >= width_rank(b) ? a : b;
}

ff_dtype ff_dtype_promote_scalar(ff_dtype t, double s)
{
    /* A Python-style scalar only matters if it is of a higher category than t. */
    bool s_is_int = isfinite(s) && floor(s) == s;
    if (ff_dtype_is_float(t)) return t;
    if (!s_is_int) return FF_F32;
    if (t == FF_BOOL) return FF_I64; /* bool + 2 -> integer, as PyTorch (int64) */
    return t;
}

ff_dtype ff_dtype_to_float(ff_dtype t)
{
    return ff_dtype_is_float(t) ? t : FF_F32;
}
