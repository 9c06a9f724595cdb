/*
 * Host emulation of whole thread blocks, for the kernels whose threads cooperate (warp
 * fragments, shuffles, ldmatrix, mma.sync): tests/cuda_emu only, included by cuda_emu.h.
 * CUDA_EMU_BLOCKS(grid, block, smem, call) runs `call` as a real grid: block after block,
 * each block's threads as fibers (tests/cuda_emu/cuda_emu_fiber.c) on the calling thread, with threadIdx,
 * blockIdx, blockDim and gridDim set for the running one. A fiber runs until it reaches a
 * barrier (__syncthreads, __syncwarp, or a warp exchange below), and a barrier opens when
 * every live thread of its block (or lane of its warp) has reached it; threads that have
 * returned no longer count, as on the hardware. A block whose threads all wait at barriers
 * that cannot open (divergent barriers: a kernel bug) stops the process with a message.
 *
 * Warp exchanges (shuffles, ldmatrix, mma): each lane puts its value into its slot of the
 * warp's exchange area, the warp meets, and each lane then reads the slots it needs. The
 * areas alternate between two per warp: a lane can be at most one exchange ahead of the
 * slowest (the next one's barrier waits for it), so one barrier per exchange suffices.
 *
 * Shared memory is a host buffer filled with 0xFF bytes (NaN as every float format) before
 * each block, so a read of what no thread wrote shows up in the results; kernels that
 * report their shared accesses (CUDA_SMEM_READ / CUDA_SMEM_WRITTEN, ldmatrix, cp.async)
 * are racechecked byte by byte (cuda_emu_smem_access). The scheduler
 * always resumes the lowest-numbered thread that can run (the highest in odd blocks): one
 * warp runs as far ahead of the others as the barriers let it, so a barrier missing
 * between a write and another warp's read shows up as a wrong result.
 * One-thread launches (CUDA_LAUNCH) see no block: their barriers are no-ops and their
 * exchanges return the lane's own value, as for a warp of one.
 */
#ifndef FF_CUDA_EMU_BLOCKS_H
#define FF_CUDA_EMU_BLOCKS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <functional>

#include "cuda_emu_graph.h" /* tests/cuda_emu: stream capture */
#include "ff_backend_scalar.h"

typedef struct cuda_emu_dim { unsigned x, y, z; } cuda_emu_dim;
inline thread_local cuda_emu_dim blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};

#define CUDA_EMU_XCH 64            /* bytes a lane puts into one warp exchange */
#define CUDA_EMU_STACK (128 * 1024) /* a fiber's stack: the kernels keep register arrays on it */

/* tests/cuda_emu/cuda_emu_fiber.c: a fiber running fn on the stack, and a switch that
 * parks the running context's handle in *from and resumes `to` */
extern "C" void cuda_emu_fiber_make(void **sp, char *stack, size_t size, void (*fn)(void));
extern "C" void cuda_emu_fiber_switch(void **from, void *to);

enum { CUDA_EMU_RUN, CUDA_EMU_AT_BLOCK, CUDA_EMU_AT_WARP, CUDA_EMU_DONE };

/* A shared-memory byte's last write and last read: the thread, and the block's and that
 * thread's warp's barrier counts at the time (thread -1: none yet). */
typedef struct cuda_emu_access {
    int tid;
    unsigned be, we;
} cuda_emu_access;
typedef struct cuda_emu_shadow {
    cuda_emu_access w, r;
    int pend; /* a cp.async's thread while the copy into this byte has not been waited for, else -1 */
} cuda_emu_shadow;

/* A cp.async not yet waited for: the thread, its group, the 16 bytes. */
typedef struct cuda_emu_copy {
    int tid;
    unsigned group;
    const char *dst;
} cuda_emu_copy;

typedef struct cuda_emu_block {
    int n, live, at_block, cur;
    int *state;
    unsigned *phase;                    /* each thread's count of warp exchanges */
    int *warp_live, *warp_at;
    unsigned char (*xch)[2][32][CUDA_EMU_XCH]; /* [warp][phase][lane] */
    void *main, **fib; /* the scheduler's and the threads' fiber handles */
    char *stacks;
    void *smem;
    size_t smem_bytes;
    cuda_emu_shadow *shadow;            /* per byte of smem: its last write and read */
    unsigned block_epoch, *warp_epoch;  /* barriers opened so far: the block's, each warp's */
    unsigned *cp_group;                 /* each thread's cp.async group being filled */
    cuda_emu_copy *copies;              /* the copies in flight */
    int n_copies, cap_copies;
    const std::function<void()> *call;
} cuda_emu_block;

inline thread_local cuda_emu_block *cuda_emu_blk;

[[noreturn]] inline void cuda_emu_die(const char *why)
{
    fprintf(stderr, "cuda_emu: %s\n", why);
    abort();
}

/* The running thread waits; the scheduler runs the others. */
inline void cuda_emu_yield(cuda_emu_block *b)
{
    cuda_emu_fiber_switch(&b->fib[b->cur], b->main);
}

inline void cuda_emu_open(cuda_emu_block *b)
{
    if (b->at_block > 0 && b->at_block == b->live) {
        for (int i = 0; i < b->n; i++)
            if (b->state[i] == CUDA_EMU_AT_BLOCK) b->state[i] = CUDA_EMU_RUN;
        b->at_block = 0;
        b->block_epoch++;
    }
    for (int w = 0; w < (b->n + 31) / 32; w++) {
        if (b->warp_at[w] == 0 || b->warp_at[w] != b->warp_live[w]) continue;
        for (int i = 32 * w; i < b->n && i < 32 * w + 32; i++)
            if (b->state[i] == CUDA_EMU_AT_WARP) b->state[i] = CUDA_EMU_RUN;
        b->warp_at[w] = 0;
        b->warp_epoch[w]++;
    }
}

inline void __syncthreads()
{
    cuda_emu_block *b = cuda_emu_blk;
    if (!b) return;
    b->state[b->cur] = CUDA_EMU_AT_BLOCK;
    b->at_block++;
    cuda_emu_open(b);
    if (b->state[b->cur] != CUDA_EMU_RUN) cuda_emu_yield(b);
}

inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    cuda_emu_block *b = cuda_emu_blk;
    if (mask != 0xffffffffu) cuda_emu_die("__syncwarp with a partial mask is not emulated");
    if (!b) return;
    b->state[b->cur] = CUDA_EMU_AT_WARP;
    b->warp_at[b->cur / 32]++;
    cuda_emu_open(b);
    if (b->state[b->cur] != CUDA_EMU_RUN) cuda_emu_yield(b);
}

/* The warp's 32 slots after every lane put its `n` bytes into its own. */
inline const unsigned char (*cuda_emu_warp_share(const void *mine, size_t n))[CUDA_EMU_XCH]
{
    static thread_local unsigned char one[32][CUDA_EMU_XCH];
    cuda_emu_block *b = cuda_emu_blk;
    if (!b) { /* a warp of one: every lane reads the caller's value */
        for (int l = 0; l < 32; l++) memcpy(one[l], mine, n);
        return one;
    }
    int i = b->cur;
    unsigned char (*area)[CUDA_EMU_XCH] = b->xch[i / 32][b->phase[i]++ & 1];
    memcpy(area[i % 32], mine, n);
    __syncwarp();
    return area;
}

inline int cuda_emu_lane() { return cuda_emu_blk ? cuda_emu_blk->cur % 32 : 0; }

template <typename T> inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    if (mask != 0xffffffffu || width != 32) cuda_emu_die("shuffles are emulated for full warps only");
    T r;
    memcpy(&r, cuda_emu_warp_share(&v, sizeof v)[(cuda_emu_lane() ^ lane_mask) & 31], sizeof r);
    return r;
}

template <typename T> inline T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    if (mask != 0xffffffffu || width != 32) cuda_emu_die("shuffles are emulated for full warps only");
    T r;
    memcpy(&r, cuda_emu_warp_share(&v, sizeof v)[src & 31], sizeof r);
    return r;
}

/* The racecheck of the emulation: the running thread reads or writes n bytes of shared
 * memory at p. Two accesses to a byte by different threads, one of them a write, need a
 * barrier between them (__syncthreads, or a warp barrier for two lanes of one warp);
 * without one the process stops and names both (compute-sanitizer's racecheck does this
 * on a GPU). Outside a block launch, or outside the block's shared memory: nothing. */
inline bool cuda_emu_ordered(const cuda_emu_block *b, const cuda_emu_access *a, int tid)
{
    return a->tid < 0 || a->tid == tid || a->be != b->block_epoch ||
           (a->tid / 32 == tid / 32 && a->we != b->warp_epoch[tid / 32]);
}

inline void cuda_emu_smem_access(const void *p, size_t n, bool write)
{
    cuda_emu_block *b = cuda_emu_blk;
    if (!b || !b->shadow) return;
    const char *base = (const char *)b->smem;
    if ((const char *)p < base || (const char *)p + n > base + b->smem_bytes) return;
    int tid = b->cur;
    cuda_emu_access now = {tid, b->block_epoch, b->warp_epoch[tid / 32]};
    for (size_t k = 0; k < n; k++) {
        size_t at = (size_t)((const char *)p - base) + k;
        cuda_emu_shadow *x = &b->shadow[at];
        const cuda_emu_access *other = !cuda_emu_ordered(b, &x->w, tid) ? &x->w
                                       : write && !cuda_emu_ordered(b, &x->r, tid) ? &x->r
                                                                                    : NULL;
        if (other) {
            fprintf(stderr, "cuda_emu: shared memory race at byte %zu of block (%u, %u, %u): thread %d %s it, thread %d "
                            "%s it before with no barrier between\n", at, blockIdx.x, blockIdx.y, blockIdx.z, tid,
                    write ? "writes" : "reads", other->tid, other == &x->w ? "wrote" : "read");
            abort();
        }
        if (x->pend >= 0) {
            fprintf(stderr, "cuda_emu: shared memory race at byte %zu of block (%u, %u, %u): thread %d %s it while "
                            "thread %d's cp.async into it has not been waited for (cp.async.wait_group)\n", at,
                    blockIdx.x, blockIdx.y, blockIdx.z, tid, write ? "writes" : "reads", x->pend);
            abort();
        }
        if (write) x->w = now;
        else x->r = now;
    }
}

/* cp.async of 16 bytes into shared memory: done at once here, but its bytes may not be
 * read (or written) by anyone until the issuing thread's cp.async.wait_group covers its
 * group, as on the device; commit closes the thread's group, wait(n) completes all but its
 * n most recent committed groups. */
inline void cuda_emu_cp_async(void *dst, const void *src)
{
    cuda_emu_block *b = cuda_emu_blk;
    cuda_emu_smem_access(dst, 16, true);
    memcpy(dst, src, 16);
    if (!b || !b->shadow) return;
    const char *base = (const char *)b->smem;
    if ((const char *)dst < base || (const char *)dst + 16 > base + b->smem_bytes) return;
    if (b->n_copies == b->cap_copies) {
        int cap = b->cap_copies ? 2 * b->cap_copies : 256;
        cuda_emu_copy *c = (cuda_emu_copy *)realloc(b->copies, sizeof *c * (size_t)cap);
        if (!c) cuda_emu_die("out of host memory tracking cp.async copies");
        b->copies = c, b->cap_copies = cap;
    }
    b->copies[b->n_copies++] = cuda_emu_copy{b->cur, b->cp_group[b->cur], (const char *)dst};
    for (int k = 0; k < 16; k++) b->shadow[(const char *)dst - base + k].pend = b->cur;
}

inline void cuda_emu_cp_commit()
{
    if (cuda_emu_blk) cuda_emu_blk->cp_group[cuda_emu_blk->cur]++;
}

inline void cuda_emu_cp_wait(int n)
{
    cuda_emu_block *b = cuda_emu_blk;
    if (!b || !b->shadow) return;
    int tid = b->cur;
    unsigned done = b->cp_group[tid] >= (unsigned)n ? b->cp_group[tid] - (unsigned)n : 0; /* groups below this */
    const char *base = (const char *)b->smem;
    for (int i = 0; i < b->n_copies;) {
        cuda_emu_copy *c = &b->copies[i];
        if (c->tid == tid && c->group < done) {
            for (int k = 0; k < 16; k++) b->shadow[c->dst - base + k].pend = -1;
            b->copies[i] = b->copies[--b->n_copies];
        } else {
            i++;
        }
    }
}

/* ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lane l names row l % 8 of matrix
 * l / 8 (16 bytes, 8 halves); register j of lane l gets matrix j's halves (l / 4, 2 (l % 4))
 * and (l / 4, 2 (l % 4) + 1), or with trans (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4);
 * the first in the low 16 bits. */
inline void cuda_emu_ldmatrix_x4(uint32_t r[4], const void *row, bool trans)
{
    cuda_emu_smem_access(row, 16, false); /* this lane's row: the warp reads it at the exchange */
    const unsigned char (*x)[CUDA_EMU_XCH] = cuda_emu_warp_share(&row, sizeof row);
    int l = cuda_emu_lane(), g = l / 4, t = l % 4;
    for (int j = 0; j < 4; j++) {
        uint16_t h[2];
        for (int e = 0; e < 2; e++) {
            const uint16_t *p;
            memcpy(&p, x[trans ? j * 8 + 2 * t + e : j * 8 + g], sizeof p);
            h[e] = trans ? p[g] : p[2 * t + e];
        }
        r[j] = (uint32_t)h[0] | (uint32_t)h[1] << 16;
    }
}

inline float cuda_emu_half(uint32_t reg, int hi, bool bf16)
{
    uint16_t h = (uint16_t)(hi ? reg >> 16 : reg & 0xFFFFu);
    return bf16 ? ffb_bf16_to_f32(h) : ffb_f16_to_f32(h);
}

/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: d += A B for the warp's fragments
 * (PTX ISA, "Matrix Fragments for mma.m16n8k16"), g = lane / 4, t = lane % 4:
 *   A 16 x 16: a[0] (g, 2t..2t+1), a[1] (g+8, 2t..), a[2] (g, 2t+8..), a[3] (g+8, 2t+8..)
 *   B 16 x 8:  b[0] (k 2t..2t+1, n g), b[1] (k 2t+8.., n g)
 *   C/D 16 x 8: d[0..1] (g, 2t..2t+1), d[2..3] (g+8, 2t..2t+1)
 * The products are exact in f32; they are summed in k order, then added to d. */
inline void cuda_emu_mma_16816(float d[4], const uint32_t a[4], const uint32_t b2[2], bool bf16)
{
    uint32_t mine[6] = {a[0], a[1], a[2], a[3], b2[0], b2[1]};
    const unsigned char (*x)[CUDA_EMU_XCH] = cuda_emu_warp_share(mine, sizeof mine);
    int l = cuda_emu_lane(), g = l / 4, t = l % 4;
    float ar[2][16], bc[2][16]; /* this lane's rows g, g + 8 of A and columns 2t, 2t + 1 of B */
    for (int k = 0; k < 16; k++) {
        int src = (k % 8) / 2, kb = k / 8;
        for (int e = 0; e < 2; e++) {
            uint32_t v;
            memcpy(&v, x[g * 4 + src] + 4 * (e + 2 * kb), 4);
            ar[e][k] = cuda_emu_half(v, k % 2, bf16);
            memcpy(&v, x[(2 * t + e) * 4 + src] + 4 * (4 + kb), 4);
            bc[e][k] = cuda_emu_half(v, k % 2, bf16);
        }
    }
    for (int e = 0; e < 4; e++) {
        float acc = 0.f;
        for (int k = 0; k < 16; k++) acc += ar[e / 2][k] * bc[e % 2][k];
        d[e] += acc;
    }
}

/* mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: d += A B, g = lane / 4, t = lane % 4:
 *   A 16 x 8: a[0] (g, t), a[1] (g+8, t), a[2] (g, t+4), a[3] (g+8, t+4)
 *   B 8 x 8:  b[0] (k t, n g), b[1] (k t+4, n g);  C/D as for m16n8k16.
 * The tensor cores read 19 bits of each f32 (sign, exponent, 10 fraction bits): the rest
 * is dropped here, so an operand that was never rounded to TF32 loses precision as it
 * would on the device. Products of TF32s are exact in f32; summed in k order, added to d. */
inline void cuda_emu_mma_1688_tf32(float d[4], const uint32_t a[4], const uint32_t b2[2])
{
    uint32_t mine[6] = {a[0], a[1], a[2], a[3], b2[0], b2[1]};
    const unsigned char (*x)[CUDA_EMU_XCH] = cuda_emu_warp_share(mine, sizeof mine);
    int l = cuda_emu_lane(), g = l / 4, t = l % 4;
    float ar[2][8], bc[2][8]; /* this lane's rows g, g + 8 of A and columns 2t, 2t + 1 of B */
    for (int k = 0; k < 8; k++)
        for (int e = 0; e < 2; e++) {
            uint32_t v;
            memcpy(&v, x[g * 4 + k % 4] + 4 * ((k / 4) * 2 + e), 4);
            v &= 0xffffe000u;
            memcpy(&ar[e][k], &v, 4);
            memcpy(&v, x[(2 * t + e) * 4 + k % 4] + 4 * (4 + k / 4), 4);
            v &= 0xffffe000u;
            memcpy(&bc[e][k], &v, 4);
        }
    for (int e = 0; e < 4; e++) {
        float acc = 0.f;
        for (int k = 0; k < 8; k++) acc += ar[e / 2][k] * bc[e % 2][k];
        d[e] += acc;
    }
}

/* The block's dynamic shared memory. */
inline void *cuda_emu_smem()
{
    if (!cuda_emu_blk) cuda_emu_die("dynamic shared memory outside CUDA_EMU_BLOCKS");
    return cuda_emu_blk->smem;
}

inline void cuda_emu_fiber_main()
{
    cuda_emu_block *b = cuda_emu_blk;
    (*b->call)();
    int i = b->cur;
    b->state[i] = CUDA_EMU_DONE;
    b->live--;
    b->warp_live[i / 32]--;
    cuda_emu_open(b); /* those who wait may now be all that is left */
    cuda_emu_fiber_switch(&b->fib[i], b->main); /* never resumed */
}

inline void cuda_emu_run_blocks(dim3 grid, dim3 block, size_t smem, const std::function<void()> &call)
{
    if (cuda_emu_blk) cuda_emu_die("a launch from inside a kernel");
    cuda_emu_block b;
    memset(&b, 0, sizeof b);
    b.n = (int)(block.x * block.y * block.z);
    int nw = (b.n + 31) / 32;
    b.state = (int *)calloc((size_t)b.n, sizeof(int));
    b.phase = (unsigned *)calloc((size_t)b.n, sizeof(unsigned));
    b.warp_live = (int *)calloc((size_t)nw, sizeof(int));
    b.warp_at = (int *)calloc((size_t)nw, sizeof(int));
    b.xch = (unsigned char (*)[2][32][CUDA_EMU_XCH])calloc((size_t)nw, sizeof *b.xch);
    b.fib = (void **)calloc((size_t)b.n, sizeof(void *));
    b.stacks = (char *)malloc((size_t)b.n * CUDA_EMU_STACK);
    b.smem = malloc(smem ? smem : 1);
    b.smem_bytes = smem;
    b.shadow = (cuda_emu_shadow *)malloc((smem ? smem : 1) * sizeof(cuda_emu_shadow));
    b.warp_epoch = (unsigned *)calloc((size_t)nw, sizeof(unsigned));
    b.cp_group = (unsigned *)calloc((size_t)b.n, sizeof(unsigned));
    b.call = &call;
    if (!b.state || !b.phase || !b.warp_live || !b.warp_at || !b.xch || !b.fib || !b.stacks || !b.smem || !b.shadow ||
        !b.warp_epoch || !b.cp_group)
        cuda_emu_die("out of host memory for an emulated block");
    gridDim = {grid.x, grid.y, grid.z}, blockDim = {block.x, block.y, block.z};
    cuda_emu_blk = &b;
    int64_t nblocks = (int64_t)grid.x * grid.y * grid.z;
    for (int64_t blk = 0; blk < nblocks; blk++) {
        blockIdx.x = (unsigned)(blk % grid.x), blockIdx.y = (unsigned)(blk / grid.x % grid.y);
        blockIdx.z = (unsigned)(blk / ((int64_t)grid.x * grid.y));
        memset(b.smem, 0xFF, smem ? smem : 1);
        for (size_t k = 0; k < smem; k++) b.shadow[k].w.tid = b.shadow[k].r.tid = b.shadow[k].pend = -1;
        memset(b.cp_group, 0, (size_t)b.n * sizeof(unsigned));
        b.n_copies = 0;
        for (int i = 0; i < b.n; i++) {
            cuda_emu_fiber_make(&b.fib[i], b.stacks + (size_t)i * CUDA_EMU_STACK, CUDA_EMU_STACK, cuda_emu_fiber_main);
            b.state[i] = CUDA_EMU_RUN, b.phase[i] = 0;
        }
        for (int w = 0; w < nw; w++) b.warp_live[w] = b.n - 32 * w < 32 ? b.n - 32 * w : 32, b.warp_at[w] = 0;
        b.live = b.n, b.at_block = 0;
        while (b.live > 0) {
            int i = -1;
            for (int k = 0; k < b.n && i < 0; k++) {
                int c = blk % 2 ? b.n - 1 - k : k;
                if (b.state[c] == CUDA_EMU_RUN) i = c;
            }
            if (i < 0) cuda_emu_die("a block's threads wait at barriers that cannot open (divergent barriers)");
            b.cur = i;
            threadIdx.x = (unsigned)i % block.x, threadIdx.y = (unsigned)i / block.x % block.y;
            threadIdx.z = (unsigned)i / (block.x * block.y);
            cuda_emu_fiber_switch(&b.main, b.fib[i]);
        }
    }
    cuda_emu_blk = NULL;
    blockIdx = {0, 0, 0}, threadIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
    free(b.state), free(b.phase), free(b.warp_live), free(b.warp_at), free(b.xch), free(b.fib), free(b.stacks), free(b.smem);
    free(b.shadow), free(b.warp_epoch), free(b.cp_group), free(b.copies);
}

/* f() now, or (while the stream captures) at each launch of the graph being recorded. */
inline void cuda_emu_fn_run(void *p) { (*(std::function<void()> *)p)(); }
inline void cuda_emu_fn_drop(void *p) { delete (std::function<void()> *)p; }
template <typename F> inline void cuda_emu_enqueue(const F &f)
{
    if (!cuda_emu_capturing()) {
        f();
        return;
    }
    std::function<void()> *k = new std::function<void()>(f);
    cuda_emu_capture_add(cuda_emu_fn_run, cuda_emu_fn_drop, k);
}

/* CUDA_EMU_BLOCKS(grid, block, smem, k(args)): the launch of k as a grid of whole blocks
 * (the arguments taken by value, for a capture's later launches) */
#define CUDA_EMU_BLOCKS(grid, block, smem, ...)                                                                   \
    cuda_emu_enqueue([=]() { cuda_emu_run_blocks((grid), (block), (smem), [&]() { __VA_ARGS__; }); })

#endif /* FF_CUDA_EMU_BLOCKS_H */
