/* kernels_rows_int.h - integer ReduceL2 / ReduceSumSquare of short rows in
 * 64 bits (internal, not installed).
 *
 * For a plan whose every output is one whole row of n <= 16 elements of
 * int32, uint32, int64 or uint64 (reduce.c's direct integer plans), a row
 * whose elements all lie in [-2^29, 2^29) (unsigned: below 2^29) has a sum
 * of squares below 2^63, so it is computed exactly in one 64-bit lane, and
 * its integer square root (floor) exactly from a double estimate and one
 * integer correction each way.  Integer results are exact, so they are the
 * bits of the general path (rows() into 128/192-bit accumulators, then
 * rd__finalize()) for every row this path writes.  A row with a larger
 * element, or whose result does not fit the output type (the overflow
 * policy and its error message belong to the general path), is left to
 * the caller: its bit is set in the returned mask and its output bytes are
 * unspecified.
 *
 * Paths: portable C, AVX2 (4 rows per step) and AVX-512 (8 rows per step
 * of 64-bit elements; 32-bit ones take the AVX2 form, faster from memory);
 * rd__rows_int() takes the path of the kernel the plan was created with.
 */
#ifndef KERNELS_ROWS_INT_H
#define KERNELS_ROWS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* Longest row and most rows of one call. */
#define RD__ROWS_INT_MAX_N 16
#define RD__ROWS_INT_MAX_ROWS 64

/* Rows r < nrows (<= RD__ROWS_INT_MAX_ROWS) of n (1..RD__ROWS_INT_MAX_N)
 * elements of `dtype` (int32, uint32, int64 or uint64) at x, row r at
 * x + r*n*size: writes output r of ReduceL2 (l2) or ReduceSumSquare to
 * out + r*size in dtype, and returns the mask of the rows it did not write
 * (bit r).  `impl` (enum rd__impl) must be available on this CPU. */
uint64_t rd__rows_int_impl(int impl, int dtype, int l2, void *out,
                           const unsigned char *x, size_t n, size_t nrows);
/* The same on the path of kernel k (a table entry of rd__kernel_impl()). */
uint64_t rd__rows_int(const struct rd__kernel *k, int dtype, int l2, void *out,
                      const unsigned char *x, size_t n, size_t nrows);

#endif /* KERNELS_ROWS_INT_H */
