/* Pieces the family files share (the special-values and op-level families reuse the
 * closed forms of the vtable families). */
#ifndef FF_CONFORMANCE_CF_FAMILIES_H
#define FF_CONFORMANCE_CF_FAMILIES_H

#include "cf.h"

cf_tol_class cf_unary_tol(int op);
cf_tol_class cf_binary_tol(int op);
void *cf_unary_expect(const cf_call *c, const void *user);
void *cf_binary_expect(const cf_call *c, const void *user);
void *cf_fill_expect(const cf_call *c, const void *user);
void *cf_copy_expect(const cf_call *c, const void *user);
void *cf_reduce_expect(const cf_call *c, const void *user);
void *cf_softmax_expect(const cf_call *c, const void *user);
/* Builds and checks one reduction of src (shape, layout, domain) over mask. */
cf_result cf_reduce_run(cf_ctx *ctx, const cf_case *cs, int op, int ndim, const int64_t *shape, uint32_t mask,
                        cf_layout_kind lsrc, cf_layout_kind ldst, cf_domain dom, cf_report *rep);

#endif /* FF_CONFORMANCE_CF_FAMILIES_H */
