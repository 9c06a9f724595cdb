#ifndef FF_NN_H
#define FF_NN_H
#include "ff/tensor.h"
/* (filled in by the nn layer) */
#endif
