/* The emulated stream capture (cuda_emu_graph.c), for the emulated runtime, libraries and
 * kernel launches: while cuda_emu_capturing(), queued work is handed to
 * cuda_emu_capture_add (run(arg) at each graph launch, drop(arg) when the graph goes)
 * instead of being done; work that cannot be recorded calls cuda_emu_capture_refuse,
 * which invalidates the capture, and fails. */
#ifndef FF_CUDA_EMU_GRAPH_H
#define FF_CUDA_EMU_GRAPH_H

#ifdef __cplusplus
extern "C" {
#endif

int cuda_emu_capturing(void);
void cuda_emu_capture_add(void (*run)(void *), void (*drop)(void *), void *arg);
void cuda_emu_capture_refuse(void);
/* run(arg) now, or (while capturing) recorded with a copy of arg's size bytes; 0 when that
 * copy cannot be made (out of host memory). */
int cuda_emu_run_or_record(void (*run)(void *), const void *arg, size_t size);
extern int cuda_emu_capture_calls; /* closures recorded, over all captures (for tests) */

/* For an emulated library's work that it does not record: during a capture it refuses
 * (invalidating the capture) and returns err. */
#define CUDA_EMU_NOT_IN_CAPTURE(err)   \
    do {                               \
        if (cuda_emu_capturing()) {    \
            cuda_emu_capture_refuse(); \
            return (err);              \
        }                              \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif /* FF_CUDA_EMU_GRAPH_H */
