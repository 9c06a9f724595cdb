/* Builds against an installed FusionFlow; prints a small matrix product. */
#include <stdio.h>

#include <ff/ff.h>

int main(void)
{
    float a[] = {1, 2, 3, 4, 5, 6};
    ff_tensor *x = ff_from_data(a, 2, (int64_t[]){2, 3}, FF_F32);
    ff_tensor *xt = x ? ff_mT(x) : NULL;
    ff_tensor *p = xt ? ff_matmul(x, xt) : NULL; /* [[14, 32], [32, 77]] */
    float out[4];
    if (!p || ff_tensor_to_host(p, out, sizeof out)) {
        fprintf(stderr, "consumer: %s\n", ff_last_error());
        return 1;
    }
    printf("consumer: backend %s, x @ x^T = [[%g, %g], [%g, %g]]\n", ff_backend_name(ff_tensor_backend(p)), out[0],
           out[1], out[2], out[3]);
    ff_tensor_release(p);
    ff_tensor_release(xt);
    ff_tensor_release(x);
    ff_shutdown();
    return out[0] == 14 && out[1] == 32 && out[3] == 77 ? 0 : 1;
}
