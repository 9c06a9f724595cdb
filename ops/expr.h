/* A scratch arena for gradient formulas written as chains of ff ops: every
 * intermediate is kept until ff_expr_free, and once one step fails the rest are
 * skipped, so the first error message survives and nothing leaks.
 * A nested step, FF_EX(&e, ff_mul(a, FF_EX(&e, ff_op_cast(w, ...)))), cannot be
 * skipped: the outer op runs with the inner NULL and reports "NULL operand" over the
 * real cause. So the arena keeps the first failure's status and message and puts them
 * back whenever a later step fails.
 *
 *   ff_expr e = {0};
 *   ff_tensor *t = FF_EX(&e, ff_mul(g, y));
 *   ff_tensor *r = FF_EX(&e, ff_add(t, x));
 *   gi[0] = ff_expr_result(&e, r);   // new reference or NULL
 *   ff_expr_free(&e);
 */
#ifndef FF_OPS_EXPR_H
#define FF_OPS_EXPR_H

#include <stdio.h>

#include "ops_impl.h"

#define FF_EXPR_MAX 32

#define FF_EXPR_WHY_MAX 1024

typedef struct ff_expr {
    ff_tensor *tmp[FF_EXPR_MAX];
    int n;
    bool failed;
    ff_status st;                /* the first failure's status and message */
    char why[FF_EXPR_WHY_MAX];
} ff_expr;

static inline ff_tensor *ff_expr_keep(ff_expr *e, ff_tensor *t)
{
    if (!t || e->n == FF_EXPR_MAX || e->failed) {
        if (t) {
            ff_tensor_release(t);
            if (!e->failed)
                ff_error(FF_ERR_INVALID, "internal: gradient formula needs more than %d temporaries", FF_EXPR_MAX);
        }
        if (!e->failed) {
            e->st = ff_last_status() ? ff_last_status() : FF_ERR_INVALID;
            snprintf(e->why, sizeof e->why, "%s", ff_last_error());
        } else {
            ff_set_error(e->st, "%s", e->why); /* a nested step ran on a NULL: not the cause */
        }
        e->failed = true;
        return NULL;
    }
    e->tmp[e->n++] = t;
    return t;
}

/* Evaluates call only if nothing failed yet; the result is owned by the arena. */
#define FF_EX(e, call) ((e)->failed ? NULL : ff_expr_keep((e), (call)))

/* A new reference to t (an arena value), or NULL if any step failed. */
static inline ff_tensor *ff_expr_result(ff_expr *e, ff_tensor *t)
{
    return e->failed || !t ? NULL : ff_tensor_retain(t);
}

static inline void ff_expr_free(ff_expr *e)
{
    for (int i = 0; i < e->n; i++) ff_tensor_release(e->tmp[i]);
    e->n = 0;
}

#endif /* FF_OPS_EXPR_H */
