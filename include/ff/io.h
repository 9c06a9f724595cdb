#ifndef FF_IO_H
#define FF_IO_H
#include "ff/tensor.h"
/* (filled in by the io layer) */
#endif
