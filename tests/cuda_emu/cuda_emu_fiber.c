/*
 * The emulated blocks' fibers (backends/cuda/cuda_emu_blocks.h): a context switch that
 * saves only what the calling convention says a call preserves. glibc's swapcontext also
 * saves and restores the signal mask with a system call each time, which made two thirds
 * of an emulated tensor-core attention run; the kernels switch at every warp exchange.
 * x86-64 (System V) here; elsewhere (or with CUDA_EMU_UCONTEXT) the same two functions
 * over ucontext.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void cuda_emu_fiber_make(void **sp, char *stack, size_t size, void (*fn)(void));
void cuda_emu_fiber_switch(void **from, void *to);

#if defined(__x86_64__) && !defined(CUDA_EMU_UCONTEXT)

/* Pushes the callee-saved registers, parks the stack pointer in *from, takes `to`'s and
 * pops its registers; `ret` resumes it where it switched away (or in fiber_start). */
__asm__(".text\n"
        ".globl cuda_emu_fiber_switch\n"
        ".hidden cuda_emu_fiber_switch\n"
        ".type cuda_emu_fiber_switch, @function\n"
        "cuda_emu_fiber_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size cuda_emu_fiber_switch, .-cuda_emu_fiber_switch\n"
        /* a new fiber's first resumption: its function is in r12; it never returns */
        "cuda_emu_fiber_start:\n"
        "  call *%r12\n"
        "  ud2\n");

extern char cuda_emu_fiber_start[];

/* A stack whose saved registers are zeros with fn in r12's slot, resuming in fiber_start
 * with the stack aligned as a call expects. */
void cuda_emu_fiber_make(void **sp, char *stack, size_t size, void (*fn)(void))
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    void **s = (void **)(top - 56);
    for (int i = 0; i < 6; i++) s[i] = NULL; /* r15, r14, r13, r12, rbx, rbp */
    s[3] = (void *)fn;
    s[6] = (void *)cuda_emu_fiber_start;
    *sp = s;
}

#else /* ucontext */

#include <ucontext.h>

typedef struct fiber_ctx { ucontext_t uc; } fiber_ctx;

void cuda_emu_fiber_make(void **sp, char *stack, size_t size, void (*fn)(void))
{
    /* the context lives at the stack's base, below what the fiber uses */
    fiber_ctx *c = (fiber_ctx *)(((uintptr_t)stack + 15) & ~(uintptr_t)15);
    size_t used = sizeof *c + 16;
    if (getcontext(&c->uc) != 0) abort();
    c->uc.uc_stack.ss_sp = stack + used;
    c->uc.uc_stack.ss_size = size - used;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, fn, 0);
    *sp = c;
}

/* *from: the running context's handle (NULL for the scheduler's first switch) */
void cuda_emu_fiber_switch(void **from, void *to)
{
    static __thread fiber_ctx scheduler;
    if (!*from) *from = &scheduler;
    if (swapcontext(&((fiber_ctx *)*from)->uc, &((fiber_ctx *)to)->uc) != 0) {
        fprintf(stderr, "cuda_emu: swapcontext failed\n");
        abort();
    }
}

#endif
