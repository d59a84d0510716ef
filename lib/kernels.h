/* kernels.h - internal accumulation kernels of libreduce (not installed).
 *
 * The engine in reduce.c walks the input in row-major order and hands the
 * kernels contiguous pieces of one row of the innermost canonical group:
 *
 *  - innermost group reduced: rd__kernel.run() adds the squares of a piece of
 *    a contiguous run into RD__LANES position-based lanes (the element at
 *    offset j from the start of the run segment goes to lane j % RD__LANES,
 *    each lane in order of j); rd__kernel.flush() then combines the lanes in
 *    a fixed tree and adds the result to one output accumulator;
 *  - innermost group kept: rd__kernel.cols() adds x[j]^2 to acc[j], row by
 *    row;
 *  - whole runs at once: rd__kernel.rows() (short rows without lane state).
 *
 * Every kernel is split-invariant: calling run() on [0,n) or on [0,m) and
 * then [m,n) (with the right `pos`) leaves the same bits, which is what makes
 * streaming with arbitrary chunks bit-identical to whole-buffer execution.
 *
 * Accumulator classes (bytes per output accumulator):
 *  - RD__ACC_F64 ("double", 8): float32, float16, bfloat16.  (double)x*x is
 *    exact for these types, so a fused multiply-add gives the same bits and a
 *    future FMA variant stays bit-identical.
 *  - RD__ACC_BLUE (64): float64.  Three Kahan sums (|x| > 2^480 scaled by
 *    2^-600, 0 < |x| < 2^-480 scaled by 2^600, the rest (zero included)
 *    plain) plus a plain sum of the non-finite |x| (NaN if any NaN, else +inf
 *    if any inf, else 0).
 *  - RD__ACC_U128 (16): int32/uint32, exact.
 *  - RD__ACC_U192 (32): int64/uint64, exact (128-bit sum plus a carry word).
 * Integer sums are exact, so their order does not matter.
 */
#ifndef KERNELS_H
#define KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Lanes per contiguous run; part of the definition of the summation order. */
#define RD__LANES 16

enum rd__kernel_id {
  RD__K_F32 = 0,
  RD__K_F16,
  RD__K_BF16,
  RD__K_F64,
  RD__K_I32,
  RD__K_U32,
  RD__K_I64,
  RD__K_U64,
  RD__K_COUNT
};

enum rd__acc_class { RD__ACC_F64, RD__ACC_BLUE, RD__ACC_U128, RD__ACC_U192 };

struct rd__blue {
  double bs, bc;   /* big: sum and Kahan compensation of (x*2^-600)^2 */
  double ms, mc;   /* mid: x^2 */
  double ss, sc;   /* small: (x*2^600)^2 */
  double sp;       /* sum of non-finite |x| */
  double pad;
};

struct rd__u192 {
  unsigned __int128 lo;
  uint64_t hi;
};

/* Lane state of one run segment.  Zero bytes are the empty state. */
union rd__lanes {
  double d[RD__LANES];
  struct {
    double bs[RD__LANES], bc[RD__LANES], ms[RD__LANES], mc[RD__LANES];
    double ss[RD__LANES], sc[RD__LANES], sp[RD__LANES];
  } b;
  struct rd__u192 w;
};

struct rd__kernel {
  enum rd__acc_class acc_class;
  size_t acc_size;
  /* Adds n elements starting at x; the first is at offset `pos` of the run
   * segment.  x need not be aligned. */
  void (*run)(union rd__lanes *ln, const unsigned char *x, size_t n,
              uint64_t pos);
  /* Adds the lanes to the accumulator `acc` and clears them. */
  void (*flush)(union rd__lanes *ln, void *acc);
  /* acc[j] += x[r*n + j]^2 for j < n, r < nrows, rows in order. */
  void (*cols)(void *acc, const unsigned char *x, size_t n, size_t nrows);
  /* nrows complete runs of n elements, run r into acc[r]: the same bits as
   * run() from empty lanes at pos 0 followed by flush() for each run. */
  void (*rows)(void *acc, const unsigned char *x, size_t n, size_t nrows);
};

/* Kernel for an element type (enum rd_dtype value); NULL if unsupported. */
const struct rd__kernel *rd__kernel_for(int kernel_id);
int rd__kernel_id(int dtype);

/* dst += src for one accumulator of the class. */
void rd__acc_merge(enum rd__acc_class cls, void *dst, const void *src);

/* Final double value of a float accumulator: the sum of squares, or for
 * `l2` its square root, without spurious overflow/underflow (BLUE). */
double rd__acc_value(enum rd__acc_class cls, const void *acc, int l2);

#endif /* KERNELS_H */
