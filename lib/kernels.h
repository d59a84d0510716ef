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
 *  - whole runs at once: rd__kernel.rows() (short rows without lane state),
 *    or rd__rows_out() when each output is exactly one run (float classes),
 *    which writes finished output elements instead of accumulators.
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
 *
 * Implementations: a portable C path (any architecture) and, on x86-64, an
 * AVX2+FMA+F16C path (kernels_avx2.c) and an AVX-512 path (kernels_avx512.c:
 * F, BW, VL and DQ, the 16 lanes in two zmm registers; rows of n <= 16,
 * where wider vectors do not help, use the AVX2 rows()).  The widest the
 * CPU and OS support is chosen once at load time.  All follow the order
 * above exactly and give identical bits (FMA only where the product is
 * exact: squares of float32/16/bfloat16 in double).  REDUCED_KERNELS=avx512,
 * avx2 or portable in the environment asks for a path; one the CPU lacks
 * falls back to the best available below it (any other value is ignored).
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

/* RD__ACC_OP: an accumulator of the operator families of ops.h; the kernel
 * says how to empty (init) and merge (merge) it. */
enum rd__acc_class {
  RD__ACC_F64,
  RD__ACC_BLUE,
  RD__ACC_U128,
  RD__ACC_U192,
  RD__ACC_OP
};

struct rd__blue {
  double bs, bc; /* big: sum and Kahan compensation of (x*2^-600)^2 */
  double ms, mc; /* mid: x^2 */
  double ss, sc; /* small: (x*2^600)^2 */
  double sp;     /* sum of non-finite |x| */
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
  /* Sets `count` consecutive accumulators (or, with count 1, a lane state)
   * to the empty state.  NULL: all-zero bytes are the empty state (the
   * original classes).  Zero bytes are NOT empty for Prod, Max, Min, Arg. */
  void (*init)(void *acc, size_t count);
  /* dst = dst combined with src (src's elements come after dst's).  NULL:
   * rd__acc_merge() of acc_class. */
  void (*merge)(void *dst, const void *src);
};

/* Each implementation implies the CPU features of those below it (the
 * AVX2 helpers of kernels_impl.h also serve the AVX-512 path). */
enum rd__impl {
  RD__IMPL_PORTABLE = 0,
  RD__IMPL_AVX2 = 1,
  RD__IMPL_AVX512 = 2,
  RD__IMPL_COUNT
};

/* Kernel of the active implementation for a kernel id; NULL if invalid. */
const struct rd__kernel *rd__kernel_for(int kernel_id);
/* Kernel of a given implementation; NULL if that implementation is not
 * available on this build and CPU (for tests comparing implementations). */
const struct rd__kernel *rd__kernel_impl(int kernel_id, int impl);
/* Kernel id of an element type (enum rd_dtype value); -1 if unsupported. */
int rd__kernel_id(int dtype);

/* Active implementation (enum rd__impl).  Chosen before main() runs from
 * the CPU and REDUCED_KERNELS; rd__kernels_select() switches it and returns
 * 0, or -1 if `impl` is not available.  Only for tests: not thread-safe
 * against executions running at the same time (their kernels are looked up
 * when they are created). */
int rd__kernels_active(void);
int rd__kernels_select(int impl);
/* "portable", "avx2" or "avx512" (the REDUCED_KERNELS spelling). */
const char *rd__kernels_name(int impl);

/* Writes the output element of a float class (dtype float32, float64,
 * float16 or bfloat16) for the final double value v, rounded once to
 * nearest even.  Every NaN becomes the type's default quiet NaN, since NaN
 * payloads depend on operand order inside the hardware. */
void rd__float_store(int dtype, double v, void *dst);

/* Finalisation of rd__rows_out(): the row's value v itself (Sum, L1,
 * SumSquare), sqrt(v) (L2), v / n (Mean) or log(v) (LogSum).  0 and 1 are
 * the old `l2` argument. */
enum rd__out_fin {
  RD__OUT_SUM = 0,
  RD__OUT_SQRT = 1,
  RD__OUT_MEAN = 2,
  RD__OUT_LOG = 3
};

/* nrows complete runs of n elements, each the whole input of one output,
 * for a float class kernel (a squares kernel of kernels.c, or the double
 * class Sum/L1 kernels of ops.c): writes output elements out[0..nrows) of
 * `dtype`, the same bits as rows() into zeroed accumulators followed by
 * rd__acc_value() (BLUE: with l2 = fin is RD__OUT_SQRT; double class: the
 * double, then `fin`, in double) and rd__float_store().  Short rows
 * (n <= RD__LANES) of a SIMD path's kernels go through its vector form. */
void rd__rows_out(const struct rd__kernel *k, int dtype, void *out,
                  const unsigned char *x, size_t n, size_t nrows, int fin);

/* count double class accumulators acc[i], each the sum of n terms from +0
 * (columns of a squares kernel of kernels.c or of ops.c's double class Sum
 * and L1 kernels), as output elements of `dtype` at out: the bits of
 * rd__float_store(dtype, v) for v the double, then `fin`, in double.  For
 * a kernel `k` of the AVX-512 path, eight per vector step (float32, float16
 * and bfloat16; the same bits). */
void rd__accs_out(const struct rd__kernel *k, int dtype, int fin, size_t n,
                  const double *acc, void *out, size_t count);

/* dst += src for one accumulator of the class. */
void rd__acc_merge(enum rd__acc_class cls, void *dst, const void *src);
/* rd__acc_merge() on `count` consecutive accumulators (same bits). */
void rd__acc_merge_n(enum rd__acc_class cls, void *dst, const void *src,
                     size_t count);

/* Final double value of a float accumulator: the sum of squares, or for
 * `l2` its square root, without spurious overflow/underflow (BLUE). */
double rd__acc_value(enum rd__acc_class cls, const void *acc, int l2);

#endif /* KERNELS_H */
