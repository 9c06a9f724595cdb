/* The kernel observer's slot (ff_impl.h): one per thread, since a capture records what
 * its own thread runs. Set by whoever observes (graph/capture.c); the core only reads
 * it, through FF_OBSERVE. */
#include "ff_impl.h"

_Thread_local ff_kernel_observer *ff_kernel_observing;

ff_kernel_observer *ff_kernel_observer_set(ff_kernel_observer *obs)
{
    ff_kernel_observer *prev = ff_kernel_observing;
    ff_kernel_observing = obs;
    return prev;
}
