/* kernels.c - accumulation kernels (see kernels.h for the contract).
 *
 * Portable C with explicit independent lanes so GCC vectorises them at -O2
 * without -ffast-math; no reassociation is left to the compiler.  Loads go
 * through memcpy because stream chunks can be arbitrarily aligned.
 */
#include "kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "reduce.h"

#define L RD__LANES

/* Blue's thresholds and power-of-two scales (exact scalings). */
#define BLUE_BIG 0x1p480
#define BLUE_SMALL 0x1p-480
#define BLUE_DOWN 0x1p-600
#define BLUE_UP 0x1p600

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------ */
/* Element loads                                                      */
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
/* double accumulators: float32, float16, bfloat16                    */
/* ------------------------------------------------------------------ */

/* Fixed combination tree of the lanes: (k, k+8), then (k, k+4), ... */
static double tree(double *a)
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

static void flush_d(union rd__lanes *ln, void *acc)
{
  double *o = acc;
  *o += tree(ln->d);
  memset(ln->d, 0, sizeof ln->d);
}

/* One generator per element type: head up to lane 0, whole blocks of L
 * elements with the lanes in registers, tail. */
#define DEF_D_KERNELS(name, esz, load)                                         \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    size_t k = (size_t)(pos % L), i = 0;                                       \
    double a[L];                                                               \
    for (; k != 0 && i < n; i++, k = (k + 1) % L) {                            \
      double v = load(x + i * (esz));                                          \
      ln->d[k] += v * v;                                                       \
    }                                                                          \
    memcpy(a, ln->d, sizeof a);                                                \
    for (; i + L <= n; i += L) {                                               \
      for (size_t l = 0; l < L; l++) {                                         \
        double v = load(x + (i + l) * (esz));                                  \
        a[l] += v * v;                                                         \
      }                                                                        \
    }                                                                          \
    for (size_t l = 0; i < n; i++, l++) {                                      \
      double v = load(x + i * (esz));                                          \
      a[l] += v * v;                                                           \
    }                                                                          \
    memcpy(ln->d, a, sizeof a);                                                \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    double *o = acc;                                                           \
    for (size_t r = 0; r < nrows; r++, x += n * (esz))                         \
      for (size_t i = 0; i < n; i++) {                                         \
        double v = load(x + i * (esz));                                        \
        o[i] += v * v;                                                         \
      }                                                                        \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    double *o = acc;                                                           \
    size_t w = 1;                                                              \
    while (w < n)                                                              \
      w *= 2;                                                                  \
    /* Fixed-width trees so short rows unroll; see tree_n(). */                \
    if (w <= 4) {                                                              \
      for (size_t r = 0; r < nrows; r++, x += n * (esz)) {                     \
        double a[4] = {0, 0, 0, 0};                                            \
        for (size_t i = 0; i < n; i++) {                                       \
          double v = load(x + i * (esz));                                      \
          a[i] = v * v;                                                        \
        }                                                                      \
        o[r] += w == 4 ? (a[0] + a[2]) + (a[1] + a[3]) : a[0] + a[1];          \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    if (w == 8) {                                                              \
      for (size_t r = 0; r < nrows; r++, x += n * (esz)) {                     \
        double a[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                \
        for (size_t i = 0; i < n; i++) {                                       \
          double v = load(x + i * (esz));                                      \
          a[i] = v * v;                                                        \
        }                                                                      \
        o[r] += ((a[0] + a[4]) + (a[2] + a[6])) +                              \
                ((a[1] + a[5]) + (a[3] + a[7]));                               \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    if (n == L) {                                                              \
      for (size_t r = 0; r < nrows; r++, x += L * (esz)) {                     \
        double a[L];                                                           \
        for (size_t i = 0; i < L; i++) {                                       \
          double v = load(x + i * (esz));                                      \
          a[i] = v * v;                                                        \
        }                                                                      \
        o[r] += tree(a);                                                       \
      }                                                                        \
      return;                                                                  \
    }                                                                          \
    for (size_t r = 0; r < nrows; r++, x += n * (esz)) {                       \
      if (n <= L) {                                                            \
        double a[L] = {0};                                                     \
        for (size_t i = 0; i < n; i++) {                                       \
          double v = load(x + i * (esz));                                      \
          a[i] = v * v;                                                        \
        }                                                                      \
        o[r] += tree(a);                                                       \
      } else {                                                                 \
        union rd__lanes ln;                                                    \
        memset(ln.d, 0, sizeof ln.d);                                          \
        run_##name(&ln, x, n, 0);                                              \
        flush_d(&ln, &o[r]);                                                   \
      }                                                                        \
    }                                                                          \
  }

DEF_D_KERNELS(f32, 4, ld_f32)
DEF_D_KERNELS(f16, 2, ld_f16)
DEF_D_KERNELS(bf16, 2, ld_bf16)

/* ------------------------------------------------------------------ */
/* float64: Kahan sums in three ranges (Blue)                         */
/* ------------------------------------------------------------------ */

/* Mid range, where x*x neither overflows nor loses bits to underflow.
 * Zero counts as mid so that blocks with zeros keep the fast path. */
static inline int is_mid(double a)
{
  return ((a >= BLUE_SMALL) & (a <= BLUE_BIG)) | (a == 0);
}

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

static void run_f64(union rd__lanes *ln, const unsigned char *x, size_t n,
                    uint64_t pos)
{
  size_t k = (size_t)(pos % L), i = 0;
#define LANE_ADD(k, v)                                                         \
  blue_add(&ln->b.bs[k], &ln->b.bc[k], &ln->b.ms[k], &ln->b.mc[k],            \
           &ln->b.ss[k], &ln->b.sc[k], &ln->b.sp[k], (v))
  for (; k != 0 && i < n; i++, k = (k + 1) % L)
    LANE_ADD(k, ld_f64(x + i * 8));
  for (; i + L <= n; i += L) {
    double v[L];
    int mid = 1;
    memcpy(v, x + i * 8, sizeof v);
    for (size_t l = 0; l < L; l++) {
      double a = fabs(v[l]);
      mid &= is_mid(a);
    }
    if (mid) {
      /* Same operations as blue_add() for mid-range values, vectorisable. */
      double s[L], c[L];
      memcpy(s, ln->b.ms, sizeof s);
      memcpy(c, ln->b.mc, sizeof c);
      for (size_t l = 0; l < L; l++) {
        double u = v[l] * v[l] - c[l];
        double t = s[l] + u;
        c[l] = (t - s[l]) - u;
        s[l] = t;
      }
      memcpy(ln->b.ms, s, sizeof s);
      memcpy(ln->b.mc, c, sizeof c);
    } else {
      for (size_t l = 0; l < L; l++)
        LANE_ADD(l, v[l]);
    }
  }
  for (size_t l = 0; i < n; i++, l++)
    LANE_ADD(l, ld_f64(x + i * 8));
#undef LANE_ADD
}

/* Compensated lane values s - c, combined in the fixed tree. */
static double tree_kahan(const double *s, const double *c)
{
  double a[L];
  for (size_t l = 0; l < L; l++)
    a[l] = s[l] - c[l];
  return tree(a);
}

static void flush_f64(union rd__lanes *ln, void *acc)
{
  struct rd__blue *o = acc;
  double sp[L];
  kahan(&o->bs, &o->bc, tree_kahan(ln->b.bs, ln->b.bc));
  kahan(&o->ms, &o->mc, tree_kahan(ln->b.ms, ln->b.mc));
  kahan(&o->ss, &o->sc, tree_kahan(ln->b.ss, ln->b.sc));
  memcpy(sp, ln->b.sp, sizeof sp);
  o->sp += tree(sp);
  memset(&ln->b, 0, sizeof ln->b);
}

static void cols_f64(void *acc, const unsigned char *x, size_t n,
                     size_t nrows)
{
  struct rd__blue *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8)
    for (size_t i = 0; i < n; i++) {
      struct rd__blue *a = &o[i];
      blue_add(&a->bs, &a->bc, &a->ms, &a->mc, &a->ss, &a->sc, &a->sp,
               ld_f64(x + i * 8));
    }
}

/* A short run has at most one element per lane, and a lane holding one
 * term v has s - c = v exactly, so the lane values are just the terms. */
static void rows_f64(void *acc, const unsigned char *x, size_t n,
                     size_t nrows)
{
  struct rd__blue *o = acc;
  for (size_t r = 0; r < nrows; r++, x += n * 8) {
    if (n <= L) {
      double b[L] = {0}, m[L] = {0}, s[L] = {0}, sp[L] = {0}, v0[L];
      int mid = 1;
      for (size_t i = 0; i < n; i++) {
        double a;
        v0[i] = ld_f64(x + i * 8);
        a = fabs(v0[i]);
        mid &= is_mid(a);
      }
      if (mid) {
        /* Only mid-range terms: the other trees would be exactly +0. */
        for (size_t i = 0; i < n; i++)
          m[i] = v0[i] * v0[i];
        kahan(&o[r].bs, &o[r].bc, 0.0);
        kahan(&o[r].ms, &o[r].mc, tree_n(m, n));
        kahan(&o[r].ss, &o[r].sc, 0.0);
        continue;
      }
      for (size_t i = 0; i < n; i++) {
        double v = v0[i], a = fabs(v);
        if (is_mid(a)) {
          m[i] = v * v;
        } else if (a < BLUE_SMALL) {
          double y = v * BLUE_UP;
          s[i] = y * y;
        } else if (a <= DBL_MAX) {
          double y = v * BLUE_DOWN;
          b[i] = y * y;
        } else {
          sp[i] = a;
        }
      }
      kahan(&o[r].bs, &o[r].bc, tree_n(b, n));
      kahan(&o[r].ms, &o[r].mc, tree_n(m, n));
      kahan(&o[r].ss, &o[r].sc, tree_n(s, n));
      o[r].sp += tree_n(sp, n);
    } else {
      union rd__lanes ln;
      memset(&ln.b, 0, sizeof ln.b);
      run_f64(&ln, x, n, 0);
      flush_f64(&ln, &o[r]);
    }
  }
}

/* ------------------------------------------------------------------ */
/* 32-bit integers: exact, squares < 2^64 split into 32-bit halves     */
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

/* Each half is < 2^32, so 2^31 elements per block cannot overflow a lane. */
#define BLOCK32 ((size_t)1 << 31)
#define L32 8

#define DEF_I32_KERNELS(name, sq)                                              \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    (void)pos;                                                                 \
    while (n > 0) {                                                            \
      size_t m = n < BLOCK32 ? n : BLOCK32, i = 0;                             \
      uint64_t lo[L32] = {0}, hi[L32] = {0};                                   \
      u128 t = 0;                                                              \
      for (; i + L32 <= m; i += L32)                                           \
        for (size_t l = 0; l < L32; l++) {                                     \
          uint64_t q = sq(x + (i + l) * 4);                                    \
          lo[l] += q & 0xffffffffu;                                            \
          hi[l] += q >> 32;                                                    \
        }                                                                      \
      for (; i < m; i++)                                                       \
        t += sq(x + i * 4);                                                    \
      for (size_t l = 0; l < L32; l++)                                         \
        t += ((u128)hi[l] << 32) + lo[l];                                      \
      ln->w.lo += t;                                                           \
      x += m * 4;                                                              \
      n -= m;                                                                  \
    }                                                                          \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    u128 *o = acc;                                                             \
    for (size_t r = 0; r < nrows; r++, x += n * 4)                             \
      for (size_t i = 0; i < n; i++)                                           \
        o[i] += sq(x + i * 4);                                                 \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    u128 *o = acc;                                                             \
    for (size_t r = 0; r < nrows; r++, x += n * 4) {                           \
      if (n <= L) {                                                            \
        u128 t = 0;                                                            \
        for (size_t i = 0; i < n; i++)                                         \
          t += sq(x + i * 4);                                                  \
        o[r] += t;                                                             \
      } else {                                                                 \
        union rd__lanes ln;                                                    \
        memset(&ln.w, 0, sizeof ln.w);                                         \
        run_##name(&ln, x, n, 0);                                              \
        o[r] += ln.w.lo;                                                       \
      }                                                                        \
    }                                                                          \
  }

DEF_I32_KERNELS(i32, sq_i32)
DEF_I32_KERNELS(u32, sq_u32)

/* The u128 fits any int32 sum: count < 2^62 elements, squares <= 2^64. */
static void flush_u128(union rd__lanes *ln, void *acc)
{
  u128 *o = acc;
  *o += ln->w.lo;
  memset(&ln->w, 0, sizeof ln->w);
}

/* ------------------------------------------------------------------ */
/* 64-bit integers: u128 squares, 192-bit sums                         */
/* ------------------------------------------------------------------ */

static inline u128 sq_i64(const unsigned char *p)
{
  int64_t v;
  uint64_t a;
  memcpy(&v, p, sizeof v);
  a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  return (u128)a * a;
}

static inline u128 sq_u64(const unsigned char *p)
{
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return (u128)v * v;
}

static inline void add192(struct rd__u192 *a, u128 v)
{
  a->lo += v;
  a->hi += a->lo < v;
}

#define DEF_I64_KERNELS(name, sq)                                              \
  static void run_##name(union rd__lanes *ln, const unsigned char *x,          \
                         size_t n, uint64_t pos)                               \
  {                                                                            \
    struct rd__u192 a = ln->w;                                                 \
    (void)pos;                                                                 \
    for (size_t i = 0; i < n; i++)                                             \
      add192(&a, sq(x + i * 8));                                               \
    ln->w = a;                                                                 \
  }                                                                            \
  static void cols_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    struct rd__u192 *o = acc;                                                  \
    for (size_t r = 0; r < nrows; r++, x += n * 8)                             \
      for (size_t i = 0; i < n; i++)                                           \
        add192(&o[i], sq(x + i * 8));                                          \
  }                                                                            \
  static void rows_##name(void *acc, const unsigned char *x, size_t n,        \
                          size_t nrows)                                        \
  {                                                                            \
    struct rd__u192 *o = acc;                                                  \
    for (size_t r = 0; r < nrows; r++, x += n * 8)                             \
      for (size_t i = 0; i < n; i++)                                           \
        add192(&o[r], sq(x + i * 8));                                          \
  }

DEF_I64_KERNELS(i64, sq_i64)
DEF_I64_KERNELS(u64, sq_u64)

static void flush_u192(union rd__lanes *ln, void *acc)
{
  struct rd__u192 *o = acc;
  add192(o, ln->w.lo);
  o->hi += ln->w.hi;
  memset(&ln->w, 0, sizeof ln->w);
}

/* ------------------------------------------------------------------ */
/* Table, merge, value                                                */
/* ------------------------------------------------------------------ */

static const struct rd__kernel kernels[RD__K_COUNT] = {
  [RD__K_F32] = {RD__ACC_F64, 8, run_f32, flush_d, cols_f32, rows_f32},
  [RD__K_F16] = {RD__ACC_F64, 8, run_f16, flush_d, cols_f16, rows_f16},
  [RD__K_BF16] = {RD__ACC_F64, 8, run_bf16, flush_d, cols_bf16, rows_bf16},
  [RD__K_F64] = {RD__ACC_BLUE, sizeof(struct rd__blue), run_f64, flush_f64,
                 cols_f64, rows_f64},
  [RD__K_I32] = {RD__ACC_U128, 16, run_i32, flush_u128, cols_i32, rows_i32},
  [RD__K_U32] = {RD__ACC_U128, 16, run_u32, flush_u128, cols_u32, rows_u32},
  [RD__K_I64] = {RD__ACC_U192, sizeof(struct rd__u192), run_i64, flush_u192,
                 cols_i64, rows_i64},
  [RD__K_U64] = {RD__ACC_U192, sizeof(struct rd__u192), run_u64, flush_u192,
                 cols_u64, rows_u64},
};

const struct rd__kernel *rd__kernel_for(int kernel_id)
{
  if (kernel_id < 0 || kernel_id >= RD__K_COUNT)
    return NULL;
  return &kernels[kernel_id];
}

int rd__kernel_id(int dtype)
{
  switch (dtype) {
  case RD_FLOAT32: return RD__K_F32;
  case RD_FLOAT16: return RD__K_F16;
  case RD_BFLOAT16: return RD__K_BF16;
  case RD_FLOAT64: return RD__K_F64;
  case RD_INT32: return RD__K_I32;
  case RD_UINT32: return RD__K_U32;
  case RD_INT64: return RD__K_I64;
  case RD_UINT64: return RD__K_U64;
  default: return -1;
  }
}

void rd__acc_merge(enum rd__acc_class cls, void *dst, const void *src)
{
  switch (cls) {
  case RD__ACC_F64: {
    double a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a += b;
    memcpy(dst, &a, sizeof a);
    break;
  }
  case RD__ACC_BLUE: {
    struct rd__blue *d = dst;
    const struct rd__blue *s = src;
    kahan(&d->bs, &d->bc, s->bs - s->bc);
    kahan(&d->ms, &d->mc, s->ms - s->mc);
    kahan(&d->ss, &d->sc, s->ss - s->sc);
    d->sp += s->sp;
    break;
  }
  case RD__ACC_U128: {
    u128 a, b;
    memcpy(&a, dst, sizeof a);
    memcpy(&b, src, sizeof b);
    a += b;
    memcpy(dst, &a, sizeof a);
    break;
  }
  case RD__ACC_U192: {
    struct rd__u192 *d = dst;
    const struct rd__u192 *s = src;
    add192(d, s->lo);
    d->hi += s->hi;
    break;
  }
  }
}

/* Sum B*2^1200 + M + S*2^-1200 (or its square root) without overflow or
 * underflow in an intermediate; only the final result may overflow (sum of
 * squares) or round into the subnormal range. */
static double blue_value(const struct rd__blue *a, int l2)
{
  double b = a->bs - a->bc, m = a->ms - a->mc, s = a->ss - a->sc;
  if (a->sp != 0)
    return a->sp; /* NaN if any NaN, else +inf */
  if (b > 0) {
    /* Every big term is > 2^-240 here, so mid and small terms that vanish
     * in the scaling are far below one ulp of b. */
    double t = b + ldexp(m, -1200);
    return l2 ? ldexp(sqrt(t), 600) : ldexp(t, 1200);
  }
  if (!l2)
    return m + ldexp(s, -1200);
  if (s == 0)
    return sqrt(m);
  if (m >= 1)
    return sqrt(m + ldexp(s, -1200));
  if (m > 0)
    return ldexp(sqrt(ldexp(m, 600) + ldexp(s, -600)), -300);
  return ldexp(sqrt(s), -600);
}

double rd__acc_value(enum rd__acc_class cls, const void *acc, int l2)
{
  double v;
  if (cls == RD__ACC_BLUE)
    return blue_value(acc, l2);
  memcpy(&v, acc, sizeof v);
  return l2 ? sqrt(v) : v;
}
