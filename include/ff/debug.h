/*
 * FusionFlow diagnostics: counters for leak tests and debugging. Not for control flow.
 */
#ifndef FF_DEBUG_H
#define FF_DEBUG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of tensor headers (tensors and views, including gradients and tensors held
 * by autograd graphs) currently alive in the process. A test records it, runs, drops
 * every reference and expects the same number back. */
long ff_debug_live_tensors(void);

#ifdef __cplusplus
}
#endif
#endif /* FF_DEBUG_H */
