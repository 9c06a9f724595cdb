/* The RFC's usage example in C: fit y = 3x + 2 + noise with Linear + MSELoss + SGD. */
#include <stdio.h>

#include "ff/ff.h"

int main(void)
{
    int64_t shape[2] = {256, 1};
    ff_tensor *x = ff_rand_uniform(2, shape, FF_F32, -1.0, 1.0, 1);   /* inputs in [-1, 1] */
    ff_tensor *noise = ff_rand_normal(2, shape, FF_F32, 0.0, 0.1, 2);
    ff_tensor *x3 = ff_mul_scalar(x, 3.0), *y0 = ff_add_scalar(x3, 2.0), *y = ff_add(y0, noise);
    ff_module *model = ff_linear(1, 1, true, 3), *mse = ff_mse_loss_module();
    ff_tensor *params[2];
    int np = ff_module_parameters(model, params, 2);
    ff_sgd_opts so = ff_sgd_defaults(0.1);
    so.momentum = 0.5;
    ff_optimizer *opt = np == 2 ? ff_sgd(params, np, &so) : NULL;
    int rc = opt && y && mse ? 0 : 1;
    for (int epoch = 0; epoch < 100 && !rc; epoch++) {
        ff_tensor *pred = ff_module_forward(model, x);
        ff_tensor *loss = pred ? ff_loss_forward(mse, pred, y) : NULL;
        double v = 0;
        rc = !loss || ff_optimizer_zero_grad(opt) || ff_backward(loss, NULL, NULL) || ff_optimizer_step(opt) ||
             ff_tensor_item(loss, &v);
        if (!rc && epoch % 10 == 0) printf("epoch %3d  loss %.5f\n", epoch, v);
        ff_tensor_release(pred);
        ff_tensor_release(loss);
    }
    double w = 0, b = 0;
    if (!rc) rc = ff_tensor_item(params[0], &w) || ff_tensor_item(params[1], &b);
    if (rc) fprintf(stderr, "regression: %s\n", ff_last_error());
    else printf("learned weight %.3f (true 3), bias %.3f (true 2)\n", w, b);
    ff_optimizer_release(opt);
    ff_module_release(model);
    ff_module_release(mse);
    ff_tensor_release(x), ff_tensor_release(noise), ff_tensor_release(x3), ff_tensor_release(y0), ff_tensor_release(y);
    ff_shutdown();
    return rc;
}
