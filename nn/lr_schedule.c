/* Learning-rate schedules as pure functions of the epoch/step: the caller owns the
 * counter and calls ff_optimizer_set_lr, so there is no scheduler state to save. */
#include <math.h>

#include "nn_impl.h"

double ff_lr_step(double base_lr, int64_t epoch, int64_t step_size, double gamma)
{
    if (step_size <= 0 || epoch < 0) return base_lr;
    return base_lr * pow(gamma, (double)(epoch / step_size));
}

double ff_lr_cosine(double base_lr, int64_t t, int64_t t_max, double eta_min)
{
    if (t_max <= 0) return base_lr;
    if (t < 0) t = 0;
    if (t > t_max) t = t_max;
    const double pi = 3.14159265358979323846;
    return eta_min + (base_lr - eta_min) * (1.0 + cos(pi * (double)t / (double)t_max)) / 2.0;
}
