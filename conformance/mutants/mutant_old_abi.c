/* Not broken, only older: a plugin written against ABI 1's first release, before
 * FF_UNARY_BITWISE_NOT and FF_BINARY_BITWISE_AND/OR/XOR were appended. Its supports()
 * names the op codes it knows, so it declines the new ones, and its entries refuse an
 * op code beyond their own table with FF_ERR_INVALID, as such a plugin would. The
 * suite must report those cases as skipped (coverage gaps), never as failures, and
 * pass everything else (backend_abi.h, "Growing the op enums"). */
#include "mutant.h"

/* the enums as that plugin's header had them: *_COUNT was the first appended code */
#define OLD_UNARY_COUNT FF_UNARY_BITWISE_NOT
#define OLD_BINARY_COUNT FF_BINARY_BITWISE_AND

static int old_supports(void *ctx, ff_op_kind kind, int op, ff_dtype dtype)
{
    if (kind == FF_KIND_UNARY && (op < 0 || op >= OLD_UNARY_COUNT)) return 0;
    if (kind == FF_KIND_BINARY && (op < 0 || op >= OLD_BINARY_COUNT)) return 0;
    return mutant_base->supports(ctx, kind, op, dtype);
}

static ff_status old_unary(void *ctx, ff_unary_op op, const ff_view *dst, const ff_view *src)
{
    if ((int)op >= OLD_UNARY_COUNT) return FF_ERR_INVALID;
    return mutant_base->unary(ctx, op, dst, src);
}

static ff_status old_binary(void *ctx, ff_binary_op op, const ff_view *dst, const ff_view *a, const ff_view *b)
{
    if ((int)op >= OLD_BINARY_COUNT) return FF_ERR_INVALID;
    return mutant_base->binary(ctx, op, dst, a, b);
}

FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void);
FF_PLUGIN_EXPORT const ff_backend_vtable *ff_backend_entry(void)
{
    const ff_backend_vtable *vt = mutant_setup("mutant_old_abi", "an ABI 1 plugin older than the bitwise op codes");
    if (vt) {
        mutant_vt.supports = old_supports;
        mutant_vt.unary = old_unary;
        mutant_vt.binary = old_binary;
    }
    return vt;
}
