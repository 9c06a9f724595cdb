/* Loss modules: two-input modules over the loss ops (mean reduction). */
#include "nn_impl.h"

static ff_tensor *mse_fw(ff_module *m, const ff_tensor *pred, const ff_tensor *target, void *u)
{
    return ff_mse_loss(pred, target);
}

static ff_tensor *ce_fw(ff_module *m, const ff_tensor *logits, const ff_tensor *target, void *u)
{
    return ff_cross_entropy(logits, target);
}

ff_module *ff_mse_loss_module(void) { return ff_module_new2("MSELoss", mse_fw, NULL, NULL); }
ff_module *ff_cross_entropy_loss_module(void) { return ff_module_new2("CrossEntropyLoss", ce_fw, NULL, NULL); }
