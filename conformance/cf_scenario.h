/* Layout scenarios shared by the elementwise families: a logical shape and the
 * layout of each operand. Every family crosses its op codes and dtypes with a list
 * of these; the scenario name is the last part of the case id. */
#ifndef FF_CONFORMANCE_CF_SCENARIO_H
#define FF_CONFORMANCE_CF_SCENARIO_H

#include "cf.h"

typedef struct cf_scenario {
    const char *name;
    int ndim;
    int64_t shape[4];
    cf_layout_kind dst, a, b; /* layouts of dst and the inputs */
    bool inplace;             /* dst is the very view of input a */
} cf_scenario;

#define CF_BIG (1 << 20) /* past the caches and any threading threshold */

/* The elementwise scenarios: 0-d, zero-size, size-1 dims, vector tails (odd/prime
 * lengths), row-major, offset, transposed, stepped, broadcast, in place, large ones for
 * every op, and a big one (used only by the ops listed in each family as worth the time). */
static const cf_scenario cf_ew_scenarios[] = {
    {"scalar", 0, {0}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"empty", 1, {0}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"empty3x0", 2, {3, 0}, CF_L_OFFSET, CF_L_TRANSPOSED, CF_L_CONTIG, false},
    {"ones1x1x1", 3, {1, 1, 1}, CF_L_OFFSET, CF_L_STEPPED, CF_L_CONTIG, false},
    {"n1", 1, {1}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"n3", 1, {3}, CF_L_CONTIG, CF_L_CONTIG, CF_L_OFFSET, false},
    {"n7", 1, {7}, CF_L_CONTIG, CF_L_OFFSET, CF_L_CONTIG, false},
    {"n17", 1, {17}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"n31", 1, {31}, CF_L_OFFSET, CF_L_CONTIG, CF_L_CONTIG, false},
    {"n67", 1, {67}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"n257", 1, {257}, CF_L_CONTIG, CF_L_CONTIG, CF_L_OFFSET, false},
    {"contig5x7", 2, {5, 7}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"offset5x7", 2, {5, 7}, CF_L_OFFSET, CF_L_OFFSET, CF_L_OFFSET, false},
    {"transposed7x5", 2, {7, 5}, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_CONTIG, false},
    {"transposed_dst3x4x5", 3, {3, 4, 5}, CF_L_TRANSPOSED, CF_L_CONTIG, CF_L_TRANSPOSED, false},
    {"stepped4x6", 2, {4, 6}, CF_L_STEPPED, CF_L_STEPPED, CF_L_OFFSET, false},
    {"bcast4x6", 2, {4, 6}, CF_L_CONTIG, CF_L_BCAST0, CF_L_BCASTLAST, false},
    {"bcast_scalar9", 1, {9}, CF_L_CONTIG, CF_L_CONTIG, CF_L_BCAST0, false},
    {"size1dims2x1x3x1", 4, {2, 1, 3, 1}, CF_L_STEPPED, CF_L_TRANSPOSED, CF_L_BCAST0, false},
    {"inplace6x5", 2, {6, 5}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, true},
    {"inplace_stepped3x4", 2, {3, 4}, CF_L_STEPPED, CF_L_STEPPED, CF_L_CONTIG, true},
    /* every op and dtype past the threading thresholds and off every power of two, so a
     * bug at a chunk or thread boundary shows (70001 is prime) */
    {"large70001", 1, {70001}, CF_L_CONTIG, CF_L_OFFSET, CF_L_CONTIG, false},
    {"large_t263x257", 2, {263, 257}, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_PADDED, false},
    {"big", 1, {CF_BIG}, CF_L_CONTIG, CF_L_CONTIG, CF_L_CONTIG, false},
    {"big_strided", 2, {1024, 1024}, CF_L_CONTIG, CF_L_TRANSPOSED, CF_L_BCAST0, false},
};
#define CF_EW_NSCEN ((int)(sizeof cf_ew_scenarios / sizeof cf_ew_scenarios[0]))
#define CF_EW_FIRST_BIG (CF_EW_NSCEN - 2)

/* Every dtype the families compute on: F16/BF16 run wherever the reference takes F32 (the
 * core computes them through its f32 detour; a backend that declines the half dtype is
 * run the same way: cf_detour.c). */
static const ff_dtype cf_all_dtypes[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8, FF_BOOL, FF_F16, FF_BF16};
#define CF_NDTYPES 8
/* The storage dtypes: what copy and fill are checked on. I8/I16 are only that: the core
 * computes on them through I32 (every entry but copy and fill), so the families that
 * compute never see them; their conversions are in "copy" and in "special"'s edges. */
static const ff_dtype cf_storage_dtypes[] = {FF_F32, FF_F64, FF_I32, FF_I64, FF_U8, FF_BOOL, FF_F16, FF_BF16, FF_I8, FF_I16};
#define CF_NSTORAGE_DTYPES 10

#endif /* FF_CONFORMANCE_CF_SCENARIO_H */
