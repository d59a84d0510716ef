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
 * lane l, while no element of the block is NaN, +inf or above
 * m + RD__LSE_K (-inf adds expk(-inf) = +0, which changes no lane sum).
 * Stops before the first other block; returns the blocks done.  256-bit
 * form only: the AVX-512 path takes rd__opk_lse_run_f32. */
size_t rd__opk_lse_f32(double *s, const unsigned char *x, size_t nblocks,
                       double m);

/* float32 LogSumExp lanes, one block of 16 float32 elements at x that
 * rd__opk_lse_f32 stopped before: what ops.c's lsel_elem() does to the
 * lanes s and the shift *m for each element in order (NaN and +inf
 * aside): -inf adds nothing; x > *m + RD__LSE_K multiplies every lane by
 * expk(*m - x) and makes *m = x; then lane l adds expk(x - *m).  Returns
 * 0; or 1, with nothing changed, when an element is NaN or +inf (the
 * flags are lsel_elem()'s to set) or without the AVX-512 form.  The
 * single-block step of rd__opk_lse_run_f32, callable alone for the
 * tests. */
int rd__opk_lse_rec_f32(double *s, double *m, const unsigned char *x);

/* float32 LogSumExp lanes, blocks that move the shift included: up to
 * nblocks blocks of 16 float32 elements at x, each what rd__opk_lse_f32 or
 * (for a block holding an element above *m + RD__LSE_K)
 * rd__opk_lse_rec_f32 does to s and *m.  Stops before the first block
 * holding a NaN or +inf; returns the blocks done: 0 without the AVX-512
 * form. */
size_t rd__opk_lse_run_f32(double *s, double *m, const unsigned char *x,
                           size_t nblocks);

/* float32 LogSumExp of rows of n >= 16 elements (ops.c's lsel_rows), each
 * from the empty lane state: what lsel_run() of the row does to the lanes
 * (rd__opk_lse_run_f32 over its blocks, the last n % 16 elements as a
 * block padded with -inf, which adds nothing and never moves the shift),
 * then lsel_flush()'s tree of the 16 lanes: m[r] the row's shift (-inf if
 * it holds no finite element) and t[r] the tree.  Stops before the first
 * row holding a NaN or +inf; returns the rows done: 0 without the AVX-512
 * form. */
size_t rd__opk_lse_rowsums_f32(double *m, double *t, const unsigned char *x,
                               size_t n, size_t nrows);

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

/* rd__opk_lse_cols_f32 on four rows at x, x + rs, x + 2 rs, x + 3 rs: each
 * of the nvec groups of 4 columns takes its four rows in order (AVX-512
 * form, 8 columns per step), stopping before a group whose four rows hold
 * a NaN or an infinity, or the last when nvec is odd; returns the groups
 * done (0 without the AVX-512 form). */
size_t rd__opk_lse_cols4_f32(double *m, double *hi, double *lo,
                             const unsigned char *x, size_t rs, size_t nvec);

/* ops.c's Prod lane tree (prodl_flush): lanes l (mantissa m[l], lo 0,
 * exponent e[l]) merged with prod_merge as (k, k + 8), (k, k + 4),
 * (k, k + 2), (k, k + 1); the result in *hi, *lo, *eo.  Returns 0, or -1
 * (nothing done) without the AVX-512 form. */
int rd__opk_prod_tree(const double *m, const int64_t *e, double *hi, double *lo,
                      int64_t *eo);

/* float32 Prod of short rows (ops.c's rd__ops_rows_out): for each of the
 * nrows rows of n (1..16) elements at x, out[r] = the float32 output of
 * prodl_rows() into a prod_init() state, then finalize.c's prod_out(): the
 * lanes of the row (one element each) merged in prodl_flush's tree, the
 * merge into the empty state and the scaling, lane by lane the same
 * operations, several rows per vector.  redo[r] = 1 (out[r] unspecified)
 * for a row holding a zero, an infinity or a NaN, and for the rows after
 * the last whole group of 8 (AVX2 form: 4); the caller computes those. */
void rd__opk_prod_rows_f32(void *out, unsigned char *redo,
                           const unsigned char *x, size_t n, size_t nrows);

/* float32 LogSumExp of short rows (ops.c's rd__ops_rows_out): for each row
 * of n (1..16) finite elements, the lane sums of lsel_run() (element j
 * rescales the lanes and m when above m + RD__LSE_K, then adds
 * expk(x - m) to lane j), the lane tree of lsel_flush(), and
 * finalize.c's m + log1p(sum - 1) with a vector log1p whose error is far
 * below the bound used: out[r] is written only when both ends of that
 * bound round to the same float32 (then libm's log1p gives it too);
 * redo[r] = 1 otherwise, for a row holding a NaN or an infinity, and for
 * the rows after the last whole group of 8 (AVX2 form: 4). */
void rd__opk_lse_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows);

/* float32 Prod columns, four rows at a time (ops.c's cols32s_prod): the
 * groups of rd__opk_prod_cols_f32 over rows x, x + stride, x + 2 stride,
 * x + 3 stride (stride in bytes), each column's state kept in registers
 * across the four rows, which are applied in row order; stops before a
 * group holding a zero, inf or NaN in any of the four rows.  Returns the
 * groups done. */
size_t rd__opk_prod_cols4_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                              const unsigned char *x, size_t stride,
                              size_t nvec);

/* float32 Max/Min/ArgMax/ArgMin of short rows (ops.c's rd__ops_rows_out,
 * kernels_keyrows.c), mode one of kernels_impl.h's RD__C32_*: for each of
 * the nrows rows of n (1..16) elements at x, the output of the accumulator
 * path: Max/Min the best element's float32 bits (-0 < +0) at out[r];
 * ArgMax/ArgMin the int64 index of its first (..L modes: last) occurrence,
 * -0 tying +0.  redo[r] = 1 (out[r] unspecified) for a row holding a NaN
 * and for the rows after the last whole group of 16; every row without
 * the AVX-512 form (the caller computes those).  stream: the outputs go
 * to memory with non-temporal stores, no line read first (the caller's
 * outputs far outrun the caches; taken only where out is 64-byte aligned,
 * fenced before return). */
void rd__opk_key_rows_f32(void *out, unsigned char *redo,
                          const unsigned char *x, size_t n, size_t nrows,
                          int mode, int stream);

/* float32 Max/Min/ArgMax/ArgMin columns (ops.c's cols32_tile, which
 * documents the state best/bidx/nidx; kernels_keyrows.c): the columns of
 * the first ncols & ~15 (16 per vector) over nrows rows of stride elements,
 * the same state as kernels_impl.h's rd__avx2_cols32.  Returns the columns
 * done: ncols & ~15 in the AVX-512 form, else 0. */
size_t rd__opk_key_cols_f32(const unsigned char *x, size_t stride, size_t ncols,
                            size_t nrows, int mode, int32_t *best,
                            int32_t *bidx, int32_t *nidx);

/* The best 32-bit key of n float32 elements (ops.c's block_best32: NaNs
 * excluded and reported in *nan, zero_tie maps -0 to +0; the identity if
 * no number), in *best.  Returns 0, or -1 (nothing done) without the
 * AVX-512 form (kernels_keyrows.c). */
int rd__opk_best32(const unsigned char *x, size_t n, int is_max, int zero_tie,
                   int32_t *best, int *nan);

/* float32 ArgMax/ArgMin (mode RD__C32_ARG*) of one row of n elements at x
 * (kernels_keyrows.c): *idx, the output of the accumulator path, when the
 * row holds no NaN; returns 0 then, or -1 (*idx unset) for a row holding
 * a NaN, n 0, or without the AVX-512 form.  The row is read twice (its
 * best key, then where it is), so it suits rows that stay in the caches. */
int rd__opk_arg_row_f32(const unsigned char *x, size_t n, int mode,
                        int64_t *idx);

/* float32 Prod of whole rows into accumulators (ops.c's prodl_rows): for
 * each of nrows rows of nblocks * 16 elements at x (row after row), the
 * lanes of prodl_run() from prodl_reset() and the tree of prodl_flush():
 * the row's (hi, lo, e) and sign parity in hi[r], lo[r], e[r], neg[r],
 * which prod_merge() then folds into the row's accumulator.  Stops before
 * a row holding a zero, an infinity or a NaN (its lanes would set flags).
 * Returns the rows done: 0 without the AVX-512 form. */
size_t rd__opk_prod_rows_acc_f32(double *hi, double *lo, int64_t *e,
                                 uint32_t *neg, const unsigned char *x,
                                 size_t nblocks, size_t nrows);

/* float32 Prod lanes (ops.c's prodl_run): kernels_impl.h's
 * rd__avx2_prod_f32 (the same contract: nblocks blocks of 16 elements
 * into the 16 lanes m/e and the sign parity *neg, stopping before a block
 * holding a zero, inf or NaN; returns the blocks done), 16 lanes per step
 * in the AVX-512 form. */
size_t rd__opk_prod_run_f32(double *m, int64_t *e, const unsigned char *x,
                            size_t nblocks, uint32_t *neg);

/* 1: the AVX-512 forms are used (the CPU has them and they are selected);
 * 0: the AVX2 forms. */
int rd__opk_avx512(void);
/* Selects the AVX-512 forms (on != 0, when the CPU has them) or the AVX2
 * ones; returns the previous setting.  For tests, before threads exist. */
int rd__opk_avx512_select(int on);

#endif /* KERNELS_OPS_H */
