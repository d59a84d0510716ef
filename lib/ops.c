/* ops.c - the operator table and the kernels of the new families (see
 * ops.h for the families and their accumulators, kernels.h for the kernel
 * contract).
 *
 * Each family is a set of static inline bodies (element add, merge, empty
 * state) parameterised by the element type and variant; the per-type
 * kernels are thin instantiations of them, so every kernel is an ordinary
 * function a debugger and ctags can see.
 *
 * Order: RD__F_SUMD follows the lane order of kernels.h (element j of a run
 * segment to lane j % 16, lanes combined in the fixed tree at the end of
 * the segment); every other family accumulates in element order into one
 * state per output, so run() over [0, n) equals run() over [0, m) then
 * [m, n), and rows() equals run() from the empty state then flush().  The
 * integer families, Max, Min and the Arg families are exact, so for them no
 * order matters at all.
 *
 * This file depends only on the kernel interface (kernels.h,
 * kernels_impl.h), f16 widening and libm.
 */
#include "ops.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "kernels_impl.h"
#include "kernels_ops.h"

typedef __int128 i128;

/* ------------------------------------------------------------------ */
/* The operator table                                                 */
/* ------------------------------------------------------------------ */

/* Indexed by op - 1: families for floats, float64, integers; element map;
 * finalisation; max (1) or min (0). */
/* One row per operator, a column per field. */
/* clang-format off */
static const struct rd__op op_rows[RD_OP_COUNT] = {
  /* op                 floats        float64       integers      map             finalise      max */
  {RD_OP_L2,            RD__F_SQ,     RD__F_SQ,     RD__F_SQ,     RD__MAP_SQUARE, RD__FIN_SQRT, 0},
  {RD_OP_SUM_SQUARE,    RD__F_SQ,     RD__F_SQ,     RD__F_SQ,     RD__MAP_SQUARE, RD__FIN_SUM,  0},
  {RD_OP_SUM,           RD__F_SUMD,   RD__F_SUMDD,  RD__F_ISUM,   RD__MAP_ID,     RD__FIN_SUM,  0},
  {RD_OP_MEAN,          RD__F_SUMD,   RD__F_SUMDD,  RD__F_ISUM,   RD__MAP_ID,     RD__FIN_MEAN, 0},
  {RD_OP_MAX,           RD__F_MAXMIN, RD__F_MAXMIN, RD__F_MAXMIN, RD__MAP_ID,     RD__FIN_MAX,  1},
  {RD_OP_MIN,           RD__F_MAXMIN, RD__F_MAXMIN, RD__F_MAXMIN, RD__MAP_ID,     RD__FIN_MIN,  0},
  {RD_OP_PROD,          RD__F_PROD,   RD__F_PROD,   RD__F_IPROD,  RD__MAP_ID,     RD__FIN_PROD, 0},
  {RD_OP_L1,            RD__F_SUMD,   RD__F_SUMDD,  RD__F_ISUM,   RD__MAP_ABS,    RD__FIN_SUM,  0},
  {RD_OP_LOG_SUM,       RD__F_SUMD,   RD__F_SUMDD,  RD__F_ISUM,   RD__MAP_ID,     RD__FIN_LOG,  0},
  {RD_OP_LOG_SUM_EXP,   RD__F_LSE,    RD__F_LSE,    RD__F_ILSE,   RD__MAP_ID,     RD__FIN_LSE,  0},
  {RD_OP_ARGMAX,        RD__F_ARG,    RD__F_ARG,    RD__F_ARG,    RD__MAP_ID,     RD__FIN_ARG,  1},
  {RD_OP_ARGMIN,        RD__F_ARG,    RD__F_ARG,    RD__F_ARG,    RD__MAP_ID,     RD__FIN_ARG,  0},
};
/* clang-format on */

const struct rd__op *rd__op_row(int op)
{
  if (op < 1 || op > RD_OP_COUNT)
    return NULL;
  return &op_rows[op - 1];
}

/* ------------------------------------------------------------------ */
/* Element loads                                                      */
/* ------------------------------------------------------------------ */

static inline int dt_float(int dt)
{
  return dt == RD_FLOAT32 || dt == RD_FLOAT64 || dt == RD_FLOAT16 ||
         dt == RD_BFLOAT16;
}

static inline size_t dt_size(int dt)
{
  switch (dt) {
  case RD_INT8:
  case RD_UINT8:
  case RD_BOOL: return 1;
  case RD_INT16:
  case RD_UINT16:
  case RD_FLOAT16:
  case RD_BFLOAT16: return 2;
  case RD_INT32:
  case RD_UINT32:
  case RD_FLOAT32: return 4;
  default: return 8;
  }
}

/* Signed float16 widening (exact), branch-free like ld_f16(). */
static inline double ld_f16s(const unsigned char *p)
{
  uint16_t h;
  double a = ld_f16(p);
  memcpy(&h, p, sizeof h);
  return (h & 0x8000) ? -a : a;
}

static inline double ld_bf16s(const unsigned char *p)
{
  return ld_bf16(p); /* a shift: the sign is kept */
}

/* The value of a float element, exactly, as a double. */
static inline double ldd(int dt, const unsigned char *p)
{
  switch (dt) {
  case RD_FLOAT32: return ld_f32(p);
  case RD_FLOAT16: return ld_f16s(p);
  case RD_BFLOAT16: return ld_bf16s(p);
  default: return ld_f64(p);
  }
}

/* The value of an integer (or bool) element. */
static inline i128 ldi(int dt, const unsigned char *p)
{
  switch (dt) {
  case RD_INT8: {
    int8_t v;
    memcpy(&v, p, 1);
    return v;
  }
  case RD_UINT8:
  case RD_BOOL: return *p;
  case RD_INT16: {
    int16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case RD_UINT16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
  }
  case RD_INT32: {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  case RD_UINT32: {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  case RD_INT64: {
    int64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  default: {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
  }
  }
}

/* Total-order key of an element (see rd__fkey); *nan set for float NaN.
 * With `zero_tie`, -0 gets the key of +0 (ArgMax/ArgMin: a tie). */
static inline int64_t ldkey(int dt, const unsigned char *p, int *nan,
                            int zero_tie)
{
  if (dt_float(dt)) {
    double v = ldd(dt, p);
    *nan = isnan(v);
    if (zero_tie && v == 0)
      v = 0.0;
    return rd__fkey(v);
  }
  *nan = 0;
  if (dt == RD_UINT64) {
    uint64_t u;
    memcpy(&u, p, 8);
    return (int64_t)(u ^ ((uint64_t)1 << 63));
  }
  return (int64_t)ldi(dt, p);
}

/* ------------------------------------------------------------------ */
/* Double-double helpers                                              */
/* ------------------------------------------------------------------ */

/* The merges and flushes of the float LogSumExp and Prod states call fma()
 * (dd_mul, expk, prod_merge) once or more each; in this file, built for
 * any x86-64, each is a libm call.  FMA_DISPATCH(name, T1, T2) makes
 * name(T1, T2) out of the always-inlined name_body(): a copy built for FMA,
 * taken where the kernels are AVX2 or wider (which implies FMA), and a
 * plain one.  fma() is exact, so both give the same bits.  (Case C of the
 * bench merges 64 x 8192 column states: LogSumExp 0.90-0.97x the time.)
 * Not target_clones: its ifunc resolver runs before ThreadSanitizer's
 * runtime is up, and the programs crashed at start under TSan. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__FMA__)
#define FMA_DISPATCH(name, T1, T2)                                             \
  __attribute__((target("fma"))) static void name##_fma(T1 a, T2 b)            \
  {                                                                            \
    name##_body(a, b);                                                         \
  }                                                                            \
  static void name##_plain(T1 a, T2 b)                                         \
  {                                                                            \
    name##_body(a, b);                                                         \
  }                                                                            \
  static void name(T1 a, T2 b)                                                 \
  {                                                                            \
    if (rd__kernels_active() >= RD__IMPL_AVX2)                                 \
      name##_fma(a, b);                                                        \
    else                                                                       \
      name##_plain(a, b);                                                      \
  }
#else
#define FMA_DISPATCH(name, T1, T2)                                             \
  static void name(T1 a, T2 b)                                                 \
  {                                                                            \
    name##_body(a, b);                                                         \
  }
#endif
#define BODY __attribute__((always_inline)) static inline

/* s + e = a + b exactly (Knuth). */
__attribute__((always_inline)) static inline void two_sum(double a, double b,
                                                          double *s, double *e)
{
  double t = a + b, bb = t - a;
  *e = (a - (t - bb)) + (b - bb);
  *s = t;
}

/* s + e = a + b exactly when |a| >= |b| (Dekker). */
__attribute__((always_inline)) static inline void
fast_two_sum(double a, double b, double *s, double *e)
{
  double t = a + b;
  *e = b - (t - a);
  *s = t;
}

/* (hi, lo) += v, v finite. */
__attribute__((always_inline)) static inline void dd_add(double *hi, double *lo,
                                                         double v)
{
  double s, e;
  two_sum(*hi, v, &s, &e);
  *hi = s;
  *lo += e;
}

/* (hi, lo) *= f, renormalised. */
__attribute__((always_inline)) static inline void dd_mul(double *hi, double *lo,
                                                         double f)
{
  double p = *hi * f, e = fma(*hi, f, -p);
  e += *lo * f;
  fast_two_sum(p, e, hi, lo);
}

/* ------------------------------------------------------------------ */
/* RD__F_SUMD: double lanes (float32, float16, bfloat16)              */
/* ------------------------------------------------------------------ */

static inline double sumd_term(int dt, int absval, const unsigned char *p)
{
  double v = ldd(dt, p);
  return absval ? fabs(v) : v;
}

/* The lane order of kernels.h: head up to lane 0, blocks of L, tail. */
static inline void sumd_run(union rd__lanes *ln, const unsigned char *x,
                            size_t n, uint64_t pos, int dt, int absval)
{
  const size_t esz = dt_size(dt);
  size_t k = (size_t)(pos % L), i = 0;
  double a[L];
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    ln->d[k] += sumd_term(dt, absval, x + i * esz);
  memcpy(a, ln->d, sizeof a);
  for (; i + L <= n; i += L)
    for (size_t l = 0; l < L; l++)
      a[l] += sumd_term(dt, absval, x + (i + l) * esz);
  for (size_t l = 0; i < n; i++, l++)
    a[l] += sumd_term(dt, absval, x + i * esz);
  memcpy(ln->d, a, sizeof a);
}

static inline void sumd_cols(void *acc, const unsigned char *x, size_t n,
                             size_t nrows, int dt, int absval)
{
  const size_t esz = dt_size(dt);
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz)
    for (size_t i = 0; i < n; i++)
      o[i] += sumd_term(dt, absval, x + i * esz);
}

static inline void sumd_rows(void *acc, const unsigned char *x, size_t n,
                             size_t nrows, int dt, int absval)
{
  const size_t esz = dt_size(dt);
  double *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * esz) {
    union rd__lanes ln;
    memset(ln.d, 0, sizeof ln.d);
    sumd_run(&ln, x, n, 0, dt, absval);
    rd__flush_d(&ln, &o[r]);
  }
}

#define SUMD_KERNEL(name, dt, absval)                                          \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    sumd_run(ln, x, n, pos, dt, absval);                                       \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    sumd_cols(acc, x, n, nrows, dt, absval);                                   \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    sumd_rows(acc, x, n, nrows, dt, absval);                                   \
  }

SUMD_KERNEL(sum_f32, RD_FLOAT32, 0)
SUMD_KERNEL(sum_f16, RD_FLOAT16, 0)
SUMD_KERNEL(sum_bf16, RD_BFLOAT16, 0)
SUMD_KERNEL(abs_f32, RD_FLOAT32, 1)
SUMD_KERNEL(abs_f16, RD_FLOAT16, 1)
SUMD_KERNEL(abs_bf16, RD_BFLOAT16, 1)

/* ------------------------------------------------------------------ */
/* Sequential families: element add, merge, empty state               */
/* ------------------------------------------------------------------ */

/* RD__F_SUMDD: float64 sums. */
static inline void dd_elem(struct rd__acc_dd *a, double v)
{
  double s, e;
  if (!isfinite(v)) {
    a->sp += v;
    return;
  }
  two_sum(a->hi, v, &s, &e);
  if (!isfinite(s)) {
    /* The running sum left the double range: only the infinity is kept. */
    a->sp += s;
    return;
  }
  a->hi = s;
  a->lo += e;
}

static inline void sumdd_add(void *acc, const unsigned char *p, int absval)
{
  double v = ld_f64(p);
  dd_elem(acc, absval ? fabs(v) : v);
}

static void sumdd_merge(void *dst, const void *src)
{
  struct rd__acc_dd *d = dst;
  const struct rd__acc_dd *s = src;
  dd_elem(d, s->hi);
  d->lo += s->lo;
  d->sp += s->sp;
}

/* RD__F_ISUM: exact integer sums (|sum| < 2^125: fewer than 2^61 elements
 * of at most 2^64). */
static inline void isum_add(void *acc, const unsigned char *p, int dt,
                            int absval)
{
  i128 v = ldi(dt, p), *a = acc;
  *a += absval && v < 0 ? -v : v;
}

static void isum_merge(void *dst, const void *src)
{
  i128 a, b;
  memcpy(&a, dst, sizeof a);
  memcpy(&b, src, sizeof b);
  a += b;
  memcpy(dst, &a, sizeof a);
}

/* RD__F_LSE: float LogSumExp. */
static void lse_init(void *acc, size_t count)
{
  struct rd__acc_lse *a = acc;
  for (size_t i = 0; i < count; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].m = -INFINITY;
  }
}

/* Adds exp(m2 - m) * (hi2 + lo2) (m2 finite) to the state.  Always
 * inlined: `ex` is then a direct call, and inside the FMA copies of
 * FMA_DISPATCH its fma()s are instructions. */
__attribute__((always_inline)) static inline void
lse_fold_e(struct rd__acc_lse *a, double m2, double hi2, double lo2,
           double (*ex)(double))
{
  if (m2 > a->m) {
    if (a->m == -INFINITY) {
      a->hi = 0;
      a->lo = 0;
    } else {
      dd_mul(&a->hi, &a->lo, ex(a->m - m2));
    }
    a->m = m2;
    dd_add(&a->hi, &a->lo, hi2);
    a->lo += lo2;
  } else if (m2 == a->m) {
    dd_add(&a->hi, &a->lo, hi2);
    a->lo += lo2;
  } else {
    double f = ex(m2 - a->m), h = hi2, l = lo2;
    dd_mul(&h, &l, f);
    dd_add(&a->hi, &a->lo, h);
    a->lo += l;
  }
}

__attribute__((always_inline)) static inline void
lse_fold(struct rd__acc_lse *a, double m2, double hi2, double lo2)
{
  lse_fold_e(a, m2, hi2, lo2, exp);
}

static inline void lse_add(void *acc, const unsigned char *p, int dt)
{
  struct rd__acc_lse *a = acc;
  double v = ldd(dt, p);
  if (isnan(v))
    a->nan = 1;
  else if (v == INFINITY)
    a->posinf = 1;
  else if (v != -INFINITY)
    lse_fold(a, v, 1.0, 0.0);
}

/* The element step of the float32/float16/bfloat16 LogSumExp cols(): a
 * column sums e^(x - m) in double (hi; lo only scaled), and its shift m is
 * lazy (kernels_impl.h, RD__LSE_K): it moves only to an x > m +
 * RD__LSE_K, which rescales the sum, so every term is at most e^64.  A
 * column sums as one lane of run() does; from the empty state one element
 * gives what run() of it and flush() give (m = x, sum 1).  expk()
 * (expk.h) for exp, as everywhere in these types; the vector forms are in
 * kernels_avx2.c and kernels_ops_avx2.c. */
static inline void lsec_add(struct rd__acc_lse *a, const unsigned char *p,
                            int dt)
{
  double v = ldd(dt, p);
  if (isnan(v)) {
    a->nan = 1;
  } else if (v == INFINITY) {
    a->posinf = 1;
  } else if (v == -INFINITY) {
    /* e^-inf: nothing */
  } else if (v > a->m + RD__LSE_K) { /* also from empty: expk(-inf) = 0 */
    double e = expk(a->m - v);
    a->hi = a->hi * e + 1.0;
    a->lo *= e;
    a->m = v;
  } else {
    a->hi += expk(v - a->m);
  }
}

BODY void lse_merge_body(void *dst, const void *src)
{
  struct rd__acc_lse *d = dst;
  const struct rd__acc_lse *s = src;
  d->nan |= s->nan;
  d->posinf |= s->posinf;
  if (s->m != -INFINITY)
    lse_fold(d, s->m, s->hi, s->lo);
}
FMA_DISPATCH(lse_merge, void *, const void *)

/* RD__F_ILSE: integer LogSumExp, exact counts. */
static inline void ilse_shift(struct rd__acc_ilse *a, i128 m)
{
  i128 delta = m - a->m;
  assert(delta > 0);
  for (int d = RD__LSE_D; d >= 0; d--) {
    if (d + delta <= RD__LSE_D)
      a->n[d + delta] = a->n[d];
    else if (a->n[d] != 0)
      a->dropped = 1;
    a->n[d] = 0;
  }
  a->m = m;
}

static inline void ilse_count(struct rd__acc_ilse *a, i128 v, uint64_t c)
{
  i128 d = a->m - v;
  if (d <= RD__LSE_D)
    a->n[d] += c;
  else
    a->dropped = 1;
}

static inline void ilse_add(void *acc, const unsigned char *p, int dt)
{
  struct rd__acc_ilse *a = acc;
  i128 v = ldi(dt, p);
  if (a->any == 0) {
    a->m = v;
  } else if (v > a->m) {
    ilse_shift(a, v);
  }
  ilse_count(a, v, 1);
  a->any++;
}

static void ilse_merge(void *dst, const void *src)
{
  struct rd__acc_ilse *d = dst;
  const struct rd__acc_ilse *s = src;
  if (s->any == 0)
    return;
  if (d->any == 0) {
    memcpy(d, s, sizeof *d);
    return;
  }
  if (s->m > d->m)
    ilse_shift(d, s->m);
  for (int k = 0; k <= RD__LSE_D; k++)
    if (s->n[k] != 0)
      ilse_count(d, s->m - k, s->n[k]);
  d->dropped |= s->dropped;
  d->any += s->any;
}

/* RD__F_PROD: float products with exponent tracking. */
static void prod_init(void *acc, size_t count)
{
  struct rd__acc_prod *a = acc;
  for (size_t i = 0; i < count; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].hi = 0.5; /* 1 = 0.5 * 2^1, normalised like every other state */
    a[i].e = 1;
  }
}

/* Keeps hi in [0.5, 1): the representation of a value is unique, so
 * merging the empty state changes no bit. */
static inline void prod_norm(struct rd__acc_prod *a)
{
  /* hi is the rounded product of two mantissas in [0.5, 1) plus its error
   * term, so it lies in [0.25, 1], a normal double, and ex is -1, 0 or 1:
   * frexp() by bit operations, and ldexp(lo, -ex) is the exact scaling of
   * lo (0, or at least 2^-110 in magnitude) by 2^-ex. */
  uint64_t b, s;
  int64_t ex;
  double sc;
  memcpy(&b, &a->hi, sizeof b);
  ex = (int64_t)((b >> 52) & 0x7ff) - 1022;
  b = (b & ~((uint64_t)0x7ff << 52)) | ((uint64_t)1022 << 52);
  memcpy(&a->hi, &b, sizeof b);
  s = (uint64_t)(1023 - ex) << 52;
  memcpy(&sc, &s, sizeof sc);
  a->lo *= sc;
  a->e += ex;
}

static inline void prod_add(void *acc, const unsigned char *p, int dt)
{
  struct rd__acc_prod *a = acc;
  double v = ldd(dt, p);
  int ex;
  if (isnan(v)) {
    a->nan = 1;
    return;
  }
  a->neg ^= signbit(v) != 0;
  if (isinf(v)) {
    a->inf = 1;
  } else if (v == 0) {
    a->zero = 1;
  } else {
    double f = frexp(fabs(v), &ex);
    a->e += ex;
    dd_mul(&a->hi, &a->lo, f);
    prod_norm(a);
  }
}

BODY void prod_merge_body(void *dst, const void *src)
{
  struct rd__acc_prod *d = dst;
  const struct rd__acc_prod *s = src;
  double p, e;
  d->nan |= s->nan;
  d->inf |= s->inf;
  d->zero |= s->zero;
  d->neg ^= s->neg;
  d->e += s->e;
  p = d->hi * s->hi;
  e = fma(d->hi, s->hi, -p);
  e += d->hi * s->lo + d->lo * s->hi;
  fast_two_sum(p, e, &d->hi, &d->lo);
  prod_norm(d);
}
FMA_DISPATCH(prod_merge, void *, const void *)

/* RD__F_IPROD: exact integer products. */
static void iprod_init(void *acc, size_t count)
{
  struct rd__acc_iprod *a = acc;
  for (size_t i = 0; i < count; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].mag = 1;
    a[i].wrap = 1;
  }
}

static inline void iprod_mul(struct rd__acc_iprod *a, unsigned __int128 m)
{
  if (!a->over && __builtin_mul_overflow(a->mag, m, &a->mag))
    a->over = 1;
}

static inline void iprod_add(void *acc, const unsigned char *p, int dt)
{
  struct rd__acc_iprod *a = acc;
  i128 v = ldi(dt, p);
  a->wrap *= (uint64_t)v;
  if (v == 0) {
    a->zero = 1;
    return;
  }
  a->neg ^= v < 0;
  iprod_mul(a, (unsigned __int128)(v < 0 ? -v : v));
}

static void iprod_merge(void *dst, const void *src)
{
  struct rd__acc_iprod *d = dst;
  const struct rd__acc_iprod *s = src;
  d->wrap *= s->wrap;
  d->zero |= s->zero;
  d->neg ^= s->neg;
  d->over |= s->over;
  iprod_mul(d, s->mag);
}

/* RD__F_MAXMIN.  The empty state is the key of the empty-set value. */
static inline int64_t key_lowest(int dt)
{
  switch (dt) {
  case RD_INT8: return INT8_MIN;
  case RD_INT16: return INT16_MIN;
  case RD_INT32: return INT32_MIN;
  case RD_INT64:
  case RD_UINT64: return INT64_MIN;
  case RD_UINT8:
  case RD_UINT16:
  case RD_UINT32:
  case RD_BOOL: return 0;
  default: return rd__fkey(-INFINITY);
  }
}

static inline int64_t key_highest(int dt)
{
  switch (dt) {
  case RD_INT8: return INT8_MAX;
  case RD_INT16: return INT16_MAX;
  case RD_INT32: return INT32_MAX;
  case RD_INT64:
  case RD_UINT64: return INT64_MAX;
  case RD_UINT8: return UINT8_MAX;
  case RD_UINT16: return UINT16_MAX;
  case RD_UINT32: return UINT32_MAX;
  case RD_BOOL: return 1;
  default: return rd__fkey(INFINITY);
  }
}

static inline void key_init(void *acc, size_t count, int dt, int is_max)
{
  struct rd__acc_key *a = acc;
  for (size_t i = 0; i < count; i++) {
    a[i].key = is_max ? key_lowest(dt) : key_highest(dt);
    a[i].nan = 0;
  }
}

static inline void key_add(void *acc, const unsigned char *p, int dt,
                           int is_max)
{
  struct rd__acc_key *a = acc;
  int nan;
  int64_t k = ldkey(dt, p, &nan, 0);
  a->nan |= (uint64_t)nan;
  if (!nan && (is_max ? k > a->key : k < a->key))
    a->key = k;
}

static inline void key_merge(void *dst, const void *src, int is_max)
{
  struct rd__acc_key *d = dst;
  const struct rd__acc_key *s = src;
  d->nan |= s->nan;
  if (is_max ? s->key > d->key : s->key < d->key)
    d->key = s->key;
}

static void max_merge(void *dst, const void *src)
{
  key_merge(dst, src, 1);
}
static void min_merge(void *dst, const void *src)
{
  key_merge(dst, src, 0);
}

/* RD__F_ARG: is_max, last (select_last_index). */
static void arg_init(void *acc, size_t count)
{
  struct rd__acc_arg *a = acc;
  for (size_t i = 0; i < count; i++) {
    a[i].key = 0;
    a[i].idx = -1;
    a[i].count = 0;
    a[i].nan = -1;
  }
}

static inline int arg_better(int64_t k, int64_t best, int is_max, int last)
{
  return is_max ? (k > best || (last && k == best))
                : (k < best || (last && k == best));
}

static inline void arg_add(void *acc, const unsigned char *p, int dt,
                           int is_max, int last)
{
  struct rd__acc_arg *a = acc;
  int nan;
  int64_t k = ldkey(dt, p, &nan, 1), i = a->count++;
  if (nan) {
    if (a->nan < 0 || last)
      a->nan = i;
  } else if (a->idx < 0 || arg_better(k, a->key, is_max, last)) {
    a->key = k;
    a->idx = i;
  }
}

static inline void arg_merge(void *dst, const void *src, int is_max, int last)
{
  struct rd__acc_arg *d = dst;
  const struct rd__acc_arg *s = src;
  int64_t off = d->count;
  if (s->count == 0)
    return;
  if (s->nan >= 0 && (d->nan < 0 || last))
    d->nan = s->nan + off;
  if (s->idx >= 0 && (d->idx < 0 || arg_better(s->key, d->key, is_max, last))) {
    d->key = s->key;
    d->idx = s->idx + off;
  }
  d->count += s->count;
}

static void argmax_merge(void *d, const void *s)
{
  arg_merge(d, s, 1, 0);
}
static void argmaxl_merge(void *d, const void *s)
{
  arg_merge(d, s, 1, 1);
}
static void argmin_merge(void *d, const void *s)
{
  arg_merge(d, s, 0, 0);
}
static void argminl_merge(void *d, const void *s)
{
  arg_merge(d, s, 0, 1);
}

static void zero_init(void *acc, size_t count, size_t size)
{
  memset(acc, 0, count * size);
}

/* ------------------------------------------------------------------ */
/* Sequential kernels: one state per output, in element order         */
/* ------------------------------------------------------------------ */

typedef void (*add_fn)(void *acc, const unsigned char *p);

/* Instantiates run/flush/cols/rows of a sequential kernel `name` from its
 * element add `add`, `merge` and `init` (state type T, element size esz). */
#define SEQ_KERNEL(name, T, esz, add, merge, init)                             \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    for (size_t i = 0; i < n; i++)                                             \
      add(ln, x + i * (esz));                                                  \
  }                                                                            \
  static void flush_##name(union rd__lanes *ln, void *acc)                     \
  {                                                                            \
    merge(acc, ln);                                                            \
    init(ln, 1);                                                               \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    T *o = acc;                                                                \
    for (size_t r = 0; r < nrows; r++, x += n * (esz))                         \
      for (size_t i = 0; i < n; i++)                                           \
        add(&o[i], x + i * (esz));                                             \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    T *o = acc, t;                                                             \
    for (size_t r = 0; r < nrows; r++, x += n * (esz)) {                       \
      init(&t, 1);                                                             \
      for (size_t i = 0; i < n; i++)                                           \
        add(&t, x + i * (esz));                                                \
      merge(&o[r], &t);                                                        \
    }                                                                          \
  }

/* One element add per (family, type, variant). */
#define ADD1(name, body)                                                       \
  static inline void add_##name(void *a, const unsigned char *p)               \
  {                                                                            \
    body;                                                                      \
  }

static void dd_init(void *a, size_t n)
{
  zero_init(a, n, sizeof(struct rd__acc_dd));
}
static void i128_init(void *a, size_t n)
{
  zero_init(a, n, sizeof(i128));
}
static void ilse_init(void *a, size_t n)
{
  zero_init(a, n, sizeof(struct rd__acc_ilse));
}

/* float64 sums */
ADD1(sum_f64, sumdd_add(a, p, 0))
ADD1(abs_f64, sumdd_add(a, p, 1))
SEQ_KERNEL(sum_f64, struct rd__acc_dd, 8, add_sum_f64, sumdd_merge, dd_init)
SEQ_KERNEL(abs_f64, struct rd__acc_dd, 8, add_abs_f64, sumdd_merge, dd_init)

/* integer sums */
#define ISUM_KERNELS(nm, dt, esz)                                              \
  ADD1(isum_##nm, isum_add(a, p, dt, 0))                                       \
  ADD1(iabs_##nm, isum_add(a, p, dt, 1))                                       \
  SEQ_KERNEL(isum_##nm, i128, esz, add_isum_##nm, isum_merge, i128_init)       \
  SEQ_KERNEL(iabs_##nm, i128, esz, add_iabs_##nm, isum_merge, i128_init)
ISUM_KERNELS(i32, RD_INT32, 4)
ISUM_KERNELS(u32, RD_UINT32, 4)
ISUM_KERNELS(i64, RD_INT64, 8)
ISUM_KERNELS(u64, RD_UINT64, 8)

/* LogSumExp, products */
#define FLOAT_SEQ(nm, dt, esz)                                                 \
  ADD1(lse_##nm, lse_add(a, p, dt))                                            \
  ADD1(prod_##nm, prod_add(a, p, dt))                                          \
  SEQ_KERNEL(lse_##nm, struct rd__acc_lse, esz, add_lse_##nm, lse_merge,       \
             lse_init)                                                         \
  SEQ_KERNEL(prod_##nm, struct rd__acc_prod, esz, add_prod_##nm, prod_merge,   \
             prod_init)
FLOAT_SEQ(f32, RD_FLOAT32, 4)
FLOAT_SEQ(f16, RD_FLOAT16, 2)
FLOAT_SEQ(bf16, RD_BFLOAT16, 2)
FLOAT_SEQ(f64, RD_FLOAT64, 8)

#define INT_SEQ(nm, dt, esz)                                                   \
  ADD1(ilse_##nm, ilse_add(a, p, dt))                                          \
  ADD1(iprod_##nm, iprod_add(a, p, dt))                                        \
  SEQ_KERNEL(ilse_##nm, struct rd__acc_ilse, esz, add_ilse_##nm, ilse_merge,   \
             ilse_init)                                                        \
  SEQ_KERNEL(iprod_##nm, struct rd__acc_iprod, esz, add_iprod_##nm,            \
             iprod_merge, iprod_init)
INT_SEQ(i32, RD_INT32, 4)
INT_SEQ(u32, RD_UINT32, 4)
INT_SEQ(i64, RD_INT64, 8)
INT_SEQ(u64, RD_UINT64, 8)

/* Max/Min and ArgMax/ArgMin, every type they take. */
#define KEY_SEQ(nm, dt, esz)                                                   \
  static void maxi_##nm(void *a, size_t n)                                     \
  {                                                                            \
    key_init(a, n, dt, 1);                                                     \
  }                                                                            \
  static void mini_##nm(void *a, size_t n)                                     \
  {                                                                            \
    key_init(a, n, dt, 0);                                                     \
  }                                                                            \
  ADD1(max_##nm, key_add(a, p, dt, 1))                                         \
  ADD1(min_##nm, key_add(a, p, dt, 0))                                         \
  SEQ_KERNEL(max_##nm, struct rd__acc_key, esz, add_max_##nm, max_merge,       \
             maxi_##nm)                                                        \
  SEQ_KERNEL(min_##nm, struct rd__acc_key, esz, add_min_##nm, min_merge,       \
             mini_##nm)
#define ARG_SEQ(nm, dt, esz)                                                   \
  ADD1(argmax_##nm, arg_add(a, p, dt, 1, 0))                                   \
  ADD1(argmaxl_##nm, arg_add(a, p, dt, 1, 1))                                  \
  ADD1(argmin_##nm, arg_add(a, p, dt, 0, 0))                                   \
  ADD1(argminl_##nm, arg_add(a, p, dt, 0, 1))                                  \
  SEQ_KERNEL(argmax_##nm, struct rd__acc_arg, esz, add_argmax_##nm,            \
             argmax_merge, arg_init)                                           \
  SEQ_KERNEL(argmaxl_##nm, struct rd__acc_arg, esz, add_argmaxl_##nm,          \
             argmaxl_merge, arg_init)                                          \
  SEQ_KERNEL(argmin_##nm, struct rd__acc_arg, esz, add_argmin_##nm,            \
             argmin_merge, arg_init)                                           \
  SEQ_KERNEL(argminl_##nm, struct rd__acc_arg, esz, add_argminl_##nm,          \
             argminl_merge, arg_init)
/* clang-format off */
#define KEY_TYPES(X)                                                           \
  X(f32, RD_FLOAT32, 4) X(f64, RD_FLOAT64, 8) X(f16, RD_FLOAT16, 2)            \
  X(bf16, RD_BFLOAT16, 2) X(i8, RD_INT8, 1) X(u8, RD_UINT8, 1)                 \
  X(i16, RD_INT16, 2) X(u16, RD_UINT16, 2) X(i32, RD_INT32, 4)                 \
  X(u32, RD_UINT32, 4) X(i64, RD_INT64, 8) X(u64, RD_UINT64, 8)
/* clang-format on */
KEY_TYPES(KEY_SEQ)
KEY_SEQ(bool, RD_BOOL, 1)
KEY_TYPES(ARG_SEQ)

/* ------------------------------------------------------------------ */
/* float32 Max/Min/ArgMax/ArgMin: block loops over 32-bit keys         */
/* ------------------------------------------------------------------ */

/* The results are exact, so any grouping gives the same bits: these loops
 * reduce a block of float32 elements with branch-free 32-bit integer keys
 * (-0 < +0, NaN flagged), which the compiler vectorises, then fold the
 * block's result into the 64-bit key state. */
#define KBLOCK 1024

static inline int32_t key32(uint32_t u)
{
  int32_t k = (int32_t)u;
  return k ^ (int32_t)((uint32_t)(k >> 31) & 0x7fffffffu);
}

static inline double key32_value(int32_t k)
{
  uint32_t u = (uint32_t)(k ^ (int32_t)((uint32_t)(k >> 31) & 0x7fffffffu));
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline int is_nan32(uint32_t u)
{
  return (u & 0x7fffffffu) > 0x7f800000u;
}

/* Best key of n (<= KBLOCK) float32 elements; *nan: any NaN.  zero_tie
 * maps -0 to +0.  The SIMD implementation, when active, computes the same
 * exact result in kernels_avx2.c (kernels_keyrows.c in the AVX-512 form). */
static inline int32_t block_best32(const unsigned char *x, size_t n, int is_max,
                                   int zero_tie, int *nan)
{
  int32_t best[16];
  if (rd__opk_best32(x, n, is_max, zero_tie, best, nan) == 0)
    return best[0];
  if (rd__kernels_active() >= RD__IMPL_AVX2)
    return rd__avx2_best32(x, n, is_max, zero_tie, nan);
  uint32_t anynan = 0;
  const int32_t ident = is_max ? INT32_MIN : INT32_MAX;
  for (size_t l = 0; l < 16; l++)
    best[l] = ident;
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (size_t l = 0; l < 16; l++) {
      uint32_t u;
      int32_t k;
      memcpy(&u, x + (i + l) * 4, 4);
      if (zero_tie)
        u = u == 0x80000000u ? 0 : u;
      k = key32(u);
      anynan |= (uint32_t)is_nan32(u);
      k = is_nan32(u) ? ident : k;
      best[l] = is_max ? (k > best[l] ? k : best[l])
                       : (k < best[l] ? k : best[l]);
    }
  for (size_t l = 0; i < n; i++, l++) {
    uint32_t u;
    int32_t k;
    memcpy(&u, x + i * 4, 4);
    if (zero_tie)
      u = u == 0x80000000u ? 0 : u;
    k = key32(u);
    anynan |= (uint32_t)is_nan32(u);
    k = is_nan32(u) ? ident : k;
    best[l] = is_max ? (k > best[l] ? k : best[l])
                     : (k < best[l] ? k : best[l]);
  }
  for (size_t l = 1; l < 16; l++)
    best[0] = is_max ? (best[l] > best[0] ? best[l] : best[0])
                     : (best[l] < best[0] ? best[l] : best[0]);
  *nan = anynan != 0;
  return best[0];
}

/* Folds n float32 elements into a Max/Min state. */
static inline void key32_fold(struct rd__acc_key *a, const unsigned char *x,
                              size_t n, int is_max)
{
  while (n > 0) {
    size_t m = n < KBLOCK ? n : KBLOCK;
    int nan;
    int32_t b = block_best32(x, m, is_max, 0, &nan);
    a->nan |= (uint64_t)nan;
    /* b is the identity only if every element was NaN or the identity
     * itself (-NaN bits); decoding it gives a NaN key then, skip it. */
    if (!isnan(key32_value(b))) {
      int64_t k = rd__fkey(key32_value(b));
      if (is_max ? k > a->key : k < a->key)
        a->key = k;
    }
    x += m * 4;
    n -= m;
  }
}

/* Folds n float32 elements (indices a->count ...) into an Arg state. */
#define ARG32_CHUNK ((size_t)1 << 30)

static inline void arg32_fold(struct rd__acc_arg *a, const unsigned char *x,
                              size_t n, int is_max, int last)
{
  if (rd__kernels_active() >= RD__IMPL_AVX2) {
    /* one pass per chunk of up to 2^30 elements (kernels_ops_avx2.c):
     * the same partial state as the blocks below, merged the same way */
    while (n > 0) {
      size_t m = n < ARG32_CHUNK ? n : ARG32_CHUNK;
      int32_t b;
      int64_t bi, ni;
      rd__opk_arg32(x, m, is_max, last, &b, &bi, &ni);
      struct rd__acc_arg blk = { 0, bi, (int64_t)m, ni };
      if (bi >= 0)
        blk.key = rd__fkey(key32_value(b));
      arg_merge(a, &blk, is_max, last);
      x += m * 4;
      n -= m;
    }
    return;
  }
  while (n > 0) {
    size_t m = n < KBLOCK ? n : KBLOCK;
    int nan;
    int32_t b = block_best32(x, m, is_max, 1, &nan);
    struct rd__acc_arg blk = { 0, -1, (int64_t)m, -1 };
    if (nan) {
      for (size_t i = 0; i < m; i++) {
        uint32_t u;
        memcpy(&u, x + (last ? m - 1 - i : i) * 4, 4);
        if (is_nan32(u)) {
          blk.nan = (int64_t)(last ? m - 1 - i : i);
          break;
        }
      }
    }
    if (!isnan(key32_value(b))) {
      /* the first (last) element with the best key */
      for (size_t i = 0; i < m; i++) {
        size_t j = last ? m - 1 - i : i;
        uint32_t u;
        memcpy(&u, x + j * 4, 4);
        if (u == 0x80000000u)
          u = 0;
        if (!is_nan32(u) && key32(u) == b) {
          blk.idx = (int64_t)j;
          blk.key = rd__fkey(key32_value(b));
          break;
        }
      }
    }
    arg_merge(a, &blk, is_max, last);
    x += m * 4;
    n -= m;
  }
}

/* Columns (the reduced axis outer): a tile of up to C32_TILE columns is
 * reduced over up to C32_ROWS rows with 32-bit state per column, kept in
 * L1 between rows: best[j], the best key (the NaN-pattern identity if the
 * column had no number); bidx[j], the row of the best key for the Arg
 * variants (first, or with `last` the latest among equal keys), -1 if none;
 * nidx[j], the row of the first (with `last`: the latest) NaN, -1 if none.
 * The result is exact, so the vector form in kernels_avx2.c, which this
 * calls for the columns that fill whole vectors, gives the same state. */
/* 1024: the Arg state (12 KiB) stays in L1 beside the rows streaming in */
#define C32_TILE 1024
#define C32_ROWS ((size_t)1 << 30)

static inline void cols32_tile(const unsigned char *x, size_t stride,
                               size_t ncols, size_t nrows, int is_max, int arg,
                               int last, int32_t *best, int32_t *bidx,
                               int32_t *nidx)
{
  for (size_t r = 0; r < nrows; r++, x += stride * 4)
    for (size_t j = 0; j < ncols; j++) {
      uint32_t u;
      int32_t k;
      memcpy(&u, x + j * 4, 4);
      if (arg && u == 0x80000000u)
        u = 0;
      if (is_nan32(u)) {
        if (nidx[j] < 0 || last)
          nidx[j] = (int32_t)r;
        continue;
      }
      k = key32(u);
      if (is_max ? (k > best[j] || (last && k == best[j]))
                 : (k < best[j] || (last && k == best[j]))) {
        best[j] = k;
        bidx[j] = (int32_t)r;
      }
    }
}

/* acc[j] (struct rd__acc_key or rd__acc_arg) += column j of nrows rows. */
static inline void cols32(void *acc, const unsigned char *x, size_t n,
                          size_t nrows, int is_max, int arg, int last, int avx)
{
  int32_t best[C32_TILE], bidx[C32_TILE], nidx[C32_TILE];
  const int32_t ident = is_max ? INT32_MIN : INT32_MAX;
  const int mode = arg ? (is_max ? RD__C32_ARGMAX : RD__C32_ARGMIN) + last
                       : (is_max ? RD__C32_MAX : RD__C32_MIN);
  for (size_t r0 = 0; r0 < nrows; r0 += C32_ROWS) {
    size_t nr = nrows - r0 < C32_ROWS ? nrows - r0 : C32_ROWS;
    for (size_t j0 = 0; j0 < n; j0 += C32_TILE) {
      const unsigned char *p = x + (r0 * n + j0) * 4;
      size_t nc = n - j0 < C32_TILE ? n - j0 : C32_TILE, nv = 0;
      for (size_t j = 0; j < nc; j++) {
        best[j] = ident;
        bidx[j] = -1;
        nidx[j] = -1;
      }
      if (avx) { /* AVX-512 16 columns per vector, then AVX2 8 */
        size_t v5 = rd__opk_key_cols_f32(p, n, nc, nr, mode, best, bidx, nidx);
        nv = nc & ~(size_t)7;
        if (nv > v5)
          rd__avx2_cols32(p + v5 * 4, n, nv - v5, nr, mode, best + v5,
                          bidx + v5, nidx + v5);
      }
      cols32_tile(p + nv * 4, n, nc - nv, nr, is_max, arg, last, best + nv,
                  bidx + nv, nidx + nv);
      for (size_t j = 0; j < nc; j++) {
        if (!arg) {
          struct rd__acc_key *a = (struct rd__acc_key *)acc + j0 + j;
          int64_t k;
          a->nan |= (uint64_t)(nidx[j] >= 0);
          if (best[j] == ident)
            continue; /* NaN-pattern identity: no number in the column */
          k = rd__fkey(key32_value(best[j]));
          if (is_max ? k > a->key : k < a->key)
            a->key = k;
        } else {
          struct rd__acc_arg blk = { 0, bidx[j], (int64_t)nr, nidx[j] };
          if (bidx[j] >= 0)
            blk.key = rd__fkey(key32_value(best[j]));
          arg_merge((struct rd__acc_arg *)acc + j0 + j, &blk, is_max, last);
        }
      }
    }
  }
}

/* run/rows for these: the same state as the generic kernels, so flush,
 * cols, init and merge are shared with them. */
#define KEY32_KERNEL(nm, is_max)                                               \
  static void run32_##nm(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    key32_fold((struct rd__acc_key *)(void *)ln, x, n, is_max);                \
  }                                                                            \
  static void rows32_##nm(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    struct rd__acc_key *o = acc;                                               \
    for (size_t r = 0; r < nrows; r++, x += n * 4)                             \
      key32_fold(&o[r], x, n, is_max);                                         \
  }
KEY32_KERNEL(max, 1)
KEY32_KERNEL(min, 0)

/* cols32_*: portable; cols32s_*: the SIMD tiles (ktab_simd only). */
#define COLS32(nm, is_max, arg, last)                                          \
  static void cols32_##nm(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    cols32(acc, x, n, nrows, is_max, arg, last, 0);                            \
  }                                                                            \
  static void cols32s_##nm(void *acc, const unsigned char *x, size_t n,        \
                           size_t nrows)                                       \
  {                                                                            \
    cols32(acc, x, n, nrows, is_max, arg, last, 1);                            \
  }
COLS32(max, 1, 0, 0)
COLS32(min, 0, 0, 0)

#define ARG32_KERNEL(nm, is_max, last)                                         \
  static void run32_##nm(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    arg32_fold((struct rd__acc_arg *)(void *)ln, x, n, is_max, last);          \
  }                                                                            \
  static void rows32_##nm(void *acc, const unsigned char *x, size_t n,         \
                          size_t nrows)                                        \
  {                                                                            \
    struct rd__acc_arg *o = acc;                                               \
    for (size_t r = 0; r < nrows; r++, x += n * 4) {                           \
      struct rd__acc_arg t;                                                    \
      arg_init(&t, 1);                                                         \
      arg32_fold(&t, x, n, is_max, last);                                      \
      arg_merge(&o[r], &t, is_max, last);                                      \
    }                                                                          \
  }
COLS32(argmax, 1, 1, 0)
COLS32(argmaxl, 1, 1, 1)
COLS32(argmin, 0, 1, 0)
COLS32(argminl, 0, 1, 1)
ARG32_KERNEL(argmax, 1, 0)
ARG32_KERNEL(argmaxl, 1, 1)
ARG32_KERNEL(argmin, 0, 0)
ARG32_KERNEL(argminl, 0, 1)

/* rows() of short rows (n 8, 16, 24 or 32) with the SIMD implementation:
 * for each row the best key with the first (last) index holding it and the
 * first (last) NaN index, as a partial state merged into o[r] -- the state
 * run() from empty would reach, so the same bits as rows32_*.  Other n go
 * to rows32_*. */
#define R32_BATCH 256

static inline int rows32s_fits(size_t n)
{
  return n % 8 == 0 && n >= 8 && n <= 32;
}

static inline void rows32s(void *acc, const unsigned char *x, size_t n,
                           size_t nrows, int is_max, int arg, int last)
{
  int32_t best[R32_BATCH], bidx[R32_BATCH], nidx[R32_BATCH];
  const int32_t ident = is_max ? INT32_MIN : INT32_MAX;
  const int mode = arg ? (is_max ? RD__C32_ARGMAX : RD__C32_ARGMIN) + last
                       : (is_max ? RD__C32_MAX : RD__C32_MIN);
  for (size_t r0 = 0; r0 < nrows; r0 += R32_BATCH) {
    size_t nr = nrows - r0 < R32_BATCH ? nrows - r0 : R32_BATCH;
    rd__avx2_rows32(x + r0 * n * 4, n, nr, mode, best, bidx, nidx);
    for (size_t r = 0; r < nr; r++) {
      if (!arg) {
        struct rd__acc_key *a = (struct rd__acc_key *)acc + r0 + r;
        int64_t k;
        a->nan |= (uint64_t)(nidx[r] >= 0);
        if (best[r] == ident)
          continue;
        k = rd__fkey(key32_value(best[r]));
        if (is_max ? k > a->key : k < a->key)
          a->key = k;
      } else {
        struct rd__acc_arg blk = { 0, bidx[r], (int64_t)n, nidx[r] };
        if (bidx[r] >= 0)
          blk.key = rd__fkey(key32_value(best[r]));
        arg_merge((struct rd__acc_arg *)acc + r0 + r, &blk, is_max, last);
      }
    }
  }
}

#define ROWS32S(nm, is_max, arg, last)                                         \
  static void rows32s_##nm(void *acc, const unsigned char *x, size_t n,        \
                           size_t nrows)                                       \
  {                                                                            \
    if (rows32s_fits(n))                                                       \
      rows32s(acc, x, n, nrows, is_max, arg, last);                            \
    else                                                                       \
      rows32_##nm(acc, x, n, nrows);                                           \
  }
ROWS32S(max, 1, 0, 0)
ROWS32S(min, 0, 0, 0)
ROWS32S(argmax, 1, 1, 0)
ROWS32S(argmaxl, 1, 1, 1)
ROWS32S(argmin, 0, 1, 0)
ROWS32S(argminl, 0, 1, 1)

/* ------------------------------------------------------------------ */
/* float32/float16/bfloat16 ReduceLogSumExp: 16 lanes, one shared shift */
/* ------------------------------------------------------------------ */

/* The lane state: the accumulator's fields (m: the shared shift, lazy as
 * kernels_impl.h's RD__LSE_K says; nan, posinf flags; hi, lo unused) and
 * 16 lane sums.  Element x at offset j of a run segment: NaN and +inf set
 * flags, -inf adds nothing; if x > m + RD__LSE_K every lane is scaled by
 * expk(m - x) and m becomes x; then lane j % 16 adds expk(x - m).  That is
 * a function of the element sequence alone, so it is split-invariant; a
 * block of 16 where no element is NaN, +inf or above m + RD__LSE_K is the
 * same as 16 lane additions, which is the vector path (float32:
 * rd__opk_lse_run_f32 of kernels_ops_avx2.c, blocks that move the shift
 * included, or in the AVX2 form rd__opk_lse_f32
 * over whole stretches of such blocks; float16/bfloat16: rd__avx2_lse16
 * per block).  At the end of the
 * segment the lanes combine in the fixed tree and fold into the output's
 * accumulator (lse_fold). */
struct lse_lanes {
  struct rd__acc_lse h;
  double s[L];
};

_Static_assert(sizeof(struct lse_lanes) <= sizeof(union rd__lanes),
               "LogSumExp lanes exceed the lane state");

static inline void lsel_elem(struct lse_lanes *st, size_t k, double v)
{
  if (isnan(v)) {
    st->h.nan = 1;
  } else if (v == INFINITY) {
    st->h.posinf = 1;
  } else if (v != -INFINITY) {
    if (v > st->h.m + RD__LSE_K) { /* the shift moves (kernels_impl.h) */
      double f = expk(st->h.m - v);
      for (size_t l = 0; l < L; l++)
        st->s[l] *= f;
      st->h.m = v;
    }
    st->s[k] += expk(v - st->h.m);
  }
}

/* 16 elements at lane 0 when none is NaN, +inf or above m + RD__LSE_K;
 * else 1. */
static inline int lsel_block(struct lse_lanes *st, const unsigned char *x,
                             int dt)
{
  double v[L];
  const size_t esz = dt_size(dt);
  for (size_t l = 0; l < L; l++) {
    v[l] = ldd(dt, x + l * esz);
    if (!(v[l] <= st->h.m + RD__LSE_K) && v[l] != -INFINITY)
      return 1; /* NaN, +inf or the shift moves: element by element */
  }
  for (size_t l = 0; l < L; l++)
    st->s[l] += expk(v[l] - st->h.m);
  return 0;
}

static inline void lsel_run(union rd__lanes *ln, const unsigned char *x,
                            size_t n, uint64_t pos, int dt)
{
  struct lse_lanes *st = (struct lse_lanes *)(void *)ln;
  const size_t esz = dt_size(dt);
  const int avx = rd__kernels_active() >= RD__IMPL_AVX2;
  const int vdt = dt == RD_FLOAT32 ? 1 : dt == RD_FLOAT16 ? 2 : 3;
  size_t k = (size_t)(pos % L), i = 0;
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    lsel_elem(st, k, ldd(dt, x + i * esz));
  if (st->h.m == -INFINITY && i + L <= n) {
    /* From the empty state (every lane +0) a finite first element only
     * sets the shift: lsel_elem's rescale multiplies +0 lanes by
     * expk(-inf) = +0, and its term expk(+0) is the block's lane 0. So
     * the first block, the start of most rows, need not go element by
     * element. */
    double v = ldd(dt, x + i * esz);
    if (v > -INFINITY && v < INFINITY)
      st->h.m = v;
  }
  for (; i + L <= n; i += L) {
    int slow;
    if (avx && dt == RD_FLOAT32) {
      /* whole blocks in registers; the block it stopped before (a NaN or
       * +inf, or in the AVX2 form a move of the shift) element by element */
      const unsigned char *p = x + i * esz;
      i += L * (rd__opk_avx512()
                  ? rd__opk_lse_run_f32(st->s, &st->h.m, p, (n - i) / L)
                  : rd__opk_lse_f32(st->s, p, (n - i) / L, st->h.m));
      if (i + L > n)
        break;
      slow = 1;
    } else {
      slow = avx ? rd__avx2_lse16(st->s, x + i * esz, vdt, st->h.m)
                 : lsel_block(st, x + i * esz, dt);
    }
    if (slow)
      for (size_t l = 0; l < L; l++)
        lsel_elem(st, l, ldd(dt, x + (i + l) * esz));
  }
  for (size_t l = 0; i < n; i++, l++)
    lsel_elem(st, l, ldd(dt, x + i * esz));
}

static void lsel_reset(struct lse_lanes *st)
{
  memset(st, 0, sizeof *st);
  st->h.m = -INFINITY;
}

BODY void lsel_flush_body(union rd__lanes *ln, void *acc)
{
  struct lse_lanes *st = (struct lse_lanes *)(void *)ln;
  struct rd__acc_lse *a = acc;
  a->nan |= st->h.nan;
  a->posinf |= st->h.posinf;
  if (st->h.m != -INFINITY)
    lse_fold_e(a, st->h.m, tree(st->s), 0.0, expk);
  lsel_reset(st);
}
FMA_DISPATCH(lsel_flush, union rd__lanes *, void *)

/* Rows' shifts and lane trees from rd__opk_lse_rowsums_f32, folded into
 * their outputs as lsel_flush() folds a row's. */
struct lse_rowsums {
  const double *m, *t;
  size_t n;
};

BODY void lsel_fold_rows_body(struct rd__acc_lse *o,
                              const struct lse_rowsums *rs)
{
  for (size_t r = 0; r < rs->n; r++)
    if (rs->m[r] != -INFINITY)
      lse_fold_e(&o[r], rs->m[r], rs->t[r], 0.0, expk);
}
FMA_DISPATCH(lsel_fold_rows, struct rd__acc_lse *, const struct lse_rowsums *)

/* One row from the empty lane state into its output. */
static inline void lsel_row(struct rd__acc_lse *o, const unsigned char *x,
                            size_t n, int dt)
{
  union rd__lanes ln;
  lsel_reset((struct lse_lanes *)(void *)&ln);
  lsel_run(&ln, x, n, 0, dt);
  lsel_flush(&ln, o);
}

/* Rows that rd__opk_lse_rowsums_f32 takes at a time */
#define LSER_BATCH 64

static inline void lsel_rows(void *acc, const unsigned char *x, size_t n,
                             size_t nrows, int dt)
{
  struct rd__acc_lse *o = acc;
  const size_t rs = n * dt_size(dt);
  size_t r = 0;
  if (dt == RD_FLOAT32 && n >= L && rd__kernels_active() >= RD__IMPL_AVX2 &&
      rd__opk_avx512()) {
    /* the AVX-512 rows, with the lanes in registers; a row holding a NaN
     * or +inf by lsel_row() */
    while (r < nrows) {
      double m[LSER_BATCH], t[LSER_BATCH];
      size_t k = nrows - r < LSER_BATCH ? nrows - r : LSER_BATCH;
      struct lse_rowsums sums = { m, t, 0 };
      sums.n = rd__opk_lse_rowsums_f32(m, t, x + r * rs, n, k);
      lsel_fold_rows(o + r, &sums);
      r += sums.n;
      if (sums.n < k) {
        lsel_row(o + r, x + r * rs, n, dt);
        r++;
      }
    }
    return;
  }
  for (; r < nrows; r++)
    lsel_row(o + r, x + r * rs, n, dt);
}

#define LSEL_KERNEL(nm, dt)                                                    \
  static void runl_##nm(union rd__lanes *ln, const unsigned char *x, size_t n, \
                        uint64_t pos)                                          \
  {                                                                            \
    lsel_run(ln, x, n, pos, dt);                                               \
  }                                                                            \
  static void rowsl_##nm(void *acc, const unsigned char *x, size_t n,          \
                         size_t nrows)                                         \
  {                                                                            \
    lsel_rows(acc, x, n, nrows, dt);                                           \
  }
LSEL_KERNEL(lse_f32, RD_FLOAT32)
LSEL_KERNEL(lse_f16, RD_FLOAT16)
LSEL_KERNEL(lse_bf16, RD_BFLOAT16)

/* ------------------------------------------------------------------ */
/* float32/float16/bfloat16 ReduceProd: 16 lanes of (mantissa, exponent) */
/* ------------------------------------------------------------------ */

/* Element x at offset j of a run segment: NaN, +-inf and +-0 set flags
 * (and the sign); any other x multiplies lane j % 16's mantissa, which is
 * then renormalised to [0.5, 1) with its exponent moved into the lane's
 * int64 exponent (bit operations: exact; |x| >= 2^-149 and < 2^128, so the
 * product is a normal double).  A block of 16 ordinary elements is the
 * same 16 lane steps, which the compiler can vectorise.  At the end of the
 * segment the lanes combine in the fixed tree (k, k+8), (k, k+4), ... with
 * prod_merge() and fold into the output's accumulator. */
struct prod_lanes {
  struct rd__acc_prod h; /* flags and sign; the value fields are unused */
  double m[L];
  int64_t e[L];
};

_Static_assert(sizeof(struct prod_lanes) <= sizeof(union rd__lanes),
               "Prod lanes exceed the lane state");

static inline void prodl_mul(struct prod_lanes *st, size_t k, double a)
{
  uint64_t b;
  double p = st->m[k] * a;
  memcpy(&b, &p, sizeof b);
  st->e[k] += (int64_t)((b >> 52) & 0x7ff) - 1022;
  b = (b & ~((uint64_t)0x7ff << 52)) | ((uint64_t)1022 << 52);
  memcpy(&st->m[k], &b, sizeof b);
}

static inline void prodl_elem(struct prod_lanes *st, size_t k, double v)
{
  if (isnan(v)) {
    st->h.nan = 1;
    return;
  }
  st->h.neg ^= signbit(v) != 0;
  if (isinf(v))
    st->h.inf = 1;
  else if (v == 0)
    st->h.zero = 1;
  else
    prodl_mul(st, k, fabs(v));
}

static inline void prodl_reset(struct prod_lanes *st)
{
  memset(st, 0, sizeof *st);
  st->h.hi = 0.5;
  st->h.e = 1;
  for (size_t l = 0; l < L; l++) {
    st->m[l] = 0.5;
    st->e[l] = 1;
  }
}

static void prodl_init(void *acc, size_t count)
{
  /* accumulators are plain rd__acc_prod; lanes get prodl_reset() */
  prod_init(acc, count);
}

static inline void prodl_run(union rd__lanes *ln, const unsigned char *x,
                             size_t n, uint64_t pos, int dt)
{
  struct prod_lanes *st = (struct prod_lanes *)(void *)ln;
  const size_t esz = dt_size(dt);
  size_t k = (size_t)(pos % L), i = 0;
  const int avx = dt == RD_FLOAT32 && rd__kernels_active() >= RD__IMPL_AVX2;
  if (st->m[0] == 0) /* fresh from the engine's zeroed cursor */
    prodl_reset(st);
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    prodl_elem(st, k, ldd(dt, x + i * esz));
  for (; i + L <= n; i += L) {
    double v[L];
    if (avx) { /* the same lane steps, vectorised, up to a rare block */
      i += L * rd__opk_prod_run_f32(st->m, st->e, x + i * esz, (n - i) / L,
                                    &st->h.neg);
      if (i + L > n)
        break;
    }
    int ordinary = 1;
    uint32_t neg = 0;
    for (size_t l = 0; l < L; l++) {
      double a;
      v[l] = ldd(dt, x + (i + l) * esz);
      a = fabs(v[l]);
      ordinary &= (a > 0) & (a <= DBL_MAX);
      neg ^= (uint32_t)(signbit(v[l]) != 0);
    }
    if (ordinary) {
      st->h.neg ^= neg;
      for (size_t l = 0; l < L; l++)
        prodl_mul(st, l, fabs(v[l]));
    } else {
      for (size_t l = 0; l < L; l++)
        prodl_elem(st, l, v[l]);
    }
  }
  for (size_t l = 0; i < n; i++, l++)
    prodl_elem(st, l, ldd(dt, x + i * esz));
}

static void prodl_flush(union rd__lanes *ln, void *acc)
{
  struct prod_lanes *st = (struct prod_lanes *)(void *)ln;
  struct rd__acc_prod a[L];
  if (st->m[0] == 0)
    prodl_reset(st);
  if (rd__kernels_active() >= RD__IMPL_AVX2 &&
      rd__opk_prod_tree(st->m, st->e, &a[0].hi, &a[0].lo, &a[0].e) == 0) {
    /* the same tree in vectors (kernels_ops_avx2.c); the flags below */
  } else {
    for (size_t l = 0; l < L; l++) {
      memset(&a[l], 0, sizeof a[l]);
      a[l].hi = st->m[l];
      a[l].e = st->e[l];
    }
    for (size_t w = L / 2; w >= 1; w /= 2)
      for (size_t k = 0; k < w; k++)
        prod_merge(&a[k], &a[k + w]);
  }
  a[0].nan = st->h.nan;
  a[0].inf = st->h.inf;
  a[0].zero = st->h.zero;
  a[0].neg = st->h.neg;
  prod_merge(acc, &a[0]);
  prodl_reset(st);
}

static inline void prodl_row(struct rd__acc_prod *o, const unsigned char *x,
                             size_t n, int dt)
{
  union rd__lanes ln;
  prodl_reset((struct prod_lanes *)(void *)&ln);
  prodl_run(&ln, x, n, 0, dt);
  prodl_flush(&ln, o);
}

/* Rows of float32 in whole blocks go through rd__opk_prod_rows_acc_f32
 * PRODL_CHUNK at a time (the lanes and tree of prodl_row(), in registers),
 * each row's result folded into its accumulator by prod_merge(); a row it
 * stops before (a zero, inf or NaN) takes prodl_row(). */
#define PRODL_CHUNK 32

static inline void prodl_rows(void *acc, const unsigned char *x, size_t n,
                              size_t nrows, int dt)
{
  struct rd__acc_prod *o = acc;
  const size_t rs = n * dt_size(dt);
  size_t r = 0;
  if (dt == RD_FLOAT32 && n % L == 0 && n > 0 &&
      rd__kernels_active() >= RD__IMPL_AVX2 && rd__opk_avx512()) {
    double hi[PRODL_CHUNK], lo[PRODL_CHUNK];
    int64_t e[PRODL_CHUNK];
    uint32_t neg[PRODL_CHUNK];
    while (r < nrows) {
      size_t c = nrows - r < PRODL_CHUNK ? nrows - r : PRODL_CHUNK;
      size_t k = rd__opk_prod_rows_acc_f32(hi, lo, e, neg, x, n / L, c);
      for (size_t i = 0; i < k; i++) {
        struct rd__acc_prod a = {
          .hi = hi[i], .lo = lo[i], .e = e[i], .neg = neg[i]
        };
        prod_merge(&o[r + i], &a);
      }
      r += k;
      x += k * rs;
      if (k < c) { /* row r holds a zero, inf or NaN */
        prodl_row(&o[r], x, n, dt);
        r++;
        x += rs;
      }
    }
  }
  for (; r < nrows; r++, x += rs)
    prodl_row(&o[r], x, n, dt);
}

/* cols() of float32 Prod with the SIMD implementation: tiles of columns
 * whose state (hi, lo, e, neg) sits in arrays while the rows pass, each
 * element the same prod_add as the portable cols(), in vectors of 4
 * columns (kernels_avx2.c) and one by one for a group with a zero, inf or
 * NaN and for the columns beyond the last whole group. */
#define PCOLS_TILE 512

static inline void pcols_elem(struct rd__acc_prod *a, double *hi, double *lo,
                              int64_t *e, int64_t *neg, const unsigned char *p)
{
  struct rd__acc_prod t = *a;
  t.hi = *hi;
  t.lo = *lo;
  t.e = *e;
  t.neg = (uint32_t)*neg;
  prod_add(&t, p, RD_FLOAT32);
  *a = t;
  *hi = t.hi;
  *lo = t.lo;
  *e = t.e;
  *neg = t.neg;
}

static void cols32s_prod(void *acc, const unsigned char *x, size_t n,
                         size_t nrows)
{
  double hi[PCOLS_TILE], lo[PCOLS_TILE];
  int64_t e[PCOLS_TILE], neg[PCOLS_TILE];
  struct rd__acc_prod *o = acc;
  for (size_t j0 = 0; j0 < n; j0 += PCOLS_TILE) {
    size_t nc = n - j0 < PCOLS_TILE ? n - j0 : PCOLS_TILE, nv = nc / 4;
    struct rd__acc_prod *a = o + j0;
    for (size_t j = 0; j < nc; j++) {
      hi[j] = a[j].hi;
      lo[j] = a[j].lo;
      e[j] = a[j].e;
      neg[j] = a[j].neg;
    }
    size_t r = 0;
    /* four rows at a time: each column's state stays in registers across
     * them (rows in order); a group with a special value in any of the
     * four goes element by element, row by row */
    for (; r + 4 <= nrows; r += 4) {
      const unsigned char *row = x + (r * n + j0) * 4;
      size_t g = 0, j;
      while (g < nv) {
        g += rd__opk_prod_cols4_f32(hi + 4 * g, lo + 4 * g, e + 4 * g,
                                    neg + 4 * g, row + g * 16, n * 4, nv - g);
        if (g < nv) {
          for (size_t k = 0; k < 4; k++)
            for (j = 4 * g; j < 4 * g + 4; j++)
              pcols_elem(&a[j], &hi[j], &lo[j], &e[j], &neg[j],
                         row + (k * n + j) * 4);
          g++;
        }
      }
      for (size_t k = 0; k < 4; k++)
        for (j = 4 * nv; j < nc; j++)
          pcols_elem(&a[j], &hi[j], &lo[j], &e[j], &neg[j],
                     row + (k * n + j) * 4);
    }
    for (; r < nrows; r++) {
      const unsigned char *row = x + (r * n + j0) * 4;
      size_t g = 0, j;
      while (g < nv) {
        g += rd__opk_prod_cols_f32(hi + 4 * g, lo + 4 * g, e + 4 * g,
                                   neg + 4 * g, row + g * 16, nv - g);
        if (g < nv) { /* a group with a special value */
          for (j = 4 * g; j < 4 * g + 4; j++)
            pcols_elem(&a[j], &hi[j], &lo[j], &e[j], &neg[j], row + j * 4);
          g++;
        }
      }
      for (j = 4 * nv; j < nc; j++)
        pcols_elem(&a[j], &hi[j], &lo[j], &e[j], &neg[j], row + j * 4);
    }
    for (size_t j = 0; j < nc; j++) {
      a[j].hi = hi[j];
      a[j].lo = lo[j];
      a[j].e = e[j];
      a[j].neg = (uint32_t)neg[j];
    }
  }
}

/* cols() of float32 LogSumExp: lsec_add() element by element, rows in
 * order (portable); with the SIMD implementation, tiles of columns whose
 * (m, hi, lo) sit in arrays while the rows pass, groups of 4 finite
 * elements in vectors (the same operations: kernels_avx2.c one row at a
 * time, kernels_ops_avx2.c four rows at a time in the AVX-512 form), any
 * other group element by element. */
#define LCOLS_TILE 512

static inline void colsk_lse(void *acc, const unsigned char *x, size_t n,
                             size_t nrows, int dt)
{
  struct rd__acc_lse *o = acc;
  const size_t esz = dt_size(dt);
  for (size_t r = 0; r < nrows; r++, x += n * esz)
    for (size_t j = 0; j < n; j++)
      lsec_add(&o[j], x + j * esz, dt);
}

static void colsk_lse_f32(void *acc, const unsigned char *x, size_t n,
                          size_t nrows)
{
  colsk_lse(acc, x, n, nrows, RD_FLOAT32);
}
static void colsk_lse_f16(void *acc, const unsigned char *x, size_t n,
                          size_t nrows)
{
  colsk_lse(acc, x, n, nrows, RD_FLOAT16);
}
static void colsk_lse_bf16(void *acc, const unsigned char *x, size_t n,
                           size_t nrows)
{
  colsk_lse(acc, x, n, nrows, RD_BFLOAT16);
}

static inline void lcols_elem(struct rd__acc_lse *a, double *m, double *hi,
                              double *lo, const unsigned char *p)
{
  a->m = *m;
  a->hi = *hi;
  a->lo = *lo;
  lsec_add(a, p, RD_FLOAT32);
  *m = a->m;
  *hi = a->hi;
  *lo = a->lo;
}

/* Row `row` of group g (columns 4g..4g+3 of the tile), element by
 * element. */
static void lcols_elems(struct rd__acc_lse *a, double *m, double *hi,
                        double *lo, const unsigned char *row, size_t g)
{
  for (size_t j = 4 * g; j < 4 * g + 4; j++)
    lcols_elem(&a[j], &m[j], &hi[j], &lo[j], row + j * 4);
}

/* Row `row` of group g: the vector form, or element by element for a
 * group holding a NaN or an infinity. */
static void lcols_group(struct rd__acc_lse *a, double *m, double *hi,
                        double *lo, const unsigned char *row, size_t g)
{
  if (rd__opk_lse_cols_f32(m + 4 * g, hi + 4 * g, lo + 4 * g, row + g * 16,
                           1) == 0)
    lcols_elems(a, m, hi, lo, row, g);
}

/* One row segment of the tile (nv groups of 4 columns, then the rest). */
static void lcols_row(struct rd__acc_lse *a, double *m, double *hi, double *lo,
                      const unsigned char *row, size_t nc, size_t nv)
{
  size_t g = 0;
  while (g < nv) {
    g += rd__opk_lse_cols_f32(m + 4 * g, hi + 4 * g, lo + 4 * g, row + g * 16,
                              nv - g);
    if (g < nv) /* a group with a NaN or an infinity */
      lcols_elems(a, m, hi, lo, row, g++);
  }
  for (size_t j = 4 * nv; j < nc; j++)
    lcols_elem(&a[j], &m[j], &hi[j], &lo[j], row + j * 4);
}

/* Four row segments of the tile at row, row + rs, ...: each column takes
 * the four in order, the vector form four rows at once; a group it leaves
 * (a NaN or an infinity in its four rows, or an odd last group) and the
 * columns after the groups take them one at a time. */
static void lcols_rows4(struct rd__acc_lse *a, double *m, double *hi,
                        double *lo, const unsigned char *row, size_t rs,
                        size_t nc, size_t nv)
{
  size_t g = 0;
  while (g < nv) {
    g += rd__opk_lse_cols4_f32(m + 4 * g, hi + 4 * g, lo + 4 * g, row + g * 16,
                               rs, nv - g);
    if (g < nv) {
      for (size_t q = 0; q < 4; q++)
        lcols_group(a, m, hi, lo, row + q * rs, g);
      g++;
    }
  }
  for (size_t j = 4 * nv; j < nc; j++)
    for (size_t q = 0; q < 4; q++)
      lcols_elem(&a[j], &m[j], &hi[j], &lo[j], row + q * rs + j * 4);
}

static void colsks_lse_f32(void *acc, const unsigned char *x, size_t n,
                           size_t nrows)
{
  double m[LCOLS_TILE], hi[LCOLS_TILE], lo[LCOLS_TILE];
  struct rd__acc_lse *o = acc;
  const size_t rs = n * 4;
  for (size_t j0 = 0; j0 < n; j0 += LCOLS_TILE) {
    size_t nc = n - j0 < LCOLS_TILE ? n - j0 : LCOLS_TILE, nv = nc / 4, r = 0;
    struct rd__acc_lse *a = o + j0;
    for (size_t j = 0; j < nc; j++) {
      m[j] = a[j].m;
      hi[j] = a[j].hi;
      lo[j] = a[j].lo;
    }
    if (rd__opk_avx512())
      for (; r + 4 <= nrows; r += 4)
        lcols_rows4(a, m, hi, lo, x + r * rs + j0 * 4, rs, nc, nv);
    for (; r < nrows; r++)
      lcols_row(a, m, hi, lo, x + r * rs + j0 * 4, nc, nv);
    for (size_t j = 0; j < nc; j++) {
      a[j].m = m[j];
      a[j].hi = hi[j];
      a[j].lo = lo[j];
    }
  }
}

#define PRODL_KERNEL(nm, dt)                                                   \
  static void runl_##nm(union rd__lanes *ln, const unsigned char *x, size_t n, \
                        uint64_t pos)                                          \
  {                                                                            \
    prodl_run(ln, x, n, pos, dt);                                              \
  }                                                                            \
  static void rowsl_##nm(void *acc, const unsigned char *x, size_t n,          \
                         size_t nrows)                                         \
  {                                                                            \
    prodl_rows(acc, x, n, nrows, dt);                                          \
  }
PRODL_KERNEL(prod_f32, RD_FLOAT32)
PRODL_KERNEL(prod_f16, RD_FLOAT16)
PRODL_KERNEL(prod_bf16, RD_BFLOAT16)

/* ------------------------------------------------------------------ */
/* Kernel table                                                       */
/* ------------------------------------------------------------------ */

#define K_SUMD(nm)                                                             \
  {                                                                            \
    RD__ACC_F64, sizeof(double), run_##nm, rd__flush_d, cols_##nm, rows_##nm,  \
      NULL, NULL                                                               \
  }
#define K_SEQ(nm, T, init, merge)                                              \
  {                                                                            \
    RD__ACC_OP, sizeof(T), run_##nm, flush_##nm, cols_##nm, rows_##nm, init,   \
      merge                                                                    \
  }

struct kentry {
  int family, variant, dtype;
  struct rd__kernel k;
};

/* variant: SUMD/SUMDD/ISUM: 1 for |x|; MAXMIN: 1 max; ARG: 2*max + last. */
static const struct kentry ktab[] = {
  { RD__F_SUMD, 0, RD_FLOAT32, K_SUMD(sum_f32) },
  { RD__F_SUMD, 0, RD_FLOAT16, K_SUMD(sum_f16) },
  { RD__F_SUMD, 0, RD_BFLOAT16, K_SUMD(sum_bf16) },
  { RD__F_SUMD, 1, RD_FLOAT32, K_SUMD(abs_f32) },
  { RD__F_SUMD, 1, RD_FLOAT16, K_SUMD(abs_f16) },
  { RD__F_SUMD, 1, RD_BFLOAT16, K_SUMD(abs_bf16) },
  { RD__F_SUMDD, 0, RD_FLOAT64,
    K_SEQ(sum_f64, struct rd__acc_dd, dd_init, sumdd_merge) },
  { RD__F_SUMDD, 1, RD_FLOAT64,
    K_SEQ(abs_f64, struct rd__acc_dd, dd_init, sumdd_merge) },
#define K_ISUM(nm, dt)                                                         \
  { RD__F_ISUM, 0, dt, K_SEQ(isum_##nm, i128, i128_init, isum_merge) },        \
    { RD__F_ISUM, 1, dt, K_SEQ(iabs_##nm, i128, i128_init, isum_merge) },
  K_ISUM(i32, RD_INT32) K_ISUM(u32, RD_UINT32) K_ISUM(i64, RD_INT64)
    K_ISUM(u64, RD_UINT64)
#define K_FSEQ(nm, dt)                                                         \
  { RD__F_LSE, 0, dt,                                                          \
    K_SEQ(lse_##nm, struct rd__acc_lse, lse_init, lse_merge) },                \
    { RD__F_PROD, 0, dt,                                                       \
      K_SEQ(prod_##nm, struct rd__acc_prod, prod_init, prod_merge) },
/* float32/16/bfloat16 LogSumExp: the lanes above for run/flush/rows (the
   * element-order entries of K_FSEQ below are then never chosen; cols
   * stays element by element) */
#define K_LSEL(nm, dt)                                                         \
  { RD__F_LSE,                                                                 \
    0,                                                                         \
    dt,                                                                        \
    { RD__ACC_OP, sizeof(struct rd__acc_lse), runl_lse_##nm, lsel_flush,       \
      colsk_lse_##nm, rowsl_lse_##nm, lse_init, lse_merge } },
      K_LSEL(f32, RD_FLOAT32) K_LSEL(f16, RD_FLOAT16) K_LSEL(bf16, RD_BFLOAT16)
/* float32/16/bfloat16 Prod: the lanes above for run/flush/rows */
#define K_PRODL(nm, dt)                                                        \
  { RD__F_PROD,                                                                \
    0,                                                                         \
    dt,                                                                        \
    { RD__ACC_OP, sizeof(struct rd__acc_prod), runl_prod_##nm, prodl_flush,    \
      cols_prod_##nm, rowsl_prod_##nm, prodl_init, prod_merge } },
        K_PRODL(f32, RD_FLOAT32) K_PRODL(f16, RD_FLOAT16)
          K_PRODL(bf16, RD_BFLOAT16) K_FSEQ(f32, RD_FLOAT32)
            K_FSEQ(f16, RD_FLOAT16) K_FSEQ(bf16, RD_BFLOAT16)
              K_FSEQ(f64, RD_FLOAT64)
#define K_ISEQ(nm, dt)                                                         \
  { RD__F_ILSE, 0, dt,                                                         \
    K_SEQ(ilse_##nm, struct rd__acc_ilse, ilse_init, ilse_merge) },            \
    { RD__F_IPROD, 0, dt,                                                      \
      K_SEQ(iprod_##nm, struct rd__acc_iprod, iprod_init, iprod_merge) },
                K_ISEQ(i32, RD_INT32) K_ISEQ(u32, RD_UINT32)
                  K_ISEQ(i64, RD_INT64) K_ISEQ(u64, RD_UINT64)
#define K_KEY(nm, dt, esz)                                                     \
  { RD__F_MAXMIN, 1, dt,                                                       \
    K_SEQ(max_##nm, struct rd__acc_key, maxi_##nm, max_merge) },               \
    { RD__F_MAXMIN, 0, dt,                                                     \
      K_SEQ(min_##nm, struct rd__acc_key, mini_##nm, min_merge) },
  /* float32 first: block loops over 32-bit keys (the generic f32
   * entries below are then never chosen) */
  { RD__F_MAXMIN,
    1,
    RD_FLOAT32,
    { RD__ACC_OP, sizeof(struct rd__acc_key), run32_max, flush_max_f32,
      cols32_max, rows32_max, maxi_f32, max_merge } },
  { RD__F_MAXMIN,
    0,
    RD_FLOAT32,
    { RD__ACC_OP, sizeof(struct rd__acc_key), run32_min, flush_min_f32,
      cols32_min, rows32_min, mini_f32, min_merge } },
#define K_ARG32(nm, v)                                                         \
  { RD__F_ARG,                                                                 \
    v,                                                                         \
    RD_FLOAT32,                                                                \
    { RD__ACC_OP, sizeof(struct rd__acc_arg), run32_##nm, flush_##nm##_f32,    \
      cols32_##nm, rows32_##nm, arg_init, nm##_merge } },
  K_ARG32(argmax, 2) K_ARG32(argmaxl, 3) K_ARG32(argmin, 0) K_ARG32(argminl, 1)
    KEY_TYPES(K_KEY) K_KEY(bool, RD_BOOL, 1)
#define K_ARG(nm, dt, esz)                                                     \
  { RD__F_ARG, 2, dt,                                                          \
    K_SEQ(argmax_##nm, struct rd__acc_arg, arg_init, argmax_merge) },          \
    { RD__F_ARG, 3, dt,                                                        \
      K_SEQ(argmaxl_##nm, struct rd__acc_arg, arg_init, argmaxl_merge) },      \
    { RD__F_ARG, 0, dt,                                                        \
      K_SEQ(argmin_##nm, struct rd__acc_arg, arg_init, argmin_merge) },        \
    { RD__F_ARG, 1, dt,                                                        \
      K_SEQ(argminl_##nm, struct rd__acc_arg, arg_init, argminl_merge) },
      KEY_TYPES(K_ARG)
};
#define NKTAB (sizeof ktab / sizeof ktab[0])

/* Every state must fit a lane state (run() keeps it there). */
_Static_assert(sizeof(struct rd__acc_ilse) <= sizeof(union rd__lanes),
               "integer LogSumExp state exceeds the lane state");

/* The SIMD variants: a copy of ktab's kernels with the RD__F_SUMD entries
 * replaced where kernels_avx2.c has them, and the float32 Max/Min/Arg cols
 * by their vector tiles (filled before main(); used only
 * while the SIMD implementation is active, which implies the CPU has it). */
static struct rd__kernel ktab_simd[NKTAB];
/* The same with kernels_avx512.c's RD__F_SUMD entries (AVX-512 active). */
static struct rd__kernel ktab_simd512[NKTAB];

__attribute__((constructor)) static void ops_simd_init(void)
{
  static const struct {
    void (*portable)(void *, const unsigned char *, size_t, size_t);
    void (*simd)(void *, const unsigned char *, size_t, size_t);
  } cols_simd[] = {
    { cols32_max, cols32s_max },       { cols32_min, cols32s_min },
    { cols32_argmax, cols32s_argmax }, { cols32_argmaxl, cols32s_argmaxl },
    { cols32_argmin, cols32s_argmin }, { cols32_argminl, cols32s_argminl },
    { cols_prod_f32, cols32s_prod },   { colsk_lse_f32, colsks_lse_f32 },
  };
  static const struct {
    void (*portable)(void *, const unsigned char *, size_t, size_t);
    void (*simd)(void *, const unsigned char *, size_t, size_t);
  } rows_simd[] = {
    { rows32_max, rows32s_max },       { rows32_min, rows32s_min },
    { rows32_argmax, rows32s_argmax }, { rows32_argmaxl, rows32s_argmaxl },
    { rows32_argmin, rows32s_argmin }, { rows32_argminl, rows32s_argminl },
  };
  for (size_t i = 0; i < NKTAB; i++) {
    ktab_simd[i] = ktab[i].k;
    for (size_t c = 0; c < sizeof cols_simd / sizeof cols_simd[0]; c++)
      if (ktab_simd[i].cols == cols_simd[c].portable)
        ktab_simd[i].cols = cols_simd[c].simd;
    for (size_t c = 0; c < sizeof rows_simd / sizeof rows_simd[0]; c++)
      if (ktab_simd[i].rows == rows_simd[c].portable)
        ktab_simd[i].rows = rows_simd[c].simd;
    if (ktab[i].family == RD__F_SUMD)
      (void)rd__kernels_avx2_sum(ktab[i].dtype, ktab[i].variant, &ktab_simd[i]);
    ktab_simd512[i] = ktab_simd[i];
    if (ktab[i].family == RD__F_SUMD)
      (void)rd__kernels_avx512_sum(ktab[i].dtype, ktab[i].variant,
                                   &ktab_simd512[i]);
  }
}

int rd__op_kernel_id(int op, int dtype, int select_last)
{
  const struct rd__op *row = rd__op_row(op);
  int fam, variant = 0;
  if (!row)
    return -1;
  fam = dtype == RD_FLOAT64 ? row->f64_family
        : dt_float(dtype)   ? row->float_family
                            : row->int_family;
  if (fam == RD__F_SQ)
    return rd__kernel_id(dtype);
  if (fam == RD__F_SUMD || fam == RD__F_SUMDD || fam == RD__F_ISUM)
    variant = row->map == RD__MAP_ABS;
  else if (fam == RD__F_MAXMIN)
    variant = row->is_max;
  else if (fam == RD__F_ARG)
    variant = 2 * row->is_max + (select_last != 0);
  for (size_t i = 0; i < NKTAB; i++)
    if (ktab[i].family == fam && ktab[i].variant == variant &&
        ktab[i].dtype == dtype)
      return RD__K_OPS_BASE + (int)i;
  return -1;
}

const struct rd__kernel *rd__op_kernel_impl(int kernel_id, int impl)
{
  size_t i = (size_t)(kernel_id - RD__K_OPS_BASE);
  if (kernel_id < RD__K_OPS_BASE || i >= NKTAB)
    return NULL;
  if (impl == RD__IMPL_PORTABLE)
    return &ktab[i].k;
  if (impl == RD__IMPL_AVX2 && rd__kernel_impl(RD__K_F32, RD__IMPL_AVX2))
    return &ktab_simd[i];
  if (impl == RD__IMPL_AVX512 && rd__kernel_impl(RD__K_F32, RD__IMPL_AVX512))
    return &ktab_simd512[i];
  return NULL;
}

const struct rd__kernel *rd__op_kernel(int kernel_id)
{
  return rd__op_kernel_impl(kernel_id, rd__kernels_active());
}

/* ------------------------------------------------------------------ */
/* Direct output: float Prod and LogSumExp, float32 Max/Min/ArgMax/    */
/* ArgMin, one whole run per output                                   */
/* ------------------------------------------------------------------ */

int rd__ops_direct(int op, int dtype)
{
  const struct rd__op *row = rd__op_row(op);
  int fam;
  if (!row || !dt_float(dtype))
    return 0;
  fam = dtype == RD_FLOAT64 ? row->f64_family : row->float_family;
  return fam == RD__F_PROD || fam == RD__F_LSE ||
         (dtype == RD_FLOAT32 && (fam == RD__F_MAXMIN || fam == RD__F_ARG));
}

/* The RD__C32_* mode of a float32 Max/Min/Arg kernel (its merge names the
 * operator and select_last_index), or -1. */
static int key_mode(const struct rd__kernel *k)
{
  return k->merge == max_merge       ? RD__C32_MAX
         : k->merge == min_merge     ? RD__C32_MIN
         : k->merge == argmax_merge  ? RD__C32_ARGMAX
         : k->merge == argmaxl_merge ? RD__C32_ARGMAXL
         : k->merge == argmin_merge  ? RD__C32_ARGMIN
         : k->merge == argminl_merge ? RD__C32_ARGMINL
                                     : -1;
}

/* Rows per block of dout_rows(): the accumulators stay in L1. */
#define DOUT_BLOCK 64
/* The longest Arg row taken by rd__opk_arg_row_f32 (one pass, keeping
 * each lane's best and its index; 256 KiB, as when it read the row twice,
 * the second time from L2; longer rows take the run kernels). */
#define ARG_ROW_MAX 65536
/* Rows per call of the vector helpers (their redo flags on the stack). */
#define DOUT_BATCH 512
/* Outputs of one rd__ops_rows_out() call from which the key rows are
 * streamed past the caches (rd__opk_key_rows_f32's stream): a quarter of
 * L2 and up, they would only evict the rows' own input, and a line
 * written normally is first read (one more pass over the outputs). */
#define DOUT_STREAM_BYTES (256u * 1024)

/* The accumulator path itself, a block at a time: init, rows(), and each
 * accumulator finalised (prod_out/lse_out: no error, err unused). */
static void dout_rows(const struct rd__kernel *k, const struct rd__final *f,
                      unsigned char *out, const unsigned char *x, size_t n,
                      size_t nrows)
{
  union {
    struct rd__acc_prod p[DOUT_BLOCK];
    struct rd__acc_lse l[DOUT_BLOCK];
    struct rd__acc_key k[DOUT_BLOCK];
    struct rd__acc_arg g[DOUT_BLOCK];
  } a;
  const size_t esz = dt_size(f->dtype), osz = dt_size(f->out_dtype);
  assert(k->acc_size * DOUT_BLOCK <= sizeof a);
  while (nrows > 0) {
    size_t m = nrows < DOUT_BLOCK ? nrows : DOUT_BLOCK;
    k->init(&a, m);
    k->rows(&a, x, n, m);
    for (size_t r = 0; r < m; r++)
      (void)rd__finalize(f, (const unsigned char *)&a + r * k->acc_size,
                         out + r * osz, r, NULL);
    out += m * osz;
    x += m * n * esz;
    nrows -= m;
  }
}

void rd__ops_rows_out(const struct rd__kernel *k, const struct rd__final *f,
                      void *out, const unsigned char *x, size_t n, size_t nrows)
{
  unsigned char *o = out;
  const int prod = f->family == RD__F_PROD;
  const int mode = f->dtype == RD_FLOAT32 ? key_mode(k) : -1;
  if (mode >= 0 && n <= L && rd__opk_avx512()) {
    /* sixteen rows per step (kernels_keyrows.c); rows holding a NaN and
     * the last few by the accumulator path */
    const size_t osz = dt_size(f->out_dtype);
    const int stream = nrows * osz >= DOUT_STREAM_BYTES;
    unsigned char redo[DOUT_BATCH];
    while (nrows > 0) {
      size_t m = nrows < DOUT_BATCH ? nrows : DOUT_BATCH;
      rd__opk_key_rows_f32(o, redo, x, n, m, mode, stream);
      for (size_t r = 0; r < m; r++)
        if (redo[r])
          dout_rows(k, f, o + r * osz, x + r * n * 4, n, 1);
      o += m * osz;
      x += m * n * 4;
      nrows -= m;
    }
    return;
  }
  if (mode >= RD__C32_ARGMAX && n <= ARG_ROW_MAX && rd__opk_avx512()) {
    /* longer Arg rows one at a time (kernels_keyrows.c): best key, then
     * its index; a row holding a NaN by the accumulator path */
    for (size_t r = 0; r < nrows; r++, o += 8, x += n * 4) {
      int64_t idx;
      if (rd__opk_arg_row_f32(x, n, mode, &idx) == 0)
        memcpy(o, &idx, sizeof idx);
      else
        dout_rows(k, f, o, x, n, 1);
    }
    return;
  }
  if (f->dtype == RD_FLOAT32 && (prod || f->family == RD__F_LSE) && n >= 1 &&
      n <= L && rd__kernels_active() >= RD__IMPL_AVX2) {
    /* several rows per vector (kernels_ops_avx2.c); the rows it leaves
     * (Prod: zeros, infinities, NaNs; LogSumExp: NaNs, infinities, a
     * float32 rounding its log1p bound does not pin; the last few) by the
     * accumulator path */
    unsigned char redo[DOUT_BATCH];
    while (nrows > 0) {
      size_t m = nrows < DOUT_BATCH ? nrows : DOUT_BATCH;
      if (prod)
        rd__opk_prod_rows_f32(o, redo, x, n, m);
      else
        rd__opk_lse_rows_f32(o, redo, x, n, m);
      for (size_t r = 0; r < m; r++)
        if (redo[r])
          dout_rows(k, f, o + r * 4, x + r * n * 4, n, 1);
      o += m * 4;
      x += m * n * 4;
      nrows -= m;
    }
    return;
  }
  dout_rows(k, f, o, x, n, nrows);
}
