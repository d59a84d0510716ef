/* ops.h - internal operator table of libreduce (not installed).
 *
 * Every operator is a row of one table (ops.c): its accumulator family, the
 * element map applied before accumulating, and its finalisation (finalize.c)
 * including the empty-set value.  The public half (names, versions, dtype
 * lists) is in optable.c.
 *
 * Families (accumulator per output; "empty" is the state before any
 * element; every family is split-invariant and merges partials in part
 * order, see kernels.h):
 *  - RD__F_SQ: the original ReduceL2/ReduceSumSquare kernels (kernels.c),
 *    unchanged.
 *  - RD__F_SUMD: float32/float16/bfloat16 Sum, Mean, L1, LogSum: double,
 *    16 position lanes and the fixed tree, exactly the order of the squares
 *    kernels (element map x or |x|).  All-zero bytes are empty.
 *  - RD__F_SUMDD: float64 Sum, Mean, L1, LogSum: one compensated
 *    double-double sum (TwoSum, error terms summed in `lo`) of the finite
 *    terms, in element order, plus a plain sum of the non-finite ones.
 *  - RD__F_ISUM: integer Sum, Mean, L1, LogSum: exact signed 128-bit sum.
 *  - RD__F_LSE: float LogSumExp: a shift m and a double-double sum of
 *    exp(x - m), rescaled when m moves; NaN and +inf flags.  float64: m is
 *    the running maximum.  float32/float16/bfloat16: m moves only past
 *    m + RD__LSE_K (kernels_impl.h); the lanes of a run and each column
 *    (cols()) sum in double.
 *  - RD__F_ILSE: integer LogSumExp: exact state, the maximum m and, for
 *    d = 0..RD__LSE_D, the number of elements equal to m - d (elements
 *    further below m change the result by less than 2^-54 relative).
 *  - RD__F_PROD: float Prod: double-double mantissa in [0.5, 1) and an int64
 *    binary exponent (nothing overflows or underflows unless the result
 *    does), zero/inf/NaN counts and the sign.
 *  - RD__F_IPROD: integer Prod: exact magnitude while it fits 128 bits, an
 *    overflow flag, the sign, a zero flag and the product mod 2^64 (wrap).
 *  - RD__F_MAXMIN: Max/Min: the best total-order key (floats: -0 < +0, so
 *    Max of {-0, +0} is +0 and Min is -0 whatever the order) and a NaN flag.
 *  - RD__F_ARG: ArgMax/ArgMin: best key, its index, the element count and
 *    the first (or last) NaN index; indices of a merged-in partial are
 *    offset by the count before it.
 */
#ifndef OPS_H
#define OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "reduce.h"

enum rd__family {
  RD__F_SQ = 0,
  RD__F_SUMD,
  RD__F_SUMDD,
  RD__F_ISUM,
  RD__F_LSE,
  RD__F_ILSE,
  RD__F_PROD,
  RD__F_IPROD,
  RD__F_MAXMIN,
  RD__F_ARG
};

/* Element maps applied before accumulating. */
enum rd__map { RD__MAP_ID = 0, RD__MAP_ABS, RD__MAP_SQUARE };

/* How the final value is made from the accumulated one. */
enum rd__fin {
  RD__FIN_SUM,  /* the sum itself (Sum, L1, SumSquare) */
  RD__FIN_SQRT, /* sqrt (L2) */
  RD__FIN_MEAN, /* sum / count */
  RD__FIN_LOG,  /* log of the sum (LogSum) */
  RD__FIN_LSE,  /* m + log(sum exp(x - m)) */
  RD__FIN_PROD,
  RD__FIN_MAX,
  RD__FIN_MIN,
  RD__FIN_ARG
};

/* One row of the operator table. */
struct rd__op {
  int op;
  int float_family; /* family for float16/bfloat16/float32 */
  int f64_family;   /* family for float64 */
  int int_family;   /* family for integers and bool */
  enum rd__map map;
  enum rd__fin fin;
  int is_max; /* Max/ArgMax: 1; Min/ArgMin: 0 */
};

/* The row of `op`; NULL if unknown. */
const struct rd__op *rd__op_row(int op);

/* Kernel ids of the new families start here (below: kernels.c's ids). */
#define RD__K_OPS_BASE 1000

/* The kernel id for (op, dtype, select_last); -1 if none. */
int rd__op_kernel_id(int op, int dtype, int select_last);
/* The kernel of an id >= RD__K_OPS_BASE for the active implementation;
 * NULL if invalid. */
const struct rd__kernel *rd__op_kernel(int kernel_id);
/* ... of a given implementation (enum rd__impl); NULL if that
 * implementation is not available (tests compare implementations). */
const struct rd__kernel *rd__op_kernel_impl(int kernel_id, int impl);

/* Direct output (reduce.c's direct mode, [kept, reduced] shapes where every
 * output is one whole run): 1 if op on dtype is a float Prod or LogSumExp
 * or a float32 Max, Min, ArgMax or ArgMin, whose outputs rd__ops_rows_out()
 * writes as soon as their rows are reduced (no accumulator set, no final
 * pass). */
int rd__ops_direct(int op, int dtype);
struct rd__final;
/* The outputs (f->out_dtype elements at out) of nrows rows of n >= 1
 * elements at x for kernel k of a plan with rd__ops_direct(): the bits of
 * k->init(), k->rows() and rd__finalize(f) of each row, which is what the
 * accumulator path writes.  Short float32 rows use the vector helpers of
 * kernels_ops_avx2.c (Prod, LogSumExp) while the SIMD implementation is
 * active, and of kernels_keyrows.c (Max, Min, Arg) in the AVX-512 form. */
void rd__ops_rows_out(const struct rd__kernel *k, const struct rd__final *f,
                      void *out, const unsigned char *x, size_t n,
                      size_t nrows);

/* ------------------------------------------------------------------ */
/* Accumulators of the new families (finalize.c reads them)           */
/* ------------------------------------------------------------------ */

struct rd__acc_dd { /* RD__F_SUMDD */
  double hi, lo;    /* finite terms: hi + lo */
  double sp;        /* sum of the non-finite terms, or 0 */
};

struct rd__acc_lse { /* RD__F_LSE */
  double m;          /* the shift: the running maximum of the finite terms
                        (float32/16/bfloat16: lazy, within RD__LSE_K
                        below it, kernels_impl.h) */
  double hi, lo;     /* sum of exp(x - m), >= 1 once m is finite */
  uint32_t nan, posinf;
};

#define RD__LSE_D 80
struct rd__acc_ilse { /* RD__F_ILSE */
  __int128 m;
  uint64_t any;              /* elements seen */
  uint64_t dropped;          /* 1: some element was below m - RD__LSE_D */
  uint64_t n[RD__LSE_D + 1]; /* n[d]: elements equal to m - d */
};

struct rd__acc_prod { /* RD__F_PROD */
  double hi, lo;      /* mantissa, hi in [0.5, 1) */
  int64_t e;          /* binary exponent */
  uint32_t nan, inf, zero, neg;
};

struct rd__acc_iprod {   /* RD__F_IPROD */
  unsigned __int128 mag; /* |product| while it fits */
  uint64_t wrap;         /* product mod 2^64 */
  uint32_t zero, neg, over;
};

struct rd__acc_key { /* RD__F_MAXMIN */
  int64_t key;
  uint64_t nan;
};

struct rd__acc_arg { /* RD__F_ARG */
  int64_t key;
  int64_t idx;   /* index of the best key */
  int64_t count; /* elements seen */
  int64_t nan;   /* index of the chosen NaN, or -1 */
};

/* Total-order key of a float value: -0 < +0; NaN must be tested first. */
static inline int64_t rd__fkey(double v)
{
  int64_t k;
  __builtin_memcpy(&k, &v, sizeof k);
  return k < 0 ? k ^ INT64_MAX : k;
}

static inline double rd__fkey_value(int64_t k)
{
  double v;
  if (k < 0)
    k ^= INT64_MAX;
  __builtin_memcpy(&v, &k, sizeof v);
  return v;
}

/* ------------------------------------------------------------------ */
/* Finalisation (finalize.c)                                          */
/* ------------------------------------------------------------------ */

struct rd__final {
  int op, dtype, out_dtype, overflow, family;
  int acc_class; /* enum rd__acc_class of the plan's kernel */
  const struct rd__op *row;
  uint64_t count; /* elements reduced into each output */
};

/* Writes output element o (out_dtype) from accumulator `acc`.  Returns 0,
 * RD_E_OVERFLOW or RD_E_UNDEFINED with `err` filled. */
int rd__finalize(const struct rd__final *f, const void *acc, void *dst,
                 uint64_t o, struct rd_error *err);

/* The integer output of value v (exact) under the plan's overflow policy;
 * `over` says v is only known to be beyond 128 bits (then `neg` gives its
 * sign and `wrap` its low 64 bits). */
int rd__int_out(const struct rd__final *f, __int128 v, int over, int neg,
                uint64_t wrap, void *dst, uint64_t o, struct rd_error *err);

/* Fills `err` (if not NULL) with `code` and a printf-style message;
 * returns `code` (optable.c; the one error helper of the library). */
int rd__set_err(struct rd_error *err, int code, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));

#endif /* OPS_H */
