/* dtype names and the promotion lattice (docs/semantics.md writes it down). */
#include <math.h>
#include <string.h>

#include "ff_impl.h"

static const char *const dtype_names[FF_DTYPE_COUNT] = {
    [FF_F32] = "f32", [FF_F64] = "f64", [FF_I32] = "i32",  [FF_I64] = "i64",
    [FF_U8] = "u8",   [FF_BOOL] = "bool", [FF_F16] = "f16", [FF_BF16] = "bf16",
    [FF_I8] = "i8",   [FF_I16] = "i16",  [FF_C64] = "c64", [FF_C128] = "c128",
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
    return ff_error(FF_ERR_INVALID, "ff_dtype_from_name: unknown dtype '%s' (expected f32, f64, f16, bf16, i8, i16, i32, i64, u8, bool, c64, c128)",
                    name ? name : "(null)");
}

/* Category rank: bool < integer < float < complex. Within a category the wider type wins
 * (for complex: the wider of the two parts, so c64 + f64 is c128, as PyTorch);
 * u8 with a signed int gives the signed one of at least 16 bits (u8 + i8 is i16), as
 * PyTorch. */
static int category(ff_dtype t)
{
    if (t == FF_BOOL) return 0;
    if (t == FF_U8 || t == FF_I8 || t == FF_I16 || t == FF_I32 || t == FF_I64) return 1;
    if (ff_dtype_is_complex(t)) return 3;
    return 2;
}

static int width_rank(ff_dtype t)
{
    switch (t) {
    case FF_BOOL: return 0;
    case FF_U8: case FF_I8: return 1;
    case FF_I16: return 2;
    case FF_I32: return 3;
    case FF_I64: return 4;
    case FF_F16: case FF_BF16: return 1;
    case FF_F32: return 2;
    case FF_F64: return 3;
    default: return 0;
    }
}

ff_dtype ff_dtype_promote(ff_dtype a, ff_dtype b)
{
    if (a == b) return a;
    if (ff_dtype_is_complex(a) || ff_dtype_is_complex(b)) /* complex of the wider real part */
        return ff_dtype_real_of(a) == FF_F64 || ff_dtype_real_of(b) == FF_F64 ? FF_C128 : FF_C64;
    int ca = category(a), cb = category(b);
    if (ca != cb) return ca > cb ? a : b;
    if ((a == FF_F16 && b == FF_BF16) || (a == FF_BF16 && b == FF_F16)) return FF_F32;
    if ((a == FF_U8 && b == FF_I8) || (a == FF_I8 && b == FF_U8)) return FF_I16; /* holds both ranges */
    return width_rank(a) >= width_rank(b) ? a : b;
}

/* A number counts only when its kind is of a higher category than t (see tensor.h). */
ff_dtype ff_dtype_promote_number(ff_dtype t, ff_number s)
{
    int cs = s.kind == FF_NUMBER_FLOAT ? 2 : s.kind == FF_NUMBER_INT ? 1 : 0;
    if (cs <= category(t)) return t;
    return cs == 2 ? FF_F32 : FF_I64; /* the default dtype of the number's kind */
}

ff_dtype ff_result_type_n(int n, const ff_tensor *const *ts)
{
    bool have_dim = false, have_zero = false;
    ff_dtype dim = FF_BOOL, zero = FF_BOOL;
    for (int k = 0; k < n; k++) {
        if (ts[k]->layout.ndim > 0) {
            dim = have_dim ? ff_dtype_promote(dim, ts[k]->dtype) : ts[k]->dtype;
            have_dim = true;
        } else {
            zero = have_zero ? ff_dtype_promote(zero, ts[k]->dtype) : ts[k]->dtype;
            have_zero = true;
        }
    }
    if (!have_dim) return zero;
    if (!have_zero) return dim;
    if (category(zero) <= category(dim)) return dim;
    /* a 0-d complex over dimensioned floats: complex of their width (f64[3] * 1j -> c128) */
    if (ff_dtype_is_complex(zero) && category(dim) == 2) return ff_dtype_complex_of(dim);
    return zero;
}

ff_dtype ff_result_type(const ff_tensor *a, const ff_tensor *b)
{
    if (a->layout.ndim > 0 && b->layout.ndim > 0) return ff_dtype_promote(a->dtype, b->dtype); /* the common case */
    const ff_tensor *ts[2] = {a, b};
    return ff_result_type_n(2, ts);
}

ff_dtype ff_dtype_to_float(ff_dtype t)
{
    return ff_dtype_is_float(t) || ff_dtype_is_complex(t) ? t : FF_F32;
}

ff_dtype ff_dtype_real_of(ff_dtype t)
{
    return t == FF_C64 ? FF_F32 : t == FF_C128 ? FF_F64 : t;
}

ff_dtype ff_dtype_complex_of(ff_dtype t)
{
    return t == FF_F64 || t == FF_C128 ? FF_C128 : FF_C64;
}
