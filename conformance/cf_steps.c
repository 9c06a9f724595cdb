/* Rules steps (backend_abi.h, "Rules steps"): a plugin is judged by the rules of the
 * step it was built against. Each rule a step made stricter is listed here with the
 * cases it loosens for plugins at an older step; the reference (today's step) is
 * always held to every rule. */
#include "cf.h"

/* Step 5: relu(-0) = -0; maximum/minimum of -0 and +0 give +0 / -0; MAX/MIN reductions
 * over tied zeros give the first. Before it, any zero of either sign passed there. */
static bool step5_zero_rule(const cf_case *cs)
{
    switch (cs->kind) {
    case FF_KIND_UNARY: return cs->opcode == FF_UNARY_RELU;
    case FF_KIND_BINARY: return cs->opcode == FF_BINARY_MAXIMUM || cs->opcode == FF_BINARY_MINIMUM;
    case FF_KIND_REDUCE: return cs->opcode == FF_REDUCE_MAX || cs->opcode == FF_REDUCE_MIN;
    default: return false;
    }
}

bool cf_step_zero_either(const cf_ctx *ctx, const cf_case *cs)
{
    int step = ctx->step > 0 ? ctx->step : ctx->t ? ff_backend_abi_step(ctx->t) : FF_ABI_STEP;
    return step < 5 && step5_zero_rule(cs);
}
