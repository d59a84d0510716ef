/* kernels_ops.h - vector helpers of the operator kernels (ops.c); private
 * to ops.c, kernels_ops_avx2.c and the unit tests.
 *
 * Each helper does exactly the operations of a portable loop in ops.c, in
 * the same order, so it gives the same bits; ops.c calls it only while the
 * SIMD implementations are active (rd__kernels_active() >= RD__IMPL_AVX2,
 * which implies the CPU has AVX2, FMA and F16C).  While the AVX-512 path is
 * active (RD__IMPL_AVX512: the CPU has F, BW, DQ and VL), a 512-bit form of
 * the same operations is used; rd__opk_avx512_select() forces one form (the
 * tests compare both); the results are identical, only the speed differs.
 */
#ifndef KERNELS_OPS_H
#define KERNELS_OPS_H

#include <stddef.h>
#include <stdint.h>

/* float32 LogSumExp lanes (ops.c's lsel_run and lsel_block): for up to
 * nblocks blocks of 16 float32 elements at x, s[l] += expk(x[l] - m) for
 * lane l, while no element of the block is NaN, +inf or above m (-inf adds
 * expk(-inf) = +0, which changes no lane sum).  Stops before the first
 * other block; returns the blocks done. */
size_t rd__opk_lse_f32(double *s, const unsigned char *x, size_t nblocks,
                       double m);

/* float32 ArgMax (is_max) / ArgMin of the n (< 2^31) elements at x, -0
 * taken as +0 (ops.c's arg32_fold): *best, the best 32-bit total-order key
 * of the non-NaN elements (INT32_MIN for Max, INT32_MAX for Min if none);
 * *bidx, the first (with `last`: the last) index holding it, -1 if none;
 * *nidx, the first (last) NaN index, -1 if none. */
void rd__opk_arg32(const unsigned char *x, size_t n, int is_max, int last,
                   int32_t *best, int64_t *bidx, int64_t *nidx);

/* float32 Prod columns (ops.c's cols32s_prod): kernels_impl.h's
 * rd__avx2_prod_cols_f32 (the same contract: nvec groups of 4 columns,
 * stopping before a group holding a zero, inf or NaN; returns the groups
 * done), 8 columns at a time in the AVX-512 form. */
size_t rd__opk_prod_cols_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                             const unsigned char *x, size_t nvec);

/* float32 LogSumExp columns (ops.c's colsks_lse_f32): kernels_impl.h's
 * rd__avx2_lse_cols_f32 (nvec groups of 4 columns, stopping before a group
 * holding a NaN or an infinity; returns the groups done), 8 columns at a
 * time in the AVX-512 form. */
size_t rd__opk_lse_cols_f32(double *m, double *hi, double *lo,
                            const unsigned char *x, size_t nvec);

/* ops.c's Prod lane tree (prodl_flush): lanes l (mantissa m[l], lo 0,
 * exponent e[l]) merged with prod_merge as (k, k + 8), (k, k + 4),
 * (k, k + 2), (k, k + 1); the result in *hi, *lo, *eo.  Returns 0, or -1
 * (nothing done) without the AVX-512 form. */
int rd__opk_prod_tree(const double *m, const int64_t *e, double *hi, double *lo,
                      int64_t *eo);

/* 1: the AVX-512 forms are used (the CPU has them and they are selected);
 * 0: the AVX2 forms. */
int rd__opk_avx512(void);
/* Selects the AVX-512 forms (on != 0, when the CPU has them) or the AVX2
 * ones; returns the previous setting.  For tests, before threads exist. */
int rd__opk_avx512_select(int on);

#endif /* KERNELS_OPS_H */
