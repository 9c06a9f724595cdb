/*
 * The fused entry's register executor: an f32 program of exact ops over contiguous views,
 * 64 elements (four zmm registers per value) at a time.
 *
 * Why: the tile executor (blas_fused.c) calls each instruction's plain kernel on 128-element
 * tiles, and those calls, the tile bookkeeping and the copy into the streamed output cost a
 * fifth to a third of a memory-bound program's time: relu(a * b + c) on 16M f32 took about
 * 1.3x a hand-written loop, and AdamW's 14-op update paid a call per op per tile. Here the
 * program runs chunk by chunk as an accumulator machine (run_chunk): each instruction's
 * result stays in registers for the next one; operands are read where they lie (views in
 * place, broadcast scalars and stored temporaries in a stack chunk); a result reaches
 * memory only when it is a view or a temporary read again later, a big output's last
 * write streamed past BLAS_STREAM_MIN elements as the plain entries do - one pass, the
 * streams interleaved the way a hand-written loop interleaves them.
 *
 * Same bits as the plain entries: add, sub, mul, div, sqrt are IEEE's correctly rounded
 * operations whatever the vector width; neg and abs touch only the sign bit (NaN payloads
 * too, as -x and fabsf do); square is x * x; reciprocal is 1 / x (a division, never the
 * rcp14 estimate); relu is x < 0 ? 0 : x (NaN and -0 pass through). The file is compiled
 * with -ffp-contract=off, so no multiply and add become one fma. Every other op (the
 * transcendental ones: their kernels are the vmath ones) and every other layout go to the
 * tiles. FF_BLAS_FUSED=tiles sends every program there, to compare the two.
 */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "blas_fused.h"

#define VECS 4                  /* zmm registers per value and chunk */
#define CHUNK (16 * VECS)       /* elements per chunk */
#define VEC_MAX_INST 64         /* longer programs (never built by the core) take the tiles */

enum vcode { V_ADD, V_SUB, V_MUL, V_DIV, V_NEG, V_ABS, V_SQUARE, V_SQRT, V_RECIP, V_RELU };

typedef struct vec_op {
    unsigned char code, dst, a, b; /* slots */
    unsigned char a_acc, b_acc;    /* the operand is the previous instruction's result: in registers */
    unsigned char store;           /* the result goes to memory: a view, or a temporary read later */
    unsigned char stream;          /* the program's last write of a big output that it never reads */
} vec_op;

typedef struct vec_plan {
    const fused_plan *pl;
    int nops;
    int nviews, streams;
    unsigned char view[FF_FUSED_MAX_VALUES]; /* the slots that are contiguous views */
    vec_op op[VEC_MAX_INST];
} vec_plan;

static int code_of(const ff_fused_inst *in)
{
    if (in->kind == FF_KIND_BINARY) {
        switch ((ff_binary_op)in->op) {
        case FF_BINARY_ADD: return V_ADD;
        case FF_BINARY_SUB: return V_SUB;
        case FF_BINARY_MUL: return V_MUL;
        case FF_BINARY_DIV: return V_DIV;
        default: return -1;
        }
    }
    switch ((ff_unary_op)in->op) {
    case FF_UNARY_NEG: return V_NEG;
    case FF_UNARY_ABS: return V_ABS;
    case FF_UNARY_SQUARE: return V_SQUARE;
    case FF_UNARY_SQRT: return V_SQRT;
    case FF_UNARY_RECIPROCAL: return V_RECIP;
    case FF_UNARY_RELU: return V_RELU;
    default: return -1;
    }
}

/* One chunk: n = CHUNK elements at i (full: plain loads and stores, a program's last
 * write of a big output streamed), or the tail (fewer: masked). Inlined twice, so each
 * copy has no tests of the other's. An accumulator machine: each instruction leaves its
 * result in acc (registers), where the next one takes an operand that is that result;
 * other operands are read where they lie (at[s]: the views in place, temporaries and
 * broadcast scalars in a stack chunk), and a result goes to memory only when it is a
 * view or a temporary that a later instruction reads. */
__attribute__((target("avx512f"), always_inline)) static inline void run_chunk(const vec_plan *vp, float *const *at,
                                                                               int64_t n, const int full)
{
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __mmask16 m[VECS];
    for (int k = 0; k < VECS; k++) {
        int64_t left = n - 16 * k;
        m[k] = full || left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1);
    }
#define LD(p, k) (full ? _mm512_loadu_ps((p) + 16 * (k)) : _mm512_maskz_loadu_ps(m[k], (p) + 16 * (k)))
#define OPA(k) (o->a_acc ? acc[k] : LD(pa, k))
#define OPB(k) (o->b_acc ? acc[k] : LD(pb, k))
    __m512 acc[VECS] = {0}; /* the previous instruction's result */
    for (int j = 0; j < vp->nops; j++) {
        const vec_op *o = &vp->op[j];
        const float *pa = at[o->a], *pb = at[o->b];
        float *pd = at[o->dst];
        switch ((enum vcode)o->code) {
        case V_ADD: for (int k = 0; k < VECS; k++) acc[k] = _mm512_add_ps(OPA(k), OPB(k)); break;
        case V_SUB: for (int k = 0; k < VECS; k++) acc[k] = _mm512_sub_ps(OPA(k), OPB(k)); break;
        case V_MUL: for (int k = 0; k < VECS; k++) acc[k] = _mm512_mul_ps(OPA(k), OPB(k)); break;
        case V_DIV: for (int k = 0; k < VECS; k++) acc[k] = _mm512_div_ps(OPA(k), OPB(k)); break;
        case V_SQUARE:
            for (int k = 0; k < VECS; k++) {
                __m512 x = OPA(k);
                acc[k] = _mm512_mul_ps(x, x);
            }
            break;
        case V_SQRT: for (int k = 0; k < VECS; k++) acc[k] = _mm512_sqrt_ps(OPA(k)); break;
        case V_RECIP: for (int k = 0; k < VECS; k++) acc[k] = _mm512_div_ps(one, OPA(k)); break;
        case V_NEG:
            for (int k = 0; k < VECS; k++)
                acc[k] = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(OPA(k)), sign));
            break;
        case V_ABS:
            for (int k = 0; k < VECS; k++)
                acc[k] = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(OPA(k))));
            break;
        case V_RELU:
            for (int k = 0; k < VECS; k++) {
                __m512 x = OPA(k);
                acc[k] = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x, zero);
            }
            break;
        default: __builtin_unreachable(); /* blas_fused_vec takes only these codes */
        }
        if (!o->store) continue;
        if (full && o->stream)
            for (int k = 0; k < VECS; k++) _mm512_stream_ps(pd + 16 * k, acc[k]);
        else if (full)
            for (int k = 0; k < VECS; k++) _mm512_storeu_ps(pd + 16 * k, acc[k]);
        else
            for (int k = 0; k < VECS; k++) _mm512_mask_storeu_ps(pd + 16 * k, m[k], acc[k]);
    }
#undef OPA
#undef OPB
#undef LD
}

__attribute__((target("avx512f"))) static void run_chunks(void *arg, int64_t c0, int64_t c1)
{
    const vec_plan *vp = arg;
    const fused_plan *pl = vp->pl;
    _Alignas(64) float r[pl->nslots][CHUNK]; /* a VLA: temporaries and broadcast scalars */
    float *at[FF_FUSED_MAX_VALUES];
    for (int s = 0; s < pl->nslots; s++) {
        at[s] = r[s];
        if (pl->slot[s].scalar)
            for (int k = 0; k < CHUNK; k++) r[s][k] = *(const float *)pl->slot[s].one;
    }
    int64_t full_end = c1 * CHUNK <= pl->numel ? c1 : c1 - 1; /* the last chunk may be short */
    for (int64_t ch = c0; ch <= full_end && ch < c1; ch++) {
        int64_t i = ch * CHUNK;
        for (int j = 0; j < vp->nviews; j++) at[vp->view[j]] = (float *)pl->slot[vp->view[j]].mem + i;
        if (ch < full_end) run_chunk(vp, at, CHUNK, 1);
        else run_chunk(vp, at, pl->numel - i, 0);
    }
    if (vp->streams) _mm_sfence(); /* the streamed chunks are visible before the pool hands on */
}

static int vec_disabled(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("FF_BLAS_FUSED");
        v = e && !strcmp(e, "tiles");
    }
    return v;
}

int blas_fused_vec(blas_ctx *c, const fused_plan *pl, const ff_fused_program *p)
{
    if (p->dtype != FF_F32 || pl->nops > VEC_MAX_INST || !(blas_cpu_flags() & BLAS_CPU_AVX512F) || vec_disabled())
        return 0;
    vec_plan vp = {.pl = pl, .nops = pl->nops};
    for (int i = 0; i < pl->nops; i++) {
        int code = code_of(&p->inst[i]);
        if (code < 0) return 0;
        const fused_op *o = &pl->op[i];
        vp.op[i] = (vec_op){.code = (unsigned char)code, .dst = (unsigned char)o->dst, .a = (unsigned char)o->src[0],
                            .b = (unsigned char)o->src[1]};
    }
    for (int s = 0; s < pl->nslots; s++) {
        const fused_slot *sl = &pl->slot[s];
        if ((sl->load || sl->store) && !sl->mem && !sl->scalar) return 0; /* a strided view: the tiles gather it */
        if (sl->mem) vp.view[vp.nviews++] = (unsigned char)s;
    }
    for (int i = 0; i < pl->nops; i++) {
        vec_op *o = &vp.op[i];
        int prev = i ? vp.op[i - 1].dst : -1;
        o->a_acc = o->a == prev;
        o->b_acc = o->b == prev;
        o->store = pl->slot[o->dst].mem != NULL; /* a view */
        for (int j = i + 2; j < pl->nops && !o->store; j++) /* the next one takes it from acc */
            o->store = vp.op[j].a == o->dst || vp.op[j].b == o->dst;
    }
    /* A big output's last write streams when no later instruction reads it and it is
     * 64-byte aligned (chunks are 256 bytes, so every chunk's vectors are too). */
    for (int i = pl->nops - 1; i >= 0; i--) {
        const fused_slot *sl = &pl->slot[vp.op[i].dst];
        int later = 0;
        for (int j = i + 1; j < pl->nops; j++)
            later |= vp.op[j].a == vp.op[i].dst || vp.op[j].b == vp.op[i].dst || vp.op[j].dst == vp.op[i].dst;
        vp.op[i].stream = sl->stream && !later && !((uintptr_t)sl->mem & 63);
        vp.streams |= vp.op[i].stream;
    }
    int64_t nchunks = (pl->numel + CHUNK - 1) / CHUNK;
    blas_parallel_for(c, nchunks, BLAS_PAR_MIN / CHUNK, 1, run_chunks, &vp);
    return 1;
}
