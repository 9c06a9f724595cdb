#include "cf.h"
void cf_gen_fill_copy(void) {}
void cf_gen_reduce(void) {}
void cf_gen_matmul(void) {}
void cf_gen_index(void) {}
void cf_gen_random(void) {}
void cf_gen_softmax(void) {}
void cf_gen_special(void) {}
void cf_gen_ops(void) {}
void cf_gen_grad(void) {}
