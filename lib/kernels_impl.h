/* kernels_impl.h - pieces shared by the kernel implementations (kernels.c,
 * the portable path, kernels_avx2.c and kernels_avx512.c); private to those
 * files.
 *
 * The helpers here define the per-element operations of the summation order
 * documented in kernels.h, so every implementation that uses them for its
 * heads, tails and fallbacks gives the same bits.
 */
#ifndef KERNELS_IMPL_H
#define KERNELS_IMPL_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "expk.h"
#include "kernels.h"

#define L RD__LANES

/* Blue's thresholds and power-of-two scales (exact scalings). */
#define BLUE_BIG 0x1p480
#define BLUE_SMALL 0x1p-480
#define BLUE_DOWN 0x1p-600
#define BLUE_UP 0x1p600

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* Element loads (memcpy: stream chunks can be arbitrarily aligned)    */
/* ------------------------------------------------------------------ */

static inline double ld_f32(const unsigned char *p)
{
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* Exact float16 widening of |x| (only squares are needed, so the sign is
 * dropped), branch-free in 32-bit lanes so the loops vectorise: re-bias the
 * exponent into a float (inf/NaN keep their payload), subnormals are
 * m * 2^-24; float -> double is exact.  Its square
 * equals that of rd_f16_to_f64() for every pattern (tested). */
static inline double ld_f16(const unsigned char *p)
{
  uint16_t h;
  uint32_t e, m, nbits, sbits, zero;
  float sub, f;
  memcpy(&h, p, sizeof h);
  e = ((uint32_t)h >> 10) & 0x1f;
  m = (uint32_t)h & 0x3ff;
  /* float exponent e - 15 + 127, or 255 for e == 31 (31 + 112 + 112) */
  nbits = ((e + 112 + (uint32_t)(e == 31) * 112) << 23) | (m << 13);
  sub = (float)(int32_t)m * 0x1p-24f;
  memcpy(&sbits, &sub, sizeof sbits);
  zero = 0 - (uint32_t)(e == 0); /* all ones for zero/subnormal */
  nbits = (sbits & zero) | (nbits & ~zero);
  memcpy(&f, &nbits, sizeof f);
  return f;
}

/* bfloat16 is the top half of a float32: widening is a shift. */
static inline double ld_bf16(const unsigned char *p)
{
  uint16_t h;
  uint32_t u;
  float f;
  memcpy(&h, p, sizeof h);
  u = (uint32_t)h << 16;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline double ld_f64(const unsigned char *p)
{
  double v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* ------------------------------------------------------------------ */
/* Trees and compensated sums                                         */
/* ------------------------------------------------------------------ */

/* Fixed combination tree of the lanes: (k, k+8), then (k, k+4), ... */
static inline double tree(double *a)
{
  for (size_t w = L / 2; w >= 1; w /= 2)
    for (size_t k = 0; k < w; k++)
      a[k] += a[k + w];
  return a[0];
}

/* The same tree when only lanes < n can be non-zero: the levels that would
 * add +0 (an exact no-op, lane values are never -0) are skipped. */
static inline double tree_n(double *a, size_t n)
{
  size_t w = 1;
  while (w < n)
    w *= 2;
  for (w /= 2; w >= 1; w /= 2)
    for (size_t k = 0; k < w; k++)
      a[k] += a[k + w];
  return a[0];
}

/* Mid range, where x*x neither overflows nor loses bits to underflow.
 * Zero counts as mid so that blocks with zeros keep the fast path. */
static inline int is_mid(double a)
{
  return ((a >= BLUE_SMALL) & (a <= BLUE_BIG)) | (a == 0);
}

/* Kahan step.  y is a rounded product, so no implementation may fuse the
 * multiplication into the subtraction. */
static inline void kahan(double *s, double *c, double y)
{
  double t, u = y - *c;
  t = *s + u;
  *c = (t - *s) - u;
  *s = t;
}

/* Adds x^2 to the accumulator whose fields are at the given pointers.  Only
 * the field of x's class changes, so skipping absent classes (a fast path
 * for blocks that are all mid-range) gives the same bits. */
static inline void blue_add(double *bs, double *bc, double *ms, double *mc,
                            double *ss, double *sc, double *sp, double x)
{
  double a = fabs(x);
  if (is_mid(a)) {
    kahan(ms, mc, x * x);
  } else if (a < BLUE_SMALL) {
    double y = x * BLUE_UP;
    kahan(ss, sc, y * y);
  } else if (a <= DBL_MAX) {
    double y = x * BLUE_DOWN;
    kahan(bs, bc, y * y);
  } else {
    *sp += a; /* inf or NaN */
  }
}

/* blue_add() on lane k of a lane state. */
static inline void lane_blue_add(union rd__lanes *ln, size_t k, double v)
{
  blue_add(&ln->b.bs[k], &ln->b.bc[k], &ln->b.ms[k], &ln->b.mc[k], &ln->b.ss[k],
           &ln->b.sc[k], &ln->b.sp[k], v);
}

/* blue_add() on accumulator o. */
static inline void acc_blue_add(struct rd__blue *o, double v)
{
  blue_add(&o->bs, &o->bc, &o->ms, &o->mc, &o->ss, &o->sc, &o->sp, v);
}

/* ------------------------------------------------------------------ */
/* Integer kernels, instantiated by each implementation               */
/* ------------------------------------------------------------------ */

/* |x| as uint32 (|INT32_MIN| = 2^31 fits), then a 32x32->64 unsigned
 * product, which SSE2 has (pmuludq). */
static inline uint64_t sq_i32(const unsigned char *p)
{
  int32_t v;
  uint32_t a;
  memcpy(&v, p, sizeof v);
  a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
  return (uint64_t)a * a;
}

static inline uint64_t sq_u32(const unsigned char *p)
{
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return (uint64_t)v * v;
}

/* Prefetch for the streaming integer loops (see kernels_avx2.c). */
#if defined(__GNUC__)
#define RD__PREFETCH(p) __builtin_prefetch((const char *)(p) + 2048)
#else
#define RD__PREFETCH(p) ((void)(p))
#endif

/* Each half is < 2^32, so 2^31 elements per block cannot overflow a lane. */
#define BLOCK32 ((size_t)1 << 31)
#define L32 8

/* The 32-bit integer squares kernels, templates instantiated by each
 * implementation (I32_RUN, I32_COLS, I32_ROWS below make the thin
 * per-type functions).  Integer sums are exact, so any grouping gives the
 * same result. */
typedef uint64_t (*sq32_fn)(const unsigned char *p);

static inline __attribute__((always_inline)) void
i32_run(union rd__lanes *ln, const unsigned char *x, size_t n, sq32_fn sq)
{
  while (n > 0) {
    size_t m = n < BLOCK32 ? n : BLOCK32, i = 0;
    uint64_t lo[L32] = { 0 }, hi[L32] = { 0 };
    u128 t = 0;
    for (; i + L32 <= m; i += L32) {
      if (i % 16 == 0)
        RD__PREFETCH(x + i * 4);
      for (size_t l = 0; l < L32; l++) {
        uint64_t q = sq(x + (i + l) * 4);
        lo[l] += q & 0xffffffffu;
        hi[l] += q >> 32;
      }
    }
    for (; i < m; i++)
      t += sq(x + i * 4);
    for (size_t l = 0; l < L32; l++)
      t += ((u128)hi[l] << 32) + lo[l];
    ln->w.lo += t;
    x += m * 4;
    n -= m;
  }
}

/* Four rows at a time: one read-modify-write of each u128 per four rows
 * (a sum of four squares < 2^66 fits the u128 temporary). */
static inline __attribute__((always_inline)) void
i32_cols(void *acc, const unsigned char *x, size_t n, size_t nrows, sq32_fn sq)
{
  u128 *o = acc;
  const size_t rs = n * 4;
  size_t r = 0;
  for (; r + 4 <= nrows; r += 4, x += 4 * rs)
    for (size_t i = 0; i < n; i++) {
      const unsigned char *p = x + i * 4;
      if (i % 16 == 0) {
        RD__PREFETCH(p);
        RD__PREFETCH(p + rs);
        RD__PREFETCH(p + 2 * rs);
        RD__PREFETCH(p + 3 * rs);
      }
      u128 a = (u128)sq(p) + sq(p + rs),
           b = (u128)sq(p + 2 * rs) + sq(p + 3 * rs);
      o[i] += a + b;
    }
  for (; r < nrows; r++, x += rs)
    for (size_t i = 0; i < n; i++)
      o[i] += sq(x + i * 4);
}

static inline __attribute__((always_inline)) void
i32_rows(void *acc, const unsigned char *x, size_t n, size_t nrows, sq32_fn sq)
{
  u128 *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 4) {
    if (n <= L) {
      u128 t = 0;
      for (size_t i = 0; i < n; i++)
        t += sq(x + i * 4);
      o[r] += t;
    } else {
      union rd__lanes ln;
      memset(&ln.w, 0, sizeof ln.w);
      i32_run(&ln, x, n, sq);
      o[r] += ln.w.lo;
    }
  }
}

#define I32_RUN(name, sq)                                                      \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    i32_run(ln, x, n, sq);                                                     \
  }
#define I32_COLS(name, sq)                                                     \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    i32_cols(acc, x, n, nrows, sq);                                            \
  }
#define I32_ROWS(name, sq)                                                     \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    i32_rows(acc, x, n, nrows, sq);                                            \
  }

/* ------------------------------------------------------------------ */
/* Shared out-of-line pieces (kernels.c)                              */
/* ------------------------------------------------------------------ */

void rd__flush_d(union rd__lanes *ln, void *acc);
void rd__flush_f64(union rd__lanes *ln, void *acc);
void rd__flush_u128(union rd__lanes *ln, void *acc);
/* rows() of float64 for n <= L (no lane state needed). */
void rd__rows_f64_short(void *acc, const unsigned char *x, size_t n,
                        size_t nrows);

/* Overrides the entries of `tab` (a copy of the portable table) that
 * kernels_avx2.c specialises.  Returns 0, or -1 when the build has no x86-64
 * SIMD path (the caller checks the CPU). */
int rd__kernels_avx2_fill(struct rd__kernel *tab);
/* The term of a row element in rd__rows_out()'s vector forms: x^2 (the
 * squares kernels), x or |x| (ops.c's RD__F_SUMD Sum and L1 kernels). */
enum { RD__TERM_SQ, RD__TERM_X, RD__TERM_ABS };

/* The final double value of a double class row sum v of n elements under
 * `fin` (enum rd__out_fin): what finalize.c does for RD__F_SQ and
 * RD__F_SUMD (libm sqrt and log, one correctly rounded division). */
static inline double rd__fin_value(double v, int fin, size_t n)
{
  switch (fin) {
  case RD__OUT_SQRT: return sqrt(v);
  case RD__OUT_MEAN: return v / (double)n;
  case RD__OUT_LOG: return log(v);
  default: return v;
  }
}

/* rd__rows_out() of a SIMD path's kernels of dtype float32, float16,
 * bfloat16 (term RD__TERM_*) or float64 (squares only, fin RD__OUT_SUM or
 * RD__OUT_SQRT) for rows of n <= RD__LANES: four rows per vector step
 * (AVX2), or eight (rd__rows512_out, kernels_rows512.c; AVX-512 F, BW, VL,
 * DQ), the same bits.  Each returns 0, or -1 (nothing written) for any
 * other dtype, term, fin or n.  The caller checks that the kernel is such
 * a kernel of a SIMD path the CPU has (kernels.c). */
int rd__avx2_rows_out(int dtype, int term, void *out, const unsigned char *x,
                      size_t n, size_t nrows, int fin);
int rd__rows512_out(int dtype, int term, void *out, const unsigned char *x,
                    size_t n, size_t nrows, int fin);
/* count double class accumulators acc[i] (each the sum of n terms, from
 * +0) as outputs of dtype float32, float16 or bfloat16: the bits of
 * rd__float_store(dtype, rd__fin_value(acc[i], fin, n)), eight per vector
 * step (AVX-512, kernels_rows512.c; the caller checks the CPU).  0, or -1
 * (nothing written) for any other dtype or fin. */
int rd__rows512_store(int dtype, int fin, size_t n, const double *acc,
                      void *out, size_t count);
/* d[i] = log(d[i]) for i < n (AVX-512; kernels_rows512.c), bit for bit
 * as libm's log once rounded to float32, float16 or bfloat16 (not as a
 * double): a vector log, and libm's for any d[i] that is not a positive
 * normal number or whose log lies within ulps + 1 units in the last place
 * of a number of 25 significant bits.  ulps must bound the vector log's
 * error (LOG_ULPS there); tests pass others. */
void rd__rows512_log_narrow(double *d, size_t n, unsigned ulps);
/* Sets run/cols/rows of `k` to the AVX2 Sum (absval 0) or L1 (1) kernels
 * of RD__F_SUMD for dtype float32 (1), float16 (10) or bfloat16 (16).
 * Returns 0, or -1 without a SIMD path (the caller checks the CPU). */
int rd__kernels_avx2_sum(int dtype, int absval, struct rd__kernel *k);
/* The same for kernels_avx512.c: `tab` is a copy of the AVX2 table (its
 * rows() stay in use for short rows), and the Sum/L1 kernels. */
int rd__kernels_avx512_fill(struct rd__kernel *tab);
int rd__kernels_avx512_sum(int dtype, int absval, struct rd__kernel *k);
/* The best (largest or smallest) 32-bit total-order key of n float32
 * elements, NaNs excluded and reported in *nan; zero_tie maps -0 to +0.
 * Only while the SIMD implementation is active. */
int32_t rd__avx2_best32(const unsigned char *x, size_t n, int is_max,
                        int zero_tie, int *nan);
/* float32 Max/Min/ArgMax/ArgMin over a tile of columns (ops.c's
 * cols32_tile, which documents the state); ncols a multiple of 8. */
enum {
  RD__C32_MAX,
  RD__C32_MIN,
  RD__C32_ARGMAX,
  RD__C32_ARGMAXL,
  RD__C32_ARGMIN,
  RD__C32_ARGMINL
};
void rd__avx2_cols32(const unsigned char *x, size_t stride, size_t ncols,
                     size_t nrows, int mode, int32_t *best, int32_t *bidx,
                     int32_t *nidx);
/* nrows rows of n float32 elements (n 8, 16, 24 or 32), one result per
 * row in best[r], bidx[r], nidx[r] (ops.c's rows32s_*). */
void rd__avx2_rows32(const unsigned char *x, size_t n, size_t nrows, int mode,
                     int32_t *best, int32_t *bidx, int32_t *nidx);
/* float32 Prod lanes (ops.c's prodl_run): up to nblocks blocks of 16
 * elements, each lane l's mantissa m[l] multiplied by |x| and its
 * exponent moved into e[l], *neg ^= parity of the sign bits; stops before
 * the first block holding a zero, inf or NaN.  Returns the blocks done. */
size_t rd__avx2_prod_f32(double *m, int64_t *e, const unsigned char *x,
                         size_t nblocks, uint32_t *neg);
/* float32 Prod columns (ops.c's cols32s_prod): one row segment of nvec
 * groups of 4 columns into the column state arrays; stops before a group
 * holding a zero, inf or NaN.  Returns the groups done. */
size_t rd__avx2_prod_cols_f32(double *hi, double *lo, int64_t *e, int64_t *neg,
                              const unsigned char *x, size_t nvec);
/* float32/float16/bfloat16 LogSumExp keeps its shift lazily: the lanes of
 * a run (ops.c's lsel_elem, one shift for the 16) and each column (ops.c's
 * lsec_add) take their first finite element as the shift m, and move it
 * (rescaling the sums) only to an x > m + RD__LSE_K, so every term is
 * e^(x - m) <= e^64.  With m the exact running maximum, every new maximum
 * rescaled: a part's columns start empty, and a vector of 8 columns met
 * one in about a quarter of its first 128 rows (cases C and D of the
 * bench took twice as long); a row of 256 (case E) replayed about 3 of
 * its 16 blocks in order, a row of 16 (case F) up to 120 rescales.
 *
 * Why 64: the shift moves only where a reduction's finite elements span
 * more than K, and each move is a rescale on the slow path (with K = 16,
 * data uniform in [-10, 10) moved it in a fifth of the rows of 256 and a
 * seventh of the rows of 16: E and F took 1.12x and 1.17x the time they
 * take with 64).  A larger K costs accuracy only through expk()'s
 * |t| term: a term's relative error is below 2.5e-16 + 3.4e-17 * 64 =
 * 2.4e-15 (expk.h), far inside the 2^-44 (1 + |m|) of reduce.h's bound;
 * e^64 times any element count cannot overflow a double. */
#define RD__LSE_K 64.0

/* float32 LogSumExp columns (ops.c's colsks_lse_f32): one row segment of
 * nvec groups of 4 columns into the column state arrays; stops before a
 * group holding a NaN or an infinity.  Returns the groups done. */
size_t rd__avx2_lse_cols_f32(double *m, double *hi, double *lo,
                             const unsigned char *x, size_t nvec);
/* s[l] += expk(x[l] - m) for the 16 float32/float16/bfloat16 (dt 1, 2, 3)
 * elements at x, when none is NaN or +inf or above m + RD__LSE_K; returns
 * 0, else 1 with s untouched (the caller then goes element by element). */
int rd__avx2_lse16(double *s, const unsigned char *x, int dt, double m);

#endif /* KERNELS_IMPL_H */
