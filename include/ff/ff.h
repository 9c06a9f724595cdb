/*
 * FusionFlow: a tensor runtime in C11. Include this one header.
 *
 *   ff/tensor.h    errors, dtypes, tensors, factories, views
 *   ff/backend.h   backends and the plugin loader
 *   ff/ops.h       the op library
 *   ff/autograd.h  reverse-mode autograd, no_grad, gradcheck
 *   ff/nn.h        modules, losses, optimizers
 *   ff/amp.h       mixed precision: autocast, dynamic loss scaling
 *   ff/io.h        safetensors, .npy, DLPack
 *   ff/graph.h     capture a region of calls once, replay it (planned, fused)
 *   ff/debug.h     live-object counters for leak tests
 * Backend authors need only ff/backend_abi.h.
 */
#ifndef FF_FF_H
#define FF_FF_H

#define FF_VERSION_MAJOR 0
#define FF_VERSION_MINOR 1
#define FF_VERSION_PATCH 0
#define FF_VERSION_STRING "0.1.0"

#include "ff/backend_abi.h"
#include "ff/tensor.h"
#include "ff/backend.h"
#include "ff/ops.h"
#include "ff/pool.h"
#include "ff/unfold.h"
#include "ff/autograd.h"
#include "ff/nn.h"
#include "ff/amp.h"
#include "ff/io.h"
#include "ff/dist.h"
#include "ff/graph.h"
#include "ff/debug.h"
#include "ff/quant.h"

#endif /* FF_FF_H */
